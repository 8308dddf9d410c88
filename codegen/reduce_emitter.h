// The reduction emitter (internal to codegen): generates the `Body` of one reduction region,
// which a kernel template runs:
//   row mode     (row_reduction)    templates/row_reduce.cuh RowKernel: a group of threads per
//                                   row, vectors of kV elements along the row
//   column mode  (column_reduction) templates/column_reduce.cuh ColumnKernel: a tile of
//                                   columns per block, vectors of kV columns along the inner
//                                   axes, each thread a share of the reduced axis
// Where every node sits in the space comes from the region's analysis (passes/fusion/
// reduce_placement.h); this class only turns it into code. reduce_values.cc evaluates values
// and indices; emit_reduce.cc writes the Body's members, one function at a time.
#ifndef KILN_CODEGEN_REDUCE_EMITTER_H_
#define KILN_CODEGEN_REDUCE_EMITTER_H_

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
enum class Where {
  kPerRow,    // per-row (per-column) code: BeginRow, Finish, StoreRow, Partials; no reduced index
  kVector,    // Step / Store: kV lanes at one vector (rows: columns c0 + lane; columns: k, i0 + lane)
  kElement,   // Step1 / Store1 (rows): one element at column c
  kPick,      // inside Finish (rows): one element at column pc (a one-hot row sum)
  kCombined,  // Combined (rows): after the combines, scalars only
};

class ReduceEmitter {
 public:
  ReduceEmitter(const Region& region, const KernelParams& params);
  absl::StatusOr<KernelSource> Emit();

 private:
  // ---- reduce_values.cc
  bool Member(const Node* n) const { return members_.count(n) > 0; }
  // The reduced-axis index at `lane` (rows: c0 + lane, c, pc; columns: k), "" where there is none.
  std::string ReducedIndex(int lane) const;
  // The linear index of `n` (a member or an input) at the current point of the space.
  absl::StatusOr<std::string> IndexOf(const Node* n, int lane) const;
  // Whether `n`'s kV elements of the current vector are one aligned vector in memory.
  // Rows: the lanes of a vector all read one element of `n` (a broadcast along whole vectors).
  bool LanesShare(const Node* n) const;
  bool VectorLoadable(const Node* n) const;
  bool PerRow(const Node* n) const;  // constant along the reduced axis: a field of Row (Cell)
  // "row.v3" (rows) or "cell.v3[lane]" (columns: a per-column value differs per lane).
  std::string FieldRef(const std::string& field, int lane) const;
  absl::StatusOr<TypedExpr> Value(const Node* n, int lane);
  absl::StatusOr<TypedExpr> Load(const Node* n, int lane);
  absl::StatusOr<TypedExpr> Compute(const Node* n, int lane);
  // Makes `n` (at `lane`) a field of Row (Cell) holding `e` (in per-row code).
  TypedExpr SetRowField(const Node* n, const TypedExpr& e, int lane);

  // ---- reduce_frontier.cc
  // Whether Vec holds the prologue's frontier instead of (some of) the row inputs; if so, writes
  // Load and sets frontier_, vec_fields_ and vec_decls_.
  absl::StatusOr<bool> PlanFrontier();

  // ---- emit_reduce.cc
  std::string VecDecl(const Node* in, const std::string& field) const;  // "float x0[8];  // x"
  absl::Status LoadCachedInputs();  // Load's LoadVec of each input cached in Vec (vector code)
  void Begin(Where where);
  std::string End();
  void Function(const std::string& signature);  // appends the function written since Begin
  int PerRowLanes() const { return column_ ? V_ : 1; }
  std::string Guard(const Node* output, int lane) const;  // who writes an output broadcast along a group
  absl::Status EmitBeginRow();
  absl::Status EmitReciprocals(int level);
  absl::Status EmitLevel(int level);
  absl::Status EmitStep(int level, bool vector);
  absl::Status EmitFinish(int level);
  absl::Status EmitPick(const Node* red);
  absl::Status EmitStore(bool vector);
  // The statement that loads a vector of input `n` at element `index` into the array `dest`.
  std::string VectorLoad(const Node* n, const std::string& index, const std::string& dest) const;
  absl::Status EmitStoreRow();
  absl::Status EmitCombined();
  std::string FunctorOf(const Node* red) const;
  std::string AccTypeOf(const Node* red) const;

  const Region& r_;
  const ReducePlacement& pl_;
  KernelParams p_;
  const bool column_;    // column mode (column_reduction), else row mode
  const int64_t N_;      // the reduced extent
  const int64_t I_;      // the inner extent (1 in row mode)
  int V_ = 1;
  bool aligned_ = true;  // rows: N % V == 0, every row starts on a vector boundary
  // Columns: I % V != 0. A vector starts anywhere (kiln::LoadVecAt / StoreVecAt), a lane's
  // element index is clamped into the row, and lanes past I store nothing.
  bool ragged_ = false;
  const char* row_ = "row";  // the per-row struct's variable ("row" / "cell")

  Where where_ = Where::kPerRow;
  CodeWriter w_{2};
  std::set<const Node*> members_;
  std::map<const Node*, std::string> in_names_, out_names_;
  std::map<const Node*, std::string> row_fields_;  // per-row value -> field of Row / Cell ("v3")
  std::set<std::pair<const Node*, int>> row_set_;  // (value, lane) assigned so far
  std::vector<std::string> row_decls_;
  std::map<const Node*, std::string> vec_fields_;  // cached input -> field of Vec ("x0")
  std::vector<std::string> vec_decls_;
  struct Cached {
    std::string field;  // of Vec ("f0")
    CType type;
  };
  std::map<const Node*, Cached> frontier_;  // prologue value -> field of Vec (reduce_frontier.cc)
  bool in_load_ = false;                    // writing Load: frontier values are computed
  std::map<const Node*, std::string> acc_fields_;  // accumulated reduction -> field of its AccN
  std::map<const Node*, std::string> recip_fields_;  // per-row divisor -> field holding 1 / it
  std::map<const Node*, std::string> combine_values_;  // in Combined: combine -> local
  std::string functions_;
  std::vector<std::string> notes_;
  bool uses_philox_ = false;
};

}  // namespace kiln::codegen_internal

#endif  // KILN_CODEGEN_REDUCE_EMITTER_H_
