// KernelSource: a region's generated CUDA and everything the runtime needs to launch it.
//
// ===== Kernel ABI (the contract the runtime launches by, with cuLaunchKernel) =====
//
//   extern "C" __global__ void NAME(const T0* __restrict__ in0, ..., const Tk* __restrict__ ink,
//                                   U0* __restrict__ out0, ..., Um* __restrict__ outm,
//                                   [void* __restrict__ scratch,]
//                                   long long count
//                                   [, const __grid_constant__ kiln::tma::TensorMap map0, ...])
//
//  * Pointer parameters follow `args`: the region's inputs in Region::inputs order, then its
//    outputs in Region::outputs order. Each points to a dense row-major tensor of the arg's
//    dtype and shape (storage types: f32 float, f16 __half, bf16 __nv_bfloat16, i32 int,
//    i64 long long, bool unsigned char 0/1). Every pointer must be 16-byte aligned (the
//    vectorised loads rely on it; cuMemAlloc gives 256). Outputs must not alias inputs or each
//    other. A tensor read and written by the same region never occurs (regions are acyclic).
//  * `scratch` is present iff has_scratch: ScratchBytes(count) bytes of device memory, 16-byte
//    aligned, all zero before the FIRST launch; every launch leaves its counters zero again, so
//    the runtime zeroes it once at allocation. It holds the last-block-done counter and the
//    per-row partials of a deterministic combine, and the barrier counters and partial
//    accumulators of split rows (templates/row_reduce.cuh).
//  * `count` is the run-time extent named by count_meaning: the number of elements of the
//    iteration space (pointwise, layout, other reductions) or the number of rows (row
//    reductions). It is a run-time argument so a new batch size reuses the kernel; the region's
//    own value is `count`.
//  * `map0 ...` are present iff launch.tensor_maps is not empty: one TMA tensor map each
//    (templates/tma.cuh), in that order, which the runtime encodes from the TensorMapSpec
//    (ir/tensor_map.h) and the address of the pointer parameter it names, at every launch.
//  * Launch: a grid of launch.Grid(count) x grid_y x grid_z blocks of launch.block threads
//    (1-D blocks), launch.dynamic_smem_bytes of dynamic shared memory (above 48 KB the runtime
//    raises the kernel's limit with cuFuncSetAttribute), thread-block clusters of cluster_x
//    blocks along x where cluster_x > 1 (sm_90), and a cooperative launch (every block resident
//    at once) where cooperative is set: the runtime then caps the x extent at what fits on the
//    GPU, a multiple of blocks_per_item_group. Kernels loop over their count (grid-stride), so
//    any x extent >= blocks_per_item_group is correct; Grid() covers count in one sweep.
//  * Every output element is written exactly once per launch; no output is read.
//
// The name is "kiln_<tag>_<16 hex digits>" (the kind table's tag: pw, row, col, layout, attn), the hash of the source body (itself a pure
// function of the region's nodes, dtypes, non-batch extents and the KernelParams), so the same
// region always gives the same name and source, and equal kernels share one name.
#ifndef KILN_CODEGEN_KERNEL_SOURCE_H_
#define KILN_CODEGEN_KERNEL_SOURCE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "codegen/kernel_params.h"
#include "ir/dtype.h"
#include "ir/shape.h"
#include "ir/tensor_map.h"
#include "passes/fusion/region.h"

namespace kiln {

struct KernelArg {
  std::string tensor;  // the node name of the tensor
  DType dtype = DType::kF32;
  Shape shape;
  bool is_output = false;
};

struct LaunchRule {
  int block = 256;                // threads per block
  int64_t items_per_block = 256;  // count units one group of blocks covers in one sweep
  int64_t blocks_per_item_group = 1;  // x blocks that share one group of items (a split row)
  int64_t grid_y = 1, grid_z = 1;  // the other grid axes (fixed extents)
  int64_t max_grid = 2147483647;  // the grid's x limit
  int dynamic_smem_bytes = 0;
  int cluster_x = 1;              // blocks per thread-block cluster along x (sm_90); 1: none
  bool cooperative = false;       // every block resident at once (blocks wait for each other)
  std::vector<TensorMapSpec> tensor_maps;  // the trailing tensor-map parameters, in order

  // ceil(count / items_per_block) x blocks_per_item_group, clamped to [1, max_grid] (a
  // multiple of blocks_per_item_group).
  int64_t Grid(int64_t count) const;
  std::string ToString() const;
};

struct KernelSource {
  std::string name;    // the extern "C" entry symbol
  std::string source;  // complete CUDA translation unit (#includes the embedded templates)
  RegionKind kind = RegionKind::kPointwise;
  std::string template_name;      // e.g. "row_reduce.cuh"
  std::vector<KernelArg> args;    // pointer parameters in order
  bool has_scratch = false;
  std::string count_meaning;      // "elements", "rows", "tiles" or "K/V batches"
  int64_t count = 0;              // the region's own value of the count argument
  LaunchRule launch;
  int64_t scratch_fixed_bytes = 0;      // scratch = fixed + per_count * count (0: no scratch)
  int64_t scratch_bytes_per_count = 0;
  KernelParams params;            // as used (after the emitter's fallbacks, e.g. vector 1)
  // (input arg, output arg) positions in `args` where the output may be written over the input
  // (the buffer plan may give both the same bytes when the input dies here): each output
  // element is written only by the thread that read the input element at the same index, after
  // it read it, and nothing else reads that input. Same element size, same element count.
  std::vector<std::pair<int, int>> in_place;
  std::vector<std::string> notes; // emitter decisions worth showing (cached/streamed, fallbacks)

  int64_t ScratchBytes(int64_t run_count) const {
    return has_scratch ? scratch_fixed_bytes + scratch_bytes_per_count * run_count : 0;
  }
  // One line per arg and the launch rule, for dumps and tests.
  std::string Signature() const;
};

}  // namespace kiln

#endif  // KILN_CODEGEN_KERNEL_SOURCE_H_
