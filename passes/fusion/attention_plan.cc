#include "passes/fusion/attention_plan.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/fusion/region_kind.h"

namespace kiln {
namespace {

bool IsViewOp(const Node* n) {
  switch (n->op()) {
    case OpKind::kReshape:
    case OpKind::kTranspose:
    case OpKind::kSlice:
    case OpKind::kBroadcastTo: return true;
    default: return false;
  }
}

FusionDecision Refuse(const std::string& reason) { return FusionDecision::Forbid("attention-layout", reason); }

// The view `value` is read through: producers inside the region must be index remappings.
std::optional<StridedView> ReadView(const Region& r, const Node* value, FusionDecision* why) {
  if (!r.Contains(value)) return ContiguousView(value);
  if (!IsViewOp(value)) {
    *why = Refuse(absl::StrCat("attention reads ", value->name(), " (", OpName(value->op()),
                               "), which is not a reshape, transpose, slice or broadcast"));
    return std::nullopt;
  }
  std::optional<StridedView> in = ReadView(r, value->operand(0), why);
  if (!in) return std::nullopt;
  std::optional<StridedView> out = ViewThrough(*in, value);
  if (!out) *why = Refuse(absl::StrCat(value->name(), " is not a strided view of ", in->source->name()));
  return out;
}

// The chain attention -> reshape/transpose ... -> the region's output, as the view the
// attention's value is written through. The region writes nothing else but `lse`, if given.
std::optional<StridedView> WriteView(const Region& r, const Node* attention, const Node* lse, FusionDecision* why) {
  std::vector<const Node*> chain;
  const Node* y = attention;
  for (;;) {
    std::vector<const Node*> inside;
    for (const Node* u : y->users()) {
      if (r.Contains(u)) inside.push_back(u);
    }
    if (inside.empty()) break;
    const bool also_written = std::find(r.outputs.begin(), r.outputs.end(), y) != r.outputs.end();
    if (inside.size() > 1 || also_written || (inside[0]->op() != OpKind::kReshape && inside[0]->op() != OpKind::kTranspose)) {
      *why = Refuse(absl::StrCat("attention's result ", y->name(), " is used by ", inside[0]->name(), " (",
                                 OpName(inside[0]->op()), ")", inside.size() > 1 || also_written ? " and elsewhere" : "",
                                 ": only one reshape/transpose chain folds into its store"));
      return std::nullopt;
    }
    chain.push_back(inside[0]);
    y = inside[0];
  }
  const bool only_y_and_lse =
      std::find(r.outputs.begin(), r.outputs.end(), y) != r.outputs.end() &&
      std::all_of(r.outputs.begin(), r.outputs.end(), [&](const Node* o) { return o == y || (lse != nullptr && o == lse); });
  if (!only_y_and_lse) {
    *why = Refuse(absl::StrCat("the region writes ", r.outputs.size(), " tensors (",
                               r.outputs.empty() ? std::string("none") : r.outputs[0]->name(),
                               ", ...); the attention kernel writes only its result (and its log-sum-exp)"));
    return std::nullopt;
  }
  StridedView view = ContiguousView(y);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    std::optional<StridedView> back = ViewBack(view, *it);
    if (!back) {
      *why = Refuse(absl::StrCat((*it)->name(), " cannot be folded into attention's store"));
      return std::nullopt;
    }
    view = *back;
  }
  return view;
}

// Splits a view of rank nb + 2 into the operand's batch, sequence and inner parts.
std::optional<AttentionOperand> Split(const StridedView& view, size_t nb, const std::string& what,
                                      FusionDecision* why) {
  AttentionOperand op;
  op.view = view;
  op.batch = FlattenDims(view, 0, nb);
  std::optional<ViewAtom> seq = SingleAtom(view.dims[nb]), inner = SingleAtom(view.dims[nb + 1]);
  if (!seq || !inner) {
    *why = Refuse(absl::StrCat(what, " ", view.ToString(), ": its ", !seq ? "sequence" : "last",
                               " dim is not a single strided axis"));
    return std::nullopt;
  }
  op.seq = *seq;
  op.inner = *inner;
  return op;
}

// Offsets and strides (elements) multiples of `align`, the head dim contiguous.
FusionDecision CheckAligned(const AttentionOperand& op, int64_t align, const std::string& what) {
  if (op.inner.extent > 1 && op.inner.stride != 1) {
    return Refuse(absl::StrCat(what, " ", op.view.ToString(), ": the head dim is not contiguous"));
  }
  bool ok = op.view.offset % align == 0 && (op.seq.extent == 1 || op.seq.stride % align == 0);
  for (const ViewAtom& a : op.batch) ok = ok && a.stride % align == 0;
  if (!ok) {
    return Refuse(absl::StrCat(what, " ", op.view.ToString(), ": offsets or strides are not multiples of ",
                               align, " elements"));
  }
  return FusionDecision::Allow("aligned");
}

FusionDecision Analyze(const Region& r, AttentionPlan& plan) {
  const Node* att = nullptr;
  for (const Node* n : r.nodes) {
    if (n->op() == OpKind::kAttentionLse) {
      if (plan.lse != nullptr) return FusionDecision::Forbid("attention-attention", "two log-sum-exps in one region");
      plan.lse = n;
      continue;
    }
    if (n->op() != OpKind::kAttention) continue;
    if (att != nullptr) return FusionDecision::Forbid("attention-attention", "two attentions are two kernels");
    att = n;
  }
  if (att == nullptr) return FusionDecision::Forbid("attention", "no attention node");
  plan.attention = att;
  if (plan.lse != nullptr) {
    if (AttentionTwin(*plan.lse) != att) {
      return FusionDecision::Forbid("attention-lse", absl::StrCat(plan.lse->name(), " is not the log-sum-exp of ",
                                                                 att->name(), " (another q, k, mask or attributes)"));
    }
    const bool read_inside = std::any_of(plan.lse->users().begin(), plan.lse->users().end(),
                                         [&](const Node* u) { return r.Contains(u); });
    if (read_inside || std::find(r.outputs.begin(), r.outputs.end(), plan.lse) == r.outputs.end()) {
      return Refuse(absl::StrCat("the log-sum-exp ", plan.lse->name(),
                                 " is written as it is (f32, contiguous); nothing folds into its store"));
    }
  }
  const Shape& qs = att->operand(0)->shape();
  const size_t nb = qs.size() - 2;
  plan.batch = NumElements(Shape(qs.begin(), qs.begin() + nb));
  plan.S = qs[nb];
  plan.D = qs[nb + 1];
  plan.T = att->operand(1)->shape()[nb];
  plan.E = att->operand(2)->shape()[nb + 1];
  plan.scale = att->attrs().GetFloat("scale");
  if (plan.scale == 0) plan.scale = 1.0 / std::sqrt(static_cast<double>(plan.D));
  plan.causal = att->attrs().GetBool("causal");

  FusionDecision why = FusionDecision::Allow("attention");
  const int64_t vector = 16 / ByteSize(att->dtype());  // elements of one 16-byte cp.async
  const char* names[] = {"q", "k", "v"};
  AttentionOperand* slots[] = {&plan.q, &plan.k, &plan.v};
  for (int i = 0; i < 3; ++i) {
    std::optional<StridedView> view = ReadView(r, att->operand(i), &why);
    if (!view) return why;
    std::optional<AttentionOperand> op = Split(*view, nb, names[i], &why);
    if (!op) return why;
    KILN_RETURN_IF_NOT_FUSIBLE(CheckAligned(*op, vector, names[i]));
    *slots[i] = *op;
  }
  const AttentionArgs args = AttentionArgsOf(*att);
  plan.dropout = att->attrs().GetFloat("dropout");
  plan.seed_value = static_cast<uint64_t>(att->attrs().GetInt("seed"));
  plan.offset_value = static_cast<uint64_t>(att->attrs().GetInt("offset"));
  if (args.seed >= 0) plan.seed = att->operand(args.seed);
  if (args.offset >= 0) plan.offset = att->operand(args.offset);
  for (const Node* x : {plan.seed, plan.offset}) {
    if (x != nullptr && r.Contains(x)) {
      return Refuse(absl::StrCat(x->name(), ", the dropout's seed or offset, is computed in the region; the kernel "
                                 "reads it as an input"));
    }
  }
  if (args.mask >= 0) {
    std::optional<StridedView> view = ReadView(r, att->operand(args.mask), &why);
    if (!view) return why;
    Shape scores(qs.begin(), qs.begin() + nb);
    scores.push_back(plan.S);
    scores.push_back(plan.T);
    std::optional<AttentionOperand> op = Split(BroadcastView(*view, scores), nb, "mask", &why);
    if (!op) return why;
    plan.mask = *op;
  }
  std::optional<StridedView> out = WriteView(r, att, plan.lse, &why);
  if (!out) return why;
  std::optional<AttentionOperand> op = Split(*out, nb, "output", &why);
  if (!op) return why;
  KILN_RETURN_IF_NOT_FUSIBLE(CheckAligned(*op, 2, "output"));
  plan.out = *op;
  // Grouped-query heads of short queries: k and v both broadcast their innermost batch atom.
  const ViewDim &kb = plan.k.batch, &vb = plan.v.batch;
  if (plan.S <= 64 && !kb.empty() && !vb.empty() && kb.back().stride == 0 && kb.back() == vb.back() &&
      kb.back().extent > 1) {
    plan.group = kb.back().extent;
    plan.k.batch.pop_back();
    plan.v.batch.pop_back();
  }
  return FusionDecision::Allow("attention", "layouts folded into the template's loads and store");
}

}  // namespace

std::string AttentionOperand::ToString() const {
  std::vector<std::string> atoms;
  for (const ViewAtom& a : batch) atoms.push_back(absl::StrCat(a.extent, ":", a.stride));
  return absl::StrCat(view.source->name(), " +", view.offset, " batch (", absl::StrJoin(atoms, " "), ") seq ",
                      seq.extent, ":", seq.stride, " inner ", inner.extent, ":", inner.stride);
}

int64_t AttentionPlan::MaxPosition(int64_t lo, int64_t hi) const {
  hi = std::min(hi, group * S - 1);
  return lo / S == hi / S ? hi % S : S - 1;
}

double AttentionPlan::Flops(int64_t block_m, int64_t block_n) const {
  const int64_t rows_per_batch = group * S, blocks = (rows_per_batch + block_m - 1) / block_m;
  double keys = 0;  // query rows x keys computed, over one K/V batch
  for (int64_t q = 0; q < blocks; ++q) {
    // attn::FirstRow: causal blocks end at the last row (a partial block starts before row 0),
    // the others start at row 0. Warps whose 16-row tiles lie outside the rows skip the products.
    const int64_t m0 = causal ? rows_per_batch - (q + 1) * block_m : q * block_m;
    const int64_t lo = std::max<int64_t>(m0, 0), hi = std::min(m0 + block_m, rows_per_batch);
    const int64_t rows = block_m == 1 ? 1 : std::min(block_m, (hi - lo + 15) / 16 * 16);
    const int64_t end = causal ? std::min(T, MaxPosition(lo, hi - 1) + 1) : T;
    keys += static_cast<double>(rows) * ((end + block_n - 1) / block_n) * block_n;
  }
  return 2.0 * keys * (D + E) * (batch / group);
}

int64_t PaddedHeadDim(const AttentionTiles& tiles, int64_t d) {
  return tiles.wgmma ? (d + 63) / 64 * 64 : PaddedHeadDim(d);
}

int64_t AttentionQueryBlocks(const AttentionPlan& plan, const AttentionTiles& tiles) {
  return (plan.group * plan.S + tiles.block_m - 1) / tiles.block_m;
}

int64_t AttentionL2Section(const AttentionPlan& plan) {
  const int64_t kv_bytes = plan.T * (plan.D + plan.E) * ByteSize(plan.attention->dtype());
  return std::clamp<int64_t>(kAttentionL2Bytes / std::max<int64_t>(kv_bytes, 1), 1, plan.batch / plan.group);
}

int64_t AttentionScratchBytesPerBatch(const AttentionPlan& plan, const AttentionTiles& tiles) {
  if (tiles.split <= 1) return 0;
  return AttentionQueryBlocks(plan, tiles) * (16 + 4LL * tiles.split * tiles.block_m * (PaddedHeadDim(plan.E) + 2));
}

namespace {
// Registers per thread: the m-tiles of one warp hold Q fragments (D/4 when kept), scores
// (block_n/2) and output accumulators (E/2) each; ptxas was measured (NVRTC 13.0, sm_90a,
// tests/codegen/attention_nvrtc_test.cc) at about 1.25 x that + 50 for addresses, statistics
// and fragments in flight: D 64 with two m-tiles 254 (estimate 250), D 128 with one 210 (210).
// The wgmma kernel keeps a score tile (block_n / 2), the 16-bit probabilities (block_n / 4)
// and the output accumulators (E / 2), + 40; with 3 stages the probabilities of one tile stay
// live while the next tile's scores arrive, another block_n / 4. ptxas (NVRTC 13.0, sm_90a)
// measured D 128: 128 x 64 3 stages 153-162 (estimate 168), 128 x 128 3 stages 229-254 (232),
// 128 x 128 2 stages 221 (200).
int RegisterEstimate(const AttentionPlan& plan, const AttentionTiles& t, bool q_in_registers) {
  if (t.wgmma) {  // the TMA kernel always overlaps two tiles
    return t.block_n / 2 + (t.stages == 3 || t.tma ? 2 : 1) * t.block_n / 4 +
           static_cast<int>(PaddedHeadDim(t, plan.E)) / 2 + 40;
  }
  // Q fragments: 4 registers per 32-byte k step, D / 4 for 16-bit types, D / 2 for f32.
  const int64_t q_regs = PaddedHeadDim(plan.D) * ByteSize(plan.attention->dtype()) / 8;
  const int64_t per_tile = (q_in_registers ? q_regs : 0) + t.block_n / 2 + PaddedHeadDim(plan.E) / 2;
  return static_cast<int>(1.25 * t.MTiles() * per_tile + 50);
}
}  // namespace

int AttentionBlocksPerSm(const AttentionPlan& plan, const AttentionTiles& t, const DeviceSpec& device) {
  if (t.tma) return 1;  // its warpgroups share the SM's registers (setmaxnreg)
  const int64_t smem = AttentionSmemBytes(plan, t) + 1024;
  const int64_t regs = static_cast<int64_t>(std::min(255, RegisterEstimate(plan, t, AttentionQInRegisters(plan, t)))) *
                       32 * t.warps;
  const int64_t by_smem = device.smem_per_sm_bytes / smem;
  const int64_t by_regs = device.registers_per_sm / std::max<int64_t>(regs, 1);
  const int64_t by_threads = 2048 / (32 * t.warps);
  const int64_t fit = std::min({by_smem, by_regs, by_threads});
  // __launch_bounds__(threads, min_blocks) makes ptxas fit min_blocks (spilling if it must).
  return static_cast<int>(std::max<int64_t>(1, t.min_blocks > 0 ? std::min(by_smem, std::max<int64_t>(fit, t.min_blocks)) : fit));
}

int64_t AttentionSmemBytes(const AttentionPlan& plan, const AttentionTiles& t) {
  if (t.wgmma) {
    const int64_t d = PaddedHeadDim(t, plan.D), e = PaddedHeadDim(t, plan.E);
    return 2 * (t.block_m * d + t.stages * t.block_n * (d + e)) + 1024;
  }
  // attn::RowLayout: 16-bit rows of a multiple of 8 16-byte chunks are swizzled, the others
  // padded by one chunk.
  const int64_t bytes = ByteSize(plan.attention->dtype());
  auto row = [&](int64_t cols) { return bytes == 2 && cols * bytes % 128 == 0 ? cols : cols + 16 / bytes; };
  const int64_t q_row = row(PaddedHeadDim(plan.D)), v_row = row(PaddedHeadDim(plan.E));
  return bytes * (t.block_m * q_row + t.stages * t.block_n * (q_row + v_row));
}

bool AttentionQInRegisters(const AttentionPlan& plan, const AttentionTiles& tiles) {
  return !tiles.wgmma && RegisterEstimate(plan, tiles, true) <= 255;
}

std::vector<TmaBatchAtom> TmaBatchAtoms(const AttentionOperand& op) {
  std::vector<TmaBatchAtom> atoms;
  int64_t inner = 1;
  for (size_t a = op.batch.size(); a-- > 0;) {
    const ViewAtom& atom = op.batch[a];
    if (atom.stride != 0 && atom.extent > 1) atoms.push_back({atom.extent, atom.stride, inner, a == 0});
    inner *= atom.extent;
  }
  return atoms;
}

FusionDecision AttentionTmaFit(const AttentionPlan& plan) {
  if (ByteSize(plan.attention->dtype()) != 2 || plan.group != 1) {
    return FusionDecision::Forbid("attention-tma", plan.group != 1 ? "query heads packed per K/V head (decoding)"
                                                                   : "TMA tiles are 16-bit here");
  }
  const int64_t limit = int64_t{1} << 32;
  for (const auto& [name, op] : {std::pair<const char*, const AttentionOperand*>{"k", &plan.k}, {"v", &plan.v}}) {
    const std::vector<TmaBatchAtom> atoms = TmaBatchAtoms(*op);
    bool ok = op->inner.stride == 1 && op->seq.stride > 0 && op->seq.stride * 2 % 16 == 0 && op->view.offset * 2 % 16 == 0 &&
              atoms.size() <= 3 && plan.T < limit;
    for (const TmaBatchAtom& a : atoms) ok = ok && a.stride * 2 % 16 == 0 && a.extent < limit && a.stride * 2 < (limit << 8);
    if (!ok) {
      return FusionDecision::Forbid("attention-tma", absl::StrCat(name, " (", op->ToString(),
                                                                  ") is not a tensor map: at most three batch atoms "
                                                                  "that are not broadcasts, strides of 16 bytes"));
    }
  }
  return FusionDecision::Allow("attention-tma");
}

TensorMapSpec AttentionTensorMap(const AttentionPlan& plan, const AttentionOperand& op, int64_t d,
                                 const AttentionTiles& tiles, int arg) {
  TensorMapSpec m;
  m.arg = arg;
  m.offset = op.view.offset;
  m.dtype = plan.attention->dtype();
  m.dims = {d, plan.T, 1, 1, 1};
  m.strides = {0, op.seq.stride * 2, 0, 0, 0};
  m.box = {64, tiles.block_n, 1, 1, 1};
  m.rank = 2;
  for (const TmaBatchAtom& a : TmaBatchAtoms(op)) {
    m.dims[m.rank] = a.extent;
    m.strides[m.rank] = a.stride * 2;
    ++m.rank;
  }
  return m;
}

FusionDecision AttentionTilesFit(const AttentionPlan& plan, const AttentionTiles& t, const DeviceSpec& device) {
  if (t.tma && !t.wgmma) return FusionDecision::Forbid("attention-tiles", "TMA tiles are the wgmma kernel's");
  if (t.wgmma) {
    if (!device.wgmma) {
      return FusionDecision::Forbid("attention-wgmma", absl::StrCat(device.name, " has no wgmma (sm_90a)"));
    }
    if (t.block_m % 64 != 0 || t.warps != t.block_m / 16 || t.block_n % 64 != 0 || t.block_n > 256 || t.stages < 2 ||
        t.stages > (t.tma ? 4 : 3) || t.split != 1 || PaddedHeadDim(t, plan.D) > 256 || PaddedHeadDim(t, plan.E) > 256) {
      return FusionDecision::Forbid(
          "attention-tiles", absl::StrCat("wgmma tiles ", t.block_m, "x", t.block_n, " on ", t.warps, " warps, ",
                                          t.stages, " stages, split ", t.split, ", head dims ", plan.D, "/", plan.E,
                                          " are not a valid shape (64-row warpgroups, 16 rows a warp, key tiles a "
                                          "multiple of 64 up to 256, head dims up to 256, no split)"));
    }
    if (t.tma) {
      const FusionDecision tma = AttentionTmaFit(plan);
      if (!tma) return tma;
      // The computing warpgroups share what the producer's 128 x 24 registers leave: 240 a
      // thread for two, 160 for three. 192 x 64 at D 128 estimates 168 and compiles to 160
      // without spilling (ptxas, sm_90a): the estimate is held to 168 there.
      const int cap = t.block_m == 128 ? 240 : 168;
      if ((t.block_m != 128 && t.block_m != 192) || t.stages > 4 || t.min_blocks != 1 ||
          RegisterEstimate(plan, t, false) > cap) {
        return FusionDecision::Forbid(
            "attention-tiles", absl::StrCat("TMA tiles ", t.block_m, "x", t.block_n, ", ", t.stages, " stages at head dim ",
                                            plan.E, ": two or three computing warpgroups, 2 to 4 stages, one block an "
                                            "SM, about ", RegisterEstimate(plan, t, false), " registers a thread of ", cap));
      }
    }
    // Two blocks of 256 threads leave 128 registers a thread: ptxas fits head dims up to 64
    // there without spilling (measured: 128 x 64, 3 stages), not 128 (852 bytes of spill).
    if (t.min_blocks > 1 && (PaddedHeadDim(t, plan.D) > 64 || PaddedHeadDim(t, plan.E) > 64 || plan.dropout > 0)) {
      return FusionDecision::Forbid("attention-registers",
                                    absl::StrCat("wgmma tiles ", t.block_m, "x", t.block_n, " at ", t.min_blocks,
                                                 " blocks per SM spill with head dims ", plan.D, "/", plan.E,
                                                 plan.dropout > 0 ? " and dropout" : ""));
    }
  }
  if (t.warps < 1 || t.block_m % (16 * t.warps) != 0 || t.block_n % 16 != 0 || t.stages < 2 || t.stages > 4 ||
      t.split < 1) {
    return FusionDecision::Forbid("attention-tiles", absl::StrCat("tiles ", t.block_m, "x", t.block_n, " on ", t.warps,
                                                                  " warps, ", t.stages, " stages are not a valid shape"));
  }
  // f32's 3xTF32 splits hold a second m-tile's worth of registers: at two m-tiles a warp ptxas
  // needs 240-255 registers and spills at D 48 (NVRTC 13.0, sm_90a; the estimate says 210).
  if (ByteSize(plan.attention->dtype()) == 4 && t.MTiles() > 1) {
    return FusionDecision::Forbid("attention-tiles", absl::StrCat("f32 tiles ", t.block_m, "x", t.block_n, " on ", t.warps,
                                                                  " warps: one 16-row m-tile a warp (the 3xTF32 splits "
                                                                  "take the registers of a second)"));
  }
  // The mma.sync kernel's static shared memory (a split's flag) takes 128 bytes: its dynamic
  // rows start 128-byte aligned (attn::RowLayout), and a block's opt-in maximum counts both.
  // The TMA kernel's static shared memory: its 2 x 4 ring barriers.
  const int64_t smem = AttentionSmemBytes(plan, t) + (t.wgmma ? (t.tma ? 64 : 0) : 128);
  if (smem > device.smem_per_block_bytes) {
    return FusionDecision::Forbid("attention-smem", absl::StrCat("tiles ", t.block_m, "x", t.block_n, " need ", smem,
                                                                 " bytes of shared memory; a block has ",
                                                                 device.smem_per_block_bytes));
  }
  const int regs = RegisterEstimate(plan, t, AttentionQInRegisters(plan, t));
  if (regs > 255) {
    return FusionDecision::Forbid("attention-registers", absl::StrCat("tiles ", t.block_m, "x", t.block_n, " on ", t.warps,
                                                                      " warps need about ", regs, " registers a thread"));
  }
  return FusionDecision::Allow("attention-tiles");
}

namespace {
// Splits the key tiles of each (K/V batch, query block) item over blocks when the items alone
// do not fill the resident slots (AttentionBlocksPerSm of these tiles on every SM). Of the
// splits up to 32 that leave each block at least 4 key tiles: the fewest whose grid keeps 90%
// of the slots busy over its waves (WaveFill), else the one that keeps the most. A decoding
// grid that spills a few blocks into a second wave runs that wave at a fraction of the memory
// bandwidth (measured, H200: 32 x 4 batches of 8192 keys, 384 blocks on 264 slots 183.0 us, 256
// blocks 143.5 us; bench/results/2026-11-27-session13.md).
int SplitFor(const AttentionPlan& plan, const AttentionTiles& t, const DeviceSpec& device) {
  const int64_t items = (plan.batch / plan.group) * AttentionQueryBlocks(plan, t);
  const int64_t slots = static_cast<int64_t>(device.sm_count) * AttentionBlocksPerSm(plan, t, device);
  if (items >= slots) return 1;
  const int64_t tiles = (plan.T + t.block_n - 1) / t.block_n;
  const int most = static_cast<int>(std::clamp<int64_t>(tiles / 4, 1, 32));
  auto filled = [&](int split) { return WaveFill(items * split, slots); };
  int best = 1;
  for (int split = 1; split <= most; ++split) {
    if (filled(split) >= 0.9) return split;
    if (filled(split) > filled(best)) best = split;
  }
  return best;
}

// The mma.sync kernel's default tiles (DefaultAttentionTiles without wgmma).
AttentionTiles DefaultAttentionTilesMmaSync(const AttentionPlan& plan, const DeviceSpec& device) {
  const int64_t d = std::max(PaddedHeadDim(plan.D), PaddedHeadDim(plan.E));
  const bool f32 = ByteSize(plan.attention->dtype()) == 4;
  AttentionTiles t;
  if (plan.group * plan.S <= 64) {
    t = {64, d <= 128 ? 64 : 32, 4, 2};  // decoding: warps past the rows skip the products
  } else if (f32 && d <= 128) {
    // 3xTF32 needs more registers: at D 128, 128 x 64 tiles take 255 a thread and one block an
    // SM; 128 x 32, 224 (NVRTC 13.0, sm_90a). At D 32, 128 x 64 spills 28 bytes.
    t = {128, 32, 8, 2};
  } else if (d <= 64) {
    t = {128, 64, 4, 2};
  } else if (d <= 128) {
    t = {128, 64, 8, 2};
  } else {
    t = {64, 32, 4, 2};
  }
  t.split = SplitFor(plan, t, device);
  return t;
}
}  // namespace

AttentionTiles DefaultAttentionTiles(const AttentionPlan& plan, const DeviceSpec& device) {
  const AttentionTiles t = DefaultAttentionTilesMmaSync(plan, device);
  const int64_t d = std::max(PaddedHeadDim(plan.D), PaddedHeadDim(plan.E));
  if (device.wgmma && ByteSize(plan.attention->dtype()) == 2 && t.split == 1 && plan.group * plan.S > 64) {
    AttentionTiles w;
    // Dropout's keep bits take registers: at 128 a thread (two blocks an SM) D 64 spills 128
    // bytes, and 192 x 128 tiles at D 128 172 (NVRTC 13.0, sm_90a); one block an SM and 64-key
    // tiles do not spill.
    const bool dropout = plan.dropout > 0;
    if (d <= 64) {
      w = dropout ? AttentionTiles{128, 64, 8, 3, 1, true} : AttentionTiles{128, 64, 8, 3, 1, true, 2};
      // TMA tiles at one block an SM beat two blocks of the cp.async kernel: 8 x 32 heads, S 4096,
      // causal 192 x 64 1470.5 against 1735.5 us, without the mask 128 x 128 2790.4 against
      // 3090.1 (kiln tune, H200; bench/results/2026-11-28-session27.md).
      const AttentionTiles tma = plan.causal ? AttentionTiles{192, 64, 12, 3, 1, true, 1, true}
                                             : AttentionTiles{128, 128, 8, 3, 1, true, 1, true};
      if (!dropout && AttentionTilesFit(plan, tma, device)) w = tma;
    } else if (d <= 128) {
      // Not causal: 128 x 128 tiles, 3 stages, on two warpgroups (240 registers, no spill) beat
      // 192 x 128, 2 stages (which spills 36 bytes) by 0.7-5% in four H200 timings (S 2000 with
      // 4 query heads per K/V head, S 4096; bench/results/2026-11-27-session19.md). Causal:
      // 128 x 128 was 5-6% faster at S 4096 but 2% slower at S 2048 and 5.6% at S 1024, level
      // at S 8192: 192 x 64 stays.
      w = plan.causal || dropout ? AttentionTiles{192, 64, 12, 3, 1, true} : AttentionTiles{128, 128, 8, 3, 1, true};
      // With TMA copies from a producer warpgroup (no block-wide barrier per key tile), 128 x 128
      // tiles, 3 stages, were 1.50x faster causal (252.3 against 378.0 us for 192 x 64) and
      // 1.40x without the mask (492.2 against 690.2 for 128 x 128): 32 query heads on 8 K/V
      // heads, S 4096, D 128, bf16 (H200, bench/results/2026-11-28-session27.md).
      const AttentionTiles tma{128, 128, 8, 3, 1, true, 1, true};
      if (!dropout && AttentionTilesFit(plan, tma, device)) w = tma;
    } else {
      w = {128, 64, 8, 2, 1, true};
    }
    if (AttentionTilesFit(plan, w, device)) return w;
  }
  return t;
}

std::vector<AttentionTiles> CandidateAttentionTiles(const AttentionPlan& plan, const DeviceSpec& device) {
  std::vector<AttentionTiles> out = {DefaultAttentionTiles(plan, device)};
  auto add = [&](AttentionTiles t) {
    const bool seen = std::any_of(out.begin(), out.end(), [&](const AttentionTiles& o) {
      return o.block_m == t.block_m && o.block_n == t.block_n && o.warps == t.warps && o.stages == t.stages &&
             o.split == t.split && o.wgmma == t.wgmma && o.min_blocks == t.min_blocks && o.tma == t.tma;
    });
    if (!seen && AttentionTilesFit(plan, t, device)) out.push_back(t);
  };
  const std::vector<AttentionTiles> grid = {
      {64, 64, 4, 2}, {128, 64, 8, 2}, {128, 64, 4, 2}, {64, 32, 4, 2}, {128, 32, 8, 2}, {128, 32, 4, 2},
      {64, 64, 4, 3}, {128, 64, 8, 3}, {128, 128, 8, 2}};
  for (AttentionTiles t : grid) {
    t.split = SplitFor(plan, t, device);
    add(t);
  }
  if (plan.group * plan.S <= 64) {
    // Decoding streams K and V through one m-tile: deeper pipelines keep more bytes in flight,
    // and one-warp blocks of 16 rows fit more blocks (more warps computing) on an SM.
    // 64 x 128 on 4 warps is FlashAttention-2's split-KV tile at D 128 (one block an SM).
    for (AttentionTiles t : {AttentionTiles{64, 32, 4, 3}, AttentionTiles{64, 32, 4, 4}, AttentionTiles{64, 128, 4, 2},
                             AttentionTiles{16, 64, 1, 2}, AttentionTiles{16, 32, 1, 3}, AttentionTiles{16, 64, 1, 3}}) {
      t.split = SplitFor(plan, t, device);
      add(t);
    }
  }
  if (device.wgmma && ByteSize(plan.attention->dtype()) == 2 && plan.group * plan.S > 16) {  // 64-row warpgroups
    const std::vector<AttentionTiles> wgmma_grid = {
        {128, 64, 8, 3, 1, true, 2}, {128, 64, 8, 3, 1, true},   {128, 128, 8, 3, 1, true}, {192, 64, 12, 3, 1, true},
        {192, 128, 12, 2, 1, true},  {128, 64, 8, 2, 1, true},   {128, 128, 8, 2, 1, true}};
    for (const AttentionTiles& t : wgmma_grid) add(t);
    if (plan.dropout == 0) {  // dropout's keep bits were not fitted into the TMA kernel's registers
      for (const AttentionTiles& t : {AttentionTiles{128, 128, 8, 3, 1, true, 1, true}, AttentionTiles{128, 64, 8, 4, 1, true, 1, true},
                                      AttentionTiles{192, 64, 12, 3, 1, true, 1, true}, AttentionTiles{128, 64, 8, 2, 1, true, 1, true}}) {
        add(t);
      }
    }
  }
  AttentionTiles d = out[0];
  if (d.wgmma) d = DefaultAttentionTilesMmaSync(plan, device);
  // More or fewer blocks per query block than SplitFor's.
  for (int split : {d.split * 2, d.split / 2}) {
    AttentionTiles t = d;
    t.split = split;
    if (split >= 1 && split <= 32 && split * 2 <= (plan.T + t.block_n - 1) / t.block_n) add(t);
  }
  return out;
}

void AnalyzeAttention(Region& region, const DeviceSpec& device) {
  auto plan = std::make_shared<AttentionPlan>();
  FusionDecision placed = Analyze(region, *plan);
  if (!placed) {
    region.placed = placed;
    return;
  }
  region.attention = std::move(plan);
}

}  // namespace kiln
