// docs/graph-format.md cannot fall behind the code: its op table has a row for every op of
// ir/ops.def naming each of the op's attributes, and its complete example imports.
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "frontends/json/json_graph.h"
#include "gtest/gtest.h"
#include "ir/attributes.h"

namespace kiln {
namespace {

std::string ReadDoc() {
  std::ifstream in(std::string(KILN_SOURCE_DIR) + "/docs/graph-format.md");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(GraphFormatDocTest, OpTableHasEveryOpWithItsAttributes) {
  std::string doc = ReadDoc();
  ASSERT_FALSE(doc.empty()) << "docs/graph-format.md is missing";
  std::vector<std::string> lines = absl::StrSplit(doc, '\n');
  for (const OpInfo& info : AllOps()) {
    std::string prefix = absl::StrCat("| `", info.name, "` |");
    const std::string* row = nullptr;
    for (const std::string& line : lines) {
      if (absl::StartsWith(line, prefix)) row = &line;
    }
    ASSERT_NE(row, nullptr) << "docs/graph-format.md has no op table row starting with " << prefix;
    for (const AttrSpec& spec : AttrSpecsFor(info.kind)) {
      EXPECT_TRUE(absl::StrContains(*row, absl::StrCat("`", spec.name, "`")))
          << "the row of " << info.name << " does not name attribute " << spec.name << ": " << *row;
    }
  }
}

TEST(GraphFormatDocTest, CompleteExampleImports) {
  std::string doc = ReadDoc();
  size_t start = doc.find("<!-- complete example -->");
  ASSERT_NE(start, std::string::npos) << "no <!-- complete example --> marker";
  size_t open = doc.find("```json\n", start);
  ASSERT_NE(open, std::string::npos);
  open += 8;
  size_t close = doc.find("```", open);
  ASSERT_NE(close, std::string::npos);
  auto graph = ImportJsonGraph(doc.substr(open, close - open), "", "docs/graph-format.md example");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_GT((*graph)->num_nodes(), 5);
}

}  // namespace
}  // namespace kiln
