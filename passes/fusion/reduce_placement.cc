#include "passes/fusion/reduce_placement.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/base/status.h"
#include "passes/fusion/strided_view.h"

namespace kiln {
namespace {

using Cut = std::pair<int, int>;

// The shortest run of contiguous elements a row kernel reads through a transpose (the row's
// innermost atom, unless it is the whole row): a warp's 32 loads then touch at most two runs.
constexpr int64_t kMinContiguousRun = 32;

int64_t Product(const Shape& s, int begin, int end) {
  int64_t p = 1;
  for (int d = begin; d < end; ++d) p *= s[d];
  return p;
}

// Why a region cannot be placed: the legality rule ("row-space", "row-layout") and a sentence.
absl::Status Unplaceable(const std::string& why, const char* rule = "reduce-space") {
  return absl::FailedPreconditionError(absl::StrCat(rule, ": ", why));
}

// A part of a tensor lines up with a group of the space when it has the group's extent (any
// factorisation), extent 1, or is a numpy broadcast of the group's axes (right-aligned).
bool FitsGroup(const Shape& part, const Shape& group) {
  const int64_t p = NumElements(part), g = NumElements(group);
  if (p == g || p == 1) return true;
  Shape trimmed = part;
  while (!trimmed.empty() && trimmed.front() == 1) trimmed.erase(trimmed.begin());
  if (trimmed.size() > group.size()) return false;
  const size_t lead = group.size() - trimmed.size();
  for (size_t d = 0; d < trimmed.size(); ++d) {
    if (trimmed[d] != 1 && trimmed[d] != group[lead + d]) return false;
  }
  return true;
}

// The position in `to` where the prefix product equals `prefix` (the first such), or -1.
int CutWithPrefix(const Shape& to, int64_t prefix) {
  int64_t p = 1;
  for (int k = 0; k <= static_cast<int>(to.size()); ++k) {
    if (p == prefix) return k;
    if (k < static_cast<int>(to.size())) p *= to[k];
  }
  return -1;
}

std::vector<int64_t> SortedAxes(const Node* reduction) {
  const int64_t rank = reduction->operand(0)->shape().size();
  std::vector<int64_t> axes = reduction->attrs().GetInts("axes");
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  for (int64_t& a : axes) a = a < 0 ? a + rank : a;
  std::sort(axes.begin(), axes.end());
  return axes;
}

class Placer {
 public:
  // `pair_means`: find reduce_mean / variance pairs (FindOnlinePairs).
  Placer(const Region& region, ReducePlacement& out, bool pair_means)
      : r_(region), out_(out), pair_means_(pair_means) {
    members_.insert(region.nodes.begin(), region.nodes.end());
  }

  absl::Status Run();

 private:
  bool Member(const Node* n) const { return members_.count(n) > 0; }
  absl::Status ChooseSpace();
  absl::Status Propagate();
  std::optional<Cut> Forward(const Node* n, absl::Status* error);
  std::optional<Cut> FromUser(const Node* o, const Node* user, const Cut& user_cut);
  absl::Status Set(const Node* n, Cut c);
  bool Agree(const Node* n, const Cut& a, const Cut& b) const;
  absl::Status Validate();
  absl::Status Levels();
  void FindOnlinePairs();
  void FindPicks();
  const Node* SkipViews(const Node* n) const;
  const Node* SquaredDeviationMean(const Node* sq) const;
  // A row's view through a transpose (read through it, or stored through it): folded into
  // through_run (its innermost run and the strides of its other atoms) and index_ops (each
  // access divides the row index by every atom but the outermost: a quotient and a remainder
  // each). Refused, as `what` followed by the run, unless the row comes in runs of contiguous
  // elements long enough for a warp's accesses to stay coalesced.
  absl::Status NoteRun(const ViewDim& row, const std::string& what) {
    if (!row.empty()) {
      int64_t g = row.back().extent;
      for (size_t j = 0; j + 1 < row.size(); ++j) g = std::gcd(g, row[j].stride);
      out_.through_run = out_.through_run == 0 ? g : std::gcd(out_.through_run, g);
      out_.through_index_ops += 2 * static_cast<int>(row.size() - 1);
    }
    if (!row.empty() && row.back().stride == 1 && (row.back().extent >= kMinContiguousRun || row.size() == 1)) {
      return absl::OkStatus();
    }
    return Unplaceable(absl::StrCat(what, ": its innermost run is ", row.empty() ? 0 : row.back().extent,
                                    " elements at stride ", row.empty() ? 0 : row.back().stride),
                       "reduce-layout");
  }

  const Region& r_;
  ReducePlacement& out_;
  const bool pair_means_;
  std::set<const Node*> members_;
  std::map<const Node*, Cut> cut_;
  std::map<const Node*, const Node*> like_;  // reshapes placed (and stored) as their operand
  const Node* source_ = nullptr;  // the reduction that defines the space
};

absl::Status Placer::ChooseSpace() {
  for (const Node* n : r_.nodes) {
    if (!IsReduction(n)) continue;
    if (source_ == nullptr || n->operand(0)->num_elements() > source_->operand(0)->num_elements()) source_ = n;
  }
  if (source_ == nullptr) return Unplaceable("a reduction region without a reduction");
  KILN_ASSIGN_OR_RETURN(out_.space, SpaceOf(source_));
  return Set(source_->operand(0), {out_.space.begin, out_.space.end});
}

absl::Status Placer::Set(const Node* n, Cut c) {
  auto [it, inserted] = cut_.emplace(n, c);
  if (inserted || Agree(n, it->second, c)) return absl::OkStatus();
  return Unplaceable(absl::StrCat(n->name(), " ", ShapeToString(n->shape()), " lines up with the space ",
                                  out_.space.ToString(), " in two ways"));
}

// Two cuts of `n` agree when the axes between them have extent 1.
bool Placer::Agree(const Node* n, const Cut& a, const Cut& b) const {
  const Shape& s = n->shape();
  return Product(s, std::min(a.first, b.first), std::max(a.first, b.first)) == 1 &&
         Product(s, std::min(a.second, b.second), std::max(a.second, b.second)) == 1;
}

// The cut of member `n` from its operands' cuts, if any is known.
std::optional<Cut> Placer::Forward(const Node* n, absl::Status* error) {
  const Shape& s = n->shape();
  if (IsReduction(n)) {
    auto it = cut_.find(n->operand(0));
    if (it == cut_.end()) return std::nullopt;
    const Node* x = n->operand(0);
    const Shape& xs = x->shape();
    const auto [a, b] = it->second;
    const std::vector<int64_t> axes = SortedAxes(n);
    std::set<int64_t> reduced(axes.begin(), axes.end());
    bool space_reduction = true;
    for (int d = 0; d < static_cast<int>(xs.size()); ++d) {
      if (xs[d] != 1 && (d >= a && d < b) != (reduced.count(d) > 0)) space_reduction = false;
    }
    if (!space_reduction && n->num_elements() != 1) {
      *error = Unplaceable(absl::StrCat("reduction ", n->name(), " over axes [", absl::StrJoin(axes, ","), "] of ",
                                        ShapeToString(xs), " does not reduce the reduced axes of the space ",
                                        out_.space.ToString()));
      return std::nullopt;
    }
    if (!space_reduction) return Cut{0, 0};
    const bool keep = n->attrs().GetBool("keep_dims");
    int c0 = 0, c1 = 0;
    for (int d = 0; d < static_cast<int>(xs.size()); ++d) {
      const bool kept = keep || !reduced.count(d);
      if (kept && d < a) ++c0;
      if (kept && d < b) ++c1;
    }
    return Cut{c0, c1};
  }
  if (n->op() == OpKind::kTranspose) return std::nullopt;  // placed by its readers; see Validate
  if (n->op() == OpKind::kReshape) {
    auto it = cut_.find(n->operand(0));
    if (it == cut_.end()) return std::nullopt;
    const Shape& xs = n->operand(0)->shape();
    const int c0 = CutWithPrefix(s, Product(xs, 0, it->second.first));
    const int c1 = CutWithPrefix(s, Product(xs, 0, it->second.second));
    if (c0 < 0 || c1 < 0) {
      // A reshape that only leaves the kernel (no member reads it) of a tensor covering the
      // whole space keeps every element's linear index: it is stored as its operand would be
      // (group norm's [N, G, C/G, HW] result viewed back as [N, C, H, W]).
      const Node* x = n->operand(0);
      const bool read_inside = std::any_of(n->users().begin(), n->users().end(), [&](const Node* u) { return Member(u); });
      if (!read_inside && !like_.count(x) && x->num_elements() == out_.space.outer * out_.space.reduced * out_.space.inner) {
        like_[n] = x;
        return it->second;
      }
      *error = Unplaceable(absl::StrCat("reshape ", n->name(), " of ", ShapeToString(xs), " to ", ShapeToString(s),
                                        " mixes axes of different groups of the space ", out_.space.ToString()));
      return std::nullopt;
    }
    return Cut{c0, std::max(c0, c1)};
  }
  // Pointwise, random, broadcast_to: numpy right-alignment. The placed operand of the highest
  // rank gives the cut (a lower-rank one says nothing about the axes it lacks); every other
  // placed operand must agree with it on the axes it has.
  std::optional<Cut> result;
  int from_rank = -1;
  for (const Node* o : n->operands()) {
    auto it = cut_.find(o);
    if (it == cut_.end() || static_cast<int>(o->shape().size()) <= from_rank) continue;
    const int shift = static_cast<int>(s.size()) - static_cast<int>(o->shape().size());
    result = Cut{it->second.first + shift, it->second.second + shift};
    from_rank = static_cast<int>(o->shape().size());
  }
  if (!result) return result;
  for (const Node* o : n->operands()) {
    auto it = cut_.find(o);
    if (it == cut_.end()) continue;
    const int shift = static_cast<int>(s.size()) - static_cast<int>(o->shape().size());
    const Cut down{std::max(0, result->first - shift), std::max(0, result->second - shift)};
    if (!Agree(o, down, it->second)) {
      *error = Unplaceable(absl::StrCat(n->name(), " ", ShapeToString(s), " reads operands that line up with the ",
                                        "space ", out_.space.ToString(), " in different ways"));
      return std::nullopt;
    }
  }
  return result;
}

// The cut of `o` as user `user` (placed at `user_cut`) reads it.
std::optional<Cut> Placer::FromUser(const Node* o, const Node* user, const Cut& user_cut) {
  const Shape& os = o->shape();
  if (user->op() == OpKind::kReshape) {
    const Shape& us = user->shape();
    const int c0 = CutWithPrefix(os, Product(us, 0, user_cut.first));
    const int c1 = CutWithPrefix(os, Product(us, 0, user_cut.second));
    if (c0 < 0 || c1 < 0) return std::nullopt;
    return Cut{c0, std::max(c0, c1)};
  }
  if (IsReduction(user)) return std::nullopt;  // a reduction's input is placed forward or as the source
  if (user->op() == OpKind::kTranspose) return std::nullopt;  // read through it: see Validate
  const int shift = static_cast<int>(user->shape().size()) - static_cast<int>(os.size());
  return Cut{std::max(0, user_cut.first - shift), std::max(0, user_cut.second - shift)};
}

absl::Status Placer::Propagate() {
  for (int round = 0; round < 8; ++round) {
    const size_t before = cut_.size();
    for (const Node* n : r_.nodes) {
      absl::Status error;
      std::optional<Cut> c = Forward(n, &error);
      KILN_RETURN_IF_ERROR(error);
      if (c) KILN_RETURN_IF_ERROR(Set(n, *c));
    }
    for (auto it = r_.nodes.rbegin(); it != r_.nodes.rend(); ++it) {
      const Node* user = *it;
      auto uc = cut_.find(user);
      if (uc == cut_.end()) continue;
      for (const Node* o : user->operands()) {
        if (IsInlinedConstant(o) || (Member(o) && cut_.count(o))) continue;
        if (std::optional<Cut> c = FromUser(o, user, uc->second)) KILN_RETURN_IF_ERROR(Set(o, *c));
      }
    }
    // A reduction whose input nothing placed is over the space's own axes if its axes say so.
    for (const Node* n : r_.nodes) {
      if (!IsReduction(n) || cut_.count(n->operand(0))) continue;
      absl::StatusOr<ReduceSpace> s = SpaceOf(n);
      if (s.ok() && s->outer == out_.space.outer && s->reduced == out_.space.reduced &&
          s->inner == out_.space.inner) {
        KILN_RETURN_IF_ERROR(Set(n->operand(0), {s->begin, s->end}));
      }
    }
    if (cut_.size() == before) break;
  }
  return absl::OkStatus();
}

absl::Status Placer::Validate() {
  std::vector<const Node*> all(r_.nodes.begin(), r_.nodes.end());
  for (const Node* n : r_.nodes) {
    for (const Node* o : n->operands()) {
      if (!Member(o) && !IsInlinedConstant(o)) all.push_back(o);
    }
  }
  // A transpose of a tensor in memory: the kernel reads the tensor through it (the reads of a
  // row kernel gather runs of it; canonicalize makes such transposes for reductions over axes in
  // several runs). Any other transpose would reorder values the kernel computes.
  std::map<const Node*, const Node*> through;  // tensor in memory -> the member transpose read
  std::vector<const Node*> stored_through;     // member transposes of members, stored through
  for (const Node* n : r_.nodes) {
    if (n->op() != OpKind::kTranspose) continue;
    const Node* x = n->operand(0);
    const bool output_only =
        std::find(r_.outputs.begin(), r_.outputs.end(), n) != r_.outputs.end() &&
        std::none_of(n->users().begin(), n->users().end(), [&](const Node* u) { return Member(u); });
    if (Member(x) && output_only && out_.space.inner == 1 && cut_.count(x) &&
        x->num_elements() == out_.space.outer * out_.space.reduced) {
      stored_through.push_back(n);
      continue;
    }
    if (Member(x) || out_.space.inner != 1) {
      return Unplaceable(absl::StrCat("transpose ", n->name(), " would reorder ",
                                      Member(x) ? "values the kernel computes" : "a column region's reads"),
                         "reduce-layout");
    }
    if (!through.emplace(x, n).second || cut_.count(x)) {
      return Unplaceable(absl::StrCat(x->name(), " is read in two layouts (through transpose ", n->name(),
                                      " and another)"), "reduce-layout");
    }
  }
  for (const Node* t : stored_through) {
    Placement p;
    p.cut[0] = cut_.at(t->operand(0)).first;
    p.cut[1] = cut_.at(t->operand(0)).second;
    p.stored_through = t;
    for (int g = 0; g < 3; ++g) p.varies[g] = NumElements(p.Part(t, g)) > 1;
    // Stored in runs of contiguous elements along the row, as a read through a transpose is.
    std::optional<StridedView> view = ViewBack(ContiguousView(t), t);
    KILN_CHECK(view.has_value()) << t->name() << " is not a bijective view";
    KILN_RETURN_IF_ERROR(NoteRun(FlattenDims(*view, p.cut[0], p.cut[1]),
                                 absl::StrCat("transpose ", t->name(), " would scatter the row it stores")));
    out_.place[t] = p;
  }
  for (const Node* n : all) {
    if (out_.place.count(n) || through.count(n)) continue;
    if (Member(n) && IsPureLayout(n) && n->op() != OpKind::kReshape && n->op() != OpKind::kBroadcastTo &&
        n->op() != OpKind::kTranspose) {
      return Unplaceable(absl::StrCat(OpName(n->op()), " ", n->name(), " would reorder the row inside a reduction kernel"),
                         "reduce-layout");
    }
    auto it = cut_.find(n);
    Placement p;
    if (it == cut_.end()) {
      if (n->num_elements() != 1) {
        return Unplaceable(absl::StrCat(n->name(), " ", ShapeToString(n->shape()), " does not line up with the space ",
                                        out_.space.ToString()));
      }
    } else {
      p.cut[0] = it->second.first;
      p.cut[1] = it->second.second;
    }
    if (auto l = like_.find(n); l != like_.end()) p.like = l->second;
    const Shape& s = n->shape();
    for (int g = 0; g < 3; ++g) {
      const Shape part = p.Part(n, g);
      if (!FitsGroup(part, out_.space.Group(g))) {
        return Unplaceable(absl::StrCat(n->name(), " ", ShapeToString(s), " does not line up with the space ",
                                        out_.space.ToString(), ": its part ", ShapeToString(part),
                                        " is not a broadcast of ", ShapeToString(out_.space.Group(g))));
      }
      p.varies[g] = NumElements(part) > 1;
    }
    out_.place[n] = p;
  }
  for (const auto& [x, t] : through) {
    Placement p = out_.place.at(t);
    for (int g = 0; g < 3; ++g) {
      const int64_t e = NumElements(p.Part(t->shape(), g));
      if (e != 1 && e != out_.space.Extent(g)) {
        return Unplaceable(absl::StrCat("transpose ", t->name(), " ", ShapeToString(t->shape()),
                                        " is a partial broadcast of the space ", out_.space.ToString()),
                           "reduce-layout");
      }
    }
    // The row must come in runs of contiguous elements, long enough for a warp's loads to stay
    // coalesced; a transpose that strides the row's innermost axis is a column reduction's job.
    std::optional<StridedView> view = ViewThrough(ContiguousView(x), t);
    KILN_CHECK(view.has_value()) << t->name() << " is not a view of " << x->name();
    KILN_RETURN_IF_ERROR(NoteRun(FlattenDims(*view, p.cut[0], p.cut[1]),
                                 absl::StrCat("transpose ", t->name(), " would reorder the row of ", x->name(),
                                              " inside a reduction kernel")));
    p.through = t;
    out_.place[x] = p;
  }
  for (const Node* o : r_.outputs) {
    const Placement& p = out_.place.at(o);
    for (int g = 0; g < 3; ++g) {
      const int64_t e = NumElements(p.Part(o, g));
      if (e != 1 && e != out_.space.Extent(g)) {
        return Unplaceable(absl::StrCat("output ", o->name(), " ", ShapeToString(o->shape()),
                                        " is a partial broadcast of the space ", out_.space.ToString(),
                                        ": several rows would write each element"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Placer::Levels() {
  for (const Node* n : r_.nodes) {
    Placement& p = out_.place.at(n);
    int level = 0;
    bool combined = false;
    for (const Node* o : n->operands()) {
      if (!Member(o)) continue;
      level = std::max(level, out_.place.at(o).level);
      combined |= out_.place.at(o).combined;
    }
    if (IsReduction(n)) {
      const Node* x = n->operand(0);
      const Placement& xp = out_.Of(x);
      if (n == source_ || xp.reduced() || xp.inner()) {
        if (combined) return Unplaceable(absl::StrCat("reduction ", n->name(), " comes after a combine"));
        if (NumElements(xp.Part(x, 1)) != out_.space.reduced) {
          return Unplaceable(absl::StrCat("reduction ", n->name(), " reduces a tensor broadcast along the row"));
        }
        // It must reduce exactly the reduced group: a reduction that also reduces outer or
        // inner axes (a whole-tensor max next to a column mean) needs every row's values,
        // which no one row of the kernel has.
        if (p.reduced() || p.outer() != xp.outer() || p.inner() != xp.inner()) {
          return Unplaceable(absl::StrCat("reduction ", n->name(), " reduces other axes than the reduced group of ",
                                          out_.space.ToString()));
        }
        out_.reductions.push_back(n);
        ++level;
      } else if (n->num_elements() == 1) {
        if (combined) return Unplaceable(absl::StrCat(n->name(), " is a combine of a combine"));
        if (!IsFloat(x->dtype())) return Unplaceable(absl::StrCat("integer combine ", n->name()));
        out_.combines.push_back(n);
        combined = true;
      } else {
        return Unplaceable(absl::StrCat("reduction ", n->name(), " reduces a value that is constant along the row"));
      }
    } else if (combined) {
      if (p.outer() || p.reduced() || p.inner()) {
        return Unplaceable(absl::StrCat(n->name(), " depends on a combine but is not a scalar"));
      }
      // What follows the combines runs once, after every row: it can read combines and
      // values computed from inputs alone, not a row's results.
      for (const Node* o : n->operands()) {
        if (Member(o) && !out_.place.at(o).combined && out_.place.at(o).level > 0) {
          return Unplaceable(absl::StrCat(n->name(), " reads both a combine and ", o->name(), ", a row's result"));
        }
      }
    }
    p.level = level;
    p.combined = combined;
  }
  return absl::OkStatus();
}

const Node* Placer::SkipViews(const Node* n) const {
  while (Member(n) && (n->op() == OpKind::kReshape || n->op() == OpKind::kBroadcastTo)) n = n->operand(0);
  return n;
}

// The mean m = reduce_mean(x) of the row that d = x - m (or m - x) subtracts, for d*d: else null.
const Node* Placer::SquaredDeviationMean(const Node* sq) const {
  if (!Member(sq) || sq->op() != OpKind::kMul || sq->operand(0) != sq->operand(1)) return nullptr;
  const Node* d = sq->operand(0);
  if (!Member(d) || d->op() != OpKind::kSub) return nullptr;
  for (int side = 0; side < 2; ++side) {
    const Node* x = d->operand(side);
    const Node* m = SkipViews(d->operand(1 - side));
    if (Member(m) && m->op() == OpKind::kReduceMean && out_.IsRowReduction(m) && m->operand(0) == x) return m;
  }
  return nullptr;
}

// reduce_sum(exp(sub(x, m))) with m = reduce_max(x) of the same row, one level below: the
// online pair, computed together at the max's level. Likewise reduce_{sum,mean}(d * d) with
// d = x - m and m = reduce_mean(x) (a layer_norm's variance), in row spaces of at most 2^24
// elements (MeanVar counts them in a float) and only where PlaceReduction keeps them (a row
// split or streamed). Not in column spaces: a column kernel's lane takes one element a step, so
// a Welford update (a reciprocal) per element; not tried there.
void Placer::FindOnlinePairs() {
  for (const Node* b : out_.reductions) {
    if (b->op() != OpKind::kReduceSum) continue;
    const Node* e = b->operand(0);
    if (!Member(e) || e->op() != OpKind::kExp) continue;
    const Node* d = e->operand(0);
    if (!Member(d) || d->op() != OpKind::kSub) continue;
    const Node* x = d->operand(0);
    const Node* m = SkipViews(d->operand(1));
    if (!Member(m) || m->op() != OpKind::kReduceMax || !out_.IsRowReduction(m) || m->operand(0) != x) continue;
    if (out_.Of(b).level != out_.Of(m).level + 1 || !IsFloat(x->dtype())) continue;
    out_.online_max[b] = m;
  }
  for (const Node* v : out_.reductions) {
    if (!pair_means_ || out_.space.inner != 1 || out_.space.reduced > (int64_t{1} << 24)) break;
    if (v->op() != OpKind::kReduceSum && v->op() != OpKind::kReduceMean) continue;
    const Node* m = SquaredDeviationMean(v->operand(0));
    if (m == nullptr || out_.Of(v).level != out_.Of(m).level + 1 || !IsFloat(m->dtype())) continue;
    out_.online_mean[v] = m;
  }
  if (out_.online_max.empty() && out_.online_mean.empty()) return;
  // A pair is computed at its max's (mean's) level: move the sum (the variance), and what
  // depends on it, down one.
  for (const Node* n : r_.nodes) {
    int l = 0;
    for (const Node* o : n->operands()) {
      if (Member(o)) l = std::max(l, out_.place.at(o).level);
    }
    if (out_.IsRowReduction(n)) {
      auto it = out_.online_max.find(n);
      auto jt = out_.online_mean.find(n);
      l = it != out_.online_max.end()    ? out_.place.at(it->second).level
          : jt != out_.online_mean.end() ? out_.place.at(jt->second).level
                                         : l + 1;
    }
    out_.place.at(n).level = l;
  }
}

void Placer::FindPicks() {
  if (out_.space.inner != 1) return;
  const Shape reduced_axes = out_.space.Group(1);
  for (const Node* red : out_.reductions) {
    if (red->op() != OpKind::kReduceSum) continue;
    const Node* w = red->operand(0);
    if (!Member(w) || w->op() != OpKind::kWhere || !out_.Of(w).reduced()) continue;
    const Node* zero = w->operand(2);
    if (!IsInlinedConstant(zero) || zero->value()->GetF64(0) != 0.0) continue;
    const Node* eq = SkipViews(w->operand(0));
    if (!Member(eq) || eq->op() != OpKind::kEq) continue;
    for (int side = 0; side < 2; ++side) {
      const Node* iota = SkipViews(eq->operand(side));
      const Node* index = eq->operand(1 - side);
      if (!Member(iota) || iota->op() != OpKind::kIota || !IsInteger(iota->dtype()) || !IsInteger(index->dtype())) {
        continue;
      }
      // The iota's value must be the column: its axis the one axis of its reduced part, of the
      // row's whole length.
      const Placement& ip = out_.Of(iota);
      const Shape& is = iota->shape();
      int64_t axis = iota->attrs().GetInt("axis");
      if (axis < 0) axis += static_cast<int64_t>(is.size());
      if (axis < ip.cut[0] || axis >= ip.cut[1] || is[axis] != out_.space.reduced) continue;
      if (out_.Of(index).reduced()) continue;
      out_.picks[red] = OneHotPick{w->operand(1), index, eq};
      break;
    }
  }
}

absl::Status Placer::Run() {
  KILN_RETURN_IF_ERROR(ChooseSpace());
  KILN_RETURN_IF_ERROR(Propagate());
  KILN_RETURN_IF_ERROR(Validate());
  KILN_RETURN_IF_ERROR(Levels());
  FindOnlinePairs();
  FindPicks();
  for (const auto& [n, p] : out_.place) out_.levels = std::max(out_.levels, Member(n) ? p.level : 0);
  return absl::OkStatus();
}

}  // namespace

Shape ReduceSpace::Group(int g) const {
  const int b = g == 0 ? 0 : g == 1 ? begin : end;
  const int e = g == 0 ? begin : g == 1 ? end : static_cast<int>(shape.size());
  return Shape(shape.begin() + b, shape.begin() + e);
}

std::string ReduceSpace::ToString() const {
  return absl::StrCat("[", outer, " x ", reduced, inner == 1 ? "" : absl::StrCat(" x ", inner), "]");
}

Shape Placement::Part(const Node* n, int g) const {
  return Part(through          ? through->shape()
              : like           ? like->shape()
              : stored_through ? stored_through->operand(0)->shape()
                               : n->shape(),
              g);
}

Shape Placement::Part(const Shape& shape, int g) const {
  const int rank = static_cast<int>(shape.size());
  const int b = g == 0 ? 0 : g == 1 ? cut[0] : cut[1];
  const int e = g == 0 ? cut[0] : g == 1 ? cut[1] : rank;
  return Shape(shape.begin() + std::min(b, rank), shape.begin() + std::min(e, rank));
}

std::string Placement::FormName() const {
  std::string f = outer() && reduced() ? "row-shaped" : outer() ? "per-row" : reduced() ? "along the row" : "scalar";
  return inner() ? f + " x inner" : f;
}

const Placement& ReducePlacement::Of(const Node* n) const {
  auto it = place.find(n);
  KILN_CHECK(it != place.end()) << n->name() << " has no place in the reduction space";
  return it->second;
}

bool ReducePlacement::IsRowReduction(const Node* n) const {
  return std::find(reductions.begin(), reductions.end(), n) != reductions.end();
}

bool ReducePlacement::IsCombine(const Node* n) const {
  return std::find(combines.begin(), combines.end(), n) != combines.end();
}

std::string ReducePlacement::OnlinePairs() const {
  std::vector<std::string> pairs;
  if (!online_max.empty()) pairs.push_back("online max+sum");
  if (!online_mean.empty()) pairs.push_back("online mean+variance");
  return absl::StrJoin(pairs, ", ");
}

bool ReducePlacement::IsPairedMean(const Node* n) const {
  for (const auto& [variance, mean] : online_mean) {
    if (mean == n) return true;
  }
  return false;
}

bool ReducePlacement::IsPairedMax(const Node* n) const {
  for (const auto& [sum, max] : online_max) {
    if (max == n) return true;
  }
  return false;
}

int RowVector(const Region& region, const ReducePlacement& placement) {
  return VectorElements(region, placement.through_run);
}

absl::StatusOr<ReduceSpace> SpaceOf(const Node* reduction) {
  KILN_CHECK(IsReduction(reduction)) << reduction->name() << " is not a reduction";
  ReduceSpace s;
  s.shape = reduction->operand(0)->shape();
  const std::vector<int64_t> axes = SortedAxes(reduction);
  for (size_t i = 1; i < axes.size(); ++i) {
    if (axes[i] != axes[i - 1] + 1) {
      return Unplaceable(absl::StrCat("reduction ", reduction->name(), " over axes [", absl::StrJoin(axes, ","),
                                      "], which are not adjacent"));
    }
  }
  s.begin = axes.empty() ? static_cast<int>(s.shape.size()) : static_cast<int>(axes.front());
  s.end = axes.empty() ? s.begin : static_cast<int>(axes.back()) + 1;
  s.outer = Product(s.shape, 0, s.begin);
  s.reduced = Product(s.shape, s.begin, s.end);
  s.inner = Product(s.shape, s.end, static_cast<int>(s.shape.size()));
  return s;
}

absl::StatusOr<ReducePlacement> PlaceReduction(const Region& region, const DeviceSpec& device) {
  ReducePlacement placement;
  KILN_RETURN_IF_ERROR(Placer(region, placement, /*pair_means=*/true).Run());
  if (!placement.online_mean.empty()) {
    // A row that one block keeps on chip is read once either way; there a mean and its
    // variance stay two levels, because the pair's arithmetic per element (a Welford merge per
    // vector) costs more than the block merge it saves: 1.02-1.07x the time on the H200 for
    // rows of 768 to 5120 (bench/results/2026-11-27-session20.md, run 1). Split or streamed
    // rows keep the pair: it saves a pass over the row, or the blocks of a row waiting for each
    // other once (0.80-0.96x there).
    ReducePlacement two_levels;
    KILN_RETURN_IF_ERROR(Placer(region, two_levels, /*pair_means=*/false).Run());
    two_levels.fit = FitRowOnChip(region, two_levels, device);
    if (two_levels.fit.on_chip && two_levels.fit.split == 1) {
      two_levels.fit.reason += "; mean and variance in two levels (the row stays on chip in one block or warp: a "
                               "Welford pass would cost more arithmetic than the merge it saves)";
      return two_levels;
    }
  }
  placement.fit = placement.space.inner == 1 ? FitRowOnChip(region, placement, device)
                                              : FitColumnOnChip(region, placement, device);
  if (!placement.online_mean.empty() && placement.fit.reason.find("online mean+variance") == std::string::npos) {
    placement.fit.reason += "; mean and variance in one pass (online mean+variance, Welford): one level, so the "
                            "row's blocks do not wait for each other between them";
  }
  return placement;
}

}  // namespace kiln
