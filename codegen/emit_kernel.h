// EmitKernel: a FusionPlan region -> one CUDA kernel (KernelSource; the ABI is documented in
// codegen/kernel_source.h), by the emitter of the region's kind. Each emitter generates only a
// `Body` (the region's fused expressions as small member functions) and a 3-line extern "C"
// entry that calls its kind's kernel template with the launch shape of its KernelParams:
//   pointwise, layout   emit_elementwise.cc -> templates/pointwise.cuh PointwiseKernel, or when
//                       the region's LayoutPlan stages a transposed read and the params name a
//                       tile, emit_layout.cc -> templates/layout.cuh TiledTransposeKernel, or
//                       when its plan allows the params' vector width outside the broadcast-only
//                       form, emit_vector.cc -> PointwiseKernel (passes/fusion/plain_vector.h)
//   row_reduction       emit_reduce.cc      -> templates/row_reduce.cuh RowKernel
//   column_reduction    emit_reduce.cc      -> templates/column_reduce.cuh ColumnKernel
//   attention           emit_attention.cc   -> templates/attention.cuh AttentionKernel
//   norm_matmul         emit_norm_matmul.cc -> templates/norm_matmul.cuh NormMatmulKernel
// Kinds that run no generated kernel (matmul: cuBLASLt; view: an alias) are refused with an
// error naming the kind; the kind table (passes/fusion/region_kind.h) says how each runs.
#ifndef KILN_CODEGEN_EMIT_KERNEL_H_
#define KILN_CODEGEN_EMIT_KERNEL_H_

#include "absl/status/statusor.h"
#include "codegen/kernel_params.h"
#include "codegen/kernel_source.h"
#include "ir/graph.h"
#include "passes/fusion/region.h"

namespace kiln {

absl::StatusOr<KernelSource> EmitKernel(const Region& region, const KernelParams& params);

// Whether EmitKernel makes a kernel for regions of this kind.
bool HasKernel(RegionKind kind);

namespace codegen_internal {
absl::StatusOr<KernelSource> EmitAttentionKernel(const Region& region, const KernelParams& params);
absl::StatusOr<KernelSource> EmitNormMatmulKernel(const Region& region, const KernelParams& params);
absl::StatusOr<KernelSource> EmitElementwiseKernel(const Region& region, const KernelParams& params);
absl::StatusOr<KernelSource> EmitTiledKernel(const Region& region, const KernelParams& params);
absl::StatusOr<KernelSource> EmitVectorKernel(const Region& region, const KernelParams& params);
absl::StatusOr<KernelSource> EmitReduceKernel(const Region& region, const KernelParams& params);
}  // namespace codegen_internal

}  // namespace kiln

#endif  // KILN_CODEGEN_EMIT_KERNEL_H_
