// The cost model: predicted run time of a region on a DeviceSpec, as plain terms so every
// fusion decision can show the numbers behind it (DESIGN.md §4).
//   memory_us  = (bytes_read + bytes_written) / achievable DRAM bandwidth
//   compute_us = flops / rate + transcendentals / SFU rate   (matmul/attention: their rates)
//   total_us   = max(memory_us, compute_us) + launch_us        (views: 0, no kernel)
// Bytes are counted in the tensors' real dtypes; a scalar constant is a literal and reads
// nothing; a broadcast operand is read once (it stays in L2). FLOPs and transcendentals come
// from OpWorkOf, one classification per row of the op table. A row reduction is priced as
// the row kernel runs it (passes/cost/row_fit.h): on chip when its row fits the register
// budget, else streamed, every extra pass re-reading the row-shaped inputs. An attention
// region is priced as what runs until a tiled template exists: the fallback of cuBLASLt QK^T,
// a row kernel and cuBLASLt PV over stored scores (see EstimateRunTime).
#ifndef KILN_PASSES_COST_COST_MODEL_H_
#define KILN_PASSES_COST_COST_MODEL_H_

#include <string>

#include "passes/cost/device_spec.h"
#include "passes/fusion/region.h"

namespace kiln {

struct RunTimeEstimate {
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  double flops = 0;
  double transcendentals = 0;
  int passes = 1;          // passes over the row inputs (row reductions)
  bool row_on_chip = true;
  std::string row_fit;     // row reductions: the on-chip rule's sentence (FitRowOnChip)
  bool attention_fallback = false;  // priced as runtime/jit's attention fallback (no tiled template yet)
  double memory_us = 0;
  double compute_us = 0;
  double launch_us = 0;
  double total_us = 0;

  // Adds the terms of a region that runs after this one (a sum over several regions):
  // bytes, work and times add; passes is the largest, row_fit the sentences joined.
  void Add(const RunTimeEstimate& other);
  std::string ToString() const;
};

// How the model counts an op's work, per element of its output (reductions and composites:
// per element of their first operand). One entry per row of the op table (ir/ops.def).
enum class WorkClass {
  kDataMovement,    // leaves, layout, broadcast: bytes only
  kArithmetic,      // pointwise ALU work
  kTranscendental,  // pointwise with special-function-unit work
  kRandom,          // dropout: Philox4x32-10 per element
  kReduction,       // one combine per input element
  kComposite,       // priced as its decomposition (reaches fusion only with decompose disabled)
  kMatmul,          // 2 M N K in total
  kAttention,       // 2 S T (D + E) in total, halved when causal; one exp per score
  kUnclassified,    // an op the model does not know: a bug (a test walks the table)
};
struct OpWork {
  WorkClass work = WorkClass::kUnclassified;
  double flops = 0;            // per element
  double transcendentals = 0;  // per element
};
OpWork OpWorkOf(OpKind op);
const char* WorkClassName(WorkClass work);

// FLOPs and transcendental operations of one node.
struct NodeWork {
  double flops = 0;
  double transcendentals = 0;
};
NodeWork WorkOf(const Node* node);

RunTimeEstimate EstimateRunTime(const Region& region, const DeviceSpec& device);

// A candidate merge's price: the regions as they are (their terms summed), and merged.
struct RunTimes {
  RunTimeEstimate unfused;
  RunTimeEstimate fused;
  double saved_us() const { return unfused.total_us - fused.total_us; }
};

}  // namespace kiln

#endif  // KILN_PASSES_COST_COST_MODEL_H_
