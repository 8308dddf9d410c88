// The buffer plan: where each intermediate tensor lives in the one device arena of a run
// (DESIGN.md §6). A buffer is live from the first step that touches it to the last; two
// buffers whose live ranges overlap get disjoint bytes, others may share. One exception makes
// two overlapping buffers share bytes: a kernel that may write an output over an input
// (KernelStep::in_place: same size, each element read by the thread that writes it, before it
// writes it) gets its output placed exactly over that input when this step is the input's last
// use and the output's first. The two then form one lifetime (inductor does the same for a
// pointwise kernel over a dead input: bias + GELU after a matmul writes over the matmul's output).
// Placement is greedy (largest first, then earliest start), each lifetime at the lowest
// 256-byte-aligned offset that fits between those already placed whose lifetimes overlap its
// own. The arena is therefore never larger than the sum of the buffers and, for a chain, about
// two of them.
#ifndef KILN_RUNTIME_BUFFER_PLAN_H_
#define KILN_RUNTIME_BUFFER_PLAN_H_

#include <cstdint>
#include <vector>

#include "runtime/program.h"

namespace kiln {

inline constexpr int64_t kArenaAlignment = 256;

// The buffer ids step `step` reads or writes (aliases as written; see ResolveAlias).
std::vector<int> StepBuffers(const Step& step);

// Follows kAlias links to the buffer that owns the bytes.
int ResolveAlias(const std::vector<Buffer>& buffers, int id);

struct Lifetime {
  int buffer = -1;
  int first = 0, last = 0;  // step indices, inclusive
  std::vector<int> written_over;  // buffers placed over `buffer` in place, in step order
};
// Lifetimes of the kArena buffers that `steps` touch (through aliases), by buffer id order.
// With `in_place`, a kernel's output written over a dead input joins that input's lifetime
// (listed in its written_over) instead of having one of its own.
std::vector<Lifetime> ArenaLifetimes(const std::vector<Buffer>& buffers, const std::vector<Step>& steps,
                                     bool in_place = true);

// The most arena bytes live at once: over the steps, the largest sum of the (aligned) sizes of
// the kArena buffers whose lifetimes include that step. No placement can use fewer bytes, so
// Program::arena_bytes (the greedy placement) is measured against it: equal for a chain, above
// it where fragmentation costs bytes.
int64_t PeakLiveBytes(const Program& program);

// Sets the offset of every kArena buffer of `program` and program.arena_bytes. With
// `share` false every buffer gets bytes of its own, none written in place (for debugging:
// every intermediate can be read back after a run).
void PlanArena(Program& program, bool share = true);

}  // namespace kiln

#endif  // KILN_RUNTIME_BUFFER_PLAN_H_
