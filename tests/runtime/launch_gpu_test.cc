// PrepareKernel and LaunchKernel (runtime/launch.h) on a real GPU (label gpu; skips without a
// device): a kernel with static shared memory beside exactly 48 KB of dynamic shared memory
// launches. The 48 KB a launch may take without raising the function's limit counts the static
// bytes too, so a limit raised only past 48 KB of dynamic memory failed these launches with
// CUDA_ERROR_INVALID_VALUE (the attention kernel's 128 static bytes beside a 48 KB tile).
#include <cuda.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cuda_driver.h"
#include "runtime/executable.h"
#include "runtime/launch.h"
#include "runtime/nvrtc_compile.h"
#include "tests/testing/cu_assert.h"

namespace kiln {
namespace {

// Each thread writes its index into the first and the last words of the dynamic memory and
// reads them back beside the static word: out[i] = 2 i + 7.
constexpr char kSource[] = R"(
extern "C" __global__ void static_beside_dynamic(int* out, int dynamic_words) {
  __shared__ __align__(128) int flag[32];
  extern __shared__ __align__(128) int dynamic_smem[];
  const int i = threadIdx.x;
  flag[i] = 7;
  dynamic_smem[i] = i;
  dynamic_smem[dynamic_words - 1 - i] = i;
  __syncthreads();
  out[i] = dynamic_smem[i] + dynamic_smem[dynamic_words - 1 - i] + flag[31 - i];
}
)";

TEST(LaunchTest, StaticSharedMemoryBesideFortyEightKilobytesOfDynamic) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device (or no driver)";
  absl::StatusOr<const CudaDriver*> driver = LoadCudaDriver();
  ASSERT_TRUE(driver.ok()) << driver.status();
  const CudaDriver* cu = *driver;
  CUdevice device;
  CUcontext context;
  CU_ASSERT_OK(cu->cuDeviceGet(&device, 0));
  CU_ASSERT_OK(cu->cuDevicePrimaryCtxRetain(&context, device));
  CU_ASSERT_OK(cu->cuCtxSetCurrent(context));
  absl::StatusOr<std::string> arch = CurrentDeviceArch();
  ASSERT_TRUE(arch.ok()) << arch.status();
  absl::StatusOr<CompiledCuda> compiled = CompileCuda("static_beside_dynamic", kSource, *arch);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_GE(compiled->static_smem_bytes, 128);

  CUmodule module;
  CUfunction function;
  CU_ASSERT_OK(cu->cuModuleLoadData(&module, compiled->cubin.data()));
  CU_ASSERT_OK(cu->cuModuleGetFunction(&function, module, "static_beside_dynamic"));
  CUdeviceptr out;
  CU_ASSERT_OK(cu->cuMemAlloc(&out, 32 * sizeof(int)));
  CU_ASSERT_OK(cu->cuMemsetD8(out, 0xFF, 32 * sizeof(int)));

  LaunchShape shape;
  shape.grid = 1;
  shape.block = 32;
  shape.dynamic_smem_bytes = 48 * 1024;
  absl::StatusOr<int64_t> grid = PrepareKernel(*cu, function, shape);
  ASSERT_TRUE(grid.ok()) << grid.status();
  int dynamic_words = shape.dynamic_smem_bytes / 4;
  void* params[] = {&out, &dynamic_words};
  absl::Status launched = LaunchKernel(*cu, function, shape, *grid, params, nullptr);
  ASSERT_TRUE(launched.ok()) << launched;
  CU_ASSERT_OK(cu->cuCtxSynchronize());
  std::vector<int> host(32);
  CU_ASSERT_OK(cu->cuMemcpyDtoH(host.data(), out, host.size() * sizeof(int)));
  for (int i = 0; i < 32; ++i) EXPECT_EQ(host[i], 2 * i + 7) << i;
  cu->cuMemFree(out);
  cu->cuModuleUnload(module);
}

}  // namespace
}  // namespace kiln
