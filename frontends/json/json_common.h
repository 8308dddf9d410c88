// Internal to frontends/json: the format's constants and limits, parsing under those limits,
// and the small helpers that import and export share: JSON paths ("nodes[3].inputs[1]"), errors placed at a path,
// quoting of user text in messages, a one-phrase description of a JSON value ("got string
// \"1\""), close-name suggestions, and JSON string escaping.
#ifndef KILN_FRONTENDS_JSON_JSON_COMMON_H_
#define KILN_FRONTENDS_JSON_JSON_COMMON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "rapidjson/document.h"

namespace kiln::json_internal {

// The value of the required top-level field "kiln_graph" this build reads and writes.
inline constexpr int kFormatVersion = 1;
// Limits (docs/graph-format.md, "Limits"). The text size bounds memory (the DOM needs a few
// times the text); large constants belong in side files.
inline constexpr int64_t kMaxJsonBytes = int64_t{256} << 20;
// Arrays and objects nested deeper than this are refused before parsing; a valid kiln graph
// needs 5 levels (top level, "nodes", a node, "attrs", an int list).
inline constexpr int kMaxJsonDepth = 64;
// Side data files: each constant starts at a multiple of this in the exported side file.
inline constexpr int64_t kSideFileAlignment = 64;

// Parses `json_text` into `doc` under the limits above: the size first, then a byte scan for
// the nesting depth (so a 1,000,000-deep input is refused at its line:column without building
// a DOM), then RapidJSON's iterative parser (constant stack) with UTF-8 validation, every
// number converted exactly by kiln (so exported floats read back exactly). Errors start with
// "<source_name>:<line>:<column>: " (or "<source_name>: " for the size).
absl::Status ParseDocument(const std::string& json_text, const std::string& source_name,
                           rapidjson::Document& doc);

// Paths: "" is the top level; Field("nodes[3]", "op") is "nodes[3].op".
std::string Field(absl::string_view path, absl::string_view key);
std::string Index(absl::string_view path, int64_t index);

// An error at `path`: "path: message" ("(top level): message" for the empty path). The
// importer puts the source name in front.
absl::Status PathError(absl::StatusCode code, absl::string_view path, absl::string_view message);
inline absl::Status Invalid(absl::string_view path, absl::string_view message) {
  return PathError(absl::StatusCode::kInvalidArgument, path, message);
}

// User text for a message: quoted, escaped, cut to 80 characters.
std::string Quote(absl::string_view text);
// What a JSON value is, for "expected ..., got <this>": `string "1"`, `number 1.5`, `array`.
std::string Describe(const rapidjson::Value& value);

// Up to 3 of `candidates` close to `name` by edit distance (best first); empty if none is.
std::vector<std::string> CloseNames(absl::string_view name,
                                    const std::vector<std::string>& candidates);

// The shortest "%g" text that reads back (strtod) to exactly `value`.
std::string ShortestDouble(double value);

// `text` as a JSON string literal, quotes included (control characters as \u00XX).
std::string JsonString(absl::string_view text);

}  // namespace kiln::json_internal

#endif  // KILN_FRONTENDS_JSON_JSON_COMMON_H_
