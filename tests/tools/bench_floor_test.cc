// kiln bench's L2 flush kernel is PTX the driver compiles at run time: check here, without a
// GPU, that ptxas assembles it for sm_90 (a syntax error would otherwise first show on a GPU).
#include "tools/bench_floor.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace kiln {
namespace {

TEST(BenchFloorTest, BenchKernelsPtxAssembles) {
  const std::string ptxas = std::string(KILN_CUDA_BIN_DIR) + "/ptxas";
  if (!std::filesystem::exists(ptxas)) GTEST_SKIP() << "no ptxas at " << ptxas;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "kiln_flush_ptx_test";
  std::filesystem::create_directories(dir);
  const std::string ptx = (dir / "flush.ptx").string(), cubin = (dir / "flush.cubin").string();
  std::ofstream(ptx) << BenchKernelsPtx();
  const std::string command = ptxas + " -arch=sm_90 " + ptx + " -o " + cubin + " 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  EXPECT_GT(std::filesystem::file_size(cubin), 0u);
  EXPECT_NE(std::string(BenchKernelsPtx()).find("kiln_l2_flush_read"), std::string::npos);
  EXPECT_NE(std::string(BenchKernelsPtx()).find("ld.global.cg.v4.u32"), std::string::npos) << "reads, not writes";
  EXPECT_NE(std::string(BenchKernelsPtx()).find(".entry kiln_spin"), std::string::npos);
}

}  // namespace
}  // namespace kiln
