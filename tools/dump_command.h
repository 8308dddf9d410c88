// `kiln dump`: every fusion decision, with the cost-model numbers behind it.
#ifndef KILN_TOOLS_DUMP_COMMAND_H_
#define KILN_TOOLS_DUMP_COMMAND_H_

#include <string>
#include <vector>

namespace kiln {

extern const char kDumpCommandUsage[];

// Runs `kiln dump` with `args` (after the subcommand); returns the exit code
// (0 ok, 1 failure, 2 bad input or usage).
int DumpCommand(const std::vector<std::string>& args);

}  // namespace kiln

#endif  // KILN_TOOLS_DUMP_COMMAND_H_
