#include "passes/decompose.h"

#include <cmath>

#include "ir/base/status.h"
#include "passes/rewrite_util.h"

namespace kiln {
namespace {

std::vector<int64_t> AxesFrom(int64_t axis, int64_t rank) {
  std::vector<int64_t> axes;
  for (int64_t a = axis; a < rank; ++a) axes.push_back(a);
  return axes;
}

Attributes ReduceAttrs(std::vector<int64_t> axes, bool keep) {
  return {{"axes", std::move(axes)}, {"keep_dims", keep}};
}

Node* Softmax(Rewriter& rw, Node* x, int64_t axis, bool log) {
  DType t = x->dtype();
  (void)t;
  Node* m = rw.Add(OpKind::kReduceMax, {x}, ReduceAttrs({axis}, true));
  Node* d = rw.Add(OpKind::kSub, {x, m});
  Node* e = rw.Add(OpKind::kExp, {d});
  Node* s = rw.Add(OpKind::kReduceSum, {e}, ReduceAttrs({axis}, true));
  if (!log) return rw.Add(OpKind::kDiv, {e, s});
  return rw.Add(OpKind::kSub, {d, rw.Add(OpKind::kLog, {s})});
}

// Composites' operands (already cast up where DecomposeInF32 says) and attributes.
struct Parts {
  std::vector<Node*> operands;
  const Attributes& attrs;
};

Node* LayerNorm(Rewriter& rw, const Parts& node) {
  Node* x = node.operands[0];
  int64_t rank = x->shape().size();
  std::vector<int64_t> axes = AxesFrom(node.attrs.GetInt("axis"), rank);
  Node* mu = rw.Add(OpKind::kReduceMean, {x}, ReduceAttrs(axes, true));
  Node* d = rw.Add(OpKind::kSub, {x, mu});
  Node* sq = rw.Add(OpKind::kMul, {d, d});
  Node* var = rw.Add(OpKind::kReduceMean, {sq}, ReduceAttrs(axes, true));
  Node* ve = rw.Add(OpKind::kAdd, {var, rw.Scalar(node.attrs.GetFloat("eps"), x->dtype())});
  Node* r = rw.Add(OpKind::kRsqrt, {ve});
  Node* y = rw.Add(OpKind::kMul, {d, r});
  if (node.operands.size() > 1) y = rw.Add(OpKind::kMul, {y, node.operands[1]});
  if (node.operands.size() > 2) y = rw.Add(OpKind::kAdd, {y, node.operands[2]});
  return y;
}

Node* RmsNorm(Rewriter& rw, const Parts& node) {
  Node* x = node.operands[0];
  std::vector<int64_t> axes = AxesFrom(node.attrs.GetInt("axis"), x->shape().size());
  Node* sq = rw.Add(OpKind::kMul, {x, x});
  Node* ms = rw.Add(OpKind::kReduceMean, {sq}, ReduceAttrs(axes, true));
  Node* me = rw.Add(OpKind::kAdd, {ms, rw.Scalar(node.attrs.GetFloat("eps"), x->dtype())});
  Node* y = rw.Add(OpKind::kMul, {x, rw.Add(OpKind::kRsqrt, {me})});
  if (node.operands.size() > 1) y = rw.Add(OpKind::kMul, {y, node.operands[1]});
  return y;
}

Node* Gelu(Rewriter& rw, Node* x, bool tanh_form) {
  DType t = x->dtype();
  Node* inner;
  if (tanh_form) {
    Node* x3 = rw.Add(OpKind::kMul, {rw.Add(OpKind::kMul, {x, x}), x});
    Node* poly = rw.Add(OpKind::kAdd, {x, rw.Add(OpKind::kMul, {x3, rw.Scalar(0.044715, t)})});
    inner = rw.Add(OpKind::kTanh, {rw.Add(OpKind::kMul, {poly, rw.Scalar(std::sqrt(2.0 / M_PI), t)})});
  } else {
    inner = rw.Add(OpKind::kErf, {rw.Add(OpKind::kMul, {x, rw.Scalar(M_SQRT1_2, t)})});
  }
  Node* one_plus = rw.Add(OpKind::kAdd, {inner, rw.Scalar(1.0, t)});
  return rw.Add(OpKind::kMul, {rw.Add(OpKind::kMul, {x, rw.Scalar(0.5, t)}), one_plus});
}

Node* CrossEntropy(Rewriter& rw, const Parts& node) {
  Node* x = node.operands[0];
  Node* target = node.operands[1];
  DType t = x->dtype();
  int64_t rank = x->shape().size();
  int64_t classes = x->shape().back();
  std::vector<int64_t> last = {rank - 1};
  Node* m = rw.Add(OpKind::kReduceMax, {x}, ReduceAttrs(last, true));
  Node* e = rw.Add(OpKind::kExp, {rw.Add(OpKind::kSub, {x, m})});
  Node* s = rw.Add(OpKind::kReduceSum, {e}, ReduceAttrs(last, false));
  Node* m_row = rw.Add(OpKind::kReshape, {m}, {{"shape", s->shape()}});
  Node* lse = rw.Add(OpKind::kAdd, {rw.Add(OpKind::kLog, {s}), m_row});
  // The target's logit, picked with a one-hot row: a row reduction like the others, so the
  // whole loss can be one row kernel.
  Node* classes_iota = rw.Add(OpKind::kIota, {}, {{"shape", Shape{classes}}, {"axis", int64_t{0}},
                                                 {"dtype", std::string(DTypeName(target->dtype()))}});
  Shape column = target->shape();
  column.push_back(1);
  Node* t_col = rw.Add(OpKind::kReshape, {target}, {{"shape", column}});
  Node* hot = rw.Add(OpKind::kEq, {classes_iota, t_col});
  Node* picked_all = rw.Add(OpKind::kWhere, {hot, x, rw.Scalar(0.0, t)});
  Node* pick = rw.Add(OpKind::kReduceSum, {picked_all}, ReduceAttrs(last, false));
  Node* valid = rw.Add(OpKind::kNe, {target, rw.Scalar(node.attrs.GetInt("ignore_index"), target->dtype())});
  Node* loss = rw.Add(OpKind::kWhere, {valid, rw.Add(OpKind::kSub, {lse, pick}), rw.Scalar(0.0, t)});
  const std::string& reduction = node.attrs.GetString("reduction");
  if (reduction == "none") return loss;
  Node* total = rw.Add(OpKind::kReduceSum, {loss}, ReduceAttrs({}, false));
  if (reduction == "sum") return total;
  Node* count = rw.Add(OpKind::kReduceSum, {rw.Add(OpKind::kCast, {valid}, {{"dtype", std::string(DTypeName(t))}})},
                       ReduceAttrs({}, false));
  return rw.Add(OpKind::kDiv, {total, count});
}

// A 16-bit operand cast up to f32 (others as they are).
Node* Up(Rewriter& rw, Node* x) {
  if (x->dtype() != DType::kF16 && x->dtype() != DType::kBF16) return x;
  return rw.Add(OpKind::kCast, {x}, {{"dtype", std::string("f32")}});
}

// Softmax, log_softmax, the norms and cross_entropy over 16-bit floats are decomposed in f32
// (their operands cast up, the result cast down), as PyTorch and XLA compute them: inside a
// fused kernel that changes nothing (kernels compute in f32), but a statistic that crosses a
// region boundary (a row's max, sum, mean or rstd, a loss total, a row count) is stored in
// f32 instead of being rounded to 8 or 11 bits, which moved a layer_norm of a row whose mean
// is large next to its spread by several percent (tests/differential/regressions).
Node* DecomposeInF32(Graph& graph, Node* node) {
  Rewriter rw(graph, node->name());
  Parts parts{{}, node->attrs()};
  for (Node* o : node->operands()) parts.operands.push_back(Up(rw, o));
  Node* y = nullptr;
  switch (node->op()) {
    case OpKind::kSoftmax: case OpKind::kLogSoftmax:
      y = Softmax(rw, parts.operands[0], node->attrs().GetInt("axis"), node->op() == OpKind::kLogSoftmax);
      break;
    case OpKind::kLayerNorm: y = LayerNorm(rw, parts); break;
    case OpKind::kRmsNorm: y = RmsNorm(rw, parts); break;
    case OpKind::kCrossEntropy: y = CrossEntropy(rw, parts); break;
    default: return nullptr;
  }
  const DType t = node->dtype();
  return y->dtype() == t ? y : rw.Add(OpKind::kCast, {y}, {{"dtype", std::string(DTypeName(t))}});
}

Node* Decompose1(Graph& graph, Node* node) {
  if (Node* y = DecomposeInF32(graph, node)) return y;
  Rewriter rw(graph, node->name());
  switch (node->op()) {
    case OpKind::kGelu: return Gelu(rw, node->operand(0), false);
    case OpKind::kGeluTanh: return Gelu(rw, node->operand(0), true);
    case OpKind::kSilu:
      return rw.Add(OpKind::kMul, {node->operand(0), rw.Add(OpKind::kSigmoid, {node->operand(0)})});
    default: return nullptr;
  }
}

}  // namespace

absl::StatusOr<bool> Decompose::Run(Graph& graph) {
  bool changed = false;
  Replacements replacements;
  for (Node* node : graph.PostOrder()) {
    Node* replacement = Decompose1(graph, node);
    if (replacement == nullptr) continue;
    KILN_CHECK(replacement->shape() == node->shape() && replacement->dtype() == node->dtype())
        << "decomposition of " << node->ToString() << " built " << replacement->ToString();
    replacements.Replace(graph, node, replacement);
    changed = true;
  }
  replacements.Finish(graph);
  return changed;
}

}  // namespace kiln
