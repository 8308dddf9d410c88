// Three small cleanup passes that run after decomposition:
//  * constant_fold: evaluates nodes whose operands are all constants and whose result is
//    small (at most kMaxFoldedElements elements: the scalar subgraphs exporters write, such
//    as sqrt(2) or 1/sqrt(d)), on the reference interpreter, so codegen sees literals;
//  * cse: merges nodes with the same op, operands and attributes (and constants with the
//    same data); dropout with the same seed and offset is deterministic, so it merges too;
//  * dce: removes nodes that reach no graph output.
// Each is its own Pass so it can be disabled and dumped on its own; they share this file
// because each is a few lines.
#ifndef KILN_PASSES_SIMPLIFY_H_
#define KILN_PASSES_SIMPLIFY_H_

#include "passes/pass.h"

namespace kiln {

class ConstantFold : public Pass {
 public:
  static constexpr int64_t kMaxFoldedElements = 64;
  const char* name() const override { return "constant_fold"; }
  const char* summary() const override { return "evaluate small all-constant subgraphs"; }
  absl::StatusOr<bool> Run(Graph& graph) override;
};

class Cse : public Pass {
 public:
  const char* name() const override { return "cse"; }
  const char* summary() const override { return "merge identical nodes"; }
  absl::StatusOr<bool> Run(Graph& graph) override;
};

class Dce : public Pass {
 public:
  const char* name() const override { return "dce"; }
  const char* summary() const override { return "remove nodes that reach no output"; }
  absl::StatusOr<bool> Run(Graph& graph) override;
};

}  // namespace kiln

#endif  // KILN_PASSES_SIMPLIFY_H_
