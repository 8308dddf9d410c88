#include "passes/fusion/layout_access.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/dtype.h"
#include "passes/fusion/plain_vector.h"

namespace kiln {
namespace {

AffineForm Zero(size_t rank) {
  AffineForm f;
  f.coeff.assign(rank, 0);
  return f;
}

// Axes of extent 1 have coordinate 0 wherever the node is evaluated.
AffineIndex ZeroUnitAxes(AffineIndex at, const Shape& shape, size_t rank) {
  for (size_t k = 0; k < at.size(); ++k) {
    if (shape[k] == 1) at[k] = Zero(rank);
  }
  return at;
}

// `at` (the coordinates of a node of shape `from`) as the coordinates of an operand of shape
// `to` that numpy-broadcasts to it.
AffineIndex BroadcastIndexOf(const Shape& from, const Shape& to, const AffineIndex& at, size_t rank) {
  const size_t lead = from.size() - to.size();
  AffineIndex out(to.size(), Zero(rank));
  for (size_t j = 0; j < to.size(); ++j) {
    if (to[j] != 1) out[j] = at[j + lead];
  }
  return out;
}

int ConcatAxis(const Node& concat) {
  const int64_t axis = concat.attrs().GetInt("axis");
  return static_cast<int>(axis < 0 ? axis + static_cast<int64_t>(concat.shape().size()) : axis);
}

// Each piece's first coordinate along the concat axis, then the axis extent.
std::vector<int64_t> ConcatStarts(const Node& concat) {
  const int axis = ConcatAxis(concat);
  std::vector<int64_t> starts = {0};
  for (const Node* piece : concat.operands()) starts.push_back(starts.back() + piece->shape()[axis]);
  return starts;
}

int64_t PowerOfTwoCeil(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

// A member evaluated at an index: the Walker visits each one once. Hashed, not printed: a
// region is walked for every merge priority fusion prices.
struct Visited {
  const Node* node;
  AffineIndex at;
  bool operator==(const Visited& o) const { return node == o.node && at == o.at; }
  template <typename H>
  friend H AbslHashValue(H h, const Visited& v) {
    h = H::combine(std::move(h), v.node, v.at.size());
    for (const AffineForm& f : v.at) h = H::combine(std::move(h), f.offset, f.coeff);
    return h;
  }
};

// Walks an elementwise region back from its outputs, as the emitters do, collecting every read
// and every form the kernel evaluates.
class Walker {
 public:
  Walker(const Region& r, const Shape& space) : space_(space), members_(r.nodes.begin(), r.nodes.end()) {}

  bool Visit(const Node* n, const AffineIndex& at) {
    if (!seen_.insert(Visited{n, at}).second) return true;
    if (!members_.count(n)) {
      if (IsInlinedConstant(n)) return true;
      AffineForm f = LinearForm(at, n->shape(), space_);
      forms.push_back(f);
      reads.push_back({n, std::move(f)});
      return true;
    }
    if (n->op() == OpKind::kIota || n->category() == OpCategory::kRandom) {
      forms.push_back(LinearForm(at, n->shape(), space_));  // the element index they compute with
    }
    if (n->op() == OpKind::kConcat) {  // the piece it selects follows its axis coordinate
      const AffineForm& coord = at[ConcatAxis(*n)];
      forms.push_back(coord);
      selects.push_back({n, coord, ConcatStarts(*n)});
    }
    for (int k = 0; k < n->num_operands(); ++k) {
      const Node* o = n->operand(k);
      if (IsInlinedConstant(o)) continue;
      std::optional<AffineIndex> oi = OperandIndex(*n, k, at, space_, &split);
      if (!oi) {
        failure = n->op() == OpKind::kReshape
                      ? absl::StrCat("reshape ", n->name(), " re-splits the space's index with a carry")
                      : absl::StrCat(n->name(), " (", OpName(n->op()), ") looks up its elements");
        return false;
      }
      if (!Visit(o, *oi)) return false;
    }
    return true;
  }

  std::vector<std::pair<const Node*, AffineForm>> reads;
  std::vector<AffineForm> forms;
  std::vector<ConcatSelect> selects;  // over the space, not canonical yet
  std::vector<AffineForm> stores;     // each output's, over the space
  std::string failure;
  AxisSplit split;  // set when a reshape needs a space axis split

 private:
  const Shape& space_;
  absl::flat_hash_set<const Node*> members_;
  absl::flat_hash_set<Visited> seen_;
};

// Sectors of 32 bytes the first warp of the plain kernel (32 x `per_thread` consecutive elements
// of the canonical space) fetches for `form`, over the fewest those elements of `bytes` can take.
double PlainWaste(const LayoutPlan& plan, const AffineForm& form, int64_t bytes, int per_thread = 1) {
  int64_t total = 1;
  for (int64_t e : plan.extents) total *= e;
  const int64_t lanes = std::min<int64_t>(32 * per_thread, total);
  std::set<int64_t> sectors;
  for (int64_t p = 0; p < lanes; ++p) {
    int64_t rem = p, offset = form.offset;
    for (int g = static_cast<int>(plan.extents.size()) - 1; g >= 0; --g) {
      offset += form.coeff[g] * (rem % plan.extents[g]);
      rem /= plan.extents[g];
    }
    sectors.insert(offset * bytes / 32);
  }
  const double fewest = std::max<int64_t>(1, (lanes * bytes + 31) / 32);
  return std::max(1.0, static_cast<double>(sectors.size()) / fewest);
}

}  // namespace

std::string AffineForm::Key() const { return absl::StrCat(offset, "+", absl::StrJoin(coeff, ",")); }

AffineIndex SpaceIndex(const Shape& space) {
  AffineIndex at(space.size(), Zero(space.size()));
  for (size_t d = 0; d < space.size(); ++d) {
    if (space[d] != 1) at[d].coeff[d] = 1;
  }
  return at;
}

AffineForm LinearForm(const AffineIndex& at, const Shape& shape, const Shape& space) {
  AffineForm f = Zero(space.size());
  const std::vector<int64_t> strides = RowMajorStrides(shape);
  for (size_t k = 0; k < at.size(); ++k) {
    f.offset += at[k].offset * strides[k];
    for (size_t d = 0; d < space.size(); ++d) f.coeff[d] += at[k].coeff[d] * strides[k];
  }
  return f;
}

std::optional<AffineIndex> DigitsOf(const AffineForm& linear, const Shape& shape, const Shape& space,
                                    AxisSplit* split) {
  const size_t rank = space.size();
  AffineIndex out(shape.size(), Zero(rank));
  const int64_t count = NumElements(shape);
  if (count == 0 || linear.offset < 0 || linear.offset >= count) return std::nullopt;
  const std::vector<int64_t> strides = RowMajorStrides(shape);
  std::vector<int64_t> top(shape.size(), 0);  // each digit's largest value
  int64_t rest = linear.offset;
  for (size_t j = 0; j < shape.size(); ++j) {
    out[j].offset = top[j] = rest / strides[j];
    rest %= strides[j];
  }
  for (size_t d = 0; d < rank; ++d) {
    const int64_t m = linear.coeff[d];
    if (m == 0 || space[d] == 1) continue;
    if (m < 0) return std::nullopt;
    // The digit whose range holds m: strides[j] <= m < strides[j - 1] (none for an axis of extent 1).
    size_t j = 0;
    while (j < shape.size() && !(strides[j] <= m && (j == 0 || m < strides[j - 1]))) ++j;
    if (j == shape.size() || m % strides[j] != 0) return std::nullopt;
    const int64_t q = m / strides[j];
    if (q * space[d] > shape[j] && split != nullptr && shape[j] % q == 0) {
      // The axis runs past digit j: its inner shape[j] / q values fill the digit exactly.
      const int64_t inner = shape[j] / q;
      if (inner > 1 && space[d] % inner == 0) *split = AxisSplit{static_cast<int>(d), inner};
      return std::nullopt;
    }
    out[j].coeff[d] = q;
    top[j] += q * (space[d] - 1);
  }
  for (size_t j = 0; j < shape.size(); ++j) {
    if (top[j] >= shape[j]) return std::nullopt;  // a carry into the next digit
  }
  return out;
}

namespace {

// The space axis e that alone selects a concat's piece, when its pieces all have one extent P
// and its axis coordinate is P c_e + r with r in [0, P) everywhere (a space axis split at the
// piece boundaries: the walk splits the axis where a reshape inside a piece needs it): within
// piece k, c_e == k and the piece's coordinate is r, a form valid over the whole space, where
// the plain one (the coordinate minus the piece's start) leaves the piece's range and stops a
// reshape below it from being affine. -1 when there is none.
int PieceAxis(const AffineForm& coord, const std::vector<int64_t>& starts, const Shape& space) {
  const int64_t piece = starts.size() > 2 ? starts[1] - starts[0] : 0;
  if (piece <= 1 || coord.offset < 0) return -1;
  for (size_t k = 1; k < starts.size(); ++k) {
    if (starts[k] - starts[k - 1] != piece) return -1;
  }
  int e = -1;
  int64_t top = coord.offset;  // the largest r
  for (size_t d = 0; d < space.size(); ++d) {
    const int64_t m = coord.coeff[d];
    if (m == 0 || space[d] == 1) continue;
    if (m < 0) return -1;
    if (m == piece && e < 0 && space[d] == static_cast<int64_t>(starts.size()) - 1) {
      e = static_cast<int>(d);
    } else {
      top += m * (space[d] - 1);
    }
  }
  return e >= 0 && top < piece ? e : -1;
}

std::optional<AffineIndex> OperandIndexRaw(const Node& n, int k, const AffineIndex& at, const Shape& space,
                                           AxisSplit* split) {
  const Node* x = n.operand(k);
  const Shape& xs = x->shape();
  const size_t rank = space.size();
  switch (n.category()) {
    case OpCategory::kPointwise:
    case OpCategory::kRandom:
    case OpCategory::kBroadcast:
      return BroadcastIndexOf(n.shape(), xs, at, rank);
    case OpCategory::kLayout:
      break;
    default:
      return std::nullopt;
  }
  switch (n.op()) {
    case OpKind::kReshape:
      return DigitsOf(LinearForm(at, n.shape(), space), xs, space, split);
    case OpKind::kTranspose: {
      const std::vector<int64_t>& perm = n.attrs().GetInts("perm");
      AffineIndex out(xs.size(), Zero(rank));
      for (size_t d = 0; d < perm.size(); ++d) out[perm[d]] = at[d];
      return out;
    }
    case OpKind::kSlice: {
      const std::vector<int64_t>& starts = n.attrs().GetInts("starts");
      std::vector<int64_t> steps = n.attrs().GetInts("steps");
      if (steps.empty()) steps.assign(xs.size(), 1);
      AffineIndex out(xs.size(), Zero(rank));
      for (size_t d = 0; d < xs.size(); ++d) {
        const int64_t begin = std::clamp<int64_t>(starts[d] < 0 ? starts[d] + xs[d] : starts[d], 0, xs[d]);
        out[d].offset = begin + at[d].offset * steps[d];
        for (size_t c = 0; c < rank; ++c) out[d].coeff[c] = at[d].coeff[c] * steps[d];
      }
      return out;
    }
    case OpKind::kConcat: {
      const int axis = ConcatAxis(n);
      const std::vector<int64_t> starts = ConcatStarts(n);
      AffineIndex out = at;
      AffineForm& c = out[axis];
      const int e = PieceAxis(c, starts, space);
      if (e >= 0) {
        // Piece k is selected exactly where c_e == k: there its coordinate is the rest of the form.
        c.coeff[e] = 0;
        return out;
      }
      c.offset -= starts[k];
      return out;
    }
    default:
      return std::nullopt;  // gather
  }
}

}  // namespace

std::optional<AffineIndex> OperandIndex(const Node& n, int k, const AffineIndex& at, const Shape& space,
                                        AxisSplit* split) {
  std::optional<AffineIndex> index = OperandIndexRaw(n, k, at, space, split);
  if (index) *index = ZeroUnitAxes(std::move(*index), n.operand(k)->shape(), space.size());
  return index;
}

std::optional<AffineIndex> OutputIndex(const Node& output, const Shape& space, AxisSplit* split) {
  if (output.shape() == space) return SpaceIndex(space);
  if (output.num_elements() != NumElements(space)) return std::nullopt;
  return DigitsOf(LinearForm(SpaceIndex(space), space, space), output.shape(), space, split);
}

const char* ReadKindName(ReadKind kind) {
  switch (kind) {
    case ReadKind::kAlong: return "along";
    case ReadKind::kBroadcast: return "broadcast";
    case ReadKind::kTransposed: return "transposed";
    case ReadKind::kStrided: return "strided";
    case ReadKind::kStaged: return "staged";
  }
  return "?";
}

AffineForm LayoutPlan::Canonical(const AffineForm& f) const {
  AffineForm c;
  c.offset = f.offset;
  for (const std::vector<int>& g : groups) c.coeff.push_back(f.coeff[g.back()]);
  return c;
}

std::vector<int> LayoutPlan::RestAxes() const {
  std::vector<int> rest;
  for (int g = 0; g < static_cast<int>(extents.size()); ++g) {
    if (g != a && g != b) rest.push_back(g);
  }
  return rest;
}

int64_t LayoutPlan::RestCount() const {
  int64_t n = 1;
  for (int g : RestAxes()) n *= extents[g];
  return n;
}

int64_t LayoutPlan::Tiles(int tb, int ta) const {
  if (!tiled()) return 0;
  return RestCount() * ((extents[b] + tb - 1) / tb) * ((extents[a] + ta - 1) / ta);
}

int64_t LayoutPlan::WastedReadBytes(int64_t space_elements, bool vectors) const {
  double bytes = 0;
  for (const LayoutRead& r : reads) {
    if (r.kind != ReadKind::kTransposed && r.kind != ReadKind::kStrided) continue;
    const double waste = vectors ? r.vector_waste : r.plain_waste;
    bytes += (waste - 1) * static_cast<double>(space_elements) * ByteSize(r.input->dtype());
  }
  return static_cast<int64_t>(bytes);
}

std::string LayoutPlan::Summary() const {
  std::vector<std::string> staged, direct;
  for (const LayoutRead& r : reads) {
    if (r.kind == ReadKind::kStaged) staged.push_back(r.input->name());
    if (r.kind == ReadKind::kTransposed || r.kind == ReadKind::kStrided) {
      direct.push_back(absl::StrFormat("%s %s%s (%.1fx the 32-byte sectors it needs)", r.input->name(),
                                       ReadKindName(r.kind),
                                       r.unit_axis >= 0 ? absl::StrCat(" along axis ", r.unit_axis) : "",
                                       r.plain_waste));
    }
  }
  if (!tiled()) {
    if (direct.empty()) return "";
    return absl::StrCat("plain kernel, uncoalesced: ", absl::StrJoin(direct, ", "),
                        why_plain.empty() ? "" : absl::StrCat(" (", why_plain, ")"));
  }
  std::string s = absl::StrCat("tiled transpose over [", absl::StrJoin(extents, ","), "] (a = axis ", a,
                               ", b = axis ", b, "): ", absl::StrJoin(staged, ", "),
                               " staged through shared memory, coalesced along b");
  if (!direct.empty()) {
    absl::StrAppend(&s, "; read directly (another permutation, or past the shared-memory budget): ",
                    absl::StrJoin(direct, ", "));
  }
  return s;
}

std::shared_ptr<const LayoutPlan> PlanLayout(const Region& region) {
  auto plan = std::make_shared<LayoutPlan>();
  const int64_t count = NumElements(region.space);
  if (region.space.empty() || count <= 1) {
    plan->why_plain = "the space has at most one element";
    return plan;
  }
  // Walk from every output; where a reshape needs a space axis split, split it and walk again.
  plan->space = region.space;
  std::optional<Walker> walker;
  for (bool done = false; !done;) {
    walker.emplace(region, plan->space);
    done = true;
    for (const Node* o : region.outputs) {
      std::optional<AffineIndex> at = OutputIndex(*o, plan->space, &walker->split);
      if (at) {
        walker->forms.push_back(LinearForm(*at, o->shape(), plan->space));
        walker->stores.push_back(walker->forms.back());
      } else if (walker->split.axis < 0) {
        walker->failure = absl::StrCat("output ", o->name(), " ", ShapeToString(o->shape()),
                                       " is not laid out as the space ", ShapeToString(region.space));
      }
      if (!at || !walker->Visit(o, *at)) {
        if (walker->split.axis < 0) {
          plan->why_plain = walker->failure;
          return plan;
        }
        const AxisSplit s = walker->split;
        plan->space[s.axis] /= s.inner;
        plan->space.insert(plan->space.begin() + s.axis + 1, s.inner);
        done = false;
        break;
      }
    }
  }
  const Shape& space = plan->space;
  plan->affine = true;

  // Canonical axes: drop extent 1, merge neighbours every form agrees on.
  for (int d = 0; d < static_cast<int>(space.size()); ++d) {
    if (space[d] == 1) continue;
    bool merge = !plan->groups.empty();
    for (const AffineForm& f : walker->forms) {
      if (!merge) break;
      merge = f.coeff[plan->groups.back().back()] == f.coeff[d] * space[d];
    }
    if (merge) {
      plan->groups.back().push_back(d);
      plan->extents.back() *= space[d];
    } else {
      plan->groups.push_back({d});
      plan->extents.push_back(space[d]);
    }
  }
  plan->a = static_cast<int>(plan->extents.size()) - 1;

  // Classify the reads (one per distinct input and form).
  std::set<std::string> seen;
  std::map<int, int64_t> transposed_bytes;  // by unit axis: what staging along it would fix
  for (const auto& [input, form] : walker->reads) {
    LayoutRead r;
    r.input = input;
    r.form = plan->Canonical(form);
    if (!seen.insert(absl::StrCat(input->name(), "@", r.form.Key())).second) continue;
    for (int g = 0; g < static_cast<int>(plan->extents.size()); ++g) {
      if (g != plan->a && r.form.coeff[g] == 1) r.unit_axis = g;
    }
    const int64_t along = r.form.coeff[plan->a];
    r.kind = along == 1   ? ReadKind::kAlong
             : along == 0 ? ReadKind::kBroadcast
             : r.unit_axis >= 0 ? ReadKind::kTransposed
                                : ReadKind::kStrided;
    r.plain_waste = PlainWaste(*plan, r.form, ByteSize(input->dtype()));
    if (r.kind == ReadKind::kTransposed && r.plain_waste >= kStageWaste) {
      transposed_bytes[r.unit_axis] += count * ByteSize(input->dtype());
    }
    plan->reads.push_back(std::move(r));
  }
  for (const AffineForm& f : walker->stores) plan->stores.push_back(plan->Canonical(f));
  for (ConcatSelect select : walker->selects) {
    select.coord = plan->Canonical(select.coord);
    plan->selects.push_back(std::move(select));
  }
  plan->plain_vector = PlainVectorWidth(region, *plan);
  for (LayoutRead& r : plan->reads) {
    r.vector_waste = plan->plain_vector > 1 ? PlainWaste(*plan, r.form, ByteSize(r.input->dtype()), plan->plain_vector)
                                            : r.plain_waste;
  }
  if (!plan->selects.empty()) {
    plan->affine = false;
    plan->why_plain = absl::StrCat(plan->selects.front().concat->name(),
                                   " (concat) selects its pieces: the tiled kernel stages no selection");
    return plan;
  }
  if (transposed_bytes.empty()) {
    plan->why_plain = absl::StrCat("nothing to stage: no read has a unit-stride axis other than a and ", kStageWaste,
                                   "x the sectors it needs or more");
    return plan;
  }
  plan->b = std::max_element(transposed_bytes.begin(), transposed_bytes.end(),
                             [](const auto& x, const auto& y) { return x.second < y.second; })
                ->first;

  // Stage the transposed reads along b, as many as the smallest tile's shared memory holds.
  int64_t smem = 0;
  for (LayoutRead& r : plan->reads) {
    if (r.kind != ReadKind::kTransposed || r.unit_axis != plan->b) continue;
    const int64_t bytes = ByteSize(r.input->dtype());
    const int64_t tile = 32 * (32 + std::max<int64_t>(1, 4 / bytes)) * bytes;
    if (smem + tile > kStagedSmemBytes) continue;
    smem += tile;
    r.kind = ReadKind::kStaged;
    plan->staged_bytes = std::max<int>(plan->staged_bytes, static_cast<int>(bytes));
  }

  // The widest vector: 16 bytes of the smallest staged or stored element (at most 8), halved
  // until it divides the extents of a and b and every staged read's strides but b's and offset.
  int64_t smallest = 8;
  for (const LayoutRead& r : plan->reads) {
    if (r.kind == ReadKind::kStaged) smallest = std::min<int64_t>(smallest, ByteSize(r.input->dtype()));
  }
  for (const Node* o : region.outputs) smallest = std::min<int64_t>(smallest, ByteSize(o->dtype()));
  int v = static_cast<int>(std::min<int64_t>(8, 16 / smallest));
  auto divides = [&](int w) {
    if (plan->extents[plan->a] % w != 0 || plan->extents[plan->b] % w != 0) return false;
    for (const LayoutRead& r : plan->reads) {
      if (r.kind != ReadKind::kStaged) continue;
      if (r.form.offset % w != 0) return false;
      for (int g = 0; g < static_cast<int>(plan->extents.size()); ++g) {
        if (g != plan->b && r.form.coeff[g] % w != 0) return false;
      }
    }
    return true;
  };
  while (v > 1 && !divides(v)) v /= 2;
  plan->max_vector = v;
  return plan;
}

int64_t StagedSmemBytes(const LayoutPlan& plan, const TileChoice& tile) {
  int64_t bytes = 0;
  for (const LayoutRead& r : plan.reads) {
    if (r.kind != ReadKind::kStaged) continue;
    const int64_t size = ByteSize(r.input->dtype());
    bytes += static_cast<int64_t>(tile.ta) * (tile.tb + std::max<int64_t>(1, 4 / size)) * size;
  }
  return bytes;
}

absl::Status CheckTile(const LayoutPlan& plan, const TileChoice& t) {
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("tile ", t.tb, "x", t.ta, " vec=", t.vector, " block=", t.threads,
                                                   ": ", why));
  };
  if (!plan.tiled()) return bad("the region has no staged read");
  auto pow2 = [](int64_t x) { return x > 0 && (x & (x - 1)) == 0; };
  if (!pow2(t.vector) || t.vector > plan.max_vector) {
    return bad(absl::StrCat("the vector must be a power of two of at most ", plan.max_vector,
                            " elements (extents, strides and offsets of the staged reads)"));
  }
  if (!pow2(t.tb) || !pow2(t.ta) || t.tb > 256 || t.ta > 256 || t.tb < t.vector || t.ta < t.vector) {
    return bad("tile extents are powers of two in [vector, 256]");
  }
  if (t.threads % 32 != 0 || t.threads < 32 || t.threads > 1024) return bad("whole warps, at most 1024 threads");
  const int64_t items = static_cast<int64_t>(t.tb) / t.vector * t.ta;
  if (items % t.threads != 0) return bad("every thread moves the same number of vectors in each phase");
  const int stage_lanes = std::min(t.tb / t.vector, 32 / std::max(1, t.vector * plan.staged_bytes / 4));
  const int store_lanes = std::min(t.ta / t.vector, 32 / t.vector);
  if (stage_lanes < 1 || store_lanes < 1 || t.ta % (32 / stage_lanes) != 0 || t.tb % (32 / store_lanes) != 0) {
    return bad("a warp's rows must lie inside the tile in both phases");
  }
  if (StagedSmemBytes(plan, t) > kStagedSmemBytes) {
    return bad(absl::StrCat("the staged tiles need ", StagedSmemBytes(plan, t), " bytes of shared memory, more than ",
                            kStagedSmemBytes));
  }
  return absl::OkStatus();
}

TileChoice DefaultTile(const LayoutPlan& plan) {
  TileChoice t;
  if (!plan.tiled()) return t;
  t.vector = plan.max_vector;
  t.tb = t.ta = t.vector >= 4 ? 64 : 32;
  // A side whose last tile would be mostly padding is narrowed to the widest tile that pads it by
  // at most kTilePadding (or pads it least); the tile gets smaller (widening the other side too
  // makes the half-block candidate spill).
  auto padded = [](int64_t extent, int side) {
    return static_cast<double>((extent + side - 1) / side * side) / static_cast<double>(extent);
  };
  auto narrow = [&](int& side, int64_t extent) {
    if (extent <= side) return;  // one tile: the rule below narrows it
    int best = side;
    for (int w = side; w >= std::max(16, t.vector); w /= 2) {
      if (padded(extent, w) < padded(extent, best)) best = w;
      if (padded(extent, best) <= kTilePadding) break;
    }
    side = best;
  };
  narrow(t.ta, plan.extents[plan.a]);
  narrow(t.tb, plan.extents[plan.b]);
  const int64_t extent_b = PowerOfTwoCeil(plan.extents[plan.b]), extent_a = PowerOfTwoCeil(plan.extents[plan.a]);
  while (t.tb > 8 && t.tb / 2 >= extent_b) {
    t.tb /= 2;
    if (t.ta < 256 && t.ta < extent_a) t.ta *= 2;
  }
  while (t.ta > 8 && t.ta / 2 >= extent_a) {
    t.ta /= 2;
    if (t.tb < 256 && t.tb < extent_b) t.tb *= 2;
  }
  while (StagedSmemBytes(plan, t) > kStagedSmemBytes && (t.tb > 32 || t.ta > 32)) {
    (t.tb >= t.ta ? t.tb : t.ta) /= 2;
  }
  t.threads = static_cast<int>(std::min<int64_t>(256, static_cast<int64_t>(t.tb) / t.vector * t.ta));
  while (!CheckTile(plan, t).ok() && t.vector > 1) t.vector /= 2;
  t.threads = static_cast<int>(std::min<int64_t>(256, static_cast<int64_t>(t.tb) / t.vector * t.ta));
  if (!CheckTile(plan, t).ok()) t = TileChoice{};  // 32 x 32, one element per access: always valid
  return t;
}

}  // namespace kiln
