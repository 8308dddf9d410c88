#include "passes/fusion/matmul_epilogue.h"

#include "absl/strings/str_cat.h"
#include "passes/rewrite_util.h"

namespace kiln {
namespace {

absl::Status Refuse(const std::string& why) { return absl::FailedPreconditionError(why); }

}  // namespace

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
  // The epilogue: the chain of adds after the matmul, each adding one tensor read from memory.
  const Node* cur = m.matmul;
  for (const Node* n : region.nodes) {
    if (n == m.matmul || n == m.matmul->operand(0) || n == m.matmul->operand(1)) continue;
    if (n->op() != OpKind::kAdd || n->shape() != m.matmul->shape()) {
      return Refuse(absl::StrCat("cuBLASLt epilogues cover a bias add and a residual add; ", OpName(n->op()), " ",
                                 n->name(), " is neither"));
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
