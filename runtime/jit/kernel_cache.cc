// KernelCache (kernel_cache.h): the memory layer is a map from key to CompiledCuda; the disk
// layer is one file per key, `<directory>/<key>.kcubin`, laid out (little-endian) as
//
//   offset  size  field
//        0     8  magic "KILNCUB\n"
//        8     4  format version (kEntryVersion)
//       12     4  zero
//       16    16  the key, 16 hex digits (a file copied or renamed onto another key is foreign)
//       32     8  payload length
//       40     8  FNV-1a 64 of the payload
//       48     -  payload: kernel name, arch, cubin, ptx, log (each a u64 length and the bytes),
//                 registers, spill stores, spill loads, stack frame, static smem (i64 each),
//                 compile_ms (f64 bits), the option count and each option (length + bytes)
//
// Any mismatch (short file, magic, version, key, length, checksum, a malformed or trailing
// field, another kernel's name or arch) makes the entry corrupt: counted, reported under
// KILN_DUMP=cache, recompiled and rewritten. A key is looked up by one thread at a time (the
// others wait for it and then hit memory), so a batch that repeats a kernel compiles it once.
#include "runtime/jit/kernel_cache.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "ir/base/debug_options.h"
#include "ir/base/hash.h"
#include "ir/base/status.h"
#include "runtime/binary_io.h"
#include "runtime/file_util.h"
#include "templates/embedded_templates.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'C', 'U', 'B', '\n'};
// Bump when the payload layout changes (old entries then read as foreign and are rewritten).
constexpr uint32_t kEntryVersion = 1;
constexpr size_t kHeaderBytes = 48;
constexpr size_t kKeyChars = 16;
// Bump when CompileCuda's fixed options or anything else outside the key's inputs changes what
// a compile produces: every key changes, so old entries are simply never read again.
constexpr char kKeySalt[] = "kiln kernel cache key 1";

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

bool DumpsCache() {
  absl::StatusOr<DebugOptions> options = DebugOptionsFromEnv();
  return options.ok() && options->Dumps(DumpKind::kCache);
}

void Report(const std::string& line) { std::fprintf(stderr, "kiln cache: %s\n", line.c_str()); }

// Length-prefixed, so ("ab", "c") and ("a", "bc") hash differently.
void Mix(uint64_t& h, std::string_view field) {
  h = Fnv1a64(absl::StrCat(field.size(), ":"), h);
  h = Fnv1a64(field, h);
}

const std::string& NvrtcVersion() {
  static const std::string* version = new std::string(NvrtcVersionString());
  return *version;
}

const std::string& TemplatesDigest() {
  static const std::string* digest = [] {
    uint64_t h = Fnv1a64("templates");
    for (const auto& [name, text] : EmbeddedTemplates()) {
      Mix(h, name);
      Mix(h, text);
    }
    return new std::string(Hex64(h));
  }();
  return *digest;
}

std::string EncodeEntry(const std::string& key, const CompiledCuda& c) {
  ByteWriter payload;
  payload.Str(c.kernel_name);
  payload.Str(c.arch);
  payload.Str(std::string_view(c.cubin.data(), c.cubin.size()));
  payload.Str(c.ptx);
  payload.Str(c.log);
  for (int64_t v : {int64_t{c.registers}, c.spill_store_bytes, c.spill_load_bytes,
                    c.stack_frame_bytes, c.static_smem_bytes}) {
    payload.I64(v);
  }
  payload.F64(c.compile_ms);
  payload.U64(c.options.size());
  for (const std::string& o : c.options) payload.Str(o);

  ByteWriter entry;
  entry.Raw(std::string_view(kMagic, sizeof(kMagic)));
  entry.U32(kEntryVersion);
  entry.U32(0);
  entry.Raw(key);
  entry.U64(payload.bytes().size());
  entry.U64(Fnv1a64(payload.bytes()));
  return entry.bytes() + payload.bytes();
}

// The entry's CompiledCuda, or why it is not one (for `key`, `kernel_name` and `arch`).
absl::StatusOr<CompiledCuda> DecodeEntry(std::string_view bytes, const std::string& key,
                                         const std::string& kernel_name, const std::string& arch) {
  if (bytes.size() < kHeaderBytes) {
    return absl::DataLossError(absl::StrCat("truncated header (", bytes.size(), " bytes)"));
  }
  if (bytes.substr(0, sizeof(kMagic)) != std::string_view(kMagic, sizeof(kMagic))) {
    return absl::DataLossError("not a kiln cache entry (bad magic)");
  }
  uint64_t version = LoadLittleEndian(bytes, 8, 4);
  if (version != kEntryVersion) {
    return absl::DataLossError(
        absl::StrCat("format version ", version, ", expected ", kEntryVersion));
  }
  std::string_view stored_key = bytes.substr(16, kKeyChars);
  if (stored_key != key) {
    return absl::DataLossError(
        absl::StrCat("holds key ", absl::CEscape(std::string(stored_key)), ", not ", key));
  }
  uint64_t length = LoadLittleEndian(bytes, 32, 8);
  std::string_view payload = bytes.substr(kHeaderBytes);
  if (payload.size() != length) {
    return absl::DataLossError(
        absl::StrCat("payload is ", payload.size(), " bytes, header says ", length));
  }
  if (Fnv1a64(payload) != LoadLittleEndian(bytes, 40, 8)) {
    return absl::DataLossError("payload checksum mismatch");
  }

  ByteReader r(payload);
  CompiledCuda c;
  c.kernel_name = r.Str("kernel name");
  c.arch = r.Str("arch");
  std::string cubin = r.Str("cubin");
  c.cubin.assign(cubin.begin(), cubin.end());
  c.ptx = r.Str("ptx");
  c.log = r.Str("log");
  int64_t registers = r.I64("registers");
  c.spill_store_bytes = r.I64("spill stores");
  c.spill_load_bytes = r.I64("spill loads");
  c.stack_frame_bytes = r.I64("stack frame");
  c.static_smem_bytes = r.I64("static smem");
  c.compile_ms = r.F64("compile ms");
  uint64_t option_count = r.U64("option count");
  for (uint64_t i = 0; r.ok() && i < option_count; ++i) c.options.push_back(r.Str("option"));
  if (!r.ok()) return absl::DataLossError(absl::StrCat("malformed field '", r.failed(), "'"));
  if (!r.at_end()) return absl::DataLossError("trailing bytes after the last field");
  if (registers < -1 || registers > (int64_t{1} << 20)) {
    return absl::DataLossError("bad register count");
  }
  c.registers = static_cast<int>(registers);
  if (c.cubin.empty()) return absl::DataLossError("empty cubin");
  if (c.kernel_name != kernel_name || c.arch != arch) {
    return absl::DataLossError(absl::StrCat("holds kernel ", c.kernel_name, " for ", c.arch));
  }
  return c;
}

}  // namespace

std::string EncodeCacheEntry(const std::string& key, const CompiledCuda& compiled) {
  return EncodeEntry(key, compiled);
}

absl::StatusOr<CompiledCuda> DecodeCacheEntry(std::string_view bytes, const std::string& key,
                                              const std::string& kernel_name,
                                              const std::string& arch) {
  return DecodeEntry(bytes, key, kernel_name, arch);
}

KernelCache::KernelCache(std::string directory) : directory_(std::move(directory)) {}

KernelCache& KernelCache::Default() {
  static KernelCache* cache = new KernelCache(DirectoryFromEnv());  // never destroyed
  return *cache;
}

std::string KernelCache::DirectoryFromEnv() {
  auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value != nullptr ? value : "";
  };
  std::string dir = env("KILN_CACHE_DIR");
  if (!dir.empty()) return dir == "off" ? "" : dir;
  std::string xdg = env("XDG_CACHE_HOME");
  if (!xdg.empty()) return xdg + "/kiln";
  std::string home = env("HOME");
  if (!home.empty()) return home + "/.cache/kiln";
  return "";
}

std::string KernelCache::Key(const KernelToCompile& kernel, const std::string& arch,
                             const std::vector<std::string>& extra_options) {
  uint64_t h = Fnv1a64(kKeySalt);
  Mix(h, kernel.name);
  Mix(h, kernel.source);
  Mix(h, NvrtcVersion());
  Mix(h, TemplatesDigest());
  const char* include_dir = std::getenv("KILN_CUDA_INCLUDE_DIR");  // CompileCuda's override
  Mix(h, include_dir != nullptr ? include_dir : "");
  Mix(h, arch);
  Mix(h, absl::StrCat(extra_options.size()));
  for (const std::string& option : extra_options) Mix(h, option);
  return Hex64(h);
}

CacheStats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

std::string KernelCache::EntryPath(const std::string& key) const {
  return absl::StrCat(directory_, "/", key, ".kcubin");
}

std::optional<CompiledCuda> KernelCache::ReadEntry(const std::string& key,
                                                   const std::string& kernel_name,
                                                   const std::string& arch) {
  if (directory_.empty()) return std::nullopt;
  const std::string path = EntryPath(key);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;  // absent (or unreadable): a plain miss
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  absl::StatusOr<CompiledCuda> entry = DecodeEntry(bytes, key, kernel_name, arch);
  if (entry.ok()) return *std::move(entry);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.corrupt;
  }
  if (DumpsCache()) {
    Report(absl::StrCat("corrupt entry ", path, " for kernel ", kernel_name, " (",
                        entry.status().message(), "): ignored, recompiling"));
  }
  return std::nullopt;
}

void KernelCache::WriteEntry(const std::string& key, const CompiledCuda& compiled) {
  if (directory_.empty()) return;
  absl::Status written = WriteFileAtomically(EntryPath(key), EncodeEntry(key, compiled));
  if (written.ok()) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.disk_writes;
    return;
  }
  // A read-only or full directory (or a path that cannot be one) degrades to the memory
  // layer: said once per cache, in every build, since every later kernel will be compiled
  // again by the next process; each failure is listed under KILN_DUMP=cache.
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    first = !warned_unwritable_;
    warned_unwritable_ = true;
  }
  if (first) {
    Report(absl::StrCat("warning: cannot write to ", directory_, " (", written.message(),
                        "); kernels compiled now are kept in memory only"));
  } else if (DumpsCache()) {
    Report(absl::StrCat("not written for kernel ", compiled.kernel_name, ": ", written.message()));
  }
}

absl::StatusOr<CachedKernel> KernelCache::GetOrCompile(
    const KernelToCompile& kernel, const std::string& arch,
    const std::vector<std::string>& extra_options) {
  const auto start = std::chrono::steady_clock::now();
  const std::string key = Key(kernel, arch, extra_options);
  CachedKernel result;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    key_done_.wait(lock, [&] { return in_flight_.count(key) == 0; });
    auto it = memory_.find(key);
    if (it != memory_.end()) {
      ++stats_.memory_hits;
      result.compiled = it->second;
      result.origin = "memory";
      result.lookup_ms = MsSince(start);
      return result;
    }
    in_flight_.insert(key);
  }
  // Whatever happens below, the key leaves in_flight_ and its waiters wake.
  struct Release {
    KernelCache* cache;
    const std::string& key;
    ~Release() {
      {
        std::lock_guard<std::mutex> lock(cache->mutex_);
        cache->in_flight_.erase(key);
      }
      cache->key_done_.notify_all();
    }
  } release{this, key};

  if (std::optional<CompiledCuda> entry = ReadEntry(key, kernel.name, arch)) {
    result.compiled = *std::move(entry);
    result.origin = "disk";
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.disk_hits;
    memory_[key] = result.compiled;
  } else {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.compiles;
    }
    KILN_ASSIGN_OR_RETURN(result.compiled,
                          CompileCuda(kernel.name, kernel.source, arch, extra_options));
    result.origin = "nvrtc";
    {
      std::lock_guard<std::mutex> lock(mutex_);
      memory_[key] = result.compiled;
    }
    WriteEntry(key, result.compiled);
  }
  result.lookup_ms = MsSince(start);
  if (DumpsCache()) {
    Report(absl::StrCat(result.origin, " ", kernel.name, " (", arch, ") key ", key, ": ",
                        result.lookup_ms, " ms"));
  }
  return result;
}

absl::StatusOr<std::vector<CachedKernel>> KernelCache::GetOrCompileAll(
    const std::vector<KernelToCompile>& kernels, const std::string& arch, int threads,
    const std::vector<std::string>& extra_options) {
  const size_t n = kernels.size();
  std::vector<absl::StatusOr<CachedKernel>> results(n, absl::UnknownError("not compiled"));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      results[i] = GetOrCompile(kernels[i], arch, extra_options);
    }
  };
  size_t workers = threads > 0 ? static_cast<size_t>(threads)
                               : std::max<size_t>(1, std::thread::hardware_concurrency());
  workers = std::min(workers, n);
  if (workers <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(workers);
    for (size_t t = 0; t < workers; ++t) pool.emplace_back(work);
    for (std::thread& t : pool) t.join();
  }

  std::vector<CachedKernel> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!results[i].ok()) {
      const absl::Status& s = results[i].status();
      return absl::Status(s.code(), absl::StrCat("kernel ", kernels[i].name, " (", i + 1, " of ", n,
                                                 " in the batch): ", s.message()));
    }
    out.push_back(*std::move(results[i]));
  }
  return out;
}

}  // namespace kiln
