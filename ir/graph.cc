#include "ir/graph.h"

#include <algorithm>
#include <cctype>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/base/status.h"

namespace kiln {

AttentionArgs AttentionArgsOf(bool lse, const std::vector<const Node*>& operands) {
  AttentionArgs a;
  size_t i = lse ? 2 : 3;
  if (i < operands.size() && !IsInteger(operands[i]->dtype())) a.mask = static_cast<int>(i++);
  if (!lse && i < operands.size()) a.seed = static_cast<int>(i++);
  if (!lse && i < operands.size()) a.offset = static_cast<int>(i++);
  return a;
}

AttentionArgs AttentionArgsOf(const Node& attention) {
  return AttentionArgsOf(attention.op() == OpKind::kAttentionLse,
                         std::vector<const Node*>(attention.operands().begin(), attention.operands().end()));
}

bool IsValidName(const std::string& name) {
  if (name.empty()) return false;
  auto head = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  if (!head(name[0])) return false;
  for (char c : name) {
    if (!head(c) && !std::isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  }
  return true;
}

std::string Node::ToString() const {
  std::vector<std::string> args;
  for (const Node* operand : operands_) args.push_back(operand->name());
  std::string attrs = attrs_.ToString();
  return absl::StrCat(name_, ": ", DTypeName(dtype_), ShapeToString(shape_), " = ", OpName(op_),
                      "(", absl::StrJoin(args, ", "), ")", attrs.empty() ? "" : " ", attrs);
}

absl::StatusOr<Node*> Graph::Insert(std::unique_ptr<Node> node) {
  if (!IsValidName(node->name_)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid name \"", node->name_,
        "\": names start with a letter or _ and hold letters, digits, _ and ."));
  }
  if (by_name_.contains(node->name_)) {
    return absl::AlreadyExistsError(absl::StrCat("duplicate name \"", node->name_, "\""));
  }
  node->id_ = next_id_++;
  Node* raw = node.get();
  by_name_[raw->name_] = raw;
  for (Node* operand : raw->operands_) {
    if (std::find(operand->users_.begin(), operand->users_.end(), raw) == operand->users_.end()) {
      operand->users_.push_back(raw);
    }
  }
  storage_.push_back(std::move(node));
  return raw;
}

absl::StatusOr<Node*> Graph::AddInput(const std::string& name, DType dtype, Shape shape) {
  if (auto n = CheckedNumElements(shape); !n.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("input \"", name, "\": ", n.status().message()));
  }
  auto node = std::unique_ptr<Node>(new Node());
  node->name_ = name;
  node->op_ = OpKind::kInput;
  node->dtype_ = dtype;
  node->shape_ = std::move(shape);
  KILN_ASSIGN_OR_RETURN(Node * raw, Insert(std::move(node)));
  inputs_.push_back(raw);
  return raw;
}

absl::StatusOr<Node*> Graph::AddConstant(const std::string& name, Tensor value) {
  if (auto n = CheckedNumElements(value.shape()); !n.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("constant \"", name, "\": ", n.status().message()));
  }
  auto node = std::unique_ptr<Node>(new Node());
  node->name_ = name.empty() ? FreshName("c") : name;
  node->op_ = OpKind::kConstant;
  node->dtype_ = value.dtype();
  node->shape_ = value.shape();
  node->value_ = std::move(value);
  return Insert(std::move(node));
}

absl::StatusOr<Node*> Graph::AddNode(OpKind op, std::vector<Node*> operands, Attributes attrs,
                                     const std::string& name) {
  const OpInfo& info = GetOpInfo(op);
  if (info.category == OpCategory::kLeaf) {
    return absl::InvalidArgumentError(
        absl::StrCat(info.name, " nodes are made with AddInput/AddConstant"));
  }
  int n = static_cast<int>(operands.size());
  if (n < info.min_arity || (info.max_arity >= 0 && n > info.max_arity)) {
    std::string expected =
        info.min_arity == info.max_arity ? absl::StrCat(info.min_arity)
        : info.max_arity < 0             ? absl::StrCat("at least ", info.min_arity)
                                         : absl::StrCat(info.min_arity, " to ", info.max_arity);
    return absl::InvalidArgumentError(
        absl::StrCat(info.name, " takes ", expected, " operands, got ", n));
  }
  for (Node* operand : operands) {
    KILN_CHECK(operand != nullptr) << "null operand for " << info.name;
    KILN_CHECK(by_name_.contains(operand->name()) && by_name_.at(operand->name()) == operand)
        << "operand " << operand->name() << " is not in graph " << name_;
  }
  KILN_RETURN_IF_ERROR(CheckAttributes(op, attrs));
  std::vector<const Node*> const_operands(operands.begin(), operands.end());
  KILN_ASSIGN_OR_RETURN(TypeAndShape type, InferOutputType(op, const_operands, attrs));
  if (auto n = CheckedNumElements(type.shape); !n.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(info.name, ": result ", n.status().message()));
  }
  auto node = std::unique_ptr<Node>(new Node());
  node->name_ = name.empty() ? FreshName(info.name) : name;
  node->op_ = op;
  node->dtype_ = type.dtype;
  node->shape_ = std::move(type.shape);
  node->operands_ = std::move(operands);
  node->attrs_ = std::move(attrs);
  return Insert(std::move(node));
}

absl::Status Graph::AddOutput(Node* node, const std::string& output_name) {
  std::string name = output_name.empty() ? node->name() : output_name;
  for (const Output& out : outputs_) {
    if (out.name == name) {
      return absl::AlreadyExistsError(absl::StrCat("duplicate output name \"", name, "\""));
    }
  }
  outputs_.push_back({name, node});
  return absl::OkStatus();
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  for (const auto& node : storage_) {
    if (node) out.push_back(node.get());
  }
  return out;
}

std::vector<Node*> Graph::PostOrder() const {
  // Kahn's algorithm over creation order: each node is emitted once all its operands are,
  // picking the earliest-created ready node first.
  std::vector<Node*> all = nodes();
  absl::flat_hash_map<const Node*, int> pending;
  for (Node* node : all) {
    absl::flat_hash_set<const Node*> distinct(node->operands_.begin(), node->operands_.end());
    pending[node] = static_cast<int>(distinct.size());
  }
  std::vector<Node*> ready;
  for (Node* node : all) {
    if (pending[node] == 0) ready.push_back(node);
  }
  auto later = [](const Node* a, const Node* b) { return a->id() > b->id(); };
  std::make_heap(ready.begin(), ready.end(), later);
  std::vector<Node*> order;
  order.reserve(all.size());
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), later);
    Node* node = ready.back();
    ready.pop_back();
    order.push_back(node);
    for (Node* user : node->users_) {
      if (--pending[user] == 0) {
        ready.push_back(user);
        std::push_heap(ready.begin(), ready.end(), later);
      }
    }
  }
  KILN_CHECK(order.size() == all.size()) << "graph " << name_ << " has a cycle";
  return order;
}

Node* Graph::FindNode(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

void Graph::ReplaceOperand(Node* user, int index, Node* replacement) {
  Node* old = user->operands_.at(index);
  if (old == replacement) return;
  user->operands_[index] = replacement;
  if (std::find(user->operands_.begin(), user->operands_.end(), old) == user->operands_.end()) {
    old->users_.erase(std::remove(old->users_.begin(), old->users_.end(), user), old->users_.end());
  }
  if (std::find(replacement->users_.begin(), replacement->users_.end(), user) ==
      replacement->users_.end()) {
    replacement->users_.push_back(user);
  }
}

void Graph::ReplaceAllUsesWith(Node* from, Node* to) {
  KILN_CHECK(from != to);
  KILN_CHECK(from->dtype() == to->dtype() && from->shape() == to->shape())
      << "RAUW changes the type: " << from->ToString() << " -> " << to->ToString();
  std::vector<Node*> users = from->users_;
  for (Node* user : users) {
    if (user == to) continue;  // `to` may legitimately consume `from`
    for (int i = 0; i < user->num_operands(); ++i) {
      if (user->operands_[i] == from) ReplaceOperand(user, i, to);
    }
  }
  for (Output& out : outputs_) {
    if (out.node == from) out.node = to;
  }
}

void Graph::Detach(Node* node) {
  for (Node* operand : node->operands_) {
    operand->users_.erase(std::remove(operand->users_.begin(), operand->users_.end(), node),
                          operand->users_.end());
  }
  by_name_.erase(node->name_);
}

int Graph::RemoveDeadNodes() {
  absl::flat_hash_set<const Node*> live;
  std::vector<Node*> stack;
  for (const Output& out : outputs_) stack.push_back(out.node);
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    if (!live.insert(node).second) continue;
    for (Node* operand : node->operands_) stack.push_back(operand);
  }
  // Detach every dead node first, free them after: storage order is not topological once
  // rewrites have added nodes (a dead operand stored after its dead user), so freeing while
  // walking would let a later Detach touch a freed operand.
  std::vector<std::unique_ptr<Node>*> dead;
  for (std::unique_ptr<Node>& slot : storage_) {
    Node* node = slot.get();
    if (node == nullptr || live.contains(node) || node->op_ == OpKind::kInput) continue;
    Detach(node);
    dead.push_back(&slot);
  }
  for (std::unique_ptr<Node>* slot : dead) slot->reset();
  return static_cast<int>(dead.size());
}

std::string Graph::FreshName(const std::string& prefix) const {
  const std::string base = IsValidName(prefix) ? prefix : absl::StrCat("t", prefix.empty() ? "" : "_");
  if (IsValidName(base) && !by_name_.contains(base)) return base;
  for (int i = 1;; ++i) {
    std::string candidate = absl::StrCat(IsValidName(base) ? base : "t", ".", i);
    if (!by_name_.contains(candidate)) return candidate;
  }
}

absl::Status Graph::Rename(Node* node, const std::string& name) {
  if (node->name_ == name) return absl::OkStatus();
  if (!IsValidName(name)) return absl::InvalidArgumentError(absl::StrCat("invalid name \"", name, "\""));
  if (by_name_.contains(name)) return absl::AlreadyExistsError(absl::StrCat("duplicate name \"", name, "\""));
  for (Output& out : outputs_) {
    if (out.node == node && out.name == node->name_) out.name = name;
  }
  by_name_.erase(node->name_);
  node->name_ = name;
  by_name_[name] = node;
  return absl::OkStatus();
}

std::unique_ptr<Graph> Graph::Clone() const {
  auto copy = std::make_unique<Graph>(name_);
  absl::flat_hash_map<const Node*, Node*> map;
  for (Node* node : PostOrder()) {
    auto clone = std::unique_ptr<Node>(new Node());
    clone->name_ = node->name_;
    clone->op_ = node->op_;
    clone->dtype_ = node->dtype_;
    clone->shape_ = node->shape_;
    clone->attrs_ = node->attrs_;
    clone->value_ = node->value_;
    for (Node* operand : node->operands_) clone->operands_.push_back(map.at(operand));
    Node* raw = clone.get();
    KILN_CHECK_OK(copy->Insert(std::move(clone)).status());
    raw->id_ = node->id_;
    map[node] = raw;
  }
  // Keep input order as declared, not as post-ordered.
  for (Node* input : inputs_) copy->inputs_.push_back(map.at(input));
  for (const Output& out : outputs_) copy->outputs_.push_back({out.name, map.at(out.node)});
  copy->next_id_ = next_id_;
  // Restore creation order so PostOrder tie-breaking matches the original.
  std::sort(copy->storage_.begin(), copy->storage_.end(),
            [](const auto& a, const auto& b) { return a->id_ < b->id_; });
  return copy;
}

}  // namespace kiln
