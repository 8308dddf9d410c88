// The canonical text form of a graph: the test oracle and part of every cache key
// (DESIGN.md §3). Deterministic: nodes in PostOrder(), attributes sorted by key.
//
//   graph NAME(x: bf16[16384,8192], b: bf16[8192]) {
//     c: f32[] = constant() {data = [0.5]}
//     t: bf16[16384,8192] = add(x, b)
//     y: bf16[16384,8192] = gelu_tanh(t)
//     s: f32[4] = reduce_sum(x) {axes = [1], keep_dims = false}
//     return y, t as h
//   }
//
// A constant prints its data as a flat row-major list in its own dtype (floats with enough
// digits to round-trip exactly, bool as 0/1); `return` lists outputs, with `as NAME` where
// the output's name differs from its node's.
#ifndef KILN_IR_PRINTER_H_
#define KILN_IR_PRINTER_H_

#include <string>

#include "ir/graph.h"

namespace kiln {

std::string PrintGraph(const Graph& graph);

}  // namespace kiln

#endif  // KILN_IR_PRINTER_H_
