// The tiled transpose kernel compiles with NVRTC for sm_90a (no GPU needed) under every
// KernelParams candidate (tiles, vector widths, block sizes, and the plain kernel) of every case
// of tests/codegen/layout_cases.h, without spills; the GPU runs the same kernels in
// codegen_region_gpu_test (TiledTransposes).
#include <cstdio>
#include <set>

#include "gtest/gtest.h"
#include "passes/fusion/layout_access.h"
#include "runtime/nvrtc_compile.h"
#include "tests/codegen/codegen_test_util.h"
#include "tests/codegen/layout_cases.h"

namespace kiln {
namespace {

TEST(LayoutNvrtcTest, EveryTileCandidateCompilesForSm90a) {
  std::set<std::string> seen;
  int tiled = 0, plain = 0;
  for (const auto& [name, text] : testing_codegen::TiledLayoutGraphs()) {
    Analysis a = testing_codegen::AnalyzeText(text);
    for (const Region* r : testing_codegen::KernelRegions(a.plan)) {
      for (const KernelParams& params : CandidateParams(*r, a.plan.device)) {
        auto ks = EmitKernel(*r, params);
        ASSERT_TRUE(ks.ok()) << name << " " << params.ToString() << ": " << ks.status();
        if (!seen.insert(ks->name).second) continue;
        const bool is_tiled = ks->source.find("kiln::TiledTransposeKernel<") != std::string::npos;
        EXPECT_EQ(is_tiled, params.tile_m > 0) << name << " " << params.ToString();
        (is_tiled ? tiled : plain)++;
        auto compiled = CompileCuda(ks->name, ks->source, "sm_90a");
        ASSERT_TRUE(compiled.ok()) << name << " " << params.ToString() << ":\n" << ks->source << "\n" << compiled.status();
        EXPECT_FALSE(compiled->cubin.empty());
        EXPECT_EQ(compiled->spill_store_bytes, 0) << name << " " << params.ToString() << " spills:\n" << compiled->log;
        std::printf("%-34s %-44s %3d regs %6.1f ms\n", name.c_str(), params.ToString().c_str(), compiled->registers,
                    compiled->compile_ms);
      }
    }
  }
  // Every tiled case offers several tiles (and the plain kernel); the cases that keep the
  // innermost axis, or whose transpose is trivial, offer only plain ones.
  EXPECT_GT(tiled, 60);
  EXPECT_GT(plain, 20);
}

}  // namespace
}  // namespace kiln
