// The one documented debug switch (DESIGN.md §7), read from the environment once:
//   KILN_DUMP=ir,passes,ledger,cuda,ptx,launch,autotune,cache   what to dump (unknown: error)
//   KILN_DUMP_DIR=DIR                                            where dumps go (default: stderr)
//   KILN_DISABLE_PASSES=a,b                                      passes the pipeline skips
//   KILN_FUSION_FUEL=N                                           stop fusing after N merges
//   KILN_FORCE_FUSE=rule,...                                     take every legal merge of these
//                                                                ledger rules whatever its price
//   KILN_VERIFY=0|1                                              verify after each pass (default 1)
// README.md's Debugging section mirrors this list.
#ifndef KILN_IR_BASE_DEBUG_OPTIONS_H_
#define KILN_IR_BASE_DEBUG_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"

namespace kiln {

enum class DumpKind {
  kIr,        // the graph as imported
  kPasses,    // the graph after each pass that changed it
  kLedger,    // the fusion ledger (JSON lines)
  kCuda,      // generated CUDA source per kernel
  kPtx,       // PTX per kernel
  kLaunch,    // every kernel launch with its grid and arguments
  kAutotune,  // every autotune candidate and its time
  kCache,     // kernel cache disk hits, compiles, corrupt entries and failed writes (stderr)
};

struct DebugOptions {
  std::set<DumpKind> dump;
  std::string dump_dir;               // empty: stderr
  std::set<std::string> disabled_passes;
  std::optional<int64_t> fusion_fuel;  // nullopt: unlimited
  std::set<std::string> forced_rules;  // KILN_FORCE_FUSE (e.g. norm-matmul)
  bool verify = true;

  bool Dumps(DumpKind kind) const { return dump.count(kind) > 0; }
};

// Parses the variables above from the environment (every call re-reads it, so tests can set
// them). The error names the variable and lists the valid values.
absl::StatusOr<DebugOptions> DebugOptionsFromEnv();

// Writes one dump: `text` to DIR/`file` when KILN_DUMP_DIR is set, else to stderr under a
// "// ---- `label` ----" line (`label` defaults to `file`). A file that cannot be written is
// reported on stderr; a dump never fails the compile it describes.
void WriteDump(const DebugOptions& debug, const std::string& file, const std::string& text,
               const std::string& label = "");

// Names of DumpKind values as written in KILN_DUMP.
const char* DumpKindName(DumpKind kind);

}  // namespace kiln

#endif  // KILN_IR_BASE_DEBUG_OPTIONS_H_
