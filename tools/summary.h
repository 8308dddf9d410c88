// Summary statistics of a tensor, as `kiln run` prints them per output.
#ifndef KILN_TOOLS_SUMMARY_H_
#define KILN_TOOLS_SUMMARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace kiln {

struct TensorSummary {
  int64_t count = 0;      // elements
  int64_t finite = 0;     // elements that are neither NaN nor +-Inf
  int64_t nan_count = 0;
  int64_t inf_count = 0;
  // Over the finite elements only (all elements for integer and bool tensors); std is the
  // population standard deviation (divides by `finite`). Zero when there are none.
  double min = 0, max = 0, mean = 0, std = 0;
  // min, max and the first few elements formatted in the tensor's dtype: integers exactly,
  // floats with the shortest text that reads back to the same value of that dtype, "-" when
  // there is no finite element.
  std::string min_text = "-", max_text = "-";
  std::vector<std::string> first;
};

// One pass over `t`; accumulates in double (Welford), so it is exact enough for any size.
TensorSummary Summarize(const Tensor& t, int first_count = 4);

// Element `i` of `t` as text (see TensorSummary).
std::string FormatElement(const Tensor& t, int64_t i);

// Two lines:
//   NAME: DTYPE[SHAPE]
//     min=... max=... mean=... std=... nan=N inf=N first=[a, b, c, d]
std::string FormatSummary(const std::string& name, const Tensor& t, const TensorSummary& s);

}  // namespace kiln

#endif  // KILN_TOOLS_SUMMARY_H_
