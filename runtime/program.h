// Program: everything needed to run a compiled graph, as plain data (DESIGN.md §6). The JIT
// (runtime/jit/lower.h) builds it from a FusionPlan; runtime/artifact.h saves and loads it as
// one file; runtime/executable.h loads it onto a GPU and runs it. Nothing here refers to the
// passes, codegen or NVRTC, so a saved Program runs with the driver and cuBLASLt alone.
//
// Storage. Every tensor a step touches is a Buffer. A buffer lives in one place:
//   kInput     the caller's input pointer #index
//   kOutput    the caller's output pointer #index
//   kConstant  the constant block, uploaded once at load: `offset` into Program::constants
//   kArena     the per-run scratch arena, at `offset` (the buffer plan reuses bytes between
//              buffers whose lifetimes do not overlap; runtime/buffer_plan.h)
//   kPersistent device memory owned by the Executable, zeroed once at load (row kernels'
//              last-block counters and partials, which they leave zeroed on exit)
//   kAlias     the same bytes as buffer `alias_of` (a reshape: a view, no kernel)
//
// Steps run in order on the caller's stream: a kernel launch (its CUBIN in `modules`), a
// cuBLASLt matmul, or a device-to-device copy (a graph output that is an input, a constant,
// or a view of another output).
#ifndef KILN_RUNTIME_PROGRAM_H_
#define KILN_RUNTIME_PROGRAM_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "ir/dtype.h"
#include "ir/shape.h"
#include "ir/tensor_map.h"
#include "runtime/matmul.h"

namespace kiln {

enum class BufferKind { kInput, kOutput, kConstant, kArena, kPersistent, kAlias };
const char* BufferKindName(BufferKind kind);

struct Buffer {
  std::string name;  // the tensor (node) name
  DType dtype = DType::kF32;
  Shape shape;
  int64_t bytes = 0;
  BufferKind kind = BufferKind::kArena;
  int index = -1;      // kInput / kOutput: position in the graph's inputs / outputs
  int64_t offset = 0;  // kConstant / kArena / kPersistent: byte offset in its block
  int alias_of = -1;   // kAlias: the buffer whose bytes these are
};

// How a kernel is launched (the launch convention of codegen/kernel_source.h): a 3-D grid of
// 1-D blocks, dynamic shared memory (raised past 48 KB with cuFuncSetAttribute at load),
// thread-block clusters along x (sm_90), and cooperative launches, whose x extent the
// executable caps at what is resident on the GPU (a multiple of grid_multiple).
struct LaunchShape {
  int64_t grid = 1;           // x extent
  int64_t grid_y = 1, grid_z = 1;
  int block = 256;
  int dynamic_smem_bytes = 0;
  int cluster_x = 1;          // blocks per cluster along x; 1: no cluster
  bool cooperative = false;   // every block resident at once
  int64_t grid_multiple = 1;  // the x extent stays a multiple of this (blocks that share a row)
  // The kernel's trailing TMA tensor maps (codegen/kernel_source.h), encoded at each launch from
  // the address of the pointer argument each names (runtime/launch.h LaunchArgs).
  std::vector<TensorMapSpec> tensor_maps;
};

struct KernelStep {
  std::string name;       // the extern "C" symbol
  int module = -1;        // index into Program::modules
  std::vector<int> args;  // buffer ids, in the kernel's parameter order (ABI: codegen/kernel_source.h)
  int scratch = -1;       // buffer id of the scratch argument, or -1 when the kernel has none
  // (input, output) positions in `args` where the output may be written over the input
  // (codegen's KernelSource::in_place); the buffer plan gives both the same bytes when the
  // input is dead after this step (runtime/buffer_plan.h).
  std::vector<std::pair<int, int>> in_place;
  int64_t count = 0;      // the trailing `long long count` argument
  LaunchShape launch;
};

struct MatmulStep {
  MatmulSpec spec;
  // One cuBLASLt call per entry: element offsets into a, b, d (and residual, which shares d's
  // offsets). Usually one entry {0, 0, 0}; a batch broadcast that strides cannot express takes
  // one entry per batch.
  struct Call {
    int64_t a = 0, b = 0, d = 0;
  };
  std::vector<Call> calls = {Call{}};
  int a = -1, b = -1, d = -1, bias = -1, residual = -1;  // buffer ids
};

struct CopyStep {
  int src = -1, dst = -1;  // buffer ids of equal byte size
};

struct Step {
  enum class Kind { kKernel, kMatmul, kCopy };
  Kind kind = Kind::kKernel;
  KernelStep kernel;
  MatmulStep matmul;
  CopyStep copy;
  int region = -1;       // the FusionPlan region this step belongs to
  std::string label;     // "region 3 row_reduction: softmax.max, ..." for reports
  double predicted_us = 0;  // the cost model's time for the region (on its first step)
  int64_t bytes = 0;        // bytes this step reads and writes (for GB/s in `kiln bench`)
};

// A compiled kernel module: its CUBIN and what the compile reported.
struct Module {
  std::string name;  // the kernel it holds
  std::string cubin;
  int registers = -1;
  int64_t spill_bytes = 0;
  double compile_ms = 0;
  std::string params;  // KernelParams::ToString(), for reports
};

struct Program {
  std::string graph_name;
  std::string graph_hash;  // FNV-1a of the source graph's printed text (hex)
  std::string arch;        // "sm_90a": the CUBINs' architecture
  std::string device;      // the cost model's DeviceSpec name the plan was made for ("h100")
  std::vector<Buffer> buffers;
  std::vector<int> inputs;   // buffer ids, graph input order
  std::vector<int> outputs;  // buffer ids, graph output order
  std::vector<std::string> output_names;
  std::vector<Module> modules;
  std::vector<Step> steps;
  std::string constants;     // bytes of the constant block (16-byte aligned offsets)
  int64_t arena_bytes = 0;
  int64_t persistent_bytes = 0;
  std::string ledger_json;   // the fusion ledger (FusionPlanJson) it was compiled with
  std::string lowering_ledger;  // JSON lines, a "lowered" record per region: kernels, their
                                // KernelParams, registers, spills, compile ms, the tuner's
                                // timings (api/lowering_ledger.h)
  std::string source_graph;  // the imported graph in IR text (ir/printer.h), so that
                             // `kiln run FILE.kiln --check` has its reference

  // Structural checks (ids in range, sizes agree, aliases acyclic, offsets inside blocks):
  // a loaded artifact is checked before anything touches the GPU.
  absl::Status Validate() const;
  // One line per step and buffer, for `kiln dump`-style listings and tests.
  std::string ToString() const;
  // Compulsory bytes: the graph's inputs and outputs.
  int64_t CompulsoryBytes() const;
};

}  // namespace kiln

#endif  // KILN_RUNTIME_PROGRAM_H_
