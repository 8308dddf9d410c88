#include "codegen/emit_kernel.h"

#include "absl/strings/str_cat.h"
#include "ir/base/status.h"

namespace kiln {

bool HasKernel(RegionKind kind) {
  return kind == RegionKind::kPointwise || kind == RegionKind::kRowReduction ||
         kind == RegionKind::kOtherReduction || kind == RegionKind::kLayout;
}

absl::StatusOr<KernelSource> EmitKernel(const Region& region, const Graph& graph, const KernelParams& params) {
  if (!HasKernel(region.kind)) {
    const char* why = region.kind == RegionKind::kMatmul ? "it runs as a cuBLASLt call"
                      : region.kind == RegionKind::kView ? "it is an alias of its input (no kernel)"
                                                         : "its tiled template is not written yet";
    return absl::UnimplementedError(absl::StrCat("region ", region.id, " of kind ", RegionKindName(region.kind),
                                                 " has no generated kernel: ", why));
  }
  KILN_RETURN_IF_ERROR(ValidateParams(params));
  if (region.nodes.empty()) return absl::InvalidArgumentError(absl::StrCat("region ", region.id, " is empty"));
  if (region.kind == RegionKind::kRowReduction) {
    absl::StatusOr<KernelSource> row = codegen_internal::EmitRowKernel(region, params);
    if (row.ok() || row.status().code() != absl::StatusCode::kUnimplemented) return row;
    // A row region the row template cannot place: the elementwise emitter is always correct
    // (each output element folds its row serially), only slow.
    absl::StatusOr<KernelSource> generic = codegen_internal::EmitElementwiseKernel(region, params);
    if (generic.ok()) {
      generic->notes.push_back(absl::StrCat("row template not applicable (", row.status().message(),
                                            "): serial elementwise fallback"));
    }
    return generic;
  }
  return codegen_internal::EmitElementwiseKernel(region, params);
}

}  // namespace kiln
