// The row-reduction emitter's class (codegen/emit_row.cc emits the kernel; row_analysis.cc
// places every node of the region in the row space). Internal to codegen.
#ifndef KILN_CODEGEN_ROW_EMITTER_H_
#define KILN_CODEGEN_ROW_EMITTER_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "codegen/emitter_util.h"
#include "codegen/kernel_params.h"
#include "codegen/kernel_source.h"

namespace kiln::codegen_internal {

// What a value of the region depends on: the row index r, the column index c, both or neither.
struct Form {
  bool row = false;  // depends on the row index r
  bool col = false;  // depends on the column index c
  bool operator==(const Form& o) const { return row == o.row && col == o.col; }
  bool operator!=(const Form& o) const { return !(*this == o); }
};

inline std::string FormName(Form f) {
  return f.row && f.col ? "row-shaped" : f.row ? "per-row" : f.col ? "broadcast-into-row" : "scalar";
}

class RowEmitter {
 public:
  RowEmitter(const Region& region, const KernelParams& params)
      : r_(region), p_(params), R_(region.rows), N_(region.row_length) {}
  absl::StatusOr<KernelSource> Emit();

 private:
  bool Member(const Node* n) const { return members_.count(n) > 0; }
  bool IsRowReduction(const Node* n) const;
  bool IsCombine(const Node* n) const;
  absl::Status Classify();
  absl::StatusOr<Form> ViewOf(const Node* user, Form user_form, const Node* operand) const;
  absl::StatusOr<int> SplitPoint(const Shape& s, Form f) const;
  void FindOnlinePairs();
  void FindPicks();
  const Node* SkipViews(const Node* n) const;
  absl::Status EmitPick(const Node* red);

  // Values. `lane` is -1 outside a column loop.
  absl::StatusOr<TypedExpr> Value(const Node* n, Form view, int lane);
  absl::StatusOr<TypedExpr> Load(const Node* n, Form view, int lane);
  std::string LinearIndex(Form f, int lane) const;
  std::string Col(int lane) const { return picking_ ? "pc" : absl::StrCat("(c0 + ", lane, ")"); }
  // " && active" where a group may hold no row (several rows per warp), else "".
  std::string Guard() const { return G_ < 32 ? " && active" : ""; }
  absl::Status HoistPerRow(int level);
  absl::Status EmitPass(int level, bool final_pass);
  std::string FunctorOf(const Node* red) const;

  const Region& r_;
  KernelParams p_;
  const int64_t R_, N_;
  int G_ = 0, V_ = 1, iters_ = 0, unroll_ = 1;
  bool cached_ = false;
  std::set<const Node*> members_;
  std::map<const Node*, Form> form_;
  std::map<const Node*, int> level_;     // max reduction level in the node's cone (0: none)
  std::map<const Node*, bool> combined_; // depends on a combine
  std::map<const Node*, const Node*> pair_of_;  // sum reduction -> its max reduction (online pair)
  std::set<const Node*> pair_max_;
  struct Pick {
    const Node* value;  // f: the where's operand taken where the iota equals the index
    const Node* index;  // s: per-row (or scalar) integer column
    const Node* eq;     // the comparison that reads s
  };
  std::map<const Node*, Pick> picks_;  // one-hot row sum -> what it picks
  bool picking_ = false;               // emitting f at the single column "pc"
  std::vector<const Node*> combines_;
  std::map<const Node*, std::string> in_names_, out_names_;
  std::map<const Node*, std::string> cache_;  // row-shaped input -> register array
  std::set<const Node*> cache_loaded_, cache_pending_;
  CodeWriter w_{2};
  bool uses_philox_ = false;
  std::vector<std::string> notes_;
  int max_level_ = 0;
};

}  // namespace kiln::codegen_internal

#endif  // KILN_CODEGEN_ROW_EMITTER_H_
