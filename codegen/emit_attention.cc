// The attention emitter: an attention region -> the `Body` templates/attention.cuh runs (its
// AttentionKernel comment lists the members). Everything comes from the region's
// AttentionPlan (passes/fusion/attention_plan.h): each operand's pointer is its region input
// plus the offset of batch b, decomposed over the view's batch atoms; its row stride is the
// view's sequence stride; the mask is read an element at a time through its broadcast view.
// The tiles are the region's KernelParams (tile_m x tile_n, warps, stages), which
// DefaultParams takes from the shared rule DefaultAttentionTiles.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "codegen/emit_kernel.h"
#include "codegen/emitter_util.h"
#include "codegen/pointwise_expr.h"
#include "ir/base/status.h"
#include "ir/philox.h"
#include "passes/fusion/attention_plan.h"
#include "passes/fusion/region_kind.h"

namespace kiln {
namespace codegen_internal {
namespace {

// offset + sum over the batch atoms of coordinate(b) * stride, as a C expression in `b`.
std::string BatchOffset(const AttentionOperand& op) {
  std::vector<std::string> terms = {op.view.offset == 0 ? "" : absl::StrCat(op.view.offset, "LL")};
  int64_t inner = 1;
  for (size_t a = op.batch.size(); a-- > 0;) {
    const ViewAtom& atom = op.batch[a];
    terms.push_back(Scale(Coord("b", inner, atom.extent, a == 0), atom.stride));
    inner *= atom.extent;
  }
  return SumTerms(terms);
}

AttentionTiles TilesOf(const KernelParams& p) {
  AttentionTiles t;
  t.block_m = p.tile_m;
  t.block_n = p.tile_n;
  t.warps = p.warps;
  t.stages = p.stages;
  t.split = p.split;
  t.wgmma = p.wgmma;
  t.min_blocks = p.min_blocks;
  t.tma = p.tma;
  return t;
}

// The TMA kernel's coordinates of K/V batch b in the operand's tensor map (dims 2, 3, ...).
std::string TmaCoords(const char* name, const AttentionOperand& op) {
  std::string s = absl::StrCat("  __device__ __forceinline__ void ", name, "(long long b, int (&c)[5]) const {");
  int dim = 2;
  for (const TmaBatchAtom& a : TmaBatchAtoms(op)) {
    std::string coord = a.inner == 1 ? "b" : absl::StrCat("b / ", a.inner, "LL");
    if (!a.outermost) coord = absl::StrCat("(", coord, ") % ", a.extent, "LL");
    absl::StrAppend(&s, " c[", dim++, "] = static_cast<int>(", coord, ");");
  }
  if (dim == 2) absl::StrAppend(&s, " (void)b; (void)c;");
  return absl::StrCat(s, " }\n");
}

}  // namespace

absl::StatusOr<KernelSource> EmitAttentionKernel(const Region& region, const KernelParams& params) {
  KILN_CHECK(region.attention != nullptr) << "attention region " << region.id << " has no plan";
  const AttentionPlan& plan = *region.attention;
  const AttentionTiles tiles = TilesOf(params);
  if (tiles.Threads() != params.block_size) {
    return absl::InvalidArgumentError(absl::StrCat("KernelParams ", params.ToString(),
                                                   ": an attention block is 32 x warps threads (+ 128 with tma)"));
  }
  // The emitter knows no device: the tiles must fit the h100 spec's limits (sm_90's largest
  // block); a GPU with less shared memory refuses the launch with the driver's message.
  const FusionDecision fit = AttentionTilesFit(plan, tiles, H100Spec());
  if (!fit) return absl::InvalidArgumentError(absl::StrCat("KernelParams ", params.ToString(), ": ", fit.reason()));

  KernelSource ks;
  ks.kind = region.kind;
  ks.template_name = KindInfo(region.kind).runs_as;
  if (params.wgmma) ks.template_name = params.tma ? "attention_sm90_tma.cuh" : "attention_sm90.cuh";
  std::vector<std::string> call_params, fields;
  std::map<const Node*, std::string> in_names, out_names;
  PointerParams(region, &ks.args, &call_params, &fields, &in_names, &out_names);

  const std::string type = StorageTypeName(plan.attention->dtype());
  std::string body = absl::StrCat("  using T = ", type, ";\n");
  absl::StrAppend(&body, "  static constexpr int kD = ", plan.D, ", kE = ", plan.E, ", kS = ", plan.S, ", kT = ", plan.T,
                  ", kG = ", plan.group, ";\n");
  absl::StrAppend(&body, "  static constexpr bool kCausal = ", plan.causal ? "true" : "false",
                  ", kHasMask = ", plan.mask ? "true" : "false", ", kHasLse = ", plan.lse ? "true" : "false", ";\n");
  absl::StrAppend(&body, absl::StrFormat("  static constexpr float kScaleLog2 = %.9gf;  // scale %.9g x log2(e)\n",
                                         plan.scale * 1.4426950408889634, plan.scale));
  absl::StrAppend(&body, "  static constexpr long long kSection = ", AttentionL2Section(plan),
                  ";  // K/V batches whose blocks run together (K and V in L2)\n");
  absl::StrAppend(&body, "  static constexpr long long kQRow = ", plan.q.seq.stride, ", kKRow = ", plan.k.seq.stride,
                  ", kVRow = ", plan.v.seq.stride, ", kORow = ", plan.out.seq.stride, ";\n");
  for (const std::string& f : fields) absl::StrAppend(&body, "  ", f, ";\n");
  const std::pair<const char*, const AttentionOperand*> reads[] = {{"Q", &plan.q}, {"K", &plan.k}, {"V", &plan.v}};
  for (const auto& [name, op] : reads) {  // Q takes the query batch, K and V the K/V batch (b / kG)
    absl::StrAppend(&body, "  __device__ __forceinline__ const T* ", name, "(long long b) const { return ",
                    in_names.at(op->view.source), " + ", BatchOffset(*op), "; }  // ", op->ToString(), "\n");
  }
  absl::StrAppend(&body, "  __device__ __forceinline__ T* O(long long b) const { return ",
                  out_names.at(plan.out.view.source), " + ", BatchOffset(plan.out), "; }  // ", plan.out.ToString(),
                  "\n");
  if (tiles.tma) {
    absl::StrAppend(&body, "  static constexpr int kKRank = ", 2 + TmaBatchAtoms(plan.k).size(),
                    ", kVRank = ", 2 + TmaBatchAtoms(plan.v).size(), ";  // K's and V's tensor maps\n");
    absl::StrAppend(&body, TmaCoords("KCoords", plan.k), TmaCoords("VCoords", plan.v));
  }
  if (plan.lse) {
    absl::StrAppend(&body, "  __device__ __forceinline__ float* Lse(long long b) const { return ", out_names.at(plan.lse),
                    " + b * kS; }  // ", plan.lse->name(), ": f32 log-sum-exp per query row\n");
  }
  if (plan.mask) {
    const AttentionOperand& m = *plan.mask;
    absl::StrAppend(&body, "  __device__ __forceinline__ float Mask(long long b, int i, int j) const {  // ",
                    m.ToString(), "\n    return kiln::ToCompute(", in_names.at(m.view.source), "[",
                    SumTerms({BatchOffset(m), Scale("i", m.seq.stride), Scale("j", m.inner.stride)}), "]);\n  }\n");
  }

  if (plan.dropout > 0) {
    absl::StrAppend(&body, "  static constexpr bool kDropout = true, kDropAll = ", plan.dropout >= 1 ? "true" : "false",
                    ";  // dropout p = ", plan.dropout, " on the probabilities (docs/dropout.md)\n");
    absl::StrAppend(&body, "  static constexpr unsigned kDropThreshold = ", DropoutThreshold(plan.dropout),
                    "u;\n  static constexpr float kDropScale = ",
                    plan.dropout >= 1 ? "0.0f" : FloatLiteral(DropoutScale(plan.dropout)), ";\n");
    // Seed() and Offset(): the run-time operand (an i32 is sign-extended) or the attribute.
    auto accessor = [&](const char* name, const Node* node, uint64_t value) {
      const std::string read =
          node == nullptr ? absl::StrCat(value, "ULL")
                          : absl::StrCat("static_cast<unsigned long long>(static_cast<long long>(", in_names.at(node),
                                         "[0]))  /* ", node->name(), " */");
      absl::StrAppend(&body, "  __device__ __forceinline__ unsigned long long ", name, "() const { return ", read,
                      "; }\n");
    };
    accessor("Seed", plan.seed, plan.seed_value);
    accessor("Offset", plan.offset, plan.offset_value);
  } else {
    absl::StrAppend(&body, "  static constexpr bool kDropout = false;\n");
  }

  const bool q_in_registers = AttentionQInRegisters(plan, tiles);
  ks.has_scratch = tiles.split > 1;
  if (ks.has_scratch) call_params.push_back("void* __restrict__ scratch");
  call_params.push_back("long long count");
  if (tiles.tma) {
    call_params.push_back("const __grid_constant__ kiln::tma::TensorMap k_map");
    call_params.push_back("const __grid_constant__ kiln::tma::TensorMap v_map");
    auto arg_of = [&](const Node* source) {
      for (size_t a = 0; a < ks.args.size(); ++a) {
        if (!ks.args[a].is_output && ks.args[a].tensor == source->name()) return static_cast<int>(a);
      }
      KILN_CHECK(false) << "attention operand " << source->name() << " is not a kernel argument";
      return -1;
    };
    ks.launch.tensor_maps = {AttentionTensorMap(plan, plan.k, plan.D, tiles, arg_of(plan.k.view.source)),
                             AttentionTensorMap(plan, plan.v, plan.E, tiles, arg_of(plan.v.view.source))};
  }
  const std::string kernel = !tiles.wgmma ? "kiln::AttentionKernel"
                             : tiles.tma  ? "kiln::AttentionKernelSm90Tma"
                                          : "kiln::AttentionKernelSm90";
  // The TMA kernel's ping-pong schedule (its warpgroups issuing their products in turns): 476.3
  // against 491.4 us without a mask, 256.4 against 252.2 causal (128 x 128 tiles, 32/8 heads,
  // S 4096, D 128, H200; bench/results/2026-11-28-session27.md): taken without the causal mask.
  const bool ping_pong = tiles.tma && !plan.causal;
  const std::string call = absl::StrCat(
      kernel, "<Body, kiln::AttentionShape<", tiles.block_m, ", ", tiles.block_n, ", ", tiles.warps, ", ",
      tiles.stages, ", ", q_in_registers ? "true" : "false", ", ", tiles.split, ">",
      tiles.tma ? (ping_pong ? ", true" : ", false") : "", ">(body, count, ",
      tiles.tma ? "&k_map, &v_map" : ks.has_scratch ? "scratch" : "nullptr", ");");
  ks.count = plan.batch / plan.group;
  ks.count_meaning = "K/V batches";
  ks.scratch_bytes_per_count = AttentionScratchBytesPerBatch(plan, tiles);
  ks.launch.block = params.block_size;
  ks.launch.items_per_block = 1;
  ks.launch.grid_y = AttentionQueryBlocks(plan, tiles);
  ks.launch.grid_z = tiles.split;
  ks.launch.dynamic_smem_bytes = static_cast<int>(AttentionSmemBytes(plan, tiles));
  ks.params = params;
  ks.notes.push_back(absl::StrCat(tiles.tma     ? "sm_90a wgmma kernel, K and V by TMA from a producer warpgroup, "
                                  : tiles.wgmma ? "sm_90a wgmma kernel, "
                                                : "mma.sync kernel, ", "tiles ", tiles.block_m, " queries x ", tiles.block_n, " keys, ", tiles.warps,
                                  " warps, ", tiles.stages, " stages",
                                  tiles.wgmma ? (tiles.stages == 3 || tiles.tma ? "; each tile's softmax overlaps the previous tile's p v" : "")
                                              : "",
                                  ping_pong ? "; the warpgroups issue their products in turns (ping-pong)" : "",
                                  tiles.wgmma ? ""
                                  : q_in_registers ? ", Q in registers" : ", Q reloaded from shared memory per key tile",
                                  plan.causal ? "; causal: key tiles past each block's last row skipped" : "",
                                  plan.group > 1 ? absl::StrCat("; ", plan.group, " query heads per K/V head in one block") : "",
                                  plan.lse ? absl::StrCat("; writes ", plan.lse->name(), ", the rows' log-sum-exp") : "",
                                  plan.dropout > 0 ? absl::StrCat("; dropout p = ", plan.dropout,
                                                                  " on the probabilities, the mask regenerated per tile (Philox)")
                                                   : "",
                                  tiles.split > 1 ? absl::StrCat("; key tiles split over ", tiles.split, " blocks") : ""));
  std::vector<std::string> comment = {
      absl::StrCat("kiln attention kernel (", ks.template_name, "), S ", plan.S, ", T ", plan.T, ", D ", plan.D, ", E ",
                   plan.E, ", ", params.ToString()),
      "Generated by codegen/emit_attention.cc from these nodes (layout ops folded into Q/K/V/O):"};
  for (const Node* n : region.nodes) comment.push_back(absl::StrCat("  ", NodeComment(n)));
  FinishKernel(KindInfo(region.kind).tag,
               tiles.wgmma ? std::vector<std::string>{"kiln_types.cuh", ks.template_name}
                           : std::vector<std::string>{"kiln_types.cuh", "attention.cuh"},
               comment, params, call_params, body, call, &ks);
  return ks;
}

}  // namespace codegen_internal
}  // namespace kiln
