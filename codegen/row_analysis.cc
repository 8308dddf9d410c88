// Places a row region's nodes in its row space [rows x N] for the row emitter: each node's
// form (row-shaped, per-row, broadcast into the row, scalar) and reduction level, the combines
// (per-row values reduced over all rows), the reduce_max / reduce_sum(exp(x - max)) pairs a
// streamed row computes in one pass, and the one-hot row sums read as one element
// (codegen/emit_row.cc's header has the kernel they shape). A region these rules cannot place
// is Unimplemented, and EmitKernel falls back to the elementwise emitter.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "codegen/row_emitter.h"
#include "ir/base/status.h"

namespace kiln::codegen_internal {

bool RowEmitter::IsRowReduction(const Node* n) const {
  if (!IsReduction(n)) return false;
  auto space = RowReductionSpace(n);
  return space && space->first == R_ && space->second == N_ && !IsCombine(n);
}

bool RowEmitter::IsCombine(const Node* n) const {
  return IsReduction(n) && n->num_elements() == 1 && Member(n->operand(0)) &&
         form_.count(n->operand(0)) && form_.at(n->operand(0)) == Form{true, false};
}

absl::StatusOr<int> RowEmitter::SplitPoint(const Shape& s, Form f) const {
  const int64_t want_rows = f.row ? R_ : 1, want_cols = f.col ? N_ : 1;
  int64_t rows = 1;
  for (int k = 0; k <= static_cast<int>(s.size()); ++k) {
    int64_t cols = 1;
    for (size_t d = k; d < s.size(); ++d) cols *= s[d];
    if (rows == want_rows && cols == want_cols) return k;
    if (k < static_cast<int>(s.size())) rows *= s[k];
  }
  return absl::UnimplementedError(absl::StrCat("shape ", ShapeToString(s), " does not split as ",
                                               FormName(f), " of the row space [", R_, " x ", N_, "]"));
}

// How `operand` is indexed when `user` (of form `user_form`) reads it by numpy broadcasting.
absl::StatusOr<Form> RowEmitter::ViewOf(const Node* user, Form user_form, const Node* operand) const {
  const Shape& s = user->shape();
  const Shape& o = operand->shape();
  if (user->op() == OpKind::kReshape) return user_form;  // same linear order
  if (NumElements(o) == 1) return Form{};
  KILN_ASSIGN_OR_RETURN(int k, SplitPoint(s, user_form));
  const int lead = static_cast<int>(s.size()) - static_cast<int>(o.size());
  if (lead < 0) return absl::UnimplementedError("operand of higher rank than its user");
  bool row_full = true, row_bcast = true, col_full = true, col_bcast = true;
  for (int d = 0; d < static_cast<int>(s.size()); ++d) {
    const int64_t od = d < lead ? 1 : o[d - lead];
    bool& full = d < k ? row_full : col_full;
    bool& bcast = d < k ? row_bcast : col_bcast;
    if (od != s[d]) full = false;
    if (od != 1) bcast = false;
  }
  if (!(row_full || row_bcast) || !(col_full || col_bcast)) {
    return absl::UnimplementedError(absl::StrCat(operand->name(), " ", ShapeToString(o),
                                                 " is partially broadcast into ", user->name(), " ",
                                                 ShapeToString(s)));
  }
  Form f;
  f.row = user_form.row && !(row_bcast && !row_full);
  f.col = user_form.col && !(col_bcast && !col_full);
  // A dim of extent 1 is both full and broadcast; the numel decides.
  if (f.row && f.col && NumElements(o) != R_ * N_) f.row = f.col = false;
  if (f.row && !f.col && NumElements(o) != R_) f.row = false;
  if (!f.row && f.col && NumElements(o) != N_) f.col = false;
  return f;
}

absl::Status RowEmitter::Classify() {
  for (const Node* n : r_.nodes) {
    Form f;
    int level = 0;
    bool combined = false;
    for (const Node* o : n->operands()) {
      if (!Member(o)) continue;
      level = std::max(level, level_[o]);
      combined |= combined_[o];
    }
    if (IsReduction(n)) {
      const Node* x = n->operand(0);
      if (ComputeType(x->dtype()) != CType::kFloat) {
        return absl::UnimplementedError(absl::StrCat("integer reduction ", n->name()));
      }
      if (Member(x) && form_[x] == Form{true, false} && n->num_elements() == 1) {
        if (combined) return absl::UnimplementedError("a combine of a combine");
        combines_.push_back(n);
        form_[n] = Form{};
        level_[n] = level;
        combined_[n] = true;
        continue;
      }
      if (!IsRowReduction(n)) {
        return absl::UnimplementedError(absl::StrCat("reduction ", n->name(), " is not over the row space"));
      }
      if (combined) return absl::UnimplementedError("a row reduction after a combine");
      form_[n] = Form{true, false};
      level_[n] = level + 1;
      combined_[n] = false;
      max_level_ = std::max(max_level_, level + 1);
      continue;
    }
    if (IsIndexRemapping(n) && n->op() != OpKind::kReshape && n->op() != OpKind::kBroadcastTo) {
      return absl::UnimplementedError(absl::StrCat(OpName(n->op()), " ", n->name(), " inside a row kernel"));
    }
    if (n->op() == OpKind::kConstant) return absl::UnimplementedError("a multi-element constant inside the region");
    // Form by element count; ties (R == N, or extents of 1) broken by the operands' forms.
    const int64_t e = n->num_elements();
    bool any_row = false, any_col = false;
    for (const Node* o : n->operands()) {
      if (Member(o)) {
        any_row |= form_[o].row;
        any_col |= form_[o].col;
      }
    }
    if (e == R_ * N_ && (R_ * N_ != R_ || any_col) && (R_ * N_ != N_ || any_row)) {
      f = Form{true, true};
    } else if (e == R_ && (R_ != N_ || any_row || !any_col) && !(e == N_ && any_col && !any_row)) {
      f = Form{true, false};
    } else if (e == N_) {
      f = Form{false, true};
    } else if (e == 1) {
      f = Form{};
    } else if (e == R_ * N_) {
      f = Form{true, true};
    } else {
      return absl::UnimplementedError(absl::StrCat(n->name(), " ", ShapeToString(n->shape()),
                                                   " is not in the row space"));
    }
    // Anything after a combine is a scalar: with one row (R = 1) a one-element value would
    // otherwise pass for per-row.
    if (combined && e == 1) f = Form{};
    if (combined && (f.row || f.col)) {
      return absl::UnimplementedError(absl::StrCat(n->name(), " depends on a combine but is not a scalar"));
    }
    form_[n] = f;
    level_[n] = level;
    combined_[n] = combined;
  }
  // Every member operand must be read with the form it has.
  for (const Node* n : r_.nodes) {
    if (IsReduction(n)) {
      const Node* x = n->operand(0);
      if (!Member(x) && !IsCombine(n) && NumElements(x->shape()) != R_ * N_) {
        return absl::UnimplementedError(absl::StrCat("reduction ", n->name(), " of a tensor outside the row space"));
      }
      continue;
    }
    for (const Node* o : n->operands()) {
      if (!Member(o)) continue;
      KILN_ASSIGN_OR_RETURN(Form view, ViewOf(n, form_[n], o));
      // With one row the row index is always 0: row-shaped and broadcast-into-row coincide, and
      // so do per-row and scalar.
      const bool one_row_alike = R_ == 1 && N_ > 1 && view.col == form_[o].col;
      if (view != form_[o] && !one_row_alike) {
        return absl::UnimplementedError(absl::StrCat(n->name(), " reads ", o->name(), " as ", FormName(view),
                                                     " but it is ", FormName(form_[o])));
      }
    }
  }
  for (const Node* o : r_.outputs) {
    if (!Member(o)) return absl::UnimplementedError("an output that is not a region member");
  }
  return absl::OkStatus();
}

// sum(exp(x - max(x))) after max(x), over the same x: one streaming pass with MaxSum.
void RowEmitter::FindOnlinePairs() {
  for (const Node* b : r_.nodes) {
    if (b->op() != OpKind::kReduceSum || !IsRowReduction(b)) continue;
    const Node* e = b->operand(0);
    if (!Member(e) || e->op() != OpKind::kExp) continue;
    const Node* s = e->operand(0);
    if (!Member(s) || s->op() != OpKind::kSub) continue;
    const Node* x = s->operand(0);
    const Node* m = s->operand(1);
    while (Member(m) && (m->op() == OpKind::kReshape || m->op() == OpKind::kBroadcastTo)) m = m->operand(0);
    if (!Member(m) || m->op() != OpKind::kReduceMax || !IsRowReduction(m) || m->operand(0) != x) continue;
    if (level_[b] != level_[m] + 1) continue;
    if (ComputeType(x->dtype()) != CType::kFloat) continue;
    pair_of_[b] = m;
    pair_max_.insert(m);
  }
  // A pair is computed at the max's level: move the sum (and whatever depends on it) down one.
  if (pair_of_.empty()) return;
  std::map<const Node*, int> level;
  max_level_ = 0;
  for (const Node* n : r_.nodes) {
    int l = 0;
    for (const Node* o : n->operands()) {
      if (Member(o)) l = std::max(l, level[o]);
    }
    if (IsRowReduction(n)) {
      auto it = pair_of_.find(n);
      l = it != pair_of_.end() ? level[it->second] : l + 1;
      max_level_ = std::max(max_level_, l);
    }
    level[n] = l;
  }
  for (auto& [n, l] : level) level_[n] = l;
}

const Node* RowEmitter::SkipViews(const Node* n) const {
  while (Member(n) && (n->op() == OpKind::kReshape || n->op() == OpKind::kBroadcastTo)) n = n->operand(0);
  return n;
}

// reduce_sum over the row of where(eq(i, s), f, 0) (or eq(s, i)), where i is an iota whose
// value at column c is c and s an integer that does not vary along the row: exactly one
// term can be non-zero, f at column s, so the sum is that element (0 if s is not a column).
void RowEmitter::FindPicks() {
  for (const Node* red : r_.nodes) {
    if (red->op() != OpKind::kReduceSum || !IsRowReduction(red)) continue;
    const Node* w = red->operand(0);
    if (!Member(w) || w->op() != OpKind::kWhere || form_.at(w) != Form{true, true}) continue;
    const Node* zero = w->operand(2);
    if (!IsInlinedConstant(zero) || zero->value()->GetF64(0) != 0.0) continue;
    const Node* eq = SkipViews(w->operand(0));
    if (!Member(eq) || eq->op() != OpKind::kEq) continue;
    for (int side = 0; side < 2; ++side) {
      const Node* iota = SkipViews(eq->operand(side));
      const Node* index = eq->operand(1 - side);
      if (!Member(iota) || iota->op() != OpKind::kIota || !form_.at(iota).col) continue;
      const Shape& is = iota->shape();
      int64_t axis = iota->attrs().GetInt("axis");
      if (axis < 0) axis += static_cast<int64_t>(is.size());
      if (axis != static_cast<int64_t>(is.size()) - 1 || is.back() != N_) continue;  // value is not c
      if (ComputeType(index->dtype()) != CType::kInt || ComputeType(iota->dtype()) != CType::kInt) continue;
      absl::StatusOr<Form> view = ViewOf(eq, form_.at(eq), index);
      if (!view.ok() || view->col) continue;
      picks_[red] = Pick{w->operand(1), index, eq};
      notes_.push_back(absl::StrCat(red->name(), ": one-hot row sum read as one element per row"));
      break;
    }
  }
}

}  // namespace kiln::codegen_internal
