#include "ir/base/debug_options.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kiln {
namespace {

constexpr DumpKind kAllDumpKinds[] = {DumpKind::kIr,       DumpKind::kPasses, DumpKind::kLedger,
                                      DumpKind::kCuda,     DumpKind::kPtx,    DumpKind::kLaunch,
                                      DumpKind::kAutotune, DumpKind::kCache};

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

const char* DumpKindName(DumpKind kind) {
  switch (kind) {
    case DumpKind::kIr: return "ir";
    case DumpKind::kPasses: return "passes";
    case DumpKind::kLedger: return "ledger";
    case DumpKind::kCuda: return "cuda";
    case DumpKind::kPtx: return "ptx";
    case DumpKind::kLaunch: return "launch";
    case DumpKind::kAutotune: return "autotune";
    case DumpKind::kCache: return "cache";
  }
  return "?";
}

absl::StatusOr<DebugOptions> DebugOptionsFromEnv() {
  DebugOptions options;
  for (absl::string_view item : absl::StrSplit(Env("KILN_DUMP"), ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    bool found = false;
    for (DumpKind kind : kAllDumpKinds) {
      if (item == DumpKindName(kind)) {
        options.dump.insert(kind);
        found = true;
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat(
          "KILN_DUMP: unknown dump \"", item,
          "\"; valid names are ir, passes, ledger, cuda, ptx, launch, autotune, cache"));
    }
  }
  options.dump_dir = Env("KILN_DUMP_DIR");
  for (absl::string_view item :
       absl::StrSplit(Env("KILN_DISABLE_PASSES"), ',', absl::SkipWhitespace())) {
    options.disabled_passes.insert(std::string(absl::StripAsciiWhitespace(item)));
  }
  for (absl::string_view item : absl::StrSplit(Env("KILN_FORCE_FUSE"), ',', absl::SkipWhitespace())) {
    options.forced_rules.insert(std::string(absl::StripAsciiWhitespace(item)));
  }
  std::string fuel = Env("KILN_FUSION_FUEL");
  if (!fuel.empty()) {
    int64_t n;
    if (!absl::SimpleAtoi(fuel, &n) || n < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("KILN_FUSION_FUEL: \"", fuel, "\" is not a non-negative integer"));
    }
    options.fusion_fuel = n;
  }
  std::string verify = Env("KILN_VERIFY");
  if (!verify.empty()) {
    if (verify != "0" && verify != "1") {
      return absl::InvalidArgumentError(absl::StrCat("KILN_VERIFY: \"", verify, "\" is not 0 or 1"));
    }
    options.verify = verify == "1";
  }
  return options;
}

void WriteDump(const DebugOptions& debug, const std::string& file, const std::string& text,
               const std::string& label) {
  const char* newline = !text.empty() && text.back() == '\n' ? "" : "\n";
  if (debug.dump_dir.empty()) {
    std::fprintf(stderr, "// ---- %s ----\n%s%s", (label.empty() ? file : label).c_str(), text.c_str(),
                 newline);
    return;
  }
  std::string path = debug.dump_dir + "/" + file;
  std::ofstream out(path);
  out << text;
  if (!out.flush()) std::fprintf(stderr, "kiln: could not write the dump %s\n", path.c_str());
}

}  // namespace kiln
