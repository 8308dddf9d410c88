#include "runtime/buffer_plan.h"

#include <algorithm>
#include <map>

namespace kiln {

std::vector<int> StepBuffers(const Step& step) {
  switch (step.kind) {
    case Step::Kind::kKernel: {
      std::vector<int> ids = step.kernel.args;
      if (step.kernel.scratch >= 0) ids.push_back(step.kernel.scratch);
      return ids;
    }
    case Step::Kind::kMatmul: {
      std::vector<int> ids = {step.matmul.a, step.matmul.b, step.matmul.d};
      if (step.matmul.bias >= 0) ids.push_back(step.matmul.bias);
      if (step.matmul.residual >= 0) ids.push_back(step.matmul.residual);
      return ids;
    }
    case Step::Kind::kCopy:
      return {step.copy.src, step.copy.dst};
  }
  return {};
}

int ResolveAlias(const std::vector<Buffer>& buffers, int id) {
  while (buffers[id].kind == BufferKind::kAlias) id = buffers[id].alias_of;
  return id;
}

std::vector<Lifetime> ArenaLifetimes(const std::vector<Buffer>& buffers, const std::vector<Step>& steps,
                                     bool in_place) {
  std::map<int, Lifetime> live;
  for (int s = 0; s < static_cast<int>(steps.size()); ++s) {
    for (int id : StepBuffers(steps[s])) {
      int root = ResolveAlias(buffers, id);
      if (buffers[root].kind != BufferKind::kArena) continue;
      auto [it, inserted] = live.try_emplace(root, Lifetime{root, s, s});
      if (!inserted) it->second.last = s;
    }
  }
  // In place: the output joins the input's lifetime where this step is the last to touch the
  // input (through any view) and the first to touch the output, and no other argument of the
  // step is a view of the input (it would be read at other indices).
  std::map<int, Lifetime> groups = live;  // by the buffer that heads each group
  std::map<int, int> head;                // a buffer written over another -> its group's head
  auto head_of = [&](int root) {
    auto it = head.find(root);
    return it == head.end() ? root : it->second;
  };
  for (int s = 0; in_place && s < static_cast<int>(steps.size()); ++s) {
    if (steps[s].kind != Step::Kind::kKernel) continue;
    const KernelStep& k = steps[s].kernel;
    for (const auto& [in, out] : k.in_place) {
      const int a = ResolveAlias(buffers, k.args[in]), b = ResolveAlias(buffers, k.args[out]);
      if (!live.count(a) || !live.count(b) || head.count(b)) continue;
      Lifetime& group = groups.at(head_of(a));
      const int uses_of_a = static_cast<int>(std::count_if(k.args.begin(), k.args.end(), [&](int id) {
        return ResolveAlias(buffers, id) == a;
      }));
      if (live.at(a).last != s || group.last != s || live.at(b).first != s || uses_of_a != 1 ||
          buffers[a].bytes != buffers[b].bytes) {
        continue;
      }
      group.last = live.at(b).last;
      group.written_over.push_back(b);
      head[b] = group.buffer;
      groups.erase(b);
    }
  }
  std::vector<Lifetime> out;
  for (auto& [id, lifetime] : groups) out.push_back(lifetime);
  return out;
}

namespace {
int64_t AlignArena(int64_t bytes) {
  return (std::max<int64_t>(bytes, 1) + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}
}  // namespace

int64_t PeakLiveBytes(const Program& program) {
  std::vector<int64_t> live(program.steps.size() + 1, 0);  // a difference array over the steps
  for (const Lifetime& l : ArenaLifetimes(program.buffers, program.steps)) {
    const int64_t size = AlignArena(program.buffers[l.buffer].bytes);
    live[l.first] += size;
    live[l.last + 1] -= size;
  }
  int64_t now = 0, peak = 0;
  for (const int64_t delta : live) {
    now += delta;
    peak = std::max(peak, now);
  }
  return peak;
}

void PlanArena(Program& program, bool share) {
  std::vector<Lifetime> lifetimes = ArenaLifetimes(program.buffers, program.steps, /*in_place=*/share);
  std::sort(lifetimes.begin(), lifetimes.end(), [&](const Lifetime& a, const Lifetime& b) {
    int64_t sa = program.buffers[a.buffer].bytes, sb = program.buffers[b.buffer].bytes;
    if (sa != sb) return sa > sb;
    return a.first != b.first ? a.first < b.first : a.buffer < b.buffer;
  });
  struct Placed {
    int64_t begin, end;
    int first, last;
  };
  std::vector<Placed> placed;
  int64_t arena = 0;
  for (const Lifetime& l : lifetimes) {
    const int64_t size = AlignArena(program.buffers[l.buffer].bytes);
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const Placed& p : placed) {
      if (!share || (p.first <= l.last && l.first <= p.last)) busy.push_back({p.begin, p.end});
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (offset + size <= begin) break;
      offset = std::max(offset, end);
    }
    program.buffers[l.buffer].offset = offset;
    for (int id : l.written_over) program.buffers[id].offset = offset;
    placed.push_back({offset, offset + size, l.first, l.last});
    arena = std::max(arena, offset + size);
  }
  program.arena_bytes = arena;
}

}  // namespace kiln
