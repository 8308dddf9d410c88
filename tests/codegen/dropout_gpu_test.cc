// Seeded dropout on the GPU, bit for bit across kernel variants (docs/dropout.md §5; label
// gpu, skips without a device). Two graphs, each fused into one kernel:
//   dropout          y = dropout(x)
//   dropout_add_ln   h = dropout(x) + r; y = layer_norm(h, w, b)   (outputs y, h)
// in f32 and bf16 (dropout also f16), shapes [7,40], [333,1001], [1024,4096], [3,128256],
// p in {0.1, 0.5}, seed and offset above 2^32 (both words of each used). Every KernelParams variant
// -- codegen's CandidateParams, vector width 1 and, for the row kernel, a forced streamed row,
// a warp per row and a block per row -- is compiled with NVRTC and launched twice: with the
// grid that covers the region and with a 3-block grid (the grid-stride loop). For every
// element:
//  * the mask: y[i] != 0 (dropout) or h[i] != r[i] (dropout_add_ln) iff ir/philox's
//    DropoutKeep(seed, offset, i, p). Inputs are drawn with 0.5 <= |v| < 1, so a kept value is
//    never 0 and never vanishes next to r.
//  * the values: dropout's y and dropout_add_ln's h equal the interpreter's bit for bit, in f32
//    (the product (float)x * s, plus r, each rounded once to f32) and in f16/bf16 (that f32
//    result rounded once more to the 16-bit type, to nearest even, as the interpreter stores);
//    dropout_add_ln's y, a row reduction summed in another order, within KernelTolerance.
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>

#include "runtime/jit/lower.h"
#include "runtime/launch.h"
#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_format.h"
#include "api/compiler.h"
#include "codegen/emit_kernel.h"
#include "codegen/kernel_params.h"
#include "gtest/gtest.h"
#include "ir/base/status.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/philox.h"
#include "ir/promote.h"
#include "ir/subgraph.h"
#include "runtime/cuda_driver.h"
#include "runtime/executable.h"
#include "runtime/jit/kernel_cache.h"
#include "tests/codegen/codegen_test_util.h"

namespace kiln {
namespace {

constexpr uint64_t kSeed = (uint64_t{1} << 32) + 0x5eed;
constexpr uint64_t kOffset = (uint64_t{3} << 32) + 7;

// Every graph input with 0.5 <= |v| < 1 and a random sign, deterministic in `seed`.
std::map<std::string, Tensor> Inputs(const Graph& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> magnitude(0.5, 1.0);
  std::map<std::string, Tensor> out;
  for (const Node* n : g.inputs()) {
    Tensor t(n->dtype(), n->shape());
    for (int64_t i = 0; i < t.num_elements(); ++i) t.SetF64(i, (rng() & 1 ? 1 : -1) * magnitude(rng));
    out.emplace(n->name(), std::move(t));
  }
  return out;
}

// CandidateParams plus vector width 1 and, for row kernels, a streamed row (chunk > 0), a warp
// per row and a block per row (the emitter streams a row that does not fit on chip).
std::vector<KernelParams> Variants(const Region& region, const DeviceSpec& device) {
  std::vector<KernelParams> out = CandidateParams(region, device);
  auto add = [&](KernelParams p) {
    if (ValidateParams(p).ok() && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  };
  const KernelParams d = out[0];
  add(KernelParams{d.block_size, 1, d.rows_per_block, d.chunk});
  if (region.kind == RegionKind::kRowReduction) {
    const int threads_per_row = d.rows_per_block == 1 ? d.block_size : 32;
    add(KernelParams{d.block_size, d.vector_width, d.rows_per_block, int64_t{threads_per_row} * d.vector_width * 2});
    add(KernelParams{256, d.vector_width, 8, 0});
    add(KernelParams{256, d.vector_width, 1, 0});
  }
  return out;
}

// Launches `kernel` once per grid size on `inputs`, outputs poisoned (0xFF) before each launch;
// returns the outputs of each launch in argument order.
absl::StatusOr<std::vector<std::vector<Tensor>>> Launch(const KernelSource& kernel, const std::vector<char>& cubin,
                                                       const std::map<std::string, Tensor>& inputs,
                                                       const std::vector<int64_t>& grids) {
  KILN_ASSIGN_OR_RETURN(const CudaDriver* cu, LoadCudaDriver());
  CUmodule module;
  CUfunction function;
  KILN_CU_RETURN_IF_ERROR(cu->cuModuleLoadData(&module, cubin.data()));
  absl::Cleanup unload = [&] { cu->cuModuleUnload(module); };
  KILN_CU_RETURN_IF_ERROR(cu->cuModuleGetFunction(&function, module, kernel.name.c_str()));
  std::vector<DeviceBuffer> buffers;
  std::vector<CUdeviceptr> pointers;
  for (const KernelArg& arg : kernel.args) {
    const int64_t bytes = NumElements(arg.shape) * ByteSize(arg.dtype);
    KILN_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(std::max<int64_t>(bytes, 16)));
    if (!arg.is_output) KILN_CU_RETURN_IF_ERROR(cu->cuMemcpyHtoD(b.get(), inputs.at(arg.tensor).data(), bytes));
    pointers.push_back(b.get());
    buffers.push_back(std::move(b));
  }
  if (kernel.has_scratch) {
    KILN_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(kernel.ScratchBytes(kernel.count)));
    KILN_CU_RETURN_IF_ERROR(cu->cuMemsetD8(b.get(), 0, b.bytes()));
    pointers.push_back(b.get());
    buffers.push_back(std::move(b));
  }
  long long count = kernel.count;
  LaunchArgs args;
  args.pointers = pointers;
  args.count = count;
  KILN_RETURN_IF_ERROR(args.Bind(*cu, LaunchShapeOf(kernel, count)));
  std::vector<std::vector<Tensor>> results;
  for (int64_t grid : grids) {
    for (size_t a = 0; a < kernel.args.size(); ++a) {
      if (kernel.args[a].is_output) KILN_CU_RETURN_IF_ERROR(cu->cuMemsetD8(pointers[a], 0xFF, buffers[a].bytes()));
    }
    const LaunchShape shape = LaunchShapeOf(kernel, count);
    KILN_ASSIGN_OR_RETURN(const int64_t most, PrepareKernel(*cu, function, shape));
    const int64_t multiple = shape.grid_multiple;
    KILN_RETURN_IF_ERROR(LaunchKernel(*cu, function, shape, std::max(multiple, std::min(grid, most) / multiple * multiple),
                                      args.data(), nullptr));
    KILN_CU_RETURN_IF_ERROR(cu->cuCtxSynchronize());
    std::vector<Tensor> outs;
    for (size_t a = 0; a < kernel.args.size(); ++a) {
      const KernelArg& arg = kernel.args[a];
      if (!arg.is_output) continue;
      Tensor t(arg.dtype, arg.shape);
      KILN_CU_RETURN_IF_ERROR(cu->cuMemcpyDtoH(t.data(), pointers[a], t.num_bytes()));
      outs.push_back(std::move(t));
    }
    results.push_back(std::move(outs));
  }
  return results;
}

// Element i of `got` has the same bytes as element i of `want` (same dtype and shape).
bool SameBits(const Tensor& got, const Tensor& want, int64_t i) {
  const int64_t size = ByteSize(got.dtype());
  return std::memcmp(got.data() + i * size, want.data() + i * size, size) == 0;
}

struct Case {
  std::string label;
  std::string text;  // IR text; the graph fuses into one kernel
  double p = 0;
  bool with_add = false;  // dropout_add_ln: the mask is read from h against r
};

// Runs every variant of `c`'s one kernel and checks mask and values element by element.
void CheckCase(const Case& c, KernelCache& cache, const std::string& arch) {
  Analysis a = testing_codegen::AnalyzeText(c.text);
  std::vector<const Region*> regions = testing_codegen::KernelRegions(a.plan);
  ASSERT_EQ(regions.size(), 1u) << c.label << ": expected one fused kernel";
  const Region& region = *regions[0];
  auto sub = ExtractSubgraph(*a.graph, region.nodes, region.inputs, region.outputs);
  ASSERT_TRUE(sub.ok()) << sub.status();
  const std::map<std::string, Tensor> inputs = Inputs(**sub, 7);
  auto promoted = PromoteTo32(**sub);
  ASSERT_TRUE(promoted.ok()) << promoted.status();
  auto expected = Interpret(**promoted, inputs);
  ASSERT_TRUE(expected.ok()) << c.label << ": " << expected.status();
  std::map<std::string, const Tensor*> want_of;
  for (size_t o = 0; o < region.outputs.size(); ++o) want_of[region.outputs[o]->name()] = &(*expected)[o];
  std::vector<uint8_t> keep(NumElements(region.outputs[0]->shape()));
  for (size_t i = 0; i < keep.size(); ++i) keep[i] = DropoutKeep(kSeed, kOffset, i, c.p);

  std::vector<KernelSource> kernels;
  std::vector<KernelToCompile> to_compile;
  for (const KernelParams& params : Variants(region, a.plan.device)) {
    auto k = EmitKernel(region, params);
    ASSERT_TRUE(k.ok()) << c.label << " " << params.ToString() << ": " << k.status();
    bool seen = false;
    for (const KernelSource& other : kernels) seen |= other.name == k->name;
    if (seen) continue;  // an emitter fallback made the same kernel
    to_compile.push_back({k->name, k->source});
    kernels.push_back(std::move(*k));
  }
  auto compiled = cache.GetOrCompileAll(to_compile, arch);
  ASSERT_TRUE(compiled.ok()) << c.label << ": " << compiled.status();

  for (size_t v = 0; v < kernels.size(); ++v) {
    const KernelSource& k = kernels[v];
    const int64_t full_grid = k.launch.Grid(k.count);
    auto runs = Launch(k, (*compiled)[v].compiled.cubin, inputs, {full_grid, std::min<int64_t>(3, full_grid)});
    ASSERT_TRUE(runs.ok()) << c.label << ": " << runs.status();
    const std::string where = absl::StrFormat("%s, kernel %s (%s)", c.label, k.name, k.params.ToString());
    for (size_t run = 0; run < runs->size(); ++run) {
      SCOPED_TRACE(absl::StrFormat("%s, grid %d", where, run == 0 ? full_grid : std::min<int64_t>(3, full_grid)));
      int64_t kept = 0, bad_mask = 0, bad_bits = 0;
      size_t out_index = 0;
      for (const KernelArg& arg : k.args) {
        if (!arg.is_output) continue;
        const Tensor& got = (*runs)[run][out_index++];
        ASSERT_EQ(want_of.count(arg.tensor), 1u) << arg.tensor;
        const Tensor& want = *want_of.at(arg.tensor);
        if (arg.tensor == "y" && c.with_add) {  // after the row reduction: within tolerance
          Comparison cmp = Compare(got, want, KernelTolerance(arg.dtype));
          EXPECT_TRUE(cmp.ok()) << "y: " << cmp.ToString();
          continue;
        }
        // dropout's y or dropout_add_ln's h: the mask and the bits.
        const Tensor* r = c.with_add ? &inputs.at("r") : nullptr;
        for (int64_t i = 0; i < got.num_elements(); ++i) {
          const bool got_keep = r != nullptr ? got.GetF64(i) != r->GetF64(i) : got.GetF64(i) != 0;
          kept += keep[i];
          if (got_keep != static_cast<bool>(keep[i]) && bad_mask++ < 3) {
            ADD_FAILURE() << arg.tensor << "[" << i << "] = " << got.GetF64(i) << ": kept " << got_keep
                          << ", the contract says " << static_cast<bool>(keep[i]);
          }
          if (!SameBits(got, want, i) && bad_bits++ < 3) {
            ADD_FAILURE() << arg.tensor << "[" << i << "] = " << got.GetF64(i) << ", the interpreter has "
                          << want.GetF64(i);
          }
        }
        EXPECT_EQ(bad_mask, 0) << arg.tensor << ": keep bits differ from DropoutKeep";
        EXPECT_EQ(bad_bits, 0) << arg.tensor << ": values differ from the interpreter's bits";
      }
      if (run == 0) {
        std::printf("  %-34s %-36s grid %-7lld kept %.4f\n", c.label.c_str(), k.params.ToString().c_str(),
                    static_cast<long long>(full_grid),
                    static_cast<double>(kept) / static_cast<double>(keep.size()));
      }
    }
  }
}

std::vector<Case> Cases(bool with_add) {
  std::vector<Case> out;
  const std::vector<const char*> dtypes = with_add ? std::vector<const char*>{"f32", "bf16"}
                                                   : std::vector<const char*>{"f32", "f16", "bf16"};
  for (const char* dtype : dtypes) {
    for (auto [rows, n] : std::vector<std::pair<int64_t, int64_t>>{{7, 40}, {333, 1001}, {1024, 4096}, {3, 128256}}) {
      for (double p : {0.1, 0.5}) {
        const std::string t = absl::StrFormat("%s[%d,%d]", dtype, rows, n);
        const std::string attrs = absl::StrFormat("{p = %g, seed = %d, offset = %d}", p, kSeed, kOffset);
        Case c;
        c.p = p;
        c.with_add = with_add;
        c.label = absl::StrFormat("%s_%s_%dx%d_p%g", with_add ? "dropout_add_ln" : "dropout", dtype, rows, n, p);
        if (with_add) {
          const std::string wt = absl::StrFormat("%s[%d]", dtype, n);
          c.text = absl::StrFormat(R"(graph g(x: %s, r: %s, w: %s, b: %s) {
              d: %s = dropout(x) %s
              h: %s = add(d, r)
              y: %s = layer_norm(h, w, b) {axis = -1, eps = 1e-05}
              return y, h
            })", t, t, wt, wt, t, attrs, t, t);
        } else {
          c.text = absl::StrFormat(R"(graph g(x: %s) {
              y: %s = dropout(x) %s
              return y
            })", t, t, attrs);
        }
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

class DropoutGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveGpu()) GTEST_SKIP() << "no CUDA device (or no driver)";
    ASSERT_TRUE(EnsureContext().ok());
    auto arch = CurrentDeviceArch();
    ASSERT_TRUE(arch.ok()) << arch.status();
    arch_ = *arch;
  }
  std::string arch_;
  KernelCache cache_{""};  // memory only: variants that coincide compile once
};

TEST_F(DropoutGpuTest, PlainDropoutMaskAndValuesAreBitExactInEveryVariant) {
  for (const Case& c : Cases(/*with_add=*/false)) CheckCase(c, cache_, arch_);
}

TEST_F(DropoutGpuTest, DropoutAddLayerNormMaskAndHAreBitExactInEveryVariant) {
  for (const Case& c : Cases(/*with_add=*/true)) CheckCase(c, cache_, arch_);
}

}  // namespace
}  // namespace kiln
