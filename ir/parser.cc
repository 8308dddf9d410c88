// ParseGraph: reads the text form of ir/printer.h back into a Graph. Three small stages:
// a lexer (tokens with line:column), a recursive-descent parser into a plain syntax tree,
// and a builder that creates nodes through the Graph API, so every check the builder API
// makes (arity, attributes, shape inference) applies to text too. Every error starts with
// "line L:C: " and names what is wrong at that place; errors from Graph::AddNode are prefixed
// with the node's line and name. A result type written in the text must equal the inferred
// one (it may be left out, `t = add(x, y)`, except on constants, whose type gives the data's
// dtype and shape).
#include "ir/parser.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "ir/base/status.h"
#include "ir/dtype.h"
#include "ir/tensor.h"

namespace kiln {
namespace {

struct Pos {
  int line = 1;
  int col = 1;
};

absl::Status ErrorAt(Pos pos, absl::string_view message,
                     absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  return absl::Status(code, absl::StrCat("line ", pos.line, ":", pos.col, ": ", message));
}

// ---------------------------------------------------------------------------------------
// Lexer.

enum class TokenKind { kIdent, kNumber, kString, kPunct, kEnd };

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;  // a string token without its quotes; "-inf"/"-nan" are identifiers
  Pos pos;
};

std::string Describe(const Token& token) {
  if (token.kind == TokenKind::kEnd) return "end of input";
  if (token.kind == TokenKind::kString) return absl::StrCat("\"", token.text, "\"");
  return absl::StrCat("'", token.text, "'");
}

bool IsIdentHead(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) {
  return IsIdentHead(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '.';
}
bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

absl::StatusOr<std::vector<Token>> Lex(absl::string_view text) {
  std::vector<Token> tokens;
  size_t i = 0;
  Pos pos;
  auto advance = [&](size_t n) {
    for (size_t k = 0; k < n && i < text.size(); ++k, ++i) {
      if (text[i] == '\n') {
        ++pos.line;
        pos.col = 1;
      } else {
        ++pos.col;
      }
    }
  };
  while (i < text.size()) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      advance(1);
      continue;
    }
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') advance(1);
      continue;
    }
    Token token;
    token.pos = pos;
    size_t start = i, end = i;
    if (IsIdentHead(c)) {
      while (end < text.size() && IsIdentChar(text[end])) ++end;
      token.kind = TokenKind::kIdent;
    } else if (IsDigit(c) || ((c == '-' || c == '.') && end + 1 < text.size() &&
                              (IsDigit(text[end + 1]) || text[end + 1] == '.'))) {
      if (c == '-') ++end;
      while (end < text.size() && (IsDigit(text[end]) || text[end] == '.')) ++end;
      if (end < text.size() && (text[end] == 'e' || text[end] == 'E')) {
        ++end;
        if (end < text.size() && (text[end] == '+' || text[end] == '-')) ++end;
        while (end < text.size() && IsDigit(text[end])) ++end;
      }
      if (end < text.size() && IsIdentChar(text[end])) {
        return ErrorAt(pos, absl::StrCat("malformed number '", text.substr(start, end + 1 - start),
                                         "'"));
      }
      token.kind = TokenKind::kNumber;
    } else if (c == '"') {
      end = i + 1;
      while (end < text.size() && text[end] != '"' && text[end] != '\n') end += text[end] == '\\' ? 2 : 1;
      if (end >= text.size() || text[end] != '"') return ErrorAt(pos, "unterminated string");
      token.kind = TokenKind::kString;
      std::string error;  // C escapes, as the printer writes them (absl::CEscape)
      if (!absl::CUnescape(text.substr(i + 1, end - i - 1), &token.text, &error)) {
        return ErrorAt(pos, absl::StrCat("bad escape in string: ", error));
      }
      ++end;
    } else if (std::string("(){}[],:=-").find(c) != std::string::npos) {
      end = i + 1;
      token.kind = TokenKind::kPunct;
    } else {
      return ErrorAt(pos, absl::StrCat("unexpected character '", std::string(1, c), "'"));
    }
    if (token.kind != TokenKind::kString) token.text = std::string(text.substr(start, end - start));
    advance(end - start);
    tokens.push_back(std::move(token));
  }
  Token end_token;
  end_token.pos = pos;
  tokens.push_back(end_token);
  return tokens;
}

// ---------------------------------------------------------------------------------------
// Syntax tree and parser.

// An attribute value as written: one scalar token, or a bracketed list of them.
struct RawValue {
  Pos pos;
  bool is_list = false;
  std::vector<Token> items;  // the scalar, or the list's elements
};

struct ParsedType {
  DType dtype = DType::kF32;
  Shape shape;
};

struct ParsedNode {
  Token name;
  std::optional<ParsedType> type;
  Token op;
  std::vector<Token> operands;
  std::vector<std::pair<Token, RawValue>> attrs;
};

struct ParsedOutput {
  Token node;
  std::optional<Token> alias;
};

struct ParsedGraph {
  std::string name;
  std::vector<std::pair<Token, ParsedType>> inputs;
  std::vector<ParsedNode> nodes;
  std::vector<ParsedOutput> outputs;
};

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  absl::StatusOr<ParsedGraph> Parse() {
    ParsedGraph g;
    const Token& keyword = Next();
    if (keyword.kind != TokenKind::kIdent || keyword.text != "graph") {
      return ErrorAt(keyword.pos, absl::StrCat("expected 'graph' but got ", Describe(keyword)));
    }
    const Token& name = Next();
    if (name.kind != TokenKind::kIdent && name.kind != TokenKind::kString) {
      return ErrorAt(name.pos, absl::StrCat("expected the graph's name but got ", Describe(name)));
    }
    g.name = name.text;
    KILN_RETURN_IF_ERROR(Expect("("));
    if (!IsPunct(Peek(), ")")) {
      while (true) {
        KILN_ASSIGN_OR_RETURN(Token input, ExpectIdent("an input name"));
        KILN_RETURN_IF_ERROR(Expect(":"));
        KILN_ASSIGN_OR_RETURN(ParsedType type, ParseType());
        g.inputs.push_back({std::move(input), std::move(type)});
        if (!IsPunct(Peek(), ",")) break;
        Next();
      }
    }
    KILN_RETURN_IF_ERROR(Expect(")"));
    KILN_RETURN_IF_ERROR(Expect("{"));
    while (true) {
      const Token& head = Peek();
      if (head.kind == TokenKind::kIdent && head.text == "return" && !IsPunct(Peek(1), ":") &&
          !IsPunct(Peek(1), "=")) {
        break;
      }
      if (IsPunct(head, "}") || head.kind == TokenKind::kEnd) {
        return ErrorAt(head.pos, "expected 'return' listing the graph's outputs before the end "
                                 "of the graph");
      }
      KILN_ASSIGN_OR_RETURN(ParsedNode node, ParseNode());
      g.nodes.push_back(std::move(node));
    }
    Next();  // return
    if (!IsPunct(Peek(), "}")) {
      while (true) {
        ParsedOutput output;
        KILN_ASSIGN_OR_RETURN(output.node, ExpectIdent("an output's node name"));
        if (Peek().kind == TokenKind::kIdent && Peek().text == "as") {
          Next();
          KILN_ASSIGN_OR_RETURN(output.alias, ExpectIdent("an output name after 'as'"));
        }
        g.outputs.push_back(std::move(output));
        if (!IsPunct(Peek(), ",")) break;
        Next();
      }
    }
    KILN_RETURN_IF_ERROR(Expect("}", " after the return list"));
    if (Peek().kind != TokenKind::kEnd) {
      return ErrorAt(Peek().pos, absl::StrCat("unexpected ", Describe(Peek()),
                                              " after the end of the graph"));
    }
    return g;
  }

 private:
  const Token& Peek(int ahead = 0) const {
    size_t i = std::min(index_ + ahead, tokens_.size() - 1);
    return tokens_[i];
  }
  const Token& Next() {
    const Token& token = tokens_[index_];
    if (index_ + 1 < tokens_.size()) ++index_;
    return token;
  }
  static bool IsPunct(const Token& token, absl::string_view p) {
    return token.kind == TokenKind::kPunct && token.text == p;
  }
  absl::Status Expect(absl::string_view p, absl::string_view context = "") {
    const Token& token = Next();
    if (IsPunct(token, p)) return absl::OkStatus();
    return ErrorAt(token.pos, absl::StrCat("expected '", p, "'", context, " but got ", Describe(token)));
  }
  absl::StatusOr<Token> ExpectIdent(absl::string_view what) {
    const Token& token = Next();
    if (token.kind == TokenKind::kIdent) return token;
    return ErrorAt(token.pos, absl::StrCat("expected ", what, " but got ", Describe(token)));
  }

  // dtype[d0,d1,...]
  absl::StatusOr<ParsedType> ParseType() {
    ParsedType type;
    KILN_ASSIGN_OR_RETURN(Token dtype, ExpectIdent("a dtype (f32, f16, bf16, i32, i64, bool)"));
    auto parsed = ParseDType(dtype.text);
    if (!parsed.ok()) return ErrorAt(dtype.pos, parsed.status().message());
    type.dtype = *parsed;
    KILN_RETURN_IF_ERROR(Expect("[", " after the dtype (a scalar is written f32[])"));
    if (!IsPunct(Peek(), "]")) {
      while (true) {
        const Token& dim = Next();
        int64_t d = -1;
        if (dim.kind != TokenKind::kNumber || !absl::SimpleAtoi(dim.text, &d) || d < 0) {
          return ErrorAt(dim.pos, absl::StrCat("expected a dimension (an integer >= 0) but got ",
                                               Describe(dim)));
        }
        type.shape.push_back(d);
        if (!IsPunct(Peek(), ",")) break;
        Next();
      }
    }
    KILN_RETURN_IF_ERROR(Expect("]", " closing the shape"));
    return type;
  }

  // name[: type] = op(a, b) [{key = value, ...}]
  absl::StatusOr<ParsedNode> ParseNode() {
    ParsedNode node;
    KILN_ASSIGN_OR_RETURN(node.name, ExpectIdent("a node name or 'return'"));
    if (IsPunct(Peek(), ":")) {
      Next();
      KILN_ASSIGN_OR_RETURN(node.type, ParseType());
    }
    KILN_RETURN_IF_ERROR(Expect("="));
    KILN_ASSIGN_OR_RETURN(node.op, ExpectIdent("an op name"));
    KILN_RETURN_IF_ERROR(Expect("(", " after the op name"));
    if (!IsPunct(Peek(), ")")) {
      while (true) {
        KILN_ASSIGN_OR_RETURN(Token operand, ExpectIdent("an operand name"));
        node.operands.push_back(std::move(operand));
        if (!IsPunct(Peek(), ",")) break;
        Next();
      }
    }
    KILN_RETURN_IF_ERROR(Expect(")", " closing the operand list"));
    if (IsPunct(Peek(), "{")) {
      Next();
      if (!IsPunct(Peek(), "}")) {
        while (true) {
          KILN_ASSIGN_OR_RETURN(Token key, ExpectIdent("an attribute name"));
          KILN_RETURN_IF_ERROR(Expect("=", absl::StrCat(" after attribute ", key.text)));
          KILN_ASSIGN_OR_RETURN(RawValue value, ParseValue());
          node.attrs.push_back({std::move(key), std::move(value)});
          if (!IsPunct(Peek(), ",")) break;
          Next();
        }
      }
      KILN_RETURN_IF_ERROR(Expect("}", " closing the attributes"));
    }
    return node;
  }

  absl::StatusOr<Token> ParseScalar() {
    Token token = Next();
    if (IsPunct(token, "-") && Peek().kind == TokenKind::kIdent &&
        (Peek().text == "inf" || Peek().text == "nan")) {
      token.kind = TokenKind::kIdent;
      token.text = absl::StrCat("-", Next().text);
    }
    if (token.kind == TokenKind::kIdent || token.kind == TokenKind::kNumber ||
        token.kind == TokenKind::kString) {
      return token;
    }
    return ErrorAt(token.pos, absl::StrCat("expected a value but got ", Describe(token)));
  }

  absl::StatusOr<RawValue> ParseValue() {
    RawValue value;
    value.pos = Peek().pos;
    if (!IsPunct(Peek(), "[")) {
      KILN_ASSIGN_OR_RETURN(Token scalar, ParseScalar());
      value.items.push_back(std::move(scalar));
      return value;
    }
    Next();
    value.is_list = true;
    if (!IsPunct(Peek(), "]")) {
      while (true) {
        KILN_ASSIGN_OR_RETURN(Token item, ParseScalar());
        value.items.push_back(std::move(item));
        if (!IsPunct(Peek(), ",")) break;
        Next();
      }
    }
    KILN_RETURN_IF_ERROR(Expect("]", " closing the list"));
    return value;
  }

  std::vector<Token> tokens_;
  size_t index_ = 0;
};

// ---------------------------------------------------------------------------------------
// Values.

bool LooksFloat(const std::string& text) { return text.find_first_of(".eE") != std::string::npos; }

absl::StatusOr<int64_t> ToInt(const Token& token) {
  int64_t v = 0;
  if (token.kind != TokenKind::kNumber || LooksFloat(token.text)) {
    return ErrorAt(token.pos, absl::StrCat("expected an integer but got ", Describe(token)));
  }
  if (!absl::SimpleAtoi(token.text, &v)) {
    return ErrorAt(token.pos, absl::StrCat("integer ", token.text, " is out of range for i64"));
  }
  return v;
}

// A float literal, read with `read` (strtod or strtof) so that it rounds exactly once.
template <typename T>
absl::StatusOr<T> ToFloat(const Token& token, T (*read)(const char*, char**)) {
  if (token.kind == TokenKind::kIdent) {
    if (token.text == "inf") return std::numeric_limits<T>::infinity();
    if (token.text == "-inf") return -std::numeric_limits<T>::infinity();
    if (token.text == "nan") return std::numeric_limits<T>::quiet_NaN();
    if (token.text == "-nan") return -std::numeric_limits<T>::quiet_NaN();
  }
  if (token.kind != TokenKind::kNumber) {
    return ErrorAt(token.pos, absl::StrCat("expected a number but got ", Describe(token)));
  }
  char* end = nullptr;
  T v = read(token.text.c_str(), &end);
  if (end != token.text.c_str() + token.text.size()) {
    return ErrorAt(token.pos, absl::StrCat("malformed number '", token.text, "'"));
  }
  if (std::isinf(v)) return ErrorAt(token.pos, absl::StrCat(token.text, " is out of range"));
  return v;
}

absl::StatusOr<AttrValue> ToAttrValue(const std::string& key, const RawValue& raw) {
  if (raw.is_list) {
    std::vector<int64_t> ints;
    for (const Token& item : raw.items) {
      auto v = ToInt(item);
      if (!v.ok()) {
        return ErrorAt(item.pos, absl::StrCat("attribute \"", key,
                                              "\": list elements must be integers, got ",
                                              Describe(item)));
      }
      ints.push_back(*v);
    }
    return AttrValue(std::move(ints));
  }
  const Token& token = raw.items[0];
  switch (token.kind) {
    case TokenKind::kString: return AttrValue(token.text);
    case TokenKind::kIdent:
      if (token.text == "true") return AttrValue(true);
      if (token.text == "false") return AttrValue(false);
      if (token.text == "inf" || token.text == "-inf" || token.text == "nan" || token.text == "-nan") {
        return AttrValue(*ToFloat<double>(token, &std::strtod));
      }
      return ErrorAt(token.pos, absl::StrCat("attribute \"", key, "\": expected true, false, a "
                                             "number, a \"string\" or a [list] but got ",
                                             Describe(token)));
    default:
      if (LooksFloat(token.text)) {
        KILN_ASSIGN_OR_RETURN(double v, ToFloat<double>(token, &std::strtod));
        return AttrValue(v);
      } else {
        KILN_ASSIGN_OR_RETURN(int64_t v, ToInt(token));
        return AttrValue(v);
      }
  }
}

// The `data` of a constant written as a string: the base64 of its bytes (ir/printer.h).
absl::StatusOr<Tensor> BytesToTensor(const RawValue& raw, const ParsedType& type) {
  std::string bytes;
  if (!absl::Base64Unescape(raw.items[0].text, &bytes)) {
    return ErrorAt(raw.pos, "constant data as a string must be base64 (the bytes of its elements)");
  }
  absl::StatusOr<int64_t> elements = CheckedNumElements(type.shape);
  if (!elements.ok()) return ErrorAt(raw.pos, elements.status().message());
  const int64_t expected = *elements * ByteSize(type.dtype);  // checked before allocating it
  if (static_cast<int64_t>(bytes.size()) != expected) {
    return ErrorAt(raw.pos, absl::StrCat("constant data has ", bytes.size(), " bytes but ", DTypeName(type.dtype),
                                         ShapeToString(type.shape), " holds ", expected));
  }
  if (type.dtype == DType::kBool &&
      std::any_of(bytes.begin(), bytes.end(), [](char b) { return b != 0 && b != 1; })) {
    return ErrorAt(raw.pos, "bool data is 0 or 1 in every byte");
  }
  Tensor t(type.dtype, type.shape);
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(t.data()));
  return t;
}

// The `data` of a constant, in the written type.
absl::StatusOr<Tensor> ToTensor(const RawValue& raw, const ParsedType& type) {
  if (!raw.is_list && raw.items.size() == 1 && raw.items[0].kind == TokenKind::kString) {
    return BytesToTensor(raw, type);
  }
  if (!raw.is_list) {
    return ErrorAt(raw.pos, "constant data must be a [list] of the elements in row-major order, "
                            "or a string: the base64 of their bytes");
  }
  if (static_cast<int64_t>(raw.items.size()) != NumElements(type.shape)) {
    return ErrorAt(raw.pos, absl::StrCat("constant data has ", raw.items.size(), " values but ",
                                         DTypeName(type.dtype), ShapeToString(type.shape),
                                         " holds ", NumElements(type.shape)));
  }
  Tensor t(type.dtype, type.shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    const Token& item = raw.items[i];
    switch (type.dtype) {
      case DType::kF32: {
        KILN_ASSIGN_OR_RETURN(t.data_as<float>()[i], ToFloat<float>(item, &std::strtof));
        break;
      }
      case DType::kF16: case DType::kBF16: {
        KILN_ASSIGN_OR_RETURN(float v, ToFloat<float>(item, &std::strtof));
        t.data_as<uint16_t>()[i] =
            type.dtype == DType::kF16 ? FloatToHalfBits(v) : FloatToBF16Bits(v);
        break;
      }
      case DType::kI32: {
        KILN_ASSIGN_OR_RETURN(int64_t v, ToInt(item));
        if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
          return ErrorAt(item.pos, absl::StrCat(v, " is out of range for i32"));
        }
        t.data_as<int32_t>()[i] = static_cast<int32_t>(v);
        break;
      }
      case DType::kI64: {
        KILN_ASSIGN_OR_RETURN(t.data_as<int64_t>()[i], ToInt(item));
        break;
      }
      case DType::kBool: {
        if (item.text != "0" && item.text != "1") {
          return ErrorAt(item.pos, absl::StrCat("bool data is 0 or 1, got ", Describe(item)));
        }
        t.data_as<uint8_t>()[i] = item.text == "1" ? 1 : 0;
        break;
      }
    }
  }
  return t;
}

// ---------------------------------------------------------------------------------------
// Builder.

std::string TypeString(DType dtype, const Shape& shape) {
  return absl::StrCat(DTypeName(dtype), ShapeToString(shape));
}

class Builder {
 public:
  explicit Builder(const ParsedGraph& parsed) : parsed_(parsed) {
    for (const auto& [name, type] : parsed.inputs) defs_.insert({name.text, name.pos.line});
    for (const ParsedNode& node : parsed.nodes) defs_.insert({node.name.text, node.name.pos.line});
  }

  absl::StatusOr<std::unique_ptr<Graph>> Build() {
    graph_ = std::make_unique<Graph>(parsed_.name);
    for (const auto& [name, type] : parsed_.inputs) {
      KILN_RETURN_IF_ERROR(CheckNewName(name));
      auto input = graph_->AddInput(name.text, type.dtype, type.shape);
      if (!input.ok()) return Prefixed(name, input.status());
      lines_[name.text] = name.pos.line;
    }
    for (const ParsedNode& node : parsed_.nodes) {
      KILN_RETURN_IF_ERROR(AddNode(node));
      lines_[node.name.text] = node.name.pos.line;
    }
    for (const ParsedOutput& output : parsed_.outputs) {
      KILN_ASSIGN_OR_RETURN(Node * node, Resolve(output.node));
      const Token& name = output.alias.has_value() ? *output.alias : output.node;
      absl::Status status = graph_->AddOutput(node, name.text);
      if (!status.ok()) return ErrorAt(name.pos, status.message(), status.code());
    }
    return std::move(graph_);
  }

 private:
  absl::Status Prefixed(const Token& name, const absl::Status& status) {
    return ErrorAt(name.pos, absl::StrCat(name.text, ": ", status.message()), status.code());
  }

  absl::Status CheckNewName(const Token& name) {
    auto it = lines_.find(name.text);
    if (it == lines_.end()) return absl::OkStatus();
    return ErrorAt(name.pos, absl::StrCat("duplicate name \"", name.text, "\" (first defined at line ",
                                          it->second, ")"), absl::StatusCode::kAlreadyExists);
  }

  absl::StatusOr<Node*> Resolve(const Token& name) {
    if (Node* node = graph_->FindNode(name.text)) return node;
    auto it = defs_.find(name.text);
    if (it != defs_.end()) {
      return ErrorAt(name.pos, absl::StrCat("\"", name.text, "\" is used before its definition at line ",
                                            it->second, "; operands must be defined first"));
    }
    return ErrorAt(name.pos, absl::StrCat("unknown operand \"", name.text, "\""));
  }

  absl::Status AddNode(const ParsedNode& parsed) {
    KILN_RETURN_IF_ERROR(CheckNewName(parsed.name));
    auto op = ParseOpKind(parsed.op.text);
    if (!op.ok()) return ErrorAt(parsed.op.pos, op.status().message());
    if (*op == OpKind::kInput) {
      return ErrorAt(parsed.op.pos, absl::StrCat("inputs are declared in the graph header, as in "
                                                 "graph g(", parsed.name.text, ": f32[4])"));
    }
    std::vector<Node*> operands;
    for (const Token& operand : parsed.operands) {
      KILN_ASSIGN_OR_RETURN(Node * node, Resolve(operand));
      operands.push_back(node);
    }
    if (*op == OpKind::kConstant) return AddConstant(parsed);
    Attributes attrs;
    for (const auto& [key, raw] : parsed.attrs) {
      if (attrs.Has(key.text)) {
        return ErrorAt(key.pos, absl::StrCat("attribute \"", key.text, "\" is given twice"));
      }
      KILN_ASSIGN_OR_RETURN(AttrValue value, ToAttrValue(key.text, raw));
      attrs.Set(key.text, std::move(value));
    }
    auto node = graph_->AddNode(*op, std::move(operands), std::move(attrs), parsed.name.text);
    if (!node.ok()) return Prefixed(parsed.name, node.status());
    return CheckWrittenType(parsed, (*node)->dtype(), (*node)->shape());
  }

  absl::Status AddConstant(const ParsedNode& parsed) {
    if (!parsed.operands.empty()) {
      return ErrorAt(parsed.operands[0].pos, "constant takes no operands; its value is {data = [...]}");
    }
    if (!parsed.type.has_value()) {
      return ErrorAt(parsed.name.pos, absl::StrCat("constant ", parsed.name.text,
                                                   " needs its type written, as in ",
                                                   parsed.name.text, ": f32[2] = constant() ..."));
    }
    const RawValue* data = nullptr;
    for (const auto& [key, raw] : parsed.attrs) {
      if (key.text != "data") {
        return ErrorAt(key.pos, absl::StrCat("constant has no attribute \"", key.text,
                                             "\"; it takes only data"));
      }
      if (data != nullptr) return ErrorAt(key.pos, "attribute \"data\" is given twice");
      data = &raw;
    }
    if (data == nullptr) {
      return ErrorAt(parsed.op.pos, absl::StrCat("constant ", parsed.name.text,
                                                 " requires its value: {data = [...]}"));
    }
    KILN_ASSIGN_OR_RETURN(Tensor value, ToTensor(*data, *parsed.type));
    auto node = graph_->AddConstant(parsed.name.text, std::move(value));
    if (!node.ok()) return Prefixed(parsed.name, node.status());
    return absl::OkStatus();
  }

  absl::Status CheckWrittenType(const ParsedNode& parsed, DType dtype, const Shape& shape) {
    if (!parsed.type.has_value()) return absl::OkStatus();
    if (parsed.type->dtype == dtype && parsed.type->shape == shape) return absl::OkStatus();
    return ErrorAt(parsed.name.pos,
                   absl::StrCat(parsed.name.text, " is written as ",
                                TypeString(parsed.type->dtype, parsed.type->shape), " but ",
                                parsed.op.text, " infers ", TypeString(dtype, shape)));
  }

  const ParsedGraph& parsed_;
  std::unique_ptr<Graph> graph_;
  absl::flat_hash_map<std::string, int> defs_;   // every name defined anywhere -> first line
  absl::flat_hash_map<std::string, int> lines_;  // names defined so far -> line
};

}  // namespace

absl::StatusOr<std::unique_ptr<Graph>> ParseGraph(absl::string_view text) {
  KILN_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lex(text));
  KILN_ASSIGN_OR_RETURN(ParsedGraph parsed, Parser(std::move(tokens)).Parse());
  return Builder(parsed).Build();
}

}  // namespace kiln
