// Renders an Analysis for people: the fusion report (`kiln dump`), the answer to
// `--why NODE`, and Graphviz (`--format dot`).
#ifndef KILN_TOOLS_DUMP_REPORT_H_
#define KILN_TOOLS_DUMP_REPORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "api/compiler.h"

namespace kiln {

// Regions in order with their ops, kind, bytes fused vs one-kernel-per-op, predicted time,
// and under each region the merges it refused and why; then a summary line.
std::string FusionReport(const Analysis& analysis);
// Why `node` is (not) fused with its neighbours: its region and every decision naming it.
absl::StatusOr<std::string> WhyReport(const Analysis& analysis, const std::string& node);
// One cluster per region, one box per op, the graph's edges.
std::string FusionDot(const Analysis& analysis);

}  // namespace kiln

#endif  // KILN_TOOLS_DUMP_REPORT_H_
