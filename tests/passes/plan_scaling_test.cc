// How planning time grows with graph size (issue 15): priority fusion on a chain of pointwise
// ops, and on a ladder (each node reads the previous two, so fusion weighs merges, recomputes
// and cycles), must plan 4x the nodes in under 8x the time (quadratic work would take 16x),
// within a generous bound, into regions of at most kMaxRegionOps ops. The graphs are the ones
// scripts/make-scaling-graphs.py writes. The disabled Table test prints the import, pass,
// plan and report times that docs/architecture.md quotes:
//   build/tests/passes/passes_test --gtest_also_run_disabled_tests --gtest_filter='PlanScaling.*'
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/compiler.h"
#include "api/fusion_report.h"
#include "passes/fusion/legality.h"
#include "passes/fusion/priority_fusion.h"
#include "passes/pass_pipeline.h"
#include "tests/passes/pass_test_util.h"

namespace kiln {
namespace {

// The JSON graph scripts/make-scaling-graphs.py writes for `kind` ("chain" or "ladder").
std::string ScalingGraphJson(const std::string& kind, int n) {
  static const char* kChainOps[] = {"add", "mul", "exp", "tanh"};
  static const char* kLadderOps[] = {"add", "mul", "maximum", "sub"};
  std::vector<std::string> nodes;
  std::string prev = "x", prev2 = "x";
  for (int i = 0; i < n; ++i) {
    std::string name = absl::StrCat("n", i), inputs;
    const char* op;
    if (kind == "chain") {
      op = kChainOps[i % 4];
      inputs = i % 4 == 0 ? absl::StrCat("\"", prev, "\",\"b\"")
               : i % 4 == 1 ? absl::StrCat("\"", prev, "\",\"half\"")
                            : absl::StrCat("\"", prev, "\"");
    } else {
      op = kLadderOps[i % 4];
      inputs = absl::StrCat("\"", prev, "\",\"", prev2, "\"");
    }
    nodes.push_back(absl::StrCat("{\"name\":\"", name, "\",\"op\":\"", op, "\",\"inputs\":[", inputs, "]}"));
    prev2 = prev;
    prev = name;
  }
  std::string inputs = "{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[1024,1024]}";
  std::string extra;
  if (kind == "chain") {
    inputs += ",{\"name\":\"b\",\"dtype\":\"f32\",\"shape\":[1024]}";
    extra = ",\"initializers\":[{\"name\":\"half\",\"dtype\":\"f32\",\"shape\":[],\"data\":[0.5]}]";
  }
  return absl::StrCat("{\"kiln_graph\":1,\"name\":\"", kind, n, "\",\"inputs\":[", inputs, "]", extra,
                      ",\"nodes\":[", absl::StrJoin(nodes, ","), "],\"outputs\":[\"", prev, "\"]}");
}

std::unique_ptr<Graph> ScalingGraph(const std::string& kind, int n) {
  auto g = ImportJsonGraph(ScalingGraphJson(kind, n), "");
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return nullptr;
  EXPECT_TRUE(DefaultPipeline().Run(**g, DebugOptions{}).ok());
  return std::move(*g);
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The fastest of `reps` plans of the graph, in seconds; the plan of the last one in `plan`.
double PlanSeconds(const Graph& g, int reps, FusionPlan* plan) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<FusionPlan> p = PlanFusion(g, H100Spec());
    best = std::min(best, SecondsSince(start));
    EXPECT_TRUE(p.ok()) << p.status();
    if (p.ok()) *plan = std::move(*p);
  }
  return best;
}

// The plan of an n-op chain or ladder: every region within the cap, and no more than twice
// the fewest kernels the cap allows (merges of similar size stop between half and all of it).
void ExpectCappedRegions(const FusionPlan& plan, int n) {
  const int fewest = (n + kMaxRegionOps - 1) / kMaxRegionOps;
  EXPECT_GE(plan.num_kernels(), fewest);
  EXPECT_LE(plan.num_kernels(), 2 * fewest);
  for (const Region& r : plan.regions) EXPECT_LE(r.nodes.size(), static_cast<size_t>(kMaxRegionOps));
}

// Plans `kind` at `small` and at 4x as many nodes; the larger must take less than `max_ratio`
// times as long (timer noise dominates below a few milliseconds: 2 ms stands in for a faster
// small plan) and under `max_s` seconds, and both must fuse as ExpectCappedRegions says.
void ExpectScaling(const std::string& kind, int small, int max_ratio, double max_s) {
  const int large = 4 * small;
  auto g_small = ScalingGraph(kind, small);
  auto g_large = ScalingGraph(kind, large);
  ASSERT_TRUE(g_small && g_large);
  FusionPlan plan_small, plan_large;
  const double t_small = PlanSeconds(*g_small, 3, &plan_small);
  const double t_large = PlanSeconds(*g_large, 2, &plan_large);
  ExpectCappedRegions(plan_small, small);
  ExpectCappedRegions(plan_large, large);
  EXPECT_EQ(plan_large.ops, large);
  EXPECT_LT(t_large, max_ratio * std::max(t_small, 0.002))
      << kind << ": " << small << " nodes plan in " << t_small << " s, " << large << " in " << t_large << " s";
#ifdef KILN_SANITIZED
  // An ASan+UBSan build (KILN_SANITIZE) runs this code about 10x slower: CI's fresh clone of
  // e7c2062 took 61.2 s for the ladder test against 5.6 s unsanitized, and the large ladder and
  // chain planned in 20.4 and 41.2 s, over a 4x allowance (20 and 40 s), with the two tests
  // side by side on 2 cores. The ratio above is the test of near-linear scaling; this bound
  // only catches a plan that hangs.
  max_s *= 12;
#endif
  EXPECT_LT(t_large, max_s) << kind << ": " << large << " nodes plan in " << t_large << " s";
}

// A chain merges regions of similar size, so every node is described about log N times:
// 4x the nodes take ~5x the time (measured 5.4x); quadratic work would take 16x.
TEST(PlanScaling, ChainPlansInNearLinearTime) { ExpectScaling("chain", 500, 8, 5.0); }

// A ladder grows one region a node at a time from the end, and every step describes that
// region for its new candidates; the cap bounds the region, so each step's work is bounded
// (before the cap: quadratic, 559 s for 10,000 nodes; before issue 15: cubic).
TEST(PlanScaling, LadderPlansInNearLinearTime) { ExpectScaling("ladder", 500, 8, 5.0); }

// Past ~20,000 ops the candidate list was the cost: kept as one sorted vector and scanned at
// every step, planning 5,000 -> 20,000 chain ops took 6.6x the time and `kiln dump` of
// 50,000 -> 200,000 10x (74 s). Blocks that keep their best saving make each about 4.4x.
TEST(PlanScaling, VeryLongChainPlansInNearLinearTime) { ExpectScaling("chain", 10000, 7, 10.0); }

// A 10,000-op chain: a 10,000-op region overflowed the elementwise emitter's stack (kiln
// compile: SIGSEGV) before the cap; now it is kernels of at most kMaxRegionOps ops.
TEST(PlanScaling, LongChainSplitsIntoCappedRegions) {
  auto g = ScalingGraph("chain", 10000);
  ASSERT_TRUE(g);
  absl::StatusOr<FusionPlan> plan = PlanFusion(*g, H100Spec());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ExpectCappedRegions(*plan, 10000);
  const FusionRecord* refusal = nullptr;
  for (const FusionRecord& r : plan->records) {
    if (r.rule == "region-size") refusal = &r;
  }
  ASSERT_NE(refusal, nullptr);
  EXPECT_EQ(refusal->verdict, "refuse");
  EXPECT_NE(refusal->reason.find("at most 128"), std::string::npos) << refusal->reason;
}

// Import, passes, plan and text report of both graphs at the sizes issue 15 names, or at
// KILN_SCALING_SIZES=100,300 for KILN_SCALING_KINDS=chain (or ladder).
TEST(PlanScaling, DISABLED_Table) {
  const char* sizes = std::getenv("KILN_SCALING_SIZES");
  std::vector<int> ns = {100, 300, 1000, 3000, 10000};
  if (sizes != nullptr) {
    ns.clear();
    for (const char* s = sizes; *s != 0;) {
      char* end;
      ns.push_back(static_cast<int>(std::strtol(s, &end, 10)));
      s = *end == ',' ? end + 1 : end;
    }
  }
  std::printf("%-7s %6s %9s %9s %9s %9s %8s\n", "graph", "N", "import_s", "passes_s", "plan_s", "report_s", "kernels");
  const char* kinds = std::getenv("KILN_SCALING_KINDS");
  for (const std::string kind : {"chain", "ladder"}) {
    if (kinds != nullptr && std::string(kinds).find(kind) == std::string::npos) continue;
    for (int n : ns) {
      const std::string json = ScalingGraphJson(kind, n);
      auto start = std::chrono::steady_clock::now();
      auto g = ImportJsonGraph(json, "");
      const double import_s = SecondsSince(start);
      ASSERT_TRUE(g.ok()) << g.status();
      start = std::chrono::steady_clock::now();
      ASSERT_TRUE(DefaultPipeline().Run(**g, DebugOptions{}).ok());
      const double passes_s = SecondsSince(start);
      start = std::chrono::steady_clock::now();
      absl::StatusOr<FusionPlan> plan = PlanFusion(**g, H100Spec());
      const double plan_s = SecondsSince(start);
      ASSERT_TRUE(plan.ok()) << plan.status();
      Analysis a;
      a.graph = std::move(*g);
      a.plan = std::move(*plan);
      start = std::chrono::steady_clock::now();
      const std::string report = FusionReport(a);
      const double report_s = SecondsSince(start);
      std::printf("%-7s %6d %9.3f %9.3f %9.3f %9.3f %8d\n", kind.c_str(), n, import_s, passes_s, plan_s, report_s,
                  a.plan.num_kernels());
      std::fflush(stdout);
      EXPECT_FALSE(report.empty());
    }
  }
}

}  // namespace
}  // namespace kiln
