// Reads the text form written by PrintGraph (ir/printer.h) back into a Graph, so tests and
// examples can be written as IR text. `#` starts a comment to the end of the line. Errors
// name the line and column ("line 3:12: unknown op \"ad\"; did you mean add, abs, ...").
// Result types written in the text are checked against shape inference.
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
