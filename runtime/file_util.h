// Files written so that a reader never sees half of one: the bytes go to a temporary file in
// the same directory (named by process and a counter, so concurrent writers do not collide),
// which is then renamed over the target (atomic on POSIX). Used for AOT artifacts and the
// CUBIN cache.
#ifndef KILN_RUNTIME_FILE_UTIL_H_
#define KILN_RUNTIME_FILE_UTIL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kiln {

// Creates the parent directories as needed.
absl::Status WriteFileAtomically(const std::string& path, const std::string& bytes);
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

}  // namespace kiln

#endif  // KILN_RUNTIME_FILE_UTIL_H_
