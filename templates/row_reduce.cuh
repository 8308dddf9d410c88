// row_reduce.cuh: the row-reduction kernel (region kind row_reduction), as a template.
//
// A row region lives in a row space [rows x N]: N (the row length) is a compile-time constant,
// rows a run-time argument. The loop structure is here; codegen (codegen/emit_reduce.cc + reduce_values.cc)
// generates only a `Body`: the fused expressions of one region, as small member functions
// that this kernel calls (the contract is the RowKernel comment below). One row is owned by a
// group of kThreadsPerRow threads: one thread or part of a warp (1, 2, 4, 8, 16 lanes: short
// rows, several per warp), a warp, or a whole block; with kSplit > 1 by kSplit blocks at once (few long rows).
//
//   for each row r owned:
//     BeginRow           per-row values that need no reduction (a target index, a row's bias)
//     level L = 1..kLevels: Init; Step over every vector of the row (recomputing the prologue
//                        the level needs); merge over the group (and over the split blocks,
//                        through global memory, in a fixed order); Finish: per-row values
//     final pass         Store: the row-shaped outputs, as vectors
//     StoreRow           per-row outputs; Partials: the per-row values of combines
//   combine              the last block folds the per-row partials in a fixed order
//
// Vectors of kV elements start on kV-element boundaries of the row space, so a row whose start
// is not one (N not a multiple of kV) has a head and a tail of fewer than kV elements, taken
// one element at a time (Step1/Store1) and, with a cache, loaded with the vectors and kept
// (RowEdges). With kCacheIters > 0 each thread keeps its vectors of the row-shaped inputs on
// chip across the levels (the row is read once): in registers, or with
// kSharedCache in dynamic shared memory as raw bytes copied there by cp.async (a block's row
// share then costs no registers, so several blocks, and rows, are resident per SM and one
// block's reduction overlaps another's loads). Otherwise each level streams the row again (a
// max and sum(e^(x - max)) share one pass, online, as do a mean and sum((x - mean)^2)).
// Every reduction is deterministic: fixed shuffle trees, fixed-order merges, no float atomics.
#pragma once

#include "kiln_types.cuh"

namespace kiln {

// ---- online max and sum of exponentials -----------------------------------------------------
// The pair (m, s) stands for s = sum_i e^(x_i - m) with m = max_i x_i over the elements seen.
struct MaxSum {
  float m;
  float s;
};

__device__ __forceinline__ MaxSum MaxSumIdentity() { return MaxSum{kNegInfF(), 0.0f}; }

// e^(x - m) for x <= m, as 2^((x - m) log2 e) on the special-function unit (ex2.approx: about
// 2 ulp; the product adds |x - m| * 2^-24 relative, and results below 2^-126 flush to 0).
// Three instructions instead of expf's eight: on long streamed rows the exponential is most
// of the work per element.
__device__ __forceinline__ float ExpOfDiff(float x, float m) {
  const float d = (x - m) * 1.4426950408889634f;
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(d));
  return y;
}

// The shift the exponentials are taken against: m, or 0 while every element seen is -inf, so
// that e^(-inf - shift) is 0 and not e^(-inf + inf) = NaN. A select, not a branch.
__device__ __forceinline__ float MaxSumShift(float m) { return m == kNegInfF() ? 0.0f : m; }

// Adds V elements with one rescale: m' = max(m, x_0..x_{V-1}); s' = s e^(m - m') + sum_j e^(x_j - m').
template <int V>
__device__ __forceinline__ MaxSum MaxSumAddVec(MaxSum a, const float (&x)[V]) {
  float m = a.m;
#pragma unroll
  for (int j = 0; j < V; ++j) m = Max::Apply(m, x[j]);
  const float shift = MaxSumShift(m);
  float s = a.s * ExpOfDiff(a.m, shift);
#pragma unroll
  for (int j = 0; j < V; ++j) s += ExpOfDiff(x[j], shift);
  return MaxSum{m, s};
}

// Merges two pairs: m = max(m1, m2); s = s1 e^(m1 - m) + s2 e^(m2 - m). Symmetric in its
// arguments, so a butterfly leaves equal bits in every lane.
__device__ __forceinline__ MaxSum MaxSumMerge(MaxSum a, MaxSum b) {
  const float m = Max::Apply(a.m, b.m);
  const float shift = MaxSumShift(m);
  return MaxSum{m, a.s * ExpOfDiff(a.m, shift) + b.s * ExpOfDiff(b.m, shift)};
}

// The decomposed graph computes sum(e^(x - max)) literally, which is NaN when the max is not
// finite (a row of -inf, an inf or a NaN); the online form reproduces that at the end.
__device__ __forceinline__ MaxSum MaxSumFinish(MaxSum a) {
  if (!(fabsf(a.m) < kInfF())) a.s = kNaNF();
  return a;
}

// ---- online mean and sum of squared deviations (Welford, merged as Chan et al.) -------------
// The triple (n, mean, m2) stands for the n elements seen: their mean and
// m2 = sum_i (x_i - mean)^2, so that a layer_norm's mean and variance come out of one pass over
// the row instead of a pass per level. It never subtracts E[x]^2 from E[x^2], so a row whose
// mean is large against its spread keeps its variance. n counts elements exactly (a float is
// exact up to 2^24; the placement pairs only shorter rows).
struct MeanVar {
  float n;
  float mean;
  float m2;
};

__device__ __forceinline__ MeanVar MeanVarIdentity() { return MeanVar{0.0f, 0.0f, 0.0f}; }

// 1 / n: the special-function unit's reciprocal (__fdividef, within 2 ulp) and one Newton step
// (about 0.5 ulp). Under NVRTC the correctly rounded __frcp_rn, and an inline rcp.approx alike,
// took a 512-thread cluster merge of 8 blocks from 128 registers to 32 and 650+ bytes of
// spills; this does not.
__device__ __forceinline__ float CountReciprocal(float n) {
  const float r = __fdividef(1.0f, n);
  return r * fmaf(-n, r, 2.0f);
}

// Adds V elements: their own mean and m2 first (two passes over registers), then Welford's
// update, which moves the mean by a fraction of the (small) difference of the means, so that
// its rounding stays within an ulp or two of the mean however many vectors a thread adds.
template <int V>
__device__ __forceinline__ MeanVar MeanVarAddVec(MeanVar a, const float (&x)[V]) {
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < V; ++j) s += x[j];
  const float mv = s * (1.0f / V);
  float m2 = 0.0f;
#pragma unroll
  for (int j = 0; j < V; ++j) m2 = fmaf(x[j] - mv, x[j] - mv, m2);
  const float n = a.n + V;
  const float r = CountReciprocal(n);
  const float delta = mv - a.mean;
  return MeanVar{n, fmaf(delta, V * r, a.mean), a.m2 + m2 + delta * delta * (a.n * V * r)};
}

// Merges two triples (Chan et al.): n = na + nb, mean = ma + (mb - ma) nb / n,
// m2 = m2a + m2b + (mb - ma)^2 na nb / n. An empty side contributes nothing, and two empty sides
// stay empty. Not symmetric to the bit, which no merge needs: a butterfly ends with one lane's
// result broadcast (WarpMerge), and every other merge has a fixed order.
__device__ __forceinline__ MeanVar MeanVarMerge(MeanVar a, MeanVar b) {
  const float n = a.n + b.n;
  const float r = CountReciprocal(fmaxf(n, 1.0f));  // n is a count: 0 or at least 1
  const float delta = b.mean - a.mean;
  return MeanVar{n, fmaf(delta, b.n * r, a.mean), a.m2 + b.m2 + delta * delta * (a.n * b.n * r)};
}

// ---- merging a body's accumulators over threads -----------------------------------------------
// An accumulator struct (Body's AccN) is moved between threads as 32-bit words.
template <class Acc>
struct AccWords {
  static_assert(sizeof(Acc) % 4 == 0, "accumulators are made of 32-bit words");
  static constexpr int kCount = static_cast<int>(sizeof(Acc) / 4);
};

template <class Acc>
__device__ __forceinline__ Acc ShuffleAcc(const Acc& a, int lane_or_mask, int width, bool xor_mode) {
  unsigned in[AccWords<Acc>::kCount], out[AccWords<Acc>::kCount];
  memcpy(in, &a, sizeof(Acc));
#pragma unroll
  for (int w = 0; w < AccWords<Acc>::kCount; ++w) {
    out[w] = xor_mode ? __shfl_xor_sync(0xffffffffu, in[w], lane_or_mask, width)
                      : __shfl_sync(0xffffffffu, in[w], lane_or_mask, width);
  }
  Acc o;
  memcpy(&o, out, sizeof(Acc));
  return o;
}

// Butterfly over each aligned segment of kWidth lanes, then lane 0's result broadcast, so every
// lane of the segment holds the same bits. Every lane of the warp must call it.
template <int kWidth, class Body, class Acc>
__device__ __forceinline__ void WarpMerge(const Body& body, Acc& a) {
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset >>= 1) {
    const Acc o = ShuffleAcc(a, offset, kWidth, true);
    body.Merge(a, o);
  }
  a = ShuffleAcc(a, 0, kWidth, false);
}

// Merges `a` over the kThreads threads that own a row (part of a warp, a warp, or the block);
// every thread of the group gets the result. `smem` holds 32 * kCount words.
template <int kThreads, int kBlock, class Body, class Acc>
__device__ __forceinline__ void GroupMerge(const Body& body, Acc& a, unsigned* smem) {
  static_assert(kThreads <= 32 || kThreads == kBlock, "a row is owned by part of a warp, a warp or the block");
  if constexpr (kThreads <= 32) {
    WarpMerge<kThreads>(body, a);
  } else {
    constexpr int kWords = AccWords<Acc>::kCount;
    WarpMerge<32>(body, a);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) memcpy(smem + warp * kWords, &a, sizeof(Acc));
    __syncthreads();
    Acc r;
    body.Init(r);
    if (lane < kBlock / 32) memcpy(&r, smem + lane * kWords, sizeof(Acc));
    WarpMerge<32>(body, r);
    a = r;
    __syncthreads();
  }
}

// GroupMerge as a callable (SplitMerge's block-level merge).
template <int kThreads, int kBlock, class Body>
struct GroupMergeOp {
  const Body& body;
  unsigned* smem;
  template <class Acc>
  __device__ __forceinline__ void operator()(Acc& a) const {
    GroupMerge<kThreads, kBlock>(body, a, smem);
  }
};

// ---- scratch: combines and split rows -------------------------------------------------------
// Scratch (KernelSource::scratch, zero before the first launch and left zero by every launch):
//   [0, 16)      the combine counter (the last block to finish folds the partials)
//   [16, 32)     unused
//   [32, ...)    rows * kCombines floats: each row's combine partials
//   then         rows * 3 words: each split row's counters (arrive, done, depart)
//   then         rows * kLevels * (kSplit + 1) * kExchangeWords words: per level, the blocks'
//                partial accumulators and the merged result
__device__ __forceinline__ unsigned int* CombineCounter(void* scratch) {
  return reinterpret_cast<unsigned int*>(scratch);
}
__device__ __forceinline__ float* CombinePartials(void* scratch) {
  return reinterpret_cast<float*>(reinterpret_cast<char*>(scratch) + 32);
}

// Called by every thread of every block after the block's last row: true in every thread of
// exactly one block, the last to arrive, once all other blocks' partials are visible.
__device__ __forceinline__ bool LastBlockDone(void* scratch) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned int done = atomicAdd(CombineCounter(scratch), 1u);
    last = (done == gridDim.x - 1);
  }
  __syncthreads();
  if (last) __threadfence();
  return last;
}

// Reduces partials[k], partials[kCombines + k], ... (rows of them) in a fixed order: thread t
// folds rows t, t + kBlock, ... sequentially, then a block tree. Every thread gets the result.
template <class Op, int kBlock>
__device__ __forceinline__ float CombineRows(const float* partials, long long rows, int k, int combines,
                                             float* smem) {
  float acc = Op::Identity();
  for (long long r = threadIdx.x; r < rows; r += kBlock) acc = Op::Apply(acc, __ldcg(partials + r * combines + k));
  return BlockReduce<Op, kBlock>(acc, smem);
}

// The blocks that share a split row (or a split column tile) combine their partial
// accumulators through global memory, once per level:
//   1. every block publishes its own (one slot per lane: a row has one lane, a column tile
//      kLanesI, published by threads 0..lanes-1) and counts itself in `arrive`;
//   2. the last block to arrive merges all kSplit of them in block order (each thread folds a
//      fixed set of slots, then the block merges in a fixed tree: `block_merge`), publishes the
//      result and bumps `done`;
//   3. with kWait, the others wait (a sleeping spin on `done`, every block resident: the launch
//      is cooperative) and read the result. Without it (a body of one level that stores nothing
//      of the full space: only the merged result is stored) they leave at once, and only the
//      last block has the result: the launch needs no residency.
// Which block arrives last changes nothing in the order of the merge, so every run gives the
// same bits; each block reads one result instead of all kSplit partials. The last block's
// threads each fold their slots kFoldAhead at a time (loads in flight together, merged in slot
// order). The counters are reset by the last block to leave (SplitLeave).
struct SplitSync {
  unsigned* counters;  // arrive, done, depart
  unsigned* slots;     // kSplit x lanes accumulators
  unsigned* result;    // lanes accumulators
};

__device__ __forceinline__ unsigned VolatileLoad(const unsigned* p) { return *reinterpret_cast<const volatile unsigned*>(p); }

// `first`, `step`: the slots this thread folds when its block is last (first, first + step, ...,
// at most kFoldSlots of them); `lane`: its lane (the slot it publishes when threadIdx.x < lanes,
// and the result it reads). Returns whether `a` now holds the merged result: always with kWait,
// else in the last block.
template <int kSplit, bool kWait, int kFoldSlots, int kBlockThreads, class Body, class Acc, class BlockMerge>
__device__ __forceinline__ bool SplitMerge(const Body& body, Acc& a, const SplitSync& sync, int split, unsigned pass,
                                           int lanes, int lane, int first, int step, const BlockMerge& block_merge) {
  constexpr int kWords = AccWords<Acc>::kCount;
  // Up to 32 words in flight per thread, 16 in a block of 512 or 1024 threads (at most 128 or 64
  // registers: a 512-thread fold of 8 three-word MeanVars spilled).
  constexpr int kAheadWords = kBlockThreads >= 512 ? 16 : 32;
  constexpr int kMaxAhead = kAheadWords / kWords > 1 ? (kAheadWords / kWords < 8 ? kAheadWords / kWords : 8) : 1;
  constexpr int kFoldAhead = kFoldSlots < kMaxAhead ? (kFoldSlots > 1 ? kFoldSlots : 1) : kMaxAhead;
  const int stride = lanes * Body::kExchangeWords;
  __shared__ bool last;
  unsigned w[kWords];
  if (static_cast<int>(threadIdx.x) < lanes) {
    memcpy(w, &a, sizeof(Acc));
#pragma unroll
    for (int i = 0; i < kWords; ++i) __stcg(sync.slots + split * stride + threadIdx.x * Body::kExchangeWords + i, w[i]);
    __threadfence();
  }
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(sync.counters, 1u) == kSplit * pass - 1;
  __syncthreads();
  if (last) {
    __threadfence();  // the other blocks' slots are visible
    Acc m;
    body.Init(m);
    for (int s0 = first; s0 < kSplit; s0 += kFoldAhead * step) {
      unsigned v[kFoldAhead][kWords];
#pragma unroll
      for (int j = 0; j < kFoldAhead; ++j) {
        const int s = s0 + j * step;
        if (s < kSplit) {
#pragma unroll
          for (int i = 0; i < kWords; ++i) v[j][i] = __ldcg(sync.slots + s * stride + lane * Body::kExchangeWords + i);
        }
      }
#pragma unroll
      for (int j = 0; j < kFoldAhead; ++j) {
        if (s0 + j * step < kSplit) {
          Acc o;
          memcpy(&o, v[j], sizeof(Acc));
          body.Merge(m, o);
        }
      }
    }
    block_merge(m);
    a = m;
    if constexpr (kWait) {
      if (static_cast<int>(threadIdx.x) < lanes) {
        memcpy(w, &a, sizeof(Acc));
#pragma unroll
        for (int i = 0; i < kWords; ++i) __stcg(sync.result + threadIdx.x * Body::kExchangeWords + i, w[i]);
        __threadfence();
      }
      __syncthreads();
      if (threadIdx.x == 0) atomicExch(sync.counters + 1, pass);
    }
    return true;
  }
  if constexpr (kWait) {
    if (threadIdx.x == 0) {
      while (VolatileLoad(sync.counters + 1) < pass) __nanosleep(32);
      __threadfence();
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kWords; ++i) w[i] = __ldcg(sync.result + lane * Body::kExchangeWords + i);
    memcpy(&a, w, sizeof(Acc));
    return true;
  }
  return false;
}

// ---- split rows in a thread-block cluster (sm_90) ---------------------------------------------
// With kCluster the kSplit blocks of a row are one cluster (launched with cluster_x = kSplit, so
// block b is rank b % kSplit of its cluster): every block puts its block-merged accumulator in
// its own shared memory, and after a cluster barrier every block reads all kSplit of them
// through distributed shared memory and merges them in rank order. Each block computes the same
// bits, nothing goes through global memory, and the hardware makes the blocks of a cluster
// resident together, so the launch is not cooperative. A second barrier at the end of each row
// keeps a block's slots alive until the others have read them; a block arrives at it once it has
// read the last level's slots, before its store pass, and waits for it after, so a block that
// finishes its stores first does not hold its siblings' stores back.
__device__ __forceinline__ void ClusterArrive() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#else
  __trap();  // codegen emits clusters for sm_90 and later only
#endif
}
__device__ __forceinline__ void ClusterWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void ClusterSync() {
  ClusterArrive();
  ClusterWait();
}

// The word at `local` (this block's shared memory) in the block of cluster rank `rank`.
__device__ __forceinline__ unsigned ClusterLoad(const unsigned* local, unsigned rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(local));
  unsigned remote, v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(remote) : "memory");
  return v;
#else
  __trap();
  return 0u;
#endif
}

// `slots`: this block's shared words for one level, kExchangeWords per lane (a row has one
// lane; a column tile kLanes). The threads with `publish` write their lane's accumulator; every
// thread gets its lane's merged result, merged in rank order, so every block computes the same
// bits. A column tile's words cross the cluster once each: the block's threads read them into
// `stage` (kSplit x kLanes x the accumulator's words of this block's shared memory), and each
// thread merges its lane from there. (Every thread reading all of its lane's ranks itself cost
// a column tile split 8 ways 64 distributed-shared-memory loads a thread, the same words for
// the 32 threads of a lane: softmax over axis 1 of [32, 3000, 96] f32 took 71.6 us as such a
// cluster and 35.9 reading each word once; H200, bench/results/2026-11-29-session33, runs 4
// and 7.) A row's threads each read its kSplit x a few words themselves: staging them measured
// level (softmax over 256 rows of 151936 bf16 57.7 and 56.4 us, run 7) and took a 512-thread
// shared-cache row kernel past 128 registers (44 bytes of spill, ptxas). The next use of
// `stage` comes after the next cluster barrier, which every thread reaches only once it has
// merged.
template <int kSplit, int kLanes, int kBlock, class Body, class Acc>
__device__ __forceinline__ void ClusterMerge(const Body& body, Acc& a, unsigned* slots, unsigned* stage, int lane,
                                             bool publish) {
  constexpr int kWords = AccWords<Acc>::kCount;
  constexpr int kTotal = kSplit * kLanes * kWords;
  unsigned* slot = slots + lane * Body::kExchangeWords;
  if (publish) memcpy(slot, &a, sizeof(Acc));
  ClusterSync();
  if constexpr (kLanes > 1) {
#pragma unroll
    for (int j = 0; j < (kTotal + kBlock - 1) / kBlock; ++j) {
      const int i = static_cast<int>(threadIdx.x) + j * kBlock;
      if (kTotal % kBlock == 0 || i < kTotal) {
        const int rank = i / (kLanes * kWords), word = i % (kLanes * kWords);
        stage[i] =
            ClusterLoad(slots + (word / kWords) * Body::kExchangeWords + word % kWords, static_cast<unsigned>(rank));
      }
    }
    __syncthreads();
  }
  Acc m;
  body.Init(m);
#pragma unroll
  for (int rank = 0; rank < kSplit; ++rank) {
    unsigned w[kWords];
#pragma unroll
    for (int i = 0; i < kWords; ++i) {
      if constexpr (kLanes > 1) {
        w[i] = stage[(rank * kLanes + lane) * kWords + i];
      } else {
        w[i] = ClusterLoad(slot + i, static_cast<unsigned>(rank));
      }
    }
    Acc o;
    memcpy(&o, w, sizeof(Acc));
    body.Merge(m, o);
  }
  a = m;
}

__device__ __forceinline__ void SplitLeave(unsigned* counters, int split_count) {
  if (threadIdx.x == 0 && atomicAdd(counters + 2, 1u) == static_cast<unsigned>(split_count - 1)) {
    atomicExch(counters, 0u);
    atomicExch(counters + 1, 0u);
    atomicExch(counters + 2, 0u);
  }
}

// ---- the kernel -----------------------------------------------------------------------------
// Launch shape, all compile-time: threads per block, threads per row, vector width, vectors
// per thread cached on chip (0: streamed), the streamed loop's unroll, blocks per row, and
// whether the cache is in shared memory (kCacheIters x kBlock slots of Body::kCacheBytes,
// the launch's dynamic shared memory) rather than in registers, and whether the blocks of a
// split row wait for its merged result (SplitMerge's kWait; else only the last block stores).
template <int kBlock_, int kThreadsPerRow_, int kV_, int kCacheIters_, int kUnroll_, int kSplit_,
          int kSharedCache_ = 0, int kWait_ = 1, int kCluster_ = 0>
struct RowShape {
  static constexpr int kBlock = kBlock_;
  static constexpr int kThreadsPerRow = kThreadsPerRow_;
  static constexpr int kV = kV_;
  static constexpr int kCacheIters = kCacheIters_;
  static constexpr int kUnroll = kUnroll_;
  static constexpr int kSplit = kSplit_;
  static constexpr int kRowsPerBlock = kBlock / kThreadsPerRow;
  static constexpr bool kSharedCache = kSharedCache_ != 0;
  static constexpr bool kWait = kWait_ != 0;
  static constexpr bool kCluster = kCluster_ != 0;  // the split blocks are a cluster (ClusterMerge)
  static_assert(kBlock % 32 == 0 && kBlock >= 32 && kBlock <= 1024, "whole warps, at most 1024 threads");
  static_assert(kThreadsPerRow == kBlock || (kThreadsPerRow >= 1 && kThreadsPerRow <= 32 &&
                                             (kThreadsPerRow & (kThreadsPerRow - 1)) == 0),
                "a row is owned by 1, 2, 4, 8, 16 or 32 lanes or by the whole block");
  static_assert(kSplit >= 1 && (kSplit == 1 || kThreadsPerRow == kBlock), "a split row is owned by whole blocks");
  static_assert(kV >= 1 && kV <= 16 && (kV & (kV - 1)) == 0, "a vector is a power of two of elements");
  static_assert(kUnroll >= 1 && kUnroll <= 8, "the streamed loop unrolls 1 to 8 times");
  static_assert(!kSharedCache || (kCacheIters > 0 && kThreadsPerRow == kBlock),
                "a shared-memory cache holds the row share of a whole block");
  static_assert(!kCluster || (kSplit >= 2 && kSplit <= 16 && kWait), "a cluster holds the 2 to 16 blocks of a row");
};

// A row's head and tail elements (a row that does not start on a kV-element boundary), each
// thread's share of them loaded with its vectors and kept beside them in registers: lane 0 of a
// Vec per element (Body::Load1). A pass over the row then waits for no load of its own.
template <class Body, class Shape>
struct RowEdges {
  static constexpr int kIters =
      Body::kN % Shape::kV != 0 ? (Shape::kV - 1 + Shape::kThreadsPerRow - 1) / Shape::kThreadsPerRow : 0;
  typename Body::Vec head[kIters > 0 ? kIters : 1], tail[kIters > 0 ? kIters : 1];
};

// A group's cached vectors of its row share. In registers: an array of Vec. In shared memory:
// slot s = k * kThreadsPerRow + t holds the thread's k-th vector; cached input i keeps its
// slots together (byte B_i * kSlots + s * b_i, b_i its vector's bytes, B_i those of the inputs
// before it), so a warp's accesses are consecutive. A thread reads only the slots it copied: no
// barrier, only its own waits. Each iteration's copies are one commit group, and the first pass
// over the row waits for iteration k's group just before it uses vector k (Arrive), so that
// pass's arithmetic on the first vectors overlaps the copies of the later ones; with one wait
// for every copy before the pass, each block alternated between a phase of loads and a phase
// of exponentials. Both keep the row's edges in registers.
template <class Body, class Shape, bool kShared = Shape::kSharedCache>
struct RowCache : RowEdges<Body, Shape> {
  typename Body::Vec v[Shape::kCacheIters > 0 ? Shape::kCacheIters : 1];
  __device__ __forceinline__ void Fill(const Body& body, long long r, long long c0, int k, int) {
    body.Load(r, c0, v[k]);
  }
  __device__ __forceinline__ void Commit() const {}
  __device__ __forceinline__ void Arrive(int) const {}
  __device__ __forceinline__ const typename Body::Vec& Get(const Body&, int k, int) const { return v[k]; }
};
template <class Body, class Shape>
struct RowCache<Body, Shape, true> : RowEdges<Body, Shape> {
  static constexpr int kSlots = Shape::kCacheIters * Shape::kThreadsPerRow;
  char* smem;
  __device__ __forceinline__ void Fill(const Body& body, long long r, long long c0, int k, int t) const {
    body.Prefetch(r, c0, smem, k * Shape::kThreadsPerRow + t, kSlots);
  }
  __device__ __forceinline__ void Commit() const { AsyncCopyCommit(); }
  // Vector k's copies have landed (k a constant once the pass's loop is unrolled).
  __device__ __forceinline__ void Arrive(int k) const { AsyncCopyWaitPending(Shape::kCacheIters - 1 - k); }
  __device__ __forceinline__ typename Body::Vec Get(const Body& body, int k, int t) const {
    typename Body::Vec x;
    body.LoadShared(smem, k * Shape::kThreadsPerRow + t, kSlots, x);
    return x;
  }
};

// Where one group's share of a row lies: whole vectors [vbegin, vend) starting at element
// `head` (the first kV-aligned element of the row), plus the head [0, head) and the tail
// [tail_begin, N) when this group takes them.
struct RowSpan {
  long long vbegin, vend;
  int head, tail_begin;
  bool take_head, take_tail;
};

template <class Body, class Shape>
__device__ __forceinline__ RowSpan SpanOf(long long r, int split) {
  constexpr long long kN = Body::kN;
  constexpr int kV = Shape::kV;
  RowSpan s;
  s.head = 0;
  if constexpr (kN % kV != 0) {
    const int misaligned = static_cast<int>((r * kN) % kV);
    s.head = static_cast<int>(min(static_cast<long long>((kV - misaligned) % kV), kN));
  }
  const long long vectors = (kN - s.head) / kV;
  s.vbegin = vectors * split / Shape::kSplit;
  s.vend = vectors * (split + 1) / Shape::kSplit;
  s.tail_begin = static_cast<int>(s.head + vectors * kV);
  s.take_head = split == 0;
  s.take_tail = split == Shape::kSplit - 1;
  return s;
}

// How many of a register cache's iterations k hold a vector in every group's share, so that
// they need no `j < vend` guard. Every share has at least floor(vectors / kSplit) vectors (the
// fewest vectors a row has: its misaligned head takes up to kV - 1 elements), and iteration k
// reaches vector k * kT + t < (k + 1) * kT of it. The guards matter where the cached vectors
// live through the merge to the store pass: ptxas kept a predicate and a 64-bit index per
// guarded vector there (softmax over [4, 1M] f32, 15 vectors a thread, split 66: 182 registers
// guarded, 120 not; 23.2 -> 18.0 us on the H100). A kernel that only reduces consumes each
// vector as it arrives; its loads stay guarded (unguarded, ptxas serialised them: row_min over
// 1001 f32 columns 45.1 -> 46.9 us). A shared-memory cache keeps its guards (unguarded, its
// kernels took more registers than their blocks-per-SM minimum allows).
template <class Body, class Shape>
__device__ __forceinline__ constexpr int SureIters() {
  if (Shape::kSharedCache || !Body::kStores) return 0;
  constexpr long long kMinVectors = (Body::kN - (Body::kN % Shape::kV != 0 ? Shape::kV - 1 : 0)) / Shape::kV;
  return static_cast<int>(kMinVectors / Shape::kSplit / Shape::kThreadsPerRow);
}

// What a pass over the row does with each vector and each single element: accumulate one
// level (Step / Step1) or store the row-shaped outputs (Store / Store1). Members of class
// templates are instantiated only when called, so a Body whose rows have no heads or tails
// need not have Step1 / Store1.
template <class Body, class Acc>
struct StepPass {
  const Body& body;
  const typename Body::Row& row;
  Acc& acc;
  long long r;
  __device__ __forceinline__ void Vector(long long c0, const typename Body::Vec& x) const { body.Step(row, acc, x, r, c0); }
  __device__ __forceinline__ void Element(long long c, const typename Body::Vec& x) const { body.Step1(row, acc, x, r, c); }
};
template <class Body>
struct StorePass {
  const Body& body;
  const typename Body::Row& row;
  long long r;
  __device__ __forceinline__ void Vector(long long c0, const typename Body::Vec& x) const { body.Store(row, x, r, c0); }
  __device__ __forceinline__ void Element(long long c, const typename Body::Vec& x) const { body.Store1(row, x, r, c); }
};

// One pass over a group's share of the row: pass.Vector for each of its vectors (from the
// register cache or loaded), pass.Element for each head and tail element it takes. The first
// pass over a cache (kArrive) waits for each vector's copies as it reaches it.
template <class Body, class Shape, bool kArrive, class Pass>
__device__ __forceinline__ void ForRow(const Body& body, const RowSpan& span, long long r, int t,
                                       const RowCache<Body, Shape>& cache,
                                       const Pass& pass) {
  constexpr int kT = Shape::kThreadsPerRow, kV = Shape::kV;
  if constexpr (Shape::kCacheIters > 0) {
#pragma unroll
    for (int k = 0; k < Shape::kCacheIters; ++k) {
      const long long j = span.vbegin + static_cast<long long>(k) * kT + t;
      if constexpr (kArrive) cache.Arrive(k);
      if (k < SureIters<Body, Shape>() || j < span.vend) pass.Vector(span.head + j * kV, cache.Get(body, k, t));
    }
  } else {
#pragma unroll Shape::kUnroll
    for (long long j = span.vbegin + t; j < span.vend; j += kT) {
      typename Body::Vec x;
      body.Load(r, span.head + j * kV, x);
      pass.Vector(span.head + j * kV, x);
    }
  }
  if constexpr (Body::kN % kV != 0) {
    // Element c, from the cache's edge `kept` or (streamed) loaded now.
    auto element = [&](long long c, const typename Body::Vec& kept) {
      if constexpr (Shape::kCacheIters > 0) {
        pass.Element(c, kept);
      } else {
        typename Body::Vec x;
        body.Load1(r, c, x);
        pass.Element(c, x);
      }
    };
#pragma unroll
    for (int i = 0; i < RowEdges<Body, Shape>::kIters; ++i) {
      const int e = t + i * kT;
      if (span.take_head && e < span.head) element(e, cache.head[i]);
      if (span.take_tail && span.tail_begin + e < Body::kN) element(span.tail_begin + e, cache.tail[i]);
    }
  }
}

// Loads the thread's head and tail elements into the cache's edges (with its vectors).
template <class Body, class Shape>
__device__ __forceinline__ void FillEdges(const Body& body, const RowSpan& span, long long r, int t,
                                          RowEdges<Body, Shape>& edges) {
  if constexpr (RowEdges<Body, Shape>::kIters > 0) {
#pragma unroll
    for (int i = 0; i < RowEdges<Body, Shape>::kIters; ++i) {
      const int e = t + i * Shape::kThreadsPerRow;
      if (span.take_head && e < span.head) body.Load1(r, e, edges.head[i]);
      if (span.take_tail && span.tail_begin + e < Body::kN) body.Load1(r, span.tail_begin + e, edges.tail[i]);
    }
  }
}

// The first level whose pass reads the row (0: none does, and the store pass is the first).
template <class Body>
__device__ __forceinline__ constexpr int FirstPassLevel() {
  for (int l = 1; l <= Body::kLevels; ++l) {
    if ((Body::kPassMask >> l) & 1u) return l;
  }
  return 0;
}

// The barrier generation of level L: how many levels up to L exchange partials.
template <unsigned kMask, int L>
__device__ __forceinline__ constexpr unsigned PassIndex() {
  unsigned n = 0;
  for (int l = 1; l <= L; ++l) n += (kMask >> l) & 1u;
  return n;
}

// One reduction level: accumulate over the row, merge over the group and the split blocks,
// then the per-row values that became computable.
template <int L, class Body, class Shape>
__device__ __forceinline__ void RowLevel(const Body& body, typename Body::Row& row, const RowSpan& span, long long r,
                                         int t, const RowCache<Body, Shape>& cache,
                                         unsigned* smem, unsigned* barrier, unsigned* slots, unsigned* cluster_slots,
                                         int split, bool& owner) {
  using Acc = typename Body::template AccOf<L>::Type;
  Acc acc;
  body.Init(acc);
  if constexpr ((Body::kPassMask >> L) & 1u) {
    ForRow<Body, Shape, L == FirstPassLevel<Body>()>(body, span, r, t, cache, StepPass<Body, Acc>{body, row, acc, r});
    GroupMerge<Shape::kThreadsPerRow, Shape::kBlock>(body, acc, smem);
    if constexpr (Shape::kCluster) {
      ClusterMerge<Shape::kSplit, 1, Shape::kBlock>(body, acc, cluster_slots + (L - 1) * Body::kExchangeWords,
                                                    nullptr, 0, threadIdx.x == 0);
    } else if constexpr (Shape::kSplit > 1) {
      const SplitSync sync{barrier, slots + (L - 1) * (Shape::kSplit + 1) * Body::kExchangeWords,
                           slots + ((L - 1) * (Shape::kSplit + 1) + Shape::kSplit) * Body::kExchangeWords};
      constexpr int kFoldSlots = (Shape::kSplit + Shape::kBlock - 1) / Shape::kBlock;
      const bool merged = SplitMerge<Shape::kSplit, Shape::kWait, kFoldSlots, Shape::kBlock>(
          body, acc, sync, split, PassIndex<Body::kPassMask, L>(), 1, 0, static_cast<int>(threadIdx.x), Shape::kBlock,
          GroupMergeOp<Shape::kThreadsPerRow, Shape::kBlock, Body>{body, smem});
      if constexpr (!Shape::kWait) owner = merged;
    }
  }
  body.Finish(acc, row, r);
}

template <int L, class Body, class Shape>
__device__ __forceinline__ void RowLevels(const Body& body, typename Body::Row& row, const RowSpan& span, long long r,
                                          int t, const RowCache<Body, Shape>& cache,
                                          unsigned* smem, unsigned* barrier, unsigned* slots, unsigned* cluster_slots,
                                          int split, bool& owner) {
  if constexpr (L <= Body::kLevels) {
    RowLevel<L, Body, Shape>(body, row, span, r, t, cache, smem, barrier, slots, cluster_slots, split, owner);
    RowLevels<L + 1, Body, Shape>(body, row, span, r, t, cache, smem, barrier, slots, cluster_slots, split, owner);
  }
}

// The kernel body. `Body` (generated) provides:
//   kN, kV, kLevels, kPassMask (bit L: level L accumulates over the row), kCombines, kStores
//   (whether there are row-shaped outputs: else the final pass over the row is not made),
//   kExchangeWords (the largest level's accumulator, in words), the types Vec (the cached
//   row-shaped inputs of one vector), Row (per-row values) and AccOf<L>::Type, and
//     Load(r, c0, Vec&)                   the cached inputs at columns [c0, c0 + kV)
//   and with a shared-memory cache kCacheBytes (the raw bytes of one vector of every cached
//   input) and
//     Prefetch(r, c0, smem, slot, slots)  CopyVecAsync of those inputs into their slot
//     LoadShared(smem, slot, slots, Vec&) the slot's vectors, widened
//     BeginRow(r, Row&)                   per-row values of level 0
//     Init(Acc&) / Merge(Acc&, const Acc&) the identity and the (commutative) merge
//     Load1(r, c, Vec&)                   element c of the cached inputs, in lane 0 (rows whose
//                                         start is not a vector boundary: heads and tails)
//     Step(const Row&, Acc&, const Vec&, r, c0) / Step1(const Row&, Acc&, const Vec&, r, c)
//     Finish(const Acc&, Row&, r)         the level's results and the per-row values after them
//     Store(const Row&, const Vec&, r, c0) / Store1(const Row&, const Vec&, r, c)  row-shaped outputs
//     StoreRow(const Row&, r)             per-row outputs (and the scalars, from row 0)
//     Partials(const Row&, float*)        the kCombines per-row values combined over rows
//     Combined<kBlock>(const float*, rows, float* smem)  what follows the combines
template <class Body, class Shape>
__device__ __forceinline__ void RowKernel(const Body& body, long long rows, void* scratch) {
  static_assert(Shape::kV == Body::kV, "the body was generated for this vector width");
  static_assert(Shape::kWait || (Body::kLevels == 1 && !Body::kStores),
                "only a one-level body that stores no row-shaped output has its split blocks not wait");
  static_assert(Shape::kCacheIters == 0 || FirstPassLevel<Body>() > 0 || Body::kStores,
                "a cached row is read by some pass, which waits for its copies");
  constexpr int kT = Shape::kThreadsPerRow;
  constexpr int kSmemWords = 32 * (Body::kExchangeWords > 2 ? Body::kExchangeWords : 2);
  __shared__ unsigned smem[kSmemWords];
  __shared__ unsigned cluster_slots[Shape::kCluster ? Body::kLevels * Body::kExchangeWords : 1];
  extern __shared__ __align__(16) char shared_cache[];  // kSharedCache: the row share
  const int t = threadIdx.x % kT;
  const int group = threadIdx.x / kT;
  const int split = static_cast<int>(blockIdx.x % Shape::kSplit);
  const long long row_blocks = gridDim.x / Shape::kSplit;
  unsigned* barrier_base = nullptr;
  unsigned* slots_base = nullptr;
  if constexpr (Shape::kSplit > 1 && !Shape::kCluster) {
    unsigned* after_partials = reinterpret_cast<unsigned*>(CombinePartials(scratch) + rows * Body::kCombines);
    barrier_base = after_partials;
    slots_base = after_partials + 3 * rows;
  }
  for (long long r0 = (blockIdx.x / Shape::kSplit) * Shape::kRowsPerBlock; r0 < rows;
       r0 += row_blocks * Shape::kRowsPerBlock) {
    // Several rows per warp: every group runs every iteration (they shuffle together); a group
    // past the last row recomputes row rows - 1 and writes nothing.
    const bool active = r0 + group < rows;
    const long long r = active ? r0 + group : rows - 1;
    const RowSpan span = SpanOf<Body, Shape>(r, split);
    RowCache<Body, Shape> cache;
    if constexpr (Shape::kSharedCache) cache.smem = shared_cache;
    if constexpr (Shape::kCacheIters > 0) {
#pragma unroll
      for (int k = 0; k < Shape::kCacheIters; ++k) {
        const long long j = span.vbegin + static_cast<long long>(k) * kT + t;
        if (k < SureIters<Body, Shape>() || j < span.vend) cache.Fill(body, r, span.head + j * Shape::kV, k, t);
        cache.Commit();
      }
      FillEdges<Body, Shape>(body, span, r, t, cache);
    }
    unsigned* barrier = barrier_base ? barrier_base + 3 * r : nullptr;
    unsigned* slots = slots_base ? slots_base + r * Body::kLevels * (Shape::kSplit + 1) * Body::kExchangeWords : nullptr;
    typename Body::Row row;
    body.BeginRow(r, row);
    bool owner = split == 0;  // the block that stores the per-row outputs
    RowLevels<1, Body, Shape>(body, row, span, r, t, cache, smem, barrier, slots, cluster_slots, split, owner);
    if constexpr (Shape::kCluster) ClusterArrive();  // this block has read its siblings' slots
    if (active) {
      if constexpr (Body::kStores) {
        ForRow<Body, Shape, FirstPassLevel<Body>() == 0>(body, span, r, t, cache, StorePass<Body>{body, row, r});
      }
      if (t == 0 && owner) {
        body.StoreRow(row, r);
        if constexpr (Body::kCombines > 0) body.Partials(row, CombinePartials(scratch) + r * Body::kCombines);
      }
    }
    if constexpr (Shape::kCluster) {
      ClusterWait();  // every block has read this row's slots
    } else if constexpr (Shape::kSplit > 1) {
      SplitLeave(barrier, Shape::kSplit);
    }
  }
  if constexpr (Body::kCombines > 0) {
    if (LastBlockDone(scratch)) {
      body.template Combined<Shape::kBlock>(CombinePartials(scratch), rows, reinterpret_cast<float*>(smem));
      if (threadIdx.x == 0) *CombineCounter(scratch) = 0u;
    }
  }
}

}  // namespace kiln
