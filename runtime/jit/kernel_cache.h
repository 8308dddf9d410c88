// KernelCache: CUBINs by content, in memory and on disk (DESIGN.md §6), and the parallel
// compile of a batch of kernels.
//
// Key: the 64-bit FNV-1a (hex) of the kernel name, its full source, the NVRTC version, the
// embedded templates (the headers NVRTC is given), the arch and every NVRTC option, so a change
// to any of them misses. Disk entries live under
// $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln, as one file per key
// written to a temporary name in the same directory and renamed into place (atomic on POSIX),
// with a header (magic, format version, key, payload length, payload checksum) that is checked
// on read: a truncated, corrupt or foreign entry is reported (CacheStats::corrupt, and a line
// on stderr when KILN_DUMP contains "cache") and recompiled, never trusted. KILN_CACHE_DIR=off
// disables the disk layer; an unwritable (read-only, full) directory degrades to memory only
// with one warning on stderr, without failing.
#ifndef KILN_RUNTIME_JIT_KERNEL_CACHE_H_
#define KILN_RUNTIME_JIT_KERNEL_CACHE_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/nvrtc_compile.h"

namespace kiln {

struct CacheStats {
  int64_t memory_hits = 0;
  int64_t disk_hits = 0;
  int64_t compiles = 0;   // NVRTC invocations
  int64_t corrupt = 0;    // disk entries found unreadable and ignored
  int64_t disk_writes = 0;
};

struct KernelToCompile {
  std::string name;    // the extern "C" entry
  std::string source;  // the full translation unit
};

// Where a compiled kernel came from, with the compile's figures (a disk hit keeps the ptxas
// figures and compile_ms of the compile that made it; `lookup_ms` is this call's time).
struct CachedKernel {
  CompiledCuda compiled;
  std::string origin;  // "memory", "disk" or "nvrtc"
  double lookup_ms = 0;
};

// The disk entry format (kernel_cache.cc), exposed for tests and the fuzz target
// (tests/fuzz/fuzz_kernel_cache.cc): an entry's bytes, and an entry read back, or why it is
// not a valid entry for `key`, `kernel_name` and `arch` (a kDataLoss error).
std::string EncodeCacheEntry(const std::string& key, const CompiledCuda& compiled);
absl::StatusOr<CompiledCuda> DecodeCacheEntry(std::string_view bytes, const std::string& key,
                                              const std::string& kernel_name,
                                              const std::string& arch);

class KernelCache {
 public:
  // `directory` empty: no disk layer.
  explicit KernelCache(std::string directory);
  // The process-wide cache on the directory named by the environment (see above).
  static KernelCache& Default();

  // Memory, then disk, then NVRTC (whose result is stored in both). Thread-safe.
  absl::StatusOr<CachedKernel> GetOrCompile(const KernelToCompile& kernel, const std::string& arch,
                                            const std::vector<std::string>& extra_options = {});

  // Compiles `kernels` on up to `threads` threads (0: hardware concurrency), through the cache;
  // results in the input order. The first failure is returned (naming its kernel) after all
  // have finished.
  absl::StatusOr<std::vector<CachedKernel>> GetOrCompileAll(const std::vector<KernelToCompile>& kernels,
                                                            const std::string& arch, int threads = 0,
                                                            const std::vector<std::string>& extra_options = {});

  CacheStats stats() const;
  const std::string& directory() const { return directory_; }
  // The key of a kernel (exposed for tests).
  static std::string Key(const KernelToCompile& kernel, const std::string& arch,
                         const std::vector<std::string>& extra_options);
  // The directory Default() uses, from the environment ("" when the disk layer is off).
  static std::string DirectoryFromEnv();

 private:
  // The disk layer (unlocked: one key is looked up by one thread at a time, see in_flight_).
  std::string EntryPath(const std::string& key) const;
  std::optional<CompiledCuda> ReadEntry(const std::string& key, const std::string& kernel_name,
                                        const std::string& arch);
  void WriteEntry(const std::string& key, const CompiledCuda& compiled);

  std::string directory_;
  mutable std::mutex mutex_;
  // Guarded by mutex_:
  std::condition_variable key_done_;  // a key left in_flight_
  std::set<std::string> in_flight_;   // keys being read from disk or compiled
  std::unordered_map<std::string, CompiledCuda> memory_;
  CacheStats stats_;
  bool warned_unwritable_ = false;  // the one warning of WriteEntry
};

}  // namespace kiln

#endif  // KILN_RUNTIME_JIT_KERNEL_CACHE_H_
