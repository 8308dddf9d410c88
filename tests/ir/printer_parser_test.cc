// The text form: every op in the table prints canonically and round-trips (a table of one
// small graph per op; an op without an entry fails the test, so adding an op forces adding a
// case), constant data round-trips bit for bit in every dtype, the documented example prints
// exactly, and each kind of parse error names its line:column and what is wrong.
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/testing/filecheck.h"

namespace kiln {
namespace {

// A canonical one-node graph: `params` in the header, `node` defines y, which is returned.
std::string G(const std::string& params, const std::string& node) {
  return absl::StrCat("graph g(", params, ") {\n  ", node, "\n  return y\n}\n");
}
std::string Unary(const std::string& op) { return G("x: f32[2,3]", absl::StrCat("y: f32[2,3] = ", op, "(x)")); }
std::string Binary(const std::string& op, const std::string& dtype, const std::string& out) {
  return G(absl::StrCat("a: ", dtype, "[2,3], b: ", dtype, "[3]"),
           absl::StrCat("y: ", out, "[2,3] = ", op, "(a, b)"));
}

// One small, valid, canonically printed graph per op of ir/ops.def.
const std::map<std::string, std::string>& OpSnippets() {
  static const auto* snippets = new std::map<std::string, std::string>{
      {"input", "graph g(x: f32[2,3]) {\n  return x\n}\n"},
      {"constant", "graph g() {\n  y: f32[2] = constant() {data = [0.5, -1]}\n  return y\n}\n"},
      {"neg", Unary("neg")}, {"abs", Unary("abs")}, {"exp", Unary("exp")}, {"log", Unary("log")},
      {"sqrt", Unary("sqrt")}, {"rsqrt", Unary("rsqrt")}, {"reciprocal", Unary("reciprocal")},
      {"tanh", Unary("tanh")}, {"sigmoid", Unary("sigmoid")}, {"erf", Unary("erf")},
      {"relu", Unary("relu")}, {"gelu", Unary("gelu")}, {"gelu_tanh", Unary("gelu_tanh")},
      {"silu", Unary("silu")},
      {"cast", G("x: f32[2,3]", "y: bf16[2,3] = cast(x) {dtype = \"bf16\"}")},
      {"logical_not", G("x: bool[2,3]", "y: bool[2,3] = logical_not(x)")},
      {"add", Binary("add", "f32", "f32")}, {"sub", Binary("sub", "i32", "i32")},
      {"mul", Binary("mul", "bf16", "bf16")}, {"div", Binary("div", "i64", "i64")},
      {"pow", Binary("pow", "f32", "f32")}, {"maximum", Binary("maximum", "f16", "f16")},
      {"minimum", Binary("minimum", "f32", "f32")}, {"eq", Binary("eq", "i32", "bool")},
      {"ne", Binary("ne", "f32", "bool")}, {"lt", Binary("lt", "f32", "bool")},
      {"le", Binary("le", "f32", "bool")}, {"gt", Binary("gt", "f32", "bool")},
      {"ge", Binary("ge", "f32", "bool")}, {"logical_and", Binary("logical_and", "bool", "bool")},
      {"logical_or", Binary("logical_or", "bool", "bool")},
      {"where", G("c: bool[2,3], a: f32[2,3], b: f32[1,3]", "y: f32[2,3] = where(c, a, b)")},
      {"iota", G("", "y: i32[2,3] = iota() {axis = 1, dtype = \"i32\", shape = [2, 3]}")},
      {"reduce_sum", G("x: f32[2,3]", "y: f32[2] = reduce_sum(x) {axes = [1], keep_dims = false}")},
      {"reduce_mean", G("x: f32[2,3]", "y: f32[2,1] = reduce_mean(x) {axes = [-1], keep_dims = true}")},
      {"reduce_max", G("x: f32[2,3]", "y: f32[] = reduce_max(x) {axes = [], keep_dims = false}")},
      {"reduce_min", G("x: i32[2,3]", "y: i32[3] = reduce_min(x) {axes = [0], keep_dims = false}")},
      {"softmax", G("x: f32[2,3]", "y: f32[2,3] = softmax(x) {axis = -1}")},
      {"log_softmax", G("x: f32[2,3]", "y: f32[2,3] = log_softmax(x) {axis = 0}")},
      {"layer_norm", G("x: f32[2,3], w: f32[3], b: f32[3]",
                       "y: f32[2,3] = layer_norm(x, w, b) {axis = -1, eps = 1e-05}")},
      {"rms_norm", G("x: bf16[2,3], w: bf16[3]", "y: bf16[2,3] = rms_norm(x, w) {axis = 1, eps = 1e-06}")},
      {"cross_entropy", G("x: f32[4,10], t: i64[4]",
                          "y: f32[] = cross_entropy(x, t) {ignore_index = -100, reduction = \"mean\"}")},
      {"dropout", G("x: f32[2,3]", "y: f32[2,3] = dropout(x) {offset = 0, p = 0.1, seed = 42}")},
      {"dropout_grad", G("dy: f16[2,3], s: i64[], o: i64[]",
                         "y: f16[2,3] = dropout_grad(dy, s, o) {offset = 0, p = 0.5, seed = 0}")},
      {"attention", G("q: f16[2,4,8,16], k: f16[2,4,6,16], v: f16[2,4,6,32], m: f16[8,6]",
                      "y: f16[2,4,8,32] = attention(q, k, v, m) {causal = true, dropout = 0.0, offset = 0, scale = 0.125, seed = 0}")},
      {"attention_lse", G("q: f16[2,4,8,16], k: f16[2,4,6,16], m: f16[8,6]",
                          "y: f32[2,4,8] = attention_lse(q, k, m) {causal = true, scale = 0.125}")},
      {"reshape", G("x: f32[2,3]", "y: f32[3,2] = reshape(x) {shape = [3, -1]}")},
      {"transpose", G("x: f32[2,3]", "y: f32[3,2] = transpose(x) {perm = [1, 0]}")},
      {"slice", G("x: f32[2,3]", "y: f32[1,2] = slice(x) {ends = [1, 3], starts = [0, 1], steps = []}")},
      {"concat", G("a: f32[2,3], b: f32[2,1]", "y: f32[2,4] = concat(a, b) {axis = 1}")},
      {"gather", G("x: f32[10,4], i: i32[2,3]", "y: f32[2,3,4] = gather(x, i) {axis = 0}")},
      {"broadcast_to", G("x: f32[3]", "y: f32[2,3] = broadcast_to(x) {shape = [2, 3]}")},
      {"matmul", G("a: bf16[5,2,3], b: bf16[3,4]", "y: bf16[5,2,4] = matmul(a, b)")},
  };
  return *snippets;
}

TEST(PrinterParserTest, EveryOpPrintsCanonicallyAndRoundTrips) {
  for (const OpInfo& op : AllOps()) {
    SCOPED_TRACE(op.name);
    auto it = OpSnippets().find(op.name);
    if (it == OpSnippets().end()) {
      ADD_FAILURE() << "op \"" << op.name << "\" has no snippet in OpSnippets(); add one";
      continue;
    }
    auto graph = ParseGraph(it->second);
    ASSERT_TRUE(graph.ok()) << graph.status();
    EXPECT_TRUE(Verify(**graph).ok()) << Verify(**graph);
    bool found = false;
    for (const Node* node : (*graph)->nodes()) found |= node->op() == op.kind;
    EXPECT_TRUE(found) << "the snippet has no " << op.name << " node";
    std::string printed = PrintGraph(**graph);
    EXPECT_EQ(printed, it->second);
    auto again = ParseGraph(printed);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(PrintGraph(**again), printed);
  }
  for (const auto& [name, text] : OpSnippets()) {
    EXPECT_TRUE(ParseOpKind(name).ok()) << "snippet for an op that is not in the table: " << name;
  }
}

TEST(PrinterParserTest, PrintsTheDocumentedExample) {
  Graph g("NAME");
  Node* x = *g.AddInput("x", DType::kBF16, {16384, 8192});
  Node* b = *g.AddInput("b", DType::kBF16, {8192});
  Tensor half(DType::kF32, {});
  half.SetF64(0, 0.5);
  ASSERT_TRUE(g.AddConstant("c", half).ok());
  Node* t = *g.AddNode(OpKind::kAdd, {x, b}, {}, "t");
  Node* y = *g.AddNode(OpKind::kGeluTanh, {t}, {}, "y");
  ASSERT_TRUE(g.AddNode(OpKind::kReduceSum, {x}, {{"axes", std::vector<int64_t>{1}}}, "s").ok());
  ASSERT_TRUE(g.AddOutput(y).ok());
  ASSERT_TRUE(g.AddOutput(t, "h").ok());
  const std::string expected =
      "graph NAME(x: bf16[16384,8192], b: bf16[8192]) {\n"
      "  c: f32[] = constant() {data = [0.5]}\n"
      "  t: bf16[16384,8192] = add(x, b)\n"
      "  y: bf16[16384,8192] = gelu_tanh(t)\n"
      "  s: bf16[16384] = reduce_sum(x) {axes = [1], keep_dims = false}\n"
      "  return y, t as h\n"
      "}\n";
  EXPECT_EQ(PrintGraph(g), expected);
  EXPECT_EQ(PrintGraph(g), PrintGraph(g));
  auto parsed = ParseGraph(expected);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(PrintGraph(**parsed), expected);
  EXPECT_TRUE(FileCheck(PrintGraph(g), R"(
    CHECK: graph NAME(x: bf16[16384,8192], b: bf16[8192])
    CHECK-NOT: = input(
    CHECK: = add(x, b)
    CHECK-NEXT: = gelu_tanh(t)
    CHECK: return y, t as h
  )"));
}

// Builds a constant from raw element bits, prints, parses, and checks the bits survive.
template <typename T>
void ExpectConstantRoundTrips(DType dtype, const std::vector<T>& elements) {
  SCOPED_TRACE(DTypeName(dtype));
  Tensor value(dtype, {static_cast<int64_t>(elements.size())});
  ASSERT_EQ(value.num_bytes(), static_cast<int64_t>(elements.size() * sizeof(T)));
  std::memcpy(value.data(), elements.data(), value.num_bytes());
  Graph g;
  Node* c = *g.AddConstant("c", value);
  ASSERT_TRUE(g.AddOutput(c).ok());
  std::string text = PrintGraph(g);
  auto parsed = ParseGraph(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  const Tensor* back = (*parsed)->FindNode("c")->value();
  ASSERT_NE(back, nullptr);
  EXPECT_TRUE(back->BitwiseEqual(value)) << text;
  EXPECT_EQ(PrintGraph(**parsed), text);
}

// A JSON graph may be named anything (the fuzzer found a name with a newline); the text form
// escapes it, as it does string attributes, and reads it back.
TEST(PrinterParserTest, NamesAndStringsWithAnyCharacterRoundTrip) {
  Graph g("dr::::op\nout \"quoted\" back\\slash");
  auto x = g.AddInput("x", DType::kF32, {2});
  ASSERT_TRUE(x.ok());
  auto y = g.AddNode(OpKind::kNeg, {*x});
  ASSERT_TRUE(y.ok());
  ASSERT_TRUE(g.AddOutput(*y).ok());
  const std::string text = PrintGraph(g);
  EXPECT_EQ(text.find('\n'), text.find(") {\n") + 3) << text;  // the name stays on its line
  auto parsed = ParseGraph(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  EXPECT_EQ((*parsed)->name(), g.name());
  EXPECT_EQ(PrintGraph(**parsed), text);
  EXPECT_FALSE(ParseGraph("graph \"bad \\q\"(x: f32[1]) {\n  return x\n}\n").ok());
}

TEST(PrinterParserTest, ConstantDataRoundTripsBitForBit) {
  const float inf = std::numeric_limits<float>::infinity();
  ExpectConstantRoundTrips<float>(
      DType::kF32, {0.1f, -0.0f, 0.0f, 1.0f / 3.0f, 3.14159274f, std::numeric_limits<float>::denorm_min(),
                    std::numeric_limits<float>::min(), std::numeric_limits<float>::max(), inf, -inf,
                    std::numeric_limits<float>::quiet_NaN(), 16777216.0f, -1e-30f});
  ExpectConstantRoundTrips<uint16_t>(DType::kF16, {0x0001, 0x03ff, 0x3555, 0x7bff, 0x8000, 0x7c00,
                                                   0xfc00, 0x3c00, 0x2e66});
  ExpectConstantRoundTrips<uint16_t>(DType::kBF16, {0x0001, 0x3dcd, 0x7f7f, 0xff80, 0x3f80, 0x8000,
                                                    0x4049, 0xc2f7});
  ExpectConstantRoundTrips<int32_t>(DType::kI32, {std::numeric_limits<int32_t>::min(), -1, 0, 7,
                                                  std::numeric_limits<int32_t>::max()});
  ExpectConstantRoundTrips<int64_t>(DType::kI64, {std::numeric_limits<int64_t>::min(), -1, 0,
                                                  std::numeric_limits<int64_t>::max()});
  ExpectConstantRoundTrips<uint8_t>(DType::kBool, {0, 1, 1, 0});
}

// Past kListedElements a constant prints as the base64 of its bytes: exact for every dtype
// (NaN payloads and -0 included), read back bit for bit, and a string, not a list.
TEST(PrinterParserTest, LargeConstantsPrintTheirBytesAndRoundTrip) {
  const int64_t n = kListedElements + 3;
  auto ramp = [&](auto first, auto step) {
    std::vector<decltype(first)> v;
    for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<decltype(first)>(first + step * i));
    return v;
  };
  std::vector<float> f32 = ramp(-1.0f, 0.37f);
  f32[1] = -0.0f;
  uint32_t payload_nan = 0x7fc01234u;
  std::memcpy(&f32[2], &payload_nan, 4);
  ExpectConstantRoundTrips<float>(DType::kF32, f32);
  ExpectConstantRoundTrips<uint16_t>(DType::kF16, ramp(uint16_t{0x3000}, uint16_t{7}));
  ExpectConstantRoundTrips<uint16_t>(DType::kBF16, ramp(uint16_t{0xbf00}, uint16_t{3}));
  ExpectConstantRoundTrips<int32_t>(DType::kI32, ramp(int32_t{-500}, int32_t{1}));
  ExpectConstantRoundTrips<int64_t>(DType::kI64, ramp(int64_t{1} << 40, int64_t{-3}));
  std::vector<uint8_t> bools(n, 0);
  for (int64_t i = 0; i < n; i += 3) bools[i] = 1;
  ExpectConstantRoundTrips<uint8_t>(DType::kBool, bools);

  Graph g;
  Tensor big(DType::kBF16, {n});
  ASSERT_TRUE(g.AddOutput(*g.AddConstant("c", big)).ok());
  const std::string text = PrintGraph(g);
  EXPECT_NE(text.find("{data = \""), std::string::npos) << text.substr(0, 200);
  EXPECT_EQ(text.find('['), text.find("bf16[") + 4) << "no list: " << text.substr(0, 200);
  EXPECT_LT(text.size(), static_cast<size_t>(big.num_bytes() * 4 / 3 + 200));

  Tensor small(DType::kF32, {kListedElements});
  Graph h;
  ASSERT_TRUE(h.AddOutput(*h.AddConstant("c", small)).ok());
  EXPECT_NE(PrintGraph(h).find("{data = [0, 0"), std::string::npos) << "up to the limit: a list";
}

TEST(PrinterParserTest, ConstantDataUsesShortestDigits) {
  auto g = ParseGraph(
      "graph g() {\n"
      "  a: f32[4] = constant() {data = [0.1, 1e-45, -0, 3.4028235e+38]}\n"
      "  h: f16[2] = constant() {data = [0.1, 65504]}\n"
      "  b: bf16[2] = constant() {data = [0.1, -inf]}\n"
      "  i: bool[2,1] = constant() {data = [1, 0]}\n"
      "  return a, h, b, i\n"
      "}\n");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(FileCheck(PrintGraph(**g), R"(
    CHECK: a: f32[4] = constant() {data = [0.1, 1e-45, -0, 3.4028235e+38]}
    CHECK-NEXT: h: f16[2] = constant() {data = [0.1, 65504]}
    CHECK-NEXT: b: bf16[2] = constant() {data = [0.1, -inf]}
    CHECK-NEXT: i: bool[2,1] = constant() {data = [1, 0]}
  )"));
}

TEST(PrinterParserTest, ParserAcceptsCommentsUntypedNodesAndAliases) {
  auto g = ParseGraph(R"(
    # A comment line.
    graph "my graph"(x: f32[4], i: i64[]) {  # trailing comment
      t = exp(x)
      u: f32[4] = mul(t, x) {}
      return u, u as v, x as w, i
    }
  )");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->name(), "my graph");
  ASSERT_EQ((*g)->outputs().size(), 4u);
  EXPECT_EQ((*g)->outputs()[1].name, "v");
  EXPECT_EQ((*g)->outputs()[1].node->name(), "u");
  EXPECT_EQ(PrintGraph(**g),
            "graph \"my graph\"(x: f32[4], i: i64[]) {\n"
            "  t: f32[4] = exp(x)\n"
            "  u: f32[4] = mul(t, x)\n"
            "  return u, u as v, x as w, i\n"
            "}\n");
}

TEST(PrinterParserTest, IntAttributeIsAcceptedWhereAFloatIsExpected) {
  auto g = ParseGraph(G("x: f32[2,3]", "y: f32[2,3] = dropout(x) {p = 0}"));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(FileCheck(PrintGraph(**g), "CHECK: {offset = 0, p = 0.0, seed = 0}"));
}

struct ParseErrorCase {
  const char* text;
  const char* where;   // "line L:C:"
  const char* phrase;  // what the message must also contain
};

TEST(PrinterParserTest, ParseErrorsNameTheirPlace) {
  const ParseErrorCase cases[] = {
      // Syntax.
      {"graph g(x: f32[3]) {\n  y: f32[3] = neg(x\n  return y\n}", "line 3:3:",
       "expected ')' closing the operand list but got 'return'"},
      {"graph g(x: f32[3]) {\n  y: f32[3] neg(x)\n  return y\n}", "line 2:13:", "expected '='"},
      {"graph g(x: f32[3]) {\n  y: f32[3] = neg(x)\n}", "line 3:1:", "expected 'return'"},
      {"graph g(x: f32[3]) {\n  return x\n}\nextra", "line 4:1:", "after the end of the graph"},
      {"graph g(x: f32[3]) {\n  y = neg(x) $\n  return y\n}", "line 2:14:", "unexpected character '$'"},
      {"graph g(x: f32[3]) {\n  y = cast(x) {dtype = \"f16}\n  return y\n}", "line 2:24:",
       "unterminated string"},
      {"graph g(x: f33[3]) {\n  return x\n}", "line 1:12:", "unknown dtype \"f33\""},
      {"graph g(x: f32[3,-1]) {\n  return x\n}", "line 1:18:", "expected a dimension"},
      // Unknown op, with suggestions.
      {"graph g(x: f32[3]) {\n  y: f32[3] = ngg(x)\n  return y\n}", "line 2:15:",
       "unknown op \"ngg\"; did you mean neg"},
      {"graph g(x: f32[3]) {\n  y = sofmax(x)\n  return y\n}", "line 2:7:", "softmax"},
      // Operand names.
      {"graph g(x: f32[3]) {\n  y: f32[3] = neg(z)\n  return y\n}", "line 2:19:",
       "unknown operand \"z\""},
      {"graph g(x: f32[3]) {\n  y: f32[3] = neg(z)\n  z: f32[3] = neg(x)\n  return y\n}",
       "line 2:19:", "\"z\" is used before its definition at line 3"},
      {"graph g(x: f32[3]) {\n  return q\n}", "line 2:10:", "unknown operand \"q\""},
      // Duplicate names.
      {"graph g(x: f32[3]) {\n  x: f32[3] = neg(x)\n  return x\n}", "line 2:3:",
       "duplicate name \"x\" (first defined at line 1)"},
      {"graph g(x: f32[3], x: f32[3]) {\n  return x\n}", "line 1:20:", "duplicate name \"x\""},
      {"graph g(x: f32[3]) {\n  return x, x\n}", "line 2:13:", "duplicate output name \"x\""},
      // Attribute errors, from AddNode's CheckAttributes, prefixed with the node's name.
      {"graph g(x: f32[3]) {\n  y = softmax(x) {axis = 1.5}\n  return y\n}", "line 2:3:",
       "y: softmax attribute \"axis\" must be int, got float 1.5"},
      {"graph g(x: f32[3]) {\n  y = softmax(x) {axes = [0]}\n  return y\n}", "line 2:3:",
       "softmax has no attribute \"axes\"; it accepts: axis"},
      {"graph g(x: f32[3]) {\n  y = transpose(x)\n  return y\n}", "line 2:3:",
       "transpose requires attribute \"perm\""},
      {"graph g(x: f32[3]) {\n  y = softmax(x) {axis = 0, axis = 0}\n  return y\n}", "line 2:29:",
       "attribute \"axis\" is given twice"},
      {"graph g(x: f32[3]) {\n  y = transpose(x) {perm = [0.5]}\n  return y\n}", "line 2:29:",
       "list elements must be integers"},
      // Arity and shape inference.
      {"graph g(x: f32[3]) {\n  y = add(x)\n  return y\n}", "line 2:3:", "y: add takes 2 operands, got 1"},
      {"graph g(a: f32[3,4], b: f32[5]) {\n  t = add(a, b)\n  return t\n}", "line 2:3:",
       "t: add: operand 1 \"b\" f32[5]: shapes [3,4] and [5] do not broadcast"},
      // A written result type that disagrees with inference.
      {"graph g(a: bf16[3,4], b: bf16[4]) {\n  # a comment\n  c: f32[] = constant() {data = [1]}\n"
       "  t: f32[3] = add(a, b)\n  return t\n}",
       "line 4:3:", "t is written as f32[3] but add infers bf16[3,4]"},
      // Leaves.
      {"graph g() {\n  c: f32[2] = constant() {data = [1]}\n  return c\n}", "line 2:34:",
       "constant data has 1 values but f32[2] holds 2"},
      {"graph g() {\n  c = constant() {data = [1]}\n  return c\n}", "line 2:3:", "needs its type written"},
      {"graph g() {\n  c: i32[1] = constant() {data = [3000000000]}\n  return c\n}", "line 2:35:",
       "out of range for i32"},
      {"graph g() {\n  c: i32[1] = constant() {data = [1.5]}\n  return c\n}", "line 2:35:",
       "expected an integer"},
      {"graph g() {\n  c: f32[1] = constant()\n  return c\n}", "line 2:15:", "requires its value"},
      {"graph g() {\n  c: f32[2] = constant() {data = \"AACAPw==\"}\n  return c\n}", "line 2:34:",
       "constant data has 4 bytes but f32[2] holds 8"},
      {"graph g() {\n  c: f32[1] = constant() {data = \"AAC*Pw==\"}\n  return c\n}", "line 2:34:",
       "must be base64"},
      {"graph g() {\n  c: bool[2] = constant() {data = \"AQI=\"}\n  return c\n}", "line 2:35:",
       "bool data is 0 or 1"},
      {"graph g() {\n  c: f32[1000000000,1000000000] = constant() {data = \"AA==\"}\n  return c\n}",
       "line 2:54:", "more than 2^48 elements"},
      {"graph g() {\n  x: f32[1] = input()\n  return x\n}", "line 2:15:",
       "inputs are declared in the graph header"},
  };
  for (const ParseErrorCase& c : cases) {
    SCOPED_TRACE(c.text);
    auto graph = ParseGraph(c.text);
    ASSERT_FALSE(graph.ok());
    std::string message(graph.status().message());
    EXPECT_EQ(message.rfind(c.where, 0), 0u) << message;
    EXPECT_NE(message.find(c.phrase), std::string::npos) << message;
  }
}

TEST(PrinterParserTest, EveryTruncationFailsCleanly) {
  const std::string& text = OpSnippets().at("layer_norm");
  for (size_t n = 0; n + 1 < text.size(); ++n) {
    auto graph = ParseGraph(text.substr(0, n));
    ASSERT_FALSE(graph.ok()) << text.substr(0, n);
    EXPECT_EQ(graph.status().message().rfind("line ", 0), 0u) << graph.status();
  }
}

TEST(PrinterParserTest, TheBriefsExampleMessageIsExact) {
  auto graph = ParseGraph(
      "graph g(a: bf16[3,4], b: bf16[4]) {\n\n\n  t: f32[3] = add(a, b)\n  return t\n}\n");
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(), "line 4:3: t is written as f32[3] but add infers bf16[3,4]");
}

}  // namespace
}  // namespace kiln
