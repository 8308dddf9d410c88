// The fusion ledger as JSON (ledger.cc): every decision priority fusion made, with its rule,
// reason and both prices, then every final region with its kind, template, tensors and
// predicted terms. `kiln dump --format json|jsonl` and KILN_DUMP=ledger print it; compiled
// artifacts keep it.
#ifndef KILN_PASSES_FUSION_LEDGER_H_
#define KILN_PASSES_FUSION_LEDGER_H_

#include <string>

#include "passes/fusion/priority_fusion.h"

namespace kiln {

// One JSON object per line: every decision record, then one line per final region.
std::string LedgerJsonLines(const FusionPlan& plan);
// One JSON document {"graph", "device", "summary", "regions": [...], "decisions": [...]}.
std::string FusionPlanJson(const FusionPlan& plan);

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_LEDGER_H_
