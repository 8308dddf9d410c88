// AttentionPlan: the analysis an attention region keeps (region_kind.h), computed once by
// AnalyzeAttention and read by legality, the cost model and codegen (codegen/emit_attention.cc).
//
// An attention region is one attention node plus the layout ops around it: the reshapes,
// transposes, slices and broadcasts that carve q, k and v out of a projection's output (and
// expand K/V heads for grouped-query attention), and the transpose/reshape that merges the
// heads of the result. None of them becomes a kernel: each operand is read, and the result
// written, through a StridedView of a region input or output. The template needs of each view:
//   q, k, v, out   batch dims (any atoms), the sequence dim as one atom, the head dim as one
//                  atom of stride 1; q/k/v offsets and strides 16-byte aligned (cp.async),
//                  out's 4-byte aligned (paired stores);
//   mask           broadcast to [batch..., S, T]: batch atoms, then the query and key dims as
//                  one atom each (any strides: it is read an element at a time);
//   seed, offset   the dropout's, when run-time operands: i32/i64 scalars read once;
//   lse            an attention_lse of the same q, k, mask and attributes (AttentionTwin),
//                  written as it is: f32 [batch..., S], contiguous.
#ifndef KILN_PASSES_FUSION_ATTENTION_PLAN_H_
#define KILN_PASSES_FUSION_ATTENTION_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/tensor_map.h"
#include "passes/cost/device_spec.h"
#include "passes/fusion/fusion_decision.h"
#include "passes/fusion/region.h"
#include "passes/fusion/strided_view.h"

namespace kiln {

// One operand (or the output) as the template addresses it: element [b, i, d] (b the flattened
// batch index) is view.source[view.offset + Offset(batch, b) + i * seq.stride + d * inner.stride].
struct AttentionOperand {
  StridedView view;
  ViewDim batch;   // the batch dims' atoms, merged where they chain
  ViewAtom seq;    // S (q, out, the mask's query dim) or T (k, v)
  ViewAtom inner;  // D (q, k), E (v, out), or the mask's key dim
  std::string ToString() const;
};

struct AttentionPlan {
  const Node* attention = nullptr;
  int64_t batch = 1;  // product of the batch dims (B x H)
  // Query heads per K/V head packed into one block's rows (k and v read through a broadcast
  // of the heads: grouped-query attention, written as reshape -> broadcast_to -> reshape), for
  // short queries (S <= 64: decoding), where a block's 16-row tiles would otherwise hold one
  // position of one head. k and v then hold their batch atoms without the group's stride-0
  // atom: K/V batch index = query batch index / group. 1: no packing.
  int64_t group = 1;
  int64_t S = 0, T = 0, D = 0, E = 0;
  double scale = 0;   // the effective scale (1/sqrt(D) where the attribute is 0)
  bool causal = false;
  AttentionOperand q, k, v, out;
  std::optional<AttentionOperand> mask;
  // Dropout on the probabilities (docs/dropout.md): p (0: none), and the seed and offset, each
  // an i32/i64 scalar region input read at run time or, where null, the attribute's value.
  double dropout = 0;
  const Node* seed = nullptr;
  const Node* offset = nullptr;
  uint64_t seed_value = 0, offset_value = 0;
  // The attention_lse written beside the output (f32 [batch..., S], contiguous; rows of the
  // flattened batch b at b x S), or null.
  const Node* lse = nullptr;
  // FLOPs of the two products as the tensor cores execute them: 2 (D + E) per query row (in
  // whole 16-row tiles) and key (in whole key tiles, up to a block's last row when causal; the
  // FlashAttention convention, 2 S T (D + E) halved, ignores the tiles' padding). With
  // block_m = block_n = 1 the exact count.
  double Flops(int64_t block_m, int64_t block_n) const;
  // The largest query position among rows [lo, hi] of a K/V batch's rows (group x S).
  int64_t MaxPosition(int64_t lo, int64_t hi) const;
};

// The template's tiles (templates/attention.cuh AttentionShape): a block owns block_m query
// rows of one batch (warps x 16 x m-tiles each), streams key/value tiles of block_n rows
// through `stages` shared-memory buffers. The one rule the cost model and codegen share.
// wgmma: the sm_90a kernel (templates/attention_sm90.cuh): one 16-row tile per warp, 64 rows
// per warpgroup, head dims padded to 64, no split; stages 3 overlaps a tile's softmax with the
// next tile's q k^T.
// tma (with wgmma): templates/attention_sm90_tma.cuh, K and V tiles copied by the tensor memory
// accelerator from a producer warpgroup into a ring of `stages` slots; `warps` counts the
// computing warps (block_m / 16), the block has 4 more; one block an SM (min_blocks 1).
struct AttentionTiles {
  int block_m = 64, block_n = 64, warps = 4, stages = 2;
  int split = 1;  // blocks sharing one query block's key tiles (flash-decoding); 1: none
  bool wgmma = false;
  int min_blocks = 0;  // __launch_bounds__'s blocks per SM (caps registers); 0: none
  bool tma = false;
  int MTiles() const { return block_m / (16 * warps); }
  int Threads() const { return 32 * warps + (tma ? 128 : 0); }
};
// Whether K and V can be copied with TMA (AttentionTiles::tma): 16-bit, no packed heads, each
// read through a tensor map of rank <= 5 (the head dim, the keys, and at most three batch atoms
// that are not broadcasts) whose strides are multiples of 16 bytes.
FusionDecision AttentionTmaFit(const AttentionPlan& plan);
// K's or V's tensor map: the head dim (extent `d`), the keys, then the batch atoms that are not
// broadcasts, innermost first; box 64 x block_n (x 1 ...), 128-byte swizzle. `arg` is the
// kernel's pointer argument of the operand's source. The Body's KCoords/VCoords use the same
// atoms (TmaBatchAtoms).
TensorMapSpec AttentionTensorMap(const AttentionPlan& plan, const AttentionOperand& op, int64_t d,
                                 const AttentionTiles& tiles, int arg);
// The batch atoms of `op` in its tensor map (dims 2, 3, ...), innermost first, each with the
// product of the extents inside it (b's coordinate is b / inner % extent; the outermost b / inner).
struct TmaBatchAtom {
  int64_t extent = 1, stride = 0, inner = 1;
  bool outermost = false;
};
std::vector<TmaBatchAtom> TmaBatchAtoms(const AttentionOperand& op);
// Head dims padded to what the kernel computes on: 16 (mma.sync k16 steps) or 64 (wgmma's
// 128-byte swizzle panels).
int64_t PaddedHeadDim(const AttentionTiles& tiles, int64_t d);
// Query blocks of one K/V batch, and the (batch x query block) items the grid covers.
int64_t AttentionQueryBlocks(const AttentionPlan& plan, const AttentionTiles& tiles);
// Blocks of `tiles` one SM holds at once: shared memory (and the 1 KiB reserved per block),
// registers (the estimate below), threads.
int AttentionBlocksPerSm(const AttentionPlan& plan, const AttentionTiles& tiles, const DeviceSpec& device);
// The share of `slots` resident blocks a grid of `blocks` keeps busy over its waves:
// blocks / (ceil(blocks / slots) x slots); 1 for whole waves.
inline double WaveFill(int64_t blocks, int64_t slots) {
  if (blocks <= 0 || slots <= 0) return 1.0;
  return static_cast<double>(blocks) / static_cast<double>((blocks + slots - 1) / slots * slots);
}
// K/V batches whose blocks the kernel runs together (templates/attention.cuh BlockRows): as
// many as keep their K and V within kAttentionL2Bytes, so that the blocks in flight share them
// through L2; at least 1. Measured on the lent H200 (bench/results/2026-11-26-h200-session12):
// S 16384, D 128, bf16 took 22.6 ms with every batch's blocks interleaved, 20.5 with sections
// of 32 MiB and 20.3 with 8 MiB; causal shapes were unchanged either way.
inline constexpr int64_t kAttentionL2Bytes = 32LL << 20;
int64_t AttentionL2Section(const AttentionPlan& plan);
// Scratch bytes per K/V batch of a split launch (templates/attention.cuh SplitScratch).
int64_t AttentionScratchBytesPerBatch(const AttentionPlan& plan, const AttentionTiles& tiles);
// Head dims padded to the m16n8k16 products' 16.
inline int64_t PaddedHeadDim(int64_t d) { return (d + 15) / 16 * 16; }
// Dynamic shared memory of `tiles` (bytes): the Q tile and `stages` K and V
// tiles, each row padded by 16 bytes (conflict-free ldmatrix); wgmma: unpadded rows of 64-wide
// panels, plus 1 KiB to align them.
int64_t AttentionSmemBytes(const AttentionPlan& plan, const AttentionTiles& tiles);
// Whether each warp keeps its Q fragments in registers across the key tiles (else it reloads
// them from shared memory per tile): when the estimated fragments, scores and accumulators of
// its m-tiles leave room under the 255-register limit.
bool AttentionQInRegisters(const AttentionPlan& plan, const AttentionTiles& tiles);
// Whether `tiles` fit: shared memory within the device's per-block limit, the register
// estimate within 255, block_m a multiple of 16 x warps.
FusionDecision AttentionTilesFit(const AttentionPlan& plan, const AttentionTiles& tiles, const DeviceSpec& device);
// The default: short queries (S <= 64, decoding) 64 rows on 4 warps; head dims up to 64, 128
// rows on 4 warps (two m-tiles each); up to 128, 128 rows on 8 warps; beyond, 64 rows on 4
// warps with 32-row key tiles. f32 (3xTF32) keeps one m-tile a warp: 128 x 32 on 8 warps up
// to head dim 128, then 64 x 32 on 4 warps. When the blocks would not fill two per SM, the key tiles are
// split over more blocks (at least 4 tiles each, at most 16 splits). On a wgmma device, when
// the blocks fill the SMs without a split: the sm_90a kernel. Without dropout, where K and V
// fit tensor maps (AttentionTmaFit), its TMA form (head dims up to 64: causal 192 x 64, else
// 128 x 128; up to 128: 128 x 128; 3 stages each); otherwise head dims up to 64: 128 x 64
// tiles, 3 stages, two blocks per SM; up to 128: 128 x 128, 3 stages, or causal or with
// dropout 192 x 64, 3 stages; up to 256: 128 x 64, 2 stages. Each the fastest of its class in
// the timings cited beside the rule.
AttentionTiles DefaultAttentionTiles(const AttentionPlan& plan, const DeviceSpec& device);
// The autotuner's candidates (the default first), every one fitting.
std::vector<AttentionTiles> CandidateAttentionTiles(const AttentionPlan& plan, const DeviceSpec& device);

// Fills region.attention and region.placed (region.kind is kAttention).
void AnalyzeAttention(Region& region, const DeviceSpec& device);

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_ATTENTION_PLAN_H_
