// cse: merges nodes with the same op, operands, attributes and type (constants: the same
// data), keeping the first in post order, so that two consumers of one value read one node:
// two norms of one tensor share their mean, and fusion sees one producer instead of two
// copies it would price apart. Dropout with the same seed and offset is deterministic, so it
// merges too. Runs after constant_fold (folded constants then compare by data) and before dce.
#ifndef KILN_PASSES_CSE_H_
#define KILN_PASSES_CSE_H_

#include "passes/pass.h"

namespace kiln {

class Cse : public Pass {
 public:
  const char* name() const override { return "cse"; }
  const char* summary() const override { return "merge identical nodes"; }
  absl::StatusOr<bool> Run(Graph& graph) override;
};

}  // namespace kiln

#endif  // KILN_PASSES_CSE_H_
