#include "tests/codegen/region_check.h"

#include "runtime/jit/lower.h"
#include "runtime/launch.h"

#include <cuda.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_format.h"
#include "api/compiler.h"
#include "codegen/emit_kernel.h"
#include "gtest/gtest.h"
#include "passes/fusion/region_kind.h"
#include "ir/interpreter.h"
#include "ir/compare.h"
#include "ir/parser.h"
#include "ir/promote.h"
#include "ir/subgraph.h"
#include "runtime/cuda_driver.h"
#include "runtime/jit/kernel_cache.h"
#include "runtime/nvrtc_compile.h"

namespace kiln::testing_gpu {
namespace {

// The driver, loaded at run time (runtime/cuda_driver.h); null without one.
const CudaDriver* Cu() {
  static const CudaDriver* driver = [] {
    auto d = LoadCudaDriver();
    return d.ok() ? *d : nullptr;
  }();
  return driver;
}

#define CU_OK(call)                                                          \
  do {                                                                       \
    CUresult r_ = (call);                                                    \
    const char* name_ = nullptr;                                             \
    if (r_ != CUDA_SUCCESS) Cu()->cuGetErrorName(r_, &name_);                \
    ASSERT_EQ(r_, CUDA_SUCCESS) << #call << ": " << (name_ ? name_ : "?");  \
  } while (0)

struct Gpu {
  bool ok = false;
  CUdevice device = 0;
  CUcontext context = nullptr;
  std::string arch;
};

Gpu& TheGpu() {
  static Gpu gpu = [] {
    Gpu g;
    int count = 0;
    if (Cu() == nullptr || Cu()->cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) return g;
    Cu()->cuDeviceGet(&g.device, 0);
    Cu()->cuDevicePrimaryCtxRetain(&g.context, g.device);
    Cu()->cuCtxSetCurrent(g.context);
    int major = 0, minor = 0;
    Cu()->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g.device);
    Cu()->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g.device);
    g.arch = absl::StrFormat("sm_%d%d%s", major, minor, major == 9 ? "a" : "");
    g.ok = true;
    return g;
  }();
  return gpu;
}

// Device memory of one kernel argument, freed on scope exit.
struct DeviceArg {
  CUdeviceptr ptr = 0;
  int64_t bytes = 0;
  ~DeviceArg() {
    if (ptr) Cu()->cuMemFree(ptr);
  }
};

bool Close(double want, double got, const Tolerance& tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return want == got;
  return std::abs(want - got) <= tol.atol + tol.rtol * std::abs(want);
}

}  // namespace

std::string SourceDir() {
  const char* dir = std::getenv("KILN_SOURCE_DIR");
  return dir != nullptr && *dir ? dir : KILN_SOURCE_DIR;
}

bool HaveGpu() { return TheGpu().ok; }
const std::string& GpuArch() { return TheGpu().arch; }

CheckTotals& Totals() {
  static CheckTotals totals;
  return totals;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void CheckRegion(const std::string& label, const Graph& g, const Region& region, const CheckOptions& options) {
  ASSERT_TRUE(HaveGpu());
  const auto start = std::chrono::steady_clock::now();
  auto sub = ExtractSubgraph(g, region.nodes, region.inputs, region.outputs);
  ASSERT_TRUE(sub.ok()) << sub.status();
  std::map<std::string, Tensor> inputs = RandomInputs(**sub, options.seed);
  if (options.inputs != nullptr) {
    for (const auto& [name, tensor] : *options.inputs) {
      if (inputs.count(name)) inputs.insert_or_assign(name, tensor);
    }
  }
  auto promoted = PromoteTo32(**sub);
  ASSERT_TRUE(promoted.ok()) << label << ": " << promoted.status();
  auto expected = Interpret(**promoted, inputs);
  ASSERT_TRUE(expected.ok()) << label << ": " << expected.status();
  const double reference_s = SecondsSince(start);

  const KernelParams params = options.params ? *options.params : DefaultParams(region, H100Spec());
  auto kernel = EmitKernel(region, params);
  ASSERT_TRUE(kernel.ok()) << label << ": " << kernel.status();
  // Through the CUBIN cache: scripts/gpu-check runs this binary twice (plain, then under
  // compute-sanitizer), and the second run compiles nothing.
  auto cached = KernelCache::Default().GetOrCompile({kernel->name, kernel->source}, GpuArch());
  ASSERT_TRUE(cached.ok()) << label << ": " << cached.status();
  const CompiledCuda* compiled = &cached->compiled;
  const double compile_s = SecondsSince(start) - reference_s;

  CUmodule module;
  CUfunction function;
  CU_OK(Cu()->cuModuleLoadData(&module, compiled->cubin.data()));
  CU_OK(Cu()->cuModuleGetFunction(&function, module, kernel->name.c_str()));

  std::vector<DeviceArg> buffers(kernel->args.size());
  for (size_t a = 0; a < kernel->args.size(); ++a) {
    const KernelArg& arg = kernel->args[a];
    DeviceArg& d = buffers[a];
    d.bytes = NumElements(arg.shape) * ByteSize(arg.dtype);
    CU_OK(Cu()->cuMemAlloc(&d.ptr, std::max<int64_t>(d.bytes, 16)));
    if (!arg.is_output) CU_OK(Cu()->cuMemcpyHtoD(d.ptr, inputs.at(arg.tensor).data(), d.bytes));
  }
  DeviceArg scratch;
  if (kernel->has_scratch) {
    scratch.bytes = kernel->ScratchBytes(kernel->count);
    CU_OK(Cu()->cuMemAlloc(&scratch.ptr, scratch.bytes));
    CU_OK(Cu()->cuMemsetD8(scratch.ptr, 0, scratch.bytes));
  }
  long long count = kernel->count;
  // As the runtime launches it (runtime/launch.h): cooperative kernels capped at what is resident.
  const LaunchShape shape = LaunchShapeOf(*kernel, count);
  auto grid = PrepareKernel(*Cu(), function, shape);
  ASSERT_TRUE(grid.ok()) << label << ": " << grid.status();
  LaunchArgs args;
  for (DeviceArg& d : buffers) args.pointers.push_back(d.ptr);
  if (kernel->has_scratch) args.pointers.push_back(scratch.ptr);
  args.count = count;
  const absl::Status bound = args.Bind(*Cu(), shape);
  ASSERT_TRUE(bound.ok()) << label << ": " << bound;

  std::vector<std::vector<uint8_t>> first;
  for (int launch = 0; launch < 2; ++launch) {
    for (size_t a = 0; a < kernel->args.size(); ++a) {  // poison every output before each launch
      if (kernel->args[a].is_output) CU_OK(Cu()->cuMemsetD8(buffers[a].ptr, 0xFF, std::max<int64_t>(buffers[a].bytes, 16)));
    }
    const absl::Status launched = LaunchKernel(*Cu(), function, shape, *grid, args.data(), nullptr);
    ASSERT_TRUE(launched.ok()) << label << ": " << launched;
    CU_OK(Cu()->cuCtxSynchronize());
    size_t out_index = 0;
    for (size_t a = 0; a < kernel->args.size(); ++a) {
      const KernelArg& arg = kernel->args[a];
      if (!arg.is_output) continue;
      Tensor got(arg.dtype, arg.shape);
      CU_OK(Cu()->cuMemcpyDtoH(got.data(), buffers[a].ptr, got.num_bytes()));
      if (launch == 1) {
        EXPECT_TRUE(std::vector<uint8_t>(got.data(), got.data() + got.num_bytes()) == first[out_index])
            << label << ": output " << arg.tensor << " differs between two launches";
        ++out_index;
        continue;
      }
      first.emplace_back(got.data(), got.data() + got.num_bytes());
      const Tensor* want = nullptr;
      for (size_t o = 0; o < region.outputs.size(); ++o) {
        if (region.outputs[o]->name() == arg.tensor) want = &(*expected)[o];
      }
      ASSERT_NE(want, nullptr) << arg.tensor;
      const Tolerance tol = options.tolerance ? *options.tolerance : KernelTolerance(arg.dtype);
      int bad = 0;
      double max_err = 0;
      for (int64_t e = 0; e < got.num_elements(); ++e) {
        const double x = want->GetF64(e), y = got.GetF64(e);
        if (std::isfinite(x)) max_err = std::max(max_err, std::abs(x - y));
        if (!Close(x, y, tol) && bad++ < 3) {
          ADD_FAILURE() << label << ": " << arg.tensor << "[" << e << "] = " << y << ", expected " << x << " ("
                        << DTypeName(arg.dtype) << ", kernel " << kernel->name << ", " << params.ToString() << ")";
        }
      }
      EXPECT_EQ(bad, 0) << label << ": " << bad << " of " << got.num_elements() << " elements of " << arg.tensor
                        << " outside tolerance";
      std::printf("  %-46s %-15s %-5s %10lld elems  max|err| %.3g  %s  regs %d  (%.1f s: reference %.1f, nvrtc %.1f)\n",
                  label.c_str(), RegionKindName(region.kind), DTypeName(arg.dtype),
                  static_cast<long long>(got.num_elements()), max_err, params.ToString().c_str(), compiled->registers,
                  SecondsSince(start), reference_s, compile_s);
      ++Totals().outputs;
      Totals().elements += got.num_elements();
    }
  }
  Cu()->cuModuleUnload(module);
}

int CheckGraph(const std::string& label, std::unique_ptr<Graph> graph, const CheckOptions& options) {
  if (graph == nullptr) return 0;
  std::printf("  checking %s\n", label.c_str());
  std::fflush(stdout);
  auto analysis = Analyze(std::move(graph), AnalyzeOptions{});
  EXPECT_TRUE(analysis.ok()) << label << ": " << analysis.status();
  if (!analysis.ok()) return 0;
  int checked = 0;
  for (const Region& region : analysis->plan.regions) {
    if (!HasKernel(region.kind)) continue;
    CheckRegion(absl::StrFormat("%s/r%d", label, region.id), *analysis->graph, region, options);
    ++checked;
  }
  return checked;
}

std::unique_ptr<Graph> Parse(const std::string& text) {
  auto g = ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status() << "\n" << text;
  return g.ok() ? std::move(*g) : nullptr;
}

}  // namespace kiln::testing_gpu
