// The tolerances of ir/compare.h: element-wise for one kernel against the interpreter, and
// OrderTolerance for two kernels that add the same terms in different orders.
#include "ir/compare.h"

#include <cmath>

#include "gtest/gtest.h"

namespace kiln {
namespace {

Tensor F32(const std::vector<double>& values) {
  Tensor t(DType::kF32, Shape{static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.SetF64(i, values[i]);
  return t;
}

TEST(CompareTest, KernelToleranceIsElementWise) {
  const Tolerance tol = KernelTolerance(DType::kF32);
  EXPECT_TRUE(Compare(F32({1.0, 100.0}), F32({1.00005, 100.005}), tol).ok());
  // A sum that cancels to 0.047 and differs by 4.6e-5 between two addition orders fails
  // element-wise ...
  const Tensor want = F32({0.0469818, 150.0});
  const Tensor got = F32({0.0469966, 150.0});
  EXPECT_FALSE(Compare(got, want, tol).ok());
  // ... and passes against the tensor's scale.
  EXPECT_TRUE(Compare(got, want, OrderTolerance(tol, want)).ok());
  // A wrong value still fails, and NaN (an unwritten, poisoned element) matches only NaN.
  EXPECT_FALSE(Compare(F32({0.1, 150.0}), want, OrderTolerance(tol, want)).ok());
  EXPECT_FALSE(Compare(F32({NAN, 150.0}), want, OrderTolerance(tol, want)).ok());
}

}  // namespace
}  // namespace kiln
