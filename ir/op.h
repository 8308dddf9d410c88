// OpKind and its static facts, all derived from ir/ops.def.
#ifndef KILN_IR_OP_H_
#define KILN_IR_OP_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln {

enum class OpKind : int {
#define KILN_OP(Enum, text, min_arity, max_arity, category, formula) k##Enum,
#include "ir/ops.def"
#undef KILN_OP
};

enum class OpCategory {
  kLeaf,        // input, constant
  kPointwise,   // elementwise with numpy broadcasting
  kReduction,   // reduce_* over a list of axes
  kComposite,   // decomposed into primitives by passes/decompose
  kRandom,      // seeded dropout
  kAttention,   // matched as a whole
  kLayout,      // data movement
  kBroadcast,   // broadcast_to
  kMatmul,      // library call
};

struct OpInfo {
  OpKind kind;
  const char* name;
  int min_arity;
  int max_arity;  // -1: unbounded
  OpCategory category;
  const char* formula;
};

// Every row of the table, in table order.
const std::vector<OpInfo>& AllOps();
const OpInfo& GetOpInfo(OpKind kind);
const char* OpName(OpKind kind);
OpCategory GetCategory(OpKind kind);
const char* CategoryName(OpCategory category);

// Looks an op up by its text name. The error lists the closest known names.
absl::StatusOr<OpKind> ParseOpKind(absl::string_view name);

// Up to `max` known op names closest to `name` by edit distance.
std::vector<std::string> ClosestOpNames(absl::string_view name, int max = 3);

}  // namespace kiln

#endif  // KILN_IR_OP_H_
