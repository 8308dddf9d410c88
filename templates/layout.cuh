// layout.cuh: copies that could not be folded into a neighbour (region kind layout):
// transpose, slice, concat, gather and broadcast_to. The generated kernel is the elementwise
// loop of pointwise.cuh over the output; each output element computes the input element it
// comes from with the index helpers below and copies it (bit-exact for every dtype).
#pragma once

#include "pointwise.cuh"

namespace kiln {

// A gather index: negative counts from the end; out-of-range indices are clamped into
// [0, extent) so a bad index can never read outside the tensor (the interpreter reports
// them as an error; the GPU has no way to).
__device__ __forceinline__ long long GatherIndex(long long index, long long extent) {
  if (index < 0) index += extent;
  return index < 0 ? 0 : (index >= extent ? extent - 1 : index);
}

// Clamps an index into [0, extent): used for the concat pieces that are evaluated but not
// selected, so their loads stay inside their own tensors.
__device__ __forceinline__ long long ClampIndex(long long index, long long extent) {
  return index < 0 ? 0 : (index >= extent ? extent - 1 : index);
}

}  // namespace kiln
