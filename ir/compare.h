// Comparing a computed tensor with the reference interpreter's, with the tolerances per dtype
// written down once (DESIGN.md §8). Two tables:
//   kernel: one fused kernel against its region evaluated with f32 arithmetic (ir/promote.h):
//           about two units in the last place of the stored dtype plus f32 summation order.
//             f32 1e-5 + 1e-4 |ref|   f16 1e-3 + 2e-3 |ref|   bf16 8e-3 + 1.6e-2 |ref|
//   graph:  a whole compiled graph against the interpreter: every region boundary rounds to
//           the stored dtype and matmuls sum in another order, so errors compound a little.
//             f32 1e-4 + 1e-3 |ref|   f16 5e-3 + 1e-2 |ref|   bf16 3e-2 + 3e-2 |ref|
// Integers and bool compare exactly. NaN matches NaN, an infinity only the same infinity.
#ifndef KILN_IR_COMPARE_H_
#define KILN_IR_COMPARE_H_

#include <cstdint>
#include <string>

#include "ir/tensor.h"

namespace kiln {

struct Tolerance {
  double atol = 0, rtol = 0;
};
Tolerance KernelTolerance(DType dtype);
Tolerance GraphTolerance(DType dtype);
// `tol` with its absolute part widened to rtol x the largest finite |want|: for two results
// that add the same terms in different orders (a reduction's rounding scales with the terms,
// not with a sum that cancels to near zero). The autotuner compares candidates with it.
Tolerance OrderTolerance(Tolerance tol, const Tensor& want);

struct Comparison {
  int64_t elements = 0;
  int64_t mismatches = 0;    // elements outside the tolerance
  double max_abs = 0;        // over finite pairs
  double max_rel = 0;        // |got - want| / max(|want|, atol)
  int64_t worst = -1;        // index of the largest excess over the tolerance
  double worst_got = 0, worst_want = 0;
  Tolerance tolerance;
  bool ok() const { return mismatches == 0; }
  // "max abs 1.2e-03, max rel 3.4e-03, 0 of 4096 outside 8e-03 + 1.6e-02|ref|".
  std::string ToString() const;
};

// `got` and `want` must have the same dtype and shape (else every element counts as a mismatch).
Comparison Compare(const Tensor& got, const Tensor& want, Tolerance tolerance);

}  // namespace kiln

#endif  // KILN_IR_COMPARE_H_
