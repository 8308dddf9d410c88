// Golden CUDA for a few small regions (tests/codegen/testdata/<case>.cu), one per emitter
// path. Compared after whitespace normalisation; KILN_UPDATE_GOLDEN=1 rewrites the files.
// The same sources are compiled with NVRTC by codegen_nvrtc_test.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "tests/codegen/codegen_test_util.h"

namespace kiln {
namespace {

std::string Normalize(const std::string& text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

class GoldenTest : public ::testing::TestWithParam<testing_codegen::SmallCase> {};

TEST_P(GoldenTest, MatchesGoldenSource) {
  const testing_codegen::SmallCase& c = GetParam();
  Analysis keep;
  auto ks = testing_codegen::EmitSmallCase(c, &keep);
  ASSERT_TRUE(ks.ok()) << ks.status();
  const std::string path = std::string(KILN_SOURCE_DIR) + "/tests/codegen/testdata/" + c.name + ".cu";
  const char* update = std::getenv("KILN_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path) << ks->source;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path << " is missing; run with KILN_UPDATE_GOLDEN=1";
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(Normalize(ks->source), Normalize(golden.str()))
      << "generated source of " << c.name << " differs from " << path
      << " (KILN_UPDATE_GOLDEN=1 rewrites it); generated:\n" << ks->source;
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenTest, ::testing::ValuesIn(testing_codegen::SmallCases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace kiln
