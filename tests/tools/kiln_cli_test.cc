// The `kiln` binary end to end, run as a subprocess: what a user types, what they see, and
// the exit codes (0 ok, 1 failure, 2 bad input or usage).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "frontends/json/json_graph.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "runtime/artifact.h"
#include "runtime/cuda_driver.h"
#include "tools/tensor_io.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A fresh folder per test, under the test temp dir.
fs::path TestDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  fs::path dir = fs::path(::testing::TempDir()) / "kiln_cli_test" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

Result RunKiln(const std::string& args) {
  fs::path err_path = fs::path(::testing::TempDir()) / ("kiln_cli_test_stderr_" + std::to_string(getpid()));
  std::string command = Quote(KILN_BINARY) + " " + args + " 2>" + Quote(err_path.string());
  Result result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.out.append(buffer, n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  result.err.assign(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
  return result;
}

std::string Example(const std::string& name) {
  return (fs::path(KILN_SOURCE_DIR) / "examples" / name).string();
}

std::vector<std::string> SmallExamples() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(fs::path(KILN_SOURCE_DIR) / "examples" / "small")) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

void WriteText(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

class SmallExampleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SmallExampleTest, CheckPrintsTheGraph) {
  Result r = RunKiln("check " + Quote(Example("small/" + GetParam() + ".json")));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("graph " + GetParam() + "(", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("  return "), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");
}

TEST_P(SmallExampleTest, RunReferencePrintsStatistics) {
  std::string path = Example("small/" + GetParam() + ".json");
  Result r = RunKiln("run --reference --random 1 " + Quote(path));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto graph = ImportJsonGraphFile(path);
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (const Graph::Output& output : (*graph)->outputs()) {
    std::string header = output.name + ": " + DTypeName(output.node->dtype()) +
                         ShapeToString(output.node->shape()) + "\n  min=";
    EXPECT_NE(r.out.find(header), std::string::npos) << header << " missing in\n" << r.out;
  }
  EXPECT_NE(r.out.find("inputs: random, seed 1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" nan=0 inf=0 first=["), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("time: import "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" ms, interpret "), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Examples, SmallExampleTest, ::testing::ValuesIn(SmallExamples()),
                         [](const auto& info) { return info.param; });

TEST(KilnCliTest, EveryExampleHasASmallVersion) {
  std::vector<std::string> full;
  for (const auto& entry : fs::directory_iterator(fs::path(KILN_SOURCE_DIR) / "examples")) {
    if (entry.path().extension() == ".json") full.push_back(entry.path().stem().string());
  }
  std::sort(full.begin(), full.end());
  EXPECT_EQ(full, SmallExamples());
  EXPECT_NE(std::find(full.begin(), full.end(), "transformer_block"), full.end());
}

TEST(KilnCliTest, HelpAndVersion) {
  Result r = RunKiln("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("usage: kiln <command>"), std::string::npos) << r.out;
  for (const char* command : {"check", "run", "compile", "dump", "bench", "tune"}) {
    Result help = RunKiln(std::string(command) + " --help");
    EXPECT_EQ(help.exit_code, 0) << command;
    EXPECT_EQ(help.out.rfind(std::string("usage: kiln ") + command, 0), 0u) << help.out;
  }
  Result v = RunKiln("--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out.rfind("kiln ", 0), 0u) << v.out;
}

TEST(KilnCliTest, UsageErrorsExitTwo) {
  Result none = RunKiln("");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("usage:"), std::string::npos);

  Result unknown_command = RunKiln("frobnicate x.json");
  EXPECT_EQ(unknown_command.exit_code, 2);
  EXPECT_NE(unknown_command.err.find("unknown command \"frobnicate\""), std::string::npos);

  Result unknown_flag = RunKiln("run --reference --fast " + Quote(Example("small/softmax.json")));
  EXPECT_EQ(unknown_flag.exit_code, 2);
  EXPECT_NE(unknown_flag.err.find("kiln run: error: unknown flag --fast"), std::string::npos)
      << unknown_flag.err;

  Result check_flag = RunKiln("check --verbose " + Quote(Example("small/softmax.json")));
  EXPECT_EQ(check_flag.exit_code, 2);

  Result missing = RunKiln("check");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("kiln check: error: missing GRAPH"), std::string::npos) << missing.err;

  Result two = RunKiln("run --reference a.json b.json");
  EXPECT_EQ(two.exit_code, 2);

  Result no_value = RunKiln("run --reference " + Quote(Example("small/softmax.json")) + " --random");
  EXPECT_EQ(no_value.exit_code, 2);
  EXPECT_NE(no_value.err.find("--random needs a value"), std::string::npos) << no_value.err;

  Result bad_seed = RunKiln("run --reference --random x " + Quote(Example("small/softmax.json")));
  EXPECT_EQ(bad_seed.exit_code, 2);

  Result both = RunKiln("run --reference --random 1 --inputs /tmp " +
                        Quote(Example("small/softmax.json")));
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("exclude each other"), std::string::npos) << both.err;
}

TEST(KilnCliTest, BadGraphExitsTwoWithThePlace) {
  fs::path dir = TestDir();
  fs::path graph = dir / "bad.json";
  WriteText(graph, R"({"kiln_graph": 1, "name": "bad",
    "inputs": [{"name": "x", "dtype": "f32", "shape": [4]}],
    "nodes": [{"name": "y", "op": "gelu_tanhh", "inputs": ["x"]}],
    "outputs": ["y"]})");
  for (std::string command : {"check", "run"}) {
    Result r = RunKiln(command + (command == "run" ? " --reference " : " ") + Quote(graph.string()));
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_EQ(r.err.rfind("kiln " + command + ": error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("gelu_tanhh"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("nodes[0]"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  fs::path malformed = dir / "malformed.json";
  WriteText(malformed, "{\"kiln_graph\": 1, ");
  EXPECT_EQ(RunKiln("check " + Quote(malformed.string())).exit_code, 2);
  EXPECT_EQ(RunKiln("check " + Quote((dir / "missing.json").string())).exit_code, 2);
  WriteText(dir / "graph.txt", "graph g() {}");
  EXPECT_EQ(RunKiln("check " + Quote((dir / "graph.txt").string())).exit_code, 2);  // unknown format
}

// Tuning times kernels on a GPU: without one it says so (exit 1); its usage errors are exit 2.
TEST(KilnCliTest, TuneNeedsAGpu) {
  Result r = RunKiln("tune " + Quote(Example("small/softmax.json")));
  if (r.exit_code == 0) GTEST_SKIP() << "a GPU is present: tuning ran (scripts/gpu-check covers it)";
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no GPU"), std::string::npos) << r.err;
  EXPECT_EQ(RunKiln("tune " + Quote(Example("small/softmax.json")) + " --reps 0").exit_code, 2);
  EXPECT_EQ(RunKiln("compile " + Quote(Example("small/softmax.json")) + " --tune -o x.kiln").exit_code, 2);
}

// `kiln compile --arch` needs no GPU: it writes an artifact; its errors are named.
TEST(KilnCliTest, CompileWritesAnArtifactWithoutAGpu) {
  fs::path dir = TestDir();
  std::string out = (dir / "softmax.kiln").string();
  Result r = RunKiln("compile " + Quote(Example("small/softmax.json")) + " --arch sm_90a -o " + Quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 steps (1 kernels, 0 cuBLASLt)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote"), std::string::npos) << r.out;
  EXPECT_TRUE(LooksLikeArtifact(out));
  auto program = LoadArtifact(out);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->arch, "sm_90a");

  r = RunKiln("compile " + Quote(Example("small/softmax.json")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing -o"), std::string::npos) << r.err;
  r = RunKiln("compile " + Quote(Example("small/softmax.json")) + " --arch sm_1 -o " + Quote(out));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("kiln_row_"), std::string::npos) << "the failing kernel is named: " << r.err;
}

// `kiln compile --ledger` writes the fusion ledger and then one "lowered" record per region,
// with the kernels' compile figures; the artifact carries the same lowered records, and an
// attention region names the fallback it runs as.
TEST(KilnCliTest, CompileLedgerHasTheLoweredRecords) {
  fs::path dir = TestDir();
  const std::string out = (dir / "tb.kiln").string(), ledger = (dir / "tb.jsonl").string();
  Result r = RunKiln("compile " + Quote(Example("small/transformer_block.json")) + " --arch sm_90a -o " + Quote(out) +
                     " --ledger " + Quote(ledger));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(ledger);
  std::string line;
  int decisions = 0, lowered = 0, library = 0, with_registers = 0;
  while (std::getline(in, line)) {
    decisions += line.find("\"record\":\"decision\"") != std::string::npos;
    if (line.find("\"record\":\"lowered\"") == std::string::npos) continue;
    ++lowered;
    library += line.find("\"kind\":\"matmul\",\"template\":\"cuBLASLt\"") != std::string::npos;
    with_registers += line.find("\"registers\":") != std::string::npos;
  }
  EXPECT_GT(decisions, 10);
  // The small block's regions: its attention (head dim 10, not a multiple of 8: no tiled
  // template) lowered before fusion into 2 more matmuls, a softmax row kernel and 3 layout
  // kernels for the head split and merge (q's and v's copies out of qkv, one space, are one
  // kernel: sibling fusion); the MLP's gelu_tanh rides on fc1's cuBLASLt call.
  EXPECT_EQ(lowered, 12);
  EXPECT_EQ(library, 6);
  EXPECT_EQ(with_registers, 6);  // every generated kernel reports its registers
  auto program = LoadArtifact(out);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_NE(program->lowering_ledger.find("\"record\":\"lowered\""), std::string::npos);
}

// Where there is no driver, GPU commands say so (exit 1) instead of crashing.
TEST(KilnCliTest, GpuCommandsWithoutAGpuSaySo) {
  if (HaveGpu()) GTEST_SKIP() << "this machine has a GPU";
  for (const std::string cmd : {"run ", "bench ", "bench --flush-l2 ", "run --cuda-graph ", "bench --cuda-graph "}) {
    Result r = RunKiln(cmd + Quote(Example("small/softmax.json")));
    EXPECT_EQ(r.exit_code, 1) << cmd;
    EXPECT_NE(r.err.find("no GPU"), std::string::npos) << cmd << ": " << r.err;
  }
}

// `kiln bench --help` states both L2 policies and the flush size; the flag takes no value.
TEST(KilnCliTest, BenchHelpStatesTheL2Policy) {
  Result r = RunKiln("bench --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("[--flush-l2]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("256 MiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"l2\": \"flushed\" or \"warm\""), std::string::npos) << r.out;
  Result bad = RunKiln("bench --flush-l2=yes " + Quote(Example("small/softmax.json")));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

// `kiln run --help` and `kiln bench --help` describe --cuda-graph; it takes no value.
TEST(KilnCliTest, HelpDescribesCudaGraph) {
  for (const char* command : {"run", "bench"}) {
    Result r = RunKiln(std::string(command) + " --help");
    EXPECT_EQ(r.exit_code, 0) << command;
    EXPECT_NE(r.out.find("[--cuda-graph]"), std::string::npos) << command << ": " << r.out;
    EXPECT_NE(r.out.find("  --cuda-graph "), std::string::npos) << command << ": " << r.out;
  }
  EXPECT_NE(RunKiln("bench --help").out.find("\"cuda_graph_us\""), std::string::npos);
  Result bad = RunKiln("bench --cuda-graph=yes " + Quote(Example("small/softmax.json")));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

// The same values through --random, through --inputs (.npy and .bin mixed), and in process.
TEST(KilnCliTest, InputsAndOutputsRoundTrip) {
  fs::path dir = TestDir();
  std::string path = Example("small/transformer_block.json");
  auto graph = ImportJsonGraphFile(path);
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::map<std::string, Tensor> inputs = RandomInputs(**graph, 5);
  fs::path in = dir / "in";
  fs::create_directories(in);
  bool npy = true;
  for (const auto& [name, tensor] : inputs) {
    fs::path file = in / (name + (npy ? ".npy" : ".bin"));
    ASSERT_TRUE((npy ? WriteNpyTensor(file.string(), tensor) : WriteRawTensor(file.string(), tensor)).ok());
    npy = !npy;
  }
  Result random = RunKiln("run --reference --random 5 --outputs " + Quote((dir / "out_random").string()) +
                          " " + Quote(path));
  ASSERT_EQ(random.exit_code, 0) << random.err;
  Result read = RunKiln("run --reference --inputs " + Quote(in.string()) + " --outputs " +
                        Quote((dir / "out_read").string()) + " " + Quote(path));
  ASSERT_EQ(read.exit_code, 0) << read.err;
  EXPECT_NE(read.out.find("inputs: read from "), std::string::npos);

  auto expected = Interpret(**graph, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (size_t i = 0; i < expected->size(); ++i) {
    const std::string& name = (*graph)->outputs()[i].name;
    const Tensor& want = (*expected)[i];
    for (const fs::path& out : {dir / "out_random", dir / "out_read"}) {
      auto bin = ReadTensorFile((out / (name + ".bin")).string(), want.dtype(), want.shape());
      ASSERT_TRUE(bin.ok()) << bin.status();
      EXPECT_TRUE(bin->BitwiseEqual(want)) << out << " " << name << ".bin";
      auto npy_file = ReadTensorFile((out / (name + ".npy")).string(), want.dtype(), want.shape());
      ASSERT_TRUE(npy_file.ok()) << npy_file.status();
      EXPECT_TRUE(npy_file->BitwiseEqual(want)) << out << " " << name << ".npy";
    }
  }
  // The printed statistics agree too (everything after the inputs line, before the timing).
  auto stats = [](const std::string& out) {
    size_t begin = out.find('\n') + 1;
    return out.substr(begin, out.find("outputs: written") - begin);
  };
  EXPECT_EQ(stats(random.out), stats(read.out));
}

TEST(KilnCliTest, BadInputFilesExitTwo) {
  fs::path dir = TestDir();
  std::string graph = Quote(Example("small/bias_gelu.json"));  // x bf16[7,40], b bf16[40]
  auto run = [&]() { return RunKiln("run --reference --inputs " + Quote(dir.string()) + " " + graph); };

  Result missing = run();
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no file for graph input \"x\" (bf16[7,40])"), std::string::npos)
      << missing.err;

  ASSERT_TRUE(WriteRawTensor((dir / "x.bin").string(), Tensor(DType::kBF16, {7, 40})).ok());
  ASSERT_TRUE(WriteRawTensor((dir / "b.bin").string(), Tensor(DType::kBF16, {39})).ok());
  Result short_bin = run();
  EXPECT_EQ(short_bin.exit_code, 2);
  EXPECT_NE(short_bin.err.find("holds 78 bytes but bf16[40] needs 80"), std::string::npos)
      << short_bin.err;

  fs::remove(dir / "b.bin");
  ASSERT_TRUE(WriteNpyTensor((dir / "b.npy").string(), Tensor(DType::kF32, {40})).ok());
  Result wrong_dtype = run();
  EXPECT_EQ(wrong_dtype.exit_code, 2);
  EXPECT_NE(wrong_dtype.err.find("'<u2', bf16 bit patterns"), std::string::npos) << wrong_dtype.err;

  ASSERT_TRUE(WriteNpyTensor((dir / "b.npy").string(), Tensor(DType::kBF16, {40})).ok());
  EXPECT_EQ(run().exit_code, 0);
  ASSERT_TRUE(WriteRawTensor((dir / "b.bin").string(), Tensor(DType::kBF16, {40})).ok());
  Result ambiguous = run();
  EXPECT_EQ(ambiguous.exit_code, 2);
  EXPECT_NE(ambiguous.err.find("keep one"), std::string::npos) << ambiguous.err;

  Result not_a_dir = RunKiln("run --reference --inputs " + Quote((dir / "nope").string()) + " " + graph);
  EXPECT_EQ(not_a_dir.exit_code, 2);
}

// ---- ONNX models through the CLI (docs/onnx.md): a PyTorch-exported fixture and the
// importer's test models (tests/frontends/).

std::string OnnxFixture(const std::string& name) {
  return (fs::path(KILN_SOURCE_DIR) / "tests/frontends/onnx_fixtures" / name / "model.onnx").string();
}

TEST(KilnOnnxCliTest, CheckDumpCompileAndRunAnExportedBlock) {
  const std::string model = Quote(OnnxFixture("gpt2_sdpa_opset23"));
  Result check = RunKiln("check " + model);
  ASSERT_EQ(check.exit_code, 0) << check.err;
  EXPECT_NE(check.out.find("layer_norm("), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("attention("), std::string::npos) << check.out;

  Result dump = RunKiln("dump " + model);
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  // f32 attention runs in the tiled template (3xTF32): the layouts around it fold in.
  const size_t lower = dump.out.find("lower_attention");
  ASSERT_NE(lower, std::string::npos) << dump.out;
  EXPECT_NE(dump.out.substr(lower, dump.out.find(',', lower) - lower).find("(unchanged)"), std::string::npos)
      << dump.out;
  EXPECT_NE(dump.out.find("template attention.cuh"), std::string::npos) << dump.out;
  EXPECT_NE(dump.out.find("-> 8 kernels"), std::string::npos) << dump.out;

  fs::path dir = TestDir();
  std::string artifact = (dir / "gpt2.kiln").string();
  Result compile = RunKiln("compile " + model + " --arch sm_90a -o " + Quote(artifact));
  ASSERT_EQ(compile.exit_code, 0) << compile.err;
  auto program = LoadArtifact(artifact);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->arch, "sm_90a");

  Result run = RunKiln("run --reference --random 2 " + model);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find(": f32[2,8,64]\n  min="), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(" nan=0 inf=0 first=["), std::string::npos) << run.out;
}

TEST(KilnOnnxCliTest, UnboundSymbolicDimensionExitsTwoNamingShape) {
  const std::string model =
      Quote((fs::path(KILN_SOURCE_DIR) / "tests/frontends/onnx_testdata/errors/symbolic.onnx").string());
  for (std::string command : {"check ", "dump ", "run --reference "}) {
    Result r = RunKiln(command + model);
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_NE(r.err.find("\"batch\""), std::string::npos) << command << r.err;
    EXPECT_NE(r.err.find("--shape batch=8"), std::string::npos) << command << r.err;
    EXPECT_EQ(r.out, "") << command;
  }
  Result bound = RunKiln("check --shape batch=3 " + model);
  ASSERT_EQ(bound.exit_code, 0) << bound.err;
  EXPECT_NE(bound.out.find("f32[3,4]"), std::string::npos) << bound.out;
}

// `kiln check --json OUT` writes the imported ONNX graph in kiln's JSON format (weights in
// OUT's side file), which reads back as the same graph and computes the same.
TEST(KilnOnnxCliTest, CheckJsonWritesTheGraphInKilnsFormat) {
  const std::string model = Quote(OnnxFixture("gpt2_sdpa_opset23"));
  fs::path dir = TestDir();
  fs::path json = dir / "block.json";
  Result onnx = RunKiln("check " + model + " --json " + Quote(json.string()));
  ASSERT_EQ(onnx.exit_code, 0) << onnx.err;
  EXPECT_NE(onnx.err.find("wrote " + json.string()), std::string::npos) << onnx.err;
  EXPECT_TRUE(fs::exists(dir / "block.bin")) << "the weights' side file";
  Result again = RunKiln("check " + Quote(json.string()));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, onnx.out);
  auto stats = [](const std::string& out) { return out.substr(0, out.find("time: ")); };
  Result run_onnx = RunKiln("run --reference --random 4 " + model);
  Result run_json = RunKiln("run --reference --random 4 " + Quote(json.string()));
  ASSERT_EQ(run_onnx.exit_code, 0) << run_onnx.err;
  ASSERT_EQ(run_json.exit_code, 0) << run_json.err;
  EXPECT_EQ(stats(run_json.out), stats(run_onnx.out));

  Result unwritable = RunKiln("check " + model + " --json " + Quote((dir / "no/such/dir/g.json").string()));
  EXPECT_EQ(unwritable.exit_code, 1);
  EXPECT_NE(unwritable.err.find("kiln check: error: --json"), std::string::npos) << unwritable.err;
  Result clash = RunKiln("check " + model + " --json " + Quote((dir / "block.bin").string()));
  EXPECT_EQ(clash.exit_code, 2);
  EXPECT_NE(clash.err.find("not ending in .bin"), std::string::npos) << clash.err;
}


// `kiln dump`: the fusion report and its formats, end to end.
TEST(KilnDumpTest, ReportShowsRegionsRefusalsAndSummary) {
  Result r = RunKiln("dump " + Quote(Example("transformer_block.json")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("region 0  row_reduction [2048 rows x 1024]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lower_attention"), std::string::npos);
  EXPECT_NE(r.out.find("consumer-matmul: consumer is a matmul"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-> 7 kernels"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("attention [2048,1024]  template attention.cuh"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("predicted"), std::string::npos);
  EXPECT_NE(r.out.find("passes: canonicalize "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" ms, match_attention "), std::string::npos) << r.out;  // each pass with its time
  EXPECT_NE(r.out.find("  row fit: row of 1024 bf16 values x 1 input fits the register budget"), std::string::npos)
      << r.out;
}

// A `kiln bench --json` record puts the measured time next to each prediction; a record of
// another graph is refused.
TEST(KilnDumpTest, MeasuredTimesSitNextToPredictions) {
  fs::path dir = TestDir();
  std::string bench = (dir / "bench.json").string();
  std::ofstream(bench) << R"({"graph": "softmax", "device": "Test GPU", "graph_us": 12.5, "steps": [
      {"region": 0, "label": "r0", "kind": "kiln_row_x", "predicted_us": 3.0, "measured_us": 12.0, "bytes": 1, "flops": 0}]})";
  Result r = RunKiln("dump " + Quote(Example("small/softmax.json")) + " --measured " + Quote(bench));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("measured:  12.00 us on Test GPU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("measured: 12.50 us end to end"), std::string::npos) << r.out;
  r = RunKiln("dump " + Quote(Example("small/layernorm.json")) + " --measured " + Quote(bench));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("recorded for graph 'softmax'"), std::string::npos) << r.err;
}

TEST(KilnDumpTest, JsonHasRegionsWithKindsAndDecisions) {
  Result r = RunKiln("dump --format json " + Quote(Example("small/add_rmsnorm.json")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("{\"graph\":\"add_rmsnorm\"", 0), 0u) << r.out.substr(0, 200);
  EXPECT_NE(r.out.find("\"regions\":[{\"record\":\"region\",\"id\":0,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"kind\":\"row_reduction\",\"template\""), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("region_kind"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"decisions\":["), std::string::npos);
}

// --code shows each kernel region's generated source after the report; library calls say what
// runs instead.
TEST(KilnDumpTest, CodeShowsEveryGeneratedKernel) {
  Result r = RunKiln("dump " + Quote(Example("small/transformer_block.json")) + " --code");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t kernels = 0;
  for (size_t at = r.out.find("extern \"C\" __global__"); at != std::string::npos;
       at = r.out.find("extern \"C\" __global__", at + 1)) {
    ++kernels;
  }
  // the two norms, the softmax, 3 head layout kernels (q's and v's copies are one; gelu: cuBLASLt epilogue)
  EXPECT_EQ(kernels, 6u) << r.out;
  EXPECT_NE(r.out.find("==== region 1 matmul: runs as cuBLASLt (no generated kernel)"), std::string::npos) << r.out;
}

// Rotary embeddings as ONNX exporters write them (Slice, Neg, Concat, Mul, Add): one pointwise
// kernel whose Body is index arithmetic, straight-line (no loop: the template's grid-stride
// loop is the only one).
TEST(KilnDumpTest, RotaryEmbeddingIsOneKernelWithoutLoops) {
  Result r = RunKiln("dump " + Quote((fs::path(KILN_SOURCE_DIR) / "tests/tools/testdata/rotary.json").string()) +
                     " --code");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("summary: 7 ops -> 1 kernel;"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ops (7): q1=slice q2=slice neg_q2=neg q_cos=mul rotated=concat rot_sin=mul q_rope=add"),
            std::string::npos)
      << r.out;
  const size_t body = r.out.find("struct Body {");
  ASSERT_NE(body, std::string::npos) << r.out;
  const std::string code = r.out.substr(body, r.out.find("\n};", body) - body);
  EXPECT_EQ(code.find("for ("), std::string::npos) << code;
  EXPECT_EQ(code.find("while"), std::string::npos) << code;
  // Vectorised through the layout plan (the halves are multiples of the vector): 16-byte loads,
  // the concat as one select per vector with its pieces' loads guarded.
  EXPECT_NE(code.find("static constexpr int kV = 8;"), std::string::npos) << code;
  EXPECT_NE(code.find("kiln::LoadVec<__nv_bfloat16, 8>(in0 + (g0 ? "), std::string::npos) << code;
  EXPECT_NE(code.find("'s piece"), std::string::npos) << code;
}

// --candidates lists each kernel's tuning candidates, the default first, with the model's time
// for each of a column reduction's (the default's equal to the region's prediction).
TEST(KilnDumpTest, CandidatesShowTheModelsPriceOfEachColumnLaunch) {
  fs::path dir = TestDir();
  WriteText(dir / "c.json", R"({"kiln_graph": 1, "name": "c",
    "inputs": [{"name": "x", "dtype": "f32", "shape": [32768, 768]}],
    "nodes": [{"name": "y", "op": "reduce_max", "inputs": ["x"], "attrs": {"axes": [0]}}],
    "outputs": ["y"]})");
  Result r = RunKiln("dump " + Quote((dir / "c.json").string()) + " --device h200 --candidates");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t list = r.out.find("==== region 0 column_reduction: ");
  ASSERT_NE(list, std::string::npos) << r.out;
  const size_t predicted = r.out.find("  predicted: ");
  ASSERT_NE(predicted, std::string::npos) << r.out;
  const std::string us = r.out.substr(predicted + 13, r.out.find(" us", predicted) - predicted - 13);
  const size_t first = r.out.find('\n', list) + 1;
  const std::string line = r.out.substr(first, r.out.find('\n', first) - first);
  EXPECT_NE(line.find(absl::StrFormat("pred %.1f us  [", std::stod(us))), std::string::npos) << line;
  EXPECT_NE(line.find("  (default)"), std::string::npos) << line;
  EXPECT_NE(line.find(" blocks, "), std::string::npos) << line;  // the terms the price rests on
  size_t priced = 0;
  for (size_t at = r.out.find("  pred ", list); at != std::string::npos; at = r.out.find("  pred ", at + 1)) ++priced;
  EXPECT_GE(priced, 10u) << r.out;
}

// A transpose feeding an add: one kernel, the tiled one, and the report says what is staged.
TEST(KilnDumpTest, TransposeFeedingAnAddIsTiled) {
  fs::path dir = TestDir();
  WriteText(dir / "t.json", R"({"kiln_graph": 1, "name": "t",
    "inputs": [{"name": "x", "dtype": "f32", "shape": [512, 256]}, {"name": "y", "dtype": "f32", "shape": [256, 512]}],
    "nodes": [{"name": "t", "op": "transpose", "inputs": ["x"], "attrs": {"perm": [1, 0]}},
              {"name": "z", "op": "add", "inputs": ["t", "y"]}],
    "outputs": ["z"]})");
  Result r = RunKiln("dump " + Quote((dir / "t.json").string()) + " --code");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("summary: 2 ops -> 1 kernel;"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  layout: tiled transpose over [256,512] (a = axis 1, b = axis 0): x staged through shared "
                       "memory, coalesced along b"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("kiln::TiledTransposeKernel<Body, Body::Tile>(body, count);"), std::string::npos) << r.out;
}

TEST(KilnDumpTest, JsonLinesAndDotFormats) {
  Result lines = RunKiln("dump --format jsonl " + Quote(Example("small/softmax.json")));
  ASSERT_EQ(lines.exit_code, 0) << lines.err;
  EXPECT_NE(lines.out.find("{\"record\":\"decision\",\"step\":0,\"event\":\"candidate\""), std::string::npos);
  EXPECT_NE(lines.out.find("\n{\"record\":\"region\""), std::string::npos);
  Result dot = RunKiln("dump --format dot " + Quote(Example("small/softmax.json")));
  ASSERT_EQ(dot.exit_code, 0) << dot.err;
  EXPECT_EQ(dot.out.rfind("digraph", 0), 0u);
  EXPECT_NE(dot.out.find("subgraph cluster_0"), std::string::npos);
}

TEST(KilnDumpTest, WhyExplainsEveryNodeAndNamesUnknownOnes) {
  Result r = RunKiln("dump --why y.exp " + Quote(Example("small/softmax.json")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("is in region 0 (row_reduction)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FUSED"), std::string::npos) << r.out;
  Result input = RunKiln("dump --why x " + Quote(Example("small/softmax.json")));
  EXPECT_EQ(input.exit_code, 0);
  EXPECT_NE(input.out.find("graph input"), std::string::npos);
  Result missing = RunKiln("dump --why y.nope " + Quote(Example("small/softmax.json")));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no node \"y.nope\""), std::string::npos) << missing.err;
}

// --why on a node of the input graph a pass removed follows its value to the node that holds
// it; on a recomputed node it lists every region that computes it.
TEST(KilnDumpTest, WhyFollowsRemovedNodesAndListsEveryRegionOfARecomputedOne) {
  fs::path graph = TestDir() / "why.json";
  std::ofstream(graph) << R"({"kiln_graph": 1, "name": "why",
    "inputs": [{"name": "x", "dtype": "f32", "shape": [1024, 1024]}, {"name": "w", "dtype": "f32", "shape": [1024, 1024]}],
    "nodes": [{"name": "c", "op": "cast", "inputs": ["x"], "attrs": {"dtype": "f32"}},
              {"name": "a", "op": "neg", "inputs": ["c"]},
              {"name": "a2", "op": "neg", "inputs": ["c"]},
              {"name": "u", "op": "add", "inputs": ["a", "w"]},
              {"name": "m", "op": "matmul", "inputs": ["u", "w"]},
              {"name": "v", "op": "mul", "inputs": ["a2", "m"]}],
    "outputs": ["v"]})";
  Result cast = RunKiln("dump --why c " + Quote(graph.string()));
  ASSERT_EQ(cast.exit_code, 0) << cast.err;
  EXPECT_EQ(cast.out.rfind("node c was removed by canonicalize; its value is now x\nnode x: f32[1024,1024] = input()", 0),
            0u) << cast.out;
  Result duplicate = RunKiln("dump --why a2 " + Quote(graph.string()));
  ASSERT_EQ(duplicate.exit_code, 0) << duplicate.err;
  EXPECT_EQ(duplicate.out.rfind("node a2 was removed by cse; its value is now a\nnode a: f32[1024,1024] = neg(x)", 0),
            0u) << duplicate.out;
  EXPECT_NE(duplicate.out.find("is recomputed in 2 regions"), std::string::npos) << duplicate.out;
  EXPECT_NE(duplicate.out.find("  is in region 0 (pointwise) with: a, u"), std::string::npos) << duplicate.out;
  EXPECT_NE(duplicate.out.find("  is in region 2 (pointwise) with: a, v"), std::string::npos) << duplicate.out;
}

TEST(KilnDumpTest, UnknownDisabledPassIsAUsageError) {
  setenv("KILN_DISABLE_PASSES", "cse,no_such_pass", 1);
  Result r = RunKiln("dump " + Quote(Example("small/softmax.json")));
  unsetenv("KILN_DISABLE_PASSES");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown pass \"no_such_pass\"; valid names are canonicalize, constant_fold, cse"),
            std::string::npos) << r.err;
}

TEST(KilnDumpTest, AfterShowsTheGraphAfterAPass) {
  Result r = RunKiln("dump --after decompose " + Quote(Example("small/layernorm.json")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("reduce_mean"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("layer_norm("), std::string::npos) << r.out;
  Result bad = RunKiln("dump --after nosuchpass " + Quote(Example("small/layernorm.json")));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("canonicalize"), std::string::npos) << bad.err;
}

TEST(KilnDumpTest, BadUsageExitsTwo) {
  EXPECT_EQ(RunKiln("dump --format yaml " + Quote(Example("small/softmax.json"))).exit_code, 2);
  EXPECT_EQ(RunKiln("dump --device a100 " + Quote(Example("small/softmax.json"))).exit_code, 2);
  EXPECT_EQ(RunKiln("dump").exit_code, 2);
}

// --device auto prices on this GPU's query, or on the h100 spec without a GPU, and says which.
TEST(KilnDumpTest, DeviceAutoNamesWhatItPricedOn) {
  Result r = RunKiln("dump --device auto " + Quote(Example("small/softmax.json")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string header = r.out.substr(0, r.out.find('\n'));
  bool gpu = header.find("(sm_") != std::string::npos;
  EXPECT_TRUE(gpu || header.find("h100 (auto: no GPU)") != std::string::npos) << header;
}

TEST(KilnDumpTest, FuelStopsFusionAndSaysSo) {
  std::string command = "env KILN_FUSION_FUEL=0 " + Quote(KILN_BINARY) + " dump " + Quote(Example("small/layernorm.json"));
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0);
  EXPECT_NE(out.find("[stopped by KILN_FUSION_FUEL]"), std::string::npos) << out;
  EXPECT_NE(out.find("13 ops -> 13 kernels"), std::string::npos) << out;  // bf16: with its f32 casts
}

TEST(KilnDumpTest, SvgRendersWhenGraphvizIsInstalled) {
  if (std::system("command -v dot >/dev/null 2>&1") != 0) GTEST_SKIP() << "graphviz's dot is not installed";
  fs::path svg = TestDir() / "block.svg";
  Result r = RunKiln("dump --svg " + Quote(svg.string()) + " " + Quote(Example("small/transformer_block.json")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(svg);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("<svg"), std::string::npos);
  EXPECT_NE(text.find("region 0"), std::string::npos);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// One exit-code contract for every command that reads a graph (issue 15): bad input is exit 2
// with the same message, whichever command read the file.
TEST(KilnCliTest, BadInputIsExitTwoWithOneMessageFromEveryCommand) {
  fs::path dir = TestDir();
  WriteText(dir / "no_outputs.json",
            R"({"kiln_graph": 1, "inputs": [{"name": "x", "dtype": "f32", "shape": [4]}], "outputs": []})");
  WriteText(dir / "malformed.json", R"({"kiln_graph": 1, "nodes": [)");
  WriteText(dir / "unknown_op.json", R"({"kiln_graph": 1, "inputs": [{"name": "x", "dtype": "f32", "shape": [4]}],
      "nodes": [{"name": "y", "op": "frobnicate", "inputs": ["x"]}], "outputs": ["y"]})");
  const std::string unsupported_domain =
      (fs::path(KILN_SOURCE_DIR) / "tests/frontends/onnx_testdata/errors/unknown_domain.onnx").string();
  for (const std::string& file : {(dir / "no_outputs.json").string(), (dir / "malformed.json").string(),
                                  (dir / "unknown_op.json").string(), unsupported_domain}) {
    std::string first_message;
    for (const std::string command : {"check", "dump", "compile", "run", "bench", "tune"}) {
      const std::string extra = command == "compile" ? " --arch sm_90a -o " + Quote((dir / "x.kiln").string()) : "";
      Result r = RunKiln(command + " " + Quote(file) + extra);
      EXPECT_EQ(r.exit_code, 2) << command << " " << file << ": " << r.err;
      const std::string prefix = "kiln " + command + ": error: ";
      ASSERT_EQ(r.err.rfind(prefix, 0), 0u) << command << " " << file << ": " << r.err;
      const std::string message = r.err.substr(prefix.size());
      if (first_message.empty()) first_message = message;
      EXPECT_EQ(message, first_message) << command << " " << file;
    }
  }
}

// The rest of the contract: a good graph is 0 from the CPU commands, and the GPU commands
// say there is no GPU with 1 (or run: 0 where there is one).
TEST(KilnCliTest, GoodInputIsZeroAndNoGpuIsOne) {
  const std::string graph = Quote(Example("small/softmax.json"));
  for (const std::string command : {"check", "dump"}) {
    Result r = RunKiln(command + " " + graph);
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
  }
  for (const std::string command : {"run", "bench", "tune"}) {
    Result r = RunKiln(command + " " + graph);
    if (r.exit_code == 0) continue;  // a GPU machine
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.err;
    EXPECT_NE(r.err.find("no GPU"), std::string::npos) << command << ": " << r.err;
  }
}

// Eight `kiln compile`s at once on one cache directory: each succeeds, and every entry they
// leave is whole (entries are renamed into place), so a ninth compile takes every kernel from
// the disk and finds nothing corrupt.
TEST(KilnCliTest, EightConcurrentCompilesShareOneCacheDirectory) {
  const fs::path dir = TestDir();
  const std::string cache = (dir / "cache").string(), graph = Quote(Example("small/transformer_block.json"));
  const std::string compile = "env KILN_CACHE_DIR=" + Quote(cache) + " KILN_DUMP=cache " + Quote(KILN_BINARY) +
                              " compile " + graph + " --arch sm_90a -o ";
  std::string script;
  for (int i = 0; i < 8; ++i) {
    const std::string n = std::to_string(i);
    script += "(" + compile + Quote((dir / (n + ".kiln")).string()) + " >" + Quote((dir / (n + ".log")).string()) +
              " 2>&1; echo $? >" + Quote((dir / (n + ".rc")).string()) + ") & ";
  }
  ASSERT_EQ(std::system((script + "wait").c_str()), 0);
  for (int i = 0; i < 8; ++i) {
    std::ifstream rc(dir / (std::to_string(i) + ".rc")), log(dir / (std::to_string(i) + ".log"));
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    int code = -1;
    rc >> code;
    EXPECT_EQ(code, 0) << "compile " << i << ": " << text;
    EXPECT_EQ(text.find("corrupt"), std::string::npos) << "compile " << i << ": " << text;
  }
  FILE* pipe = popen((compile + Quote((dir / "9.kiln").string()) + " 2>&1").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) out.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0) << out;
  EXPECT_NE(out.find("kernels: 0 compiled by NVRTC"), std::string::npos) << out;
  EXPECT_EQ(out.find("corrupt"), std::string::npos) << out;
}

}  // namespace
}  // namespace kiln
