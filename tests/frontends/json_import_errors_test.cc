// The JSON importer's error rules (docs/graph-format.md, "Errors"), one table row per rule:
// each bad document must fail with the expected status code, a message that starts with the
// source name and the place (a JSON path, or line:column for malformed JSON), and the key
// phrase that says what was expected. Also: a 1,000,000-deep nesting is refused (no crash),
// the size limit, ImportJsonGraphFile's own file errors, and the one rule that is the
// verifier's rather than the importer's (at least one output).
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "frontends/json/json_graph.h"
#include "gtest/gtest.h"
#include "ir/verifier.h"

namespace kiln {
namespace {

// A document around the given parts; the defaults form a valid graph y = relu(x).
struct Doc {
  std::string inputs = R"([{"name": "x", "dtype": "f32", "shape": [2, 3]}])";
  std::string initializers = "[]";
  std::string nodes = R"([{"name": "y", "op": "relu", "inputs": ["x"]}])";
  std::string outputs = R"(["y"])";
  std::string extra;  // more top-level fields, with a leading comma

  std::string Text() const {
    return absl::StrCat(R"({"kiln_graph": 1, "name": "g", "inputs": )", inputs,
                        R"(, "initializers": )", initializers, R"(, "nodes": )", nodes,
                        R"(, "outputs": )", outputs, extra, "}");
  }
};

Doc WithNodes(std::string nodes, std::string outputs = R"(["y"])") {
  Doc d;
  d.nodes = std::move(nodes);
  d.outputs = std::move(outputs);
  return d;
}

Doc WithInputs(std::string inputs, std::string nodes = "[]", std::string outputs = R"(["x"])") {
  Doc d;
  d.inputs = std::move(inputs);
  d.nodes = std::move(nodes);
  d.outputs = std::move(outputs);
  return d;
}

Doc WithInitializer(std::string initializer) {
  Doc d;
  d.initializers = absl::StrCat("[", initializer, "]");
  d.nodes = "[]";
  d.outputs = R"(["c"])";
  return d;
}

struct ErrorCase {
  const char* rule;
  std::string json;
  std::string place;  // what follows "t.json" in the message: ": nodes[0].op" or ":1:18"
  std::string phrase;
  absl::StatusCode code = absl::StatusCode::kInvalidArgument;
};

std::vector<ErrorCase> Cases() {
  using C = absl::StatusCode;
  const std::string x23 = R"({"name": "x", "dtype": "f32", "shape": [2, 3]})";
  return {
      // Syntax and top level.
      {"malformed JSON", R"({"kiln_graph": 1,, "outputs": []})", ":1:18",
       "malformed JSON: Missing a name for object member."},
      {"malformed JSON, line and column", "{\"kiln_graph\": 1,\n  \"nodes\": [1, 2,, 3]\n}",
       ":2:18", "malformed JSON: Invalid value."},
      {"invalid UTF-8", "{\"kiln_graph\": 1, \"name\": \"\xff\"}", ":1:", "malformed JSON"},
      {"empty text", "", ":1:1", "malformed JSON: The document is empty."},
      {"top level not an object", "[1, 2]", ": (top level)", "expected an object (a kiln graph"},
      {"missing version", R"({"outputs": []})", ": (top level)",
       "missing required field \"kiln_graph\""},
      {"version not an integer", R"({"kiln_graph": "1", "outputs": []})", ": kiln_graph",
       "expected the format version, the integer 1, got string \"1\""},
      {"unsupported version", R"({"kiln_graph": 2, "outputs": []})", ": kiln_graph",
       "unsupported format version 2; this build reads version 1", C::kUnimplemented},
      {"missing outputs", R"({"kiln_graph": 1})", ": (top level)",
       "missing required field \"outputs\""},
      {"unknown top-level field", [] { Doc d; d.extra = R"(, "node": [])"; return d.Text(); }(),
       ": node", "unknown field \"node\" in the top level; allowed fields: kiln_graph, name, "
                 "inputs, initializers, nodes, outputs"},
      {"duplicate field", [] { Doc d; d.extra = R"(, "name": "h")"; return d.Text(); }(), ": name",
       "field appears twice"},
      {"graph name empty", R"({"kiln_graph": 1, "name": "", "outputs": []})", ": name",
       "the graph's name must not be empty"},
      {"graph name not a string", R"({"kiln_graph": 1, "name": ["g"], "outputs": []})", ": name",
       "expected a string (the graph's name), got an array"},
      {"wrong field type: inputs", WithInputs(R"({"x": 1})").Text(), ": inputs",
       "expected an array (graph inputs), got an object"},
      // Inputs.
      {"missing input field", WithInputs(R"([{"name": "x", "dtype": "f32"}])").Text(),
       ": inputs[0]", "missing required field \"shape\" in an input"},
      {"unknown input field",
       WithInputs(R"([{"name": "x", "dtype": "f32", "shape": [], "shap": []}])").Text(),
       ": inputs[0].shap", "unknown field \"shap\" in an input; allowed fields: name, dtype, shape"},
      {"name not a string", WithInputs(R"([{"name": 3, "dtype": "f32", "shape": []}])").Text(),
       ": inputs[0].name", "expected a string (a name), got integer 3"},
      {"invalid name", WithInputs(R"([{"name": "1x", "dtype": "f32", "shape": []}])").Text(),
       ": inputs[0].name", "invalid name \"1x\": names start with a letter"},
      {"bad dtype", WithInputs(R"([{"name": "x", "dtype": "f64", "shape": [2]}])").Text(),
       ": inputs[0].dtype", "unknown dtype \"f64\"; expected one of f32, f16, bf16, i32, i64, bool"},
      {"negative dimension", WithInputs(R"([{"name": "x", "dtype": "f32", "shape": [2, -1]}])").Text(),
       ": inputs[0].shape[1]", "expected a dimension (an integer >= 0), got integer -1 (negative)"},
      {"non-integer dimension", WithInputs(R"([{"name": "x", "dtype": "f32", "shape": [2.5]}])").Text(),
       ": inputs[0].shape[0]", "expected a dimension (an integer >= 0), got number 2.5"},
      {"shape not an array", WithInputs(R"([{"name": "x", "dtype": "f32", "shape": 4}])").Text(),
       ": inputs[0].shape", "expected an array (a shape"},
      {"shape too large",
       WithInputs(R"([{"name": "x", "dtype": "f32", "shape": [4294967296, 4294967296]}])").Text(),
       ": inputs[0].shape", "its byte size overflows 64 bits"},
      {"duplicate input name", WithInputs(absl::StrCat("[", x23, ", ", x23, "]")).Text(),
       ": inputs[1].name", "duplicate name \"x\"; first defined at inputs[0]"},
      // Initializers.
      {"inline data wrong count",
       WithInitializer(R"({"name": "c", "dtype": "f32", "shape": [2, 2], "data": [1, 2, 3]})").Text(),
       ": initializers[0].data", "has 3 values, but f32[2,2] needs 4"},
      {"data not an array",
       WithInitializer(R"({"name": "c", "dtype": "f32", "shape": [], "data": 1.5})").Text(),
       ": initializers[0].data", "expected a flat array of 1 values"},
      {"1.5 is not an i32",
       WithInitializer(R"({"name": "c", "dtype": "i32", "shape": [2], "data": [1, 1.5]})").Text(),
       ": initializers[0].data[1]", "number 1.5 is not representable in i32: not an integer"},
      {"i32 out of range",
       WithInitializer(R"({"name": "c", "dtype": "i32", "shape": [1], "data": [3000000000]})").Text(),
       ": initializers[0].data[0]", "outside the i32 range [-2147483648, 2147483647]"},
      {"i64 out of range",
       WithInitializer(R"({"name": "c", "dtype": "i64", "shape": [1], "data": [9223372036854775808]})").Text(),
       ": initializers[0].data[0]", "is not representable in i64"},
      {"300 is not a bool",
       WithInitializer(R"({"name": "c", "dtype": "bool", "shape": [1], "data": [300]})").Text(),
       ": initializers[0].data[0]", "integer 300 is not representable in bool"},
      {"string for bool",
       WithInitializer(R"({"name": "c", "dtype": "bool", "shape": [1], "data": ["true"]})").Text(),
       ": initializers[0].data[0]", "expected true/false or 0/1 (bool)"},
      {"f16 overflow",
       WithInitializer(R"({"name": "c", "dtype": "f16", "shape": [1], "data": [70000]})").Text(),
       ": initializers[0].data[0]", "integer 70000 is not representable in f16: it overflows"},
      {"f32 overflow",
       WithInitializer(R"({"name": "c", "dtype": "f32", "shape": [1], "data": [1e39]})").Text(),
       ": initializers[0].data[0]", "is not representable in f32"},
      {"bad float string",
       WithInitializer(R"({"name": "c", "dtype": "f32", "shape": [1], "data": ["NaN"]})").Text(),
       ": initializers[0].data[0]", "expected a number or \"nan\", \"inf\", \"-inf\" (f32)"},
      {"neither data nor file", WithInitializer(R"({"name": "c", "dtype": "f32", "shape": [1]})").Text(),
       ": initializers[0]", "missing the values: give \"data\""},
      {"both data and file",
       WithInitializer(R"({"name": "c", "dtype": "f32", "shape": [1], "data": [1], "file": "w.bin"})").Text(),
       ": initializers[0]", "give either \"data\" or \"file\", not both"},
      {"offset without file",
       WithInitializer(R"({"name": "c", "dtype": "f32", "shape": [1], "data": [1], "offset": 0})").Text(),
       ": initializers[0].offset", "\"offset\" goes with \"file\""},
      {"negative offset",
       WithInitializer(R"({"name": "c", "dtype": "f32", "shape": [1], "file": "w.bin", "offset": -4})").Text(),
       ": initializers[0].offset", "expected a byte offset (an integer >= 0), got integer -4"},
      {"side file without a folder",
       WithInitializer(R"({"name": "c", "dtype": "f32", "shape": [1], "file": "w.bin"})").Text(),
       ": initializers[0].file", "needs the graph's folder", C::kFailedPrecondition},
      {"absolute side file path",
       WithInitializer(R"({"name": "c", "dtype": "f32", "shape": [1], "file": "/etc/passwd"})").Text(),
       ": initializers[0].file", "absolute path \"/etc/passwd\" is not allowed", C::kPermissionDenied},
      {"initializer named like an input",
       [&] { Doc d = WithInitializer(R"({"name": "x", "dtype": "f32", "shape": [], "data": [1]})");
             d.outputs = "[]"; return d.Text(); }(),
       ": initializers[0].name", "duplicate name \"x\"; first defined at inputs[0]"},
      // Nodes.
      {"node not an object", WithNodes(R"(["relu"])").Text(), ": nodes[0]",
       "expected an object (a node"},
      {"missing op", WithNodes(R"([{"name": "y", "inputs": ["x"]}])").Text(), ": nodes[0]",
       "missing required field \"op\" in a node"},
      {"unknown node field", WithNodes(R"([{"name": "y", "op": "relu", "inputs": ["x"], "atrs": {}}])").Text(),
       ": nodes[0].atrs", "unknown field \"atrs\" in a node; allowed fields: name, op, inputs, attrs"},
      {"duplicate node field", WithNodes(R"([{"name": "y", "op": "relu", "op": "exp", "inputs": ["x"]}])").Text(),
       ": nodes[0].op", "field appears twice"},
      {"op not a string", WithNodes(R"([{"name": "y", "op": 7, "inputs": ["x"]}])").Text(),
       ": nodes[0].op", "expected a string (an op name), got integer 7"},
      {"unknown op", WithNodes(R"([{"name": "y", "op": "gelu2", "inputs": ["x"]}])").Text(),
       ": nodes[0].op", "unknown op \"gelu2\"; did you mean gelu"},
      {"leaf op as a node", WithNodes(R"([{"name": "y", "op": "constant"}])").Text(), ": nodes[0].op",
       "\"constant\" is not a node op: declare constants under \"initializers\""},
      {"inputs not an array", WithNodes(R"([{"name": "y", "op": "relu", "inputs": "x"}])").Text(),
       ": nodes[0].inputs", "expected an array (operand names), got string \"x\""},
      {"operand not a string", WithNodes(R"([{"name": "y", "op": "relu", "inputs": [0]}])").Text(),
       ": nodes[0].inputs[0]", "expected a string (an operand name), got integer 0"},
      {"unknown operand", WithNodes(R"([{"name": "y", "op": "add", "inputs": ["x", "x9"]}])").Text(),
       ": nodes[0].inputs[1]", "unknown name \"x9\"; did you mean \"x\"?"},
      {"unknown operand, nothing close",
       WithNodes(R"([{"name": "y", "op": "relu", "inputs": ["qqqqqqqq"]}])").Text(),
       ": nodes[0].inputs[0]", "unknown name \"qqqqqqqq\": no input, initializer or node has it"},
      {"duplicate node name",
       WithNodes(R"([{"name": "y", "op": "relu", "inputs": ["x"]}, {"name": "y", "op": "exp", "inputs": ["x"]}])").Text(),
       ": nodes[1].name", "duplicate name \"y\"; first defined at nodes[0]"},
      {"node named like an input", WithNodes(R"([{"name": "x", "op": "relu", "inputs": ["x"]}])", R"(["x"])").Text(),
       ": nodes[0].name", "duplicate name \"x\"; first defined at inputs[0]"},
      {"cycle",
       WithNodes(R"([{"name": "y", "op": "relu", "inputs": ["x"]}, {"name": "a", "op": "add", "inputs": ["x", "b"]},
                    {"name": "b", "op": "exp", "inputs": ["c"]}, {"name": "c", "op": "neg", "inputs": ["a"]}])").Text(),
       ": nodes[1]", "the nodes form a cycle: \"a\" -> \"b\" -> \"c\" -> \"a\""},
      {"self cycle", WithNodes(R"([{"name": "y", "op": "add", "inputs": ["x", "y"]}])").Text(),
       ": nodes[0]", "the nodes form a cycle: \"y\" -> \"y\""},
      {"wrong arity", WithNodes(R"([{"name": "y", "op": "add", "inputs": ["x"]}])").Text(),
       ": nodes[0].inputs", "add takes 2 operands, got 1"},
      {"attrs not an object", WithNodes(R"([{"name": "y", "op": "softmax", "inputs": ["x"], "attrs": [1]}])").Text(),
       ": nodes[0].attrs", "expected an object (attributes by name), got an array"},
      {"attribute of the wrong type: int list",
       WithNodes(R"([{"name": "y", "op": "reduce_sum", "inputs": ["x"], "attrs": {"axes": "1"}}])").Text(),
       ": nodes[0].attrs.axes", "reduce_sum attribute \"axes\" must be an int list (an array of integers), got string \"1\""},
      {"attribute of the wrong type: bool",
       WithNodes(R"([{"name": "y", "op": "reduce_sum", "inputs": ["x"], "attrs": {"keep_dims": 1}}])").Text(),
       ": nodes[0].attrs.keep_dims", "attribute \"keep_dims\" must be a bool (true or false), got integer 1"},
      {"attribute of the wrong type: int",
       WithNodes(R"([{"name": "y", "op": "softmax", "inputs": ["x"], "attrs": {"axis": 1.5}}])").Text(),
       ": nodes[0].attrs.axis", "attribute \"axis\" must be an int (an integer), got number 1.5"},
      {"attribute of the wrong type: float",
       WithNodes(R"([{"name": "y", "op": "layer_norm", "inputs": ["x"], "attrs": {"eps": true}}])").Text(),
       ": nodes[0].attrs.eps", "attribute \"eps\" must be a float (a number"},
      {"attribute of the wrong type: list element",
       WithNodes(R"([{"name": "y", "op": "reduce_sum", "inputs": ["x"], "attrs": {"axes": [0, 1.5]}}])").Text(),
       ": nodes[0].attrs.axes[1]", "must be an int list; element 1 is number 1.5"},
      {"unknown attribute",
       WithNodes(R"([{"name": "y", "op": "reduce_sum", "inputs": ["x"], "attrs": {"axis": 1}}])").Text(),
       ": nodes[0].attrs.axis", "unknown attribute \"axis\": reduce_sum accepts axes, keep_dims"},
      {"attribute on an op without any",
       WithNodes(R"([{"name": "y", "op": "relu", "inputs": ["x"], "attrs": {"alpha": 0.1}}])").Text(),
       ": nodes[0].attrs.alpha", "unknown attribute \"alpha\": relu takes no attributes"},
      {"missing required attribute", WithNodes(R"([{"name": "y", "op": "dropout", "inputs": ["x"]}])").Text(),
       ": nodes[0].attrs", "dropout requires attribute \"p\" (float)"},
      {"dropout probability above 1",
       WithNodes(R"([{"name": "y", "op": "dropout", "inputs": ["x"], "attrs": {"p": 1.5}}])").Text(),
       ": nodes[0]", "dropout: p = 1.5 is outside [0, 1]"},
      {"dropout probability NaN",
       WithNodes(R"([{"name": "y", "op": "dropout", "inputs": ["x"], "attrs": {"p": "nan"}}])").Text(),
       ": nodes[0]", "dropout: p = nan is outside [0, 1]"},
      {"shape mismatch (AddNode)",
       [] { Doc d = WithNodes(R"([{"name": "y", "op": "add", "inputs": ["x", "w"]}])");
            d.inputs = R"([{"name": "x", "dtype": "f32", "shape": [2, 3]}, {"name": "w", "dtype": "f32", "shape": [4]}])";
            return d.Text(); }(),
       ": nodes[0]", "node \"y\": add: operand 1 \"w\" f32[4]"},
      {"dtype mismatch (AddNode)",
       [] { Doc d = WithNodes(R"([{"name": "y", "op": "mul", "inputs": ["x", "i"]}])");
            d.inputs = R"([{"name": "x", "dtype": "f32", "shape": [3]}, {"name": "i", "dtype": "i32", "shape": [3]}])";
            return d.Text(); }(),
       ": nodes[0]", "has a different dtype from operand 0"},
      {"bad attribute value (AddNode)",
       WithNodes(R"([{"name": "y", "op": "transpose", "inputs": ["x"], "attrs": {"perm": [0, 0]}}])").Text(),
       ": nodes[0]", "perm [0,0] is not a permutation of 2 axes"},
      {"result too large",
       WithNodes(R"([{"name": "y", "op": "broadcast_to", "inputs": ["x"], "attrs": {"shape": [4611686018427387904, 2, 3]}}])").Text(),
       ": nodes[0]", "more than 2^48 elements"},
      // Outputs.
      {"output naming a missing node", WithNodes(R"([{"name": "y", "op": "relu", "inputs": ["x"]}])", R"(["z"])").Text(),
       ": outputs[0]", "unknown name \"z\"; did you mean"},
      {"renamed output naming a missing node", WithNodes(R"([{"name": "y", "op": "relu", "inputs": ["x"]}])",
                                                         R"([{"name": "out", "node": "yy"}])").Text(),
       ": outputs[0].node", "unknown name \"yy\"; did you mean \"y\"?"},
      {"output object missing a field", WithNodes(R"([{"name": "y", "op": "relu", "inputs": ["x"]}])",
                                                  R"([{"name": "out"}])").Text(),
       ": outputs[0]", "missing required field \"node\" in an output object"},
      {"output of the wrong type", WithNodes(R"([{"name": "y", "op": "relu", "inputs": ["x"]}])", "[1]").Text(),
       ": outputs[0]", "expected a node name or {\"name\": output name, \"node\": node name}, got integer 1"},
      {"duplicate output name", WithNodes(R"([{"name": "y", "op": "relu", "inputs": ["x"]}])",
                                          R"(["y", {"name": "y", "node": "x"}])").Text(),
       ": outputs[1]", "duplicate output name \"y\"; first defined at outputs[0]"},
  };
}

TEST(JsonImportErrorsTest, EveryRuleNamesThePlaceAndWhatWasExpected) {
  for (const ErrorCase& c : Cases()) {
    SCOPED_TRACE(absl::StrCat("rule: ", c.rule, "\njson: ", c.json));
    auto graph = ImportJsonGraph(c.json, "", "t.json");
    if (graph.ok()) {
      ADD_FAILURE() << "accepted";
      continue;  // the other rules still run
    }
    std::string message(graph.status().message());
    EXPECT_TRUE(absl::StartsWith(message, absl::StrCat("t.json", c.place)))
        << "expected the message to start with t.json" << c.place << ": " << message;
    EXPECT_TRUE(absl::StrContains(message, c.phrase)) << "missing \"" << c.phrase << "\" in: " << message;
    EXPECT_EQ(graph.status().code(), c.code) << message;
  }
}

TEST(JsonImportErrorsTest, TheTableDocumentsAValidBaseline) {
  // Every case above breaks one thing in a document that is otherwise valid.
  auto graph = ImportJsonGraph(Doc().Text(), "", "t.json");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ((*graph)->num_nodes(), 2);
}

TEST(JsonImportErrorsTest, MillionDeepNestingIsAnErrorNotACrash) {
  for (const char* open : {"[", "{\"a\":"}) {
    std::string text;
    for (int i = 0; i < 1000000; ++i) text += open;
    auto graph = ImportJsonGraph(text, "", "deep.json");
    ASSERT_FALSE(graph.ok());
    EXPECT_EQ(graph.status().code(), absl::StatusCode::kOutOfRange);
    EXPECT_TRUE(absl::StartsWith(graph.status().message(), "deep.json:1:"));
    EXPECT_TRUE(absl::StrContains(graph.status().message(), "nested deeper than 64 levels"))
        << graph.status().message();
  }
}

TEST(JsonImportErrorsTest, BracketsInsideStringsDoNotCountAsNesting) {
  Doc d;
  d.extra = absl::StrCat(R"(, "name": "\")", std::string(1000, '['), "\"");
  auto graph = ImportJsonGraph(d.Text(), "", "t.json");
  ASSERT_FALSE(graph.ok());
  // The duplicate "name" field is found: the 1000 '[' in the string were not taken as depth.
  EXPECT_TRUE(absl::StrContains(graph.status().message(), "field appears twice"))
      << graph.status().message();
}

TEST(JsonImportErrorsTest, TextOverTheSizeLimitIsRefused) {
  std::string text(size_t{256} << 20, ' ');
  text += "{}";
  auto graph = ImportJsonGraph(text, "", "big.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StartsWith(graph.status().message(), "big.json: the JSON text has"));
}

TEST(JsonImportErrorsTest, MissingGraphFile) {
  auto graph = ImportJsonGraphFile("/nonexistent/kiln/graph.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(graph.status().message(), "/nonexistent/kiln/graph.json: no such file");
}

// A fresh folder under the temp dir, removed (with what the test wrote) at the end.
class GraphFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (std::filesystem::temp_directory_path() / "kiln_json_file_XXXXXX").string();
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(GraphFileTest, ADirectoryIsNotAGraphFile) {
  // Fails for every user, root included: opening a directory for reading succeeds on Linux.
  const std::string path = (dir_ / "graph.json").string();
  std::filesystem::create_directory(path);
  auto graph = ImportJsonGraphFile(path);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(graph.status().message(), path + ": is a directory, not a graph file");
}

TEST_F(GraphFileTest, AnUnreadableFileIsPermissionDenied) {
  const std::string path = (dir_ / "graph.json").string();
  std::ofstream(path) << Doc().Text();
  ASSERT_EQ(chmod(path.c_str(), 0), 0);
  if (access(path.c_str(), R_OK) == 0) GTEST_SKIP() << "mode 000 is readable here (root)";
  auto graph = ImportJsonGraphFile(path);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(graph.status().message(), path + ": cannot open the file");
}

TEST(JsonImportErrorsTest, NumbersRapidJsonMisparsedReadExactly) {
  // Found by tests/fuzz (regressions/json_import): RapidJSON 1.1.0's full-precision path
  // computed clz(0) on these, undefined behaviour. kiln converts every number itself now.
  const std::pair<const char*, double> cases[] = {
      {"-0e51", -0.0}, {"0E+300", 0.0}, {"0.000000000000000000000000000000", 0.0}, {"-0.0e-30", -0.0},
      {"0.000000000184467440737095516156", 1.84467440737095516156e-10}, {"1e-05", 1e-05},
      {"2.2250738585072011e-308", 2.2250738585072011e-308}, {"7", 7.0}};
  for (const auto& [eps, want] : cases) {
    auto graph = ImportJsonGraph(
        WithNodes(absl::StrCat(R"([{"name": "y", "op": "layer_norm", "inputs": ["x"], "attrs": {"eps": )", eps,
                               "}}]")).Text(),
        "", "t.json");
    ASSERT_TRUE(graph.ok()) << eps << ": " << graph.status();
    double got = (*graph)->FindNode("y")->attrs().GetFloat("eps");
    EXPECT_EQ(got, want) << eps;
    EXPECT_EQ(std::signbit(got), std::signbit(want)) << eps;
  }
  auto bad = ImportJsonGraph(R"({"a": 0e99, "b": 00e5})", "", "t.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StartsWith(bad.status().message(), "t.json:1:19: malformed JSON"))
      << bad.status().message();
  bad = ImportJsonGraph(R"({"a": 1e400})", "", "t.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "t.json:1:7: malformed JSON: Number too big to be stored in double.");
}

TEST(JsonImportErrorsTest, NoOutputsImportsButDoesNotVerify) {
  // The importer reads what the document says; "at least one output" is the verifier's rule,
  // so `kiln check` and every other command refuse the graph (exit code 2).
  Doc d;
  d.outputs = "[]";
  auto graph = ImportJsonGraph(d.Text(), "", "t.json");
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::Status status = Verify(**graph);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "graph g has no outputs");
}

}  // namespace
}  // namespace kiln
