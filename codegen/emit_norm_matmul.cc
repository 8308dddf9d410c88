// The norm_matmul emitter: a norm_matmul region -> the `Body` templates/norm_matmul.cuh runs
// (its comment lists the members). The pieces come from the region's NormMatmulPlan
// (passes/fusion/norm_matmul_plan.h): Operand is the expression g of x and the per-column
// weights at column k, Stats adds each row statistic's input, RowScale is the product of the
// row factors over the sums (a mean divides by K), and Epilogue adds the bias and residual
// and applies the activation of the matmul's epilogue. The tiles are the region's
// KernelParams (tile_m tokens x tile_n features, warps and warps_n, split, chunk = unroll).
#include <map>

#include "absl/strings/str_cat.h"
#include "codegen/emit_kernel.h"
#include "codegen/emitter_util.h"
#include "ir/base/status.h"
#include "passes/fusion/norm_matmul_plan.h"
#include "passes/fusion/region_kind.h"

namespace kiln {
namespace codegen_internal {
namespace {

class BodyExprs {
 public:
  BodyExprs(const NormMatmulPlan& plan, const std::map<const Node*, std::string>& in_names)
      : plan_(plan), in_names_(in_names) {}

  // The value of `n` at token row m, column k, as the Body's Operand and Stats see it: x is
  // the parameter `x` (already in f32), a per-column input is read at `k`.
  absl::StatusOr<TypedExpr> Element(const Node* n) {
    if (auto it = element_.find(n); it != element_.end()) return it->second;
    TypedExpr e;
    if (IsInlinedConstant(n)) {
      KILN_ASSIGN_OR_RETURN(e, ConstantLiteral(*n));
    } else if (n == plan_.x || n == plan_.centred) {  // the template passes x, or x - mean where centred
      e = {"x", CType::kFloat};
    } else if (auto in = in_names_.find(n); in != in_names_.end()) {
      e = {absl::StrCat("kiln::ToCompute(", in->second, "[k])"), ComputeType(n->dtype())};
    } else {
      std::vector<TypedExpr> operands;
      for (const Node* o : n->operands()) {
        KILN_ASSIGN_OR_RETURN(TypedExpr oe, Element(o));
        operands.push_back(oe);
      }
      KILN_ASSIGN_OR_RETURN(e, EmitPointwiseExpr(*n, operands, "0"));
    }
    element_[n] = e;
    return e;
  }

  // The value of row value `n` given the row sums `s` (RowScale).
  absl::StatusOr<TypedExpr> Row(const Node* n) {
    if (auto it = row_.find(n); it != row_.end()) return it->second;
    TypedExpr e;
    if (IsInlinedConstant(n)) {
      KILN_ASSIGN_OR_RETURN(e, ConstantLiteral(*n));
    } else if (IsReduction(n)) {
      const int i = ReductionIndex(n);
      e = n->op() == OpKind::kReduceMean
              ? TypedExpr{absl::StrCat("(s[", i, "] / ", FloatLiteral(static_cast<float>(plan_.k)), ")"), CType::kFloat}
              : TypedExpr{absl::StrCat("s[", i, "]"), CType::kFloat};
    } else {
      std::vector<TypedExpr> operands;
      for (const Node* o : n->operands()) {
        KILN_ASSIGN_OR_RETURN(TypedExpr oe, Row(o));
        operands.push_back(oe);
      }
      KILN_ASSIGN_OR_RETURN(e, EmitPointwiseExpr(*n, operands, "0"));
    }
    row_[n] = e;
    return e;
  }

  int ReductionIndex(const Node* n) const {
    for (size_t i = 0; i < plan_.reductions.size(); ++i) {
      if (plan_.reductions[i] == n) return static_cast<int>(i);
    }
    KILN_CHECK(false) << n->name() << " is not a row statistic of the plan";
    return -1;
  }

 private:
  const NormMatmulPlan& plan_;
  const std::map<const Node*, std::string>& in_names_;
  std::map<const Node*, TypedExpr> element_, row_;
};

}  // namespace

absl::StatusOr<KernelSource> EmitNormMatmulKernel(const Region& region, const KernelParams& params) {
  KILN_CHECK(region.norm_matmul != nullptr) << "norm_matmul region " << region.id << " has no plan";
  const NormMatmulPlan& plan = *region.norm_matmul;
  const NormMatmulTiles tiles{params.tile_m, params.tile_n, params.warps,          params.warps_n,
                              params.split,  static_cast<int>(params.chunk), params.min_blocks};
  if (tiles.warps * 32 != params.block_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("KernelParams ", params.ToString(), ": a norm_matmul block is 32 x warps threads"));
  }
  // The emitter knows no device: the tiles must fit the h100 spec's limits.
  const FusionDecision fit = NormMatmulTilesFit(plan, tiles, H100Spec());
  if (!fit) return absl::InvalidArgumentError(absl::StrCat("KernelParams ", params.ToString(), ": ", fit.reason()));

  KernelSource ks;
  ks.kind = region.kind;
  ks.template_name = KindInfo(region.kind).runs_as;
  std::vector<std::string> call_params, fields;
  std::map<const Node*, std::string> in_names, out_names;
  PointerParams(region, &ks.args, &call_params, &fields, &in_names, &out_names);

  BodyExprs exprs(plan, in_names);
  const MatmulEpilogue& epi = plan.epilogue;
  const int reductions = static_cast<int>(plan.reductions.size());
  std::string body = "  using T = __nv_bfloat16;\n";
  absl::StrAppend(&body, "  static constexpr long long kN = ", plan.n, ", kK = ", plan.k, ";\n");
  absl::StrAppend(&body, "  static constexpr int kReductions = ", reductions, ";\n");
  absl::StrAppend(&body, "  static constexpr bool kCentre = ", plan.centred != nullptr ? "true" : "false",
                  ", kColumnBias = ", plan.column_bias != nullptr ? "true" : "false", ";\n");
  for (const std::string& f : fields) absl::StrAppend(&body, "  ", f, ";\n");
  absl::StrAppend(&body, "  __device__ __forceinline__ const T* X() const { return ", in_names.at(plan.x), "; }\n");
  absl::StrAppend(&body, "  __device__ __forceinline__ const T* W() const { return ", in_names.at(epi.b), "; }  // ",
                  plan.w_transposed ? "[N, K]" : "[K, N]", "\n");
  absl::StrAppend(&body, "  __device__ __forceinline__ T* Out() const { return ", out_names.at(epi.output), "; }\n");
  absl::StrAppend(&body, "  __device__ __forceinline__ float Operand(float x, long long k) const {\n    float g = 1.0f;\n");
  for (const Node* f : plan.operand_factors) {
    KILN_ASSIGN_OR_RETURN(TypedExpr e, exprs.Element(f));
    absl::StrAppend(&body, "    g *= ", Coerce(e, CType::kFloat).code, ";  // ", f->name(), "\n");
  }
  absl::StrAppend(&body, "    return g;\n  }\n");
  absl::StrAppend(&body, "  __device__ __forceinline__ void Stats(float x, long long k, float* s) const {\n");
  for (int i = 0; i < reductions; ++i) {
    KILN_ASSIGN_OR_RETURN(TypedExpr e, exprs.Element(plan.reductions[i]->operand(0)));
    absl::StrAppend(&body, "    s[", i, "] += ", Coerce(e, CType::kFloat).code, ";  // ", plan.reductions[i]->name(), "\n");
  }
  absl::StrAppend(&body, "  }\n  __device__ __forceinline__ float RowScale(const float* s) const {\n    float r = 1.0f;\n");
  for (const Node* f : plan.row_factors) {
    KILN_ASSIGN_OR_RETURN(TypedExpr e, exprs.Row(f));
    absl::StrAppend(&body, "    r *= ", Coerce(e, CType::kFloat).code, ";  // ", f->name(), "\n");
  }
  absl::StrAppend(&body, "    return r;\n  }\n");
  if (plan.column_bias != nullptr) {
    KILN_ASSIGN_OR_RETURN(TypedExpr e, exprs.Element(plan.column_bias));
    absl::StrAppend(&body, "  __device__ __forceinline__ float ColumnBias(long long k) const { return ",
                    Coerce(e, CType::kFloat).code, "; }  // ", plan.column_bias->name(), "\n");
  }
  absl::StrAppend(&body, "  __device__ __forceinline__ float Epilogue(float y, long long m, long long n) const {\n");
  if (epi.bias) absl::StrAppend(&body, "    y += kiln::ToCompute(", in_names.at(epi.bias), "[n]);  // bias\n");
  if (epi.residual) {
    absl::StrAppend(&body, "    y += kiln::ToCompute(", in_names.at(epi.residual), "[m * kN + n]);  // residual\n");
  }
  // The op table's own device functions (pointwise.cuh), as the pointwise emitter calls them.
  if (epi.gelu) absl::StrAppend(&body, "    y = kiln::GeluTanh(y);\n");
  if (epi.relu) absl::StrAppend(&body, "    y = kiln::Relu(y);\n");
  absl::StrAppend(&body, "    return y;\n  }\n");

  ks.has_scratch = tiles.split > 1;  // the split blocks' partial tiles and tickets
  if (ks.has_scratch) call_params.push_back("void* __restrict__ scratch");
  call_params.push_back("long long count");
  const std::string call = absl::StrCat(
      "kiln::NormMatmulKernel<Body, kiln::NormMatmulShape<", tiles.tokens, ", ", tiles.block_n, ", ", tiles.warps, ", ",
      tiles.warps_n, ", ", tiles.split, ", ", tiles.unroll, ", ", plan.w_transposed ? "true" : "false", ", ", reductions,
      ", ", plan.k, ">>(body, count, ", ks.has_scratch ? "scratch" : "nullptr", ");");
  ks.count = plan.m;
  ks.count_meaning = "rows";
  ks.launch.block = params.block_size;
  const int rows_per_tile = tiles.tokens - plan.VirtualRows();  // rows of x per token tile
  ks.launch.items_per_block = rows_per_tile;
  ks.launch.grid_y = (plan.n + tiles.block_n - 1) / tiles.block_n;
  ks.launch.grid_z = tiles.split;
  ks.launch.dynamic_smem_bytes = static_cast<int>(NormMatmulSmemBytes(plan, tiles));
  if (ks.has_scratch) {
    // One item per (token tile, feature tile): ceil(count / rows) x grid_y items, at most
    // (count / rows + 1) x grid_y.
    const int64_t per_tile_row = ks.launch.grid_y * NormMatmulScratchItemBytes(plan, tiles);
    ks.scratch_fixed_bytes = per_tile_row;
    ks.scratch_bytes_per_count = (per_tile_row + rows_per_tile - 1) / rows_per_tile;
  }
  ks.params = params;
  ks.notes.push_back(absl::StrCat("mma.sync kernel, W loaded straight into fragments: ", tiles.tokens, " token rows (",
                                  rows_per_tile, " of x) x ",
                                  tiles.block_n, " features per block, ", tiles.warps, " warps (", tiles.warps_n,
                                  " along the features), K over ", tiles.split, " blocks, ", tiles.unroll,
                                  " chunks of 32 columns in flight per warp; ", plan.Summary()));
  std::vector<std::string> comment = {
      absl::StrCat("kiln norm_matmul kernel (norm_matmul.cuh), K ", plan.k, ", N ", plan.n, ", ",
                   params.ToString()),
      "Generated by codegen/emit_norm_matmul.cc from these nodes (the norm folded into the operand load):"};
  for (const Node* n : region.nodes) comment.push_back(absl::StrCat("  ", NodeComment(n)));
  FinishKernel(KindInfo(region.kind).tag, {"kiln_types.cuh", "pointwise.cuh", "norm_matmul.cuh"}, comment, params, call_params, body,
               call, &ks);
  return ks;
}

}  // namespace codegen_internal
}  // namespace kiln
