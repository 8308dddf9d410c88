// The JSON graph importer (docs/graph-format.md).
//
// Three stages, each failing with the source name and a place in front of the message:
//  1. Limits and syntax (json_internal::ParseDocument): the text size, the nesting depth,
//     then RapidJSON's iterative parser; errors are placed at line:column.
//  2. Structure: every object's fields are checked against the allowed set (typos are
//     errors, not silently ignored), every value against its expected JSON type; names are
//     declared once across inputs, initializers and nodes.
//  3. The graph: inputs and constants first, then nodes in dependency order (the file may
//     list them in any order; a cycle is reported with the names in it), each built with
//     Graph::AddNode, whose arity, attribute, shape and dtype errors get the node's path.
#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <queue>
#include <sstream>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/json/json_common.h"
#include "frontends/json/json_graph.h"
#include "frontends/json/json_tensor_data.h"
#include "ir/base/status.h"

namespace kiln {

using json_internal::Describe;
using json_internal::Field;
using json_internal::Index;
using json_internal::Invalid;
using json_internal::PathError;
using json_internal::Quote;
using rapidjson::Value;

namespace {

// The fields an object may have, in document order (unused slots are null).
struct FieldSpec {
  const char* name;
  bool required;
};
struct FieldSet {
  const char* what;  // "a node", for messages
  std::array<FieldSpec, 6> fields;
};
constexpr FieldSet kTopFields = {"the top level", {{{"kiln_graph", true}, {"name", false},
                                                    {"inputs", false}, {"initializers", false},
                                                    {"nodes", false}, {"outputs", true}}}};
constexpr FieldSet kInputFields = {"an input", {{{"name", true}, {"dtype", true}, {"shape", true}}}};
constexpr FieldSet kInitializerFields = {"an initializer", {{{"name", true}, {"dtype", true},
                                                             {"shape", true}, {"data", false},
                                                             {"file", false}, {"offset", false}}}};
constexpr FieldSet kNodeFields = {"a node", {{{"name", true}, {"op", true}, {"inputs", false},
                                              {"attrs", false}}}};
constexpr FieldSet kOutputFields = {"an output object", {{{"name", true}, {"node", true}}}};

absl::Status CheckFields(const Value& object, const std::string& path, const FieldSet& set) {
  std::vector<absl::string_view> seen;
  for (auto it = object.MemberBegin(); it != object.MemberEnd(); ++it) {
    absl::string_view key(it->name.GetString(), it->name.GetStringLength());
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return Invalid(Field(path, key), "field appears twice in the same object");
    }
    seen.push_back(key);
    bool known = false;
    std::vector<std::string> allowed;
    for (const FieldSpec& field : set.fields) {
      if (field.name == nullptr) continue;
      known = known || key == field.name;
      allowed.push_back(field.name);
    }
    if (!known) {
      return Invalid(Field(path, key), absl::StrCat("unknown field ", Quote(key), " in ", set.what,
                                                    "; allowed fields: ",
                                                    absl::StrJoin(allowed, ", ")));
    }
  }
  for (const FieldSpec& field : set.fields) {
    if (field.name != nullptr && field.required && !object.HasMember(field.name)) {
      return Invalid(path, absl::StrCat("missing required field \"", field.name, "\" in ",
                                        set.what));
    }
  }
  return absl::OkStatus();
}

absl::Status ExpectObject(const Value& v, const std::string& path, absl::string_view what) {
  if (v.IsObject()) return absl::OkStatus();
  return Invalid(path, absl::StrCat("expected an object (", what, "), got ", Describe(v)));
}

absl::Status ExpectArray(const Value& v, const std::string& path, absl::string_view what) {
  if (v.IsArray()) return absl::OkStatus();
  return Invalid(path, absl::StrCat("expected an array (", what, "), got ", Describe(v)));
}

absl::StatusOr<std::string> GetString(const Value& v, const std::string& path,
                                      absl::string_view what) {
  if (!v.IsString()) {
    return Invalid(path, absl::StrCat("expected a string (", what, "), got ", Describe(v)));
  }
  return std::string(v.GetString(), v.GetStringLength());
}

absl::StatusOr<std::string> GetName(const Value& v, const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string name, GetString(v, path, "a name"));
  if (!IsValidName(name)) {
    return Invalid(path, absl::StrCat("invalid name ", Quote(name), ": names start with a letter "
                                      "or _ and hold letters, digits, _ and ."));
  }
  return name;
}

absl::StatusOr<DType> GetDType(const Value& v, const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string text, GetString(v, path, "a dtype such as \"f32\""));
  auto dtype = ParseDType(text);
  if (!dtype.ok()) return Invalid(path, dtype.status().message());
  return *dtype;
}

absl::StatusOr<Shape> GetShape(const Value& v, const std::string& path) {
  KILN_RETURN_IF_ERROR(ExpectArray(v, path, "a shape: an array of dimensions, [] for a scalar"));
  Shape shape;
  for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
    if (!v[i].IsInt64() || v[i].GetInt64() < 0) {
      return Invalid(Index(path, i), absl::StrCat("expected a dimension (an integer >= 0), got ",
                                                  Describe(v[i]), v[i].IsInt64() ? " (negative)" : ""));
    }
    shape.push_back(v[i].GetInt64());
  }
  return shape;
}

// One attribute, read as the schema's type so the message can say exactly what was wanted.
absl::StatusOr<AttrValue> GetAttr(const Value& v, OpKind op, const AttrSpec& spec,
                                  const std::string& path) {
  auto wrong = [&](absl::string_view expected) {
    const char* article = spec.type == AttrType::kInt || spec.type == AttrType::kInts ? "an " : "a ";
    return Invalid(path, absl::StrCat(OpName(op), " attribute \"", spec.name, "\" must be ",
                                      article, AttrTypeName(spec.type), " (", expected, "), got ",
                                      Describe(v)));
  };
  switch (spec.type) {
    case AttrType::kBool:
      if (v.IsBool()) return AttrValue(v.GetBool());
      return wrong("true or false");
    case AttrType::kInt:
      if (v.IsInt64()) return AttrValue(v.GetInt64());
      return wrong("an integer");
    case AttrType::kFloat:
      if (v.IsNumber()) return AttrValue(v.GetDouble());
      if (v.IsString()) {
        absl::string_view s(v.GetString(), v.GetStringLength());
        if (s == "nan") return AttrValue(std::nan(""));
        if (s == "inf") return AttrValue(HUGE_VAL);
        if (s == "-inf") return AttrValue(-HUGE_VAL);
      }
      return wrong("a number, or \"nan\", \"inf\", \"-inf\"");
    case AttrType::kString:
      if (v.IsString()) return AttrValue(std::string(v.GetString(), v.GetStringLength()));
      return wrong("a string");
    case AttrType::kInts: {
      if (!v.IsArray()) return wrong("an array of integers");
      std::vector<int64_t> ints;
      for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
        if (!v[i].IsInt64()) {
          return Invalid(Index(path, i), absl::StrCat(OpName(op), " attribute \"", spec.name,
                                                      "\" must be an int list; element ", i,
                                                      " is ", Describe(v[i])));
        }
        ints.push_back(v[i].GetInt64());
      }
      return AttrValue(std::move(ints));
    }
  }
  return wrong("?");
}

absl::StatusOr<Attributes> GetAttrs(const Value& v, OpKind op, const std::string& path) {
  KILN_RETURN_IF_ERROR(ExpectObject(v, path, "attributes by name"));
  const std::vector<AttrSpec>& specs = AttrSpecsFor(op);
  Attributes attrs;
  for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
    std::string key(it->name.GetString(), it->name.GetStringLength());
    std::string at = Field(path, key);
    if (attrs.Has(key)) return Invalid(at, "attribute appears twice");
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&](const AttrSpec& s) { return key == s.name; });
    if (spec == specs.end()) {
      std::vector<std::string> names;
      for (const AttrSpec& s : specs) names.push_back(s.name);
      return Invalid(at, absl::StrCat("unknown attribute ", Quote(key), ": ", OpName(op),
                                      names.empty() ? " takes no attributes"
                                                    : absl::StrCat(" accepts ",
                                                                   absl::StrJoin(names, ", "))));
    }
    KILN_ASSIGN_OR_RETURN(AttrValue value, GetAttr(it->value, op, *spec, at));
    attrs.Set(key, std::move(value));
  }
  // Missing required attributes (and defaults): the IR's own check, placed here.
  absl::Status status = CheckAttributes(op, attrs);
  if (!status.ok()) return Invalid(path, status.message());
  return attrs;
}

// One entry of "nodes", read but not yet built.
struct NodeSpec {
  std::string path;
  std::string name;
  OpKind op;
  std::vector<std::string> operands;
  std::vector<int> operand_nodes;  // index into the node list, -1 for inputs/initializers
  Attributes attrs;
};

class Importer {
 public:
  explicit Importer(std::string base_dir) : base_dir_(std::move(base_dir)) {}

  absl::StatusOr<std::unique_ptr<Graph>> Run(const Value& root) {
    if (!root.IsObject()) {
      return Invalid("", absl::StrCat("expected an object (a kiln graph: {\"kiln_graph\": ",
                                      json_internal::kFormatVersion, ", ...}), got ",
                                      Describe(root)));
    }
    KILN_RETURN_IF_ERROR(CheckVersion(root));
    KILN_RETURN_IF_ERROR(CheckFields(root, "", kTopFields));
    std::string name = "graph";
    if (root.HasMember("name")) {
      // Any non-empty string: the graph's name is a label, never referenced.
      KILN_ASSIGN_OR_RETURN(name, GetString(root["name"], "name", "the graph's name"));
      if (name.empty()) return Invalid("name", "the graph's name must not be empty");
    }
    graph_ = std::make_unique<Graph>(name);
    KILN_RETURN_IF_ERROR(ForEach(root, "inputs", "graph inputs",
                                 [&](const Value& v, const std::string& p) { return ReadInput(v, p); }));
    KILN_RETURN_IF_ERROR(ForEach(root, "initializers", "constants",
                                 [&](const Value& v, const std::string& p) { return ReadInitializer(v, p); }));
    KILN_RETURN_IF_ERROR(ForEach(root, "nodes", "nodes",
                                 [&](const Value& v, const std::string& p) { return ReadNode(v, p); }));
    KILN_RETURN_IF_ERROR(BuildNodes());
    KILN_RETURN_IF_ERROR(ForEach(root, "outputs", "output names",
                                 [&](const Value& v, const std::string& p) { return ReadOutput(v, p); }));
    return std::move(graph_);
  }

 private:
  absl::Status CheckVersion(const Value& root) {
    auto it = root.FindMember("kiln_graph");
    if (it == root.MemberEnd()) {
      return Invalid("", absl::StrCat("missing required field \"kiln_graph\" (the format version, ",
                                      json_internal::kFormatVersion, "); is this a kiln graph?"));
    }
    const Value& v = it->value;
    if (!v.IsInt64()) {
      return Invalid("kiln_graph", absl::StrCat("expected the format version, the integer ",
                                                json_internal::kFormatVersion, ", got ", Describe(v)));
    }
    if (v.GetInt64() != json_internal::kFormatVersion) {
      return PathError(absl::StatusCode::kUnimplemented, "kiln_graph",
                       absl::StrCat("unsupported format version ", v.GetInt64(),
                                    "; this build reads version ", json_internal::kFormatVersion));
    }
    return absl::OkStatus();
  }

  absl::Status ForEach(const Value& root, const char* key, absl::string_view what,
                       const std::function<absl::Status(const Value&, const std::string&)>& fn) {
    auto it = root.FindMember(key);
    if (it == root.MemberEnd()) return absl::OkStatus();
    KILN_RETURN_IF_ERROR(ExpectArray(it->value, key, what));
    for (rapidjson::SizeType i = 0; i < it->value.Size(); ++i) {
      KILN_RETURN_IF_ERROR(fn(it->value[i], Index(key, i)));
    }
    return absl::OkStatus();
  }

  // Records where `name` is defined; names are one namespace across all three lists.
  absl::Status Declare(const std::string& name, const std::string& path) {
    auto [it, inserted] = defined_at_.emplace(name, path);
    if (!inserted) {
      return Invalid(Field(path, "name"), absl::StrCat("duplicate name ", Quote(name),
                                                       "; first defined at ", it->second));
    }
    return absl::OkStatus();
  }

  absl::Status UnknownName(const std::string& name, const std::string& path) {
    std::vector<std::string> known;
    for (const auto& entry : defined_at_) known.push_back(entry.first);
    std::vector<std::string> close = json_internal::CloseNames(name, known);
    for (std::string& c : close) c = Quote(c);
    return Invalid(path, absl::StrCat("unknown name ", Quote(name),
                                      close.empty() ? ": no input, initializer or node has it"
                                                    : absl::StrCat("; did you mean ",
                                                                   absl::StrJoin(close, ", "), "?")));
  }

  absl::Status ReadInput(const Value& v, const std::string& path) {
    KILN_RETURN_IF_ERROR(ExpectObject(v, path, "an input: {\"name\", \"dtype\", \"shape\"}"));
    KILN_RETURN_IF_ERROR(CheckFields(v, path, kInputFields));
    KILN_ASSIGN_OR_RETURN(std::string name, GetName(v["name"], Field(path, "name")));
    KILN_ASSIGN_OR_RETURN(DType dtype, GetDType(v["dtype"], Field(path, "dtype")));
    KILN_ASSIGN_OR_RETURN(Shape shape, GetShape(v["shape"], Field(path, "shape")));
    KILN_RETURN_IF_ERROR(json_internal::CheckedNumElements(shape, dtype, Field(path, "shape")).status());
    KILN_RETURN_IF_ERROR(Declare(name, path));
    auto node = graph_->AddInput(name, dtype, shape);
    if (!node.ok()) return Invalid(path, node.status().message());
    return absl::OkStatus();
  }

  absl::Status ReadInitializer(const Value& v, const std::string& path) {
    KILN_RETURN_IF_ERROR(ExpectObject(v, path, "an initializer: {\"name\", \"dtype\", \"shape\", "
                                               "\"data\" or \"file\"}"));
    KILN_RETURN_IF_ERROR(CheckFields(v, path, kInitializerFields));
    KILN_ASSIGN_OR_RETURN(std::string name, GetName(v["name"], Field(path, "name")));
    KILN_ASSIGN_OR_RETURN(DType dtype, GetDType(v["dtype"], Field(path, "dtype")));
    KILN_ASSIGN_OR_RETURN(Shape shape, GetShape(v["shape"], Field(path, "shape")));
    KILN_RETURN_IF_ERROR(Declare(name, path));
    bool has_data = v.HasMember("data"), has_file = v.HasMember("file");
    if (has_data == has_file) {
      return Invalid(path, has_data ? "give either \"data\" or \"file\", not both"
                                    : "missing the values: give \"data\" (inline, row-major) or "
                                      "\"file\" (a side data file)");
    }
    if (has_data && v.HasMember("offset")) {
      return Invalid(Field(path, "offset"), "\"offset\" goes with \"file\", not \"data\"");
    }
    Tensor tensor;
    if (has_data) {
      KILN_ASSIGN_OR_RETURN(tensor, json_internal::ReadInlineData(v["data"], dtype, shape,
                                                                  Field(path, "data")));
    } else {
      std::string file_path = Field(path, "file");
      KILN_ASSIGN_OR_RETURN(std::string file, GetString(v["file"], file_path,
                                                        "a path relative to the graph's folder"));
      int64_t offset = 0;
      if (v.HasMember("offset")) {
        const Value& o = v["offset"];
        if (!o.IsInt64() || o.GetInt64() < 0) {
          return Invalid(Field(path, "offset"),
                         absl::StrCat("expected a byte offset (an integer >= 0), got ", Describe(o)));
        }
        offset = o.GetInt64();
      }
      KILN_ASSIGN_OR_RETURN(tensor, json_internal::ReadSideFile(base_dir_, file, offset, dtype,
                                                                shape, file_path));
    }
    auto node = graph_->AddConstant(name, std::move(tensor));
    if (!node.ok()) return Invalid(path, node.status().message());
    return absl::OkStatus();
  }

  absl::Status ReadNode(const Value& v, const std::string& path) {
    KILN_RETURN_IF_ERROR(ExpectObject(v, path, "a node: {\"name\", \"op\", \"inputs\", \"attrs\"}"));
    KILN_RETURN_IF_ERROR(CheckFields(v, path, kNodeFields));
    NodeSpec spec;
    spec.path = path;
    KILN_ASSIGN_OR_RETURN(spec.name, GetName(v["name"], Field(path, "name")));
    std::string op_path = Field(path, "op");
    KILN_ASSIGN_OR_RETURN(std::string op_name, GetString(v["op"], op_path, "an op name"));
    auto op = ParseOpKind(op_name);
    if (!op.ok()) return Invalid(op_path, op.status().message());
    spec.op = *op;
    if (*op == OpKind::kInput || *op == OpKind::kConstant) {
      return Invalid(op_path, absl::StrCat(Quote(op_name), " is not a node op: declare ",
                                           *op == OpKind::kInput ? "graph inputs under \"inputs\""
                                                                 : "constants under \"initializers\""));
    }
    KILN_RETURN_IF_ERROR(Declare(spec.name, path));
    if (v.HasMember("inputs")) {
      std::string inputs_path = Field(path, "inputs");
      const Value& inputs = v["inputs"];
      KILN_RETURN_IF_ERROR(ExpectArray(inputs, inputs_path, "operand names"));
      for (rapidjson::SizeType i = 0; i < inputs.Size(); ++i) {
        KILN_ASSIGN_OR_RETURN(std::string operand,
                              GetString(inputs[i], Index(inputs_path, i), "an operand name"));
        spec.operands.push_back(std::move(operand));
      }
    }
    const OpInfo& info = GetOpInfo(spec.op);
    int n = static_cast<int>(spec.operands.size());
    if (n < info.min_arity || (info.max_arity >= 0 && n > info.max_arity)) {
      std::string expected = info.min_arity == info.max_arity ? absl::StrCat(info.min_arity)
                             : info.max_arity < 0 ? absl::StrCat("at least ", info.min_arity)
                                                  : absl::StrCat(info.min_arity, " to ", info.max_arity);
      return Invalid(Field(path, "inputs"), absl::StrCat(info.name, " takes ", expected,
                                                         " operands, got ", n));
    }
    static const Value kNoAttrs(rapidjson::kObjectType);
    KILN_ASSIGN_OR_RETURN(spec.attrs, GetAttrs(v.HasMember("attrs") ? v["attrs"] : kNoAttrs,
                                               spec.op, Field(path, "attrs")));
    node_index_[spec.name] = static_cast<int>(nodes_.size());
    nodes_.push_back(std::move(spec));
    return absl::OkStatus();
  }

  // Resolves operand names, orders the nodes operands-first (file order among the ready
  // ones, so a file already in order is built in its own order) and builds them.
  absl::Status BuildNodes() {
    int n = static_cast<int>(nodes_.size());
    std::vector<int> pending(n, 0);
    std::vector<std::vector<int>> users(n);
    for (int i = 0; i < n; ++i) {
      NodeSpec& spec = nodes_[i];
      for (size_t k = 0; k < spec.operands.size(); ++k) {
        const std::string& operand = spec.operands[k];
        if (!defined_at_.contains(operand)) {
          return UnknownName(operand, Index(Field(spec.path, "inputs"), k));
        }
        auto it = node_index_.find(operand);
        int index = it == node_index_.end() ? -1 : it->second;
        spec.operand_nodes.push_back(index);
        if (index >= 0) {
          ++pending[i];
          users[index].push_back(i);
        }
      }
    }
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (int i = 0; i < n; ++i) {
      if (pending[i] == 0) ready.push(i);
    }
    int built = 0;
    while (!ready.empty()) {
      int i = ready.top();
      ready.pop();
      KILN_RETURN_IF_ERROR(BuildNode(nodes_[i]));
      ++built;
      for (int user : users[i]) {
        if (--pending[user] == 0) ready.push(user);
      }
    }
    if (built < n) return CycleError(pending);
    return absl::OkStatus();
  }

  absl::Status BuildNode(const NodeSpec& spec) {
    std::vector<Node*> operands;
    for (const std::string& operand : spec.operands) operands.push_back(graph_->FindNode(operand));
    auto node = graph_->AddNode(spec.op, std::move(operands), spec.attrs, spec.name);
    if (!node.ok()) {
      return Invalid(spec.path, absl::StrCat("node ", Quote(spec.name), ": ", node.status().message()));
    }
    // A shape from attributes (reshape, broadcast_to, iota) may be too large to count.
    return json_internal::CheckedNumElements((*node)->shape(), (*node)->dtype(), spec.path).status();
  }

  // Every node left unbuilt waits on another unbuilt node, so following the first such
  // operand from any of them must come back around: that loop is the cycle.
  absl::Status CycleError(const std::vector<int>& pending) {
    int start = static_cast<int>(std::find_if(pending.begin(), pending.end(),
                                              [](int p) { return p > 0; }) - pending.begin());
    std::vector<int> walk;
    absl::flat_hash_map<int, size_t> position;
    int current = start;
    while (!position.contains(current)) {
      position[current] = walk.size();
      walk.push_back(current);
      for (int operand : nodes_[current].operand_nodes) {
        if (operand >= 0 && pending[operand] > 0) {
          current = operand;
          break;
        }
      }
    }
    std::vector<int> cycle(walk.begin() + position[current], walk.end());
    std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
    std::vector<std::string> names;
    for (int i : cycle) names.push_back(Quote(nodes_[i].name));
    names.push_back(Quote(nodes_[cycle[0]].name));
    return Invalid(nodes_[cycle[0]].path,
                   absl::StrCat("the nodes form a cycle: ", absl::StrJoin(names, " -> "),
                                " (each uses the next as an operand)"));
  }

  absl::Status ReadOutput(const Value& v, const std::string& path) {
    std::string name, node_name, node_path;
    if (v.IsString()) {
      node_path = path;
      KILN_ASSIGN_OR_RETURN(node_name, GetString(v, path, "a node name"));
      name = node_name;
    } else if (v.IsObject()) {
      KILN_RETURN_IF_ERROR(CheckFields(v, path, kOutputFields));
      KILN_ASSIGN_OR_RETURN(name, GetName(v["name"], Field(path, "name")));
      node_path = Field(path, "node");
      KILN_ASSIGN_OR_RETURN(node_name, GetString(v["node"], node_path, "a node name"));
    } else {
      return Invalid(path, absl::StrCat("expected a node name or {\"name\": output name, \"node\": "
                                        "node name}, got ", Describe(v)));
    }
    Node* node = graph_->FindNode(node_name);
    if (node == nullptr) return UnknownName(node_name, node_path);
    auto [it, inserted] = output_at_.emplace(name, path);
    if (!inserted) {
      return Invalid(path, absl::StrCat("duplicate output name ", Quote(name), "; first defined at ",
                                        it->second));
    }
    absl::Status status = graph_->AddOutput(node, name);
    if (!status.ok()) return Invalid(path, status.message());
    return absl::OkStatus();
  }

  std::string base_dir_;
  std::unique_ptr<Graph> graph_;
  absl::flat_hash_map<std::string, std::string> defined_at_;  // name -> its JSON path
  absl::flat_hash_map<std::string, int> node_index_;          // node name -> index in nodes_
  absl::flat_hash_map<std::string, std::string> output_at_;   // output name -> its JSON path
  std::vector<NodeSpec> nodes_;
};

absl::Status WithSource(const absl::Status& status, absl::string_view source) {
  return absl::Status(status.code(), absl::StrCat(source, ": ", status.message()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Graph>> ImportJsonGraph(const std::string& json_text,
                                                       const std::string& base_dir,
                                                       const std::string& source_name) {
  rapidjson::Document doc;
  KILN_RETURN_IF_ERROR(json_internal::ParseDocument(json_text, source_name, doc));
  auto graph = Importer(base_dir).Run(doc);
  if (!graph.ok()) return WithSource(graph.status(), source_name);
  return graph;
}

absl::StatusOr<Attributes> ImportJsonAttributes(const std::string& json_text, OpKind op,
                                                const std::string& source_name) {
  rapidjson::Document doc;
  KILN_RETURN_IF_ERROR(json_internal::ParseDocument(json_text.empty() ? "{}" : json_text, source_name, doc));
  auto attrs = GetAttrs(doc, op, "attrs");
  if (!attrs.ok()) return WithSource(attrs.status(), source_name);
  return attrs;
}

absl::StatusOr<std::unique_ptr<Graph>> ImportJsonGraphFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    bool exists = std::filesystem::exists(path, ec);
    return absl::Status(exists ? absl::StatusCode::kPermissionDenied : absl::StatusCode::kNotFound,
                        absl::StrCat(path, ": ", exists ? "cannot open the file" : "no such file"));
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not a graph file"));
  }
  auto size = std::filesystem::file_size(path, ec);
  if (!ec && static_cast<int64_t>(size) > json_internal::kMaxJsonBytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        path, ": the file has ", size, " bytes, over the limit of ", json_internal::kMaxJsonBytes,
        "; put large constants in side data files"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read error"));
  std::string dir = std::filesystem::path(path).parent_path().string();
  return ImportJsonGraph(text.str(), dir.empty() ? "." : dir, path);
}

}  // namespace kiln
