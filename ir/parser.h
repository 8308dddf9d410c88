// Reads the text form written by PrintGraph (ir/printer.h) back into a Graph, so tests and
// examples can be written as IR text; PrintGraph(*ParseGraph(PrintGraph(g))) == PrintGraph(g).
// `#` starts a comment to the end of the line; whitespace and line breaks are free. Nodes are
// built through Graph::AddNode, so arity, attributes and shapes are checked as for any
// frontend; a written result type must equal the inferred one, and may be left out
// (`t = add(x, y)`) except on constants, whose type gives their data's dtype and shape.
// Operands must be defined on an earlier line. Errors name the line and column:
//   line 3:12: unknown op "ad"; did you mean add, abs, ...
//   line 4:3: t is written as f32[3] but add infers bf16[3,4]
//   line 5:3: t: add: operand 1 "b" f32[5]: shapes [3,4] and [5] do not broadcast
#ifndef KILN_IR_PARSER_H_
#define KILN_IR_PARSER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"

namespace kiln {

absl::StatusOr<std::unique_ptr<Graph>> ParseGraph(absl::string_view text);

}  // namespace kiln

#endif  // KILN_IR_PARSER_H_
