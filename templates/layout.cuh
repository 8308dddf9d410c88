// layout.cuh: what elementwise regions need to read through layout ops (region kinds pointwise
// and layout): the index helpers of the plain kernel (pointwise.cuh's loop, where each output
// element computes the input element it comes from), and the tiled transpose kernel.
//
// The tiled transpose kernel runs a region that reads some input through a permutation that
// moves the innermost axis (a transpose feeding an add, a [B,M,N] -> [B,N,M] copy). In the
// plain loop a warp's 32 consecutive output elements read such an input 32 elements apart: up
// to 32 sectors of 32 bytes for 32 useful elements. Here the region's space is the canonical
// one codegen derives (passes/fusion/layout_access.h: size-1 axes dropped, axes that stay
// adjacent merged): `a` is the output's innermost axis, `b` the axis that is innermost in the
// transposed ("staged") inputs, the other axes are the "rest". A block owns a tile of
// kTB x kTA elements of (b, a) at one rest index, in two phases:
//
//   stage    every staged input's tile, read coalesced along b (kV elements per thread, a
//            16-byte vector where the dtype and extents allow), into padded shared memory
//            __syncthreads
//   store    the fused expression of kV consecutive elements along a per thread: staged values
//            from shared memory, every other input read coalesced along a (as in the plain
//            kernel), outputs stored along a (16-byte vectors)
//            __syncthreads (the next tile reuses the shared memory)
//
// Tiles at the edges of the space are partial: both phases skip vectors past the extents (the
// extents are multiples of kV, so a vector is wholly in or out). Codegen generates only the
// Body (the contract is above TiledTransposeKernel); the loops, the shared memory layout and the
// thread arrangement are here. All index arithmetic on tensors is 64-bit.
#pragma once

#include "pointwise.cuh"

namespace kiln {

// A gather index: negative counts from the end; out-of-range indices are clamped into
// [0, extent) so a bad index can never read outside the tensor (the interpreter reports
// them as an error; the GPU has no way to).
__device__ __forceinline__ long long GatherIndex(long long index, long long extent) {
  if (index < 0) index += extent;
  return index < 0 ? 0 : (index >= extent ? extent - 1 : index);
}

// Clamps an index into [0, extent): used for the concat pieces that are evaluated but not
// selected, so their loads stay inside their own tensors.
__device__ __forceinline__ long long ClampIndex(long long index, long long extent) {
  return index < 0 ? 0 : (index >= extent ? extent - 1 : index);
}

// ---- the tiled transpose kernel -----------------------------------------------------------
__host__ __device__ constexpr int MinInt(int x, int y) { return x < y ? x : y; }
__host__ __device__ constexpr int MaxInt(int x, int y) { return x > y ? x : y; }

// Warps and shared-memory banks. Shared memory serves one 32-bit word per bank (32 banks) per
// cycle. A staged tile is stored [kTA][kTB + pad] (rows along a, contiguous along b) with the
// pad making a row's length in words odd (1 mod 32 for rows of 32k words): consecutive rows
// start one bank apart. Each phase gives a warp kLanes consecutive vectors of 32 / kLanes
// consecutive rows, kLanes chosen so that one instruction touches distinct banks:
//   stage: a lane writes the kV elements of its vector along a row: lanes cover kLanes vectors
//          of kV * bytes / 4 words each, rows start a bank apart, so kLanes = 32 / (vector
//          words) (at least 1 word) gives lanes x rows = 32 distinct banks;
//   store: a lane reads kV elements down a column (its vector along a), element k of every lane
//          at rows kV * lane + k: banks kV * lane + row offset, so kLanes = 32 / kV.
// Global memory sees kLanes x 16 bytes contiguous per row and instruction (64 or 128 bytes:
// whole 32-byte sectors).
template <int kTB_, int kTA_, int kV_, int kBlock_, int kStagedBytes_>
struct TileShape {
  static constexpr int kTB = kTB_;    // tile extent along b (the staged inputs' innermost axis)
  static constexpr int kTA = kTA_;    // tile extent along a (the output's innermost axis)
  static constexpr int kV = kV_;      // elements per thread and access, along b (stage) and a (store)
  static constexpr int kBlock = kBlock_;
  static constexpr int kStagedBytes = kStagedBytes_;  // the largest staged element
  static constexpr int kItems = kTB / kV * kTA;       // vectors per phase
  static constexpr int kSteps = kItems / kBlock;      // vectors per thread and phase
  static constexpr int kStageLanes = MinInt(kTB / kV, 32 / MaxInt(1, kV * kStagedBytes / 4));
  static constexpr int kStoreLanes = MinInt(kTA / kV, 32 / kV);
  static_assert(kV >= 1 && kV <= 16 && (kV & (kV - 1)) == 0, "a vector is a power of two of elements");
  static_assert(kTB % kV == 0 && kTA % kV == 0, "a tile row is a whole number of vectors");
  static_assert((kTB & (kTB - 1)) == 0 && (kTA & (kTA - 1)) == 0 && kTB <= 256 && kTA <= 256,
                "tile extents are powers of two (the warp arrangement divides them)");
  static_assert(kBlock % 32 == 0 && kBlock >= 32 && kBlock <= 1024, "whole warps, at most 1024 threads");
  static_assert(kItems % kBlock == 0, "every thread moves the same number of vectors in each phase");
  static_assert(kStagedBytes == 1 || kStagedBytes == 2 || kStagedBytes == 4 || kStagedBytes == 8,
                "staged elements are 1, 2, 4 or 8 bytes");
  static_assert(kTA % (32 / kStageLanes) == 0 && kTB % (32 / kStoreLanes) == 0,
                "a warp's rows lie inside the tile in both phases");
};

// The elements a staged input's row is padded by: one 32-bit word (one element of 8 bytes).
template <class T>
__host__ __device__ constexpr int StagedPad() {
  return sizeof(T) >= 4 ? 1 : static_cast<int>(4 / sizeof(T));
}

// One staged input's tile in shared memory, in its storage type (the copy is bit-exact).
template <class T, class Tile>
struct StagedTile {
  T v[Tile::kTA][Tile::kTB + StagedPad<T>()];
  // The element at tile position (tb, ta).
  __device__ __forceinline__ T Get(int tb, int ta) const { return v[ta][tb]; }
};

// Copies kV consecutive elements src[0..kV) (a vector along b, aligned like LoadVec's) into
// row `ta` of the tile at columns tb..tb+kV, raw.
template <int kV, class T, class Tile>
__device__ __forceinline__ void StageVec(const T* __restrict__ src, StagedTile<T, Tile>& tile, int tb, int ta) {
  constexpr int kTotal = kV * static_cast<int>(sizeof(T));
  constexpr int kBytes = kTotal < 16 ? kTotal : 16;
  constexpr int kPerChunk = kBytes / static_cast<int>(sizeof(T));
  static_assert(kTotal % kBytes == 0 && kPerChunk >= 1, "a vector is a whole number of chunks of whole elements");
  using ChunkT = typename Chunk<kBytes>::Type;
#pragma unroll
  for (int k = 0; k < kTotal / kBytes; ++k) {
    const ChunkT bits = reinterpret_cast<const ChunkT*>(src)[k];
    const T* elems = reinterpret_cast<const T*>(&bits);
#pragma unroll
    for (int j = 0; j < kPerChunk; ++j) tile.v[ta][tb + k * kPerChunk + j] = elems[j];
  }
}

// Item u of a phase: its row and its column (in elements, a multiple of kV), so that warp w
// covers kLanes consecutive vectors of 32 / kLanes consecutive rows.
struct TileItem {
  int row, col;
};
template <int kVecs, int kLanes, int kV>
__device__ __forceinline__ TileItem ItemOf(int u) {
  static_assert(kLanes >= 1 && 32 % kLanes == 0 && kVecs % kLanes == 0, "a warp covers whole rows of lanes");
  constexpr int kRowsPerWarp = 32 / kLanes, kChunks = kVecs / kLanes;
  const int lane = u & 31, warp = u >> 5;
  return TileItem{(warp / kChunks) * kRowsPerWarp + lane / kLanes, ((warp % kChunks) * kLanes + lane % kLanes) * kV};
}

// Stage phase: every vector of the tile's rows along a (each kTB wide along b) that lies in the space.
template <class Body, class Tile>
__device__ __forceinline__ void StageTile(const Body& body, const typename Body::Base& base, long long b0, long long a0,
                                          typename Body::Smem& smem) {
#pragma unroll
  for (int s = 0; s < Tile::kSteps; ++s) {
    const TileItem it = ItemOf<Tile::kTB / Tile::kV, Tile::kStageLanes, Tile::kV>(threadIdx.x + s * Tile::kBlock);
    if (a0 + it.row < Body::kA && b0 + it.col < Body::kB) body.Stage(base, b0 + it.col, a0 + it.row, it.col, it.row, smem);
  }
}

// Store phase: every vector of the tile's rows along b (each kTA wide along a) that lies in the space.
template <class Body, class Tile>
__device__ __forceinline__ void StoreTile(const Body& body, const typename Body::Base& base, long long b0, long long a0,
                                          const typename Body::Smem& smem) {
#pragma unroll
  for (int s = 0; s < Tile::kSteps; ++s) {
    const TileItem it = ItemOf<Tile::kTA / Tile::kV, Tile::kStoreLanes, Tile::kV>(threadIdx.x + s * Tile::kBlock);
    if (b0 + it.row < Body::kB && a0 + it.col < Body::kA) body.Store(base, b0 + it.row, a0 + it.col, it.row, it.col, smem);
  }
}

// The kernel: a grid-stride loop over `tiles` = rest x ceil(kB / kTB) x ceil(kA / kTA) tiles,
// a fastest. Body (generated) provides:
//   kA, kB                 the canonical extents of a and b (multiples of kV)
//   Smem                   a struct of StagedTile<T, Tile>, one per staged input
//   Base, Begin(rest)      per-tile values: each affine index's offset at (rest, b = 0, a = 0)
//   Stage(base, b, a, tb, ta, smem)   copies the kV elements (b..b+kV, a) of every staged input
//                                     into their tiles at (tb, ta)
//   Store(base, b, a, tb, ta, smem)   evaluates and stores the kV output elements (b, a..a+kV)
template <class Body, class Tile>
__device__ __forceinline__ void TiledTransposeKernel(const Body& body, long long tiles) {
  static_assert(Body::kA % Tile::kV == 0 && Body::kB % Tile::kV == 0,
                "the extents of a and b are multiples of the vector: a vector is wholly in the space or out");
  __shared__ typename Body::Smem smem;
  constexpr long long kTilesA = (Body::kA + Tile::kTA - 1) / Tile::kTA;
  constexpr long long kTilesB = (Body::kB + Tile::kTB - 1) / Tile::kTB;
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    const long long a0 = (t % kTilesA) * Tile::kTA;
    const long long b0 = ((t / kTilesA) % kTilesB) * Tile::kTB;
    const typename Body::Base base = body.Begin(t / (kTilesA * kTilesB));
    StageTile<Body, Tile>(body, base, b0, a0, smem);
    __syncthreads();
    StoreTile<Body, Tile>(body, base, b0, a0, smem);
    __syncthreads();
  }
}

}  // namespace kiln
