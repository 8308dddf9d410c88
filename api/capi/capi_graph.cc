// The C ABI's graphs (api/kiln.h): loading from a file or JSON text, building node by node,
// querying inputs, outputs and values, JSON export, freeing.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "api/capi/capi_internal.h"
#include "api/compiler.h"
#include "frontends/json/json_graph.h"
#include "ir/dtype.h"
#include "ir/op.h"
#include "ir/verifier.h"

namespace kiln::capi {
namespace {

int NewGraph(std::unique_ptr<Graph> graph, kiln_graph** out) {
  auto handle = std::make_unique<kiln_graph>();
  handle->graph = std::move(graph);
  *out = handle.release();
  return KILN_OK;
}

// Validates a (dtype, rank, dims) triple from the caller; `what` names it in messages.
int ReadType(const char* function, const std::string& what, const char* dtype, int64_t rank, const int64_t* dims,
             DType* out_dtype, Shape* out_shape) {
  if (dtype == nullptr) return NullArgument(function, "dtype");
  absl::StatusOr<DType> parsed = ParseDType(dtype);
  if (!parsed.ok()) {
    return Fail(KILN_ERROR_INVALID_ARGUMENT, absl::StrCat(function, ": ", what, ": ", parsed.status().message()));
  }
  if (rank < 0) return Fail(KILN_ERROR_INVALID_ARGUMENT, absl::StrCat(function, ": ", what, ": negative rank ", rank));
  if (rank > 0 && dims == nullptr) return NullArgument(function, "dims");
  Shape shape(dims, dims + rank);
  for (int64_t i = 0; i < rank; ++i) {
    if (shape[i] < 0) {
      return Fail(KILN_ERROR_INVALID_ARGUMENT, absl::StrCat(function, ": ", what, ": dim ", i, " is ", shape[i]));
    }
  }
  *out_dtype = *parsed;
  *out_shape = std::move(shape);
  return KILN_OK;
}

// Records a new value and returns its id.
int Added(kiln_graph* graph, const absl::StatusOr<Node*>& node, const char* function, int64_t* out_id) {
  if (!node.ok()) {
    return Fail(ToCode(node.status()), absl::StrCat(function, ": ", node.status().message()));
  }
  graph->values.push_back(*node);
  if (out_id != nullptr) *out_id = static_cast<int64_t>(graph->values.size()) - 1;
  return KILN_OK;
}

int ValueAt(const char* function, const kiln_graph* graph, int64_t id, Node** node) {
  if (id < 0 || id >= static_cast<int64_t>(graph->values.size())) {
    return Fail(KILN_ERROR_INVALID_ARGUMENT,
                absl::StrCat(function, ": no value with id ", id, " (the builder has handed out ",
                             graph->values.size(), " ids)"));
  }
  *node = graph->values[id];
  return KILN_OK;
}

int IndexCheck(const char* function, const char* what, int64_t index, size_t count) {
  if (index < 0 || index >= static_cast<int64_t>(count)) {
    return Fail(KILN_ERROR_INVALID_ARGUMENT,
                absl::StrCat(function, ": ", what, " index ", index, " out of range (the graph has ", count, ")"));
  }
  return KILN_OK;
}

}  // namespace
}  // namespace kiln::capi

using namespace kiln::capi;  // NOLINT: this file implements the C functions of api/kiln.h

extern "C" {

int kiln_graph_load(const char* path, kiln_graph** out) {
  return Guard(__func__, [&] {
    if (path == nullptr) return NullArgument(__func__, "path");
    if (out == nullptr) return NullArgument(__func__, "out");
    absl::StatusOr<std::unique_ptr<kiln::Graph>> graph = kiln::LoadGraph(path);
    if (!graph.ok()) return FromStatus(graph.status());
    if (absl::Status s = kiln::Verify(**graph); !s.ok()) {
      return Fail(ToCode(s), absl::StrCat(path, ": ", s.message()));
    }
    return NewGraph(std::move(*graph), out);
  });
}

int kiln_graph_from_json(const char* json_text, kiln_graph** out) {
  return Guard(__func__, [&] {
    if (json_text == nullptr) return NullArgument(__func__, "json_text");
    if (out == nullptr) return NullArgument(__func__, "out");
    auto graph = kiln::ImportJsonGraph(json_text, /*base_dir=*/"", "<json>");
    if (!graph.ok()) return FromStatus(graph.status());
    if (absl::Status s = kiln::Verify(**graph); !s.ok()) {
      return Fail(ToCode(s), absl::StrCat("<json>: ", s.message()));
    }
    return NewGraph(std::move(*graph), out);
  });
}

int kiln_graph_create(const char* name, kiln_graph** out) {
  return Guard(__func__, [&] {
    if (out == nullptr) return NullArgument(__func__, "out");
    std::string n = name != nullptr && *name != '\0' ? name : "graph";
    return NewGraph(std::make_unique<kiln::Graph>(n), out);
  });
}

int kiln_graph_add_input(kiln_graph* graph, const char* name, const char* dtype, int64_t rank, const int64_t* dims,
                         int64_t* out_id) {
  return Guard(__func__, [&] {
    if (graph == nullptr) return NullArgument(__func__, "graph");
    if (name == nullptr) return NullArgument(__func__, "name");
    if (graph->borrowed) return Fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_graph_add_input: the graph belongs to an executable");
    kiln::DType d;
    kiln::Shape shape;
    if (int c = ReadType(__func__, absl::StrCat("input \"", name, "\""), dtype, rank, dims, &d, &shape)) return c;
    return Added(graph, graph->graph->AddInput(name, d, shape), __func__, out_id);
  });
}

int kiln_graph_add_constant(kiln_graph* graph, const char* name, const char* dtype, int64_t rank, const int64_t* dims,
                            const void* data, size_t nbytes, int64_t* out_id) {
  return Guard(__func__, [&] {
    if (graph == nullptr) return NullArgument(__func__, "graph");
    if (name == nullptr) return NullArgument(__func__, "name");
    if (graph->borrowed) return Fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_graph_add_constant: the graph belongs to an executable");
    kiln::DType d;
    kiln::Shape shape;
    std::string what = absl::StrCat("constant \"", name, "\"");
    if (int c = ReadType(__func__, what, dtype, rank, dims, &d, &shape)) return c;
    kiln::Tensor value(d, shape);
    if (static_cast<int64_t>(nbytes) != value.num_bytes()) {
      return Fail(KILN_ERROR_INVALID_ARGUMENT, absl::StrCat(__func__, ": ", what, ": ", nbytes, " bytes given, ",
                                                            dtype, " of this shape needs ", value.num_bytes()));
    }
    if (nbytes > 0 && data == nullptr) return NullArgument(__func__, "data");
    if (nbytes > 0) std::memcpy(value.data(), data, nbytes);
    return Added(graph, graph->graph->AddConstant(name, std::move(value)), __func__, out_id);
  });
}

int kiln_graph_add_node(kiln_graph* graph, const char* op, const int64_t* operand_ids, int64_t num_operands,
                        const char* attrs_json, const char* name, int64_t* out_id) {
  return Guard(__func__, [&] {
    if (graph == nullptr) return NullArgument(__func__, "graph");
    if (op == nullptr) return NullArgument(__func__, "op");
    if (graph->borrowed) return Fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_graph_add_node: the graph belongs to an executable");
    if (num_operands < 0) return Fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_graph_add_node: negative num_operands");
    if (num_operands > 0 && operand_ids == nullptr) return NullArgument(__func__, "operand_ids");
    absl::StatusOr<kiln::OpKind> kind = kiln::ParseOpKind(op);
    if (!kind.ok()) return Fail(KILN_ERROR_INVALID_ARGUMENT, absl::StrCat(__func__, ": ", kind.status().message()));
    std::string node_name = name != nullptr ? name : "";
    std::string where = node_name.empty() ? absl::StrCat("attrs of ", op) : absl::StrCat("attrs of ", node_name);
    auto attrs = kiln::ImportJsonAttributes(attrs_json != nullptr ? attrs_json : "", *kind, where);
    if (!attrs.ok()) return Fail(ToCode(attrs.status()), absl::StrCat(__func__, ": ", attrs.status().message()));
    std::vector<kiln::Node*> operands;
    for (int64_t i = 0; i < num_operands; ++i) {
      kiln::Node* node = nullptr;
      if (int c = ValueAt(__func__, graph, operand_ids[i], &node)) return c;
      operands.push_back(node);
    }
    return Added(graph, graph->graph->AddNode(*kind, std::move(operands), std::move(*attrs), node_name), __func__,
                 out_id);
  });
}

int kiln_graph_add_output(kiln_graph* graph, int64_t id, const char* name) {
  return Guard(__func__, [&] {
    if (graph == nullptr) return NullArgument(__func__, "graph");
    if (graph->borrowed) return Fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_graph_add_output: the graph belongs to an executable");
    kiln::Node* node = nullptr;
    if (int c = ValueAt(__func__, graph, id, &node)) return c;
    absl::Status s = graph->graph->AddOutput(node, name != nullptr ? name : "");
    if (!s.ok()) return Fail(ToCode(s), absl::StrCat(__func__, ": ", s.message()));
    return KILN_OK;
  });
}

int kiln_graph_value_info(const kiln_graph* graph, int64_t id, kiln_tensor_info* info) {
  return Guard(__func__, [&] {
    if (graph == nullptr) return NullArgument(__func__, "graph");
    if (info == nullptr) return NullArgument(__func__, "info");
    kiln::Node* node = nullptr;
    if (int c = ValueAt(__func__, graph, id, &node)) return c;
    FillInfo(node->name(), *node, info);
    return KILN_OK;
  });
}

int kiln_graph_verify(const kiln_graph* graph) {
  return Guard(__func__, [&] {
    if (graph == nullptr) return NullArgument(__func__, "graph");
    return FromStatus(kiln::Verify(*graph->graph));
  });
}

int kiln_graph_name(const kiln_graph* graph, const char** name) {
  return Guard(__func__, [&] {
    if (graph == nullptr) return NullArgument(__func__, "graph");
    if (name == nullptr) return NullArgument(__func__, "name");
    *name = graph->graph->name().c_str();
    return KILN_OK;
  });
}

int kiln_graph_num_inputs(const kiln_graph* graph, int64_t* count) {
  return Guard(__func__, [&] {
    if (graph == nullptr) return NullArgument(__func__, "graph");
    if (count == nullptr) return NullArgument(__func__, "count");
    *count = static_cast<int64_t>(graph->graph->inputs().size());
    return KILN_OK;
  });
}

int kiln_graph_num_outputs(const kiln_graph* graph, int64_t* count) {
  return Guard(__func__, [&] {
    if (graph == nullptr) return NullArgument(__func__, "graph");
    if (count == nullptr) return NullArgument(__func__, "count");
    *count = static_cast<int64_t>(graph->graph->outputs().size());
    return KILN_OK;
  });
}

int kiln_graph_input_info(const kiln_graph* graph, int64_t index, kiln_tensor_info* info) {
  return Guard(__func__, [&] {
    if (graph == nullptr) return NullArgument(__func__, "graph");
    if (info == nullptr) return NullArgument(__func__, "info");
    const auto& inputs = graph->graph->inputs();
    if (int c = IndexCheck(__func__, "input", index, inputs.size())) return c;
    FillInfo(inputs[index]->name(), *inputs[index], info);
    return KILN_OK;
  });
}

int kiln_graph_output_info(const kiln_graph* graph, int64_t index, kiln_tensor_info* info) {
  return Guard(__func__, [&] {
    if (graph == nullptr) return NullArgument(__func__, "graph");
    if (info == nullptr) return NullArgument(__func__, "info");
    const auto& outputs = graph->graph->outputs();
    if (int c = IndexCheck(__func__, "output", index, outputs.size())) return c;
    FillInfo(outputs[index].name, *outputs[index].node, info);
    return KILN_OK;
  });
}

int kiln_graph_to_json(const kiln_graph* graph, char** out) {
  return Guard(__func__, [&] {
    if (graph == nullptr) return NullArgument(__func__, "graph");
    if (out == nullptr) return NullArgument(__func__, "out");
    kiln::JsonExportOptions options;
    options.inline_limit_bytes = INT64_MAX;  // everything inline: there is no file to put beside it
    absl::StatusOr<std::string> text = kiln::ExportJsonGraph(*graph->graph, options);
    if (!text.ok()) return FromStatus(text.status());
    *out = CopyString(*text);
    return KILN_OK;
  });
}

int kiln_graph_free(kiln_graph* graph) {
  return Guard(__func__, [&] {
    if (graph == nullptr) return KILN_OK;
    if (graph->borrowed) {
      return Fail(KILN_ERROR_INVALID_ARGUMENT,
                  "kiln_graph_free: this graph belongs to an executable (kiln_executable_graph); free the executable");
    }
    delete graph;
    return KILN_OK;
  });
}

}  // extern "C"
