// Internal to frontends/onnx: the state shared while one model is imported (ImportState:
// the graph, ONNX value name -> kiln node, ONNX <-> kiln names) and the view one operator
// converter gets of its node (NodeContext: inputs, constant inputs, attributes with
// defaults, builders that fold constants, outputs, and errors placed at the node).
//
// Converters are plain functions registered by op type in onnx_ops*.cc. Each one reads its
// node through NodeContext, builds kiln nodes with Op()/Const()/Cast()/..., and binds every
// requested ONNX output with SetOutput(). An output a converter leaves unbound is an error
// ("output 1 of Dropout is not produced"), so an optional output is never silently dropped.
#ifndef KILN_FRONTENDS_ONNX_ONNX_CONTEXT_H_
#define KILN_FRONTENDS_ONNX_ONNX_CONTEXT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "frontends/onnx/onnx_import.h"
#include "ir/graph.h"
#include "onnx/onnx_pb.h"

namespace kiln::onnx_internal {

// "\"text\"" with C escapes: ONNX names quoted in messages.
std::string Quote(absl::string_view text);

// `name` with invalid characters replaced by '_' and a "v" in front of a leading digit.
std::string SanitizedName(const std::string& name);

struct ImportState {
  Graph* graph = nullptr;
  std::string source;     // starts every message
  std::string model_dir;  // external data of Constant nodes
  const OnnxImportOptions* options = nullptr;
  int opset = 0;          // of the default domain
  absl::flat_hash_map<std::string, Node*> values;          // ONNX value name -> node
  absl::flat_hash_map<std::string, std::string> onnx_name;  // kiln node name -> ONNX name

  // A kiln name for ONNX value `name`: invalid characters become '_', a leading digit gets
  // a "v" in front, and a name already taken gets a ".N" suffix. Deterministic.
  std::string KilnName(const std::string& name) const;
  // The ONNX name a kiln node was made for ("" for nodes a decomposition added).
  std::string OnnxNameOf(const Node* node) const;
};

class NodeContext {
 public:
  NodeContext(ImportState& state, const onnx::NodeProto& proto, int index);

  const onnx::NodeProto& proto() const { return proto_; }
  int index() const { return index_; }  // the node's position in the graph (the "#N" of errors)
  const std::string& op_type() const { return proto_.op_type(); }
  int opset() const { return state_.opset; }
  const std::string& model_dir() const { return state_.model_dir; }
  Graph& graph() { return *state_.graph; }
  const OnnxImportOptions& options() const { return *state_.options; }

  // ---- inputs: `i` counts all declared inputs; "" names an omitted optional one.
  int num_inputs() const { return proto_.input_size(); }
  bool has_input(int i) const { return i < proto_.input_size() && !proto_.input(i).empty(); }
  const std::string& input_name(int i) const { return proto_.input(i); }
  // The node for input i; an error when it is omitted.
  absl::StatusOr<Node*> Input(int i) const;
  // nullptr when omitted.
  Node* OptionalInput(int i) const;
  // The constant value of input i, or an error saying the input must be constant and `why`.
  absl::StatusOr<const Tensor*> ConstInput(int i, absl::string_view why) const;
  // An integer constant input as a list (a scalar gives one element).
  absl::StatusOr<std::vector<int64_t>> ConstInts(int i, absl::string_view why) const;
  // True when input i is present and a constant.
  bool IsConstInput(int i) const;

  // ---- attributes (an attribute of the wrong type is an error naming it).
  const onnx::AttributeProto* Attr(const std::string& name) const;
  absl::StatusOr<int64_t> AttrInt(const std::string& name, int64_t default_value) const;
  absl::StatusOr<float> AttrFloat(const std::string& name, float default_value) const;
  absl::StatusOr<std::string> AttrString(const std::string& name, const std::string& default_value) const;
  absl::StatusOr<std::optional<std::vector<int64_t>>> AttrInts(const std::string& name) const;
  // Every attribute of the node must be in `known`; any other is kUnimplemented.
  absl::Status CheckAttrs(std::initializer_list<const char*> known) const;

  // ---- outputs
  int num_outputs() const { return proto_.output_size(); }
  bool wants_output(int i) const { return i < proto_.output_size() && !proto_.output(i).empty(); }
  absl::Status SetOutput(int i, Node* node);
  // Outputs with index >= `count` must not be requested (else kUnimplemented naming `why`).
  absl::Status RejectOutputsFrom(int count, absl::string_view why) const;

  // ---- builders. Op() adds a kiln node; when every operand is a constant and the result is
  // small (OnnxImportOptions::max_folded_elements) it is evaluated now and a constant is
  // returned instead. Errors from the graph are placed at this node.
  absl::StatusOr<Node*> Op(OpKind op, std::vector<Node*> operands, Attributes attrs = {});
  absl::StatusOr<Node*> Const(Tensor value);
  absl::StatusOr<Node*> Scalar(double value, DType dtype);
  absl::StatusOr<Node*> Cast(Node* x, DType dtype);          // x itself when the dtype matches
  absl::StatusOr<Node*> Reshape(Node* x, const Shape& shape);  // x itself when the shape matches
  absl::StatusOr<Node*> Transpose(Node* x, const std::vector<int64_t>& perm);  // identity: x

  // ---- errors, all starting "<source>: node #index "name" (OpType): ".
  std::string Place() const;
  absl::Status Error(absl::string_view message) const;  // kInvalidArgument
  // kUnimplemented with the payload `category` (e.g. "attribute Attention.softcap").
  absl::Status Unsupported(absl::string_view message, const std::string& category) const;
  // `status` (from the graph or the tensor reader) placed at this node; code and payload kept.
  absl::Status Annotate(const absl::Status& status) const;

  // Nodes created by this context (so SetOutput can give its result the ONNX output's name).
  const std::vector<Node*>& created() const { return created_; }

 private:
  absl::StatusOr<Node*> Fold(Node* node);

  ImportState& state_;
  const onnx::NodeProto& proto_;
  int index_;
  std::string base_name_;
  std::vector<Node*> created_;
};

using ConvertFn = absl::Status (*)(NodeContext&);
using ConverterTable = std::map<std::string, ConvertFn>;

// Each onnx_ops*.cc file registers its converters by ONNX op type.
void RegisterElementwiseOps(ConverterTable& table);
void RegisterShapeOps(ConverterTable& table);
void RegisterNnOps(ConverterTable& table);
const ConverterTable& Converters();

}  // namespace kiln::onnx_internal

#endif  // KILN_FRONTENDS_ONNX_ONNX_CONTEXT_H_
