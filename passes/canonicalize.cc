#include "passes/canonicalize.h"

#include <algorithm>

#include "ir/base/status.h"
#include "passes/rewrite_util.h"

namespace kiln {
namespace {

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
      return nullptr;
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
