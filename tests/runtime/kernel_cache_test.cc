// KernelCache (runtime/jit/kernel_cache.h) with real NVRTC compiles for sm_90a (no GPU needed),
// each test on its own temporary cache directory: the memory, disk and compile layers and their
// stats, keys that change with every input, corrupt or foreign entries reported and rewritten,
// the disk layer switched off, and the parallel batch compile (order, deduplication, failure).
// Prints, without asserting, the cold compile and warm disk-hit times of one kernel.
#include "runtime/jit/kernel_cache.h"

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr char kArch[] = "sm_90a";

// k<i>: multiplies by i + 2, so every i is a distinct kernel.
KernelToCompile Tiny(int i = 0) {
  std::string name = absl::StrCat("k", i);
  return {name, absl::StrCat("extern \"C\" __global__ void ", name,
                             "(float* x) { x[threadIdx.x] *= ", i + 2, "; }\n")};
}

// A fresh directory per test (removed first, so reruns start cold).
std::string CacheDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::path(::testing::TempDir()) / "kiln_kernel_cache_test" /
                 absl::StrCat(info->test_suite_name(), ".", info->name());
  fs::remove_all(dir);
  return dir.string();
}

// The entry file of `key` in `dir` (whatever its extension).
fs::path EntryOf(const std::string& dir, const std::string& key) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind(key, 0) == 0) return e.path();
  }
  ADD_FAILURE() << "no entry for key " << key << " in " << dir;
  return {};
}

int EntryCount(const std::string& dir) {
  if (!fs::exists(dir)) return 0;
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file() ? 1 : 0;
  return n;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), bytes.size());
}

TEST(KernelCache, KeyIsStableAndChangesWithEveryInput) {
  const KernelToCompile k = Tiny();
  const std::string key = KernelCache::Key(k, kArch, {});
  EXPECT_EQ(key.size(), 16u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos) << key;
  EXPECT_EQ(KernelCache::Key(k, kArch, {}), key);
  EXPECT_NE(KernelCache::Key({"k1", k.source}, kArch, {}), key);
  EXPECT_NE(KernelCache::Key({k.name, k.source + " "}, kArch, {}), key);
  EXPECT_NE(KernelCache::Key(k, "sm_80", {}), key);
  EXPECT_NE(KernelCache::Key(k, kArch, {"-DX=1"}), key);
  // Fields are length-prefixed: moving text between two options changes the key.
  EXPECT_NE(KernelCache::Key(k, kArch, {"-DA", "B"}), KernelCache::Key(k, kArch, {"-DAB", ""}));
}

TEST(KernelCache, CompilesThenHitsMemoryThenDisk) {
  const std::string dir = CacheDir();
  const KernelToCompile k = Tiny();
  KernelCache cache(dir);
  EXPECT_EQ(cache.directory(), dir);

  auto cold = cache.GetOrCompile(k, kArch);
  ASSERT_TRUE(cold.ok()) << cold.status();
  EXPECT_EQ(cold->origin, "nvrtc");
  EXPECT_FALSE(cold->compiled.cubin.empty());
  EXPECT_EQ(cache.stats().compiles, 1);
  EXPECT_EQ(cache.stats().disk_writes, 1);
  EXPECT_EQ(EntryCount(dir), 1);  // no temporary file left behind
  EntryOf(dir, KernelCache::Key(k, kArch, {}));

  auto memory = cache.GetOrCompile(k, kArch);
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_EQ(memory->origin, "memory");
  EXPECT_EQ(memory->compiled.cubin, cold->compiled.cubin);
  EXPECT_EQ(cache.stats().memory_hits, 1);
  EXPECT_EQ(cache.stats().compiles, 1);

  KernelCache fresh(dir);  // a new process, in effect
  auto disk = fresh.GetOrCompile(k, kArch);
  ASSERT_TRUE(disk.ok()) << disk.status();
  EXPECT_EQ(disk->origin, "disk");
  const CompiledCuda& a = cold->compiled;
  const CompiledCuda& b = disk->compiled;
  EXPECT_EQ(b.cubin, a.cubin);
  EXPECT_EQ(b.kernel_name, a.kernel_name);
  EXPECT_EQ(b.arch, a.arch);
  EXPECT_EQ(b.ptx, a.ptx);
  EXPECT_EQ(b.log, a.log);
  EXPECT_EQ(b.registers, a.registers);
  EXPECT_EQ(b.spill_store_bytes, a.spill_store_bytes);
  EXPECT_EQ(b.spill_load_bytes, a.spill_load_bytes);
  EXPECT_EQ(b.stack_frame_bytes, a.stack_frame_bytes);
  EXPECT_EQ(b.static_smem_bytes, a.static_smem_bytes);
  EXPECT_EQ(b.compile_ms, a.compile_ms);
  EXPECT_EQ(b.options, a.options);
  EXPECT_GT(b.registers, 0);
  CacheStats s = fresh.stats();
  EXPECT_EQ(s.disk_hits, 1);
  EXPECT_EQ(s.compiles, 0);
  EXPECT_EQ(s.corrupt, 0);
  EXPECT_EQ(s.disk_writes, 0);
  auto again = fresh.GetOrCompile(k, kArch);  // the disk hit was kept in memory
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->origin, "memory");

  std::printf(
      "[ timing   ] %s: cold compile %.2f ms (lookup %.2f ms), warm disk hit %.3f ms, "
      "memory hit %.4f ms\n",
      k.name.c_str(), a.compile_ms, cold->lookup_ms, disk->lookup_ms, again->lookup_ms);
}

TEST(KernelCache, ChangedSourceOptionOrArchMisses) {
  const std::string dir = CacheDir();
  const KernelToCompile k = Tiny();
  ASSERT_TRUE(KernelCache(dir).GetOrCompile(k, kArch).ok());

  KernelCache cache(dir);
  KernelToCompile edited = k;
  edited.source += "// edited\n";
  auto source = cache.GetOrCompile(edited, kArch);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ(source->origin, "nvrtc");
  auto option = cache.GetOrCompile(k, kArch, {"-DKILN_TEST_OPTION=1"});
  ASSERT_TRUE(option.ok()) << option.status();
  EXPECT_EQ(option->origin, "nvrtc");
  EXPECT_EQ(option->compiled.options.back(), "-DKILN_TEST_OPTION=1");
  auto arch = cache.GetOrCompile(k, "sm_80");
  ASSERT_TRUE(arch.ok()) << arch.status();
  EXPECT_EQ(arch->origin, "nvrtc");
  EXPECT_EQ(arch->compiled.arch, "sm_80");
  auto same = cache.GetOrCompile(k, kArch);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->origin, "disk");
  EXPECT_EQ(cache.stats().compiles, 3);
  EXPECT_EQ(cache.stats().disk_hits, 1);
  EXPECT_EQ(EntryCount(dir), 4);
}

// One way of damaging the entry at `path` (`other`: a valid entry of another key), and the
// reason the reader must give.
struct Damage {
  const char* name;
  void (*apply)(const fs::path& path, const fs::path& other);
  const char* reason;
};

void FlipByte(const fs::path& path, long offset) {  // offset < 0: from the end
  std::string b = ReadFile(path);
  b[offset >= 0 ? offset : b.size() + offset] ^= 0x5a;
  WriteFile(path, b);
}

const Damage kDamages[] = {
    {"flip a payload byte", [](const fs::path& p, const fs::path&) { FlipByte(p, -100); },
     "checksum mismatch"},
    {"flip the magic", [](const fs::path& p, const fs::path&) { FlipByte(p, 0); }, "bad magic"},
    {"flip the format version", [](const fs::path& p, const fs::path&) { FlipByte(p, 8); },
     "format version"},
    {"flip the stored checksum", [](const fs::path& p, const fs::path&) { FlipByte(p, 40); },
     "checksum mismatch"},
    {"truncate to half",
     [](const fs::path& p, const fs::path&) { fs::resize_file(p, fs::file_size(p) / 2); },
     "header says"},
    {"truncate inside the header",
     [](const fs::path& p, const fs::path&) { fs::resize_file(p, 10); }, "truncated header"},
    {"empty file", [](const fs::path& p, const fs::path&) { WriteFile(p, ""); },
     "truncated header"},
    {"append a byte", [](const fs::path& p, const fs::path&) { WriteFile(p, ReadFile(p) + "x"); },
     "header says"},
    {"garbage", [](const fs::path& p, const fs::path&) { WriteFile(p, std::string(4096, '\x7f')); },
     "bad magic"},
    {"another key's entry",
     [](const fs::path& p, const fs::path& other) {
       fs::copy_file(other, p, fs::copy_options::overwrite_existing);
     },
     "holds key"},
};

TEST(KernelCache, CorruptEntriesAreReportedRecompiledAndRewritten) {
  const KernelToCompile k = Tiny(), other = Tiny(1);
  for (const Damage& damage : kDamages) {
    SCOPED_TRACE(damage.name);
    const std::string dir = CacheDir();
    CompiledCuda good;
    {
      KernelCache cache(dir);
      auto first = cache.GetOrCompile(k, kArch);
      ASSERT_TRUE(first.ok()) << first.status();
      good = first->compiled;
      ASSERT_TRUE(cache.GetOrCompile(other, kArch).ok());
    }
    const fs::path path = EntryOf(dir, KernelCache::Key(k, kArch, {}));
    damage.apply(path, EntryOf(dir, KernelCache::Key(other, kArch, {})));

    KernelCache reader(dir);
    ::testing::internal::CaptureStderr();
    setenv("KILN_DUMP", "cache", 1);
    auto recompiled = reader.GetOrCompile(k, kArch);
    unsetenv("KILN_DUMP");
    const std::string log = ::testing::internal::GetCapturedStderr();
    ASSERT_TRUE(recompiled.ok()) << recompiled.status();
    EXPECT_EQ(recompiled->origin, "nvrtc");
    EXPECT_EQ(recompiled->compiled.cubin, good.cubin);
    EXPECT_NE(log.find("corrupt entry"), std::string::npos) << log;
    EXPECT_NE(log.find(damage.reason), std::string::npos) << log;
    CacheStats s = reader.stats();
    EXPECT_EQ(s.corrupt, 1);
    EXPECT_EQ(s.compiles, 1);
    EXPECT_EQ(s.disk_hits, 0);
    EXPECT_EQ(s.disk_writes, 1);

    KernelCache after(dir);  // the rewritten entry is good again
    auto hit = after.GetOrCompile(k, kArch);
    ASSERT_TRUE(hit.ok()) << hit.status();
    EXPECT_EQ(hit->origin, "disk");
    EXPECT_EQ(hit->compiled.cubin, good.cubin);
    EXPECT_EQ(after.stats().corrupt, 0);
  }
}

TEST(KernelCache, NoDiskLayerWithoutDirectory) {
  const KernelToCompile k = Tiny();
  KernelCache cache("");
  EXPECT_TRUE(cache.directory().empty());
  ASSERT_TRUE(cache.GetOrCompile(k, kArch).ok());
  auto again = KernelCache("").GetOrCompile(k, kArch);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->origin, "nvrtc");  // nothing was kept outside the first cache
  EXPECT_EQ(cache.stats().disk_writes, 0);
  EXPECT_EQ(cache.GetOrCompile(k, kArch)->origin, "memory");
}

TEST(KernelCache, UnwritableDirectoryIsNotAnError) {
  const std::string dir = CacheDir();
  fs::create_directories(dir);
  const std::string file = dir + "/a_file";
  WriteFile(file, "not a directory");
  KernelCache cache(file + "/cache");  // cannot be created, even by root
  ::testing::internal::CaptureStderr();
  auto compiled = cache.GetOrCompile(Tiny(), kArch);
  auto second = cache.GetOrCompile(Tiny(1), kArch);
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(compiled->origin, "nvrtc");
  EXPECT_EQ(cache.stats().disk_writes, 0);
  EXPECT_EQ(cache.stats().corrupt, 0);
  // One warning for the cache, not one per kernel.
  const size_t at = log.find("warning: cannot write to");
  EXPECT_NE(at, std::string::npos) << log;
  EXPECT_EQ(log.find("warning", at + 1), std::string::npos) << log;
}

TEST(KernelCache, DirectoryFromEnvironment) {
  const char* saved_home = getenv("HOME");
  const std::string home = saved_home ? saved_home : "";
  setenv("KILN_CACHE_DIR", "/tmp/kiln_explicit", 1);
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  setenv("HOME", "/tmp/home", 1);
  EXPECT_EQ(KernelCache::DirectoryFromEnv(), "/tmp/kiln_explicit");
  setenv("KILN_CACHE_DIR", "", 1);  // empty: as if unset
  EXPECT_EQ(KernelCache::DirectoryFromEnv(), "/tmp/xdg/kiln");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(KernelCache::DirectoryFromEnv(), "/tmp/home/.cache/kiln");
  unsetenv("HOME");
  EXPECT_EQ(KernelCache::DirectoryFromEnv(), "");
  setenv("KILN_CACHE_DIR", "off", 1);
  setenv("HOME", "/tmp/home", 1);
  EXPECT_EQ(KernelCache::DirectoryFromEnv(), "");
  // The process-wide cache is made once, here with the disk layer off.
  EXPECT_EQ(KernelCache::Default().directory(), "");
  EXPECT_EQ(&KernelCache::Default(), &KernelCache::Default());
  unsetenv("KILN_CACHE_DIR");
  setenv("HOME", home.c_str(), 1);
}

TEST(KernelCache, BatchKeepsInputOrderAndCompilesRepeatsOnce) {
  const std::string dir = CacheDir();
  std::vector<KernelToCompile> kernels;
  for (int i = 0; i < 6; ++i) kernels.push_back(Tiny(i));
  kernels.push_back(Tiny(2));  // a repeat: compiled once, the second lookup waits and hits memory
  KernelCache cache(dir);
  auto batch = cache.GetOrCompileAll(kernels, kArch, 3);
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->size(), kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_EQ((*batch)[i].compiled.kernel_name, kernels[i].name) << i;
    EXPECT_FALSE((*batch)[i].compiled.cubin.empty()) << i;
  }
  EXPECT_EQ((*batch)[2].compiled.cubin, (*batch)[6].compiled.cubin);
  CacheStats s = cache.stats();
  EXPECT_EQ(s.compiles, 6);
  EXPECT_EQ(s.memory_hits, 1);
  EXPECT_EQ(s.disk_writes, 6);
  EXPECT_EQ(EntryCount(dir), 6);

  KernelCache fresh(dir);
  auto warm = fresh.GetOrCompileAll(kernels, kArch, 0);  // 0: hardware concurrency
  ASSERT_TRUE(warm.ok()) << warm.status();
  for (size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_EQ((*warm)[i].compiled.cubin, (*batch)[i].compiled.cubin) << i;
  }
  EXPECT_EQ(fresh.stats().disk_hits, 6);
  EXPECT_EQ(fresh.stats().compiles, 0);
  auto empty = fresh.GetOrCompileAll({}, kArch, 3);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(KernelCache, BatchFailureNamesTheKernelAfterTheOthersCompiled) {
  const std::string dir = CacheDir();
  std::vector<KernelToCompile> kernels;
  for (int i = 0; i < 6; ++i) kernels.push_back(Tiny(i));
  kernels[3] = {
      "broken3",
      "extern \"C\" __global__ void broken3(float* x) { x[threadIdx.x] = undeclared; }\n"};
  KernelCache cache(dir);
  auto batch = cache.GetOrCompileAll(kernels, kArch, 3);
  ASSERT_FALSE(batch.ok());
  const std::string message(batch.status().message());
  EXPECT_NE(message.find("kernel broken3 (4 of 6"), std::string::npos) << message;
  EXPECT_NE(message.find("undeclared"), std::string::npos) << message;  // the NVRTC log
  EXPECT_EQ(cache.stats().compiles, 6);  // every NVRTC invocation, the failed one included
  EXPECT_EQ(cache.stats().disk_writes, 5);
  kernels.erase(kernels.begin() + 3);
  auto rest = cache.GetOrCompileAll(kernels, kArch, 3);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(cache.stats().memory_hits, 5);
  EXPECT_EQ(cache.stats().compiles, 6);
}

}  // namespace
}  // namespace kiln
