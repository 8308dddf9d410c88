// The ledger's second half (DESIGN.md §4): what became of each region after fusion. One JSON
// object per line, "record": "lowered", per region of the plan: its kind, the template that
// really runs (an attention region names its fallback), the steps it became, and per kernel
// its name, KernelParams, registers, spilled bytes, NVRTC ms and where the CUBIN came from,
// plus the autotuner's timings when it ran. Compile() stores it in Program::lowering_ledger
// (so an artifact carries it) and writes it with KILN_DUMP=ledger; `kiln bench --ledger`
// appends a "measured" record per region (MeasuredJsonLine).
#ifndef KILN_API_LOWERING_LEDGER_H_
#define KILN_API_LOWERING_LEDGER_H_

#include <string>

#include "runtime/jit/autotune.h"
#include "runtime/jit/lower.h"

namespace kiln {

// `with_origin`: also say where each CUBIN came from this time (nvrtc, disk or memory): true
// for reports, false for what an artifact keeps (the same graph compiles to the same bytes).
std::string LoweringJsonLines(const LowerResult& lowered, const TuneResult& tuning, bool with_origin);

// {"record": "measured", "region": R, "measured_us": .., "predicted_us": .., "steps": N}.
std::string MeasuredJsonLine(int region, double measured_us, double predicted_us, int steps);

}  // namespace kiln

#endif  // KILN_API_LOWERING_LEDGER_H_
