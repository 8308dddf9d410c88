// Key/value helpers over RapidJSON's Writer, shared by every JSON the compiler writes (the
// fusion ledger, the lowering ledger): RapidJSON escapes the strings, these keep the call
// sites to one line per field. Header-only; the includer links RapidJSON.
#ifndef KILN_IR_BASE_JSON_WRITER_H_
#define KILN_IR_BASE_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace kiln::json {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

inline void Str(Writer& w, const char* key, const std::string& value) {
  w.Key(key);
  w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
}
inline void Num(Writer& w, const char* key, double value) {
  w.Key(key);
  w.Double(value);
}
inline void Int(Writer& w, const char* key, int64_t value) {
  w.Key(key);
  w.Int64(value);
}
inline void Bool(Writer& w, const char* key, bool value) {
  w.Key(key);
  w.Bool(value);
}
inline void Strings(Writer& w, const char* key, const std::vector<std::string>& values) {
  w.Key(key);
  w.StartArray();
  for (const std::string& v : values) w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
  w.EndArray();
}
inline void Ints(Writer& w, const char* key, const std::vector<int>& values) {
  w.Key(key);
  w.StartArray();
  for (int v : values) w.Int(v);
  w.EndArray();
}
inline std::string Take(const rapidjson::StringBuffer& buffer) {
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace kiln::json

#endif  // KILN_IR_BASE_JSON_WRITER_H_
