// EmitKernel: a FusionPlan region -> one CUDA kernel (KernelSource; the ABI is documented in
// codegen/kernel_source.h). Kinds and their templates:
//   pointwise        pointwise.cuh  (grid-stride loop, 16-byte vectors where the innermost
//                                    extent allows, straight-line code from the op table)
//   row_reduction    row_reduce.cuh (codegen/emit_row.cc: rows of [rows x N], passes per
//                                    reduction level, registers or streaming, online softmax,
//                                    deterministic combine over rows)
//   other_reduction  col_reduce.cuh (one thread per output, serial fold over reduced elements)
//   layout           layout.cuh     (one thread per output element, index remapping copy)
// matmul (cuBLASLt), attention (its template comes later) and view (an alias, no kernel) are
// refused with an Unimplemented error naming the kind.
#ifndef KILN_CODEGEN_EMIT_KERNEL_H_
#define KILN_CODEGEN_EMIT_KERNEL_H_

#include "absl/status/statusor.h"
#include "codegen/kernel_params.h"
#include "codegen/kernel_source.h"
#include "ir/graph.h"
#include "passes/fusion/region.h"

namespace kiln {

absl::StatusOr<KernelSource> EmitKernel(const Region& region, const Graph& graph, const KernelParams& params);

// Whether EmitKernel makes a kernel for regions of this kind.
bool HasKernel(RegionKind kind);

namespace codegen_internal {
absl::StatusOr<KernelSource> EmitElementwiseKernel(const Region& region, const KernelParams& params);
absl::StatusOr<KernelSource> EmitRowKernel(const Region& region, const KernelParams& params);
}  // namespace codegen_internal

}  // namespace kiln

#endif  // KILN_CODEGEN_EMIT_KERNEL_H_
