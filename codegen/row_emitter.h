// The row-reduction emitter (internal to codegen): generates the `Body` of one row region that
// templates/row_reduce.cuh's RowKernel runs. Where every node sits in the row space comes
// from the region's analysis (passes/fusion/reduce_placement.h); this class only turns it
// into code. row_values.cc evaluates values and indices; emit_row.cc writes the Body's
// members, one function at a time.
#ifndef KILN_CODEGEN_ROW_EMITTER_H_
#define KILN_CODEGEN_ROW_EMITTER_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/emitter_util.h"
#include "codegen/kernel_params.h"
#include "codegen/kernel_source.h"
#include "passes/fusion/reduce_placement.h"

namespace kiln::codegen_internal {

// Where the function being written evaluates values.
enum class RowWhere {
  kRow,      // per-row code (BeginRow, Finish, StoreRow, Partials): no column
  kVector,   // Step / Store: kV lanes at columns c0 + lane, the cached inputs in `x`
  kElement,  // Step1 / Store1: one element at column c
  kPick,     // inside Finish: one element at column pc (a one-hot row sum)
  kCombined, // Combined: after the combines, scalars only
};

class RowEmitter {
 public:
  RowEmitter(const Region& region, const KernelParams& params);
  absl::StatusOr<KernelSource> Emit();

 private:
  // ---- row_values.cc
  bool Member(const Node* n) const { return members_.count(n) > 0; }
  std::string Column(int lane) const;
  // The linear index of `n` (a member or an input) at the current point of the row space.
  absl::StatusOr<std::string> IndexOf(const Node* n, int lane) const;
  // Whether `n`'s kV elements at columns [c0, c0 + kV) are one aligned vector.
  bool VectorLoadable(const Node* n) const;
  bool PerRow(const Node* n) const;  // constant along the row: a Row field
  absl::StatusOr<TypedExpr> Value(const Node* n, int lane);
  absl::StatusOr<TypedExpr> Load(const Node* n, int lane);
  absl::StatusOr<TypedExpr> Compute(const Node* n, int lane);
  absl::StatusOr<TypedExpr> Reduced(const Node* n) const;  // a reduction's per-row result
  // Makes `n` a Row field holding `e` (in a kRow function).
  TypedExpr SetRowField(const Node* n, const TypedExpr& e);

  // ---- emit_row.cc
  void Begin(RowWhere where);
  std::string End();
  absl::Status EmitBeginRow();
  absl::Status EmitLevel(int level);
  absl::Status EmitStep(int level, bool vector);
  absl::Status EmitFinish(int level);
  absl::Status EmitPick(const Node* red);
  absl::Status EmitStore(bool vector);
  absl::Status EmitStoreRow();
  absl::Status EmitCombined();
  std::string FunctorOf(const Node* red) const;
  std::string AccTypeOf(const Node* red) const;

  const Region& r_;
  const ReducePlacement& pl_;
  KernelParams p_;
  const int64_t N_;
  int V_ = 1;
  bool aligned_ = true;  // N % V == 0: every row starts on a vector boundary

  RowWhere where_ = RowWhere::kRow;
  CodeWriter w_{2};
  std::set<const Node*> members_;
  std::map<const Node*, std::string> in_names_, out_names_;
  std::map<const Node*, std::string> row_fields_;  // per-row value -> field of Row ("v3")
  std::vector<std::string> row_decls_;
  std::map<const Node*, std::string> vec_fields_;  // cached row input -> field of Vec ("x0")
  std::vector<std::string> vec_decls_;
  std::map<const Node*, std::string> acc_fields_;  // accumulated reduction -> field of its AccN
  std::map<const Node*, std::string> combine_values_;  // in Combined: combine -> local
  std::string functions_;
  std::vector<std::string> notes_;
  bool uses_philox_ = false;
};

}  // namespace kiln::codegen_internal

#endif  // KILN_CODEGEN_ROW_EMITTER_H_
