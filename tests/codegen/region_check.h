// The GPU side of the region tests (label gpu): compile one region's generated kernel with
// NVRTC, launch it through the driver API on random inputs with its outputs poisoned (0xFF
// bytes: NaN for floats, -1 for integers), and compare every element with the reference
// interpreter. The kernel is launched twice, poisoned again in between: the second launch must
// give the same bits (determinism) and must write every element again.
//
// The reference models what the kernel promises (DESIGN.md §5: arithmetic in f32, storage in
// the tensor's dtype): the region's subgraph is evaluated with every 16-bit float promoted to
// f32 inside, rounding only where the kernel stores (outputs) or casts explicitly.
// Tolerances: ir/compare.h's KernelTolerance (about two units in the last place of the stored
// dtype plus f32 summation order; integers and bool exactly).
#ifndef KILN_TESTS_CODEGEN_REGION_CHECK_H_
#define KILN_TESTS_CODEGEN_REGION_CHECK_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "codegen/kernel_params.h"
#include "ir/compare.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "passes/fusion/region.h"

namespace kiln::testing_gpu {

// The checkout: $KILN_SOURCE_DIR when set (a bundle built elsewhere, scripts/gpu-check), else
// the source folder this binary was built from.
std::string SourceDir();

// True when a CUDA driver and device are present; makes device 0's primary context current.
bool HaveGpu();
// "sm_90a" for compute capability 9.0, "sm_80" for 8.0: the device's NVRTC target.
const std::string& GpuArch();

struct CheckOptions {
  uint64_t seed = 1;                                  // for RandomInputs of the region's subgraph
  std::optional<KernelParams> params;                 // default: DefaultParams on the h100 spec
  const std::map<std::string, Tensor>* inputs = nullptr;  // overrides the random inputs by name
  std::optional<Tolerance> tolerance;                 // default: ir/compare.h's KernelTolerance
};

// Runs one region's kernel and compares it with the interpreter (gtest failures on mismatch).
void CheckRegion(const std::string& label, const Graph& graph, const Region& region,
                 const CheckOptions& options = {});

// Analyzes `graph` (h100 spec) and checks every region that has a generated kernel. Returns
// the number of kernel regions checked.
int CheckGraph(const std::string& label, std::unique_ptr<Graph> graph, const CheckOptions& options = {});

// Parses IR text (a gtest failure and nullptr if it does not parse).
std::unique_ptr<Graph> Parse(const std::string& text);

// Kernel outputs and elements checked so far in this process (for the closing summary line).
struct CheckTotals {
  int outputs = 0;
  int64_t elements = 0;
};
CheckTotals& Totals();

}  // namespace kiln::testing_gpu

#endif  // KILN_TESTS_CODEGEN_REGION_CHECK_H_
