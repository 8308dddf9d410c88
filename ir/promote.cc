#include "ir/promote.h"

#include <map>
#include <string>
#include <vector>

#include "ir/base/status.h"

namespace kiln {
namespace {

bool Is16(DType t) { return t == DType::kF16 || t == DType::kBF16; }

Attributes CastTo(DType t) {
  Attributes a;
  a.Set("dtype", std::string(DTypeName(t)));
  return a;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Graph>> PromoteTo32(const Graph& g) {
  auto out = std::make_unique<Graph>(g.name());
  std::map<const Node*, Node*> map;
  auto up = [&](Node* n) -> absl::StatusOr<Node*> {
    if (!Is16(n->dtype())) return n;
    return out->AddNode(OpKind::kCast, {n}, CastTo(DType::kF32), n->name() + ".f32");
  };
  for (Node* n : g.PostOrder()) {
    Node* made = nullptr;
    if (n->op() == OpKind::kInput) {
      KILN_ASSIGN_OR_RETURN(made, out->AddInput(n->name(), n->dtype(), n->shape()));
      KILN_ASSIGN_OR_RETURN(made, up(made));
    } else if (n->op() == OpKind::kConstant) {
      KILN_ASSIGN_OR_RETURN(made, out->AddConstant(n->name(), *n->value()));
      KILN_ASSIGN_OR_RETURN(made, up(made));
    } else if (n->op() == OpKind::kCast && n->operand(0)->dtype() == n->dtype()) {
      made = map.at(n->operand(0));  // a cast to the dtype it has is the identity (canonicalize folds it)
    } else {
      std::vector<Node*> operands;
      for (Node* o : n->operands()) operands.push_back(map.at(o));
      Attributes attrs = n->attrs();
      // iota is the one op whose result dtype is an attribute rather than an operand's.
      if (n->op() == OpKind::kIota && Is16(n->dtype())) attrs.Set("dtype", std::string("f32"));
      KILN_ASSIGN_OR_RETURN(made, out->AddNode(n->op(), operands, attrs, n->name()));
      if (n->op() == OpKind::kCast && Is16(n->dtype())) {
        KILN_ASSIGN_OR_RETURN(made, up(made));
      }
    }
    map[n] = made;
  }
  for (const Graph::Output& o : g.outputs()) {
    Node* v = map.at(o.node);
    if (v->dtype() != o.node->dtype()) {
      KILN_ASSIGN_OR_RETURN(v, out->AddNode(OpKind::kCast, {v}, CastTo(o.node->dtype()), o.name + ".out"));
    }
    KILN_RETURN_IF_ERROR(out->AddOutput(v, o.name));
  }
  return out;
}

}  // namespace kiln
