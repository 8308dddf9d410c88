// row_reduce.cuh: device pieces of the row-reduction kernels (region kind row_reduction).
// A row kernel owns rows of a row space [rows x N] (N a compile-time constant, rows a run-time
// argument). A row is handled by a group of kThreads threads (one warp for short rows, the
// whole block otherwise); the generated code makes one pass over the row per dependency level
// of its reductions, each pass a loop of vectors (V elements per thread per step):
//   pass:   acc = Op(acc, f(x[r, c]))  for c = (k * kThreads + t) * V + j
//   reduce: acc = GroupReduce<Op>(acc)   -> the per-row value, in every thread of the group
// Row-shaped inputs are cached in registers (compile-time indexed arrays) when the row fits
// the per-thread budget; otherwise each pass re-reads global memory, and a max followed by
// sum(exp(x - max)) is computed in one pass with the online merge below.
// A "combine" (a per-row value reduced over all rows, e.g. a mean loss) is made deterministic
// without float atomics: every row writes its value into a scratch array, the last block to
// finish (an integer atomic on a counter) reduces the array in a fixed order.
#pragma once

#include "kiln_types.cuh"

namespace kiln {

// ---- online max and sum of exponentials -----------------------------------------------------
// The pair (m, s) stands for s = sum_i e^(x_i - m) with m = max_i x_i over the elements seen.
struct MaxSum {
  float m;
  float s;
};

__device__ __forceinline__ MaxSum MaxSumIdentity() { return MaxSum{kNegInfF(), 0.0f}; }

// e^(x - m) for x <= m, as 2^((x - m) log2 e) on the special-function unit (ex2.approx: about
// 2 ulp; the product adds |x - m| * 2^-24 relative, and results below 2^-126 flush to 0).
// Three instructions instead of expf's eight: on long streamed rows the exponential is most
// of the work per element (a bf16 element costs 2 bytes, about 15 instruction slots at the
// copy bandwidth of an H100).
__device__ __forceinline__ float ExpOfDiff(float x, float m) {
  const float d = (x - m) * 1.4426950408889634f;
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(d));
  return y;
}

// The shift the exponentials are taken against: m, or 0 while every element seen is -inf, so
// that e^(-inf - shift) is 0 and not e^(-inf + inf) = NaN. A select, not a branch, keeps the
// streaming loop free of control flow (its loads can be issued ahead of the arithmetic).
__device__ __forceinline__ float MaxSumShift(float m) { return m == kNegInfF() ? 0.0f : m; }

// Adds one element: m' = max(m, x); s' = s e^(m - m') + e^(x - m'). While every element seen is
// -inf the pair stays (-inf, 0), so a later finite element is not poisoned.
__device__ __forceinline__ MaxSum MaxSumAdd(MaxSum a, float x) {
  const float m = Max::Apply(a.m, x);
  const float shift = MaxSumShift(m);
  return MaxSum{m, a.s * ExpOfDiff(a.m, shift) + ExpOfDiff(x, shift)};
}

// Adds V elements with one rescale: m' = max(m, x_0..x_{V-1}); s' = s e^(m - m') + sum_j e^(x_j - m').
// V + 1 exponentials instead of 2V, the difference between memory- and SFU-bound on long rows.
template <int V>
__device__ __forceinline__ MaxSum MaxSumAddVec(MaxSum a, const float (&x)[V]) {
  float m = a.m;
#pragma unroll
  for (int j = 0; j < V; ++j) m = Max::Apply(m, x[j]);
  const float shift = MaxSumShift(m);
  float s = a.s * ExpOfDiff(a.m, shift);
#pragma unroll
  for (int j = 0; j < V; ++j) s += ExpOfDiff(x[j], shift);
  return MaxSum{m, s};
}

// Merges two pairs: m = max(m1, m2); s = s1 e^(m1 - m) + s2 e^(m2 - m). Symmetric in its
// arguments, so the butterfly below leaves equal bits in every lane.
__device__ __forceinline__ MaxSum MaxSumMerge(MaxSum a, MaxSum b) {
  const float m = Max::Apply(a.m, b.m);
  const float shift = MaxSumShift(m);
  return MaxSum{m, a.s * ExpOfDiff(a.m, shift) + b.s * ExpOfDiff(b.m, shift)};
}

// The decomposed graph computes sum(e^(x - max)) literally, which is NaN when the max is not
// finite (a row of -inf, an inf or a NaN); the online form reproduces that at the end.
__device__ __forceinline__ MaxSum MaxSumFinish(MaxSum a) {
  if (!(fabsf(a.m) < kInfF())) a.s = kNaNF();
  return a;
}

// As WarpReduce (kiln_types.cuh): a butterfly over each aligned segment of kWidth lanes.
template <int kWidth = 32>
__device__ __forceinline__ MaxSum WarpReduceMaxSum(MaxSum v) {
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset >>= 1) {
    MaxSum o;
    o.m = __shfl_xor_sync(0xffffffffu, v.m, offset, kWidth);
    o.s = __shfl_xor_sync(0xffffffffu, v.s, offset, kWidth);
    v = MaxSumMerge(v, o);
  }
  v.m = __shfl_sync(0xffffffffu, v.m, 0, kWidth);
  v.s = __shfl_sync(0xffffffffu, v.s, 0, kWidth);
  return v;
}

// The MaxSum pair reduced over a row group; `smem` holds at least 64 floats.
template <int kThreads, int kBlock>
__device__ __forceinline__ MaxSum GroupReduceMaxSum(MaxSum v, float* smem) {
  static_assert(kThreads <= 32 || kThreads == kBlock,
                "a row is owned by part of a warp, one warp or the whole block");
  static_assert(kBlock % 32 == 0 && kBlock <= 1024, "whole warps, at most 1024 threads");
  if constexpr (kThreads <= 32) {
    return WarpReduceMaxSum<kThreads>(v);
  } else {
    v = WarpReduceMaxSum(v);
    constexpr int kWarps = kBlock / 32;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) {
      smem[warp] = v.m;
      smem[32 + warp] = v.s;
    }
    __syncthreads();
    MaxSum r = lane < kWarps ? MaxSum{smem[lane], smem[32 + lane]} : MaxSumIdentity();
    r = WarpReduceMaxSum(r);
    __syncthreads();
    return r;
  }
}

// ---- deterministic combine across rows ------------------------------------------------------
// Scratch layout (KernelSource::scratch): bytes [0, 16) hold the unsigned counter (zero before
// the first launch; the last block resets it, so it is zero again after every launch), then
// `rows * kCombines` floats of per-row partial values from byte 16 on.
__device__ __forceinline__ unsigned int* CombineCounter(void* scratch) {
  return reinterpret_cast<unsigned int*>(scratch);
}
__device__ __forceinline__ float* CombinePartials(void* scratch) {
  return reinterpret_cast<float*>(reinterpret_cast<char*>(scratch) + 16);
}

// Called by every thread of every block after the block's last row: returns true in every
// thread of exactly one block, the last to arrive, once all other blocks' partials are visible.
__device__ __forceinline__ bool LastBlockDone(void* scratch) {
  __shared__ bool last;
  __threadfence();  // this block's partials are visible device-wide before it is counted
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned int done = atomicAdd(CombineCounter(scratch), 1u);
    last = (done == gridDim.x - 1);
  }
  __syncthreads();
  if (last) __threadfence();  // order the partial reads after the counter read
  return last;
}

// Reduces partials[k], partials[kCombines + k], ... (rows of them) in a fixed order: thread t
// folds rows t, t + kBlock, ... sequentially, then a block tree. Every thread gets the result.
// Reads through L2 (__ldcg): other blocks wrote the values.
template <class Op, int kBlock>
__device__ __forceinline__ float CombineRows(const float* partials, long long rows, int k,
                                             int combines, float* smem) {
  float acc = Op::Identity();
  for (long long r = threadIdx.x; r < rows; r += kBlock) {
    acc = Op::Apply(acc, __ldcg(partials + r * combines + k));
  }
  return BlockReduce<Op, kBlock>(acc, smem);
}

// Leaves the counter at zero for the next launch (called by the last block once it is done).
__device__ __forceinline__ void ResetCombineCounter(void* scratch) {
  if (threadIdx.x == 0) *CombineCounter(scratch) = 0u;
}

}  // namespace kiln
