// The `kiln` subcommands that compile for and run on the GPU: compile (no GPU needed with
// --arch), run (on the GPU, optionally --check against the interpreter), bench (median times
// per step and end to end against the copy-bandwidth floor measured in the same process),
// tune (times every kernel's launch-parameter candidates and remembers the fastest).
#ifndef KILN_TOOLS_GPU_COMMANDS_H_
#define KILN_TOOLS_GPU_COMMANDS_H_

#include <string>
#include <vector>

namespace kiln {

int CompileCommand(const std::vector<std::string>& argv);
// `kiln run` without --reference; `argv` as given to `kiln run`.
int RunGpuCommand(const std::vector<std::string>& argv);
int BenchCommand(const std::vector<std::string>& argv);
int TuneCommand(const std::vector<std::string>& argv);

}  // namespace kiln

#endif  // KILN_TOOLS_GPU_COMMANDS_H_
