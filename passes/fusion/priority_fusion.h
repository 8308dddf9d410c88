// Priority fusion: starting from one region per op, repeatedly takes the legal merge with the
// largest predicted time saved, reprices the candidates that involve the new region, and
// stops when no merge saves time (or KILN_FUSION_FUEL merges have been made). A producer
// read by several regions is either merged into one of them (and still written for the
// others) or, when it is pure pointwise work and not a graph output, recomputed inside every
// consumer; the model prices both, the larger saving wins, and the ledger records both prices.
// A merge is refused when the consumer also reaches the producer through another region (a
// cycle); a recompute is checked on the region graph after it, with every consumer holding
// the producer.
// The result is a FusionPlan: regions in execution order with their cost terms, and the
// fusion ledger (every candidate, verdict, rule, reason and price; ledger.h writes it as JSON).
#ifndef KILN_PASSES_FUSION_PRIORITY_FUSION_H_
#define KILN_PASSES_FUSION_PRIORITY_FUSION_H_

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "passes/cost/cost_model.h"
#include "passes/cost/device_spec.h"
#include "passes/fusion/region.h"
#include "passes/pass.h"

namespace kiln {

// One step of the fusion process. Region ids here are merge-time ids: every merge makes a new
// region with a fresh id, and a final region keeps its last one as Region::merge_id (the
// final Region::id numbers the regions 0..n-1 in execution order).
struct FusionRecord {
  int step = 0;                 // merges made before this record
  std::string event;            // "candidate" (first pricing), "reprice", "fuse", "stop"
  std::string mode;             // "merge" or "recompute"
  int producer_id = -1;
  int consumer_id = -1;         // a merge's consumer; -1 for a recompute
  std::vector<int> consumer_ids;  // every consumer (a merge: {consumer_id})
  std::vector<std::string> producer_nodes;
  std::vector<std::string> consumer_nodes;  // a recompute: every consumer's nodes
  std::string producer_kind, consumer_kind;
  std::string verdict;          // "fuse", "refuse", "unprofitable", "cycle"
  std::string rule, reason;
  RunTimes times;               // unfused: the regions as they are; fused: after the step

  double unfused_us() const { return times.unfused.total_us; }
  double fused_us() const { return times.fused.total_us; }
  double saved_us() const { return times.saved_us(); }
};

struct FusionPlan {
  std::string graph_name;
  DeviceSpec device;
  std::vector<Region> regions;              // execution order
  std::vector<RunTimeEstimate> estimates;   // per region
  std::vector<FusionRecord> records;        // the ledger, in order
  // Rewrites the passes before fusion weighed (horizontal_matmul's), by pass name; Analyze
  // copies them from the PassRecords so the ledger holds every fusion decision.
  std::vector<std::pair<std::string, PassDecision>> pass_decisions;
  int ops = 0;                              // non-leaf nodes
  int merges = 0;
  double unfused_us = 0;                    // one kernel per op
  double fused_us = 0;
  int64_t unfused_bytes = 0, fused_bytes = 0;
  bool fuel_exhausted = false;

  int num_kernels() const;  // regions that launch something (views do not)
  const Region* RegionOf(const Node* node) const;
};

struct FusionOptions {
  std::optional<int64_t> fuel;        // KILN_FUSION_FUEL
  std::set<std::string> forced_rules;  // KILN_FORCE_FUSE: legal merges of these rules are taken whatever their price
};

absl::StatusOr<FusionPlan> PlanFusion(const Graph& graph, const DeviceSpec& device,
                                      const FusionOptions& options = {});

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_PRIORITY_FUSION_H_
