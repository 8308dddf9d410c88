#include "passes/fusion/matmul_epilogue.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "passes/rewrite_util.h"

namespace kiln {
namespace {

absl::Status Refuse(const std::string& why) { return absl::FailedPreconditionError(why); }

// Whether constant `c` holds `value` as its dtype rounds it (bf16 keeps 8 significant bits).
bool Near(const Node* c, double value) {
  std::optional<double> v = ScalarConstantValue(c);
  if (!v.has_value()) return false;
  const double tolerance = c->dtype() == DType::kF32 ? 1e-6 : c->dtype() == DType::kF16 ? 1e-3 : 1e-2;
  return std::abs(*v - value) <= tolerance * std::abs(value);
}

// `n` = op(a, s) or op(s, a) with s a scalar constant holding `value`: a, with n and s recorded.
const Node* WithScalar(const Node* n, OpKind op, double value, GeluTanhMatch& m) {
  if (n == nullptr || n->op() != op || n->num_operands() != 2) return nullptr;
  for (int i = 0; i < 2; ++i) {
    if (n->operand(i)->op() == OpKind::kConstant && Near(n->operand(i), value)) {
      m.nodes.push_back(n);
      m.nodes.push_back(n->operand(i));
      return n->operand(1 - i);
    }
  }
  return nullptr;
}

// `n` = op(a, b) in either order with one side satisfying `first`: the other side.
template <typename Pred>
const Node* OtherOf(const Node* n, OpKind op, Pred first) {
  if (n == nullptr || n->op() != op || n->num_operands() != 2) return nullptr;
  if (first(n->operand(0))) return n->operand(1);
  if (first(n->operand(1))) return n->operand(0);
  return nullptr;
}

// The rest of the match, given y's split into x and the factor (tanh(..) + 1): the 0.5 was
// recorded by the caller.
bool MatchTanhFactor(const Node* x, const Node* one_plus, GeluTanhMatch& m) {
  const Node* tanh = WithScalar(one_plus, OpKind::kAdd, 1.0, m);
  if (x == nullptr || tanh == nullptr || tanh->op() != OpKind::kTanh) return false;
  m.nodes.push_back(tanh);
  const Node* poly = WithScalar(tanh->operand(0), OpKind::kMul, std::sqrt(2.0 / M_PI), m);
  const Node* cubic_term = OtherOf(poly, OpKind::kAdd, [&](const Node* n) { return n == x; });
  if (cubic_term == nullptr) return false;
  m.nodes.push_back(poly);
  const Node* cube = WithScalar(cubic_term, OpKind::kMul, 0.044715, m);
  if (cube == nullptr) return false;
  if (cube->op() == OpKind::kPow) {  // pow(x, 3), as torch's ONNX exporter writes it
    if (cube->operand(0) != x || !Near(cube->operand(1), 3.0)) return false;
    m.nodes.push_back(cube);
    m.nodes.push_back(cube->operand(1));
    return true;
  }
  // x * x * x, as decompose.cc writes it
  const Node* square = OtherOf(cube, OpKind::kMul, [&](const Node* n) { return n == x; });
  if (square == nullptr || square->op() != OpKind::kMul || square->operand(0) != x || square->operand(1) != x) {
    return false;
  }
  m.nodes.push_back(cube);
  m.nodes.push_back(square);
  return true;
}

}  // namespace

std::optional<GeluTanhMatch> MatchGeluTanh(const Node* y) {
  if (y != nullptr && y->op() == OpKind::kGeluTanh) return GeluTanhMatch{y->operand(0), {y}};
  if (y == nullptr || y->op() != OpKind::kMul || y->num_operands() != 2) return std::nullopt;
  // y is the product of x, 0.5 and (tanh(..) + 1) in one of the associations writers use:
  // (x * 0.5) * f (decompose.cc), x * (0.5 * f) (torch's ONNX exporter), (x * f) * 0.5.
  for (int side = 0; side < 2; ++side) {
    const Node* a = y->operand(side);
    const Node* b = y->operand(1 - side);
    for (int form = 0; form < 3; ++form) {
      GeluTanhMatch m;
      m.nodes.push_back(y);
      const Node* x = nullptr;
      const Node* factor = nullptr;
      if (form == 0) {
        x = WithScalar(a, OpKind::kMul, 0.5, m);
        factor = b;
      } else if (form == 1) {
        x = a;
        factor = WithScalar(b, OpKind::kMul, 0.5, m);
      } else if (b->op() == OpKind::kConstant && Near(b, 0.5) && a->op() == OpKind::kMul && a->num_operands() == 2) {
        m.nodes.push_back(b);
        m.nodes.push_back(a);
        for (int i = 0; i < 2 && m.x == nullptr; ++i) {
          GeluTanhMatch inner = m;
          if (MatchTanhFactor(a->operand(i), a->operand(1 - i), inner)) {
            inner.x = a->operand(i);
            return inner;
          }
        }
        continue;
      }
      if (x != nullptr && factor != nullptr && MatchTanhFactor(x, factor, m)) {
        m.x = x;
        return m;
      }
    }
  }
  return std::nullopt;
}

std::optional<GeluTanhMatch> MatchRelu(const Node* y) {
  if (y == nullptr) return std::nullopt;
  if (y->op() == OpKind::kRelu) return GeluTanhMatch{y->operand(0), {y}};
  if (y->op() != OpKind::kMaximum) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    const Node* zero = y->operand(i);
    // The zero broadcasts to x's shape, never the other way round (y would be larger than x).
    if (IsConstantSplat(zero, 0.0) && y->operand(1 - i)->shape() == y->shape()) {
      return GeluTanhMatch{y->operand(1 - i), {y, zero}};
    }
  }
  return std::nullopt;
}

bool IsRowBias(const Shape& bias, const Shape& out) {
  if (bias.empty() || out.empty() || bias.size() > out.size() || bias.back() != out.back()) return false;
  for (size_t d = 0; d + 1 < bias.size(); ++d) {
    if (bias[d] != 1) return false;
  }
  return true;
}

absl::StatusOr<MatmulEpilogue> AnalyzeMatmul(const Region& region) {
  MatmulEpilogue m;
  for (const Node* n : region.nodes) {
    if (n->op() != OpKind::kMatmul) continue;
    if (m.matmul != nullptr) return Refuse("two matmuls are two cuBLASLt calls");
    m.matmul = n;
  }
  if (m.matmul == nullptr) return Refuse("a matmul region without a matmul");
  m.a = m.matmul->operand(0);
  m.b = m.matmul->operand(1);
  if (region.Contains(m.a)) {
    if (!SwapsLastTwoAxes(m.a)) return Refuse(absl::StrCat(m.a->name(), " is computed, not a folded transpose"));
    m.trans_a = true;
    m.a = m.a->operand(0);
  }
  if (region.Contains(m.b)) {
    if (!SwapsLastTwoAxes(m.b)) return Refuse(absl::StrCat(m.b->name(), " is computed, not a folded transpose"));
    m.trans_b = true;
    m.b = m.b->operand(0);
  }
  // The epilogue: the chain of adds after the matmul, each adding one tensor read from memory,
  // then (cuBLASLt applies it last) a gelu_tanh or a relu of the sum.
  std::optional<GeluTanhMatch> act;
  if (region.outputs.size() == 1) {
    act = MatchGeluTanh(region.outputs[0]);
    m.gelu = act.has_value();
    if (!act) act = MatchRelu(region.outputs[0]);
    m.relu = act.has_value() && !m.gelu;
    if (act && !region.Contains(act->x)) {
      act.reset();
      m.gelu = m.relu = false;
    }
  }
  const std::vector<const Node*> act_nodes = act ? act->nodes : std::vector<const Node*>{};
  auto in_act = [&](const Node* n) { return std::find(act_nodes.begin(), act_nodes.end(), n) != act_nodes.end(); };
  const Node* cur = m.matmul;
  for (const Node* n : region.nodes) {
    if (n == m.matmul || n == m.matmul->operand(0) || n == m.matmul->operand(1) || in_act(n)) continue;
    if (n->op() != OpKind::kAdd || n->shape() != m.matmul->shape()) {
      return Refuse(absl::StrCat("cuBLASLt epilogues cover a bias add, a residual add and a gelu_tanh or relu; ",
                                 OpName(n->op()), " ", n->name(), " is none of them"));
    }
    const bool first = n->operand(0) == cur;
    if (!first && n->operand(1) != cur) {
      return Refuse(absl::StrCat(n->name(), " does not add to the matmul's result chain"));
    }
    const Node* other = first ? n->operand(1) : n->operand(0);
    if (region.Contains(other)) return Refuse("an epilogue add must add a tensor read from memory");
    if (other->shape() == n->shape()) {
      if (m.residual != nullptr) return Refuse("cuBLASLt takes one bias vector and one C matrix");
      m.residual = other;
    } else if (IsRowBias(other->shape(), n->shape())) {
      if (m.bias != nullptr) return Refuse("cuBLASLt takes one bias vector and one C matrix");
      m.bias = other;
    } else {
      return Refuse(absl::StrCat("operand ", other->name(), " ", ShapeToString(other->shape()),
                                 " is neither a bias [N] nor a residual of the output shape"));
    }
    cur = n;
  }
  if (act) {
    if (act->x != cur) {
      return Refuse(absl::StrCat("the ", m.gelu ? "gelu_tanh" : "relu", " reads ", act->x->name(),
                                 ", not the end of the add chain"));
    }
    cur = region.outputs[0];
  }
  if (region.outputs.size() != 1 || region.outputs[0] != cur) {
    std::string names;
    for (const Node* o : region.outputs) absl::StrAppend(&names, names.empty() ? "" : ", ", o->name());
    return Refuse(absl::StrCat("cuBLASLt writes one tensor, the end of the epilogue; the region would write ",
                               region.outputs.size(), " (", names, ": read elsewhere or graph outputs)"));
  }
  m.output = cur;
  return m;
}

}  // namespace kiln
