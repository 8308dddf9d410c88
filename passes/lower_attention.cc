#include "passes/lower_attention.h"

#include <cmath>
#include <limits>

#include "ir/base/status.h"
#include "passes/fusion/region_kind.h"
#include "passes/rewrite_util.h"

namespace kiln {
namespace {

Attributes LastAxis(int64_t rank, bool keep) {
  return {{"axes", std::vector<int64_t>{rank - 1}}, {"keep_dims", keep}};
}

// The scores s = q k^T * scale [+ mask], -inf where causal hides a key; in f32 (products
// included) when `f32`.
Node* Scores(Rewriter& rw, const Node* node, Node* mask, bool f32) {
  Node *q = node->operand(0), *k = node->operand(1);
  const int64_t rank = static_cast<int64_t>(q->shape().size());
  const int64_t D = q->shape()[rank - 1], T = k->shape()[rank - 2];
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i) perm.push_back(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  Node* kt = rw.Add(OpKind::kTranspose, {k}, {{"perm", perm}});
  double scale = node->attrs().GetFloat("scale");
  if (scale == 0) scale = 1.0 / std::sqrt(static_cast<double>(D));
  if (f32 && q->dtype() != DType::kF32) {  // the products in f32: a 16-bit score would round the sum
    q = rw.Add(OpKind::kCast, {q}, {{"dtype", std::string("f32")}});
    kt = rw.Add(OpKind::kCast, {kt}, {{"dtype", std::string("f32")}});
  }
  Node* s = rw.Add(OpKind::kMatmul, {q, kt});
  const DType t = s->dtype();
  s = rw.Add(OpKind::kMul, {s, rw.Scalar(scale, t)});
  if (mask != nullptr) {
    if (mask->dtype() != t) mask = rw.Add(OpKind::kCast, {mask}, {{"dtype", std::string(DTypeName(t))}});
    s = rw.Add(OpKind::kAdd, {s, mask});
  }
  const double inf = std::numeric_limits<double>::infinity();
  if (node->attrs().GetBool("causal")) {
    // row: the query index, one value per row of s ([.., S, 1]); col: the key index ([T]).
    // Shaped so that a row kernel sees a per-row value and a vector broadcast into the row.
    Shape rows(s->shape().begin(), s->shape().end() - 1);
    rows.push_back(1);
    Node* row = rw.Add(OpKind::kIota, {}, {{"shape", rows}, {"axis", rank - 2}, {"dtype", std::string("i32")}});
    Node* col = rw.Add(OpKind::kIota, {}, {{"shape", Shape{T}}, {"axis", int64_t{0}}, {"dtype", std::string("i32")}});
    s = rw.Add(OpKind::kWhere, {rw.Add(OpKind::kLe, {col, row}), s, rw.Scalar(-inf, s->dtype())});
  }
  return s;
}

// The guarded shift of each row of s, m0 = max, or 0 where the row is all -inf ([.., S, 1]),
// and e = exp(s - m0).
std::pair<Node*, Node*> ShiftedExp(Rewriter& rw, Node* s) {
  const double inf = std::numeric_limits<double>::infinity();
  const DType t = s->dtype();
  Node* m = rw.Add(OpKind::kReduceMax, {s}, LastAxis(static_cast<int64_t>(s->shape().size()), true));
  Node* m0 = rw.Add(OpKind::kWhere, {rw.Add(OpKind::kEq, {m, rw.Scalar(-inf, t)}), rw.Scalar(0, t), m});
  return {m0, rw.Add(OpKind::kExp, {rw.Add(OpKind::kSub, {s, m0})})};
}

Node* Lower(Graph& graph, Node* node) {
  Rewriter rw(graph, node->name());
  const AttentionArgs args = AttentionArgsOf(*node);
  Node* s = Scores(rw, node, args.mask >= 0 ? node->operand(args.mask) : nullptr, false);
  const int64_t srank = static_cast<int64_t>(s->shape().size());
  Node* e = ShiftedExp(rw, s).second;
  Node* l = rw.Add(OpKind::kReduceSum, {e}, LastAxis(srank, true));
  Node* l1 = rw.Add(OpKind::kWhere, {rw.Add(OpKind::kEq, {l, rw.Scalar(0, l->dtype())}), rw.Scalar(1, l->dtype()), l});
  Node* p = rw.Add(OpKind::kDiv, {e, l1});
  const double drop = node->attrs().GetFloat("dropout");
  if (drop > 0) {  // the same element indices: p has the attention's [.., S, T] score shape
    std::vector<Node*> operands = {p};
    for (int i : {args.seed, args.offset}) {
      if (i >= 0) operands.push_back(node->operand(i));
    }
    p = rw.Add(OpKind::kDropout, operands,
               {{"p", drop}, {"seed", node->attrs().GetInt("seed")}, {"offset", node->attrs().GetInt("offset")}});
  }
  return rw.Add(OpKind::kMatmul, {p, node->operand(2)});
}

Node* LowerLse(Graph& graph, Node* node) {
  Rewriter rw(graph, node->name());
  const double inf = std::numeric_limits<double>::infinity();
  const AttentionArgs args = AttentionArgsOf(*node);
  Node* s = Scores(rw, node, args.mask >= 0 ? node->operand(args.mask) : nullptr, true);
  auto [m0, e] = ShiftedExp(rw, s);
  Node* l = rw.Add(OpKind::kReduceSum, {e}, LastAxis(static_cast<int64_t>(s->shape().size()), false));
  Node* shift = rw.Add(OpKind::kReshape, {m0}, {{"shape", l->shape()}});
  return rw.Add(OpKind::kWhere, {rw.Add(OpKind::kEq, {l, rw.Scalar(0, DType::kF32)}), rw.Scalar(inf, DType::kF32),
                                 rw.Add(OpKind::kAdd, {shift, rw.Add(OpKind::kLog, {l})})});
}

}  // namespace

absl::StatusOr<bool> LowerAttention::Run(Graph& graph) {
  bool changed = false;
  Replacements replacements;
  for (Node* node : graph.PostOrder()) {
    Node* lowered = nullptr;
    if (node->op() == OpKind::kAttention && !AttentionTemplateCovers(*node)) {
      lowered = Lower(graph, node);
    } else if (node->op() == OpKind::kAttentionLse) {
      const Node* twin = AttentionTwin(*node);
      if (twin != nullptr && AttentionTemplateCovers(*twin)) continue;
      lowered = LowerLse(graph, node);
    } else {
      continue;
    }
    KILN_CHECK(lowered->shape() == node->shape() && lowered->dtype() == node->dtype())
        << "lowering of " << node->ToString() << " built " << lowered->ToString();
    replacements.Replace(graph, node, lowered);
    changed = true;
  }
  replacements.Finish(graph);
  return changed;
}

}  // namespace kiln
