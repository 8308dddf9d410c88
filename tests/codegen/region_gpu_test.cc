// Every generated kernel against the reference interpreter, on the GPU (label gpu; skips
// without a device). For each region of each graph: the region's own subgraph is evaluated on
// the interpreter with random inputs; the kernel is compiled with NVRTC, launched through the
// driver API on the same inputs with its outputs poisoned (0xFF bytes: NaN for floats), and
// every element is compared. A second launch must give bit-identical outputs (determinism).
// Graphs: examples/small/*.json and a shape sweep of the row kernels (N in {1, 3, 31, 32, 33,
// 127, 1000, 1024, 4095, 4097, 8192, 32768, 128256}, rows in {1, 7, 1024}) and of pointwise
// kernels (sizes that are not multiples of the vector width).
//
// The reference models what the kernel promises (DESIGN.md §5: arithmetic in f32, storage in
// the tensor's dtype): the region's subgraph is evaluated with every 16-bit float promoted to
// f32 inside, rounding only where the kernel stores (outputs) or casts explicitly.
// Tolerances: ir/compare.h's KernelTolerance (about two units in the last place of the stored
// dtype plus f32 summation order; integers and bool exactly).
#include <cuda.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "absl/strings/str_format.h"
#include "api/compiler.h"
#include "codegen/emit_kernel.h"
#include "codegen/kernel_params.h"
#include "gtest/gtest.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/promote.h"
#include "ir/subgraph.h"
#include "runtime/cuda_driver.h"
#include "runtime/nvrtc_compile.h"

namespace kiln {
namespace {

// The checkout: $KILN_SOURCE_DIR when set (a bundle built elsewhere, scripts/gpu-check), else
// the source folder this binary was built from.
std::string SourceDir() {
  const char* dir = std::getenv("KILN_SOURCE_DIR");
  return dir != nullptr && *dir ? dir : KILN_SOURCE_DIR;
}

#define CU_OK(call)                                                              \
  do {                                                                           \
    CUresult r_ = (call);                                                        \
    const char* name_ = nullptr;                                                 \
    if (r_ != CUDA_SUCCESS) Cu()->cuGetErrorName(r_, &name_);                          \
    ASSERT_EQ(r_, CUDA_SUCCESS) << #call << ": " << (name_ ? name_ : "?");      \
  } while (0)

// The driver, loaded at run time (runtime/cuda_driver.h); null without one.
const CudaDriver* Cu() {
  static const CudaDriver* driver = [] {
    auto d = LoadCudaDriver();
    return d.ok() ? *d : nullptr;
  }();
  return driver;
}

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


struct Summary {
  int kernels = 0;
  int64_t elements = 0;
};
Summary& Totals() {
  static Summary s;
  return s;
}

// Runs one region's kernel and compares it with the interpreter.
void CheckRegion(const std::string& label, const Graph& g, const Region& region, uint64_t seed) {
  Gpu& gpu = TheGpu();
  auto sub = ExtractSubgraph(g, region.nodes, region.inputs, region.outputs);
  ASSERT_TRUE(sub.ok()) << sub.status();
  std::map<std::string, Tensor> inputs = RandomInputs(**sub, seed);
  auto promoted = PromoteTo32(**sub);
  ASSERT_TRUE(promoted.ok()) << label << ": " << promoted.status();
  auto expected = Interpret(**promoted, inputs);
  ASSERT_TRUE(expected.ok()) << label << ": " << expected.status();

  KernelParams params = DefaultParams(region, H100Spec());
  auto kernel = EmitKernel(region, g, params);
  ASSERT_TRUE(kernel.ok()) << label << ": " << kernel.status();
  auto compiled = CompileCuda(kernel->name, kernel->source, gpu.arch);
  ASSERT_TRUE(compiled.ok()) << label << ": " << compiled.status();

  CUmodule module;
  CUfunction function;
  CU_OK(Cu()->cuModuleLoadData(&module, compiled->cubin.data()));
  CU_OK(Cu()->cuModuleGetFunction(&function, module, kernel->name.c_str()));

  std::vector<CUdeviceptr> buffers;
  std::vector<const Tensor*> host_inputs;
  for (const KernelArg& arg : kernel->args) {
    CUdeviceptr p;
    int64_t bytes = NumElements(arg.shape) * ByteSize(arg.dtype);
    CU_OK(Cu()->cuMemAlloc(&p, std::max<int64_t>(bytes, 16)));
    if (arg.is_output) {
      CU_OK(Cu()->cuMemsetD8(p, 0xFF, std::max<int64_t>(bytes, 16)));  // poison
    } else {
      const Tensor& t = inputs.at(arg.tensor);
      CU_OK(Cu()->cuMemcpyHtoD(p, t.data(), bytes));
    }
    buffers.push_back(p);
  }
  CUdeviceptr scratch = 0;
  int64_t scratch_bytes = kernel->ScratchBytes(kernel->count);
  if (kernel->has_scratch) {
    CU_OK(Cu()->cuMemAlloc(&scratch, scratch_bytes));
    CU_OK(Cu()->cuMemsetD8(scratch, 0, scratch_bytes));
  }
  long long count = kernel->count;
  std::vector<void*> args;
  for (CUdeviceptr& p : buffers) args.push_back(&p);
  if (kernel->has_scratch) args.push_back(&scratch);
  args.push_back(&count);

  std::vector<std::vector<uint8_t>> first;
  for (int launch = 0; launch < 2; ++launch) {
    CU_OK(Cu()->cuLaunchKernel(function, kernel->launch.Grid(count), 1, 1, kernel->launch.block, 1, 1,
                         kernel->launch.dynamic_smem_bytes, nullptr, args.data(), nullptr));
    CU_OK(Cu()->cuCtxSynchronize());
    size_t out_index = 0;
    for (size_t a = 0; a < kernel->args.size(); ++a) {
      const KernelArg& arg = kernel->args[a];
      if (!arg.is_output) continue;
      Tensor got(arg.dtype, arg.shape);
      CU_OK(Cu()->cuMemcpyDtoH(got.data(), buffers[a], got.num_bytes()));
      if (launch == 1) {
        EXPECT_TRUE(std::vector<uint8_t>(got.data(), got.data() + got.num_bytes()) == first[out_index])
            << label << ": output " << arg.tensor << " differs between two launches";
        ++out_index;
        continue;
      }
      first.emplace_back(got.data(), got.data() + got.num_bytes());
      // Find the expected tensor by output name.
      const Tensor* want = nullptr;
      for (size_t o = 0; o < region.outputs.size(); ++o) {
        if (region.outputs[o]->name() == arg.tensor) want = &(*expected)[o];
      }
      ASSERT_NE(want, nullptr) << arg.tensor;
      Tolerance tol = KernelTolerance(arg.dtype);
      int bad = 0;
      double max_err = 0;
      for (int64_t e = 0; e < got.num_elements(); ++e) {
        double x = want->GetF64(e), y = got.GetF64(e);
        bool ok = std::isnan(x) ? std::isnan(y)
                  : std::isinf(x) ? x == y
                                  : std::abs(x - y) <= tol.atol + tol.rtol * std::abs(x);
        if (!std::isnan(x) && !std::isinf(x)) max_err = std::max(max_err, std::abs(x - y));
        if (!ok && bad++ < 3) {
          ADD_FAILURE() << label << ": " << arg.tensor << "[" << e << "] = " << y << ", expected " << x
                        << " (" << DTypeName(arg.dtype) << ", kernel " << kernel->name << ", "
                        << params.ToString() << ")";
        }
      }
      EXPECT_EQ(bad, 0) << label << ": " << bad << " of " << got.num_elements() << " elements of "
                        << arg.tensor << " outside tolerance";
      std::printf("  %-46s %-15s %-9s %10lld elems  max|err| %.3g  regs %d\n", label.c_str(),
                  RegionKindName(region.kind), DTypeName(arg.dtype), static_cast<long long>(got.num_elements()),
                  max_err, compiled->registers);
      ++Totals().kernels;
      Totals().elements += got.num_elements();
    }
  }
  for (CUdeviceptr p : buffers) Cu()->cuMemFree(p);
  if (scratch) Cu()->cuMemFree(scratch);
  Cu()->cuModuleUnload(module);
}

void CheckGraph(const std::string& label, std::unique_ptr<Graph> graph, uint64_t seed = 1) {
  std::printf("  checking %s\n", label.c_str());
  std::fflush(stdout);
  auto analysis = Analyze(std::move(graph), AnalyzeOptions{});
  ASSERT_TRUE(analysis.ok()) << label << ": " << analysis.status();
  for (const Region& region : analysis->plan.regions) {
    if (!HasKernel(region.kind)) continue;
    CheckRegion(absl::StrFormat("%s/r%d", label, region.id), *analysis->graph, region, seed);
  }
}

class RegionGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!TheGpu().ok) GTEST_SKIP() << "no CUDA device (or no driver)";
  }
};

TEST_F(RegionGpuTest, SmallExamples) {
  for (const auto& entry : std::filesystem::directory_iterator(SourceDir() + "/examples/small")) {
    if (entry.path().extension() != ".json") continue;
    auto g = LoadGraph(entry.path().string());
    ASSERT_TRUE(g.ok()) << g.status();
    CheckGraph(entry.path().stem().string(), std::move(*g));
  }
}

std::unique_ptr<Graph> Parse(const std::string& text) {
  auto g = ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status() << "\n" << text;
  return g.ok() ? std::move(*g) : nullptr;
}

TEST_F(RegionGpuTest, RowKernelShapeSweep) {
  // KILN_SWEEP_MIN_N starts the sweep at a row length (to rerun its tail).
  const char* min_n = std::getenv("KILN_SWEEP_MIN_N");
  for (int64_t n : {1, 3, 31, 32, 33, 127, 1000, 1024, 4095, 4097, 8192, 32768, 128256}) {
    if (min_n != nullptr && n < std::atoll(min_n)) continue;
    for (int64_t rows : {1, 7, 1024}) {
      if (rows * n > (int64_t{1} << 22)) continue;  // keeps the interpreter's share bounded
      std::string r = std::to_string(rows), c = std::to_string(n);
      CheckGraph("softmax_f32_" + r + "x" + c, Parse(absl::StrFormat(R"(graph g(x: f32[%s,%s]) {
          y: f32[%s,%s] = softmax(x) {axis = 1}
          return y
        })", r, c, r, c)));
      CheckGraph("layernorm_bf16_" + r + "x" + c, Parse(absl::StrFormat(R"(graph g(x: bf16[%s,%s], w: bf16[%s], b: bf16[%s]) {
          y: bf16[%s,%s] = layer_norm(x, w, b) {axis = 1, eps = 1e-05}
          return y
        })", r, c, c, c, r, c)));
      CheckGraph("add_rmsnorm_f16_" + r + "x" + c, Parse(absl::StrFormat(R"(graph g(x: f16[%s,%s], res: f16[%s,%s], w: f16[%s]) {
          h: f16[%s,%s] = add(x, res)
          y: f16[%s,%s] = rms_norm(h, w) {axis = 1, eps = 1e-06}
          return y, h
        })", r, c, r, c, c, r, c, r, c)));
      CheckGraph("xent_bf16_" + r + "x" + c, Parse(absl::StrFormat(R"(graph g(x: bf16[%s,%s], t: i64[%s]) {
          l: bf16[] = cross_entropy(x, t) {ignore_index = -100, reduction = "mean"}
          return l
        })", r, c, r)));
    }
  }
}

TEST_F(RegionGpuTest, PointwiseSizesAndBroadcasts) {
  CheckGraph("bias_gelu_7x1001", Parse(R"(graph g(x: bf16[7,1001], b: bf16[1001]) {
      t: bf16[7,1001] = add(x, b)
      y: bf16[7,1001] = gelu_tanh(t)
      return y
    })"));
  CheckGraph("swiglu_3x13_f16", Parse(R"(graph g(a: f16[3,13], u: f16[3,13]) {
      s: f16[3,13] = silu(a)
      y: f16[3,13] = mul(s, u)
      return y
    })"));
  CheckGraph("scalar_f32", Parse(R"(graph g(x: f32[1]) {
      y: f32[1] = exp(x)
      return y
    })"));
  CheckGraph("broadcast_5x1x9", Parse(R"(graph g(x: f32[5,1,9], y: f32[4,9], z: f32[5,4,1]) {
      a: f32[5,4,9] = add(x, y)
      b: f32[5,4,9] = mul(a, z)
      c: bool[5,4,9] = gt(b, a)
      d: f32[5,4,9] = where(c, b, a)
      return d
    })"));
  CheckGraph("dropout_add_333x1001", Parse(R"(graph g(x: bf16[333,1001], r: bf16[333,1001]) {
      d: bf16[333,1001] = dropout(x) {offset = 3, p = 0.1, seed = 42}
      y: bf16[333,1001] = add(d, r)
      return y
    })"));
  CheckGraph("transpose_copy_33x65", Parse(R"(graph g(x: f32[33,65]) {
      t: f32[65,33] = transpose(x) {perm = [1, 0]}
      return t
    })"));
  CheckGraph("column_sum_64x33", Parse(R"(graph g(x: f32[64,33]) {
      s: f32[33] = reduce_sum(x) {axes = [0], keep_dims = false}
      return s
    })"));
}

TEST_F(RegionGpuTest, ZZSummary) {
  std::printf("gpu-check: %d kernel outputs checked against the interpreter, %lld elements\n",
              Totals().kernels, static_cast<long long>(Totals().elements));
}

}  // namespace
}  // namespace kiln
