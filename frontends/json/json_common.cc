// Helpers shared by the JSON importer and exporter: parsing under limits, paths, placed
// errors, quoting, value descriptions, close-name suggestions and string escaping.
#include "frontends/json/json_common.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ir/base/edit_distance.h"
#include "rapidjson/encodedstream.h"
#include "rapidjson/error/en.h"
#include "rapidjson/memorystream.h"
#include "rapidjson/reader.h"

namespace kiln::json_internal {

namespace {

bool IsPlainKey(absl::string_view key) {
  if (key.empty() || std::isdigit(static_cast<unsigned char>(key[0]))) return false;
  for (char c : key) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

std::pair<int64_t, int64_t> LineColumn(absl::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  int64_t line = 1 + std::count(text.begin(), text.begin() + offset, '\n');
  size_t last_newline = text.substr(0, offset).rfind('\n');
  int64_t column = last_newline == absl::string_view::npos ? offset + 1 : offset - last_newline;
  return {line, column};
}

// The byte offset where nesting first exceeds kMaxJsonDepth, or npos. Brackets inside
// strings do not count; malformed text is left for the parser to report.
size_t FindTooDeep(absl::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > json_internal::kMaxJsonDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return absl::string_view::npos;
}

// Builds the Document from the reader's events, converting every number itself: RapidJSON
// 1.1.0 (Debian 12) with kParseFullPrecisionFlag computes clz(0), undefined behaviour, on
// some numbers (found by tests/fuzz: a zero significand with an exponent outside its fast
// range, "-0e51", or 20 digits that round up past UINT64_MAX,
// "0.000000000184467440737095516156"), and without the flag it does not round correctly.
// absl::SimpleAtod (from_chars) does. Integers keep RapidJSON's typing: what fits an int64
// (negative) or a uint64 is an integer, anything longer a double. The reader still checks
// the number's grammar and range (kParseErrorNumberTooBig) before handing over its text.
class ExactNumbers {
 public:
  explicit ExactNumbers(rapidjson::Document& doc) : doc_(doc) {}
  bool Null() { return doc_.Null(); }
  bool Bool(bool b) { return doc_.Bool(b); }
  bool Int(int i) { return doc_.Int(i); }
  bool Uint(unsigned u) { return doc_.Uint(u); }
  bool Int64(int64_t i) { return doc_.Int64(i); }
  bool Uint64(uint64_t u) { return doc_.Uint64(u); }
  bool Double(double d) { return doc_.Double(d); }
  bool RawNumber(const char* text, rapidjson::SizeType length, bool) {
    absl::string_view number(text, length);
    if (number.find_first_of(".eE") == absl::string_view::npos) {
      int64_t i;
      uint64_t u;
      if (number[0] == '-' && absl::SimpleAtoi(number, &i)) return doc_.Int64(i);
      if (number[0] != '-' && absl::SimpleAtoi(number, &u)) return doc_.Uint64(u);
    }
    double d;
    if (!absl::SimpleAtod(number, &d)) return false;  // cannot happen after the grammar check
    return doc_.Double(d);
  }
  bool String(const char* text, rapidjson::SizeType length, bool copy) {
    return doc_.String(text, length, copy);
  }
  bool StartObject() { return doc_.StartObject(); }
  bool Key(const char* text, rapidjson::SizeType length, bool copy) {
    return doc_.Key(text, length, copy);
  }
  bool EndObject(rapidjson::SizeType members) { return doc_.EndObject(members); }
  bool StartArray() { return doc_.StartArray(); }
  bool EndArray(rapidjson::SizeType elements) { return doc_.EndArray(elements); }

 private:
  rapidjson::Document& doc_;
};

}  // namespace

absl::Status ParseDocument(const std::string& json_text, const std::string& source_name,
                           rapidjson::Document& doc) {
  if (static_cast<int64_t>(json_text.size()) > kMaxJsonBytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        source_name, ": the JSON text has ", json_text.size(), " bytes, over the limit of ",
        kMaxJsonBytes, "; put large constants in side data files"));
  }
  size_t too_deep = FindTooDeep(json_text);
  if (too_deep != absl::string_view::npos) {
    auto [line, column] = LineColumn(json_text, too_deep);
    return absl::OutOfRangeError(absl::StrCat(
        source_name, ":", line, ":", column, ": arrays and objects nested deeper than ",
        kMaxJsonDepth, " levels; a kiln graph needs at most 5"));
  }
  constexpr unsigned kFlags = rapidjson::kParseIterativeFlag |
                              rapidjson::kParseValidateEncodingFlag |
                              rapidjson::kParseNumbersAsStringsFlag;
  rapidjson::Reader reader;
  rapidjson::ParseResult result;
  auto generate = [&](rapidjson::Document& target) {
    rapidjson::MemoryStream bytes(json_text.data(), json_text.size());
    rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> in(bytes);
    ExactNumbers handler(target);
    result = reader.Parse<kFlags>(in, handler);
    return !result.IsError();
  };
  doc.Populate(generate);
  if (result.IsError()) {
    auto [line, column] = LineColumn(json_text, result.Offset());
    return absl::InvalidArgumentError(absl::StrCat(source_name, ":", line, ":", column,
                                                   ": malformed JSON: ",
                                                   rapidjson::GetParseError_En(result.Code())));
  }
  return absl::OkStatus();
}

std::string Field(absl::string_view path, absl::string_view key) {
  if (!IsPlainKey(key)) return absl::StrCat(path, "[", Quote(key), "]");
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}

std::string Index(absl::string_view path, int64_t index) {
  return absl::StrCat(path, "[", index, "]");
}

absl::Status PathError(absl::StatusCode code, absl::string_view path, absl::string_view message) {
  return absl::Status(code, absl::StrCat(path.empty() ? "(top level)" : path, ": ", message));
}

std::string Quote(absl::string_view text) {
  constexpr size_t kMax = 80;
  if (text.size() <= kMax) return absl::StrCat("\"", absl::CHexEscape(text), "\"");
  return absl::StrCat("\"", absl::CHexEscape(text.substr(0, kMax)), "\"...");
}

std::string Describe(const rapidjson::Value& value) {
  switch (value.GetType()) {
    case rapidjson::kNullType: return "null";
    case rapidjson::kFalseType: return "false";
    case rapidjson::kTrueType: return "true";
    case rapidjson::kObjectType: return "an object";
    case rapidjson::kArrayType: return "an array";
    case rapidjson::kStringType:
      return absl::StrCat("string ",
                          Quote(absl::string_view(value.GetString(), value.GetStringLength())));
    case rapidjson::kNumberType:
      if (value.IsInt64()) return absl::StrCat("integer ", value.GetInt64());
      if (value.IsUint64()) return absl::StrCat("integer ", value.GetUint64());
      return absl::StrCat("number ", ShortestDouble(value.GetDouble()));
  }
  return "?";
}

std::vector<std::string> CloseNames(absl::string_view name,
                                    const std::vector<std::string>& candidates) {
  // A typo budget that grows with the name: 1 edit for short names, up to a third of it.
  int budget = std::max<int>(1, static_cast<int>(name.size()) / 3);
  std::vector<std::pair<int, std::string>> scored;
  for (const std::string& candidate : candidates) {
    int d = EditDistance(name, candidate);
    if (d <= budget) scored.push_back({d, candidate});
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (const auto& entry : scored) {
    if (out.size() == 3) break;
    out.push_back(entry.second);
  }
  return out;
}

std::string ShortestDouble(double value) {
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  return buf;
}

std::string JsonString(absl::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;  // UTF-8 passes through; import validates the encoding
        }
    }
  }
  out += "\"";
  return out;
}

}  // namespace kiln::json_internal
