#include "passes/match_attention.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "ir/base/status.h"
#include "passes/diagonal_mask.h"
#include "passes/rewrite_util.h"

namespace kiln {
namespace {

bool SingleUse(const Graph& graph, const Node* node) {
  if (node->users().size() != 1) return false;
  for (const Graph::Output& out : graph.outputs()) {
    if (out.node == node) return false;
  }
  return true;
}


// A constant over the last two dims [S, T] (leading dims all 1 or broadcast copies) that keeps
// exactly j <= i. `keep(v)` says whether an element value means "attend".
template <typename Keep>
bool IsCausalConstant(const Node* mask, int64_t s, int64_t t, Keep keep) {
  if (mask->op() != OpKind::kConstant) return false;
  const Shape& shape = mask->shape();
  if (shape.size() < 2 || shape[shape.size() - 2] != s || shape.back() != t) return false;
  const Tensor* value = mask->value();
  int64_t plane = s * t;
  for (int64_t e = 0; e < value->num_elements(); ++e) {
    int64_t i = (e % plane) / t, j = e % t;
    if (keep(value->GetF64(e)) != (j <= i)) return false;
  }
  return true;
}

// Whether `mask` keeps exactly j <= i, and why: a constant (IsCausalConstant) or a subgraph of
// indices (AnalyzeIndexMask).
template <typename Keep>
IndexMaskVerdict Causality(const Node* mask, int64_t s, int64_t t, Keep keep) {
  if (mask->op() == OpKind::kConstant) {
    if (IsCausalConstant(mask, s, t, keep)) return {true, "a constant lower triangle"};
    if (mask->num_elements() > 1) return {false, "a constant that is not the lower triangle j <= i"};
  }
  return AnalyzeIndexMask(mask, s, t, keep);
}

bool IsNegInf(const Node* node) {
  return node->op() == OpKind::kConstant && IsConstantSplat(node, -std::numeric_limits<double>::infinity());
}

// If `x` is x' * c, c * x' or x' / c for a scalar constant c and has no other user, moves x
// to x' and returns the factor; else 1. (Exporters scale q and k by sqrt(scale) each.)
double PeelScalarFactor(const Graph& graph, Node*& x) {
  if ((x->op() != OpKind::kMul && x->op() != OpKind::kDiv) || !SingleUse(graph, x)) return 1.0;
  for (int side = 0; side < 2; ++side) {
    if (x->op() == OpKind::kDiv && side == 0) continue;  // c / x' is no scaling
    std::optional<double> c = ScalarConstantValue(x->operand(side));
    if (!c || *c == 0 || !std::isfinite(*c)) continue;
    if (x->operand(1 - side)->shape() != x->shape()) continue;  // the constant must not broadcast x'
    const bool divides = x->op() == OpKind::kDiv;
    x = x->operand(1 - side);
    return divides ? 1.0 / *c : *c;
  }
  return 1.0;
}

// Tries to match the pattern ending at `out` (a matmul). Returns the attention node or null.
Node* Match(Graph& graph, Node* out, std::vector<PassDecision>& decisions) {
  if (out->op() != OpKind::kMatmul) return nullptr;
  Node* p = out->operand(0);
  Node* v = out->operand(1);
  // Training graphs drop probabilities: dropout(softmax(s)) v. Its seed and offset travel along
  // (constants become attributes; a fresh offset per step stays a run-time operand).
  const Node* dropout = nullptr;
  if (p->op() == OpKind::kDropout && SingleUse(graph, p)) {
    dropout = p;
    p = p->operand(0);
  }
  if (p->op() != OpKind::kSoftmax || !SingleUse(graph, p)) return nullptr;
  if (p->attrs().GetInt("axis") != static_cast<int64_t>(p->shape().size()) - 1) return nullptr;
  Node* s = p->operand(0);
  Node* additive_mask = nullptr;
  Node* keep_mask = nullptr;  // bool, true = attend
  Node* drop_mask = nullptr;  // bool, true = masked out (torch's masked_fill(mask, -inf))
  if (s->op() == OpKind::kAdd && SingleUse(graph, s)) {
    additive_mask = s->operand(1);
    s = s->operand(0);
  } else if (s->op() == OpKind::kWhere && SingleUse(graph, s) && IsNegInf(s->operand(2))) {
    keep_mask = s->operand(0);
    s = s->operand(1);
  } else if (s->op() == OpKind::kWhere && SingleUse(graph, s) && IsNegInf(s->operand(1))) {
    drop_mask = s->operand(0);
    s = s->operand(2);
  }
  double scale = 1.0;
  if ((s->op() == OpKind::kMul || s->op() == OpKind::kDiv) && SingleUse(graph, s)) {
    std::optional<double> c = ScalarConstantValue(s->operand(1));
    if (c && *c != 0) {
      scale = s->op() == OpKind::kMul ? *c : 1.0 / *c;
      s = s->operand(0);
    }
  }
  if (s->op() != OpKind::kMatmul || !SingleUse(graph, s)) return nullptr;
  Node* q = s->operand(0);
  Node* kt = s->operand(1);
  // Scalar factors on q and on k^T fold into the scale (torch's exporter below opset 23
  // multiplies each by sqrt(scale)).
  scale *= PeelScalarFactor(graph, q);
  scale *= PeelScalarFactor(graph, kt);
  Rewriter rw(graph, out->name());
  Node* k = SwapsLastTwoAxes(kt) ? kt->operand(0) : nullptr;
  int64_t rank = kt->shape().size();
  if (k == nullptr) {
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < rank; ++i) perm.push_back(i);
    std::swap(perm[rank - 1], perm[rank - 2]);
    k = rw.Add(OpKind::kTranspose, {kt}, {{"perm", perm}});
  }
  int64_t seq = q->shape()[q->shape().size() - 2], keys = k->shape()[k->shape().size() - 2];
  bool causal = false;
  std::vector<Node*> operands = {q, k, v};
  IndexMaskVerdict verdict;
  const Node* mask = drop_mask != nullptr ? drop_mask : keep_mask != nullptr ? keep_mask : additive_mask;
  if (drop_mask != nullptr) {
    verdict = Causality(drop_mask, seq, keys, [](double x) { return x == 0; });
    if (!verdict.causal) {
      operands.push_back(rw.Add(OpKind::kWhere, {drop_mask, rw.Scalar(-INFINITY, q->dtype()),
                                                 rw.Scalar(0.0, q->dtype())}));
    }
  } else if (keep_mask != nullptr) {
    verdict = Causality(keep_mask, seq, keys, [](double x) { return x != 0; });
    if (!verdict.causal) {
      // masked_fill with a run-time mask: attend where true, i.e. additive 0 / -inf.
      operands.push_back(rw.Add(OpKind::kWhere, {keep_mask, rw.Scalar(0.0, q->dtype()),
                                                 rw.Scalar(-INFINITY, q->dtype())}));
    }
  } else if (additive_mask != nullptr) {
    verdict = Causality(additive_mask, seq, keys, [](double x) { return x == 0; });
    if (!verdict.causal) operands.push_back(additive_mask);
  }
  causal = verdict.causal;
  Attributes attrs = {{"scale", scale}, {"causal", causal}};
  if (dropout != nullptr) {
    attrs.Set("dropout", dropout->attrs().GetFloat("p"));
    // Operands 1, 2 of the dropout (seed, offset) stay operands from the first that is not a
    // constant on; the constants before it become attributes.
    std::vector<Node*> runtime;
    const char* names[] = {"seed", "offset"};
    for (int i = 0; i < 2; ++i) {
      Node* x = dropout->num_operands() > i + 1 ? dropout->operand(i + 1) : nullptr;
      const bool later_runtime = i == 0 && dropout->num_operands() > 2 && dropout->operand(2)->op() != OpKind::kConstant;
      if (x == nullptr || (x->op() == OpKind::kConstant && !later_runtime)) {
        attrs.Set(names[i], x == nullptr ? dropout->attrs().GetInt(names[i]) : x->value()->GetI64(0));
      } else {
        runtime.push_back(x);
      }
    }
    operands.insert(operands.end(), runtime.begin(), runtime.end());
  }
  absl::StatusOr<Node*> attention =
      graph.AddNode(OpKind::kAttention, operands, attrs, graph.FreshName(out->name() + ".attention"));
  if (!attention.ok() || (*attention)->shape() != out->shape() || (*attention)->dtype() != out->dtype()) {
    return nullptr;  // shapes outside what attention takes (e.g. broadcast batch dims)
  }
  if (mask != nullptr) {
    decisions.push_back(
        {{out->name(), mask->name()},
         causal ? FusionDecision::Allow("attention-causal",
                                        absl::StrCat("mask ", mask->name(), " is causal: ", verdict.why,
                                                     "; attention skips the masked key tiles and never reads a mask"))
                : FusionDecision::Forbid("attention-causal",
                                         absl::StrCat("mask ", mask->name(), " is not taken for causal (",
                                                      verdict.why, "): attention reads it as an additive mask"))});
  }
  return *attention;
}

}  // namespace

absl::StatusOr<bool> MatchAttention::Run(Graph& graph) {
  bool changed = false;
  decisions_.clear();
  Replacements replacements;
  for (Node* node : graph.PostOrder()) {
    Node* attention = Match(graph, node, decisions_);
    if (attention == nullptr) continue;
    replacements.Replace(graph, node, attention);
    changed = true;
  }
  // Declined matches may leave helper nodes behind.
  if (replacements.Finish(graph)) changed = true;
  return changed;
}

}  // namespace kiln
