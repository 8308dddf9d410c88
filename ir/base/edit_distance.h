// The Levenshtein distance, for "did you mean" suggestions: the op table's names, a JSON
// object's keys, ONNX op types. One copy, so every suggestion ranks names the same way.
#ifndef KILN_IR_BASE_EDIT_DISTANCE_H_
#define KILN_IR_BASE_EDIT_DISTANCE_H_

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace kiln {

// Insertions, deletions and substitutions that turn `a` into `b`, each costing 1.
inline int EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace kiln

#endif  // KILN_IR_BASE_EDIT_DISTANCE_H_
