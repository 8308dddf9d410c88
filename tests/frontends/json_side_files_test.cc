// Side data files: raw little-endian bytes read at an offset, relative to the graph file's
// folder; paths that are absolute or lead out of the folder (by `..` or through a symlink)
// are refused, as are missing and short files; export writes large constants to an aligned
// side file that imports back to the same bits.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "frontends/json/json_graph.h"
#include "gtest/gtest.h"
#include "ir/base/status.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

void WriteFile(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string Bytes(const void* data, size_t n) {
  return std::string(static_cast<const char*>(data), n);
}

// A fresh folder per test: <tmp>/outside.bin and <tmp>/graph/ holding graph.json.
class SideFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "kiln_json_XXXXXX").string();
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    root_ = templ;
    dir_ = root_ / "graph";
    fs::create_directories(dir_);
    float outside[4] = {9, 9, 9, 9};
    WriteFile(root_ / "outside.bin", Bytes(outside, sizeof(outside)));
  }
  void TearDown() override { fs::remove_all(root_); }

  // Imports graph.json holding one f32[4] constant "c" read from `file` at `offset`.
  absl::StatusOr<std::unique_ptr<Graph>> ImportWithFile(const std::string& file, int64_t offset = 0,
                                                        const std::string& dtype = "f32") {
    WriteFile(dir_ / "graph.json",
              absl::StrCat(R"({"kiln_graph": 1, "initializers": [{"name": "c", "dtype": ")", dtype,
                           R"(", "shape": [4], "file": ")", file, R"(", "offset": )", offset,
                           R"(}], "outputs": ["c"]})"));
    return ImportJsonGraphFile((dir_ / "graph.json").string());
  }

  void ExpectError(const absl::StatusOr<std::unique_ptr<Graph>>& graph, absl::StatusCode code,
                   const std::string& phrase) {
    ASSERT_FALSE(graph.ok());
    std::string message(graph.status().message());
    EXPECT_EQ(graph.status().code(), code) << message;
    EXPECT_TRUE(absl::StartsWith(message, (dir_ / "graph.json").string() +
                                              ": initializers[0].file: "))
        << message;
    EXPECT_TRUE(absl::StrContains(message, phrase)) << "missing \"" << phrase << "\" in " << message;
  }

  fs::path root_, dir_;
};

TEST_F(SideFileTest, ReadsRawLittleEndianAtTheOffset) {
  float values[4] = {1.5f, -2.0f, 0.25f, 1e30f};
  WriteFile(dir_ / "w.bin", std::string(8, '\x7f') + Bytes(values, sizeof(values)));
  auto graph = ImportWithFile("w.bin", 8);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Tensor& c = *(*graph)->FindNode("c")->value();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(c.data_as<float>()[i], values[i]);
}

TEST_F(SideFileTest, SubfoldersAndDotDotThatStaysInsideAreFine) {
  int64_t values[4] = {1, -2, int64_t{1} << 40, 4};
  WriteFile(dir_ / "data" / "w.bin", Bytes(values, sizeof(values)));
  for (const char* file : {"data/w.bin", "./data/w.bin", "data/../data/w.bin"}) {
    auto graph = ImportWithFile(file, 0, "i64");
    ASSERT_TRUE(graph.ok()) << file << ": " << graph.status();
    EXPECT_EQ((*graph)->FindNode("c")->value()->data_as<int64_t>()[2], int64_t{1} << 40);
  }
}

TEST_F(SideFileTest, DotDotOutOfTheFolderIsRefused) {
  ExpectError(ImportWithFile("../outside.bin"), absl::StatusCode::kPermissionDenied,
              "outside the graph's folder");
  ExpectError(ImportWithFile("data/../../outside.bin"), absl::StatusCode::kPermissionDenied,
              "outside the graph's folder");
}

TEST_F(SideFileTest, SymlinkPointingOutIsRefused) {
  fs::create_symlink(root_ / "outside.bin", dir_ / "link.bin");
  ExpectError(ImportWithFile("link.bin"), absl::StatusCode::kPermissionDenied,
              "data file \"link.bin\" resolves to");
  fs::create_directory_symlink(root_, dir_ / "up");
  ExpectError(ImportWithFile("up/outside.bin"), absl::StatusCode::kPermissionDenied,
              "outside the graph's folder");
}

TEST_F(SideFileTest, SymlinkStayingInsideIsFine) {
  float values[4] = {1, 2, 3, 4};
  WriteFile(dir_ / "real.bin", Bytes(values, sizeof(values)));
  fs::create_symlink("real.bin", dir_ / "alias.bin");
  auto graph = ImportWithFile("alias.bin");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ((*graph)->FindNode("c")->value()->data_as<float>()[3], 4.0f);
}

TEST_F(SideFileTest, AbsolutePathIsRefused) {
  ExpectError(ImportWithFile((root_ / "outside.bin").string()), absl::StatusCode::kPermissionDenied,
              "absolute path");
}

TEST_F(SideFileTest, MissingFile) {
  ExpectError(ImportWithFile("nope.bin"), absl::StatusCode::kNotFound,
              "data file \"nope.bin\" not found");
}

TEST_F(SideFileTest, FileTooShortForOffsetPlusBytes) {
  WriteFile(dir_ / "w.bin", std::string(20, '\0'));
  ExpectError(ImportWithFile("w.bin", 8), absl::StatusCode::kDataLoss,
              "is too short: f32[4] (16 bytes) at offset 8 needs 24 bytes, the file has 20");
}

TEST_F(SideFileTest, DirectoryIsNotADataFile) {
  fs::create_directories(dir_ / "d");
  ExpectError(ImportWithFile("d"), absl::StatusCode::kInvalidArgument, "not a regular file");
}

TEST_F(SideFileTest, BoolBytesMustBeZeroOrOne) {
  WriteFile(dir_ / "b.bin", std::string("\x01\x00\x02\x01", 4));
  ExpectError(ImportWithFile("b.bin", 0, "bool"), absl::StatusCode::kInvalidArgument,
              "holds byte 2 for bool element 2");
}

TEST_F(SideFileTest, ExportWritesLargeConstantsToAnAlignedSideFile) {
  Graph g("big");
  Tensor small(DType::kF32, {3});
  Tensor large(DType::kBF16, {1000});
  Tensor odd(DType::kI32, {333});
  for (int64_t i = 0; i < 1000; ++i) large.SetF64(i, 0.01 * i - 3);
  for (int64_t i = 0; i < 333; ++i) odd.SetI64(i, i * 7919 - 100000);
  Node* s = *g.AddConstant("small", small);
  Node* l = *g.AddConstant("large", large);
  Node* o = *g.AddConstant("odd", odd);
  for (Node* n : {s, l, o}) KILN_CHECK_OK(g.AddOutput(n));
  JsonExportOptions options;
  options.inline_limit_bytes = 100;
  options.data_dir = dir_.string();
  options.data_prefix = "weights";
  auto text = ExportJsonGraph(g, options);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(absl::StrContains(*text, R"("name": "small", "dtype": "f32", "shape": [3], "data": [0, 0, 0]})"));
  EXPECT_TRUE(absl::StrContains(*text, R"("file": "weights.bin", "offset": 0})")) << *text;
  EXPECT_TRUE(absl::StrContains(*text, R"("file": "weights.bin", "offset": 2048})")) << *text;
  EXPECT_EQ(fs::file_size(dir_ / "weights.bin"), 2048u + 333 * 4);
  EXPECT_FALSE(fs::exists(dir_ / "weights.bin.tmp"));

  WriteFile(dir_ / "big.json", *text);
  auto back = ImportJsonGraphFile((dir_ / "big.json").string());
  ASSERT_TRUE(back.ok()) << back.status();
  for (const char* name : {"small", "large", "odd"}) {
    EXPECT_TRUE((*back)->FindNode(name)->value()->BitwiseEqual(*g.FindNode(name)->value())) << name;
  }
  auto again = ExportJsonGraph(**back, options);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *text);
}

TEST_F(SideFileTest, ExportRefusesADataPrefixThatIsAPath) {
  Graph g("g");
  KILN_CHECK_OK(g.AddOutput(*g.AddConstant("c", Tensor(DType::kF32, {4096}))));
  JsonExportOptions options;
  options.data_dir = dir_.string();
  options.data_prefix = "../escape";
  auto text = ExportJsonGraph(g, options);
  ASSERT_FALSE(text.ok());
  EXPECT_TRUE(absl::StrContains(text.status().message(), "must be a plain file name stem"));
}

}  // namespace
}  // namespace kiln
