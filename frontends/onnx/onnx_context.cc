// ImportState and NodeContext (see onnx_context.h): names, inputs, attributes, outputs,
// builders with constant folding (through the reference interpreter, so a folded value is
// exactly what the graph would compute), and errors placed at the ONNX node.
#include "frontends/onnx/onnx_context.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/onnx/onnx_tensor.h"
#include "ir/base/status.h"
#include "ir/interpreter.h"

namespace kiln::onnx_internal {

std::string Quote(absl::string_view text) {
  constexpr size_t kMax = 120;
  if (text.size() <= kMax) return absl::StrCat("\"", absl::CHexEscape(text), "\"");
  return absl::StrCat("\"", absl::CHexEscape(text.substr(0, kMax)), "\"...");
}

std::string ImportState::KilnName(const std::string& name) const {
  return graph->FreshName(SanitizedName(name));
}

std::string SanitizedName(const std::string& name) {
  std::string out;
  for (char c : name) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
    out.push_back(ok ? c : '_');
  }
  if (out.empty() || !(std::isalpha(static_cast<unsigned char>(out[0])) || out[0] == '_')) {
    out = "v" + out;
  }
  return out;
}

std::string ImportState::OnnxNameOf(const Node* node) const {
  auto it = onnx_name.find(node->name());
  return it == onnx_name.end() ? "" : it->second;
}

NodeContext::NodeContext(ImportState& state, const onnx::NodeProto& proto, int index)
    : state_(state), proto_(proto), index_(index) {
  std::string first = proto.output_size() > 0 ? proto.output(0) : proto.op_type();
  base_name_ = state.KilnName(first.empty() ? proto.op_type() : first);
}

// ---- errors -----------------------------------------------------------------------------

std::string NodeContext::Place() const {
  if (proto_.name().empty()) {
    return absl::StrCat(state_.source, ": node #", index_, " (", proto_.op_type(), ")");
  }
  return absl::StrCat(state_.source, ": node #", index_, " ", Quote(proto_.name()), " (",
                      proto_.op_type(), ")");
}

absl::Status NodeContext::Error(absl::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(Place(), ": ", message));
}

absl::Status NodeContext::Unsupported(absl::string_view message, const std::string& category) const {
  return WithUnsupportedCategory(absl::UnimplementedError(absl::StrCat(Place(), ": ", message)),
                                 category);
}

absl::Status NodeContext::Annotate(const absl::Status& status) const {
  if (status.ok()) return status;
  // Messages from the graph name kiln nodes; say which ONNX values they came from.
  std::vector<std::string> renamed;
  for (int i = 0; i < num_inputs(); ++i) {
    if (!has_input(i)) continue;
    auto it = state_.values.find(input_name(i));
    if (it != state_.values.end() && it->second->name() != input_name(i)) {
      renamed.push_back(absl::StrCat("\"", it->second->name(), "\" is ONNX ", Quote(input_name(i))));
    }
  }
  std::string note = renamed.empty() ? "" : absl::StrCat(" (", absl::StrJoin(renamed, ", "), ")");
  absl::Status out(status.code(), absl::StrCat(Place(), ": ", status.message(), note));
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

// ---- inputs -----------------------------------------------------------------------------

absl::StatusOr<Node*> NodeContext::Input(int i) const {
  if (!has_input(i)) {
    return Error(absl::StrCat("input ", i, " is required but ",
                              i < num_inputs() ? "empty" : "missing"));
  }
  auto it = state_.values.find(input_name(i));
  KILN_CHECK(it != state_.values.end()) << "input checked by the importer: " << input_name(i);
  return it->second;
}

Node* NodeContext::OptionalInput(int i) const {
  if (!has_input(i)) return nullptr;
  return state_.values.at(input_name(i));
}

bool NodeContext::IsConstInput(int i) const {
  Node* n = OptionalInput(i);
  return n != nullptr && n->op() == OpKind::kConstant;
}

absl::StatusOr<const Tensor*> NodeContext::ConstInput(int i, absl::string_view why) const {
  KILN_ASSIGN_OR_RETURN(Node * node, Input(i));
  if (node->op() != OpKind::kConstant) {
    return Unsupported(
        absl::StrCat("input ", i, " ", Quote(input_name(i)), " must be a constant (an initializer, a "
                     "Constant node, or computed only from constants and static shapes) because ",
                     why, "; it depends on ", node->op() == OpKind::kInput ? "the graph input" : "a value computed at run time",
                     node->op() == OpKind::kInput ? absl::StrCat(" ", Quote(state_.OnnxNameOf(node))) : ""),
        absl::StrCat("non-constant ", op_type(), " input ", i));
  }
  return node->value();
}

absl::StatusOr<std::vector<int64_t>> NodeContext::ConstInts(int i, absl::string_view why) const {
  KILN_ASSIGN_OR_RETURN(const Tensor* t, ConstInput(i, why));
  if (!IsInteger(t->dtype())) {
    return Error(absl::StrCat("input ", i, " ", Quote(input_name(i)), " must be an integer tensor, got ",
                              DTypeName(t->dtype())));
  }
  if (t->shape().size() > 1) {
    return Error(absl::StrCat("input ", i, " ", Quote(input_name(i)), " must be a scalar or 1-D, got shape ",
                              ShapeToString(t->shape())));
  }
  std::vector<int64_t> out(t->num_elements());
  for (int64_t k = 0; k < t->num_elements(); ++k) out[k] = t->GetI64(k);
  return out;
}

// ---- attributes -------------------------------------------------------------------------

const onnx::AttributeProto* NodeContext::Attr(const std::string& name) const {
  for (const auto& a : proto_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

namespace {
const char* AttrKindName(int type) {
  switch (type) {
    case onnx::AttributeProto::FLOAT: return "float";
    case onnx::AttributeProto::INT: return "int";
    case onnx::AttributeProto::STRING: return "string";
    case onnx::AttributeProto::TENSOR: return "tensor";
    case onnx::AttributeProto::INTS: return "ints";
    case onnx::AttributeProto::FLOATS: return "floats";
    default: return "another type";
  }
}
}  // namespace

absl::StatusOr<int64_t> NodeContext::AttrInt(const std::string& name, int64_t default_value) const {
  const onnx::AttributeProto* a = Attr(name);
  if (a == nullptr) return default_value;
  if (a->type() != onnx::AttributeProto::INT) {
    return Error(absl::StrCat("attribute ", name, " must be an int, got ", AttrKindName(a->type())));
  }
  return a->i();
}

absl::StatusOr<float> NodeContext::AttrFloat(const std::string& name, float default_value) const {
  const onnx::AttributeProto* a = Attr(name);
  if (a == nullptr) return default_value;
  if (a->type() == onnx::AttributeProto::INT) return static_cast<float>(a->i());
  if (a->type() != onnx::AttributeProto::FLOAT) {
    return Error(absl::StrCat("attribute ", name, " must be a float, got ", AttrKindName(a->type())));
  }
  return a->f();
}

absl::StatusOr<std::string> NodeContext::AttrString(const std::string& name,
                                                    const std::string& default_value) const {
  const onnx::AttributeProto* a = Attr(name);
  if (a == nullptr) return default_value;
  if (a->type() != onnx::AttributeProto::STRING) {
    return Error(absl::StrCat("attribute ", name, " must be a string, got ", AttrKindName(a->type())));
  }
  return a->s();
}

absl::StatusOr<std::optional<std::vector<int64_t>>> NodeContext::AttrInts(const std::string& name) const {
  const onnx::AttributeProto* a = Attr(name);
  if (a == nullptr) return std::optional<std::vector<int64_t>>();
  if (a->type() != onnx::AttributeProto::INTS) {
    return Error(absl::StrCat("attribute ", name, " must be a list of ints, got ", AttrKindName(a->type())));
  }
  return std::optional<std::vector<int64_t>>(std::vector<int64_t>(a->ints().begin(), a->ints().end()));
}

absl::Status NodeContext::CheckAttrs(std::initializer_list<const char*> known) const {
  for (const auto& a : proto_.attribute()) {
    if (!a.ref_attr_name().empty()) {
      return Unsupported(absl::StrCat("attribute ", a.name(), " refers to a function attribute"),
                         "attribute reference");
    }
    bool ok = std::any_of(known.begin(), known.end(), [&](const char* k) { return a.name() == k; });
    if (!ok) {
      return Unsupported(absl::StrCat("attribute ", Quote(a.name()), " is not supported (", op_type(),
                                      " accepts: ", absl::StrJoin(known, ", "), ")"),
                         absl::StrCat("attribute ", op_type(), ".", a.name()));
    }
  }
  return absl::OkStatus();
}

// ---- outputs ----------------------------------------------------------------------------

absl::Status NodeContext::SetOutput(int i, Node* node) {
  if (!wants_output(i)) return absl::OkStatus();
  const std::string& name = proto_.output(i);
  if (state_.values.contains(name)) {
    return Error(absl::StrCat("output ", Quote(name), " is already defined (ONNX values are assigned once)"));
  }
  // Give a node this converter made the ONNX output's name, when it has none yet.
  bool ours = std::find(created_.begin(), created_.end(), node) != created_.end();
  if (ours && !state_.onnx_name.contains(node->name())) {
    std::string wanted = node->name() == SanitizedName(name) ? node->name() : state_.KilnName(name);
    if (node->name() != wanted) KILN_RETURN_IF_ERROR(Annotate(graph().Rename(node, wanted)));
    state_.onnx_name[node->name()] = name;
  }
  state_.values[name] = node;
  return absl::OkStatus();
}

absl::Status NodeContext::RejectOutputsFrom(int count, absl::string_view why) const {
  for (int i = count; i < num_outputs(); ++i) {
    if (wants_output(i)) {
      return Unsupported(absl::StrCat("output ", i, " ", Quote(proto_.output(i)), " is not supported: ", why),
                         absl::StrCat("output ", op_type(), "[", i, "]"));
    }
  }
  return absl::OkStatus();
}

// ---- builders ---------------------------------------------------------------------------

absl::StatusOr<Node*> NodeContext::Fold(Node* node) {
  Graph tmp("fold");
  std::vector<Node*> operands;
  for (Node* operand : node->operands()) {
    KILN_ASSIGN_OR_RETURN(Node * c, tmp.AddConstant("", *operand->value()));
    operands.push_back(c);
  }
  KILN_ASSIGN_OR_RETURN(Node * copy, tmp.AddNode(node->op(), operands, node->attrs()));
  KILN_RETURN_IF_ERROR(tmp.AddOutput(copy, "y"));
  absl::StatusOr<std::vector<Tensor>> values = Interpret(tmp, {});
  if (!values.ok()) return Annotate(values.status());
  return Const(std::move((*values)[0]));
}

absl::StatusOr<Node*> NodeContext::Op(OpKind op, std::vector<Node*> operands, Attributes attrs) {
  absl::StatusOr<Node*> node =
      graph().AddNode(op, operands, std::move(attrs), graph().FreshName(base_name_));
  if (!node.ok()) return Annotate(node.status());
  created_.push_back(*node);
  // A broadcast is free at run time; materialising a large one only costs memory.
  const int64_t limit = op == OpKind::kBroadcastTo ? std::min<int64_t>(options().max_folded_elements, 1024)
                                                   : options().max_folded_elements;
  // Generators (iota) fold like ops on constants: a Trilu of a constant is a constant mask.
  bool foldable = GetCategory(op) != OpCategory::kRandom && (!operands.empty() || op == OpKind::kIota) &&
                  (*node)->num_elements() <= limit;
  for (Node* operand : operands) foldable = foldable && operand->op() == OpKind::kConstant;
  if (foldable) return Fold(*node);
  return *node;
}

absl::StatusOr<Node*> NodeContext::Const(Tensor value) {
  absl::StatusOr<Node*> node = graph().AddConstant(graph().FreshName(base_name_), std::move(value));
  if (!node.ok()) return Annotate(node.status());
  created_.push_back(*node);
  return *node;
}

absl::StatusOr<Node*> NodeContext::Scalar(double value, DType dtype) {
  Tensor t(dtype, {});
  t.SetF64(0, value);
  return Const(std::move(t));
}

absl::StatusOr<Node*> NodeContext::Cast(Node* x, DType dtype) {
  if (x->dtype() == dtype) return x;
  return Op(OpKind::kCast, {x}, {{"dtype", std::string(DTypeName(dtype))}});
}

absl::StatusOr<Node*> NodeContext::Reshape(Node* x, const Shape& shape) {
  if (x->shape() == shape) return x;
  return Op(OpKind::kReshape, {x}, {{"shape", shape}});
}

absl::StatusOr<Node*> NodeContext::Transpose(Node* x, const std::vector<int64_t>& perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) return x;
  return Op(OpKind::kTranspose, {x}, {{"perm", perm}});
}

const ConverterTable& Converters() {
  static const ConverterTable* table = [] {
    auto* t = new ConverterTable();
    RegisterElementwiseOps(*t);
    RegisterShapeOps(*t);
    RegisterNnOps(*t);
    return t;
  }();
  return *table;
}

}  // namespace kiln::onnx_internal
