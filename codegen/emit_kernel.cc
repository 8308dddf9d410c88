#include "codegen/emit_kernel.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ir/base/status.h"
#include "passes/fusion/region_kind.h"

namespace kiln {
namespace {

using Emitter = absl::StatusOr<KernelSource> (*)(const Region&, const KernelParams&);

// The emitter of each kind that runs a generated kernel.
struct EmitterEntry {
  RegionKind kind;
  Emitter emit;
};
constexpr EmitterEntry kEmitters[] = {
    {RegionKind::kPointwise, codegen_internal::EmitElementwiseKernel},
    {RegionKind::kLayout, codegen_internal::EmitElementwiseKernel},
    {RegionKind::kRowReduction, codegen_internal::EmitReduceKernel},
    {RegionKind::kColumnReduction, codegen_internal::EmitReduceKernel},
    {RegionKind::kAttention, codegen_internal::EmitAttentionKernel},
    {RegionKind::kNormMatmul, codegen_internal::EmitNormMatmulKernel},
};

Emitter EmitterOf(RegionKind kind) {
  for (const EmitterEntry& e : kEmitters) {
    if (e.kind == kind) return e.emit;
  }
  return nullptr;
}

}  // namespace

bool HasKernel(RegionKind kind) { return EmitterOf(kind) != nullptr; }

absl::StatusOr<KernelSource> EmitKernel(const Region& region, const KernelParams& params) {
  const RegionKindInfo& info = KindInfo(region.kind);
  const Emitter emit = EmitterOf(region.kind);
  if (emit == nullptr) {
    return absl::UnimplementedError(absl::StrCat("region ", region.id, " of kind ", info.name,
                                                 " has no generated kernel: it runs as ", info.runs_as));
  }
  KILN_RETURN_IF_ERROR(ValidateParams(params));
  if (region.nodes.empty()) return absl::InvalidArgumentError(absl::StrCat("region ", region.id, " is empty"));
  if (!region.placed) {
    return absl::InternalError(absl::StrCat("region ", region.id, " (", region.NodeList(4), ") is not placed: ",
                                            region.placed.reason()));
  }
  KILN_ASSIGN_OR_RETURN(KernelSource ks, emit(region, params));
  if (params.max_grid > 0) {
    // A persistent launch: the templates whose blocks loop over the count (pointwise.cuh's
    // grid-stride loop, row_reduce.cuh's loop over rows) take a grid smaller than the work.
    if (ks.template_name != "pointwise.cuh" && ks.template_name != "row_reduce.cuh") {
      return absl::InvalidArgumentError(absl::StrCat("KernelParams ", params.ToString(), ": region ", region.id,
                                                     " runs ", ks.template_name,
                                                     ", whose blocks do not loop over the work (max_grid applies to "
                                                     "pointwise.cuh and row_reduce.cuh)"));
    }
    const int64_t group = std::max<int64_t>(ks.launch.blocks_per_item_group, 1);
    ks.launch.max_grid = std::max(group, params.max_grid / group * group);
  }
  return ks;
}

}  // namespace kiln
