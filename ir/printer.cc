// PrintGraph: the canonical text form (format in ir/printer.h). One line per node, nodes in
// Graph::PostOrder() (graph inputs appear only in the header, in inputs() order), attributes
// through Attributes::ToString(), constant data in its own dtype with the shortest digits
// that read back to the same bits (a large constant: its bytes in base64). The output is a
// pure function of the graph, so it can be hashed into cache keys and compared in tests;
// ParseGraph (ir/parser.cc) reads it back.
#include "ir/printer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/dtype.h"
#include "ir/tensor.h"

namespace kiln {
namespace {

// An integral value below 1e15 in full ("65504", not "6.55e+04"); otherwise the shortest %g
// text t (at most `max_digits` significant digits) with read_back(t) true.
template <typename ReadBack>
std::string ShortestFloat(double value, int max_digits, ReadBack read_back) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[64];
  if (std::floor(value) == value && std::fabs(value) < 1e15) {  // integral: all digits, exact
    std::snprintf(buf, sizeof(buf), "%.0f", value);
    return buf;
  }
  for (int digits = 1; digits <= max_digits; ++digits) {
    std::snprintf(buf, sizeof(buf), "%.*g", digits, value);
    if (read_back(buf)) return buf;
  }
  std::snprintf(buf, sizeof(buf), "%.*g", max_digits, value);
  return buf;
}

// Element i of a constant, as the parser reads it back bit for bit.
std::string ElementToString(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kF32: {
      float v = t.data_as<float>()[i];
      return ShortestFloat(v, 9, [v](const char* s) { return std::strtof(s, nullptr) == v; });
    }
    case DType::kF16: {
      uint16_t bits = t.data_as<uint16_t>()[i];
      return ShortestFloat(HalfBitsToFloat(bits), 9, [bits](const char* s) {
        return FloatToHalfBits(std::strtof(s, nullptr)) == bits;
      });
    }
    case DType::kBF16: {
      uint16_t bits = t.data_as<uint16_t>()[i];
      return ShortestFloat(BF16BitsToFloat(bits), 9, [bits](const char* s) {
        return FloatToBF16Bits(std::strtof(s, nullptr)) == bits;
      });
    }
    case DType::kI32: return absl::StrCat(t.data_as<int32_t>()[i]);
    case DType::kI64: return absl::StrCat(t.data_as<int64_t>()[i]);
    case DType::kBool: return t.data_as<uint8_t>()[i] ? "1" : "0";
  }
  return "?";
}

std::string TypeToString(const Node& node) {
  return absl::StrCat(DTypeName(node.dtype()), ShapeToString(node.shape()));
}

std::string AttrsToString(const Node& node) {
  if (node.op() != OpKind::kConstant || node.value() == nullptr) return node.attrs().ToString();
  const Tensor& value = *node.value();
  std::string out;
  if (value.num_elements() > kListedElements) {
    out = absl::StrCat("{data = \"", absl::Base64Escape(absl::string_view(
                                          reinterpret_cast<const char*>(value.data()), value.num_bytes())), "\"");
  } else {
    std::vector<std::string> items;
    items.reserve(value.num_elements());
    for (int64_t i = 0; i < value.num_elements(); ++i) items.push_back(ElementToString(value, i));
    out = absl::StrCat("{data = [", absl::StrJoin(items, ", "), "]");
  }
  for (const auto& [key, attr] : node.attrs().values()) {
    absl::StrAppend(&out, ", ", key, " = ", AttrValueToString(attr));
  }
  return absl::StrCat(out, "}");
}

}  // namespace

std::string PrintGraph(const Graph& graph) {
  std::vector<std::string> params;
  for (const Node* input : graph.inputs()) {
    params.push_back(absl::StrCat(input->name(), ": ", TypeToString(*input)));
  }
  // A name the parser cannot read as an identifier is quoted.
  std::string name = IsValidName(graph.name()) ? graph.name()
                                               : absl::StrCat("\"", absl::CEscape(graph.name()), "\"");
  std::string out = absl::StrCat("graph ", name, "(", absl::StrJoin(params, ", "), ") {\n");
  for (const Node* node : graph.PostOrder()) {
    if (node->op() == OpKind::kInput) continue;
    std::vector<std::string> operands;
    for (const Node* operand : node->operands()) operands.push_back(operand->name());
    std::string attrs = AttrsToString(*node);
    absl::StrAppend(&out, "  ", node->name(), ": ", TypeToString(*node), " = ", OpName(node->op()),
                    "(", absl::StrJoin(operands, ", "), ")", attrs.empty() ? "" : " ", attrs, "\n");
  }
  std::vector<std::string> results;
  for (const Graph::Output& output : graph.outputs()) {
    results.push_back(output.name == output.node->name()
                          ? output.name
                          : absl::StrCat(output.node->name(), " as ", output.name));
  }
  absl::StrAppend(&out, "  return", results.empty() ? "" : " ", absl::StrJoin(results, ", "),
                  "\n}\n");
  return out;
}

}  // namespace kiln
