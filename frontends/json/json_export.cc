// The JSON graph exporter (docs/graph-format.md).
//
// The text is written by hand, not through a JSON writer, so that its layout is part of the
// contract: two-space indent, one input, initializer, node or output per line, every field
// always present at the top level (empty lists as []), graph inputs in graph order, constants
// and nodes in PostOrder, attributes sorted and complete (defaults included, so a file keeps
// its meaning if a default changes), numbers in the shortest form that reads back bit for bit.
// Importing the text and exporting again gives the same text.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/json/json_common.h"
#include "frontends/json/json_graph.h"
#include "frontends/json/json_tensor_data.h"
#include "ir/base/status.h"

namespace kiln {

using json_internal::JsonString;

namespace {

std::string ShapeJson(const Shape& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

std::string AttrJson(const AttrValue& value) {
  switch (TypeOf(value)) {
    case AttrType::kBool: return std::get<bool>(value) ? "true" : "false";
    case AttrType::kInt: return absl::StrCat(std::get<int64_t>(value));
    case AttrType::kFloat: return json_internal::FormatFloatAttr(std::get<double>(value));
    case AttrType::kString: return JsonString(std::get<std::string>(value));
    case AttrType::kInts:
      return absl::StrCat("[", absl::StrJoin(std::get<std::vector<int64_t>>(value), ", "), "]");
  }
  return "null";
}

// Writes `lines` as the elements of a JSON array under `key`, one per line.
void AppendList(std::string& out, absl::string_view key, const std::vector<std::string>& lines,
                bool last = false) {
  absl::StrAppend(&out, "  \"", key, "\": [");
  if (!lines.empty()) {
    absl::StrAppend(&out, "\n    ", absl::StrJoin(lines, ",\n    "), "\n  ");
  }
  absl::StrAppend(&out, "]", last ? "\n" : ",\n");
}

// Collects the constants that go to the side file, each at an aligned offset.
class SideFile {
 public:
  explicit SideFile(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }
  bool empty() const { return bytes_.empty(); }

  int64_t Add(const Tensor& tensor) {
    int64_t align = json_internal::kSideFileAlignment;
    int64_t offset = (static_cast<int64_t>(bytes_.size()) + align - 1) / align * align;
    bytes_.resize(offset, 0);
    bytes_.insert(bytes_.end(), tensor.data(), tensor.data() + tensor.num_bytes());
    return offset;
  }

  // Written beside and renamed into place, so a reader never sees half a file.
  absl::Status Write(const std::string& dir) const {
    std::filesystem::path path = std::filesystem::path(dir) / name_;
    std::string temp = path.string() + ".tmp";
    {
      std::ofstream out(temp, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(bytes_.data()),
                static_cast<std::streamsize>(bytes_.size()));
      if (!out) {
        std::remove(temp.c_str());
        return absl::PermissionDeniedError(absl::StrCat("cannot write side data file ", temp));
      }
    }
    std::error_code ec;
    std::filesystem::rename(temp, path, ec);
    if (ec) {
      std::remove(temp.c_str());
      return absl::PermissionDeniedError(
          absl::StrCat("cannot rename ", temp, " to ", path.string(), ": ", ec.message()));
    }
    return absl::OkStatus();
  }

 private:
  std::string name_;
  std::vector<uint8_t> bytes_;
};

std::string ConstantJson(const Node& node, const JsonExportOptions& options, SideFile& side) {
  const Tensor& value = *node.value();
  std::string head = absl::StrCat("{\"name\": ", JsonString(node.name()), ", \"dtype\": \"",
                                  DTypeName(value.dtype()), "\", \"shape\": ",
                                  ShapeJson(value.shape()));
  if (!options.data_dir.empty() && value.num_bytes() > options.inline_limit_bytes) {
    int64_t offset = side.Add(value);
    return absl::StrCat(head, ", \"file\": ", JsonString(side.name()), ", \"offset\": ", offset,
                        "}");
  }
  std::string data;
  for (int64_t i = 0; i < value.num_elements(); ++i) {
    absl::StrAppend(&data, i == 0 ? "" : ", ", json_internal::FormatElement(value, i));
  }
  return absl::StrCat(head, ", \"data\": [", data, "]}");
}

std::string NodeJson(const Node& node) {
  std::vector<std::string> operands;
  for (const Node* operand : node.operands()) operands.push_back(JsonString(operand->name()));
  std::string out = absl::StrCat("{\"name\": ", JsonString(node.name()), ", \"op\": \"",
                                 OpName(node.op()), "\", \"inputs\": [",
                                 absl::StrJoin(operands, ", "), "]");
  if (!node.attrs().empty()) {
    std::vector<std::string> attrs;
    for (const auto& [key, value] : node.attrs().values()) {  // std::map: sorted
      attrs.push_back(absl::StrCat(JsonString(key), ": ", AttrJson(value)));
    }
    absl::StrAppend(&out, ", \"attrs\": {", absl::StrJoin(attrs, ", "), "}");
  }
  return out + "}";
}

}  // namespace

absl::StatusOr<std::string> ExportJsonGraph(const Graph& graph, const JsonExportOptions& options) {
  std::string stem = options.data_prefix.empty() ? graph.name() : options.data_prefix;
  if (!options.data_dir.empty() &&
      (stem.empty() || stem == "." || stem == ".." || stem.find_first_of("/\\") != std::string::npos)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data_prefix ", json_internal::Quote(stem), " must be a plain file name stem"));
  }
  SideFile side(stem + ".bin");

  std::vector<std::string> inputs, initializers, nodes, outputs;
  for (const Node* input : graph.inputs()) {
    inputs.push_back(absl::StrCat("{\"name\": ", JsonString(input->name()), ", \"dtype\": \"",
                                  DTypeName(input->dtype()), "\", \"shape\": ",
                                  ShapeJson(input->shape()), "}"));
  }
  for (const Node* node : graph.PostOrder()) {
    if (node->op() == OpKind::kConstant) {
      initializers.push_back(ConstantJson(*node, options, side));
    } else if (node->op() != OpKind::kInput) {
      nodes.push_back(NodeJson(*node));
    }
  }
  for (const Graph::Output& output : graph.outputs()) {
    outputs.push_back(output.name == output.node->name()
                          ? JsonString(output.name)
                          : absl::StrCat("{\"name\": ", JsonString(output.name),
                                         ", \"node\": ", JsonString(output.node->name()), "}"));
  }

  std::string out = absl::StrCat("{\n  \"kiln_graph\": ", json_internal::kFormatVersion,
                                 ",\n  \"name\": ", JsonString(graph.name()), ",\n");
  AppendList(out, "inputs", inputs);
  AppendList(out, "initializers", initializers);
  AppendList(out, "nodes", nodes);
  AppendList(out, "outputs", outputs, /*last=*/true);
  out += "}\n";

  if (!side.empty()) KILN_RETURN_IF_ERROR(side.Write(options.data_dir));
  return out;
}

}  // namespace kiln
