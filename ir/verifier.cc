// Verify: re-checks the whole-graph invariants listed in ir/verifier.h. It trusts nothing a
// rewrite may have broken: pointers are compared against the set of live nodes before they
// are followed, and acyclicity is checked here (Graph::PostOrder would abort on a cycle)
// before anything walks the graph in order. The first violation found is returned; its
// message names the node (`node "t" (add): ...`) or the graph input/output concerned.
#include "ir/verifier.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/base/status.h"

namespace kiln {
namespace {

std::string Name(const Node* node) {
  return absl::StrCat("node \"", node->name(), "\" (", OpName(node->op()), ")");
}

absl::Status NodeError(const Node* node, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(Name(node), ": ", message));
}

std::string TypeString(DType dtype, const Shape& shape) {
  return absl::StrCat(DTypeName(dtype), ShapeToString(shape));
}

absl::Status CheckNames(const Graph& graph, const std::vector<Node*>& nodes) {
  absl::flat_hash_map<std::string, const Node*> seen;
  for (const Node* node : nodes) {
    if (!IsValidName(node->name())) return NodeError(node, "invalid name");
    auto [it, inserted] = seen.insert({node->name(), node});
    if (!inserted) {
      return NodeError(node, absl::StrCat("its name is also used by node ", it->second->id()));
    }
    if (graph.FindNode(node->name()) != node) {
      return NodeError(node, "the graph's name index does not map its name to it");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckEdges(const absl::flat_hash_set<const Node*>& live,
                        const std::vector<Node*>& nodes) {
  for (const Node* node : nodes) {
    for (int i = 0; i < node->num_operands(); ++i) {
      const Node* operand = node->operand(i);
      if (operand == nullptr || !live.contains(operand)) {
        return NodeError(node, absl::StrCat("operand ", i, " is not a live node of this graph "
                                            "(removed, or from another graph)"));
      }
    }
  }
  for (const Node* node : nodes) {
    absl::flat_hash_set<const Node*> users;
    for (const Node* user : node->users()) {
      if (user == nullptr || !live.contains(user)) {
        return NodeError(node, "its user list holds a node that is not a live node of this graph");
      }
      if (!users.insert(user).second) {
        return NodeError(node, absl::StrCat("its user list holds ", Name(user), " twice"));
      }
      const auto& ops = user->operands();
      if (std::find(ops.begin(), ops.end(), node) == ops.end()) {
        return NodeError(node, absl::StrCat("its user list holds ", Name(user),
                                            ", which does not use it"));
      }
    }
    for (const Node* operand : node->operands()) {
      const auto& uses = operand->users();
      if (std::find(uses.begin(), uses.end(), node) == uses.end()) {
        return NodeError(node, absl::StrCat("uses ", Name(operand),
                                            ", whose user list does not hold it"));
      }
    }
  }
  return absl::OkStatus();
}

// Kahn's algorithm on operand edges; on a cycle, walks back along unfinished operands until a
// node repeats and reports that loop.
absl::Status CheckAcyclic(const std::vector<Node*>& nodes) {
  absl::flat_hash_map<const Node*, int> pending;
  std::vector<const Node*> ready;
  for (const Node* node : nodes) {
    absl::flat_hash_set<const Node*> distinct(node->operands().begin(), node->operands().end());
    pending[node] = static_cast<int>(distinct.size());
    if (distinct.empty()) ready.push_back(node);
  }
  size_t done = 0;
  while (!ready.empty()) {
    const Node* node = ready.back();
    ready.pop_back();
    ++done;
    for (const Node* user : node->users()) {
      if (--pending[user] == 0) ready.push_back(user);
    }
  }
  if (done == nodes.size()) return absl::OkStatus();
  const Node* start = nullptr;
  for (const Node* node : nodes) {
    if (pending[node] > 0) {
      start = node;
      break;
    }
  }
  std::vector<const Node*> path;
  absl::flat_hash_map<const Node*, size_t> index;
  const Node* node = start;
  while (!index.contains(node)) {
    index[node] = path.size();
    path.push_back(node);
    for (const Node* operand : node->operands()) {
      if (pending[operand] > 0) {
        node = operand;
        break;
      }
    }
  }
  std::vector<std::string> loop;
  for (size_t i = index[node]; i < path.size(); ++i) loop.push_back(path[i]->name());
  loop.push_back(node->name());
  return NodeError(node, absl::StrCat("is on a cycle: ", absl::StrJoin(loop, " <- "),
                                      " (each uses the next)"));
}

absl::Status CheckNode(const Node* node) {
  const OpInfo& info = node->info();
  int n = node->num_operands();
  if (n < info.min_arity || (info.max_arity >= 0 && n > info.max_arity)) {
    std::string expected = info.max_arity < 0 ? absl::StrCat("at least ", info.min_arity)
                           : info.min_arity == info.max_arity
                               ? absl::StrCat("exactly ", info.min_arity)
                               : absl::StrCat(info.min_arity, " to ", info.max_arity);
    return NodeError(node, absl::StrCat("has ", n, " operands; the op table allows ", expected));
  }
  if (node->op() == OpKind::kConstant) {
    const Tensor* value = node->value();
    if (value == nullptr) return NodeError(node, "has no value");
    if (value->dtype() != node->dtype() || value->shape() != node->shape()) {
      return NodeError(node, absl::StrCat("its value is ", TypeString(value->dtype(), value->shape()),
                                          " but the node is ", TypeString(node->dtype(), node->shape())));
    }
    if (value->num_bytes() != value->num_elements() * ByteSize(value->dtype())) {
      return NodeError(node, "its value holds the wrong number of bytes");
    }
  } else if (node->value() != nullptr) {
    return NodeError(node, "holds a constant value but is not a constant");
  }
  if (info.category == OpCategory::kLeaf) {
    if (!node->attrs().empty()) {
      return NodeError(node, absl::StrCat("a leaf takes no attributes, has ", node->attrs().ToString()));
    }
    return absl::OkStatus();
  }
  Attributes attrs = node->attrs();
  absl::Status status = CheckAttributes(node->op(), attrs);
  if (!status.ok()) return NodeError(node, status.message());
  for (const auto& [key, value] : attrs.values()) {
    if (!node->attrs().Has(key)) {
      return NodeError(node, absl::StrCat("attribute \"", key, "\" is missing (its default was not "
                                          "filled in by CheckAttributes)"));
    }
  }
  std::vector<const Node*> operands(node->operands().begin(), node->operands().end());
  auto inferred = InferOutputType(node->op(), operands, attrs);
  if (!inferred.ok()) return NodeError(node, inferred.status().message());
  if (inferred->dtype != node->dtype() || inferred->shape != node->shape()) {
    return NodeError(node, absl::StrCat("is recorded as ", TypeString(node->dtype(), node->shape()),
                                        " but ", info.name, " infers ",
                                        TypeString(inferred->dtype, inferred->shape)));
  }
  return absl::OkStatus();
}

absl::Status CheckInputsAndOutputs(const Graph& graph, const absl::flat_hash_set<const Node*>& live,
                                   const std::vector<Node*>& nodes) {
  absl::flat_hash_set<const Node*> inputs;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Node* input = graph.inputs()[i];
    if (input == nullptr || !live.contains(input)) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph input ", i, " is not a live node of this graph"));
    }
    if (input->op() != OpKind::kInput) {
      return NodeError(input, absl::StrCat("is graph input ", i, " but not an input node"));
    }
    if (!inputs.insert(input).second) {
      return NodeError(input, "is listed twice among the graph inputs");
    }
  }
  for (const Node* node : nodes) {
    if (node->op() == OpKind::kInput && !inputs.contains(node)) {
      return NodeError(node, "is an input node but not a graph input");
    }
  }
  if (graph.outputs().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("graph ", graph.name(), " has no outputs"));
  }
  absl::flat_hash_set<std::string> names;
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const Graph::Output& output = graph.outputs()[i];
    if (!IsValidName(output.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output ", i, " has the invalid name \"", output.name, "\""));
    }
    if (!names.insert(output.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output name \"", output.name, "\" is used twice"));
    }
    if (output.node == nullptr || !live.contains(output.node)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph output \"", output.name, "\" is not a live node of this graph"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Verify(const Graph& graph) {
  std::vector<Node*> nodes = graph.nodes();
  absl::flat_hash_set<const Node*> live(nodes.begin(), nodes.end());
  KILN_RETURN_IF_ERROR(CheckNames(graph, nodes));
  KILN_RETURN_IF_ERROR(CheckEdges(live, nodes));
  KILN_RETURN_IF_ERROR(CheckInputsAndOutputs(graph, live, nodes));
  KILN_RETURN_IF_ERROR(CheckAcyclic(nodes));
  // Creation order may not be topological after rewrites, but each check is local to a node
  // and its (already verified) operands, so the order only decides which error comes first.
  for (const Node* node : nodes) KILN_RETURN_IF_ERROR(CheckNode(node));
  return absl::OkStatus();
}

}  // namespace kiln
