// col_reduce.cuh: reductions over non-innermost axes (region kind other_reduction). The
// kernel is the elementwise loop of pointwise.cuh over the output elements; each thread folds
// the reduced elements of its output serially, in increasing input order, so the result is
// deterministic and needs no shared memory or atomics. Neighbouring threads own neighbouring
// outputs, so for the common [M, N] -> [N] case the loads of a warp are coalesced.
//   acc = Identity; for (k = 0; k < K; ++k) acc = Op(acc, f(x[base + k * stride]))
#pragma once

#include "kiln_types.cuh"
#include "pointwise.cuh"

namespace kiln {

// The serial fold used for one output element: Fold<Op>(acc, v) = Op(acc, v), kept as a
// function so the emitted loop names the functor it uses.
template <class Op>
__device__ __forceinline__ float Fold(float acc, float v) {
  return Op::Apply(acc, v);
}

// Integer folds (exact, wrapping sums; max/min), for integer reductions.
struct SumI64 {
  __device__ __forceinline__ static long long Identity() { return 0; }
  // y = a + b (mod 2^64)
  __device__ __forceinline__ static long long Apply(long long a, long long b) { return WrapAdd(a, b); }
};
struct MaxI64 {
  __device__ __forceinline__ static long long Identity() { return -9223372036854775807LL - 1; }
  // y = max(a, b)
  __device__ __forceinline__ static long long Apply(long long a, long long b) { return a < b ? b : a; }
};
struct MinI64 {
  __device__ __forceinline__ static long long Identity() { return 9223372036854775807LL; }
  // y = min(a, b)
  __device__ __forceinline__ static long long Apply(long long a, long long b) { return b < a ? b : a; }
};
// i32 max/min identities (the interpreter starts i32 max at INT32_MIN, not INT64_MIN).
struct MaxI32 {
  __device__ __forceinline__ static long long Identity() { return -2147483647LL - 1; }
  // y = max(a, b)
  __device__ __forceinline__ static long long Apply(long long a, long long b) { return a < b ? b : a; }
};
struct MinI32 {
  __device__ __forceinline__ static long long Identity() { return 2147483647LL; }
  // y = min(a, b)
  __device__ __forceinline__ static long long Apply(long long a, long long b) { return b < a ? b : a; }
};

}  // namespace kiln
