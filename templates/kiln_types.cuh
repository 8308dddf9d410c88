// kiln_types.cuh: the small vocabulary every kiln kernel is written in.
//  * dtype helpers: storage types (float, __half, __nv_bfloat16, int, long long, and bool as
//    unsigned char) and their compute types (float for every float dtype, long long for every
//    integer dtype, bool for bool). Loads widen to the compute type (ToCompute), stores
//    narrow with round-to-nearest-even (FromCompute), exactly as ir/dtype.h does on the host.
//  * 16-byte vector loads and stores of V consecutive elements (LoadVec / StoreVec), split into
//    naturally aligned chunks of at most 16 bytes.
//  * constants without INFINITY (NVRTC does not define it): kInfF / kNegInfF / kNaNF.
//  * functors with one formula comment each (Sum, Max, Min) and warp / block reductions over
//    them built from warp shuffles and a 32-float shared-memory scratch.
// Everything is a small __device__ function; the generated kernels #include this file by name
// (it is handed to NVRTC as an embedded header, templates/CMakeLists.txt).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace kiln {

// ---- constants --------------------------------------------------------------------------
__device__ __forceinline__ float kInfF() { return __int_as_float(0x7f800000); }
__device__ __forceinline__ float kNegInfF() { return __int_as_float(0xff800000); }
__device__ __forceinline__ float kNaNF() { return __int_as_float(0x7fffffff); }

// ---- compute <- storage -----------------------------------------------------------------
__device__ __forceinline__ float ToCompute(float x) { return x; }
__device__ __forceinline__ float ToCompute(__half x) { return __half2float(x); }
__device__ __forceinline__ float ToCompute(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ long long ToCompute(int x) { return static_cast<long long>(x); }
__device__ __forceinline__ long long ToCompute(long long x) { return x; }
__device__ __forceinline__ bool ToCompute(unsigned char x) { return x != 0; }

// ---- storage <- compute (round to nearest even for f16/bf16, wrap for i32) ----------------
template <class T> __device__ __forceinline__ T FromCompute(float x);
template <> __device__ __forceinline__ float FromCompute<float>(float x) { return x; }
template <> __device__ __forceinline__ __half FromCompute<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 FromCompute<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
// Two floats narrowed to two 16-bit elements in one instruction (cvt.rn.bf16x2.f32 /
// cvt.rn.f16x2.f32: the same rounding as FromCompute, a at the lower address).
__device__ __forceinline__ __nv_bfloat162 PairFromCompute(__nv_bfloat16*, float a, float b) {
  return __floats2bfloat162_rn(a, b);
}
__device__ __forceinline__ __half2 PairFromCompute(__half*, float a, float b) { return __floats2half2_rn(a, b); }
template <class T> struct HasPairFromCompute { static constexpr bool value = false; };
template <> struct HasPairFromCompute<__nv_bfloat16> { static constexpr bool value = true; };
template <> struct HasPairFromCompute<__half> { static constexpr bool value = true; };
template <class T> __device__ __forceinline__ T FromCompute(long long x);
template <> __device__ __forceinline__ int FromCompute<int>(long long x) {
  return static_cast<int>(static_cast<unsigned int>(static_cast<unsigned long long>(x)));
}
template <> __device__ __forceinline__ long long FromCompute<long long>(long long x) { return x; }
template <class T> __device__ __forceinline__ T FromCompute(bool x);
template <> __device__ __forceinline__ unsigned char FromCompute<unsigned char>(bool x) {
  return x ? 1 : 0;
}

// ---- vector loads and stores --------------------------------------------------------------
// A chunk of kBytes bytes moved by one instruction (ld/st.global.v4.u32 for 16 bytes).
template <int kBytes> struct Chunk;
template <> struct Chunk<16> { using Type = uint4; };
template <> struct Chunk<8> { using Type = uint2; };
template <> struct Chunk<4> { using Type = unsigned int; };
template <> struct Chunk<2> { using Type = unsigned short; };
template <> struct Chunk<1> { using Type = unsigned char; };

// Loads V consecutive elements p[0..V) and widens them to the compute type.
// Requires p to be aligned to min(16, V * sizeof(T)) bytes: the caller guarantees it by
// starting every vector at an element offset that is a multiple of V in a 16-byte aligned buffer.
template <class T, int V, class C>
__device__ __forceinline__ void LoadVec(const T* __restrict__ p, C (&out)[V]) {
  static_assert(V >= 1 && (V & (V - 1)) == 0, "vector width must be a power of two");
  constexpr int kTotal = V * static_cast<int>(sizeof(T));
  constexpr int kBytes = kTotal < 16 ? kTotal : 16;
  static_assert(kTotal % kBytes == 0, "a vector is a whole number of chunks");
  using ChunkT = typename Chunk<kBytes>::Type;
  constexpr int kPerChunk = kBytes / static_cast<int>(sizeof(T));
  static_assert(kPerChunk >= 1, "an element never straddles two chunks");
#pragma unroll
  for (int k = 0; k < kTotal / kBytes; ++k) {
    ChunkT bits = reinterpret_cast<const ChunkT*>(p)[k];
    const T* elems = reinterpret_cast<const T*>(&bits);
#pragma unroll
    for (int j = 0; j < kPerChunk; ++j) out[k * kPerChunk + j] = ToCompute(elems[j]);
  }
}

// Copies the V elements p[0..V) as raw bytes to shared memory at `dst` without passing them
// through registers: cp.async (sm_80+) in naturally aligned chunks of 4, 8 or 16 bytes (same
// alignment rule as LoadVec; `dst` aligned alike), plain copies for 1- and 2-byte vectors.
// The copies complete at AsyncCopyWait() (or, committed in groups by AsyncCopyCommit, at
// AsyncCopyWaitGroups / AsyncCopyWaitPending); only the issuing thread may rely on them then.
template <class T, int V>
__device__ __forceinline__ void CopyVecAsync(void* dst, const T* __restrict__ p) {
  constexpr int kTotal = V * static_cast<int>(sizeof(T));
  constexpr int kBytes = kTotal < 16 ? kTotal : 16;
  static_assert(kTotal % kBytes == 0, "a vector is a whole number of chunks");
  using ChunkT = typename Chunk<kBytes>::Type;
#pragma unroll
  for (int k = 0; k < kTotal / kBytes; ++k) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (kBytes >= 4) {
      const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(static_cast<char*>(dst) + k * kBytes));
      if constexpr (kBytes == 16) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(reinterpret_cast<const ChunkT*>(p) + k));
      } else {
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(s), "l"(reinterpret_cast<const ChunkT*>(p) + k),
                     "n"(kBytes));
      }
      continue;
    }
#endif
    static_cast<ChunkT*>(dst)[k] = reinterpret_cast<const ChunkT*>(p)[k];
  }
}

// Waits for this thread's CopyVecAsync copies.
__device__ __forceinline__ void AsyncCopyWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// Closes this thread's CopyVecAsync copies issued since the last commit into a group.
__device__ __forceinline__ void AsyncCopyCommit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void AsyncCopyWaitGroups() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

// Waits until at most `pending` of this thread's committed groups are still in flight, where
// `pending` is a constant once the caller's loop is unrolled (wait_group takes an immediate).
// Above 15 it waits for all but 15: more than asked, never less.
__device__ __forceinline__ void AsyncCopyWaitPending(int pending) {
  switch (pending) {
    case 0: AsyncCopyWaitGroups<0>(); break;
    case 1: AsyncCopyWaitGroups<1>(); break;
    case 2: AsyncCopyWaitGroups<2>(); break;
    case 3: AsyncCopyWaitGroups<3>(); break;
    case 4: AsyncCopyWaitGroups<4>(); break;
    case 5: AsyncCopyWaitGroups<5>(); break;
    case 6: AsyncCopyWaitGroups<6>(); break;
    case 7: AsyncCopyWaitGroups<7>(); break;
    case 8: AsyncCopyWaitGroups<8>(); break;
    case 9: AsyncCopyWaitGroups<9>(); break;
    case 10: AsyncCopyWaitGroups<10>(); break;
    case 11: AsyncCopyWaitGroups<11>(); break;
    case 12: AsyncCopyWaitGroups<12>(); break;
    case 13: AsyncCopyWaitGroups<13>(); break;
    case 14: AsyncCopyWaitGroups<14>(); break;
    default: AsyncCopyWaitGroups<15>(); break;
  }
}

// One chunk stored by one instruction. Through the store intrinsics for 8 and 16 bytes: a
// plain assignment of a chunk assembled from 16-bit elements (or after reads from shared
// memory) can be split by the compiler into 4-byte stores (seen in the tiled transpose kernel:
// st.global.u32 x 4 where st.global.v4.u32 was meant).
__device__ __forceinline__ void StoreChunk(uint4* p, uint4 v) { __stwb(p, v); }
__device__ __forceinline__ void StoreChunk(uint2* p, uint2 v) { __stwb(p, v); }
template <class ChunkT>
__device__ __forceinline__ void StoreChunk(ChunkT* p, ChunkT v) { *p = v; }

// Narrows V compute values to T and stores them at p[0..V); same alignment rule as LoadVec.
template <class T, int V, class C>
__device__ __forceinline__ void StoreVec(T* __restrict__ p, const C (&in)[V]) {
  static_assert(V >= 1 && (V & (V - 1)) == 0, "vector width must be a power of two");
  constexpr int kTotal = V * static_cast<int>(sizeof(T));
  constexpr int kBytes = kTotal < 16 ? kTotal : 16;
  using ChunkT = typename Chunk<kBytes>::Type;
  constexpr int kPerChunk = kBytes / static_cast<int>(sizeof(T));
#pragma unroll
  for (int k = 0; k < kTotal / kBytes; ++k) {
    ChunkT bits;
    T* elems = reinterpret_cast<T*>(&bits);
#pragma unroll
    for (int j = 0; j < kPerChunk; ++j) {
      if constexpr (HasPairFromCompute<T>::value && kPerChunk % 2 == 0) {
        if (j % 2 == 0) {
          const auto pair = PairFromCompute(elems, in[k * kPerChunk + j], in[k * kPerChunk + j + 1]);
          memcpy(elems + j, &pair, sizeof(pair));
        }
      } else {
        elems[j] = FromCompute<T>(in[k * kPerChunk + j]);
      }
    }
    StoreChunk(reinterpret_cast<ChunkT*>(p) + k, bits);
  }
}

// Loads V consecutive elements p[i..i+V) of a 16-byte aligned buffer of n elements where i need
// not be a multiple of V (a column region whose inner extent no wide vector divides): the
// naturally aligned chunks that cover them, byte-shifted into place (PRMT). n must be a whole
// number of chunks (the caller checks it: row_fit.h's WholeChunks); a chunk that would start
// past the buffer reads its last chunk instead, so no byte past p[n] is read, and the elements
// at or past n are garbage. Straight-line code, no branch: a branch between two vectors' loads
// would keep the compiler from issuing them together (measured: half the bandwidth).
template <class T, int V, class C>
__device__ __forceinline__ void LoadVecAt(const T* __restrict__ p, long long i, long long n, C (&out)[V]) {
  static_assert(V >= 1 && (V & (V - 1)) == 0, "vector width must be a power of two");
  constexpr int kSize = static_cast<int>(sizeof(T));
  constexpr int kTotal = V * kSize;
  constexpr int kBytes = kTotal < 16 ? kTotal : 16;
  static_assert(kBytes % 4 == 0, "a chunk of whole words");
  using ChunkT = typename Chunk<kBytes>::Type;
  constexpr int kPerChunk = kBytes / kSize, kWords = kBytes / 4, kChunks = kTotal / kBytes + 1;
  const long long a = i & ~static_cast<long long>(kPerChunk - 1), last = n - kPerChunk;
  unsigned w[kChunks * kWords];
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const long long s = min(a + static_cast<long long>(c) * kPerChunk, last);
    const ChunkT bits = reinterpret_cast<const ChunkT*>(p + s)[0];
    memcpy(&w[c * kWords], &bits, kBytes);
  }
  // Shift the words right by `shift` bytes: the bytes within a word first (PRMT over each
  // adjacent pair; none for elements of whole words), then whole words, one select per word
  // and bit of the word offset.
  const int shift = static_cast<int>(i - a) * kSize;  // bytes, below one chunk
  const int q = shift >> 2;
  constexpr int kOut = kTotal / 4, kSpan = kOut + kWords - 1;  // words out, words they come from
  unsigned u[kSpan];
  if constexpr (kSize % 4 == 0) {
#pragma unroll
    for (int t = 0; t < kSpan; ++t) u[t] = w[t];
  } else {
    const unsigned selector = 0x3210u + static_cast<unsigned>(shift & 3) * 0x1111u;
#pragma unroll
    for (int t = 0; t < kSpan; ++t) u[t] = __byte_perm(w[t], w[t + 1], selector);
  }
#pragma unroll
  for (int step = kWords / 2; step >= 1; step /= 2) {
#pragma unroll
    for (int t = 0; t + step < kSpan; ++t) u[t] = (q & step) ? u[t + step] : u[t];
  }
  const T* elems = reinterpret_cast<const T*>(u);
#pragma unroll
  for (int j = 0; j < V; ++j) out[j] = ToCompute(elems[j]);
}

// Narrows the first `count` (at most V) of V compute values to T and stores them at p[i..):
// one StoreVec where i is a multiple of V and all V are stored, else element by element (the
// counterpart of LoadVecAt).
template <class T, int V, class C>
__device__ __forceinline__ void StoreVecAt(T* __restrict__ p, long long i, long long count, const C (&in)[V]) {
  if (count >= V && i % V == 0) {
    StoreVec<T, V>(p + i, in);
    return;
  }
#pragma unroll
  for (int j = 0; j < V; ++j) {
    if (j < count) p[i + j] = FromCompute<T>(in[j]);
  }
}

// ---- reduction functors ---------------------------------------------------------------------
// Sum: y = a + b; identity 0.
struct Sum {
  __device__ __forceinline__ static float Identity() { return 0.0f; }
  __device__ __forceinline__ static float Apply(float a, float b) { return a + b; }
};
// Max: y = NaN if a or b is NaN, else max(a, b); identity -inf (the interpreter's rule).
// From sm_80 on one instruction (max.NaN.f32: a NaN operand gives the canonical NaN); the
// sign of max(+0, -0) is not part of the contract (the two compare equal).
struct Max {
  __device__ __forceinline__ static float Identity() { return kNegInfF(); }
  __device__ __forceinline__ static float Apply(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    float y;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
    return y;
#else
    return (a != a) ? a : ((b != b) ? b : (b > a ? b : a));
#endif
  }
};
// Min: y = NaN if a or b is NaN, else min(a, b); identity +inf (min.NaN.f32 from sm_80 on).
struct Min {
  __device__ __forceinline__ static float Identity() { return kInfF(); }
  __device__ __forceinline__ static float Apply(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    float y;
    asm("min.NaN.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
    return y;
#else
    return (a != a) ? a : ((b != b) ? b : (b < a ? b : a));
#endif
  }
};

// Integer folds (exact, wrapping sums; max/min), for integer reductions.
struct SumI64 {
  __device__ __forceinline__ static long long Identity() { return 0; }
  // y = a + b (mod 2^64)
  __device__ __forceinline__ static long long Apply(long long a, long long b) { return static_cast<long long>(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b)); }
};
struct MaxI64 {
  __device__ __forceinline__ static long long Identity() { return -9223372036854775807LL - 1; }
  // y = max(a, b)
  __device__ __forceinline__ static long long Apply(long long a, long long b) { return a < b ? b : a; }
};
struct MinI64 {
  __device__ __forceinline__ static long long Identity() { return 9223372036854775807LL; }
  // y = min(a, b)
  __device__ __forceinline__ static long long Apply(long long a, long long b) { return b < a ? b : a; }
};
// i32 max/min identities (the interpreter starts i32 max at INT32_MIN, not INT64_MIN).
struct MaxI32 {
  __device__ __forceinline__ static long long Identity() { return -2147483647LL - 1; }
  // y = max(a, b)
  __device__ __forceinline__ static long long Apply(long long a, long long b) { return a < b ? b : a; }
};
struct MinI32 {
  __device__ __forceinline__ static long long Identity() { return 2147483647LL; }
  // y = min(a, b)
  __device__ __forceinline__ static long long Apply(long long a, long long b) { return b < a ? b : a; }
};

// ---- type selection ---------------------------------------------------------------------------
// SelectType<I, T1, T2, ...>::Type is T_I (1-based): a generated Body's accumulator of level I.
template <int I, class T, class... Ts>
struct SelectType {
  using Type = typename SelectType<I - 1, Ts...>::Type;
};
template <class T, class... Ts>
struct SelectType<1, T, Ts...> {
  using Type = T;
};

// ---- warp and block reductions ------------------------------------------------------------
// Butterfly over each aligned segment of kWidth lanes (the whole warp by default), then the
// segment's first lane's result broadcast, so every lane of a segment holds the same bits even
// for an Op that is not bitwise commutative (Max on +0/-0). Every lane of the warp must call
// it (the mask is full). The order of combination is fixed: deterministic run to run.
template <class Op, int kWidth = 32>
__device__ __forceinline__ float WarpReduce(float v) {
  static_assert(kWidth >= 1 && kWidth <= 32 && (kWidth & (kWidth - 1)) == 0, "a power-of-two part of a warp");
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset >>= 1) {
    v = Op::Apply(v, __shfl_xor_sync(0xffffffffu, v, offset, kWidth));
  }
  return __shfl_sync(0xffffffffu, v, 0, kWidth);
}

// Reduces v over the kBlock threads of the block and returns the result in every thread.
// `smem` holds at least 32 floats; it may be reused right after the call returns (the
// trailing barrier protects it). Every thread of the block must call it.
template <class Op, int kBlock>
__device__ __forceinline__ float BlockReduce(float v, float* smem) {
  static_assert(kBlock % 32 == 0, "BlockReduce needs whole warps (the shuffles use a full mask)");
  static_assert(kBlock >= 32 && kBlock <= 1024, "a block has 32 to 1024 threads");
  constexpr int kWarps = kBlock / 32;
  v = WarpReduce<Op>(v);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  // Every warp reduces the per-warp partials in the same order: all threads get equal bits.
  float r = lane < kWarps ? smem[lane] : Op::Identity();
  r = WarpReduce<Op>(r);
  __syncthreads();
  return r;
}

// A reduction over a group of kThreads consecutive threads that own one row: part of a warp
// (4, 8, 16 lanes: short rows, several per warp), a warp (32) or the whole block (kThreads ==
// kBlock). Returns the result in every thread of the group; every thread of the warp (of the
// block, for a block group) must call it.
template <class Op, int kThreads, int kBlock>
__device__ __forceinline__ float GroupReduce(float v, float* smem) {
  static_assert(kThreads <= 32 || kThreads == kBlock,
                "a row is owned by part of a warp, one warp or the whole block");
  if constexpr (kThreads <= 32) {
    return WarpReduce<Op, kThreads>(v);
  } else {
    return BlockReduce<Op, kBlock>(v, smem);
  }
}

}  // namespace kiln
