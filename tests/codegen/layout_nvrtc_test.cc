// The tiled transpose kernel compiles with NVRTC for sm_90a (no GPU needed) under every
// KernelParams candidate (tiles, vector widths, block sizes, and the plain kernel) of every case
// of tests/codegen/layout_cases.h, without spills; the GPU runs the same kernels in
// codegen_region_gpu_test (TiledTransposes); likewise the vectorised plain kernel's cases
// (VectorisedLayouts).
#include <cstdio>
#include <set>

#include "absl/strings/match.h"
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

// The vectorised plain kernel (codegen/emit_vector.cc): every candidate of every case compiles
// without spills, and the default runs vectorised exactly where the case's name says so.
TEST(LayoutNvrtcTest, EveryVectorCandidateCompilesForSm90a) {
  std::set<std::string> seen;
  int vectorised = 0;
  for (const auto& [name, text] : testing_codegen::VectorLayoutGraphs()) {
    Analysis a = testing_codegen::AnalyzeText(text);
    const std::vector<const Region*> regions = testing_codegen::KernelRegions(a.plan);
    ASSERT_EQ(regions.size(), 1u) << name;
    const std::vector<KernelParams> candidates = CandidateParams(*regions[0], a.plan.device);
    for (const KernelParams& params : candidates) {
      auto ks = EmitKernel(*regions[0], params);
      ASSERT_TRUE(ks.ok()) << name << " " << params.ToString() << ": " << ks.status();
      const bool is_vector = ks->source.find("codegen/emit_vector.cc") != std::string::npos;
      if (params == candidates.front()) {
        EXPECT_EQ(is_vector, absl::EndsWith(name, "_vec")) << name << "\n" << ks->source;
      }
      if (!seen.insert(ks->name).second) continue;
      vectorised += is_vector;
      auto compiled = CompileCuda(ks->name, ks->source, "sm_90a");
      ASSERT_TRUE(compiled.ok()) << name << " " << params.ToString() << ":\n" << ks->source << "\n" << compiled.status();
      EXPECT_EQ(compiled->spill_store_bytes, 0) << name << " " << params.ToString() << " spills:\n" << compiled->log;
      std::printf("%-40s %-36s %3d regs %6.1f ms%s\n", name.c_str(), params.ToString().c_str(), compiled->registers,
                  compiled->compile_ms, is_vector ? " vector" : "");
    }
  }
  EXPECT_GT(vectorised, 30);
}

}  // namespace
}  // namespace kiln
