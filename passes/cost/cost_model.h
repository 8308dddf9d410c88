// The cost model: predicted run time of a region on a DeviceSpec, as plain terms so every
// fusion decision can show the numbers behind it (DESIGN.md §4).
//   memory_us  = (bytes_read + bytes_written + wasted_bytes) / the bandwidth the kernel's blocks
//                can draw (wasted: the unused part of the 32-byte sectors uncoalesced reads fetch)
//   compute_us = flops / rate + transcendentals / SFU rate + index_ops / index rate
//                (matmul/attention: their rates; index_ops: the plain elementwise kernel's
//                per-element divisions, passes/fusion/plain_vector.h IndexOpsPerElement)
//   total_us   = max(memory_us, compute_us) + launch_us        (views: 0, no kernel)
// Bytes are counted in the tensors' real dtypes; a scalar constant is a literal and reads
// nothing; a broadcast operand is read once (it stays in L2). FLOPs and transcendentals come
// from OpWorkOf, one classification per row of the op table. The bandwidth is the copy
// bandwidth when the kernel's blocks cover every SM, else the SMs they occupy times what one
// SM draws (DrawnBandwidth): a reduction with 16 outputs is not priced like one with 16k.
// Each region kind prices itself from these pieces (region_kind.h; the row kind as the row
// kernel runs it, passes/cost/row_fit.h: on chip when its row fits, else streamed, every
// extra pass re-reading the row-shaped inputs).
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
  double index_ops = 0;    // 64-bit divisions/remainders of index arithmetic (plain elementwise kernels)
  int passes = 1;          // passes over the row inputs (row reductions)
  bool row_on_chip = true;
  std::string row_fit;     // row reductions: the on-chip rule's sentence (FitRowOnChip)
  int64_t wasted_bytes = 0;  // sectors fetched beyond the bytes used: uncoalesced reads
  std::string layout;      // elementwise kinds: tiled or uncoalesced reads (LayoutPlan::Summary)
  int64_t blocks = 0;      // thread blocks the kernel runs (0: not a kernel, or not counted)
  double memory_us = 0;
  double compute_us = 0;
  double launch_us = 0;
  double total_us = 0;

  // Adds the terms of a region that runs after this one (a sum over several regions):
  // bytes, work and times add; passes is the largest, row_fit and layout the sentences joined.
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

// The region's price: its kind's hook (region_kind.h).
RunTimeEstimate EstimateRunTime(const Region& region, const DeviceSpec& device);

// Pieces the kinds price with. The bytes the region's inputs and outputs move and the work of
// its nodes (memory, compute and totals left at 0).
RunTimeEstimate TrafficAndWork(const Region& region);
// The DRAM bandwidth (bytes per us) a kernel of `blocks` blocks of `threads` threads draws: each
// busy SM draws sm_bytes_per_us once it holds kSaturatingThreadsPerSm threads (loads in flight
// enough to cover the latency), proportionally less below; at most the copy bandwidth. An SM
// holds its share of the blocks, at most 1024 / threads of them (half occupancy) or
// `resident_per_sm` where registers or shared memory allow fewer (0: no such limit).
// `thread_worth`: the share of an aligned thread's loads in flight a thread keeps (row_fit.h's
// kRaggedThreadWorth).
inline constexpr int64_t kSaturatingThreadsPerSm = 512;
double DrawnBandwidth(const DeviceSpec& device, int64_t blocks, int64_t threads, int64_t resident_per_sm = 0,
                      double thread_worth = 1.0);
// Fills memory_us (bytes over `bandwidth`), compute_us (flops over `flop_rate`, plus the
// transcendentals over the SFU rate), launch_us and total_us.
void FinishEstimate(const DeviceSpec& device, double flop_rate, double bandwidth, int launches, RunTimeEstimate& e);

// A candidate merge's price: the regions as they are (their terms summed), and merged.
struct RunTimes {
  RunTimeEstimate unfused;
  RunTimeEstimate fused;
  double saved_us() const { return unfused.total_us - fused.total_us; }
};

}  // namespace kiln

#endif  // KILN_PASSES_COST_COST_MODEL_H_
