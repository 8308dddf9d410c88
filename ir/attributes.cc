#include "ir/attributes.h"

#include <cmath>
#include <cstdio>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/base/status.h"

namespace kiln {

AttrType TypeOf(const AttrValue& value) { return static_cast<AttrType>(value.index()); }

const char* AttrTypeName(AttrType type) {
  switch (type) {
    case AttrType::kBool: return "bool";
    case AttrType::kInt: return "int";
    case AttrType::kFloat: return "float";
    case AttrType::kString: return "string";
    case AttrType::kInts: return "int list";
  }
  return "?";
}

namespace {

std::string FloatToString(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  // Prefer the shortest form that round-trips.
  for (int precision = 1; precision <= 17; ++precision) {
    char shorter[64];
    std::snprintf(shorter, sizeof(shorter), "%.*g", precision, v);
    if (std::strtod(shorter, nullptr) == v) {
      std::snprintf(buf, sizeof(buf), "%s", shorter);
      break;
    }
  }
  std::string s = buf;
  // Keep floats recognisable as floats in the text form.
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::string AttrValueToString(const AttrValue& value) {
  switch (TypeOf(value)) {
    case AttrType::kBool: return std::get<bool>(value) ? "true" : "false";
    case AttrType::kInt: return absl::StrCat(std::get<int64_t>(value));
    case AttrType::kFloat: return FloatToString(std::get<double>(value));
    case AttrType::kString: return absl::StrCat("\"", absl::CEscape(std::get<std::string>(value)), "\"");
    case AttrType::kInts:
      return absl::StrCat("[", absl::StrJoin(std::get<std::vector<int64_t>>(value), ", "), "]");
  }
  return "";
}

bool Attributes::GetBool(const std::string& key) const {
  auto it = values_.find(key);
  KILN_CHECK(it != values_.end() && TypeOf(it->second) == AttrType::kBool)
      << "attribute " << key << " missing or not a bool";
  return std::get<bool>(it->second);
}

int64_t Attributes::GetInt(const std::string& key) const {
  auto it = values_.find(key);
  KILN_CHECK(it != values_.end() && TypeOf(it->second) == AttrType::kInt)
      << "attribute " << key << " missing or not an int";
  return std::get<int64_t>(it->second);
}

double Attributes::GetFloat(const std::string& key) const {
  auto it = values_.find(key);
  KILN_CHECK(it != values_.end()) << "attribute " << key << " missing";
  if (TypeOf(it->second) == AttrType::kInt) return static_cast<double>(std::get<int64_t>(it->second));
  KILN_CHECK(TypeOf(it->second) == AttrType::kFloat) << "attribute " << key << " is not a float";
  return std::get<double>(it->second);
}

const std::string& Attributes::GetString(const std::string& key) const {
  auto it = values_.find(key);
  KILN_CHECK(it != values_.end() && TypeOf(it->second) == AttrType::kString)
      << "attribute " << key << " missing or not a string";
  return std::get<std::string>(it->second);
}

const std::vector<int64_t>& Attributes::GetInts(const std::string& key) const {
  auto it = values_.find(key);
  KILN_CHECK(it != values_.end() && TypeOf(it->second) == AttrType::kInts)
      << "attribute " << key << " missing or not an int list";
  return std::get<std::vector<int64_t>>(it->second);
}

std::string Attributes::ToString() const {
  if (values_.empty()) return "";
  std::vector<std::string> parts;
  for (const auto& [key, value] : values_) {
    parts.push_back(absl::StrCat(key, " = ", AttrValueToString(value)));
  }
  return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
}

absl::Status CheckAttributes(OpKind kind, Attributes& attrs) {
  const std::vector<AttrSpec>& specs = AttrSpecsFor(kind);
  for (const auto& [key, value] : attrs.values()) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : specs) {
      if (key == s.name) spec = &s;
    }
    if (spec == nullptr) {
      std::vector<std::string> names;
      for (const AttrSpec& s : specs) names.push_back(s.name);
      return absl::InvalidArgumentError(absl::StrCat(
          OpName(kind), " has no attribute \"", key, "\"",
          names.empty() ? std::string("; it takes none")
                        : absl::StrCat("; it accepts: ", absl::StrJoin(names, ", "))));
    }
    AttrType got = TypeOf(value);
    bool ok = got == spec->type || (spec->type == AttrType::kFloat && got == AttrType::kInt);
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          OpName(kind), " attribute \"", key, "\" must be ", AttrTypeName(spec->type),
          ", got ", AttrTypeName(got), " ", AttrValueToString(value)));
    }
  }
  for (const AttrSpec& spec : specs) {
    if (attrs.Has(spec.name)) {
      if (spec.type == AttrType::kFloat && TypeOf(attrs.values().at(spec.name)) == AttrType::kInt) {
        attrs.Set(spec.name, attrs.GetFloat(spec.name));
      }
      continue;
    }
    if (!spec.default_value.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(OpName(kind), " requires attribute \"",
                                                     spec.name, "\" (", AttrTypeName(spec.type),
                                                     "): ", spec.doc));
    }
    attrs.Set(spec.name, *spec.default_value);
  }
  return absl::OkStatus();
}

}  // namespace kiln
