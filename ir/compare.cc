#include "ir/compare.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace kiln {

Tolerance KernelTolerance(DType dtype) {
  switch (dtype) {
    case DType::kF32: return {1e-5, 1e-4};
    case DType::kF16: return {1e-3, 2e-3};
    case DType::kBF16: return {8e-3, 1.6e-2};
    default: return {0, 0};
  }
}

Tolerance GraphTolerance(DType dtype) {
  switch (dtype) {
    case DType::kF32: return {1e-4, 1e-3};
    case DType::kF16: return {5e-3, 1e-2};
    case DType::kBF16: return {3e-2, 3e-2};
    default: return {0, 0};
  }
}

Tolerance OrderTolerance(Tolerance tol, const Tensor& want) {
  double largest = 0;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double w = std::abs(want.GetF64(i));
    if (std::isfinite(w)) largest = std::max(largest, w);
  }
  return {tol.atol + tol.rtol * largest, tol.rtol};
}

Comparison Compare(const Tensor& got, const Tensor& want, Tolerance tol) {
  Comparison c;
  c.tolerance = tol;
  c.elements = want.num_elements();
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    c.mismatches = c.elements;
    return c;
  }
  double worst_excess = -1;
  for (int64_t i = 0; i < c.elements; ++i) {
    double g = got.GetF64(i), w = want.GetF64(i);
    bool bad;
    double excess = 0;
    if (std::isnan(w) || std::isnan(g)) {
      bad = std::isnan(w) != std::isnan(g);
      excess = bad ? INFINITY : 0;
    } else if (std::isinf(w) || std::isinf(g)) {
      bad = g != w;
      excess = bad ? INFINITY : 0;
    } else {
      double d = std::abs(g - w);
      c.max_abs = std::max(c.max_abs, d);
      c.max_rel = std::max(c.max_rel, d / std::max(std::abs(w), std::max(tol.atol, 1e-30)));
      double allowed = tol.atol + tol.rtol * std::abs(w);
      bad = d > allowed;
      excess = d - allowed;
    }
    if (bad) ++c.mismatches;
    if (excess > worst_excess) {
      worst_excess = excess;
      c.worst = i;
      c.worst_got = g;
      c.worst_want = w;
    }
  }
  return c;
}

std::string Comparison::ToString() const {
  std::string s = absl::StrFormat("max abs %.2e, max rel %.2e, %d of %d outside %.0e + %.1e|ref|", max_abs, max_rel,
                                  mismatches, elements, tolerance.atol, tolerance.rtol);
  if (mismatches > 0 && worst >= 0) {
    absl::StrAppendFormat(&s, " (worst [%d]: got %g, want %g)", worst, worst_got, worst_want);
  }
  return s;
}

}  // namespace kiln
