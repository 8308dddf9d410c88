// The cost model: predicted run time of a region on a DeviceSpec, as plain terms so every
// fusion decision can show the numbers behind it (DESIGN.md §4).
//   memory_us  = (bytes_read + bytes_written) / achievable DRAM bandwidth
//   compute_us = flops / rate + transcendentals / SFU rate   (matmul/attention: their rates)
//   total_us   = max(memory_us, compute_us) + launch_us        (views: 0, no kernel)
// Bytes are counted in the tensors' real dtypes; a scalar constant is a literal and reads
// nothing; a broadcast operand is read once (it stays in L2). A row reduction whose row does
// not fit the on-chip budget (DeviceSpec::RowBudgetValues) is priced as the chunked variant:
// an online first pass (running max/sum, Welford) plus, when it writes row-shaped outputs, a
// second pass that reads the row inputs again.
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
  double memory_us = 0;
  double compute_us = 0;
  double launch_us = 0;
  double total_us = 0;

  std::string ToString() const;
};

// FLOPs and transcendental operations of one node, over its own output elements.
struct NodeWork {
  double flops = 0;
  double transcendentals = 0;
};
NodeWork WorkOf(const Node* node);

RunTimeEstimate EstimateRunTime(const Region& region, const DeviceSpec& device);

// A candidate merge's price: the regions as they are, and merged.
struct RunTimes {
  double unfused_us = 0;
  double fused_us = 0;
  double saved_us() const { return unfused_us - fused_us; }
};

}  // namespace kiln

#endif  // KILN_PASSES_COST_COST_MODEL_H_
