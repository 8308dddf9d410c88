// column_reduce.cuh: reductions over non-innermost axes (region kind column_reduction). The
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

}  // namespace kiln
