// Node attributes: a small, sorted, typed bag (axes, eps, perm, ...). Each op's accepted
// attributes, their types and defaults are declared once, in AttrSpecsFor() (ir/op.cc);
// CheckAttributes() validates a bag against that schema so every frontend reports the
// same errors.
#ifndef KILN_IR_ATTRIBUTES_H_
#define KILN_IR_ATTRIBUTES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "ir/op.h"

namespace kiln {

enum class AttrType { kBool, kInt, kFloat, kString, kInts };

using AttrValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>>;

AttrType TypeOf(const AttrValue& value);
const char* AttrTypeName(AttrType type);  // "bool", "int", "float", "string", "int list"
// Canonical text: true, 3, 1e-05, "mean", [0, 2, 1]. Floats print with enough digits to
// round-trip exactly.
std::string AttrValueToString(const AttrValue& value);

class Attributes {
 public:
  Attributes() = default;
  Attributes(std::initializer_list<std::pair<const std::string, AttrValue>> init)
      : values_(init) {}

  bool Has(const std::string& key) const { return values_.count(key) > 0; }
  void Set(const std::string& key, AttrValue value) { values_[key] = std::move(value); }
  void Erase(const std::string& key) { values_.erase(key); }
  const std::map<std::string, AttrValue>& values() const { return values_; }
  bool empty() const { return values_.empty(); }

  // Typed getters. The attribute must be present with that type (a compiler bug otherwise);
  // CheckAttributes() has filled defaults by the time a node exists, so passes call these freely.
  bool GetBool(const std::string& key) const;
  int64_t GetInt(const std::string& key) const;
  double GetFloat(const std::string& key) const;  // an int value is accepted too
  const std::string& GetString(const std::string& key) const;
  const std::vector<int64_t>& GetInts(const std::string& key) const;

  // "{axes = [1], keep_dims = false}", keys sorted; "" when empty.
  std::string ToString() const;

  bool operator==(const Attributes& other) const { return values_ == other.values_; }
  bool operator!=(const Attributes& other) const { return !(*this == other); }

 private:
  std::map<std::string, AttrValue> values_;
};

// One accepted attribute of an op.
struct AttrSpec {
  const char* name;
  AttrType type;
  std::optional<AttrValue> default_value;  // nullopt: required
  const char* doc;
};

// The attributes `kind` accepts (empty for most pointwise ops).
const std::vector<AttrSpec>& AttrSpecsFor(OpKind kind);

// Checks `attrs` against the op's schema: unknown names (listing the accepted ones), wrong
// types (an int is accepted where a float is expected and is converted), missing required
// ones. Fills in defaults. Errors name the attribute but not the node; callers add that.
absl::Status CheckAttributes(OpKind kind, Attributes& attrs);

}  // namespace kiln

#endif  // KILN_IR_ATTRIBUTES_H_
