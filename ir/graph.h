// The kiln IR: a typed, shaped tensor graph. Every node has exactly one output tensor, named
// by the node. Nodes are created only through Graph, which checks arity, attributes
// (AttrSpecsFor) and shape/dtype agreement (InferOutputType) on construction, so a Node that
// exists is well formed; Verify() (ir/verifier.h) re-checks the whole graph between passes.
#ifndef KILN_IR_GRAPH_H_
#define KILN_IR_GRAPH_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ir/attributes.h"
#include "ir/dtype.h"
#include "ir/op.h"
#include "ir/shape.h"
#include "ir/tensor.h"

namespace kiln {

class Graph;

class Node {
 public:
  int id() const { return id_; }
  const std::string& name() const { return name_; }
  OpKind op() const { return op_; }
  const OpInfo& info() const { return GetOpInfo(op_); }
  OpCategory category() const { return GetCategory(op_); }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t num_elements() const { return NumElements(shape_); }
  int64_t num_bytes() const { return num_elements() * ByteSize(dtype_); }

  const std::vector<Node*>& operands() const { return operands_; }
  Node* operand(int i) const { return operands_.at(i); }
  int num_operands() const { return static_cast<int>(operands_.size()); }
  // Distinct users, in the order they were attached.
  const std::vector<Node*>& users() const { return users_; }

  const Attributes& attrs() const { return attrs_; }
  // The data of a constant node (nullptr for every other op).
  const Tensor* value() const { return value_ ? &*value_ : nullptr; }

  // "%name = op(a, b) {attrs} : dtype[shape]"-style one-liner for messages.
  std::string ToString() const;

 private:
  friend class Graph;
  friend class GraphTestPeer;  // tests/ir: builds malformed graphs for the verifier tests
  Node() = default;

  int id_ = -1;
  std::string name_;
  OpKind op_ = OpKind::kInput;
  DType dtype_ = DType::kF32;
  Shape shape_;
  std::vector<Node*> operands_;
  std::vector<Node*> users_;
  Attributes attrs_;
  std::optional<Tensor> value_;
};

// The dtype and shape an op produces from its operands and attributes; the error says
// what disagrees (it names operands by position, callers add the node's place).
struct TypeAndShape {
  DType dtype;
  Shape shape;
};
absl::StatusOr<TypeAndShape> InferOutputType(OpKind op, const std::vector<const Node*>& operands,
                                             const Attributes& attrs);

class Graph {
 public:
  explicit Graph(std::string name = "graph") : name_(std::move(name)) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // Names must be unique and non-empty identifiers ([A-Za-z_][A-Za-z0-9_.]*); an empty
  // `name` in AddNode asks for a fresh one.
  absl::StatusOr<Node*> AddInput(const std::string& name, DType dtype, Shape shape);
  absl::StatusOr<Node*> AddConstant(const std::string& name, Tensor value);
  absl::StatusOr<Node*> AddNode(OpKind op, std::vector<Node*> operands, Attributes attrs = {},
                                const std::string& name = "");
  // Marks `node` as a graph output called `output_name` (default: the node's name). Output
  // names are unique; the same node may be output under two names.
  absl::Status AddOutput(Node* node, const std::string& output_name = "");

  const std::vector<Node*>& inputs() const { return inputs_; }
  struct Output {
    std::string name;
    Node* node;
  };
  const std::vector<Output>& outputs() const { return outputs_; }
  // Live nodes in creation order (not necessarily topological after rewrites).
  std::vector<Node*> nodes() const;
  int num_nodes() const { return static_cast<int>(by_name_.size()); }
  // Live nodes, operands before users; ties keep creation order, so it is deterministic.
  std::vector<Node*> PostOrder() const;
  Node* FindNode(const std::string& name) const;

  // Points every use of `from` (operands and graph outputs) at `to`. Shapes/dtypes must match.
  void ReplaceAllUsesWith(Node* from, Node* to);
  // Replaces operand `index` of `user`.
  void ReplaceOperand(Node* user, int index, Node* replacement);
  // Removes nodes that reach no graph output (graph inputs stay). Returns how many.
  int RemoveDeadNodes();
  // A name not used yet, "prefix", "prefix.1", "prefix.2", ...
  std::string FreshName(const std::string& prefix) const;
  // Renames a node; the new name must be free.
  absl::Status Rename(Node* node, const std::string& name);

  // A deep copy; node names and ids are preserved.
  std::unique_ptr<Graph> Clone() const;

 private:
  friend class GraphTestPeer;  // tests/ir: builds malformed graphs for the verifier tests
  absl::StatusOr<Node*> Insert(std::unique_ptr<Node> node);
  void Detach(Node* node);

  std::string name_;
  std::vector<std::unique_ptr<Node>> storage_;  // null where a node was removed
  absl::flat_hash_map<std::string, Node*> by_name_;
  std::vector<Node*> inputs_;
  std::vector<Output> outputs_;
  int next_id_ = 0;
};

// Which operand of attention(q, k, v[, mask][, seed[, offset]]) or attention_lse(q, k[, mask])
// is which: the mask is the floating-point operand after v (after k for attention_lse), seed and
// offset of attention's dropout the integer scalars after that; -1 where absent.
struct AttentionArgs {
  int mask = -1, seed = -1, offset = -1;
};
AttentionArgs AttentionArgsOf(bool lse, const std::vector<const Node*>& operands);
AttentionArgs AttentionArgsOf(const Node& attention);

// True for names the text form and the JSON format accept.
bool IsValidName(const std::string& name);

}  // namespace kiln

#endif  // KILN_IR_GRAPH_H_
