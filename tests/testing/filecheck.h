// A small in-house FileCheck for tests (DESIGN.md §8: IR text in, a few CHECK lines out).
// `checks` is a multi-line string; each line holding a directive is one check, anywhere on
// the line (so "# CHECK: add(" works too); other lines are ignored. The directive's pattern
// is the rest of the line, trimmed, matched as a plain substring:
//   CHECK: s         s occurs after the previous match
//   CHECK-NEXT: s    s occurs on the line right after the previous match's line
//   CHECK-NOT: s     s does not occur between the previous match and the next one (or the end)
//   CHECK-COUNT-N: s s occurs N times in a row, each after the previous (like N CHECKs)
// A failure names the directive, its line in `checks` and shows the text where the search
// started. Checks without any directive fail too, so a misspelt "CHEK:" cannot pass silently.
//
//   EXPECT_TRUE(FileCheck(PrintGraph(*g), R"(
//     CHECK: = softmax(x)
//     CHECK-NOT: exp(
//     CHECK-NEXT: return
//   )"));
#ifndef KILN_TESTS_TESTING_FILECHECK_H_
#define KILN_TESTS_TESTING_FILECHECK_H_

#include <string>

#include "gtest/gtest.h"

namespace kiln {

::testing::AssertionResult FileCheck(const std::string& text, const std::string& checks);

}  // namespace kiln

#endif  // KILN_TESTS_TESTING_FILECHECK_H_
