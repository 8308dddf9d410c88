// column_reduce.cuh: the column-reduction kernel (region kind column_reduction), as a template.
//
// A column region lives in a space [outer x K x I]: it reduces the K axis (not the innermost)
// of every column (o, i). K and I are compile-time constants; the run-time argument is the
// number of tiles, outer x ceil(I / kTileI).
// Codegen (codegen/emit_reduce.cc, in column mode) generates a `Body` of fused expressions; the
// loops are here. A block owns a tile of kTileI = kLanesI x kV adjacent columns of one o: its
// threads are kLanesI wide along i (each kV adjacent columns: one 16-byte vector, coalesced
// across the warp) and kRowsK deep along K (each a strided share of K). With kSplit > 1 the K
// axis of a tile is also split over kSplit blocks, which exchange their partial results through
// global memory as split rows do (row_reduce.cuh's SplitMerge: the last block to arrive merges
// them in order), or with kCluster as one thread-block cluster through distributed shared
// memory (ClusterMerge). With kWait it publishes the result to the others, which wait for it (a
// cooperative launch); without (one level, no outputs of the full space) it stores the per-column
// outputs itself and no block waits.
//
//   for each tile (o, i0..) owned:
//     BeginCell                 per-column values that need no reduction
//     level L = 1..kLevels:     Init; Step over the thread's share of K; merge over the kRowsK
//                               threads of each column (shared memory, fixed order) and over the
//                               split blocks; Finish: per-column values
//     final pass                Store: the outputs of the full space
//     StoreCell                 per-column outputs
//
// With kCacheIters > 0 each thread keeps its share of the inputs across the levels (read
// once): in registers, or with kSharedCache in the block's dynamic shared memory (copied there
// by cp.async, all of the share in flight at once, without registers to hold it, so a tile
// whose share does not fit the registers is still read once and many blocks fit an SM);
// otherwise each level reads it again. Deterministic: fixed-order merges.
#pragma once

#include "kiln_types.cuh"
#include "row_reduce.cuh"

namespace kiln {

template <int kBlock_, int kLanesI_, int kV_, int kCacheIters_, int kSplit_, int kWait_ = 1, int kAhead_ = 4,
          int kRing_ = 0, int kCluster_ = 0, int kSharedCache_ = 0>
struct ColumnShape {
  static constexpr int kBlock = kBlock_;
  static constexpr int kLanesI = kLanesI_;
  static constexpr int kRowsK = kBlock_ / kLanesI_;
  static constexpr int kV = kV_;
  static constexpr int kCacheIters = kCacheIters_;
  static constexpr int kSplit = kSplit_;
  static constexpr bool kWait = kWait_ != 0;
  static constexpr int kAhead = kAhead_;  // streamed: vectors in flight per thread
  static constexpr int kRing = kRing_;    // streamed through a shared-memory ring this deep (0: no)
  static constexpr bool kCluster = kCluster_ != 0;  // a tile's split blocks are a cluster (ClusterMerge)
  // The kCacheIters vectors of the thread's share kept in dynamic shared memory (filled by
  // cp.async, kCacheIters x kBlock slots) instead of registers.
  static constexpr bool kSharedCache = kSharedCache_ != 0;
  static constexpr int kRegisterIters = kSharedCache ? 0 : kCacheIters;  // the register cache's vectors
  static constexpr int kTileI = kLanesI_ * kV_;
  static_assert(kBlock % 32 == 0 && kBlock >= 32 && kBlock <= 1024, "whole warps, at most 1024 threads");
  static_assert(kLanesI >= 1 && kLanesI <= 32 && (kLanesI & (kLanesI - 1)) == 0 && kBlock % kLanesI == 0,
                "a power of two of lanes along i, at most a warp, dividing the block");
  static_assert(kV >= 1 && kV <= 16 && (kV & (kV - 1)) == 0, "a vector is a power of two of elements");
  static_assert(kSplit >= 1, "at least one block per tile");
  static_assert(kAhead >= 1 && kAhead <= 16, "1 to 16 vectors in flight");
  static_assert(kRing == 0 || (kRing >= 2 && kRing <= 32 && kCacheIters == 0), "a streamed ring of 2 to 32 slots");
  static_assert(!kCluster || (kSplit >= 2 && kSplit <= 16 && kWait), "a cluster holds the 2 to 16 blocks of a tile");
  static_assert(!kSharedCache || (kCacheIters > 0 && kRing == 0), "a shared-memory cache holds the whole share");
};

// Merges `a` over the kRowsK threads of a column and returns the result to all of them, in a
// fixed order: first over the column's threads in each warp (a butterfly over lanes kLanesI
// apart), then over the warps: the first kLanesI threads fold the warps' results from shared
// memory in warp order and publish them there for every thread. `smem` holds
// kBlock / 32 * kLanesI * kWords words.
template <class Shape, class Body, class Acc>
__device__ __forceinline__ void ColumnMerge(const Body& body, Acc& a, unsigned* smem, int ti) {
  constexpr int kWords = AccWords<Acc>::kCount;
  constexpr int kWarps = Shape::kBlock / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if constexpr (Shape::kLanesI < 32) {
#pragma unroll
    for (int offset = 16; offset >= Shape::kLanesI; offset >>= 1) {
      const Acc o = ShuffleAcc(a, offset, 32, true);
      body.Merge(a, o);
    }
    // Every lane of a column now holds the warp's merge; with one warp, take the bits of its
    // first lane (a merge need not be symmetric to the bit).
    if constexpr (kWarps == 1) a = ShuffleAcc(a, lane & (Shape::kLanesI - 1), 32, false);
  }
  if constexpr (kWarps > 1) {
    if (lane < Shape::kLanesI) memcpy(smem + (warp * Shape::kLanesI + lane) * kWords, &a, sizeof(Acc));
    __syncthreads();
    if (threadIdx.x < Shape::kLanesI) {
      for (int j = 1; j < kWarps; ++j) {
        Acc o;
        memcpy(&o, smem + (j * Shape::kLanesI + ti) * kWords, sizeof(Acc));
        body.Merge(a, o);
      }
      memcpy(smem + ti * kWords, &a, sizeof(Acc));
    }
    __syncthreads();
    memcpy(&a, smem + ti * kWords, sizeof(Acc));
    __syncthreads();
  }
}

// ColumnMerge as a callable (SplitMerge's block-level merge).
template <class Shape, class Body>
struct ColumnMergeOp {
  const Body& body;
  unsigned* smem;
  int ti;
  template <class Acc>
  __device__ __forceinline__ void operator()(Acc& a) const {
    ColumnMerge<Shape>(body, a, smem, ti);
  }
};

// One pass over the thread's share of K: pass(k, x) for each k in order, x the inputs at (k, i0):
// from the shared-memory cache (kSharedCache: `ring` holds the share, kCacheIters slots per
// thread); from the register cache; streamed through `ring` (kRing > 0: dynamic shared memory, kRing slots
// per thread that only it reads, filled by cp.async kRing rows ahead, so the loads in flight take
// no registers); or loaded kAhead vectors at a time into registers.
template <class Body, class Shape, class Pass>
__device__ __forceinline__ void ForColumn(const Body& body, long long o, long long i0, long long kbegin, long long kend,
                                          int tk, const typename Body::Vec (&cache)[Shape::kRegisterIters > 0 ? Shape::kRegisterIters : 1],
                                          char* ring, const Pass& pass) {
  if constexpr (Shape::kSharedCache) {
    constexpr int kSlots = Shape::kCacheIters * Shape::kBlock;
#pragma unroll 4
    for (int j = 0; j < Shape::kCacheIters; ++j) {
      const long long k = kbegin + tk + static_cast<long long>(j) * Shape::kRowsK;
      if (k < kend) {
        typename Body::Vec x;
        body.LoadShared(ring, j * Shape::kBlock + static_cast<int>(threadIdx.x), kSlots, x);
        pass(k, x);
      }
    }
  } else if constexpr (Shape::kCacheIters > 0) {
#pragma unroll
    for (int j = 0; j < Shape::kCacheIters; ++j) {
      const long long k = kbegin + tk + static_cast<long long>(j) * Shape::kRowsK;
      if (k < kend) pass(k, cache[j]);
    }
  } else if constexpr (Shape::kRing > 0) {
    constexpr int kD = Shape::kRing, kSlots = Shape::kRing * Shape::kBlock;
    const int t = threadIdx.x;
#pragma unroll
    for (int j = 0; j < kD; ++j) {
      const long long k = kbegin + tk + static_cast<long long>(j) * Shape::kRowsK;
      if (k < kend) body.Prefetch(o, k, i0, ring, j * Shape::kBlock + t, kSlots);
      AsyncCopyCommit();
    }
    int j = 0;
    for (long long k = kbegin + tk; k < kend; k += Shape::kRowsK) {
      AsyncCopyWaitGroups<kD - 1>();
      typename Body::Vec x;
      body.LoadShared(ring, j * Shape::kBlock + t, kSlots, x);
      pass(k, x);  // uses x before its slot is refilled
      const long long next = k + static_cast<long long>(kD) * Shape::kRowsK;
      if (next < kend) body.Prefetch(o, next, i0, ring, j * Shape::kBlock + t, kSlots);
      AsyncCopyCommit();
      j = j + 1 == kD ? 0 : j + 1;
    }
    AsyncCopyWait();
  } else {
    // kAhead vectors in flight per thread: load them all, then use them. A ragged body's
    // loads past the share re-read its last row (k0 < kend): a guard around each would keep
    // a ragged load (LoadVecAt) and its shifts in a block of their own, one vector in flight
    // at a time (H200: 2x slower). An aligned body's guarded loads are predicated instead,
    // and measured faster than the clamped rows (bias gradient 36.5 against 48.0 us).
    constexpr int kAhead = Shape::kAhead;
    for (long long k0 = kbegin + tk; k0 < kend; k0 += kAhead * Shape::kRowsK) {
      typename Body::Vec x[kAhead];
#pragma unroll
      for (int j = 0; j < kAhead; ++j) {
        const long long k = k0 + static_cast<long long>(j) * Shape::kRowsK;
        if constexpr (Body::kRagged) {
          body.Load(o, k < kend ? k : kend - 1, i0, x[j]);
        } else if (k < kend) {
          body.Load(o, k, i0, x[j]);
        }
      }
#pragma unroll
      for (int j = 0; j < kAhead; ++j) {
        const long long k = k0 + static_cast<long long>(j) * Shape::kRowsK;
        if (k < kend) pass(k, x[j]);
      }
    }
  }
}

// kStore: also store the outputs of the full space at (k, i0) (Body::kStoreInStep, level 1).
template <class Body, class Acc, bool kStore>
struct ColumnStep {
  const Body& body;
  const typename Body::Cell& cell;
  Acc& acc;
  long long o, i0;
  __device__ __forceinline__ void operator()(long long k, const typename Body::Vec& x) const {
    body.Step(cell, acc, x, o, k, i0);
    if constexpr (kStore) body.Store(cell, x, o, k, i0);
  }
};
template <class Body>
struct ColumnStore {
  const Body& body;
  const typename Body::Cell& cell;
  long long o, i0;
  __device__ __forceinline__ void operator()(long long k, const typename Body::Vec& x) const {
    body.Store(cell, x, o, k, i0);
  }
};

template <int L, class Body, class Shape>
__device__ __forceinline__ void ColumnLevels(const Body& body, typename Body::Cell& cell, long long o, long long i0,
                                             bool active, long long kbegin, long long kend, int ti, int tk,
                                             const typename Body::Vec (&cache)[Shape::kRegisterIters > 0 ? Shape::kRegisterIters : 1],
                                             char* ring, unsigned* smem, unsigned* barrier, unsigned* slots,
                                             unsigned* cluster_slots, int split, bool& owner) {
  if constexpr (L <= Body::kLevels) {
    using Acc = typename Body::template AccOf<L>::Type;
    Acc acc;
    body.Init(acc);
    if constexpr ((Body::kPassMask >> L) & 1u) {
      if (active) {
        ForColumn<Body, Shape>(body, o, i0, kbegin, kend, tk, cache, ring,
                               ColumnStep<Body, Acc, L == 1 && Body::kStoreInStep>{body, cell, acc, o, i0});
      }
      ColumnMerge<Shape>(body, acc, smem, ti);
      if constexpr (Shape::kCluster) {
        ClusterMerge<Shape::kSplit, Shape::kLanesI, Shape::kBlock>(
            body, acc, cluster_slots + (L - 1) * Shape::kLanesI * Body::kExchangeWords,
            cluster_slots + Body::kLevels * Shape::kLanesI * Body::kExchangeWords, ti, tk == 0);
      } else if constexpr (Shape::kSplit > 1) {
        constexpr long long kLevelWords = (Shape::kSplit + 1) * Shape::kLanesI * Body::kExchangeWords;
        const SplitSync sync{barrier, slots + (L - 1) * kLevelWords,
                             slots + (L - 1) * kLevelWords + Shape::kSplit * Shape::kLanesI * Body::kExchangeWords};
        constexpr int kFoldSlots = (Shape::kSplit + Shape::kRowsK - 1) / Shape::kRowsK;
        const bool merged = SplitMerge<Shape::kSplit, Shape::kWait, kFoldSlots, Shape::kBlock>(
            body, acc, sync, split, PassIndex<Body::kPassMask, L>(), Shape::kLanesI, ti, tk, Shape::kRowsK,
            ColumnMergeOp<Shape, Body>{body, smem, ti});
        if constexpr (!Shape::kWait) owner = merged;
      }
    }
    if (active) body.Finish(acc, cell, o, i0);
    ColumnLevels<L + 1, Body, Shape>(body, cell, o, i0, active, kbegin, kend, ti, tk, cache, ring, smem, barrier, slots,
                                     cluster_slots, split, owner);
  }
}

// The kernel body. `Body` (generated) provides kK, kI, kV, kLevels, kPassMask, kStores (whether
// there are outputs of the full space that wait for a reduction: else no final pass),
// kStoreInStep (the outputs of the full space wait for none: level 1 stores them as it reads
// each element, its one pass over it), kRagged (kI is not a multiple of kV: the last tile's
// last vector runs past the inner extent, so a vector starts anywhere in memory; the body loads
// it with LoadVecAt, computes garbage in the lanes past kI, which never mix with the others,
// and stores none of them), kExchangeWords
// (the largest accumulator, in words), the types Vec, Cell and AccOf<L>::Type, and
//   Load(o, k, i0, Vec&); BeginCell(o, i0, Cell&); Init(Acc&); Merge(Acc&, const Acc&);
//   Step(const Cell&, Acc&, const Vec&, o, k, i0); Finish(const Acc&, Cell&, o, i0);
//   Store(const Cell&, const Vec&, o, k, i0); StoreCell(const Cell&, o, i0).
template <class Body, class Shape>
__device__ __forceinline__ void ColumnKernel(const Body& body, long long tiles, void* scratch) {
  static_assert(Shape::kV == Body::kV, "the body was generated for this vector width");
  static_assert(Body::kI % Shape::kV == 0 || (Body::kRagged && Shape::kRing == 0 && !Shape::kSharedCache),
                "a vector crosses a row of the inner axes only in a ragged body, never through shared memory");
  static_assert(Shape::kWait || (Body::kLevels == 1 && !Body::kStores),
                "only a one-level body that stores no output of the full space after it has its split blocks not wait");
  static_assert(!(Body::kStoreInStep && Body::kStores), "full-space outputs are stored in one place");
  static_assert(!Body::kStoreInStep || (Body::kPassMask & 2u), "level 1 makes a pass over the inputs");
  constexpr long long kTiles = (Body::kI + Shape::kTileI - 1) / Shape::kTileI;
  extern __shared__ __align__(16) char ring[];  // kRing: the streamed rows in flight; kSharedCache: the share
  __shared__ unsigned smem[Shape::kBlock / 32 * Shape::kLanesI * (Body::kExchangeWords > 1 ? Body::kExchangeWords : 1)];
  // With kCluster: each level's exchange slots, then ClusterMerge's stage.
  __shared__ unsigned
      cluster_slots[Shape::kCluster ? (Body::kLevels + Shape::kSplit) * Shape::kLanesI * Body::kExchangeWords : 1];
  const int ti = threadIdx.x % Shape::kLanesI, tk = threadIdx.x / Shape::kLanesI;
  const int split = static_cast<int>(blockIdx.x % Shape::kSplit);
  const long long tile_blocks = gridDim.x / Shape::kSplit;
  const long long kbegin = Body::kK * split / Shape::kSplit, kend = Body::kK * (split + 1) / Shape::kSplit;
  unsigned* barrier_base = nullptr;
  unsigned* slots_base = nullptr;
  if constexpr (Shape::kSplit > 1 && !Shape::kCluster) {
    barrier_base = reinterpret_cast<unsigned*>(CombinePartials(scratch));
    slots_base = barrier_base + 3 * tiles;
  }
  for (long long p = blockIdx.x / Shape::kSplit; p < tiles; p += tile_blocks) {
    const long long o = p / kTiles;
    const long long i0 = (p % kTiles) * Shape::kTileI + static_cast<long long>(ti) * Shape::kV;
    const bool active = i0 < Body::kI;
    typename Body::Vec cache[Shape::kRegisterIters > 0 ? Shape::kRegisterIters : 1];
    if constexpr (Shape::kSharedCache) {
      // Every vector of the share in flight at once, into the thread's own slots (only it reads
      // them: no barrier), then waited for before the first pass. The previous tile's last pass
      // used each slot's values before this refills it.
      if (active) {
        constexpr int kSlots = Shape::kCacheIters * Shape::kBlock;
#pragma unroll 4
        for (int j = 0; j < Shape::kCacheIters; ++j) {
          const long long k = kbegin + tk + static_cast<long long>(j) * Shape::kRowsK;
          if (k < kend) body.Prefetch(o, k, i0, ring, j * Shape::kBlock + static_cast<int>(threadIdx.x), kSlots);
        }
      }
      AsyncCopyCommit();
    } else if constexpr (Shape::kCacheIters > 0) {
      if constexpr (Body::kRagged) {
        // Straight-line loads (ForColumn says why); a thread whose share is empty loads none.
        if (active && kbegin + tk < kend) {
#pragma unroll
          for (int j = 0; j < Shape::kCacheIters; ++j) {
            const long long k = kbegin + tk + static_cast<long long>(j) * Shape::kRowsK;
            body.Load(o, k < kend ? k : kend - 1, i0, cache[j]);
          }
        }
      } else if (active) {
#pragma unroll
        for (int j = 0; j < Shape::kCacheIters; ++j) {
          const long long k = kbegin + tk + static_cast<long long>(j) * Shape::kRowsK;
          if (k < kend) body.Load(o, k, i0, cache[j]);
        }
      }
    }
    unsigned* barrier = barrier_base ? barrier_base + 3 * p : nullptr;
    unsigned* slots =
        slots_base ? slots_base + p * Body::kLevels * (Shape::kSplit + 1) * Shape::kLanesI * Body::kExchangeWords
                   : nullptr;
    typename Body::Cell cell;
    if (active) body.BeginCell(o, i0, cell);
    if constexpr (Shape::kSharedCache) AsyncCopyWait();
    bool owner = split == 0;  // the block that stores the per-column outputs
    ColumnLevels<1, Body, Shape>(body, cell, o, i0, active, kbegin, kend, ti, tk, cache, ring, smem, barrier, slots,
                                 cluster_slots, split, owner);
    if (active) {
      if constexpr (Body::kStores) {
        ForColumn<Body, Shape>(body, o, i0, kbegin, kend, tk, cache, ring, ColumnStore<Body>{body, cell, o, i0});
      }
      if (tk == 0 && owner) body.StoreCell(cell, o, i0);
    }
    if constexpr (Shape::kCluster) {
      ClusterSync();  // every block has read this tile's slots
    } else if constexpr (Shape::kSplit > 1) {
      SplitLeave(barrier, Shape::kSplit);
    }
  }
}

}  // namespace kiln
