// The runtime's plain-data side, no GPU: the buffer plan (lifetimes and placement), the AOT
// artifact (round trip, and every kind of damage refused with a message that says which),
// and Program::Validate.
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "runtime/artifact.h"
#include "runtime/buffer_plan.h"
#include "runtime/program.h"

namespace kiln {
namespace {

Buffer Arena(const std::string& name, int64_t bytes) {
  Buffer b;
  b.name = name;
  b.dtype = DType::kF32;
  b.shape = {bytes / 4};
  b.bytes = bytes;
  b.kind = BufferKind::kArena;
  return b;
}

Step Copy(int src, int dst) {
  Step s;
  s.kind = Step::Kind::kCopy;
  s.copy = {src, dst};
  return s;
}

// A chain a -> b -> c -> d of copies: a and b live in steps 0; b, c in 1; c, d in 2.
Program Chain(int64_t bytes) {
  Program p;
  p.graph_name = "chain";
  p.arch = "sm_90a";
  for (const char* n : {"a", "b", "c", "d"}) p.buffers.push_back(Arena(n, bytes));
  p.steps = {Copy(0, 1), Copy(1, 2), Copy(2, 3)};
  return p;
}

TEST(BufferPlanTest, LifetimesSpanFirstToLastUse) {
  Program p = Chain(1024);
  std::vector<Lifetime> l = ArenaLifetimes(p.buffers, p.steps);
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0].first, 0);
  EXPECT_EQ(l[0].last, 0);
  EXPECT_EQ(l[1].first, 0);
  EXPECT_EQ(l[1].last, 1);
  EXPECT_EQ(l[3].first, 2);
  EXPECT_EQ(l[3].last, 2);
}

TEST(BufferPlanTest, AChainReusesTwoSlots) {
  Program p = Chain(1000);  // rounds up to 1024 per slot
  PlanArena(p);
  EXPECT_EQ(p.arena_bytes, 2 * 1024);
  // Buffers live at the same time never overlap.
  std::vector<Lifetime> l = ArenaLifetimes(p.buffers, p.steps);
  for (const Lifetime& x : l) {
    for (const Lifetime& y : l) {
      if (x.buffer >= y.buffer || x.last < y.first || y.last < x.first) continue;
      const Buffer &bx = p.buffers[x.buffer], &by = p.buffers[y.buffer];
      EXPECT_TRUE(bx.offset + bx.bytes <= by.offset || by.offset + by.bytes <= bx.offset)
          << bx.name << " and " << by.name << " overlap";
    }
  }
  for (const Buffer& b : p.buffers) EXPECT_EQ(b.offset % kArenaAlignment, 0);
}

// The liveness bound counts what is live together: two slots for a chain, the placement equal
// to it; a buffer alive across the chain adds its bytes to every step, and a large buffer
// freed between two small ones that outlive it leaves a hole the greedy placement may not
// fill, so the arena is measured against the bound, never below it.
TEST(BufferPlanTest, PeakLiveBytesBoundsTheArena) {
  Program chain = Chain(1000);
  EXPECT_EQ(PeakLiveBytes(chain), 2 * 1024);
  PlanArena(chain);
  EXPECT_EQ(chain.arena_bytes, PeakLiveBytes(chain));

  Program long_lived = Chain(1024);
  long_lived.buffers.push_back(Arena("kept", 4096));  // id 4, read by the first and last steps
  long_lived.steps.front().copy.src = 4;
  long_lived.steps.front().copy.dst = 1;
  long_lived.steps.push_back(Copy(4, 3));
  EXPECT_EQ(PeakLiveBytes(long_lived), 4096 + 2 * 1024);
  PlanArena(long_lived);
  EXPECT_GE(long_lived.arena_bytes, PeakLiveBytes(long_lived));

  Program unshared = Chain(1024);
  PlanArena(unshared, /*share=*/false);
  EXPECT_EQ(unshared.arena_bytes, 4 * 1024);
  EXPECT_EQ(PeakLiveBytes(unshared), 2 * 1024);
}

Step Kernel(std::vector<int> args, std::vector<std::pair<int, int>> in_place) {
  Step s;
  s.kind = Step::Kind::kKernel;
  s.kernel.name = "kiln_pw_0";
  s.kernel.module = 0;
  s.kernel.args = std::move(args);
  s.kernel.in_place = std::move(in_place);
  return s;
}

// a -> [kernel writes b over a] -> c. With in-place, b takes a's bytes and the two form one
// lifetime; a's later use, a second view of a among the kernel's arguments, a size mismatch or
// the unshared (debugging) plan each keep b apart.
TEST(BufferPlanTest, AnOutputWrittenInPlaceTakesItsDeadInputsBytes) {
  auto make = [](int64_t b_bytes) {
    Program p;
    for (const char* n : {"x", "a", "b", "c"}) p.buffers.push_back(Arena(n, 1024));
    p.buffers[0].kind = BufferKind::kInput;
    p.buffers[2].bytes = b_bytes;
    p.steps = {Copy(0, 1), Kernel({1, 2}, {{0, 1}}), Copy(2, 3)};
    return p;
  };
  Program p = make(1024);
  std::vector<Lifetime> l = ArenaLifetimes(p.buffers, p.steps);
  ASSERT_EQ(l.size(), 2u);  // {a, b over a}, c
  EXPECT_EQ(l[0].buffer, 1);
  EXPECT_EQ(l[0].written_over, std::vector<int>{2});
  EXPECT_EQ(l[0].first, 0);
  EXPECT_EQ(l[0].last, 2);
  PlanArena(p);
  EXPECT_EQ(p.buffers[2].offset, p.buffers[1].offset);
  EXPECT_EQ(p.arena_bytes, 2 * 1024);
  EXPECT_EQ(PeakLiveBytes(p), p.arena_bytes);

  Program read_later = make(1024);
  read_later.buffers.push_back(Arena("d", 1024));  // id 4
  read_later.steps.push_back(Copy(1, 4));          // a is read after the kernel
  PlanArena(read_later);
  EXPECT_NE(read_later.buffers[2].offset, read_later.buffers[1].offset);
  EXPECT_EQ(read_later.arena_bytes, 3 * 1024);

  Program two_views = make(1024);
  Buffer view = Arena("view_of_a", 1024);
  view.kind = BufferKind::kAlias;
  view.alias_of = 1;
  two_views.buffers.push_back(view);  // id 4
  two_views.steps[1].kernel.args = {1, 4, 2};
  two_views.steps[1].kernel.in_place = {{0, 2}};
  PlanArena(two_views);
  EXPECT_NE(two_views.buffers[2].offset, two_views.buffers[1].offset);

  Program sizes = make(512);
  PlanArena(sizes);
  EXPECT_NE(sizes.buffers[2].offset, sizes.buffers[1].offset);

  Program unshared = make(1024);
  PlanArena(unshared, /*share=*/false);
  EXPECT_EQ(unshared.arena_bytes, 3 * 1024);

  // A chain of in-place kernels stays in one slot: a -> b over a -> c over b.
  Program chain = make(1024);
  chain.steps[2] = Kernel({2, 3}, {{0, 1}});
  PlanArena(chain);
  EXPECT_EQ(chain.buffers[3].offset, chain.buffers[1].offset);
  EXPECT_EQ(chain.arena_bytes, 1024);
}

TEST(BufferPlanTest, AliasesExtendTheirOwnersLife) {
  Program p = Chain(256);
  Buffer view = Arena("view_of_a", 256);
  view.kind = BufferKind::kAlias;
  view.alias_of = 0;
  p.buffers.push_back(view);  // id 4
  p.steps.push_back(Copy(4, 3));
  std::vector<Lifetime> l = ArenaLifetimes(p.buffers, p.steps);
  EXPECT_EQ(l[0].buffer, 0);
  EXPECT_EQ(l[0].last, 3);
  EXPECT_EQ(ResolveAlias(p.buffers, 4), 0);
}

Program Small() {
  Program p = Chain(512);
  p.buffers[0].kind = BufferKind::kInput;
  p.buffers[0].index = 0;
  p.buffers[3].kind = BufferKind::kOutput;
  p.buffers[3].index = 0;
  p.inputs = {0};
  p.outputs = {3};
  p.output_names = {"d"};
  p.modules.push_back({"kiln_pw_0", std::string("\x7f" "ELF\0\1\2", 7), 32, 0, 12.5, "block=256"});
  Step k;
  k.kind = Step::Kind::kKernel;
  k.kernel.name = "kiln_pw_0";
  k.kernel.module = 0;
  k.kernel.args = {0, 1};
  k.kernel.in_place = {{0, 1}};
  k.kernel.count = 128;
  k.label = "region 0 pointwise: neg";
  p.steps.insert(p.steps.begin(), k);
  Step m;
  m.kind = Step::Kind::kMatmul;
  m.matmul.spec.m = m.matmul.spec.n = m.matmul.spec.k = 8;
  m.matmul.a = 1, m.matmul.b = 1, m.matmul.d = 2;
  p.steps.push_back(m);
  p.constants = std::string(16, '\3');
  p.ledger_json = "{\"regions\": []}";
  p.lowering_ledger = "{\"record\": \"lowered\", \"region\": 0}\n";
  p.source_graph = "graph chain() {}";
  PlanArena(p);
  return p;
}

TEST(ArtifactTest, RoundTripKeepsEveryField) {
  Program p = Small();
  ASSERT_TRUE(p.Validate().ok()) << p.Validate();
  std::string bytes = SerializeProgram(p);
  absl::StatusOr<Program> q = DeserializeProgram(bytes);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->ToString(), p.ToString());
  EXPECT_EQ(SerializeProgram(*q), bytes);
  EXPECT_EQ(q->modules[0].cubin, p.modules[0].cubin);
  EXPECT_EQ(q->ledger_json, p.ledger_json);
  EXPECT_EQ(q->lowering_ledger, p.lowering_ledger);
  EXPECT_EQ(q->source_graph, p.source_graph);
}

// Every activation epilogue survives the artifact (a reader that dropped one would compute
// something else without a word).
TEST(ArtifactTest, RoundTripKeepsTheMatmulActivation) {
  for (int activation : {0, 1, 2}) {
    Program p = Small();
    MatmulSpec& spec = p.steps.back().matmul.spec;
    spec.gelu = activation == 1;
    spec.relu = activation == 2;
    absl::StatusOr<Program> q = DeserializeProgram(SerializeProgram(p));
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(q->steps.back().matmul.spec.gelu, spec.gelu);
    EXPECT_EQ(q->steps.back().matmul.spec.relu, spec.relu);
    EXPECT_EQ(q->steps.back().matmul.spec.ToString(), spec.ToString());
  }
}

// A TMA kernel's tensor maps survive the artifact (the kernel cannot run without them).
TEST(ArtifactTest, RoundTripKeepsTensorMaps) {
  Program p = Small();
  TensorMapSpec m;
  m.arg = 1;
  m.offset = 64;
  m.dtype = DType::kBF16;
  m.rank = 4;
  m.dims = {96, 300, 8, 2, 1};
  m.strides = {0, 3072, 192, 921600, 0};
  m.box = {64, 128, 1, 1, 1};
  p.steps[0].kernel.launch.tensor_maps = {m};
  ASSERT_TRUE(p.Validate().ok()) << p.Validate();
  absl::StatusOr<Program> q = DeserializeProgram(SerializeProgram(p));
  ASSERT_TRUE(q.ok()) << q.status();
  ASSERT_EQ(q->steps[0].kernel.launch.tensor_maps.size(), 1u);
  EXPECT_TRUE(q->steps[0].kernel.launch.tensor_maps[0] == m) << q->steps[0].kernel.launch.tensor_maps[0].ToString();
  EXPECT_NE(q->ToString().find("tensor map arg 1 +64 bf16 dims [96, 300, 8, 2] strides [3072, 192, 921600] box "
                               "[64, 128, 1, 1] swizzle 128"),
            std::string::npos)
      << q->ToString();
  // Strides TMA cannot take, or an argument the kernel does not have, are refused by name.
  p.steps[0].kernel.launch.tensor_maps[0].strides[1] = 3000;
  EXPECT_NE(p.Validate().message().find("bad tensor map"), std::string::npos) << p.Validate();
  p.steps[0].kernel.launch.tensor_maps[0] = m;
  p.steps[0].kernel.launch.tensor_maps[0].arg = 2;
  EXPECT_NE(p.Validate().message().find("bad tensor map"), std::string::npos) << p.Validate();
}

TEST(ArtifactTest, SaveAndLoadAFile) {
  std::string path = (std::filesystem::temp_directory_path() / "kiln_program_test.kiln").string();
  Program p = Small();
  ASSERT_TRUE(SaveArtifact(p, path).ok());
  EXPECT_TRUE(LooksLikeArtifact(path));
  absl::StatusOr<Program> q = LoadArtifact(path);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->ToString(), p.ToString());
  std::filesystem::remove(path);
  EXPECT_FALSE(LoadArtifact(path).ok());
}

void ExpectRefused(const std::string& bytes, const std::string& why) {
  absl::StatusOr<Program> q = DeserializeProgram(bytes, "x.kiln");
  ASSERT_FALSE(q.ok()) << "accepted: " << why;
  EXPECT_NE(q.status().message().find("x.kiln"), std::string::npos) << q.status();
  EXPECT_NE(q.status().message().find(why), std::string::npos) << q.status();
}

TEST(ArtifactTest, DamageIsRefusedWithItsReason) {
  std::string good = SerializeProgram(Small());
  ExpectRefused("{\"kiln_graph\": 1}", "not a kiln artifact");
  std::string version = good;
  version[8] = 99;
  ExpectRefused(version, "format version 99");
  ExpectRefused(good.substr(0, good.size() - 5), "truncated");
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x40;
  ExpectRefused(flipped, "checksum mismatch");
}

TEST(ProgramTest, ValidateNamesTheProblem) {
  Program p = Small();
  p.steps[0].kernel.args.push_back(42);
  EXPECT_NE(p.Validate().message().find("uses buffer 42"), std::string::npos) << p.Validate();
  p = Small();
  p.buffers[1].kind = BufferKind::kAlias;
  p.buffers[1].alias_of = 2;
  p.buffers[2].kind = BufferKind::kAlias;
  p.buffers[2].alias_of = 1;
  EXPECT_NE(p.Validate().message().find("looping"), std::string::npos) << p.Validate();
  p = Small();
  p.steps[0].kernel.module = 3;
  EXPECT_NE(p.Validate().message().find("module 3"), std::string::npos) << p.Validate();
  p = Small();
  p.steps[0].kernel.in_place = {{0, 2}};  // the kernel has two arguments
  EXPECT_NE(p.Validate().message().find("writes argument 2 over argument 0"), std::string::npos) << p.Validate();
  p = Small();
  p.buffers[1].bytes = 256;  // the output is smaller than the input it would be written over
  p.buffers[1].shape = {64};
  EXPECT_NE(p.Validate().message().find("not two arguments of one size"), std::string::npos) << p.Validate();
}

}  // namespace
}  // namespace kiln
