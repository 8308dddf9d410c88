// The row kernel's on-chip rule (passes/cost/row_fit.h) on the fixed h100 spec (65536
// registers per SM: up to 512 threads x 64 cached f32 values per row), against hand-computed
// layouts; and its two callers agreeing: the cost model's price and the kernel codegen emits.
#include "passes/cost/row_fit.h"
#include "passes/fusion/reduce_placement.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "codegen/emit_kernel.h"
#include "codegen/kernel_params.h"
#include "passes/cost/cost_model.h"
#include "passes/fusion/priority_fusion.h"
#include "passes/pass_pipeline.h"
#include "tests/passes/pass_test_util.h"

namespace kiln {
namespace {

using Row = testing::GraphRegion;

Row WholeGraph(const std::string& text) {
  Row row;
  row.graph = testing::Parse(text);
  if (!row.graph) return row;
  row.region = testing::WholeRegion(*row.graph);
  EXPECT_EQ(row.region.kind, RegionKind::kRowReduction) << text;
  return row;
}

// sum over the row of the product of `inputs` row-shaped tensors [4096, n]: a per-row output.
Row ProductSum(int64_t n, int inputs, const char* dtype = "f32") {
  std::string params, body;
  std::string acc = "x0";
  for (int i = 0; i < inputs; ++i) absl::StrAppendFormat(&params, "%sx%d: %s[4096,%d]", i ? ", " : "", i, dtype, n);
  for (int i = 1; i < inputs; ++i) {
    absl::StrAppendFormat(&body, "    p%d: %s[4096,%d] = mul(%s, x%d)\n", i, dtype, n, acc, i);
    acc = absl::StrCat("p", i);
  }
  return WholeGraph(absl::StrFormat("graph g(%s) {\n%s    s: %s[4096] = reduce_sum(%s) {axes = [1], keep_dims = false}\n"
                                    "    return s\n  }",
                                    params, body, dtype, acc));
}

// The maximum of each row of [4096, n]: one pass, only a per-row output.
Row RowMax(int64_t n, const char* dtype) {
  return WholeGraph(absl::StrFormat(R"(graph g(x: %1$s[4096,%2$d]) {
    m: %1$s[4096] = reduce_max(x) {axes = [1], keep_dims = false}
    return m
  })", dtype, n));
}

// Decomposed softmax over [rows, n]: one row-shaped input and a row-shaped output.
Row Softmax(int64_t n, const char* dtype, int64_t rows = 4096) {
  return WholeGraph(absl::StrFormat(R"(graph g(x: %1$s[%3$d,%2$d]) {
    m: %1$s[%3$d,1] = reduce_max(x) {axes = [1], keep_dims = true}
    d: %1$s[%3$d,%2$d] = sub(x, m)
    e: %1$s[%3$d,%2$d] = exp(d)
    s: %1$s[%3$d,1] = reduce_sum(e) {axes = [1], keep_dims = true}
    y: %1$s[%3$d,%2$d] = div(e, s)
    return y
  })", dtype, n, rows));
}

TEST(RowFitTest, ABf16SoftmaxRowOf8192FitsOn128Threads) {
  Row r = Softmax(8192, "bf16");
  RowFit fit = r.region.reduce->fit;
  // 128 threads x 8 vectors of 8 = 8192 would hold it (64 values per thread, the budget
  // exactly); the kernel runs about four vectors per thread, 256 threads of 32 values.
  EXPECT_TRUE(fit.on_chip);
  EXPECT_FALSE(fit.shared);
  EXPECT_EQ(fit.threads, 256);
  EXPECT_EQ(fit.per_thread, 32);
  EXPECT_EQ(fit.passes, 1);
  EXPECT_EQ(fit.phase_us, 0);  // 256 x (32 + 48) registers: three blocks per SM
  EXPECT_EQ(fit.reason, "row of 8192 bf16 values x 1 input fits the register budget of 64 f32 values per "
                        "thread x 512 threads: 32 per thread over 256 threads");
  EXPECT_EQ(DefaultParams(r.region, H100Spec()).block_size, 256);
}

TEST(RowFitTest, AVocabSoftmaxRowIsKeptInSharedMemory) {
  // 32000 bf16 in registers needs 512 threads x 64 values: 128 registers, one block per SM,
  // whose load and store phases do not overlap; in shared memory (64 KB) three blocks fit.
  Row r = Softmax(32000, "bf16");
  RowFit fit = r.region.reduce->fit;
  EXPECT_TRUE(fit.on_chip);
  EXPECT_TRUE(fit.shared);
  EXPECT_EQ(fit.split, 1);
  EXPECT_EQ(fit.threads, 512);
  EXPECT_EQ(fit.smem_bytes, 65536);
  EXPECT_EQ(fit.blocks_per_sm, 3);
  EXPECT_EQ(fit.passes, 1);
  const KernelParams p = DefaultParams(r.region, H100Spec());
  EXPECT_TRUE(p.smem);
  EXPECT_EQ(p.min_blocks, 3);
  absl::StatusOr<KernelSource> ks = EmitKernel(r.region, p);
  ASSERT_TRUE(ks.ok()) << ks.status();
  EXPECT_EQ(ks->launch.dynamic_smem_bytes, 65536);
  // A plain row maximum has nothing to store: one pass, registers, no phases to hide.
  RowFit max = RowMax(32000, "bf16").region.reduce->fit;
  EXPECT_FALSE(max.shared) << max.reason;
  EXPECT_EQ(max.phase_us, 0);
}

TEST(RowFitTest, EveryRowShapedInputCountsAgainstTheBudget) {
  // 16384 x 2 inputs over 512 threads: 4 vectors of 8 each, 64 per thread.
  RowFit two = ProductSum(16384, 2).region.reduce->fit;
  EXPECT_TRUE(two.on_chip);
  EXPECT_FALSE(two.shared);
  EXPECT_EQ(two.threads, 512);
  EXPECT_EQ(two.per_thread, 64);
  // A third input needs 96 per thread: streamed; only a per-row result leaves, so one pass.
  RowFit three = ProductSum(16384, 3).region.reduce->fit;
  EXPECT_FALSE(three.on_chip);
  EXPECT_EQ(three.passes, 1);
  EXPECT_EQ(three.reason, "row of 16384 f32 values x 3 inputs does not fit the register budget of 64 f32 values "
                          "per thread x 512 threads: streamed, 1 pass");
}

TEST(RowFitTest, ShortRowsGetAWarp) {
  // 1024 over 32 threads: 4 vectors of 8 per input.
  RowFit two = ProductSum(1024, 2).region.reduce->fit;
  EXPECT_TRUE(two.on_chip);
  EXPECT_EQ(two.threads, 32);
  EXPECT_EQ(two.per_thread, 64);
  EXPECT_FALSE(ProductSum(1024, 3).region.reduce->fit.on_chip);
}

TEST(RowFitTest, AStreamedRowMakesOnePassPerReductionLevel) {
  // The 128256-wide log-sum-exp of cross-entropy: max and sum(exp(x - max)) share a pass.
  Row lse = WholeGraph(R"(graph g(x: bf16[4096,128256]) {
    m: bf16[4096,1] = reduce_max(x) {axes = [1], keep_dims = true}
    d: bf16[4096,128256] = sub(x, m)
    e: bf16[4096,128256] = exp(d)
    s: bf16[4096] = reduce_sum(e) {axes = [1], keep_dims = false}
    l: bf16[4096] = log(s)
    return l
  })");
  RowFit fit = lse.region.reduce->fit;
  EXPECT_FALSE(fit.on_chip);
  EXPECT_TRUE(fit.online_max_sum);
  EXPECT_EQ(fit.passes, 1);
  EXPECT_EQ(fit.reason, "row of 128256 bf16 values x 1 input does not fit the register budget of 64 f32 values "
                        "per thread x 512 threads: streamed, 1 pass with online max+sum");
  // Softmax writes the row back: streamed, the statistics pass and then the output pass; or
  // split over blocks whose shares fit on chip, read once, where the model prices that cheaper
  // (the choice is the rule's; the price and the passes follow it).
  for (int64_t n : {128256, 65536}) {
    Row softmax = Softmax(n, "f32");
    const RowFit& fit = softmax.region.reduce->fit;
    RunTimeEstimate e = EstimateRunTime(softmax.region, H100Spec());
    if (fit.on_chip) {
      EXPECT_GT(fit.split, 1) << fit.reason;
      EXPECT_EQ(fit.passes, 1);
    } else {
      EXPECT_EQ(fit.passes, 2);
      EXPECT_NE(fit.reason.find("2 passes (1 for the statistics with online max+sum, 1 for the row-shaped outputs)"),
                std::string::npos) << fit.reason;
    }
    EXPECT_EQ(e.passes, fit.passes);
    EXPECT_EQ(e.bytes_read, int64_t{4096} * n * 4 * fit.passes);
  }
  // A layer norm's variance needs the mean first: two statistics levels, then the output.
  Row norm = WholeGraph(R"(graph g(x: f32[4096,65536]) {
    mu: f32[4096,1] = reduce_mean(x) {axes = [1], keep_dims = true}
    d: f32[4096,65536] = sub(x, mu)
    sq: f32[4096,65536] = mul(d, d)
    v: f32[4096,1] = reduce_mean(sq) {axes = [1], keep_dims = true}
    r: f32[4096,1] = rsqrt(v)
    y: f32[4096,65536] = mul(d, r)
    return y
  })");
  RowFit ln = norm.region.reduce->fit;
  EXPECT_EQ(ln.passes, ln.on_chip ? 1 : 3);
  RunTimeEstimate e = EstimateRunTime(norm.region, H100Spec());
  EXPECT_EQ(e.passes, ln.passes);
  EXPECT_EQ(e.bytes_read, int64_t{ln.passes} * 4096 * 65536 * 4);
  EXPECT_EQ(e.row_fit, ln.reason);
}

// A layer_norm's mean and variance (mean of (x - mean)^2) come from one pass of Welford
// accumulators: one level, so a streamed row is read once for the statistics, and a row split
// over blocks needs no wait between them. Not for a row one block keeps on chip (read once
// either way), nor where the squared deviation is from another tensor's mean.
TEST(RowFitTest, AMeanAndItsVarianceShareOnePass) {
  Row ln = WholeGraph(R"(graph g(x: f32[16,1048576]) {
    m: f32[16,1] = reduce_mean(x) {axes = [1], keep_dims = true}
    d: f32[16,1048576] = sub(x, m)
    q: f32[16,1048576] = mul(d, d)
    v: f32[16,1] = reduce_mean(q) {axes = [1], keep_dims = true}
    return m, v
  })");
  const ReducePlacement& pl = *ln.region.reduce;
  EXPECT_EQ(pl.levels, 1);
  ASSERT_EQ(pl.online_mean.size(), 1u);
  EXPECT_EQ(pl.online_mean.begin()->second->name(), "m");
  EXPECT_TRUE(pl.IsPairedMean(pl.online_mean.begin()->second));
  EXPECT_TRUE(pl.IsPairedSecond(pl.online_mean.begin()->first));
  EXPECT_EQ(pl.OnlinePairs(), "online mean+variance");
  EXPECT_NE(pl.fit.reason.find("mean and variance in one pass"), std::string::npos) << pl.fit.reason;

  // (m - x)^2 is the same deviation; a sum of squares instead of a mean pairs too.
  auto variance = [](const char* rows, const char* n, const char* deviation, const char* mean_of) {
    return WholeGraph(absl::StrFormat(R"(graph g(x: f32[%1$s,%2$s], y: f32[%1$s,%2$s]) {
      m: f32[%1$s,1] = reduce_mean(%4$s) {axes = [1], keep_dims = true}
      d: f32[%1$s,%2$s] = %3$s
      q: f32[%1$s,%2$s] = mul(d, d)
      v: f32[%1$s] = reduce_sum(q) {axes = [1], keep_dims = false}
      return v
    })", rows, n, deviation, mean_of));
  };
  Row reversed = variance("8", "262144", "sub(m, x)", "x");
  EXPECT_EQ(reversed.region.reduce->online_mean.size(), 1u);
  EXPECT_EQ(reversed.region.reduce->levels, 1);
  EXPECT_GT(reversed.region.reduce->fit.split, 1) << reversed.region.reduce->fit.reason;

  // Rows of 4096 that one block keeps in registers: two levels.
  Row on_chip = variance("4096", "4096", "sub(x, m)", "x");
  EXPECT_TRUE(on_chip.region.reduce->online_mean.empty());
  EXPECT_EQ(on_chip.region.reduce->levels, 2);
  EXPECT_TRUE(on_chip.region.reduce->fit.on_chip);
  EXPECT_EQ(on_chip.region.reduce->fit.split, 1);
  EXPECT_NE(on_chip.region.reduce->fit.reason.find("mean and variance in two levels"), std::string::npos)
      << on_chip.region.reduce->fit.reason;

  // The deviation from another tensor's mean is not a variance of x: two levels.
  Row other = variance("8", "262144", "sub(x, m)", "y");
  EXPECT_TRUE(other.region.reduce->online_mean.empty());
  EXPECT_EQ(other.region.reduce->levels, 2);
}


// Few long rows are split over several blocks, so that the grid covers the GPU: 8 rows of
// 524288 f32 go to 33 blocks each (2 blocks per SM on 132 SMs), each caching its share.
TEST(RowFitTest, FewLongRowsAreSplitOverBlocks) {
  Row few = Softmax(524288, "f32", 8);
  const RowFit& fit = few.region.reduce->fit;
  EXPECT_EQ(fit.split, 33);
  EXPECT_EQ(fit.share, (524288 + 32) / 33);
  EXPECT_TRUE(fit.on_chip) << fit.reason;
  RunTimeEstimate e = EstimateRunTime(few.region, H100Spec());
  EXPECT_EQ(e.blocks, 8 * 33);
  EXPECT_EQ(e.passes, 1);
  KernelParams params = DefaultParams(few.region, H100Spec());
  EXPECT_EQ(params.split, 33);
  EXPECT_EQ(params.rows_per_block, 1);
  absl::StatusOr<KernelSource> ks = EmitKernel(few.region, params);
  ASSERT_TRUE(ks.ok()) << ks.status();
  EXPECT_TRUE(ks->launch.cooperative);
  EXPECT_EQ(ks->launch.Grid(8), 8 * 33);
  EXPECT_TRUE(ks->has_scratch);  // the blocks' barrier counters and partial statistics
  // Many rows, or rows a block covers anyway, are not split.
  EXPECT_EQ(ProductSum(16384, 1).region.reduce->fit.split, 1);
  EXPECT_EQ(WholeGraph(R"(graph g(x: f32[8,2048]) {
    s: f32[8] = reduce_sum(x) {axes = [1], keep_dims = false}
    return s
  })").region.reduce->fit.split, 1);
}

// A row read once (one level, no row-shaped outputs) is split only where the model prices the
// split cheaper than fewer blocks: the mean over N, H and W of [32, 256, 56, 56] bf16, read
// through a transpose as 256 rows of 100352, fills the SMs unsplit, where the SMs' target (two
// blocks each) would split each row in two (measured 23.1 against 25.8 us, H100, L2 flushed).
TEST(RowFitTest, ARowReadOnceIsSplitOnlyWherePricedCheaper) {
  Row many = WholeGraph(R"(graph g(x: bf16[32,256,56,56]) {
    t: bf16[256,32,56,56] = transpose(x) {perm = [1, 0, 2, 3]}
    s: bf16[256,1,1,1] = reduce_mean(t) {axes = [1, 2, 3], keep_dims = true}
    return s
  })");
  EXPECT_EQ(many.region.reduce->fit.split, 1) << many.region.reduce->fit.reason;
  EXPECT_EQ(many.region.reduce->Of(many.graph->FindNode("x")).through, many.graph->FindNode("t"));
  // Few such rows still split: 8 rows of 524288.
  EXPECT_GT(WholeGraph(R"(graph g(x: f32[8,524288]) {
    s: f32[8] = reduce_sum(x) {axes = [1], keep_dims = false}
    return s
  })").region.reduce->fit.split, 1);
}

// Split blocks that wait for their row's merge hold their SM until it is done: with more blocks
// than resident slots, the price runs them in whole waves (kinds::WaitingWaves), a partial last
// wave as long as a full one. A split whose blocks do not wait (a sum: the last block folds) is
// back-filled, and its memory time is not quantised.
TEST(RowFitTest, WaitingSplitBlocksArePricedInWholeWaves) {
  const DeviceSpec device = H100Spec();
  auto unquantised = [&](const Region& region, const RunTimeEstimate& e) {
    const RowFit& fit = region.reduce->fit;
    const int64_t threads = fit.threads <= 32 ? 256 : fit.threads;
    return static_cast<double>(e.bytes_read + e.bytes_written + e.wasted_bytes) /
           DrawnBandwidth(device, e.blocks, threads, fit.blocks_per_sm);
  };
  Row softmax = Softmax(262144, "f32", 32);
  const RowFit& fit = softmax.region.reduce->fit;
  ASSERT_GT(fit.split, 1) << fit.reason;
  ASSERT_TRUE(fit.split_waits);
  const RunTimeEstimate e = EstimateRunTime(softmax.region, device);
  const int64_t threads = fit.threads <= 32 ? 256 : fit.threads;
  int64_t per_sm = 1024 / threads;
  if (fit.blocks_per_sm > 0) per_sm = std::min<int64_t>(per_sm, fit.blocks_per_sm);
  const double fraction = static_cast<double>(e.blocks) / static_cast<double>(device.sm_count * per_sm);
  ASSERT_GT(fraction, 1) << "the case must need more than one wave: " << fit.reason;
  ASSERT_NE(fraction, std::ceil(fraction));
  EXPECT_NEAR(e.memory_us, unquantised(softmax.region, e) * std::ceil(fraction) / fraction, 1e-9 * e.memory_us);

  Row sum = WholeGraph(R"(graph g(x: f32[32,262144]) {
    s: f32[32] = reduce_sum(x) {axes = [1], keep_dims = false}
    return s
  })");
  ASSERT_GT(sum.region.reduce->fit.split, 1) << sum.region.reduce->fit.reason;
  ASSERT_FALSE(sum.region.reduce->fit.split_waits);
  const RunTimeEstimate s = EstimateRunTime(sum.region, device);
  EXPECT_NEAR(s.memory_us, unquantised(sum.region, s), 1e-9 * s.memory_us);
}

// Rows of up to 1024 elements: `lanes` threads a row (ThreadsForShortRow), 128 threads a block
// unless 128 would read under 4 KB of rows; the model prices the blocks the kernel launches.
TEST(RowFitTest, ShortRowBlocksAreTheLaunchRulesBlocks) {
  // Rows of 16 f32, a million of them: a thread owns a row (four vectors, no merge), 128 rows
  // of 64 bytes a block. 4096 such rows keep four lanes of one vector each: a thread a row
  // would leave the SMs 4096 threads; 32 rows of 64 bytes at 128 threads, so 256.
  Row tiny = WholeGraph(R"(graph g(x: f32[1048576,16]) {
    s: f32[1048576] = reduce_sum(x) {axes = [1], keep_dims = false}
    return s
  })");
  const RowFit& t = tiny.region.reduce->fit;
  EXPECT_EQ(t.block, 128);
  EXPECT_EQ(t.rows_per_block, 128);
  EXPECT_EQ(EstimateRunTime(tiny.region, H100Spec()).blocks, 1048576 / 128);
  const KernelParams one_lane = DefaultParams(tiny.region, H100Spec());
  EXPECT_EQ(ThreadsPerRow(one_lane), 1) << one_lane.ToString();
  EXPECT_TRUE(ValidateParams(one_lane).ok());
  for (const KernelParams& c : CandidateParams(tiny.region, H100Spec())) {
    EXPECT_TRUE(ValidateParams(c).ok()) << c.ToString();
    EXPECT_LE(16 / c.vector_width, 4 * ThreadsPerRow(c)) << c.ToString();  // at most four vectors a thread
  }
  Row five = WholeGraph(R"(graph g(x: f32[40000,20]) {
    s: f32[40000] = reduce_sum(x) {axes = [1], keep_dims = false}
    return s
  })");  // five vectors a row: two lanes
  EXPECT_EQ(ThreadsPerRow(DefaultParams(five.region, H100Spec())), 2);
  Row few = WholeGraph(R"(graph g(x: f32[4096,16]) {
    s: f32[4096] = reduce_sum(x) {axes = [1], keep_dims = false}
    return s
  })");
  EXPECT_EQ(few.region.reduce->fit.block, 256);
  EXPECT_EQ(few.region.reduce->fit.rows_per_block, 64);
  // Softmax over rows of 197 f16 (ViT scores): 25 vectors a row over 8 lanes; 16 rows of 394
  // bytes at 128 threads read 6.3 KB.
  Row vit = Softmax(197, "f16", 65536);
  const RowFit& v = vit.region.reduce->fit;
  EXPECT_EQ(v.block, 128);
  EXPECT_EQ(v.rows_per_block, 16);
  EXPECT_EQ(EstimateRunTime(vit.region, H100Spec()).blocks, 65536 / 16);
  const KernelParams p = DefaultParams(vit.region, H100Spec());
  EXPECT_EQ(p.block_size, 128);
  EXPECT_EQ(p.rows_per_block, 16);
}

// A row too long for a block's registers is split only as far as the SMs need where shared
// memory holds it: softmax over [1024, 50257] f16 is a block per row in 100 KB of shared memory
// (H100, kiln tune: 77.8 us against 84.2 for the register rule's split of 2 as a cluster of
// two 57 KB shares; H200, L2 flushed: 58.5 against 69.4 us, bench/results/2026-11-28-session21).
// A shared cache of a region that stores rows leaves room for a second block on each SM: a
// block alone on its SM loads, reduces and stores in turn. layer_norm over 44 rows of 262144
// f32 on the H200 took a cluster of 6 blocks of 180 KB, one per SM (53.7 us), where 12 blocks
// of 90 KB, two per SM, ran 38.3 (session 31, run 5). Row counts around it, on both devices.
TEST(RowFitTest, ASharedRowCacheNeverLeavesABlockAloneOnItsSm) {
  for (const DeviceSpec& device : {H100Spec(), H200Spec()}) {
    for (int64_t rows : {11, 22, 33, 44, 66, 132}) {
      for (const auto& [op, type] : {std::pair<std::string, std::string>{"layer_norm", "f32"}, {"softmax", "bf16"}}) {
        const int64_t n = op == "softmax" ? 151936 : 262144;
        auto graph = testing::Parse(absl::StrFormat(R"(graph g(x: %1$s[%2$d,%3$d]) {
          y: %1$s[%2$d,%3$d] = %4$s(x) {axis = 1}
          return y
        })", type, rows, n, op));
        ASSERT_TRUE(graph && DefaultPipeline().Run(*graph, DebugOptions{}).ok());
        const Region region = testing::WholeRegion(*graph, device);
        ASSERT_TRUE(region.reduce) << op << " " << rows;
        const RowFit& fit = region.reduce->fit;
        if (fit.shared) EXPECT_GE(fit.blocks_per_sm, 2) << device.name << " " << op << " " << rows << ": " << fit.reason;
      }
    }
  }
}

TEST(RowFitTest, ARowTooLongForRegistersIsNotSplitForSharedMemory) {
  Row r = Softmax(50257, "f16", 1024);
  const RowFit& fit = r.region.reduce->fit;
  EXPECT_TRUE(fit.shared) << fit.reason;
  EXPECT_EQ(fit.split, 1) << fit.reason;
  EXPECT_GE(fit.smem_bytes, 50257 * 2) << fit.reason;
  EXPECT_FALSE(fit.cluster) << fit.reason;
}

// A split row's share gets about four vectors a thread where the model prices that no dearer
// than the fewest threads that hold it: layer_norm over [16, 12288] f32, shares of 4096 over 3
// blocks, at 256 threads (H200, L2 flushed: 7.6 us against 9.3 at 128).
TEST(RowFitTest, ASplitRowShareGetsAboutFourVectorsAThread) {
  Row r = Softmax(12288, "f32", 16);
  const RowFit& fit = r.region.reduce->fit;
  EXPECT_EQ(fit.split, 3) << fit.reason;
  EXPECT_TRUE(fit.on_chip) << fit.reason;
  EXPECT_EQ(fit.threads, 256) << fit.reason;
  EXPECT_EQ(DefaultParams(r.region, H100Spec()).block_size, 256);
  // Four rows of 1M: 64 values a thread at 256 threads fit two blocks per SM; 512 threads of
  // 30 would leave one (the model's registers), so the share keeps 256.
  Row few = Softmax(1000000, "f32", 4);
  EXPECT_EQ(few.region.reduce->fit.threads, 256) << few.region.reduce->fit.reason;
}

// The block counts a thread's bytes, not its accesses: a batch norm row read and stored through
// its transpose in runs of H x W takes the vector the runs allow (one bf16 element in runs of
// 7 x 7, four in 14 x 14), yet gets the threads that four 16-byte vectors each would give
// (2048 channels of 7 x 7: 128 threads, 11.4 us against 13.2 at 256; H200, kiln tune,
// bench/results/2026-11-29-session32, run 5). With fewer rows than SMs the model prices those
// fewer threads dearer, and the threads four narrow accesses each give are kept (96 channels:
// 256 threads, 4.9 us against 5.8 for the shared-memory cache 128 would have lost to).
TEST(RowFitTest, ARowOfNarrowAccessesGetsAboutFourVectorsWorthAThread) {
  struct Case {
    int channels, hw, vector, threads;
  };
  for (const Case c : {Case{2048, 7, 1, 128}, Case{512, 14, 4, 128}, Case{96, 7, 1, 256}}) {
    Row r = WholeGraph(absl::StrFormat(R"(graph g(x: bf16[32,%1$d,%2$d,%2$d]) {
      t: bf16[%1$d,32,%2$d,%2$d] = transpose(x) {perm = [1, 0, 2, 3]}
      m: bf16[%1$d,1,1,1] = reduce_mean(t) {axes = [1, 2, 3], keep_dims = true}
      d: bf16[%1$d,32,%2$d,%2$d] = sub(t, m)
      q: bf16[%1$d,32,%2$d,%2$d] = mul(d, d)
      v: bf16[%1$d,1,1,1] = reduce_mean(q) {axes = [1, 2, 3], keep_dims = true}
      r: bf16[%1$d,1,1,1] = rsqrt(v)
      n: bf16[%1$d,32,%2$d,%2$d] = mul(d, r)
      y: bf16[32,%1$d,%2$d,%2$d] = transpose(n) {perm = [1, 0, 2, 3]}
      return y
    })", c.channels, c.hw));
    ASSERT_TRUE(r.region.reduce) << c.channels;
    EXPECT_EQ(RowVector(r.region, *r.region.reduce), c.vector) << c.channels;
    const RowFit& fit = r.region.reduce->fit;
    EXPECT_FALSE(fit.shared) << c.channels << ": " << fit.reason;
    EXPECT_EQ(fit.threads, c.threads) << c.channels << ": " << fit.reason;
    EXPECT_EQ(DefaultParams(r.region, H100Spec()).block_size, c.threads) << c.channels;
  }
}

// layer_norm over [rows, n] bf16 with its [n] weight and bias, through the default pipeline.
Row LayerNorm(int64_t rows, int64_t n) {
  Row row;
  row.graph = testing::Parse(absl::StrFormat(R"(graph g(x: bf16[%1$d,%2$d], w: bf16[%2$d], b: bf16[%2$d]) {
    y: bf16[%1$d,%2$d] = layer_norm(x, w, b) {axis = -1, eps = 1e-5}
    return y
  })", rows, n));
  if (!row.graph || !DefaultPipeline().Run(*row.graph, DebugOptions{}).ok()) return Row{};
  row.region = testing::WholeRegion(*row.graph);
  EXPECT_EQ(row.region.kind, RegionKind::kRowReduction);
  return row;
}

// At most kFewRowsPerSm short rows per SM leave no warps to hide a row's loads: the row may
// cache 128 values a thread, and its weights are loaded and kept with it. layer_norm's one row
// of 1024 (x, w and b: 96 values a lane) was streamed twice before, and the weights of 16 rows
// were loaded only after the row's statistics (bench/results/2026-11-29-session30.md, run 1).
TEST(RowFitTest, FewShortRowsCacheTheirWeightsWithThem) {
  const int64_t few = kFewRowsPerSm * H100Spec().sm_count;
  for (int64_t rows : {int64_t{1}, int64_t{16}, few}) {
    Row r = LayerNorm(rows, 1024);
    const RowFit& fit = r.region.reduce->fit;
    SCOPED_TRACE(absl::StrFormat("rows %d: %s", rows, fit.reason));
    EXPECT_TRUE(fit.on_chip);
    EXPECT_EQ(fit.cache_limit, kFewRowsCacheFloatsPerThread);
    EXPECT_EQ(fit.row_inputs, 3);
    EXPECT_EQ(fit.per_thread, 96);
    // One row has no weights apart from its row: x, w and b are its row inputs alike.
    EXPECT_EQ(fit.weights_cached, rows > 1);
    const KernelParams params = DefaultParams(r.region, H100Spec());
    EXPECT_EQ(params.chunk, 0);
    absl::StatusOr<KernelSource> ks = EmitKernel(r.region, params);
    ASSERT_TRUE(ks.ok()) << ks.status();
    EXPECT_NE(ks->source.find("x.x2["), std::string::npos) << ks->source;  // b, cached in Vec
    EXPECT_TRUE(std::any_of(ks->notes.begin(), ks->notes.end(),
                            [](const std::string& n) { return n.rfind("cached in registers", 0) == 0; }));
  }
  // More rows hide each other's loads: the budget is 64 values, the weights are read where used.
  Row many = LayerNorm(few + 1, 1024);
  const RowFit& fit = many.region.reduce->fit;
  EXPECT_EQ(fit.cache_limit, kRowCacheFloatsPerThread);
  EXPECT_FALSE(fit.weights_cached);
  EXPECT_EQ(fit.row_inputs, 1);
  absl::StatusOr<KernelSource> ks = EmitKernel(many.region, DefaultParams(many.region, H100Spec()));
  ASSERT_TRUE(ks.ok()) << ks.status();
  EXPECT_EQ(ks->source.find("x.x1["), std::string::npos) << ks->source;  // only x is in Vec
}

// The cost model and codegen call the same rule, and the emitted kernel does what it says:
// a row the rule keeps on chip is cached in registers, any other is streamed.
TEST(RowFitTest, TheKernelDoesWhatTheModelPrices) {
  for (const char* dtype : {"f32", "bf16"}) {
    for (int64_t n : {512, 1000, 1024, 2048, 8192, 12288, 16384, 32768, 40000}) {
      for (int inputs : {1, 2, 3}) {
        Row r = ProductSum(n, inputs, dtype);
        RowFit fit = r.region.reduce->fit;
        std::string where = absl::StrFormat("%s n=%d inputs=%d: %s", dtype, n, inputs, fit.reason);
        EXPECT_EQ(EstimateRunTime(r.region, H100Spec()).row_on_chip, fit.on_chip) << where;
        KernelParams params = DefaultParams(r.region, H100Spec());
        EXPECT_EQ(params.chunk == 0, fit.on_chip) << where << "; " << params.ToString();
        // The block the model prices is the block the kernel runs, short rows included.
        EXPECT_EQ(params.block_size, fit.block) << where;
        EXPECT_EQ(params.rows_per_block, fit.rows_per_block) << where;
        EXPECT_EQ(EstimateRunTime(r.region, H100Spec()).blocks,
                  fit.split * ((4096 + fit.rows_per_block - 1) / fit.rows_per_block)) << where;
        absl::StatusOr<KernelSource> ks = EmitKernel(r.region, params);
        ASSERT_TRUE(ks.ok()) << where << ": " << ks.status();
        bool cached = false;
        for (const std::string& note : ks->notes) {
          cached |= note.rfind(fit.shared ? "cached in shared memory" : "cached in registers", 0) == 0;
        }
        EXPECT_EQ(cached, fit.on_chip) << where << "; " << params.ToString();
      }
    }
  }
}

}  // namespace
}  // namespace kiln
