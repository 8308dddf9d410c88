#include "passes/fusion/region_kind.h"

#include "ir/base/status.h"
#include "passes/fusion/attention_plan.h"
#include "passes/fusion/kinds.h"

namespace kiln {

const std::vector<RegionKindInfo>& KindTable() {
  using namespace kinds;  // NOLINT: the hooks
  static const std::vector<RegionKindInfo> table = {
      {RegionKind::kPointwise, "pointwise", "pw", "pointwise.cuh", Lowering::kKernel, AnalyzeElementwise, ElementwiseLegal,
       PricePointwise},
      {RegionKind::kRowReduction, "row_reduction", "row", "row_reduce.cuh", Lowering::kKernel, AnalyzeReduction,
       RowLegal, PriceRow},
      {RegionKind::kColumnReduction, "column_reduction", "col", "column_reduce.cuh", Lowering::kKernel,
       AnalyzeReduction, ColumnLegal, PriceColumn},
      {RegionKind::kMatmul, "matmul", "mm", "cuBLASLt", Lowering::kLibrary, AnalyzeMatmulRegion, MatmulLegal,
       PriceMatmul},
      {RegionKind::kNormMatmul, "norm_matmul", "nmm", "norm_matmul.cuh", Lowering::kKernel, AnalyzeNormMatmul,
       NormMatmulLegal, PriceNormMatmul},
      {RegionKind::kAttention, "attention", "attn", "attention.cuh", Lowering::kKernel, AnalyzeAttention, AttentionLegal,
       PriceAttention},
      {RegionKind::kLayout, "layout", "layout", "layout.cuh", Lowering::kKernel, AnalyzeElementwise, ElementwiseLegal,
       PricePointwise},
      {RegionKind::kView, "view", "view", "alias", Lowering::kAlias, nullptr, ElementwiseLegal, PriceView},
  };
  return table;
}

const RegionKindInfo& KindInfo(RegionKind kind) {
  for (const RegionKindInfo& info : KindTable()) {
    if (info.kind == kind) return info;
  }
  KILN_CHECK(false) << "region kind " << static_cast<int>(kind) << " has no entry in the kind table";
  return KindTable().front();
}

const char* RegionKindName(RegionKind kind) { return KindInfo(kind).name; }

}  // namespace kiln
