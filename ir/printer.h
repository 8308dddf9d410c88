// The canonical text form of a graph: the test oracle and part of every cache key
// (DESIGN.md §3). Deterministic: nodes in PostOrder(), attributes sorted by key.
//
//   graph NAME(x: bf16[16384,8192], b: bf16[8192]) {
//     c: f32[] = constant() {data = [0.5]}
//     t: bf16[16384,8192] = add(x, b)
//     y: bf16[16384,8192] = gelu_tanh(t)
//     s: bf16[16384] = reduce_sum(x) {axes = [1], keep_dims = false}
//     return y, t as h
//   }
//
// One node per line: `name: dtype[shape] = op(operands) {attrs}`, the attribute block left
// out when empty and written by Attributes::ToString() (defaults included, keys sorted). The
// header lists the graph inputs in inputs() order; they appear nowhere else. A graph name that
// is not an identifier is quoted. A constant prints its data as a flat row-major list in its
// own dtype, in the shortest form that reads back to the same bits (f32 with at most 9
// significant digits, f16/bf16 as their float value, nan/inf/-inf by name, integers exactly,
// bool as 0/1). A constant of more than kListedElements elements prints its data as a string
// instead: the base64 of its bytes in memory order (little-endian), `{data = "AACAPwAAAEA..."}`:
// exact, and a 4096 x 14336 bf16 weight printed as a decimal list was over 500 MB of text and
// most of a model's compile. `return` lists the outputs in order, with `as NAME` where the
// output's name differs from its node's; a graph without outputs prints a bare `return`.
#ifndef KILN_IR_PRINTER_H_
#define KILN_IR_PRINTER_H_

#include <string>

#include "ir/graph.h"

namespace kiln {

inline constexpr int64_t kListedElements = 1024;

std::string PrintGraph(const Graph& graph);

}  // namespace kiln

#endif  // KILN_IR_PRINTER_H_
