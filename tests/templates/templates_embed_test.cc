// The embedded template table is exactly templates/*.cuh: every file is present under its file
// name with its bytes unchanged (the raw-string embedding must not alter anything).
#include <dirent.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "templates/embedded_templates.h"

namespace kiln {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(EmbeddedTemplatesTest, MatchesEveryCuhFileByteForByte) {
  const std::string dir = std::string(KILN_SOURCE_DIR) + "/templates";
  std::set<std::string> on_disk;
  DIR* d = opendir(dir.c_str());
  ASSERT_NE(d, nullptr) << dir;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 4 && name.substr(name.size() - 4) == ".cuh") on_disk.insert(name);
  }
  closedir(d);
  std::set<std::string> embedded;
  for (const auto& [name, text] : EmbeddedTemplates()) {
    embedded.insert(name);
    EXPECT_EQ(text, ReadFile(dir + "/" + name)) << name << " differs from its embedded copy";
  }
  EXPECT_EQ(embedded, on_disk) << "templates/CMakeLists.txt must list every .cuh file";
}

}  // namespace
}  // namespace kiln
