#include "passes/canonicalize.h"

#include <algorithm>
#include <map>

#include "ir/base/status.h"
#include "passes/rewrite_util.h"

namespace kiln {
namespace {

// The shortest run of reduced innermost axes (in elements) that a reduction over axes in
// several runs reads through a transpose rather than in two reductions: a warp's 32 loads then
// touch at most two runs, and a run of 8 or more elements is a whole number of 16-byte vectors
// where it is a multiple of 8.
constexpr int64_t kMinTransposedRun = 32;

// `n` with its axes permuted by `perm` (numpy-padded to perm's rank first). A transpose that
// keeps the order of the axes of extent > 1 is a reshape; through pointwise ops (no generators)
// the transpose moves to their operands, so that a reduction region reads the tensors in memory
// through it and computes everything else in the permuted order. `memo` shares the nodes built
// for one rewrite; `budget` bounds how many pointwise ops are rebuilt.
Node* Transposed(Rewriter& rw, Node* n, const std::vector<int64_t>& perm, std::map<Node*, Node*>& memo, int& budget) {
  if (auto it = memo.find(n); it != memo.end()) return it->second;
  const size_t rank = perm.size();
  Shape s = n->shape();
  Node* x = n;
  if (s.size() < rank) {
    s.insert(s.begin(), rank - s.size(), 1);
    x = rw.Add(OpKind::kReshape, {n}, {{"shape", s}});
  }
  Shape permuted(rank);
  std::vector<int64_t> order;  // the axes of extent > 1, in their new order
  for (size_t d = 0; d < rank; ++d) {
    permuted[d] = s[perm[d]];
    if (s[perm[d]] != 1) order.push_back(perm[d]);
  }
  Node* result = nullptr;
  if (std::is_sorted(order.begin(), order.end())) {
    result = permuted == n->shape() ? n : rw.Add(OpKind::kReshape, {x}, {{"shape", permuted}});
  } else if (n->category() == OpCategory::kPointwise && n->num_operands() > 0 && budget > 0) {
    --budget;
    std::vector<Node*> operands;
    for (Node* o : n->operands()) {
      operands.push_back(o->shape().empty() ? o : Transposed(rw, o, perm, memo, budget));
    }
    result = rw.Add(n->op(), operands, n->attrs());
  } else {
    result = rw.Add(OpKind::kTranspose, {x}, {{"perm", perm}});
  }
  memo[n] = result;
  return result;
}

// A reduction over axes in several runs whose last run holds the innermost axis and at least
// kMinTransposedRun elements (batch norm's mean over N, H and W of [N, C, H, W]): one reduction
// over the trailing axes of its operand transposed to (kept axes, reduced axes), reshaped back.
// A row kernel then reads each row (a channel) as runs of contiguous elements (H x W), once,
// instead of a row reduction and a column reduction over its partial results. Else nullptr.
Node* ReduceTransposed(Rewriter& rw, Node* node, const std::vector<int64_t>& axes) {
  const Shape& in = node->operand(0)->shape();
  const int64_t rank = static_cast<int64_t>(in.size());
  if (axes.empty() || axes.back() != rank - 1) return nullptr;
  int64_t run = 1;
  for (size_t i = axes.size(); i-- > 0 && axes[i] == rank - static_cast<int64_t>(axes.size() - i);) run *= in[axes[i]];
  if (run < kMinTransposedRun) return nullptr;
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d) {
    if (!std::binary_search(axes.begin(), axes.end(), d)) perm.push_back(d);
  }
  const int64_t kept = static_cast<int64_t>(perm.size());
  perm.insert(perm.end(), axes.begin(), axes.end());
  std::map<Node*, Node*> memo;
  int budget = 16;
  Node* x = Transposed(rw, node->operand(0), perm, memo, budget);
  std::vector<int64_t> trailing;
  for (int64_t d = kept; d < rank; ++d) trailing.push_back(d);
  Node* reduced = rw.Add(node->op(), {x}, {{"axes", trailing}, {"keep_dims", true}});
  return rw.Add(OpKind::kReshape, {reduced}, {{"shape", node->shape()}});
}

// The permutation by which a reduction reads `x` (a transpose of x feeding a reduction, as
// ReduceTransposed makes them), or empty.
std::vector<int64_t> ReducedThroughPermutation(const Node* x) {
  for (const Node* t : x->users()) {
    if (t->op() != OpKind::kTranspose) continue;
    for (const Node* u : t->users()) {
      if (u->category() == OpCategory::kReduction) return t->attrs().GetInts("perm");
    }
  }
  return {};
}

// Whether `n`, padded to perm's rank, keeps the order of its axes of extent > 1 under `perm`
// (its transpose is a reshape), or is a scalar.
bool PermutesAsReshape(const Node* n, const std::vector<int64_t>& perm) {
  Shape s = n->shape();
  if (s.size() > perm.size()) return false;
  s.insert(s.begin(), perm.size() - s.size(), 1);
  int64_t last = -1;
  for (int64_t d : perm) {
    if (s[d] == 1) continue;
    if (d < last) return false;
    last = d;
  }
  return true;
}

// The permutation `node` can be computed under (SinkIntoTransposedSpace), or empty: its
// pointwise cone over its own shape (at most 16 nodes) reads one tensor of that shape, which a
// reduction reads through a transpose, and otherwise only tensors whose transpose is a reshape.
std::vector<int64_t> SinkPermutation(const Node* node) {
  if (node->category() != OpCategory::kPointwise || node->num_operands() == 0) return {};
  std::vector<const Node*> stack = {node};
  std::vector<const Node*> cone, leaves;
  const Node* source = nullptr;
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (std::find(cone.begin(), cone.end(), n) != cone.end()) continue;
    cone.push_back(n);
    if (cone.size() > 16) return {};
    for (const Node* o : n->operands()) {
      if (o->shape() != node->shape()) {
        leaves.push_back(o);
      } else if (o->category() == OpCategory::kPointwise && o->num_operands() > 0) {
        stack.push_back(o);
      } else if (source == nullptr || source == o) {
        source = o;
      } else {
        return {};  // two tensors of the full shape
      }
    }
  }
  if (source == nullptr) return {};
  std::vector<int64_t> perm = ReducedThroughPermutation(source);
  if (perm.empty() || perm.size() != node->shape().size()) return {};
  for (const Node* leaf : leaves) {
    if (!PermutesAsReshape(leaf, perm)) return {};
  }
  return perm;
}

// A pointwise node over the whole of a tensor x that a reduction reads through a transpose of
// x (batch norm's normalisation, beside the statistics ReduceTransposed made), computed in the
// transposed space and transposed back: the statistics and the normalisation then read x in one
// layout, so one row kernel can read it once and store its result through the transpose (a
// region output, reduce_placement.h). Only at the last such node of a chain (none of its
// pointwise users of its shape also qualifies), so that the chain moves as one. Else nullptr.
Node* SinkIntoTransposedSpace(Rewriter& rw, Node* node) {
  const std::vector<int64_t> perm = SinkPermutation(node);
  if (perm.empty()) return nullptr;
  for (const Node* u : node->users()) {
    // A reduction's operand moves with it (ReduceTransposed).
    if (u->category() == OpCategory::kReduction) return nullptr;
    if (u->shape() == node->shape() && !SinkPermutation(u).empty()) return nullptr;
  }
  std::map<Node*, Node*> memo;
  int budget = 16;
  Node* inside = Transposed(rw, node, perm, memo, budget);
  std::vector<int64_t> inverse(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) inverse[perm[d]] = static_cast<int64_t>(d);
  return rw.Add(OpKind::kTranspose, {inside}, {{"perm", inverse}});
}

// Returns the node that should replace `node`, or nullptr when no rule applies. Rules that
// only edit attributes rebuild the node (nodes are immutable once built).
Node* Rewrite(Graph& graph, Node* node) {
  Rewriter rw(graph, node->name());
  OpKind op = node->op();
  const Attributes& attrs = node->attrs();
  auto operand = [&](int i) { return node->operand(i); };
  int64_t rank = static_cast<int64_t>(node->num_operands() > 0 ? operand(0)->shape().size() : 0);

  switch (op) {
    case OpKind::kReduceSum: case OpKind::kReduceMean:
    case OpKind::kReduceMax: case OpKind::kReduceMin: {
      std::vector<int64_t> axes = attrs.GetInts("axes");
      if (axes.empty()) {
        for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
      }
      for (int64_t& a : axes) a = a < 0 ? a + rank : a;
      std::sort(axes.begin(), axes.end());
      // Axes of extent 1 reduce nothing: a reduction over only such axes is its operand (sum,
      // mean, max and min of one element are the element; reductions keep the dtype) laid out
      // as the result, a reshape (a view, or a copy fused into its neighbours); the others are
      // dropped from the axes (keeping them as 1s, as keep_dims would).
      const Shape& in = operand(0)->shape();
      std::vector<int64_t> kept_axes;
      for (int64_t a : axes) {
        if (in[a] != 1) kept_axes.push_back(a);
      }
      if (kept_axes.empty()) return rw.Add(OpKind::kReshape, {operand(0)}, {{"shape", node->shape()}});
      if (kept_axes.size() != axes.size()) {
        Node* reduced = rw.Add(op, {operand(0)}, {{"axes", kept_axes}, {"keep_dims", true}});
        return reduced->shape() == node->shape() ? reduced
                                                 : rw.Add(OpKind::kReshape, {reduced}, {{"shape", node->shape()}});
      }
      // Axes in several runs (sum over (0, 2) of [A, B, C]): reduce the last run (keeping its
      // axes as 1s), then the rest, so that every reduction covers one run of adjacent axes
      // [outer | reduced | inner] (passes/fusion/reduce_placement.h). A mean of equal-sized
      // means is the mean.
      size_t run = axes.empty() ? 0 : axes.size() - 1;
      while (run > 0 && axes[run - 1] + 1 == axes[run]) --run;
      if (run > 0) {
        if (Node* transposed = ReduceTransposed(rw, node, axes)) return transposed;
        // The partial results stay f32 between the two reductions (16-bit floats are widened
        // first, a prologue of the first kernel that reads nothing more, and narrowed last): a
        // partial mean rounded to bf16 would lose what the f32 accumulation kept.
        const std::vector<int64_t> last(axes.begin() + run, axes.end()), rest(axes.begin(), axes.begin() + run);
        const DType dtype = operand(0)->dtype();
        const bool widen = dtype == DType::kF16 || dtype == DType::kBF16;
        Node* x = widen ? rw.Add(OpKind::kCast, {operand(0)}, {{"dtype", std::string("f32")}}) : operand(0);
        Node* inner = rw.Add(op, {x}, {{"axes", last}, {"keep_dims", true}});
        Node* outer = rw.Add(op, {inner}, {{"axes", rest}, {"keep_dims", true}});
        if (widen) outer = rw.Add(OpKind::kCast, {outer}, {{"dtype", std::string(DTypeName(dtype))}});
        return attrs.GetBool("keep_dims") ? outer : rw.Add(OpKind::kReshape, {outer}, {{"shape", node->shape()}});
      }
      if (axes == attrs.GetInts("axes")) return nullptr;
      Attributes changed = attrs;
      changed.Set("axes", axes);
      return rw.Add(op, node->operands(), changed);
    }
    case OpKind::kSoftmax: case OpKind::kLogSoftmax: case OpKind::kLayerNorm:
    case OpKind::kRmsNorm: case OpKind::kConcat: case OpKind::kGather: {
      int64_t axis = attrs.GetInt("axis");
      if (axis >= 0) return nullptr;
      Attributes changed = attrs;
      changed.Set("axis", axis + rank);
      return rw.Add(op, node->operands(), changed);
    }
    case OpKind::kIota: {
      int64_t axis = attrs.GetInt("axis");
      if (axis >= 0) return nullptr;
      Attributes changed = attrs;
      changed.Set("axis", axis + static_cast<int64_t>(node->shape().size()));
      return rw.Add(op, {}, changed);
    }
    case OpKind::kReshape: {
      Node* x = operand(0);
      if (x->shape() == node->shape()) return x;
      if (x->op() == OpKind::kReshape) return rw.Add(op, {x->operand(0)}, {{"shape", node->shape()}});
      if (attrs.GetInts("shape") != node->shape()) {  // resolve a -1
        return rw.Add(op, {x}, {{"shape", node->shape()}});
      }
      return nullptr;
    }
    case OpKind::kBroadcastTo:
      return operand(0)->shape() == node->shape() ? operand(0) : nullptr;
    case OpKind::kCast:
      return operand(0)->dtype() == node->dtype() ? operand(0) : nullptr;
    case OpKind::kTranspose: {
      const std::vector<int64_t>& perm = attrs.GetInts("perm");
      bool identity = true;
      for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
      if (identity) return operand(0);
      if (operand(0)->op() == OpKind::kTranspose) {
        const std::vector<int64_t>& inner = operand(0)->attrs().GetInts("perm");
        std::vector<int64_t> composed(perm.size());
        for (size_t d = 0; d < perm.size(); ++d) composed[d] = inner[perm[d]];
        return rw.Add(op, {operand(0)->operand(0)}, {{"perm", composed}});
      }
      return nullptr;
    }
    case OpKind::kSlice:
      return operand(0)->shape() == node->shape() ? operand(0) : nullptr;
    case OpKind::kMatmul: {
      // A batched matmul of operands whose batch axes were merged by a reshape (torch's bmm
      // over [B*H, S, D] views of [B, H, S, D]) is the matmul over the unmerged batch axes,
      // reshaped: attention matching and fusion then see the 4-D form exporters write.
      Node *a = operand(0), *b = operand(1);
      const Shape& out = node->shape();
      if (out.size() != 3 || a->shape().size() != 3 || b->shape().size() != 3 || a->op() != OpKind::kReshape ||
          b->op() != OpKind::kReshape) {
        return nullptr;
      }
      const Shape &a0 = a->operand(0)->shape(), &b0 = b->operand(0)->shape();
      if (a0.size() < 4 || a0.size() != b0.size()) return nullptr;
      const size_t r = a0.size();
      const Shape batch(a0.begin(), a0.end() - 2);
      if (!std::equal(batch.begin(), batch.end(), b0.begin()) || NumElements(batch) != out[0] ||
          a0[r - 2] != a->shape()[1] || a0[r - 1] != a->shape()[2] || b0[r - 2] != b->shape()[1] ||
          b0[r - 1] != b->shape()[2]) {
        return nullptr;
      }
      Node* unmerged = rw.Add(OpKind::kMatmul, {a->operand(0), b->operand(0)});
      return rw.Add(OpKind::kReshape, {unmerged}, {{"shape", out}});
    }
    case OpKind::kPow: {
      std::optional<double> e = ScalarConstantValue(operand(1));
      if (!e || NumElements(operand(1)->shape()) != 1 || node->shape() != operand(0)->shape()) {
        return nullptr;
      }
      if (*e == 2.0) return rw.Add(OpKind::kMul, {operand(0), operand(0)});
      if (*e == 0.5) return rw.Add(OpKind::kSqrt, {operand(0)});
      if (*e == 1.0) return operand(0);
      return nullptr;
    }
    case OpKind::kReciprocal:
      if (operand(0)->op() == OpKind::kSqrt) return rw.Add(OpKind::kRsqrt, {operand(0)->operand(0)});
      return nullptr;
    case OpKind::kDiv: {
      Node *a = operand(0), *b = operand(1);
      if (b->op() == OpKind::kSqrt) {
        Node* r = rw.Add(OpKind::kRsqrt, {b->operand(0)});
        Node* m = rw.Add(OpKind::kMul, {a, r});
        return m->shape() == node->shape() ? m : nullptr;
      }
      if (IsConstantSplat(a, 1.0) && IsFloat(node->dtype()) && b->shape() == node->shape()) {
        return rw.Add(OpKind::kReciprocal, {b});
      }
      return nullptr;
    }
    default:
      return SinkIntoTransposedSpace(rw, node);
  }
}

}  // namespace

absl::StatusOr<bool> Canonicalize::Run(Graph& graph) {
  bool changed = false;
  Replacements replacements;
  for (bool again = true; again;) {
    again = false;
    for (Node* node : graph.PostOrder()) {
      if (node->users().empty() && std::none_of(graph.outputs().begin(), graph.outputs().end(),
                                                [&](const Graph::Output& o) { return o.node == node; })) {
        continue;  // dead: DCE removes it
      }
      Node* replacement = Rewrite(graph, node);
      if (replacement == nullptr || replacement == node) continue;
      if (replacement->shape() != node->shape() || replacement->dtype() != node->dtype()) {
        continue;  // a rule built something of another type (e.g. broadcasting); leave it dead
      }
      replacements.Replace(graph, node, replacement);
      changed = again = true;
    }
    // Also removes nodes a rule built and then declined.
    if (replacements.Finish(graph)) changed = true;
  }
  return changed;
}

}  // namespace kiln
