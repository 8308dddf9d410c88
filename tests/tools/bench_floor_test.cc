// kiln bench's L2 flush kernel is PTX the driver compiles at run time: check here, without a
// GPU, that ptxas assembles it for sm_90 (a syntax error would otherwise first show on a GPU).
// And the report's launch counts and CUDA graph time, in text and JSON.
#include "tools/bench_floor.h"
#include "runtime/repetitions.h"

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

TEST(BenchFloorTest, ReportsLaunchesAndTheCudaGraphTime) {
  BenchReport r;
  r.graph = "g";
  r.graph_us = 30;
  r.launches.kernels = 9;
  r.launches.library_calls = 4;
  std::string text = r.ToText(), json = r.ToJson();
  EXPECT_NE(text.find("stream launches: 30.00 us per run, 13 launches (9 kernels, 4 cuBLASLt calls)"),
            std::string::npos) << text;
  EXPECT_EQ(text.find("cuda graph:"), std::string::npos) << text;
  EXPECT_NE(json.find("\"launches_per_run\": {\"kernels\": 9, \"library_calls\": 4, \"copies\": 0, \"total\": 13}"),
            std::string::npos) << json;
  EXPECT_NE(json.find("\"cuda_graph_us\": null"), std::string::npos) << json;
  r.cuda_graph_us = 12;
  text = r.ToText();
  json = r.ToJson();
  EXPECT_NE(text.find("cuda graph:      12.00 us per run, 1 launch (1 CUDA graph); 2.50x"), std::string::npos) << text;
  EXPECT_NE(json.find("\"cuda_graph_us\": 12.000, \"cuda_graph_launches_per_run\": 1"), std::string::npos) << json;
}

}  // namespace
}  // namespace kiln
