// The ONNX importer's error rules and a few small models checked on the interpreter. The
// models are in tests/frontends/onnx_testdata/, written by scripts/make-onnx-testdata.py
// (expected values by onnx.reference.ReferenceEvaluator); truncated, non-ONNX and symlinked
// inputs are made here in a temporary folder. One property per test, said in its name.
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/onnx_import.h"
#include "frontends/onnx/onnx_tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "onnx/onnx_pb.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path kData = fs::path(KILN_SOURCE_DIR) / "tests/frontends/onnx_testdata";

absl::Status ImportStatus(const fs::path& path, const OnnxImportOptions& options = {}) {
  return ImportOnnxFile(path.string(), options).status();
}

std::string Payload(const absl::Status& status) {
  auto p = status.GetPayload(kOnnxUnsupportedPayload);
  return p ? std::string(*p) : "";
}

// A fresh temporary folder per test.
fs::path TempDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::temp_directory_path() / absl::StrCat("kiln_onnx_", info->name(), "_", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

Tensor ReadTensor(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::TensorProto proto;
  EXPECT_TRUE(in && proto.ParseFromIstream(&in)) << path;
  auto t = TensorFromOnnx(proto, "", false);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : Tensor();
}

// Float outputs: the reference evaluator computes in f32 step by step, kiln in double once.
constexpr double kRtol = 1e-4, kAtol = 1e-6;

void ExpectNear(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    double g = got.GetF64(i), w = want.GetF64(i);
    ASSERT_LE(std::abs(g - w), kAtol + kRtol * std::abs(w)) << what << " element " << i << ": " << g << " vs " << w;
  }
}

class OnnxValueTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxValueTest, MatchesTheOnnxReferenceEvaluator) {
  const fs::path dir = kData / "values" / GetParam();
  auto graph = ImportOnnxFile((dir / "model.onnx").string());
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::map<std::string, Tensor> inputs;
  for (size_t i = 0; i < (*graph)->inputs().size(); ++i) {
    inputs[(*graph)->inputs()[i]->name()] = ReadTensor(dir / absl::StrCat("input_", i, ".pb"));
  }
  auto got = Interpret(**graph, inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), (*graph)->outputs().size());
  for (size_t k = 0; k < got->size(); ++k) {
    ExpectNear((*got)[k], ReadTensor(dir / absl::StrCat("output_", k, ".pb")), absl::StrCat("output ", k));
  }
}

INSTANTIATE_TEST_SUITE_P(Models, OnnxValueTest,
                         ::testing::Values("gemm", "typed_initializers", "odd_names", "shape_plumbing",
                                           "attention_block_opset23", "cross_entropy_head",
                                           "reduce_min_axes_attribute", "channel_norms", "batchnorm_inference"));

TEST(OnnxImportTest, OnnxNamesBecomeValidKilnNames) {
  auto graph = ImportOnnxFile((kData / "values/odd_names/model.onnx").string());
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (const Node* node : (*graph)->nodes()) EXPECT_TRUE(IsValidName(node->name())) << node->name();
  EXPECT_EQ((*graph)->inputs()[0]->name(), "in_0");
  EXPECT_EQ((*graph)->outputs()[0].name, "v1");
}

TEST(OnnxImportTest, AttentionBlockImportsComposites) {
  auto graph = ImportOnnxFile((kData / "values/attention_block_opset23/model.onnx").string());
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::map<OpKind, int> count;
  for (const Node* node : (*graph)->nodes()) ++count[node->op()];
  EXPECT_EQ(count[OpKind::kLayerNorm], 1);
  EXPECT_EQ(count[OpKind::kRmsNorm], 1);
  EXPECT_EQ(count[OpKind::kGeluTanh], 1);
  EXPECT_EQ(count[OpKind::kAttention], 1);
  EXPECT_EQ(count[OpKind::kDropout], 0);  // inference: identity
}

TEST(OnnxImportTest, MissingFileIsNotFound) {
  EXPECT_EQ(ImportStatus(kData / "no_such_model.onnx").code(), absl::StatusCode::kNotFound);
}

TEST(OnnxImportTest, TruncatedFileFailsCleanly) {
  std::ifstream in(kData / "values/gemm/model.onnx", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const fs::path path = TempDir() / "truncated.onnx";
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  absl::Status s = ImportStatus(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("not a valid ONNX model"));
}

TEST(OnnxImportTest, NonOnnxFilesFailCleanly) {
  const fs::path dir = TempDir();
  std::ofstream(dir / "graph.onnx") << "{\"kiln_graph\": 1, \"nodes\": []}\n";
  absl::Status s = ImportStatus(dir / "graph.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("not a valid ONNX model"));
  std::ofstream(dir / "empty.onnx");
  EXPECT_EQ(ImportStatus(dir / "empty.onnx").code(), absl::StatusCode::kInvalidArgument);
  // A valid protobuf that is no model (a TensorProto).
  onnx::TensorProto t;
  t.set_name("x");
  t.add_dims(1);
  std::ofstream(dir / "tensor.onnx", std::ios::binary) << t.SerializeAsString();
  s = ImportStatus(dir / "tensor.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("not "));
}

TEST(OnnxImportTest, OpsetsOutside13To23AreUnsupported) {
  for (const char* name : {"opset12", "opset25"}) {
    absl::Status s = ImportStatus(kData / "errors" / absl::StrCat(name, ".onnx"));
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
    EXPECT_THAT(s.message(), HasSubstr("opsets 13 to 23"));
    EXPECT_EQ(Payload(s), absl::StrCat("opset ", name + 5));
  }
}

TEST(OnnxImportTest, UnknownDomainIsUnsupportedAndNamesTheNode) {
  absl::Status s = ImportStatus(kData / "errors/unknown_domain.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("node #0 \"fused0\" (FusedGemm)"));
  EXPECT_THAT(s.message(), HasSubstr("domain \"com.microsoft\""));
}

TEST(OnnxImportTest, ModelWithOnlyAForeignDomainIsUnsupported) {
  absl::Status s = ImportStatus(kData / "errors/foreign_domain_only.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("uses only the domain \"com.microsoft\""));
  EXPECT_EQ(Payload(s), "domain com.microsoft");
}

TEST(OnnxImportTest, InitializerDataThatDoesNotFillItsDimsIsAnError) {
  absl::Status s = ImportStatus(kData / "errors/raw_data_size.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("initializer \"w\": data has 20 bytes but FLOAT"));
  EXPECT_THAT(s.message(), HasSubstr("needs 24"));
  s = ImportStatus(kData / "errors/typed_field_count.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("initializer \"w\": float_data has 5 values but the dims hold 6"));
}

// Dims are the file's word: a few bytes may claim 2^39 elements. The data is checked against
// them before anything is allocated (issue 15: std::bad_alloc and an abort, exit 134).
TEST(OnnxImportTest, HugeInitializerDimsAreRefusedBeforeAllocating) {
  const fs::path dir = TempDir();
  for (bool raw : {false, true}) {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(17);
    onnx::GraphProto* g = m.mutable_graph();
    g->set_name("g");
    onnx::TensorProto* w = g->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(int64_t{1} << 20);
    w->add_dims(int64_t{1} << 19);
    if (raw) {
      w->set_raw_data(std::string(4, '\0'));
    } else {
      w->add_float_data(1.0f);
    }
    onnx::ValueInfoProto* out = g->add_output();
    out->set_name("w");
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    const fs::path path = dir / (raw ? "huge_raw.onnx" : "huge_typed.onnx");
    std::ofstream(path, std::ios::binary) << m.SerializeAsString();
    absl::Status s = ImportStatus(path);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr("initializer \"w\""));
    EXPECT_THAT(s.message(), HasSubstr(raw ? "needs 2199023255552" : "the dims hold 549755813888"));
  }
}

TEST(OnnxImportTest, ExtremeConstantOperandsAreErrorsOrValuesNeverOverflows) {
  // Found by probing the importer with extreme constants under UBSan (tests/fuzz/regressions/
  // onnx_import; ctest's fuzz_replay_onnx_import replays them): each overflowed an int64,
  // cast an out-of-range double or allocated from an unchecked length.
  const fs::path dir = fs::path(KILN_SOURCE_DIR) / "tests/fuzz/regressions/onnx_import";
  const std::pair<const char*, const char*> errors[] = {
      {"range_huge.onnx", "Range of 1e+15 elements is over kiln's limit of 67108864"},
      {"range_minmax.onnx", "Range of 1.84467e+19 elements is over kiln's limit"},
      {"range_float_nan.onnx", "Range of inf elements is over kiln's limit"},
      {"reshape_huge.onnx", "shape [1099511627776,1099511627776,-1] has more than 2^48 elements"},
      {"split_huge.onnx", "split sizes [9223372036854775807,4] must sum to 3"},
      {"float_constant_read_as_int.onnx", "start, limit and delta must have one dtype"},
  };
  for (const auto& [file, message] : errors) {
    absl::Status s = ImportStatus(dir / file);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << file << ": " << s;
    EXPECT_THAT(s.message(), HasSubstr(message)) << file;
  }
  // INT64_MIN mod -1 is 0; Trilu's k = INT64_MAX keeps everything; a slice step of INT64_MAX
  // takes one element.
  for (const char* file : {"mod_min.onnx", "trilu_kmax.onnx", "slice_extreme2.onnx"}) {
    absl::Status s = ImportStatus(dir / file);
    EXPECT_TRUE(s.ok() || s.code() == absl::StatusCode::kInvalidArgument ||
                s.code() == absl::StatusCode::kUnimplemented) << file << ": " << s;
  }
}

TEST(OnnxImportTest, UnsupportedOpListsTheClosestSupportedOnes) {
  absl::Status s = ImportStatus(kData / "errors/unsupported_op.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("node #0 \"my_norm\" (LayerNorm)"));
  EXPECT_THAT(s.message(), HasSubstr("LayerNormalization"));
  EXPECT_EQ(Payload(s), "op LayerNorm");
}

TEST(OnnxImportTest, UnboundSymbolicDimensionSaysHowToBindIt) {
  const fs::path path = kData / "errors/symbolic.onnx";
  absl::Status s = ImportStatus(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("\"x\" dimension 0 (\"batch\")"));
  EXPECT_THAT(s.message(), HasSubstr("--shape batch=8"));
  OnnxImportOptions by_dim;
  by_dim.input_shapes["batch"] = {3};
  auto g = ImportOnnxFile(path.string(), by_dim);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->inputs()[0]->shape(), (Shape{3, 4}));
  OnnxImportOptions by_input;
  by_input.input_shapes["x"] = {5, 4};
  g = ImportOnnxFile(path.string(), by_input);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->inputs()[0]->shape(), (Shape{5, 4}));
  OnnxImportOptions wrong_static;
  wrong_static.input_shapes["x"] = {5, 3};
  EXPECT_EQ(ImportStatus(path, wrong_static).code(), absl::StatusCode::kInvalidArgument);
  OnnxImportOptions unknown;
  unknown.input_shapes["seq"] = {3};
  s = ImportStatus(path, unknown);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("names neither"));
}

TEST(OnnxImportTest, ReshapeShapeMustBeConstant) {
  absl::Status s = ImportStatus(kData / "errors/reshape_dynamic_shape.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("node #0 \"reshape_dyn\" (Reshape): input 1 \"shape\" must be a constant"));
  EXPECT_THAT(s.message(), HasSubstr("the graph input \"shape\""));
}

TEST(OnnxImportTest, ConstantInputsFreezeConfigurationInputs) {
  OnnxImportOptions options;
  Tensor shape(DType::kI64, {2});
  shape.SetI64(0, 3);
  shape.SetI64(1, 2);
  options.constant_inputs["shape"] = shape;
  auto g = ImportOnnxFile((kData / "errors/reshape_dynamic_shape.onnx").string(), options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->outputs()[0].node->shape(), (Shape{3, 2}));
}

TEST(OnnxImportTest, TrainingDropoutRatioMustBeConstant) {
  absl::Status s = ImportStatus(kData / "errors/dropout_dynamic_ratio.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("input 1 \"ratio\" must be a constant"));
  EXPECT_THAT(s.message(), HasSubstr("compile-time attribute"));
}

TEST(OnnxImportTest, ChannelNormErrorsNameTheRule) {
  absl::Status s = ImportStatus(kData / "errors/group_norm_groups.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("\"gn0\""));
  EXPECT_THAT(s.message(), HasSubstr("num_groups 4 does not divide the 6 channels"));
  s = ImportStatus(kData / "errors/batchnorm_inference_running.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("only training_mode = 1 updates"));
}

TEST(OnnxImportTest, UnsupportedAttributeValuesNameTheAttribute) {
  absl::Status s = ImportStatus(kData / "errors/slice_negative_step.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("negative step -1"));
  s = ImportStatus(kData / "errors/attention_softcap.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("softcap"));
  s = ImportStatus(kData / "errors/unknown_attribute.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("\"label_smoothing\" is not supported"));
}

TEST(OnnxImportTest, DoubleGraphInputIsUnsupportedNamingTheInput) {
  absl::Status s = ImportStatus(kData / "errors/double_input.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("graph input \"x\": element type DOUBLE"));
}

TEST(OnnxImportTest, UndefinedNodeInputIsAnError) {
  absl::Status s = ImportStatus(kData / "errors/undefined_input.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("input 1 \"nowhere\" is not defined"));
}

// Three training-mode Dropouts of the same shape, #1 and #2 without a seed and #3 with seed 7
// (node #0 is the Identity in front): the seedless ones get the Philox keys (0, N + 1), so
// their masks differ; the explicit seed is kept.
TEST(OnnxImportTest, TrainingDropoutsWithoutASeedDrawDistinctMasks) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("dropouts");
  onnx::ValueInfoProto* in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(4096);
  onnx::TensorProto* training = g->add_initializer();
  training->set_name("training");
  training->set_data_type(onnx::TensorProto::BOOL);
  training->add_int32_data(1);
  onnx::NodeProto* id = g->add_node();
  id->set_op_type("Identity");
  id->add_input("x");
  id->add_output("x1");
  for (const char* out : {"a", "b", "c"}) {
    onnx::NodeProto* n = g->add_node();
    n->set_op_type("Dropout");
    n->add_input("x1");
    n->add_input("");
    n->add_input("training");
    n->add_output(out);
    if (std::string(out) == "c") {
      onnx::AttributeProto* seed = n->add_attribute();
      seed->set_name("seed");
      seed->set_type(onnx::AttributeProto::INT);
      seed->set_i(7);
    }
    g->add_output()->set_name(out);
  }
  auto graph = ImportOnnxModel(model, "", {}, "dropouts.onnx");
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<int64_t> seeds;
  for (const Graph::Output& o : (*graph)->outputs()) {
    ASSERT_EQ(o.node->op(), OpKind::kDropout) << o.name;
    EXPECT_EQ(o.node->attrs().GetInt("offset"), 0);
    seeds.push_back(o.node->attrs().GetInt("seed"));
  }
  EXPECT_EQ(seeds, (std::vector<int64_t>{int64_t{2} << 32, int64_t{3} << 32, 7}));
  Tensor x(DType::kF32, {4096});
  for (int64_t i = 0; i < 4096; ++i) x.SetF64(i, 1.0);
  auto out = Interpret(**graph, {{(*graph)->inputs()[0]->name(), x}});
  ASSERT_TRUE(out.ok()) << out.status();
  int64_t same = 0;
  for (int64_t i = 0; i < 4096; ++i) same += ((*out)[0].GetF64(i) == 0) == ((*out)[1].GetF64(i) == 0);
  // Independent fair masks agree on about half the elements (4 sigma: 128).
  EXPECT_NEAR(same, 2048, 128);
}

// ---- external data --------------------------------------------------------------------------

const fs::path kExt = kData / "external/model";

TEST(OnnxExternalDataTest, InsideTheModelFolderIsRead) {
  auto g = ImportOnnxFile((kExt / "ok.onnx").string());
  ASSERT_TRUE(g.ok()) << g.status();
  Tensor x(DType::kF32, {2, 3});
  auto out = Interpret(**g, {{(*g)->inputs()[0]->name(), x}});
  ASSERT_TRUE(out.ok()) << out.status();
  for (int i = 0; i < 6; ++i) EXPECT_EQ((*out)[0].GetF64(i), i + 0.5);
}

TEST(OnnxExternalDataTest, PathsLeavingTheModelFolderAreRefused) {
  for (const char* name : {"escape.onnx", "escape_nested.onnx", "absolute.onnx"}) {
    absl::Status s = ImportStatus(kExt / name);
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << name << ": " << s;
    EXPECT_THAT(s.message(), HasSubstr("initializer \"w\"")) << name;
  }
}

TEST(OnnxExternalDataTest, SymlinkPointingOutsideIsRefused) {
  const fs::path dir = TempDir() / "model";
  fs::create_directories(dir);
  fs::copy_file(kExt / "symlink.onnx", dir / "symlink.onnx");
  std::ofstream(dir.parent_path() / "secret.bin", std::ios::binary) << std::string(24, 'x');
  fs::create_symlink(dir.parent_path() / "secret.bin", dir / "link.bin");
  absl::Status s = ImportStatus(dir / "symlink.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_THAT(s.message(), HasSubstr("outside the model's folder"));
}

TEST(OnnxExternalDataTest, SizeAndRangeErrors) {
  absl::Status s = ImportStatus(kExt / "wrong_length.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("length 20 differs from the tensor's byte size 24"));
  s = ImportStatus(kExt / "past_end.onnx");
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(s.message(), HasSubstr("too short"));
  EXPECT_EQ(ImportStatus(kExt / "missing_file.onnx").code(), absl::StatusCode::kNotFound);
}

TEST(OnnxExternalDataTest, ParsedModelWithoutFolderRefusesExternalData) {
  std::ifstream in(kExt / "ok.onnx", std::ios::binary);
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromIstream(&in));
  absl::Status s = ImportOnnxModel(model, "", {}, "ok.onnx").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
}

}  // namespace
}  // namespace kiln
