#include "codegen/emit_kernel.h"

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
  return emit(region, params);
}

}  // namespace kiln
