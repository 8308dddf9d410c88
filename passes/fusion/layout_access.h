// How an elementwise region (pointwise, layout) reads its inputs, and whether its kernel is the
// tiled transpose kernel (templates/layout.cuh) — the analysis of those two kinds, computed once
// by their analyze hook and kept on the region (Region::layout); the cost model
// (kind_pointwise.cc), KernelParams (codegen/kernel_params.cc) and the tiled emitter
// (codegen/emit_layout.cc) all read it, none re-derives it.
//
// Affine index maps. The kernel evaluates every output element at its position c in the region's
// space (the largest output), walking back from the output: each member is evaluated at the
// position its users give it. Through pointwise broadcasts, broadcast_to, transpose, slice and
// reshape that position stays affine in c: coordinate k of a node is offset_k + sum_d coeff_kd c_d
// (a reshape re-splits a linear index into digits, which stays affine when no digit carries). So
// every input is read at an affine form of c. A concat evaluates piece k at its position shifted
// by the piece's start along the axis (affine too), and selects the piece by its axis coordinate
// (a ConcatSelect): such a region is not `affine` (the tiled kernel does not select) but its
// reads have forms. Gather looks up its elements: a region holding one runs the plain kernel.
//
// A reshape can need a space axis split (a transpose of [N,H,W,C] read as [N,H*W,C] needs the
// space's H*W axis as H and W): the walk then restarts on the refined space, which has the same
// row-major order.
//
// Canonical space. Axes of extent 1 are dropped and adjacent axes merged wherever every form the
// kernel evaluates (reads, stores, the element indices of iota and dropout) agrees, so a
// [B,S,H,D] -> [B,H,S,D] permute is the 3-axis problem it is and a 2-D transpose of a reshaped
// 3-D input is 2-D. On it `a` is the last axis (the outputs' innermost, stride 1) and each read is
//   along      stride 1 along a: coalesced in the plain kernel too;
//   broadcast  stride 0 along a: one element per row of a;
//   transposed stride 1 along another axis: a warp of the plain kernel (32 consecutive elements
//              along a) touches up to 32 sectors of it;
//   strided    no axis of stride 1 (a step-2 slice of the innermost axis): read as it is.
// `plain_waste` is how many times the minimum number of 32-byte sectors the first warp of the
// plain kernel fetches for the read (simulated on its 32 addresses; 1 for a coalesced read).
//
// The tiled kernel. When some transposed read wastes at least kStageWaste, its unit-stride axis
// becomes `b` and the transposed reads along b are staged through shared memory (as many as fit
// kStagedSmemBytes at a 32 x 32 tile): the kernel is coalesced on both sides. Transposed reads
// along another axis (a second permutation) stay direct, costing their plain_waste (Summary()
// says so, and the cost model charges it).
#ifndef KILN_PASSES_FUSION_LAYOUT_ACCESS_H_
#define KILN_PASSES_FUSION_LAYOUT_ACCESS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ir/graph.h"
#include "passes/fusion/region.h"

namespace kiln {

// offset + sum_d coeff[d] c_d over the axes of a space.
struct AffineForm {
  int64_t offset = 0;
  std::vector<int64_t> coeff;
  // "3+0,4,1": a key for memos and comparisons.
  std::string Key() const;
  bool operator==(const AffineForm& o) const { return offset == o.offset && coeff == o.coeff; }
};
// A node's coordinates, one form per axis of the node.
using AffineIndex = std::vector<AffineForm>;

// The step functions both the analysis and the emitter walk with; forms are over the axes of
// `space`. The coordinates of the space itself.
AffineIndex SpaceIndex(const Shape& space);
// The row-major linear index of a node of `shape` at `at`.
AffineForm LinearForm(const AffineIndex& at, const Shape& shape, const Shape& space);
// A space axis that spans several digits of a reshape (an output [N, H*W, C] of a transpose of
// [N, H, W, C]): splitting it into [extent / inner, inner] makes the digits affine.
struct AxisSplit {
  int axis = -1;
  int64_t inner = 0;
};
// The coordinates in `shape` of the linear index `linear` over a space of extents `space`:
// nullopt unless every term stays within one digit without carrying (then *split, if given,
// names the split of a space axis that would help, when one would).
std::optional<AffineIndex> DigitsOf(const AffineForm& linear, const Shape& shape, const Shape& space,
                                    AxisSplit* split = nullptr);
// Where `n`, evaluated at `at`, reads its operand k (a concat's piece k: where the piece is
// selected; nullopt for gather, and for a reshape whose digits carry). Axes of extent 1 get the
// zero form.
std::optional<AffineIndex> OperandIndex(const Node& n, int k, const AffineIndex& at, const Shape& space,
                                        AxisSplit* split = nullptr);
// Where an output of the space's element count is evaluated at a point of the space (nullopt
// when its shape re-splits the space's linear index with a carry).
std::optional<AffineIndex> OutputIndex(const Node& output, const Shape& space, AxisSplit* split = nullptr);

// A concat evaluated at some point: it selects piece k where starts[k] <= coord < starts[k + 1].
struct ConcatSelect {
  const Node* concat = nullptr;
  AffineForm coord;             // its axis coordinate (canonical in a LayoutPlan)
  std::vector<int64_t> starts;  // each piece's first coordinate, then the axis extent
};

enum class ReadKind { kAlong, kBroadcast, kTransposed, kStrided, kStaged };
const char* ReadKindName(ReadKind kind);

struct LayoutRead {
  const Node* input = nullptr;
  AffineForm form;          // canonical
  ReadKind kind = ReadKind::kAlong;
  int unit_axis = -1;       // the canonical axis of stride 1 (-1: none)
  double plain_waste = 1;   // sectors the plain kernel's first warp fetches / the minimum
  double vector_waste = 1;  // the same for a warp of the vectorised plain kernel (32 x plain_vector
                            // elements: lanes of one thread share sectors through L1)
};

// A transposed read is staged when the plain kernel would fetch at least this many times the
// sectors it needs; below that the tile's barriers and half-empty edge tiles are not worth it.
inline constexpr double kStageWaste = 2.0;
// Static shared memory of the staged tiles at the smallest tile (32 x 32): the 48 KB a kernel
// may declare statically.
inline constexpr int64_t kStagedSmemBytes = 48 * 1024;

struct LayoutPlan {
  bool affine = false;               // every read is an affine map of the space, no concat selects
  Shape space;                       // the region's space, axes split where a reshape needs it:
                                     // the axes the forms are written over (walk with this one)
  std::string why_plain;             // why the plain kernel runs (empty when tiled)
  std::vector<int64_t> extents;      // the canonical space, outermost first
  std::vector<std::vector<int>> groups;  // the region space's axes in each canonical axis
  int a = -1, b = -1;                // tile axes (b = -1: not tiled)
  std::vector<LayoutRead> reads;     // one per distinct (input, form)
  std::vector<AffineForm> stores;    // each output's store address (region.outputs order), canonical
  std::vector<ConcatSelect> selects; // every concat evaluation, canonical
  int plain_vector = 1;              // the plain kernel's widest vector (plain_vector.h); 1: none
  int max_vector = 1;                // the widest vector (elements) the tiled kernel may use
  int staged_bytes = 0;              // the largest staged element

  bool tiled() const { return b >= 0; }
  // `f` (over the region's space) on the canonical axes.
  AffineForm Canonical(const AffineForm& f) const;
  // The canonical axes other than a and b, outermost first, and their element count.
  std::vector<int> RestAxes() const;
  int64_t RestCount() const;
  // Tiles of tb x ta elements of (b, a) over the whole space.
  int64_t Tiles(int tb, int ta) const;
  // Bytes the plain kernel's (or the tiled kernel's direct) reads fetch beyond what they use;
  // `vectors`: the plain kernel runs plain_vector elements per thread.
  int64_t WastedReadBytes(int64_t space_elements, bool vectors = false) const;
  // One sentence for kernel notes, the ledger and `kiln dump`: the tiled axes and what is
  // staged, and every read left uncoalesced with its cost ("" when nothing is transposed).
  std::string Summary() const;
};

// The plan of an elementwise region (its space, nodes, inputs and outputs are set).
std::shared_ptr<const LayoutPlan> PlanLayout(const Region& region);

// The tiled kernel's launch shape: tb x ta tiles of (b, a), `vector` elements per access,
// `threads` per block (templates/layout.cuh's TileShape).
struct TileChoice {
  int tb = 32, ta = 32, vector = 1, threads = 256;
};
// The shape the cost model prices and codegen uses by default: 64 x 64 tiles with 16-byte
// vectors where the plan allows at least 4 elements per vector, else 32 x 32 tiles with the
// widest vector it allows (1: the classic transpose; wider 64-tiles of narrow vectors unroll into
// too many registers); a side longer than the tile that the tiles would pad by more than
// kTilePadding (80 along a: 128 with 64-wide tiles, the last tile a quarter used) is narrowed to
// the widest tile (at least 16) that pads it by at most that (16: 80 exactly), and a side whose extent is at most half the
// tile is narrowed (at least 8), the other then widened (at most 256) to keep the tile's elements;
// halved while the staged tiles exceed kStagedSmemBytes.
inline constexpr double kTilePadding = 1.125;
TileChoice DefaultTile(const LayoutPlan& plan);
// Whether templates/layout.cuh's TileShape accepts `tile` for this plan (its static_asserts,
// the vector limit, the shared memory); the error says which rule fails.
absl::Status CheckTile(const LayoutPlan& plan, const TileChoice& tile);
// Shared memory of the staged tiles at `tile`.
int64_t StagedSmemBytes(const LayoutPlan& plan, const TileChoice& tile);

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_LAYOUT_ACCESS_H_
