// FileCheck (see filecheck.h): parses the directives, then walks the text once, keeping the
// offset just past the previous match; CHECK-NOT patterns wait until the next positive match
// (or the end of the text) fixes the range they must be absent from.
#include "tests/testing/filecheck.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/strings/ascii.h"

namespace kiln {
namespace {

struct Directive {
  enum Kind { kCheck, kNext, kNot, kCount } kind = kCheck;
  int count = 1;
  std::string pattern;
  int line = 0;           // in `checks`, 1-based
  std::string spelling;   // the directive as written, for messages
};

// Up to three lines of `text` starting at the line that holds offset `pos`.
std::string Around(const std::string& text, size_t pos) {
  pos = std::min(pos, text.size());
  size_t start = text.rfind('\n', pos == 0 ? 0 : pos - 1);
  start = (start == std::string::npos || pos == 0) ? 0 : start + 1;
  int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + start, '\n'));
  std::string out = absl::StrCat("\nsearching text from line ", line, ":");
  for (int i = 0; i < 3 && start < text.size(); ++i) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    absl::StrAppend(&out, "\n  ", line + i, " | ", text.substr(start, end - start));
    start = end + 1;
  }
  if (start >= text.size() && text.size() == pos) absl::StrAppend(&out, "\n  <end of text>");
  return out;
}

::testing::AssertionResult Fail(const Directive& d, absl::string_view why, const std::string& text,
                                size_t pos) {
  return ::testing::AssertionFailure() << "FileCheck: `" << d.spelling << " " << d.pattern
                                       << "` (checks line " << d.line << ") " << why
                                       << Around(text, pos);
}

}  // namespace

::testing::AssertionResult FileCheck(const std::string& text, const std::string& checks) {
  std::vector<Directive> directives;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(checks, '\n')) {
    ++line_number;
    size_t at = line.find("CHECK");
    if (at == absl::string_view::npos) continue;
    absl::string_view rest = line.substr(at + 5);
    Directive d;
    d.line = line_number;
    if (absl::ConsumePrefix(&rest, ":")) {
      d.kind = Directive::kCheck;
    } else if (absl::ConsumePrefix(&rest, "-NEXT:")) {
      d.kind = Directive::kNext;
    } else if (absl::ConsumePrefix(&rest, "-NOT:")) {
      d.kind = Directive::kNot;
    } else if (absl::ConsumePrefix(&rest, "-COUNT-")) {
      d.kind = Directive::kCount;
      size_t digits = 0;
      while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits]))) ++digits;
      if (digits == 0 || digits >= rest.size() || rest[digits] != ':') {
        return ::testing::AssertionFailure()
               << "FileCheck: malformed CHECK-COUNT-N directive at checks line " << line_number;
      }
      d.count = std::stoi(std::string(rest.substr(0, digits)));
      rest.remove_prefix(digits + 1);
    } else {
      continue;
    }
    d.spelling = std::string(line.substr(at, line.size() - at - rest.size()));
    d.pattern = std::string(absl::StripAsciiWhitespace(rest));
    if (d.pattern.empty()) {
      return ::testing::AssertionFailure()
             << "FileCheck: empty pattern in `" << d.spelling << "` at checks line " << line_number;
    }
    directives.push_back(std::move(d));
  }
  if (directives.empty()) return ::testing::AssertionFailure() << "FileCheck: no CHECK directives";

  size_t pos = 0;          // the search starts here: just past the previous match
  bool matched = false;    // whether any positive directive has matched yet
  std::vector<const Directive*> nots;
  // The pending CHECK-NOTs must be absent from [pos, end).
  auto check_nots = [&](size_t end) -> ::testing::AssertionResult {
    for (const Directive* d : nots) {
      size_t found = text.find(d->pattern, pos);
      if (found != std::string::npos && found + d->pattern.size() <= end) {
        return Fail(*d, "matched where it must not", text, found);
      }
    }
    nots.clear();
    return ::testing::AssertionSuccess();
  };
  for (const Directive& d : directives) {
    if (d.kind == Directive::kNot) {
      nots.push_back(&d);
      continue;
    }
    for (int i = 0; i < d.count; ++i) {
      size_t found;
      if (d.kind == Directive::kNext) {
        size_t start = 0;
        if (matched) {
          size_t newline = text.find('\n', pos);
          if (newline == std::string::npos) return Fail(d, "has no next line to match", text, pos);
          start = newline + 1;
        }
        size_t end = std::min(text.find('\n', start), text.size());
        found = text.find(d.pattern, start);
        if (found == std::string::npos || found + d.pattern.size() > end) {
          return Fail(d, "not found on the next line", text, start);
        }
      } else {
        found = text.find(d.pattern, pos);
        if (found == std::string::npos) {
          return Fail(d, i == 0 ? "not found" : absl::StrCat("found only ", i, " times"), text, pos);
        }
      }
      ::testing::AssertionResult nots_ok = check_nots(found);
      if (!nots_ok) return nots_ok;
      pos = found + d.pattern.size();
      matched = true;
    }
  }
  return check_nots(text.size());
}

}  // namespace kiln
