// The row kernel's on-chip rule (templates/row_reduce.cuh): whether a row region keeps its row
// in registers, and if not, how many streaming passes over the row the chunked variant makes.
// One function decides it for both the cost model (passes/cost/cost_model.cc) and the kernel
// parameters (codegen/kernel_params.cc), so the price and the kernel never disagree.
//
// The row kernel gives a row a warp (rows of at most 1024 elements) or up to
// DeviceSpec::RowBudgetValues() / kRowCacheFloatsPerThread threads (512 on sm_90: 64 cached
// values leave 64 of the 128 registers a thread has at 512 threads per SM). A row fits when its
// row-shaped inputs, spread over those threads in 16-byte vectors (up to 8 elements), need at
// most kRowCacheFloatsPerThread f32 registers per thread. Otherwise the row is streamed from
// memory: one pass per dependency level of its reductions (a reduce_max followed by
// reduce_sum(exp(x - max)) is one pass, the online max+sum), plus one pass for row-shaped outputs.
#ifndef KILN_PASSES_COST_ROW_FIT_H_
#define KILN_PASSES_COST_ROW_FIT_H_

#include <cstdint>
#include <string>

#include "passes/cost/device_spec.h"
#include "passes/fusion/region.h"

namespace kiln {

// Per-thread budget, in f32 values, of row-shaped inputs cached in registers by a row kernel
// (64 of the 255 registers a thread may use, leaving room for addressing and the prologue).
inline constexpr int64_t kRowCacheFloatsPerThread = 64;

struct RowFit {
  bool on_chip = true;
  int64_t row_inputs = 0;      // row-shaped inputs the kernel caches (at least 1)
  int64_t threads = 0;         // threads that share a row: on chip, the fewest that hold it
  int64_t per_thread = 0;      // cached f32 values per thread with `threads` threads
  int passes = 1;              // passes over the row inputs (1 when on chip)
  bool online_max_sum = false; // streamed: a max and sum(exp(x - max)) share one pass
  std::string reason;          // one sentence for the ledger and `kiln dump`
};

// The rule for a row-reduction region (other kinds: on chip, no reason).
RowFit FitRowOnChip(const Region& region, const DeviceSpec& device);

}  // namespace kiln

#endif  // KILN_PASSES_COST_ROW_FIT_H_
