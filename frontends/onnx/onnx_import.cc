// The model-level half of the ONNX importer: reading and parsing the file, the opset and
// domain checks, graph inputs (with symbolic dimensions bound from OnnxImportOptions),
// initializers, the node loop that dispatches to the per-op converters (onnx_ops*.cc), and
// graph outputs (checked against the dtype and static dims the model declares).
#include "frontends/onnx/onnx_import.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/onnx/onnx_context.h"
#include "frontends/onnx/onnx_tensor.h"
#include "ir/base/edit_distance.h"
#include "ir/base/status.h"
#include "onnx/onnx_pb.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using onnx_internal::ImportState;
using onnx_internal::NodeContext;
using onnx_internal::Quote;

// ONNX's own single-file limit (larger models keep their weights in external data).
constexpr int64_t kMaxModelBytes = int64_t{2} << 30;

absl::Status Prefixed(const absl::Status& status, const std::string& prefix) {
  absl::Status out(status.code(), absl::StrCat(prefix, ": ", status.message()));
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& p) { out.SetPayload(url, p); });
  return out;
}

// Up to 5 supported op types closest to `op_type` (case-insensitive edit distance; a shared
// prefix or substring counts as close, so "ReduceL2" suggests the other Reduce ops).
std::string ClosestSupported(const std::string& op_type) {
  std::string lower = absl::AsciiStrToLower(op_type);
  std::vector<std::pair<int, std::string>> scored;
  for (const auto& [name, fn] : onnx_internal::Converters()) {
    std::string cand = absl::AsciiStrToLower(name);
    int d = EditDistance(lower, cand);
    size_t common = 0;
    while (common < lower.size() && common < cand.size() && lower[common] == cand[common]) ++common;
    if (common >= 4 || (lower.size() >= 3 && cand.find(lower) != std::string::npos)) d = std::min(d, 2);
    scored.push_back({d, name});
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (const auto& [d, name] : scored) {
    if (out.size() >= 5) break;
    out.push_back(name);
  }
  return absl::StrJoin(out, ", ");
}

// The default domain's opset; other declared domains are checked when a node uses them.
absl::StatusOr<int> DefaultOpset(const onnx::ModelProto& model, const std::string& source) {
  int opset = -1;
  for (const auto& entry : model.opset_import()) {
    if (entry.domain().empty() || entry.domain() == "ai.onnx") opset = static_cast<int>(entry.version());
  }
  if (opset < 0 && model.opset_import_size() > 0) {
    const std::string& domain = model.opset_import(0).domain();
    return WithUnsupportedCategory(
        absl::UnimplementedError(absl::StrCat(source, ": the model uses only the domain ", Quote(domain),
                                              ", which kiln does not support; kiln reads the default ONNX domain "
                                              "(\"\" or \"ai.onnx\") only")),
        absl::StrCat("domain ", domain));
  }
  if (opset < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": the model imports no opset of the default ONNX domain (\"\" or \"ai.onnx\")"));
  }
  if (opset < kMinOnnxOpset || opset > kMaxOnnxOpset) {
    return WithUnsupportedCategory(
        absl::UnimplementedError(absl::StrCat(source, ": default-domain opset ", opset,
                                              " is not supported; kiln reads opsets ", kMinOnnxOpset,
                                              " to ", kMaxOnnxOpset,
                                              " (re-export with opset_version in that range)")),
        absl::StrCat("opset ", opset));
  }
  return opset;
}

struct InputDims {
  std::string name;   // ONNX name
  DType dtype;
  std::vector<std::optional<int64_t>> dims;  // nullopt: not static
  std::vector<std::string> params;           // dim_param per dim ("" if none)
  bool has_shape = true;
};

// Resolves every graph input's shape from the file and options.input_shapes; all unbound
// dimensions are listed in one error.
absl::StatusOr<std::vector<std::pair<InputDims, Shape>>> BindInputs(
    const std::vector<InputDims>& inputs, const OnnxImportOptions& options, const std::string& source) {
  std::set<std::string> symbols, names;
  for (const InputDims& in : inputs) {
    names.insert(in.name);
    for (const std::string& p : in.params) if (!p.empty()) symbols.insert(p);
  }
  for (const auto& [key, value] : options.input_shapes) {
    if (names.count(key)) continue;
    if (symbols.count(key)) {
      if (value.size() != 1 || value[0] < 0) {
        return absl::InvalidArgumentError(absl::StrCat(source, ": symbolic dimension ", Quote(key),
                                                       " must be bound to one non-negative value"));
      }
      continue;
    }
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": the shape binding ", Quote(key), " names neither a graph input (",
        absl::StrJoin(names, ", "), ") nor a symbolic dimension (",
        symbols.empty() ? "the model has none" : absl::StrJoin(symbols, ", "), ")"));
  }
  std::vector<std::pair<InputDims, Shape>> out;
  std::vector<std::string> unbound;
  for (const InputDims& in : inputs) {
    Shape shape;
    auto whole = options.input_shapes.find(in.name);
    if (whole != options.input_shapes.end()) {
      const std::vector<int64_t>& s = whole->second;
      if (in.has_shape && s.size() != in.dims.size()) {
        return absl::InvalidArgumentError(absl::StrCat(source, ": graph input ", Quote(in.name), " has rank ",
                                                       in.dims.size(), " but is bound to ", ShapeToString(s)));
      }
      for (size_t d = 0; d < s.size(); ++d) {
        if (s[d] < 0 || (in.has_shape && in.dims[d] && *in.dims[d] != s[d])) {
          return absl::InvalidArgumentError(absl::StrCat(
              source, ": graph input ", Quote(in.name), " is bound to ", ShapeToString(s),
              " but dimension ", d, " is ", in.dims[d] ? absl::StrCat(*in.dims[d]) : "negative"));
        }
      }
      out.push_back({in, s});
      continue;
    }
    if (!in.has_shape) {
      unbound.push_back(absl::StrCat(Quote(in.name), " (no shape in the file: bind the whole input)"));
      continue;
    }
    for (size_t d = 0; d < in.dims.size(); ++d) {
      if (in.dims[d]) {
        shape.push_back(*in.dims[d]);
      } else if (!in.params[d].empty() && options.input_shapes.count(in.params[d])) {
        shape.push_back(options.input_shapes.at(in.params[d])[0]);
      } else {
        unbound.push_back(absl::StrCat(Quote(in.name), " dimension ", d,
                                       in.params[d].empty() ? " (unknown)" : absl::StrCat(" (", Quote(in.params[d]), ")")));
        shape.push_back(-1);
      }
    }
    out.push_back({in, shape});
  }
  if (!unbound.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        source, ": kiln needs static shapes, and these graph input dimensions are not bound: ",
        absl::StrJoin(unbound, ", "),
        ". Bind a symbolic dimension by name or a whole input by its name: OnnxImportOptions::input_shapes "
        "({\"batch\", {8}} or {\"x\", {8, 128}}), on the command line --shape batch=8 or --shape x=8,128"));
  }
  return out;
}

absl::Status ImportGraph(const onnx::ModelProto& model, ImportState& state) {
  const onnx::GraphProto& g = model.graph();
  Graph& graph = *state.graph;
  const std::string& source = state.source;
  if (g.sparse_initializer_size() > 0) {
    return WithUnsupportedCategory(
        absl::UnimplementedError(absl::StrCat(source, ": sparse initializers are not supported")),
        "sparse initializer");
  }
  // Initializers (constants; ones also listed as graph inputs stay constants).
  std::set<std::string> initializer_names;
  for (const onnx::TensorProto& init : g.initializer()) {
    std::string where = absl::StrCat(source, ": initializer ", Quote(init.name()));
    if (init.name().empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": has no name"));
    if (!initializer_names.insert(init.name()).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": defined twice"));
    }
    absl::StatusOr<Tensor> value = TensorFromOnnx(init, state.model_dir, /*allow_double=*/true);
    if (!value.ok()) return Prefixed(value.status(), where);
    std::string name = state.KilnName(init.name());
    absl::StatusOr<Node*> node = graph.AddConstant(name, std::move(*value));
    if (!node.ok()) return Prefixed(node.status(), where);
    state.values[init.name()] = *node;
    state.onnx_name[name] = init.name();
  }
  // Graph inputs.
  std::vector<InputDims> inputs;
  for (const onnx::ValueInfoProto& in : g.input()) {
    if (initializer_names.count(in.name())) continue;
    std::string where = absl::StrCat(source, ": graph input ", Quote(in.name()));
    if (in.name().empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": has no name"));
    if (auto c = state.options->constant_inputs.find(in.name()); c != state.options->constant_inputs.end()) {
      // A graph input frozen to a constant: its value must fit the declaration.
      const onnx::TypeProto::Tensor& tt = in.type().tensor_type();
      bool ok = OnnxTypeFromDType(c->second.dtype()) == tt.elem_type();
      if (tt.has_shape()) {
        ok = ok && tt.shape().dim_size() == static_cast<int>(c->second.shape().size());
        for (int d = 0; ok && d < tt.shape().dim_size(); ++d) {
          ok = !tt.shape().dim(d).has_dim_value() || tt.shape().dim(d).dim_value() == c->second.shape()[d];
        }
      }
      if (!ok) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": the constant given for it (",
                                                       DTypeName(c->second.dtype()), ShapeToString(c->second.shape()),
                                                       ") does not match its declared type"));
      }
      std::string name = state.KilnName(in.name());
      absl::StatusOr<Node*> node = graph.AddConstant(name, c->second);
      if (!node.ok()) return Prefixed(node.status(), where);
      state.values[in.name()] = *node;
      state.onnx_name[name] = in.name();
      continue;
    }
    if (!in.type().has_tensor_type()) {
      return WithUnsupportedCategory(
          absl::UnimplementedError(absl::StrCat(where, ": only tensor inputs are supported (not sequences, maps or optionals)")),
          "non-tensor input");
    }
    const onnx::TypeProto::Tensor& tt = in.type().tensor_type();
    absl::StatusOr<DType> dtype = DTypeFromOnnx(tt.elem_type());
    if (!dtype.ok()) return Prefixed(dtype.status(), where);
    InputDims dims{in.name(), *dtype, {}, {}, tt.has_shape()};
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value() && d.dim_value() >= 0) {
        dims.dims.push_back(d.dim_value());
      } else {
        dims.dims.push_back(std::nullopt);
      }
      dims.params.push_back(d.has_dim_param() ? d.dim_param() : "");
    }
    inputs.push_back(std::move(dims));
  }
  for (const auto& entry : state.options->constant_inputs) {
    const std::string& name = entry.first;  // a lambda cannot capture a structured binding (C++17)
    bool found = std::any_of(g.input().begin(), g.input().end(),
                             [&](const onnx::ValueInfoProto& in) { return in.name() == name; });
    if (!found || initializer_names.count(name)) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": a constant is given for ", Quote(name),
                                                     ", which is not a graph input"));
    }
  }
  KILN_ASSIGN_OR_RETURN(auto bound, BindInputs(inputs, *state.options, source));
  for (const auto& [in, shape] : bound) {
    std::string name = state.KilnName(in.name);
    absl::StatusOr<Node*> node = graph.AddInput(name, in.dtype, shape);
    if (!node.ok()) return Prefixed(node.status(), absl::StrCat(source, ": graph input ", Quote(in.name)));
    if (state.values.contains(in.name)) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": graph input ", Quote(in.name), " is defined twice"));
    }
    state.values[in.name] = *node;
    state.onnx_name[name] = in.name;
  }
  // Nodes, in file order (ONNX requires a topological order).
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& proto = g.node(i);
    NodeContext ctx(state, proto, i);
    if (!proto.domain().empty() && proto.domain() != "ai.onnx") {
      bool local = std::any_of(model.functions().begin(), model.functions().end(),
                               [&](const onnx::FunctionProto& f) { return f.domain() == proto.domain(); });
      return ctx.Unsupported(absl::StrCat("domain ", Quote(proto.domain()), " is not supported; kiln reads the "
                                          "default ONNX domain (\"\" or \"ai.onnx\") only",
                                          local ? " (this is a model-local function; export with functions inlined)" : ""),
                             absl::StrCat("domain ", proto.domain()));
    }
    for (int k = 0; k < proto.input_size(); ++k) {
      if (!proto.input(k).empty() && !state.values.contains(proto.input(k))) {
        return ctx.Error(absl::StrCat("input ", k, " ", Quote(proto.input(k)), " is not defined by an earlier node, "
                                      "an initializer or a graph input (nodes must be in topological order)"));
      }
    }
    auto it = onnx_internal::Converters().find(proto.op_type());
    if (it == onnx_internal::Converters().end()) {
      return ctx.Unsupported(absl::StrCat("operator ", Quote(proto.op_type()), " is not supported; supported ops "
                                          "close to it: ", ClosestSupported(proto.op_type()),
                                          " (docs/onnx.md lists them all)"),
                             absl::StrCat("op ", proto.op_type()));
    }
    KILN_RETURN_IF_ERROR(it->second(ctx));
    for (int k = 0; k < proto.output_size(); ++k) {
      if (ctx.wants_output(k) && !state.values.contains(proto.output(k))) {
        return ctx.Unsupported(absl::StrCat("output ", k, " ", Quote(proto.output(k)), " is not produced by kiln's ",
                                            proto.op_type(), " import"),
                               absl::StrCat("output ", proto.op_type(), "[", k, "]"));
      }
    }
  }
  // Outputs.
  std::set<std::string> output_names;
  for (const onnx::ValueInfoProto& out : g.output()) {
    std::string where = absl::StrCat(source, ": graph output ", Quote(out.name()));
    auto found = state.values.find(out.name());
    if (found == state.values.end()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": no node, initializer or input defines it"));
    }
    Node* node = found->second;
    if (out.type().has_tensor_type()) {
      const onnx::TypeProto::Tensor& tt = out.type().tensor_type();
      if (tt.elem_type() != 0) {
        absl::StatusOr<DType> declared = DTypeFromOnnx(tt.elem_type());
        if (!declared.ok()) return Prefixed(declared.status(), where);
        if (*declared != node->dtype()) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": the model declares ", OnnxTypeName(tt.elem_type()),
                                                         " but the graph computes ", DTypeName(node->dtype())));
        }
      }
      if (tt.has_shape()) {
        bool ok = tt.shape().dim_size() == static_cast<int>(node->shape().size());
        for (int d = 0; ok && d < tt.shape().dim_size(); ++d) {
          const auto& dim = tt.shape().dim(d);
          ok = !dim.has_dim_value() || dim.dim_value() == node->shape()[d];
        }
        if (!ok) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": the model declares a shape that differs from the "
                                                         "inferred ", ShapeToString(node->shape())));
        }
      }
    }
    std::string name = state.graph->FreshName(state.KilnName(out.name()));
    name = state.onnx_name.count(node->name()) && state.onnx_name[node->name()] == out.name() ? node->name() : name;
    while (output_names.count(name)) name += "_";
    output_names.insert(name);
    KILN_RETURN_IF_ERROR(Prefixed(graph.AddOutput(node, name), where));
  }
  graph.RemoveDeadNodes();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Graph>> ImportOnnxModel(const onnx::ModelProto& model,
                                                       const std::string& model_dir,
                                                       const OnnxImportOptions& options,
                                                       const std::string& source_name) {
  if (model.ir_version() <= 0 || !model.has_graph()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source_name, ": not an ONNX model (", model.ir_version() <= 0 ? "no ir_version" : "no graph", ")"));
  }
  KILN_ASSIGN_OR_RETURN(int opset, DefaultOpset(model, source_name));
  std::string graph_name = model.graph().name();
  ImportState state;
  auto graph = std::make_unique<Graph>("onnx_graph");
  state.graph = graph.get();
  state.source = source_name;
  state.model_dir = model_dir;
  state.options = &options;
  state.opset = opset;
  if (!graph_name.empty()) graph->set_name(state.KilnName(graph_name));
  KILN_RETURN_IF_ERROR(ImportGraph(model, state));
  return graph;
}

absl::StatusOr<std::unique_ptr<Graph>> ImportOnnxFile(const std::string& path,
                                                      const OnnxImportOptions& options) {
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  if (!fs::is_regular_file(status)) return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  int64_t size = static_cast<int64_t>(fs::file_size(path, ec));
  if (ec) return absl::NotFoundError(absl::StrCat(path, ": cannot read: ", ec.message()));
  if (size >= kMaxModelBytes) {
    return absl::ResourceExhaustedError(absl::StrCat(path, ": ", size, " bytes is over ONNX's 2 GiB protobuf limit"));
  }
  std::string bytes(size, '\0');
  std::ifstream in(path, std::ios::binary);
  in.read(bytes.data(), size);
  if (!in || in.gcount() != size) return absl::DataLossError(absl::StrCat(path, ": cannot read all ", size, " bytes"));
  onnx::ModelProto model;
  if (size == 0 || !model.ParseFromArray(bytes.data(), static_cast<int>(size))) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a valid ONNX model: protobuf parsing failed (the file is truncated, corrupt, or not ONNX)"));
  }
  std::string dir = fs::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  if (model.graph().name().empty()) model.mutable_graph()->set_name(fs::path(path).stem().string());
  return ImportOnnxModel(model, dir, options, path);
}

}  // namespace kiln
