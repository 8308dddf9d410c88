#include "passes/fusion/norm_matmul_plan.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/base/status.h"

namespace kiln {
namespace {

absl::Status Refuse(const std::string& why) { return absl::FailedPreconditionError(why); }

// Where a prologue value varies, relative to A's shape [.., M, K].
enum class Varies { kElement, kRow, kColumn, kScalar, kOther };

Varies Classify(const Shape& s, const Shape& a) {
  if (s == a) return Varies::kElement;
  // Before the scalar test: with one token row, a row value has one element.
  if (s.size() == a.size() && s.back() == 1 && std::equal(s.begin(), s.end() - 1, a.begin())) return Varies::kRow;
  if (NumElements(s) == 1) return Varies::kScalar;
  if (!s.empty() && s.back() == a.back() && NumElements(s) == a.back()) return Varies::kColumn;
  return Varies::kOther;
}

// Ops the template's Body evaluates per element or per row: pointwise arithmetic without an
// element index (iota and dropout need the element's index in A, which the Body has not).
bool Evaluable(const Node* n) {
  return n->category() == OpCategory::kPointwise && n->op() != OpKind::kIota;
}

bool IsFloatCast(const Node* n) {
  return n->op() == OpKind::kCast && IsFloat(n->dtype()) && IsFloat(n->operand(0)->dtype());
}

class PrologueChecker {
 public:
  PrologueChecker(const absl::flat_hash_set<const Node*>& prologue, const Shape& a, NormMatmulPlan& plan)
      : prologue_(prologue), a_(a), plan_(plan) {}

  // `n` as a value of the operand g or of a reduction's input: no row value below it but the
  // mean of x that centres it.
  absl::Status Element(const Node* n) {
    if (!checked_element_.insert(n).second) return absl::OkStatus();
    const Varies v = Classify(n->shape(), a_);
    if (!prologue_.contains(n)) return Leaf(n, v);
    if (const Node* x = CentredInput(n)) {
      if (plan_.centred != nullptr) {
        return Refuse(absl::StrCat("x is centred twice (", plan_.centred->name(), ", ", n->name(),
                                   "): the template subtracts one mean"));
      }
      plan_.centred = n;
      return X(x, /*raw=*/false);
    }
    if (v == Varies::kRow) {
      return Refuse(absl::StrCat(
          "the operand of the matmul reads the row value ", n->name(),
          " other than as a factor or as the mean that centres x (x - mean(x), as layer_norm centres): the norm_matmul "
          "template needs the operand free of other row statistics, which are known only once all of K is summed"));
    }
    if (v == Varies::kOther) return Refuse(absl::StrCat(n->name(), " ", ShapeToString(n->shape()), " is neither [.., M, K] nor [K] nor a row"));
    if (!Evaluable(n)) {
      return Refuse(absl::StrCat(OpName(n->op()), " ", n->name(), " in the operand: the norm_matmul Body evaluates pointwise ops only"));
    }
    for (const Node* o : n->operands()) KILN_RETURN_IF_ERROR(Element(o));
    return absl::OkStatus();
  }

  // `n` as a value of a row factor: row values, scalars and the reductions.
  absl::Status Row(const Node* n) {
    if (!checked_row_.insert(n).second) return absl::OkStatus();
    const Varies v = Classify(n->shape(), a_);
    if (IsInlinedConstant(n)) return absl::OkStatus();
    if (!prologue_.contains(n)) {
      return Refuse(absl::StrCat("row value ", n->name(), " is read from memory: the norm_matmul Body computes its row factors"));
    }
    if (v != Varies::kRow && v != Varies::kScalar) {
      return Refuse(absl::StrCat(n->name(), " ", ShapeToString(n->shape()), " in a row factor is not a row value"));
    }
    if (IsReduction(n)) {
      const std::vector<int64_t>& axes = n->attrs().GetInts("axes");
      const int64_t rank = static_cast<int64_t>(a_.size());
      const bool last_axis = axes.size() == 1 && (axes[0] == rank - 1 || axes[0] == -1);
      if ((n->op() != OpKind::kReduceSum && n->op() != OpKind::kReduceMean) || !last_axis ||
          n->operand(0)->shape() != a_) {
        return Refuse(absl::StrCat(OpName(n->op()), " ", n->name(),
                                   ": the template accumulates sums and means over the last axis of [.., M, K] only"));
      }
      plan_.reductions.push_back(n);
      return Element(n->operand(0));
    }
    if (!Evaluable(n)) return Refuse(absl::StrCat(OpName(n->op()), " ", n->name(), " in a row factor is not pointwise"));
    for (const Node* o : n->operands()) KILN_RETURN_IF_ERROR(Row(o));
    return absl::OkStatus();
  }

  bool raw_x() const { return raw_x_; }

 private:
  // x - mean(x) over the last axis, x the tensor read (or its float cast): the node that the
  // template centres (NormMatmulPlan::centred). Returns the tensor read, or nullptr.
  const Node* CentredInput(const Node* n) const {
    if (n->op() != OpKind::kSub) return nullptr;
    const Node* base = n->operand(0);
    const Node* mean = n->operand(1);
    if (mean->op() != OpKind::kReduceMean || !prologue_.contains(mean) || mean->operand(0) != base ||
        Classify(mean->shape(), a_) != Varies::kRow) {
      return nullptr;
    }
    const std::vector<int64_t>& axes = mean->attrs().GetInts("axes");
    const int64_t rank = static_cast<int64_t>(a_.size());
    if (axes.size() != 1 || (axes[0] != rank - 1 && axes[0] != -1)) return nullptr;
    const Node* x = prologue_.contains(base) && IsFloatCast(base) ? base->operand(0) : base;
    if (prologue_.contains(x) || Classify(x->shape(), a_) != Varies::kElement) return nullptr;
    return x;
  }

  // x, the one [.., M, K] tensor the prologue reads; `raw`: read other than centred.
  absl::Status X(const Node* n, bool raw) {
    if (plan_.x != nullptr && plan_.x != n) {
      return Refuse(absl::StrCat("the norm reads two [.., M, K] tensors (", plan_.x->name(), ", ", n->name(),
                                 "): a residual add before the norm stays in the producer's region"));
    }
    plan_.x = n;
    raw_x_ = raw_x_ || raw;
    return absl::OkStatus();
  }

  // A value read from memory (or a literal).
  absl::Status Leaf(const Node* n, Varies v) {
    if (IsInlinedConstant(n)) return absl::OkStatus();
    if (v == Varies::kElement) return X(n, /*raw=*/true);
    if (v == Varies::kColumn && IsFloat(n->dtype())) return absl::OkStatus();
    return Refuse(absl::StrCat(n->name(), " ", ShapeToString(n->shape()),
                               " is read by the norm but is neither x [.., M, K] nor a float [K] weight"));
  }

  const absl::flat_hash_set<const Node*>& prologue_;
  const Shape& a_;
  NormMatmulPlan& plan_;
  absl::flat_hash_set<const Node*> checked_element_, checked_row_;
  bool raw_x_ = false;
};

}  // namespace

std::string NormMatmulPlan::Summary() const {
  std::string s = absl::StrCat("norm of ", x->name(), " [", m, " x ", k, "] -> ", n, " features; ",
                               centred != nullptr ? "x centred on its row mean; " : "", reductions.size(),
                               " row statistic", reductions.size() == 1 ? "" : "s", ", ", row_factors.size(),
                               " row factor", row_factors.size() == 1 ? "" : "s", "; W ",
                               w_transposed ? "[N, K]" : "[K, N]");
  if (column_bias != nullptr) absl::StrAppend(&s, "; column bias ", column_bias->name(), " as a virtual token row");
  std::vector<std::string> epi;
  if (epilogue.bias) epi.push_back("bias");
  if (epilogue.residual) epi.push_back("residual");
  if (epilogue.gelu) epi.push_back("gelu_tanh");
  if (epilogue.relu) epi.push_back("relu");
  if (!epi.empty()) absl::StrAppend(&s, "; epilogue ", absl::StrJoin(epi, " + "));
  return s;
}

absl::StatusOr<NormMatmulPlan> AnalyzeNormMatmulPlan(const Region& region) {
  NormMatmulPlan plan;
  const Node* matmul = nullptr;
  for (const Node* n : region.nodes) {
    if (n->op() != OpKind::kMatmul) continue;
    if (matmul != nullptr) return Refuse("two matmuls are two kernels");
    matmul = n;
  }
  if (matmul == nullptr) return Refuse("a norm_matmul region without a matmul");
  const Node* a = matmul->operand(0);
  if (!region.Contains(a)) return Refuse("the matmul's A is read from memory: there is no prologue to fold");
  // The prologue: the members A depends on within the region.
  absl::flat_hash_set<const Node*> prologue;
  std::vector<const Node*> stack = {a};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!region.Contains(n) || !prologue.insert(n).second) continue;
    for (const Node* o : n->operands()) stack.push_back(o);
  }
  for (const Node* n : region.nodes) {
    if (prologue.contains(n)) plan.prologue.push_back(n);
  }
  for (const Node* out : region.outputs) {
    if (prologue.contains(out)) {
      return Refuse(absl::StrCat(out->name(), " is read outside the region (or returned): the normalised values "
                                 "would have to be written anyway"));
    }
  }
  const Node* w = matmul->operand(1);
  if (matmul->dtype() != DType::kBF16) {
    return Refuse(absl::StrCat(DTypeName(matmul->dtype()), " matmul: the norm_matmul template is bf16 (f16 products x w "
                               "may overflow before the row scale; f32 has no mma.sync path here)"));
  }
  const Shape& as = a->shape();
  if (as.size() < 2 || w->shape().size() != 2) {
    return Refuse(absl::StrCat("A ", ShapeToString(as), " @ B ", ShapeToString(w->shape()),
                               ": the template runs [.., M, K] @ [K, N] with one weight for every batch"));
  }
  plan.k = as.back();
  plan.m = NumElements(as) / plan.k;
  plan.n = matmul->shape().back();
  if (plan.k % 8 != 0 || plan.n % 8 != 0) {
    return Refuse(absl::StrCat("K ", plan.k, ", N ", plan.n, ": the template moves 16-byte vectors (multiples of 8)"));
  }

  // Peel A's casts and an additive per-column term (layer_norm's bias: A = s g + b(k)); then
  // flatten it through casts and products: row-shaped factors scale the accumulators, the
  // others multiply into the operand.
  const Node* top = a;
  while (prologue.contains(top)) {
    if (IsFloatCast(top)) {
      top = top->operand(0);
      continue;
    }
    if (top->op() != OpKind::kAdd || plan.column_bias != nullptr) break;
    const int column = Classify(top->operand(1)->shape(), as) == Varies::kColumn   ? 1
                       : Classify(top->operand(0)->shape(), as) == Varies::kColumn ? 0
                                                                                     : -1;
    if (column < 0 || Classify(top->operand(1 - column)->shape(), as) != Varies::kElement) break;
    plan.column_bias = top->operand(column);
    top = top->operand(1 - column);
  }
  std::vector<const Node*> factors = {top};
  while (!factors.empty()) {
    const Node* f = factors.back();
    factors.pop_back();
    if (prologue.contains(f) && IsFloatCast(f)) {
      factors.push_back(f->operand(0));
    } else if (prologue.contains(f) && f->op() == OpKind::kMul) {
      factors.push_back(f->operand(1));
      factors.push_back(f->operand(0));
    } else if (Classify(f->shape(), as) == Varies::kRow) {
      plan.row_factors.push_back(f);
    } else {
      plan.operand_factors.push_back(f);
    }
  }
  PrologueChecker check(prologue, as, plan);
  for (const Node* f : plan.operand_factors) KILN_RETURN_IF_ERROR(check.Element(f));
  for (const Node* f : plan.row_factors) KILN_RETURN_IF_ERROR(check.Row(f));
  if (plan.column_bias != nullptr) KILN_RETURN_IF_ERROR(check.Element(plan.column_bias));
  if (plan.reductions.empty()) return Refuse("the prologue has no row statistic to fold");
  if (plan.centred != nullptr && check.raw_x()) {
    return Refuse(absl::StrCat("the prologue reads x both centred (", plan.centred->name(),
                               ") and as it is: the template gives its Body x - mean only"));
  }
  if (plan.x == nullptr || plan.x->dtype() != DType::kBF16) {
    return Refuse("the norm's input must be a bf16 [.., M, K] tensor read from memory");
  }
  // In post order (Row visits each once): the Body's s[i] follow the region's node order.
  std::sort(plan.reductions.begin(), plan.reductions.end(), [&](const Node* p, const Node* q) {
    return std::find(region.nodes.begin(), region.nodes.end(), p) < std::find(region.nodes.begin(), region.nodes.end(), q);
  });

  // The rest is a matmul region whose A is read from memory: cuBLASLt's epilogue rules.
  Region rest = region;
  rest.nodes.clear();
  for (Node* n : region.nodes) {
    if (!prologue.contains(n)) rest.nodes.push_back(n);
  }
  KILN_ASSIGN_OR_RETURN(plan.epilogue, AnalyzeMatmul(rest));
  if (plan.epilogue.trans_a) return Refuse("A is the norm's output, not a transpose");
  plan.w_transposed = plan.epilogue.trans_b;
  if (plan.epilogue.b->shape().size() != 2) return Refuse("the weight must be one [K, N] matrix");
  return plan;
}

namespace {

// NormMatmulShape's k32 chunks of one split block's slice.
int64_t SliceChunks(const NormMatmulPlan& plan, const NormMatmulTiles& t) {
  const int64_t chunks = (plan.k + 31) / 32;
  return (chunks + t.split - 1) / t.split;
}

int64_t Statistics(const NormMatmulPlan& plan) { return std::max<int64_t>(1, static_cast<int64_t>(plan.reductions.size())); }

}  // namespace

int64_t NormMatmulSmemBytes(const NormMatmulPlan& plan, const NormMatmulTiles& t) {
  const int64_t slice_chunks = SliceChunks(plan, t), slice_cols = 32 * slice_chunks;
  const int64_t x_stride = slice_cols + (plan.w_transposed ? (slice_chunks % 2 == 0 ? 32 : 0) : 16);
  const int64_t x_bytes = t.tokens * x_stride * 2;
  const int64_t red_bytes = t.tokens * (t.block_n + 4) * 4;
  const int64_t chunk_stats = t.tokens * (slice_cols / 8) * Statistics(plan) * 4;
  return std::max(x_bytes, red_bytes) + chunk_stats + (2 * t.tokens + t.tokens * Statistics(plan)) * 4;
}

int64_t NormMatmulScratchItemBytes(const NormMatmulPlan& plan, const NormMatmulTiles& t) {
  return 16 + 4LL * t.split * t.tokens * (t.block_n + Statistics(plan));
}

int64_t NormMatmulTokenTiles(const NormMatmulPlan& plan, const NormMatmulTiles& t) {
  const int64_t rows = std::max(1, t.tokens - plan.VirtualRows());
  return (plan.m + rows - 1) / rows;
}

int64_t NormMatmulBlocks(const NormMatmulPlan& plan, const NormMatmulTiles& t) {
  return NormMatmulTokenTiles(plan, t) * ((plan.n + t.block_n - 1) / t.block_n) * t.split;
}

FusionDecision NormMatmulTilesFit(const NormMatmulPlan& plan, const NormMatmulTiles& t, const DeviceSpec& device) {
  auto no = [](const std::string& why) { return FusionDecision::Forbid("norm-matmul-tiles", why); };
  if (t.tokens % 8 != 0 || t.tokens < 8 || t.tokens > 64) return no(absl::StrCat("tokens ", t.tokens, ": 8 to 64 in steps of 8"));
  if (t.warps != 2 && t.warps != 4 && t.warps != 8) return no(absl::StrCat("warps ", t.warps, ": 2, 4 or 8"));
  if (t.warps_n < 1 || t.warps % t.warps_n != 0) {
    return no(absl::StrCat("warps_n ", t.warps_n, ": a divisor of the ", t.warps, " warps"));
  }
  if (t.block_n < 16 * t.warps_n || t.block_n % (16 * t.warps_n) != 0 ||
      (t.f_tiles() != 1 && t.f_tiles() != 2 && t.f_tiles() != 4)) {
    return no(absl::StrCat("block_n ", t.block_n, ": 1, 2 or 4 m16 fragments for each of ", t.warps_n, " warps"));
  }
  if (t.split < 1 || t.split > (plan.k + 31) / 32) {
    return no(absl::StrCat("split ", t.split, ": 1 to the ", (plan.k + 31) / 32, " 32-column chunks of K"));
  }
  if (t.unroll < 1 || t.unroll > 8) return no(absl::StrCat("unroll ", t.unroll, ": 1 to 8 chunks"));
  const int acc = t.f_tiles() * (t.tokens / 8) * 4;
  if (acc > kNormMatmulAccumulators) {
    return no(absl::StrCat(t.tokens, " tokens x ", t.f_tiles(), " fragments per warp: ", acc,
                           " accumulators per thread, over ", kNormMatmulAccumulators));
  }
  if (8 * t.f_tiles() * t.unroll > kNormMatmulLoadWords) {
    return no(absl::StrCat(t.unroll, " chunks of ", 8 * t.f_tiles(), " words in flight per thread: over ",
                           kNormMatmulLoadWords));
  }
  const int64_t smem = NormMatmulSmemBytes(plan, t);
  if (device.smem_per_block_bytes > 0 && smem > device.smem_per_block_bytes) {
    return no(absl::StrCat(smem, " bytes of shared memory, over the ", device.smem_per_block_bytes, " a block may take"));
  }
  return FusionDecision::Allow("norm-matmul-tiles", "fits");
}

NormMatmulTiles DefaultNormMatmulTiles(const NormMatmulPlan& plan, const DeviceSpec& device) {
  NormMatmulTiles t;
  t.tokens = static_cast<int>(std::min<int64_t>(64, (plan.m + plan.VirtualRows() + 7) / 8 * 8));
  t.warps = t.warps_n = t.tokens <= 8 ? 4 : 8;
  // Centred (layer_norm), 32 tokens or more: one fragment per warp. Its centring and virtual
  // row leave 2 fragments without enough registers under NVRTC (56 bytes spilled at 128
  // registers for 24 rows of 1000 -> 1032, where rms_norm's 32 tokens spill none).
  const int f_tiles = t.tokens <= 8 ? 4 : plan.centred != nullptr && t.tokens >= 32 ? 1 : 2;
  t.block_n = 16 * f_tiles * t.warps_n;
  while (t.block_n > 16 * t.warps_n && t.block_n / 2 >= plan.n) t.block_n /= 2;  // narrow N: no empty fragments
  t.unroll = std::max(1, kNormMatmulLoadWords / (8 * t.f_tiles()));
  const int64_t tiles = NormMatmulTokenTiles(plan, t) * ((plan.n + t.block_n - 1) / t.block_n);
  const double want = 3.5 * std::max(1, device.sm_count) / static_cast<double>(tiles);
  t.split = 1;
  while (t.split < 16 && 2.0 * t.split <= want * 1.41) t.split *= 2;  // the power of two nearest `want`
  t.split = static_cast<int>(std::min<int64_t>(t.split, (plan.k + 31) / 32));
  // Shared memory (the x slice grows as the split shrinks) must leave room for the blocks.
  while (!NormMatmulTilesFit(plan, t, device) && t.split < (plan.k + 31) / 32) t.split *= 2;
  t.split = static_cast<int>(std::min<int64_t>(t.split, (plan.k + 31) / 32));
  return t;
}

std::vector<NormMatmulTiles> CandidateNormMatmulTiles(const NormMatmulPlan& plan, const DeviceSpec& device) {
  const NormMatmulTiles d = DefaultNormMatmulTiles(plan, device);
  std::vector<NormMatmulTiles> out = {d};
  auto add = [&](NormMatmulTiles t) {
    t.unroll = std::max(1, std::min(t.unroll, kNormMatmulLoadWords / (8 * std::max(1, t.f_tiles()))));
    if (!NormMatmulTilesFit(plan, t, device)) return;
    for (const NormMatmulTiles& o : out) {
      if (o.tokens == t.tokens && o.block_n == t.block_n && o.warps == t.warps && o.warps_n == t.warps_n &&
          o.split == t.split && o.unroll == t.unroll && o.min_blocks == t.min_blocks) {
        return;
      }
    }
    out.push_back(t);
  };
  for (int split : {d.split / 2, d.split * 2}) {
    NormMatmulTiles t = d;
    t.split = split;
    add(t);
  }
  for (int block_n : {d.block_n / 2, d.block_n / 4}) {  // narrower tiles: more blocks, fewer fragments per warp
    NormMatmulTiles t = d;
    t.block_n = block_n;
    t.unroll = kNormMatmulLoadWords / 8;
    add(t);
    t.split = std::max(1, d.split / 2);
    add(t);
  }
  {  // half the warps along the features: the others split k
    NormMatmulTiles t = d;
    t.warps_n = std::max(1, d.warps_n / 2);
    add(t);
  }
  {  // the other warp count
    NormMatmulTiles t = d;
    t.warps = t.warps_n = d.warps == 8 ? 4 : 8;
    t.block_n = 16 * d.f_tiles() * t.warps_n;
    add(t);
  }
  for (int unroll : {d.unroll / 2, d.unroll * 2}) {
    NormMatmulTiles t = d;
    t.unroll = unroll;
    add(t);
  }
  return out;
}

}  // namespace kiln
