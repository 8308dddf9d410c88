// The AOT artifact: one file holding a compiled Program (CUBINs, steps, buffer plan, kernel
// parameters, constants, the fusion ledger and the hash of the source graph), written by
// `kiln compile` and run later by runtime/ alone: loading needs neither NVRTC nor the passes
// nor the importers.
//
// Layout (little-endian): the 8-byte magic "KILNART\n", a u32 format version, a u64 payload
// length, the payload (length-prefixed fields in a fixed order), and the u64 FNV-1a of the
// payload. Load refuses, with a message that says which, a file that is not an artifact, of
// another format version, truncated, or whose checksum does not match; the decoded Program is
// then checked by Program::Validate() before it is returned.
#ifndef KILN_RUNTIME_ARTIFACT_H_
#define KILN_RUNTIME_ARTIFACT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/program.h"

namespace kiln {

// 2: matmul alignment, the lowering ledger; 3: the launch shape (3-D grid, clusters,
// cooperative launches, grid multiple) and kernels built from templated Bodies; 4: the matmul
// relu epilogue flag (32), which a version-3 reader would silently drop; 5: kernels' in-place
// pairs (an output placed over an input); 6: kernels' TMA tensor maps (ir/tensor_map.h).
inline constexpr uint32_t kArtifactVersion = 6;

std::string SerializeProgram(const Program& program);
absl::StatusOr<Program> DeserializeProgram(const std::string& bytes, const std::string& where = "artifact");

// Writes atomically (temporary file in the same directory, then rename).
absl::Status SaveArtifact(const Program& program, const std::string& path);
absl::StatusOr<Program> LoadArtifact(const std::string& path);

// Whether the file starts with the artifact magic (so `kiln run X` knows what X is).
bool LooksLikeArtifact(const std::string& path);

}  // namespace kiln

#endif  // KILN_RUNTIME_ARTIFACT_H_
