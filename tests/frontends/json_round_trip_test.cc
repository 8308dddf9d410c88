// Export and import agree: a graph with one node of every op in the op table (walked, so a
// new op without a case fails here) and constants of every dtype exports, imports to a graph
// with the same nodes, fields and bits, and exports to the same text again. Also: the export
// layout on a golden file, nodes listed in any order, and inline data of every dtype.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "frontends/json/json_graph.h"
#include "gtest/gtest.h"
#include "ir/base/status.h"

namespace kiln {
namespace {

using Ints = std::vector<int64_t>;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Tensor MakeTensor(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.SetF64(static_cast<int64_t>(i), values[i]);
  return t;
}

// Operands shared by the cases.
struct Leaves {
  Node *x, *y, *b, *w, *bias, *m, *q, *k, *v, *mask, *targets, *indices, *seed, *offset;
};

absl::StatusOr<Leaves> AddLeaves(Graph& g) {
  Leaves l;
  KILN_ASSIGN_OR_RETURN(l.x, g.AddInput("x", DType::kF32, {2, 3}));
  KILN_ASSIGN_OR_RETURN(l.y, g.AddInput("y", DType::kF32, {2, 3}));
  KILN_ASSIGN_OR_RETURN(l.b, g.AddInput("b", DType::kBool, {2, 3}));
  KILN_ASSIGN_OR_RETURN(l.w, g.AddConstant("w", MakeTensor(DType::kF32, {3}, {0.5, -1.25, 3})));
  KILN_ASSIGN_OR_RETURN(l.bias, g.AddConstant("bias", MakeTensor(DType::kF32, {3}, {0.1, 0.2, 0.3})));
  KILN_ASSIGN_OR_RETURN(l.m, g.AddInput("m", DType::kF32, {3, 4}));
  KILN_ASSIGN_OR_RETURN(l.q, g.AddInput("q", DType::kBF16, {2, 4, 8}));
  KILN_ASSIGN_OR_RETURN(l.k, g.AddInput("k", DType::kBF16, {2, 5, 8}));
  KILN_ASSIGN_OR_RETURN(l.v, g.AddInput("v", DType::kBF16, {2, 5, 8}));
  KILN_ASSIGN_OR_RETURN(l.mask, g.AddInput("mask", DType::kBF16, {4, 5}));
  KILN_ASSIGN_OR_RETURN(l.targets, g.AddConstant("targets", MakeTensor(DType::kI64, {2}, {0, 2})));
  KILN_ASSIGN_OR_RETURN(l.indices, g.AddConstant("indices", MakeTensor(DType::kI32, {4}, {2, 0, 1, 2})));
  KILN_ASSIGN_OR_RETURN(l.seed, g.AddConstant("seed", MakeTensor(DType::kI64, {}, {1234})));
  KILN_ASSIGN_OR_RETURN(l.offset, g.AddInput("offset", DType::kI64, {}));
  return l;
}

// One node of `op` with non-default attributes where the op has any; nullptr when the op
// has no case here (the test fails and names it).
absl::StatusOr<Node*> AddCase(Graph& g, const Leaves& l, OpKind op) {
  switch (op) {
    case OpKind::kInput: return l.x;
    case OpKind::kConstant: return l.w;
    case OpKind::kNeg: case OpKind::kAbs: case OpKind::kExp: case OpKind::kLog:
    case OpKind::kSqrt: case OpKind::kRsqrt: case OpKind::kReciprocal: case OpKind::kTanh:
    case OpKind::kSigmoid: case OpKind::kErf: case OpKind::kRelu: case OpKind::kGelu:
    case OpKind::kGeluTanh: case OpKind::kSilu:
      return g.AddNode(op, {l.x});
    case OpKind::kCast: return g.AddNode(op, {l.x}, {{"dtype", std::string("f16")}});
    case OpKind::kLogicalNot: return g.AddNode(op, {l.b});
    case OpKind::kAdd: case OpKind::kSub: case OpKind::kMul: case OpKind::kDiv:
    case OpKind::kPow: case OpKind::kMaximum: case OpKind::kMinimum: case OpKind::kEq:
    case OpKind::kNe: case OpKind::kLt: case OpKind::kLe: case OpKind::kGt: case OpKind::kGe:
      return g.AddNode(op, {l.x, l.y});
    case OpKind::kLogicalAnd: case OpKind::kLogicalOr: return g.AddNode(op, {l.b, l.b});
    case OpKind::kWhere: return g.AddNode(op, {l.b, l.x, l.w});
    case OpKind::kIota:
      return g.AddNode(op, {}, {{"shape", Ints{2, 3}}, {"axis", int64_t{0}}, {"dtype", std::string("i32")}});
    case OpKind::kReduceSum: case OpKind::kReduceMean: case OpKind::kReduceMax:
    case OpKind::kReduceMin:
      return g.AddNode(op, {l.x}, {{"axes", Ints{1}}, {"keep_dims", true}});
    case OpKind::kSoftmax: case OpKind::kLogSoftmax:
      return g.AddNode(op, {l.x}, {{"axis", int64_t{0}}});
    case OpKind::kLayerNorm: return g.AddNode(op, {l.x, l.w, l.bias}, {{"eps", 1e-3}});
    case OpKind::kRmsNorm: return g.AddNode(op, {l.x, l.w}, {{"eps", int64_t{0}}});
    case OpKind::kCrossEntropy:
      return g.AddNode(op, {l.x, l.targets},
                       {{"reduction", std::string("sum")}, {"ignore_index", int64_t{-1}}});
    case OpKind::kDropout: return g.AddNode(op, {l.x, l.seed}, {{"p", 0.1}, {"offset", int64_t{7}}});
    case OpKind::kDropoutGrad: return g.AddNode(op, {l.x, l.seed, l.offset}, {{"p", 0.25}});
    case OpKind::kAttention:
      return g.AddNode(op, {l.q, l.k, l.v, l.mask}, {{"scale", 0.125}, {"causal", true}});
    case OpKind::kAttentionLse:
      return g.AddNode(op, {l.q, l.k, l.mask}, {{"scale", 0.125}, {"causal", true}});
    case OpKind::kReshape: return g.AddNode(op, {l.x}, {{"shape", Ints{-1, 2}}});
    case OpKind::kTranspose: return g.AddNode(op, {l.x}, {{"perm", Ints{1, 0}}});
    case OpKind::kSlice:
      return g.AddNode(op, {l.x}, {{"starts", Ints{0, -2}}, {"ends", Ints{2, 3}}, {"steps", Ints{1, 2}}});
    case OpKind::kConcat: return g.AddNode(op, {l.x, l.y, l.x}, {{"axis", int64_t{-1}}});
    case OpKind::kGather: return g.AddNode(op, {l.x, l.indices}, {{"axis", int64_t{1}}});
    case OpKind::kBroadcastTo: return g.AddNode(op, {l.w}, {{"shape", Ints{4, 2, 3}}});
    case OpKind::kMatmul: return g.AddNode(op, {l.x, l.m});
  }
  return nullptr;
}

// A graph with every op of the table, each node a graph output; nodes are named by the
// builder (op name), and the first is also output under a second name.
std::unique_ptr<Graph> EveryOpGraph() {
  auto g = std::make_unique<Graph>("every_op");
  auto leaves = AddLeaves(*g);
  KILN_CHECK_OK(leaves.status());
  for (const OpInfo& info : AllOps()) {
    auto node = AddCase(*g, *leaves, info.kind);
    EXPECT_TRUE(node.ok()) << info.name << ": " << node.status();
    if (!node.ok()) continue;
    EXPECT_NE(*node, nullptr) << "no round-trip case for op " << info.name << "; add one to AddCase";
    if (*node == nullptr) continue;
    KILN_CHECK_OK(g->AddOutput(*node, absl::StrCat("out_", info.name)));
  }
  return g;
}

void ExpectSameGraph(const Graph& a, const Graph& b) {
  EXPECT_EQ(a.name(), b.name());
  ASSERT_EQ(a.num_nodes(), b.num_nodes());
  for (const Node* node : a.nodes()) {
    SCOPED_TRACE(node->ToString());
    const Node* other = b.FindNode(node->name());
    ASSERT_NE(other, nullptr);
    EXPECT_EQ(node->op(), other->op());
    EXPECT_EQ(node->dtype(), other->dtype());
    EXPECT_EQ(node->shape(), other->shape());
    EXPECT_EQ(node->attrs(), other->attrs()) << other->attrs().ToString();
    ASSERT_EQ(node->num_operands(), other->num_operands());
    for (int i = 0; i < node->num_operands(); ++i) {
      EXPECT_EQ(node->operand(i)->name(), other->operand(i)->name());
    }
    if (node->value() != nullptr) {
      ASSERT_NE(other->value(), nullptr);
      EXPECT_TRUE(node->value()->BitwiseEqual(*other->value()));
    }
  }
  ASSERT_EQ(a.inputs().size(), b.inputs().size());
  for (size_t i = 0; i < a.inputs().size(); ++i) {
    EXPECT_EQ(a.inputs()[i]->name(), b.inputs()[i]->name());
  }
  ASSERT_EQ(a.outputs().size(), b.outputs().size());
  for (size_t i = 0; i < a.outputs().size(); ++i) {
    EXPECT_EQ(a.outputs()[i].name, b.outputs()[i].name);
    EXPECT_EQ(a.outputs()[i].node->name(), b.outputs()[i].node->name());
  }
}

TEST(JsonRoundTripTest, EveryOpExportsImportsAndExportsToTheSameText) {
  std::unique_ptr<Graph> g = EveryOpGraph();
  KILN_CHECK_OK(g->AddOutput(g->FindNode("relu"), "renamed"));
  auto text = ExportJsonGraph(*g);
  ASSERT_TRUE(text.ok()) << text.status();
  auto imported = ImportJsonGraph(*text, "", "export.json");
  ASSERT_TRUE(imported.ok()) << imported.status() << "\n" << *text;
  ExpectSameGraph(*g, **imported);
  auto again = ExportJsonGraph(**imported);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*text, *again);
  // Every op of the table is in the text as a node's op (leaves as inputs/initializers).
  for (const OpInfo& info : AllOps()) {
    if (info.category == OpCategory::kLeaf) continue;
    EXPECT_TRUE(absl::StrContains(*text, absl::StrCat("\"op\": \"", info.name, "\"")))
        << info.name;
  }
  EXPECT_TRUE(absl::StrContains(*text, R"({"name": "renamed", "node": "relu"})"));
}

TEST(JsonRoundTripTest, ExportLayoutMatchesTheGoldenFile) {
  // testdata/bias_gelu.json lists its nodes out of order and leaves defaults out; the export
  // puts them in PostOrder with every attribute written.
  std::string dir = std::string(KILN_SOURCE_DIR) + "/tests/frontends/testdata";
  auto graph = ImportJsonGraphFile(dir + "/bias_gelu.json");
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto text = ExportJsonGraph(**graph);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, ReadFile(dir + "/bias_gelu.exported.json"));
  auto again = ImportJsonGraph(*text, "", "exported");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*ExportJsonGraph(**again), *text);
}

TEST(JsonRoundTripTest, NodesMayAppearInAnyOrder) {
  const char* text = R"({"kiln_graph": 1, "outputs": ["c"],
    "nodes": [{"name": "c", "op": "mul", "inputs": ["b", "a"]},
              {"name": "b", "op": "exp", "inputs": ["a"]},
              {"name": "a", "op": "neg", "inputs": ["x"]}],
    "inputs": [{"name": "x", "dtype": "f16", "shape": [4]}]})";
  auto graph = ImportJsonGraph(text, "", "t.json");
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<std::string> order;
  for (const Node* node : (*graph)->PostOrder()) order.push_back(node->name());
  EXPECT_EQ(order, (std::vector<std::string>{"x", "a", "b", "c"}));
  EXPECT_EQ((*graph)->name(), "graph");
  EXPECT_EQ((*graph)->FindNode("c")->dtype(), DType::kF16);
}

TEST(JsonRoundTripTest, GraphNameIsAnyStringAndIsEscaped) {
  Graph g("torch-jit \"export\"\n\x01");
  KILN_CHECK_OK(g.AddOutput(*g.AddInput("x", DType::kF32, {1})));
  auto text = ExportJsonGraph(g);
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(absl::StrContains(*text, R"("name": "torch-jit \"export\"\n\u0001",)")) << *text;
  auto back = ImportJsonGraph(*text, "", "t.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ((*back)->name(), g.name());
}

TEST(JsonRoundTripTest, IntegerWhereTheSchemaWantsAFloatIsConverted) {
  const char* text = R"({"kiln_graph": 1, "outputs": ["y"],
    "inputs": [{"name": "x", "dtype": "f32", "shape": [2, 8]}],
    "nodes": [{"name": "y", "op": "layer_norm", "inputs": ["x"], "attrs": {"eps": 0, "axis": 1}}]})";
  auto graph = ImportJsonGraph(text, "", "t.json");
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Attributes& attrs = (*graph)->FindNode("y")->attrs();
  EXPECT_EQ(TypeOf(attrs.values().at("eps")), AttrType::kFloat);
  auto exported = ExportJsonGraph(**graph);
  EXPECT_TRUE(absl::StrContains(*exported, R"("attrs": {"axis": 1, "eps": 0.0})")) << *exported;
}

// Inline data of every dtype: the values read in, including the special cases, and the text
// written back reads to the same bits.
TEST(JsonRoundTripTest, InlineDataOfEveryDType) {
  const char* text = R"({"kiln_graph": 1, "name": "consts", "initializers": [
    {"name": "f32", "dtype": "f32", "shape": [2, 4], "data": [0.1, -2, 3.5e-45, "nan", "inf", "-inf", -0.0, 1e38]},
    {"name": "f16", "dtype": "f16", "shape": [5], "data": [0.1, 65504, 1e-7, "-inf", -3]},
    {"name": "bf16", "dtype": "bf16", "shape": [4], "data": [0.1, 3e38, -1.5, "nan"]},
    {"name": "i32", "dtype": "i32", "shape": [4], "data": [-2147483648, 2147483647, 0, 2.0]},
    {"name": "i64", "dtype": "i64", "shape": [3], "data": [-9223372036854775808, 9223372036854775807, 42]},
    {"name": "b", "dtype": "bool", "shape": [4], "data": [true, false, 1, 0]},
    {"name": "s", "dtype": "f32", "shape": [], "data": [2.5]},
    {"name": "e", "dtype": "i64", "shape": [0, 3], "data": []}],
    "outputs": ["f32", "f16", "bf16", "i32", "i64", "b", "s", "e"]})";
  auto graph = ImportJsonGraph(text, "", "t.json");
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Graph& g = **graph;
  const Tensor& f32 = *g.FindNode("f32")->value();
  EXPECT_EQ(f32.data_as<float>()[0], 0.1f);
  EXPECT_EQ(f32.data_as<float>()[1], -2.0f);
  EXPECT_EQ(f32.data_as<float>()[2], std::numeric_limits<float>::denorm_min() * 2);
  EXPECT_TRUE(std::isnan(f32.data_as<float>()[3]));
  EXPECT_EQ(f32.data_as<float>()[4], std::numeric_limits<float>::infinity());
  EXPECT_EQ(f32.data_as<float>()[5], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(f32.data_as<float>()[6]));
  EXPECT_EQ(f32.data_as<float>()[7], 1e38f);
  const Tensor& f16 = *g.FindNode("f16")->value();
  EXPECT_EQ(f16.data_as<uint16_t>()[0], FloatToHalfBits(0.1f));
  EXPECT_EQ(f16.GetF64(1), 65504.0);
  EXPECT_EQ(f16.data_as<uint16_t>()[2], FloatToHalfBits(1e-7f));  // a subnormal
  EXPECT_EQ(f16.GetF64(3), -HUGE_VAL);
  EXPECT_EQ(f16.GetF64(4), -3.0);
  const Tensor& bf16 = *g.FindNode("bf16")->value();
  EXPECT_EQ(bf16.data_as<uint16_t>()[0], FloatToBF16Bits(0.1f));
  EXPECT_EQ(bf16.data_as<uint16_t>()[1], FloatToBF16Bits(3e38f));
  EXPECT_EQ(bf16.GetF64(2), -1.5);
  EXPECT_TRUE(std::isnan(bf16.GetF64(3)));
  const Tensor& i32 = *g.FindNode("i32")->value();
  EXPECT_EQ(i32.data_as<int32_t>()[0], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(i32.data_as<int32_t>()[1], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(i32.data_as<int32_t>()[3], 2);
  const Tensor& i64 = *g.FindNode("i64")->value();
  EXPECT_EQ(i64.data_as<int64_t>()[0], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(i64.data_as<int64_t>()[1], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(i64.data_as<int64_t>()[2], 42);
  const Tensor& b = *g.FindNode("b")->value();
  EXPECT_EQ(std::vector<uint8_t>(b.data(), b.data() + 4), (std::vector<uint8_t>{1, 0, 1, 0}));
  EXPECT_EQ(g.FindNode("s")->value()->GetF64(0), 2.5);
  EXPECT_EQ(g.FindNode("e")->value()->num_elements(), 0);

  auto exported = ExportJsonGraph(g);
  ASSERT_TRUE(exported.ok());
  // Shortest exact forms: 0.1 stays 0.1 in every float dtype; booleans as true/false.
  EXPECT_TRUE(absl::StrContains(*exported, R"("data": [0.1, -2, 3e-45, "nan", "inf", "-inf", -0.0, 1e+38])"))
      << *exported;
  EXPECT_TRUE(absl::StrContains(*exported, R"("data": [true, false, true, false])")) << *exported;
  auto again = ImportJsonGraph(*exported, "", "exported");
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << *exported;
  ExpectSameGraph(g, **again);
  EXPECT_EQ(*ExportJsonGraph(**again), *exported);
}

// Every f16 and bf16 bit pattern (NaNs aside) survives export and import.
TEST(JsonRoundTripTest, EverySixteenBitFloatReadsBackExactly) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    Graph g("all16");
    Tensor t(dtype, {65536});
    int64_t n = 0;
    for (uint32_t bits = 0; bits < 65536; ++bits) {
      float f = dtype == DType::kF16 ? HalfBitsToFloat(bits) : BF16BitsToFloat(bits);
      if (!std::isnan(f)) t.data_as<uint16_t>()[n++] = static_cast<uint16_t>(bits);
    }
    Tensor values(dtype, {n});
    std::memcpy(values.data(), t.data(), n * 2);
    KILN_CHECK_OK(g.AddOutput(*g.AddConstant("c", std::move(values))));
    auto text = ExportJsonGraph(g);
    ASSERT_TRUE(text.ok());
    auto back = ImportJsonGraph(*text, "", "t");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE((*back)->FindNode("c")->value()->BitwiseEqual(*g.FindNode("c")->value()))
        << DTypeName(dtype);
  }
}

// The JSON in examples/ (written by hand for the CLI and benchmarks) imports.
TEST(JsonRoundTripTest, ExamplesImport) {
  std::string dir = std::string(KILN_SOURCE_DIR) + "/examples";
  int count = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++count;
    auto graph = ImportJsonGraphFile(entry.path().string());
    EXPECT_TRUE(graph.ok()) << graph.status();
    if (!graph.ok()) continue;
    auto text = ExportJsonGraph(**graph);
    auto again = ImportJsonGraph(*text, entry.path().parent_path().string(), "exported");
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*ExportJsonGraph(**again), *text) << entry.path();
  }
  EXPECT_GT(count, 0);
}

}  // namespace
}  // namespace kiln
