// Strict, hand-written argument parsing for the `kiln` subcommands: each subcommand names
// the flags it accepts; anything else is a usage error (exit code 2).
//   --flag VALUE, --flag=VALUE   a flag that takes a value (given at most once)
//   --switch                      a flag without a value
//   -h, --help                    asks for the subcommand's usage text
//   --                            everything after it is positional
#ifndef KILN_TOOLS_CLI_ARGS_H_
#define KILN_TOOLS_CLI_ARGS_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln {

struct FlagSpec {
  std::string name;  // without the leading "--"
  bool takes_value;
};

struct ParsedArgs {
  bool help = false;
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;  // flags with a value
  std::set<std::string> switches;             // flags without one

  bool Has(const std::string& flag) const { return values.count(flag) || switches.count(flag); }
};

// `args` excludes the program and subcommand names. Errors: unknown flag (listing the known
// ones), missing value, a value given to a switch, a flag given twice.
absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                                     const std::vector<FlagSpec>& specs);

}  // namespace kiln

#endif  // KILN_TOOLS_CLI_ARGS_H_
