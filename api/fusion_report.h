// Renders an Analysis for people: the fusion report (`kiln dump`), the answer to
// `--why NODE`, Graphviz (`--format dot`) and every kernel's generated source (`--code`).
// Part of the API so that the tools print reports without reaching into the plan.
#ifndef KILN_API_FUSION_REPORT_H_
#define KILN_API_FUSION_REPORT_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "api/compiler.h"

namespace kiln {

// Times measured by `kiln bench --json` (region id -> us, summed over the region's steps).
struct MeasuredTimes {
  std::string device;
  std::map<int, double> region_us;
  double graph_us = 0;
};
// Reads a `kiln bench --json` file recorded for the graph named `graph_name`.
absl::StatusOr<MeasuredTimes> ReadMeasuredTimes(const std::string& path, const std::string& graph_name);

// Regions in order with their ops, kind, bytes fused vs one-kernel-per-op, predicted time
// (and the measured time when `measured` is given), and under each region the merges it
// refused and why; then a summary line.
std::string FusionReport(const Analysis& analysis, const MeasuredTimes* measured = nullptr);
// Why `node` is (not) fused with its neighbours: its region and every decision naming it.
absl::StatusOr<std::string> WhyReport(const Analysis& analysis, const std::string& node);
// One cluster per region, one box per op, the graph's edges.
std::string FusionDot(const Analysis& analysis);
// Each region's generated CUDA source (DefaultParams on the plan's device; KernelSources), or
// what runs instead (a cuBLASLt call, an alias).
std::string GeneratedCodeReport(const Analysis& analysis);
// Each generated kernel's tuning candidates (codegen's CandidateParams, the default first) with
// the cost model's time for each where it prices that kind (CandidatePriceUs): the ranking
// `kiln tune` then measures (`kiln dump --candidates`).
std::string CandidatesReport(const Analysis& analysis);

}  // namespace kiln

#endif  // KILN_API_FUSION_REPORT_H_
