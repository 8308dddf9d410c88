// kiln_graph_diff: random-graph differential testing (docs/testing.md). For each seed it
// builds RandomGraph(seed) (random_graph.h), random inputs (RandomInputs(graph, seed)), and
// checks, by mode:
//   plan     the pass pipeline and the fusion plan keep the meaning: the plan evaluated region
//            by region on the interpreter (InterpretAsPlanned, f32 inside a region, rounded
//            where the GPU stores) against the whole graph in f32 (PromoteTo32), at the graph
//            tolerance of ir/compare.h. CPU only, no NVRTC.
//   compile  plan, then every region lowered and compiled by NVRTC for --arch (no GPU).
//   gpu      compile for this GPU, run, and compare every output with the plan's reference.
// Any error (a pass, the planner, codegen, NVRTC, the runtime) fails the seed too: the
// generator only makes valid graphs, which kiln must take. A failing seed is minimised: the
// smallest op count (the generator's fuel) that still fails the same way, then outputs
// dropped one by one while it still fails; the result is written as IR text to
// --save DIR/seed-N.kir. --replay FILE... checks such files (inputs from the N in the name).
//
//   kiln_graph_diff [--mode plan|compile|gpu] [--seeds FIRST:COUNT] [--shard I/N] [--ops N]
//                   [--max-elements N] [--arch sm_90a] [--save DIR] [--write DIR] [--stats]
//                   [--no-matmul] [--seconds S] [--replay FILE...]
//
// --seconds S starts no seed after S seconds, so that a run fits a lease and still prints its
// summary, which then names the first seed it did not check. Prints one line per failure and
// a summary; exit 0 when every graph passed, 1 otherwise, 2 for bad arguments.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "api/compiler.h"
#include "api/reference.h"
#include "api/runtime.h"
#include "ir/base/status.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/promote.h"
#include "ir/verifier.h"
#include "passes/fusion/region_kind.h"
#include "tests/differential/random_graph.h"

namespace kiln {
namespace {

enum class Mode { kPlan, kCompile, kGpu };

struct Options {
  Mode mode = Mode::kPlan;
  uint64_t first = 0, count = 100;  // no seeds by default when --replay is given
  int shard = 0, shards = 1;
  std::optional<int> ops;
  int64_t max_elements = 1 << 16;
  bool matmul = true;
  std::string arch = "sm_90a";
  std::string save;
  std::string write;  // every generated graph as DIR/seed-N.kir (to look at, or to replay)
  bool stats = false;
  double seconds = 0;  // 0: no time budget
  std::vector<std::string> replay;
};

struct Verdict {
  enum Kind { kPass, kError, kMismatch } kind = kPass;
  std::string message;
  int regions = 0, kernels = 0;
  std::map<std::string, int> region_kinds;
};

Verdict Failed(Verdict::Kind kind, std::string message) {
  Verdict v;
  v.kind = kind;
  v.message = std::move(message);
  return v;
}

Verdict Fail(Verdict::Kind kind, const std::string& stage, const absl::Status& status) {
  return Failed(kind, absl::StrCat(stage, ": ", status.message()));
}

// The graph tolerance (ir/compare.h) of the least precise dtype `node` is computed in: its own
// or any computed value's it depends on (an f32 cast of a bf16 attention keeps the error of
// the bf16 probabilities inside it).
Tolerance PathTolerance(const Node* node) {
  Tolerance tol = GraphTolerance(node->dtype());
  std::vector<const Node*> stack = {node};
  std::set<const Node*> seen;
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second || n->op() == OpKind::kInput || n->op() == OpKind::kConstant) continue;
    if (IsFloat(n->dtype())) {
      const Tolerance t = GraphTolerance(n->dtype());
      tol.atol = std::max(tol.atol, t.atol);
      tol.rtol = std::max(tol.rtol, t.rtol);
    }
    for (const Node* o : n->operands()) stack.push_back(o);
  }
  return tol;
}

// The outputs `got` against `want`, output by output, at PathTolerance, widened per element
// by the graph's own sensitivity to rounding: twice |whole - stored|, where `whole` is the
// graph evaluated in f32 and `stored` the graph with every value rounded to its dtype (the
// interpreter as the graph is written). A well conditioned element gets almost nothing extra;
// where the graph amplifies rounding (a norm over a nearly constant row, a bf16 value read
// back as f32), the allowance is what rounding alone already moves it. NaN matches NaN; an
// infinity only the same infinity.
std::optional<Verdict> CompareAll(const Graph& g, const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                                  const std::vector<Tensor>& whole, const std::vector<Tensor>& stored,
                                  const std::string& what) {
  if (got.size() != want.size()) {
    return Failed(Verdict::kError, absl::StrCat(what, ": ", got.size(), " outputs, expected ", want.size()));
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const Tensor &a = got[i], &w = want[i];
    if (a.dtype() != w.dtype() || a.shape() != w.shape()) {
      return Failed(Verdict::kError, absl::StrCat(what, ": output ", g.outputs()[i].name, " has the wrong type"));
    }
    const Tolerance tol = PathTolerance(g.outputs()[i].node);
    int64_t bad = 0, worst = -1;
    double worst_excess = 0;
    for (int64_t e = 0; e < w.num_elements(); ++e) {
      const double x = a.GetF64(e), y = w.GetF64(e);
      if (std::isnan(x) && std::isnan(y)) continue;
      const double spread = std::fabs(whole[i].GetF64(e) - stored[i].GetF64(e));
      double allowed = tol.atol + tol.rtol * std::fabs(y) + 2 * (std::isnan(spread) ? INFINITY : spread);
      const bool ok = std::isinf(y) || std::isinf(x) ? (x == y || std::isinf(allowed)) : std::fabs(x - y) <= allowed;
      if (ok) continue;
      ++bad;
      const double excess = std::isfinite(x) && std::isfinite(y) ? std::fabs(x - y) - allowed : INFINITY;
      if (worst < 0 || excess > worst_excess) worst = e, worst_excess = excess;
    }
    if (bad) {
      return Failed(Verdict::kMismatch,
                    absl::StrFormat("%s: output %s %s%s: %d of %d elements outside %g + %g|ref| + 2|f32 - stored|; "
                                     "worst [%d]: got %g, want %g (f32 %g, stored %g)",
                                     what, g.outputs()[i].name, DTypeName(w.dtype()), ShapeToString(w.shape()), bad,
                                     w.num_elements(), tol.atol, tol.rtol, worst, a.GetF64(worst), w.GetF64(worst),
                                    whole[i].GetF64(worst), stored[i].GetF64(worst)));
    }
  }
  return std::nullopt;
}

Verdict Check(const Graph& graph, uint64_t input_seed, const Options& options) {
  if (absl::Status s = Verify(graph); !s.ok()) return Fail(Verdict::kError, "verify", s);
  const std::map<std::string, Tensor> inputs = RandomInputs(graph, input_seed);
  auto promoted = PromoteTo32(graph);
  if (!promoted.ok()) return Fail(Verdict::kError, "promote", promoted.status());
  auto whole = Interpret(**promoted, inputs);
  if (!whole.ok()) return Fail(Verdict::kError, "interpret", whole.status());
  auto stored = Interpret(graph, inputs);
  if (!stored.ok()) return Fail(Verdict::kError, "interpret", stored.status());

  Analysis analysis;
  std::optional<Program> program;
  if (options.mode == Mode::kPlan) {
    auto analyzed = Analyze(graph.Clone(), AnalyzeOptions{});
    if (!analyzed.ok()) return Fail(Verdict::kError, "analyze", analyzed.status());
    analysis = *std::move(analyzed);
  } else {
    CompileOptions compile;
    compile.arch = options.mode == Mode::kGpu ? "" : options.arch;
    compile.compile_threads = 1;
    auto compiled = Compile(graph.Clone(), compile);
    if (!compiled.ok()) return Fail(Verdict::kError, "compile", compiled.status());
    analysis = std::move(compiled->analysis);
    program = std::move(compiled->lowered.program);
  }
  Verdict verdict;
  verdict.regions = static_cast<int>(analysis.plan.regions.size());
  verdict.kernels = analysis.plan.num_kernels();
  for (const Region& r : analysis.plan.regions) ++verdict.region_kinds[RegionKindName(r.kind)];

  auto planned = InterpretAsPlanned(*analysis.graph, analysis.plan, inputs);
  if (!planned.ok()) return Fail(Verdict::kError, "interpret as planned", planned.status());
  if (auto bad = CompareAll(graph, *planned, *whole, *whole, *stored, "plan vs whole graph in f32")) return *bad;

  if (options.mode == Mode::kGpu) {
    auto executable = Executable::Load(*std::move(program));
    if (!executable.ok()) return Fail(Verdict::kError, "load", executable.status());
    std::vector<Tensor> in;
    for (const Node* n : graph.inputs()) in.push_back(inputs.at(n->name()));
    auto got = (*executable)->RunOnHost(in);
    if (!got.ok()) return Fail(Verdict::kError, "run", got.status());
    if (auto bad = CompareAll(graph, *got, *planned, *whole, *stored, "gpu vs plan")) return *bad;
  }
  return verdict;
}

// The graph with only the outputs in `keep`: the nodes they need, and the inputs those read.
absl::StatusOr<std::unique_ptr<Graph>> KeepOutputs(const Graph& graph, const std::vector<int>& keep) {
  auto fresh = std::make_unique<Graph>(graph.name());
  std::map<const Node*, Node*> made;
  for (Node* n : graph.PostOrder()) {
    if (n->op() == OpKind::kInput) continue;  // added when an operand first needs it
    std::vector<Node*> operands;
    for (Node* o : n->operands()) {
      if (!made.count(o)) {
      KILN_ASSIGN_OR_RETURN(made[o], fresh->AddInput(o->name(), o->dtype(), o->shape()));
    }
      operands.push_back(made.at(o));
    }
    if (n->op() == OpKind::kConstant) {
      KILN_ASSIGN_OR_RETURN(made[n], fresh->AddConstant(n->name(), *n->value()));
    } else {
      KILN_ASSIGN_OR_RETURN(made[n], fresh->AddNode(n->op(), operands, n->attrs(), n->name()));
    }
  }
  for (int i : keep) {
    const Graph::Output& out = graph.outputs()[i];
    KILN_RETURN_IF_ERROR(fresh->AddOutput(made.at(out.node), out.name));
  }
  fresh->RemoveDeadNodes();
  return fresh;
}

struct Minimised {
  std::unique_ptr<Graph> graph;
  Verdict verdict;
};

// The smallest graph from `seed` that still fails as `failing` did, with its verdict.
Minimised Minimise(uint64_t seed, int ops, const Options& options, Minimised failing) {
  const Verdict::Kind kind = failing.verdict.kind;
  auto fails = [&](std::unique_ptr<Graph> g) {
    Verdict v = Check(*g, seed, options);
    if (v.kind != kind) return false;
    failing = Minimised{std::move(g), std::move(v)};
    return true;
  };
  RandomGraphOptions generate{ops, options.max_elements, options.matmul};
  int lo = 0, hi = ops;  // the graph with hi ops fails; find the smallest such
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    generate.ops = mid;
    auto g = RandomGraph(seed, generate);
    if (g.ok() && fails(*std::move(g))) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  for (int i = static_cast<int>(failing.graph->outputs().size()) - 1; i >= 0 && failing.graph->outputs().size() > 1;
       --i) {
    std::vector<int> keep;
    for (int j = 0; j < static_cast<int>(failing.graph->outputs().size()); ++j) {
      if (j != i) keep.push_back(j);
    }
    auto smaller = KeepOutputs(*failing.graph, keep);
    if (smaller.ok()) fails(*std::move(smaller));
  }
  return failing;
}

bool ParseRange(const std::string& s, uint64_t* a, uint64_t* b, char sep) {
  std::vector<std::string> parts = absl::StrSplit(s, sep);
  return parts.size() == 2 && absl::SimpleAtoi(parts[0], a) && absl::SimpleAtoi(parts[1], b);
}

int Usage(const std::string& why) {
  std::cerr << "kiln_graph_diff: " << why
            << "\nusage: kiln_graph_diff [--mode plan|compile|gpu] [--seeds FIRST:COUNT] [--shard I/N] [--ops N]\n"
               "                       [--max-elements N] [--arch ARCH] [--save DIR] [--write DIR] [--stats]\n"
               "                       [--no-matmul] [--seconds S] [--replay FILE...]\n";
  return 2;
}

int Main(int argc, char** argv) {
  Options o;
  bool seeds_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--mode") {
      const std::string m = next();
      if (m == "plan") o.mode = Mode::kPlan;
      else if (m == "compile") o.mode = Mode::kCompile;
      else if (m == "gpu") o.mode = Mode::kGpu;
      else return Usage("--mode is plan, compile or gpu");
    } else if (a == "--seeds") {
      if (!ParseRange(next(), &o.first, &o.count, ':')) return Usage("--seeds FIRST:COUNT");
      seeds_given = true;
    } else if (a == "--shard") {
      uint64_t s, n;
      if (!ParseRange(next(), &s, &n, '/') || n == 0 || s >= n) return Usage("--shard I/N with I < N");
      o.shard = static_cast<int>(s), o.shards = static_cast<int>(n);
    } else if (a == "--ops") {
      int n;
      if (!absl::SimpleAtoi(next(), &n) || n < 0) return Usage("--ops N");
      o.ops = n;
    } else if (a == "--max-elements") {
      if (!absl::SimpleAtoi(next(), &o.max_elements) || o.max_elements < 1) return Usage("--max-elements N");
    } else if (a == "--arch") {
      o.arch = next();
    } else if (a == "--save") {
      o.save = next();
    } else if (a == "--write") {
      o.write = next();
    } else if (a == "--no-matmul") {
      o.matmul = false;
    } else if (a == "--stats") {
      o.stats = true;
    } else if (a == "--seconds") {
      if (!absl::SimpleAtod(next(), &o.seconds) || !(o.seconds > 0)) return Usage("--seconds S with S > 0");
    } else if (a == "--replay") {
      while (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) o.replay.push_back(argv[++i]);
    } else {
      return Usage(absl::StrCat("unknown argument ", a));
    }
  }
  if (!o.replay.empty() && !seeds_given) o.count = 0;
  if (o.mode == Mode::kGpu && !HaveGpu()) {
    std::cout << "kiln_graph_diff: no GPU; --mode gpu skipped\n";
    return 0;
  }

  const auto start = std::chrono::steady_clock::now();
  int graphs = 0, errors = 0, mismatches = 0;
  long ops_total = 0, regions_total = 0, kernels_total = 0;
  std::map<std::string, int> region_kinds;
  auto record = [&](const std::string& what, const Verdict& v, const Graph& g) {
    ++graphs;
    regions_total += v.regions;
    kernels_total += v.kernels;
    for (const auto& [k, n] : v.region_kinds) region_kinds[k] += n;
    for (const Node* n : g.nodes()) ops_total += n->op() != OpKind::kInput && n->op() != OpKind::kConstant;
    if (v.kind == Verdict::kPass) return;
    (v.kind == Verdict::kError ? errors : mismatches)++;
    std::cout << what << ": " << (v.kind == Verdict::kError ? "ERROR " : "MISMATCH ") << v.message << "\n";
  };

  for (const std::string& path : o.replay) {
    auto g = LoadGraph(path);
    if (!g.ok()) {
      std::cout << path << ": ERROR cannot read: " << g.status().message() << "\n";
      ++errors;
      continue;
    }
    uint64_t seed = 1;
    const std::string stem = std::filesystem::path(path).stem().string();
    if (stem.rfind("seed-", 0) == 0) (void)absl::SimpleAtoi(stem.substr(5), &seed);
    record(path, Check(**g, seed, o), **g);
  }
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::optional<uint64_t> stopped_at;  // the first seed --seconds left unchecked
  for (uint64_t seed = o.first; seed < o.first + o.count; ++seed) {
    if (static_cast<int>(seed % o.shards) != o.shard) continue;
    if (o.seconds > 0 && elapsed() >= o.seconds) {
      stopped_at = seed;
      break;
    }
    const int ops = o.ops.value_or(DefaultOpsForSeed(seed));
    auto g = RandomGraph(seed, RandomGraphOptions{ops, o.max_elements, o.matmul});
    if (!g.ok()) {
      std::cout << "seed " << seed << ": ERROR generator: " << g.status().message() << "\n";
      ++errors;
      continue;
    }
    if (!o.write.empty()) {
      std::filesystem::create_directories(o.write);
      std::ofstream(absl::StrCat(o.write, "/seed-", seed, ".kir")) << PrintGraph(**g);
    }
    Verdict v = Check(**g, seed, o);
    record(absl::StrCat("seed ", seed), v, **g);
    if (v.kind != Verdict::kPass && !o.save.empty()) {
      Minimised small = Minimise(seed, ops, o, Minimised{*std::move(g), v});
      std::filesystem::create_directories(o.save);
      const std::string file = absl::StrCat(o.save, "/seed-", seed, ".kir");
      std::ofstream(file) << PrintGraph(*small.graph);
      std::cout << "  minimised to " << small.graph->num_nodes() << " nodes: " << file << "  ("
                << small.verdict.message << ")\n";
    }
  }
  std::cout << absl::StrFormat(
      "graph_diff %s: %d graphs, %d ops, %d regions, %d kernels; %d errors, %d mismatches; %.1f s%s\n",
      o.mode == Mode::kPlan ? "plan" : o.mode == Mode::kCompile ? "compile" : "gpu", graphs, ops_total,
      regions_total, kernels_total, errors, mismatches, elapsed(),
      stopped_at ? absl::StrCat("; --seconds stopped it before seed ", *stopped_at) : "");
  if (o.stats) {
    for (const auto& [k, n] : region_kinds) std::cout << absl::StrFormat("  region kind %-16s %d\n", k, n);
  }
  return errors + mismatches == 0 ? 0 : 1;
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) { return kiln::Main(argc, argv); }
