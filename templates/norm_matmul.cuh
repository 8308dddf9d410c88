// norm_matmul.cuh: a row normalisation folded into the matmul that reads it (region kind
// norm_matmul), on the mma.sync tensor-core path (sm_80 and later; bf16, f32 accumulation).
//
//   out[m, n] = epilogue(s[m] * sum_k g(x[m, k], k) W[k, n], m, n)
//   s[m]      = f(sum_k e_1(x[m, k], k), ..., sum_k e_R(x[m, k], k))     (one pass over x)
//
// For rms_norm(x, w) @ W: g = x w[k], e_1 = x^2, f = rsqrt(e_1 / K + eps). The normalised
// activations never exist: each block streams its token rows of x through shared memory once,
// accumulating the row statistics e_i as it rewrites the tile in place as the mma operand
// g(x, k) rounded to T, and applies the row scale s[m] (known only after the last k tile) to
// the f32 accumulators in the epilogue. (The unfused graph rounds x s w to T before the
// matmul; here x w is rounded and s applied in f32: the same bf16 rounding, at another place.)
//
// Orientation: tokens are few (decoding: 1 to 64 rows), so they are the mma's n (8 per
// fragment) and output features its m (16 per fragment): D^T[n, m] = W^T[n, :] . g(x)^T[:, m].
// A block owns kTokens token rows x kBlockN features; its kWarps warps split each k tile of
// 16 kWarps kKSteps columns (kKSteps k16 steps per warp) and their partial accumulators are summed in warp
// order through shared memory at the end (deterministic). W tiles and x tiles stream through
// kStages buffers with cp.async (zero-filled past M, N and K); W is stored [K, N]
// (kWTransposed false; ldmatrix.trans) or [N, K] (true).
//
// Codegen (codegen/emit_norm_matmul.cc) generates only the Body (NormMatmulPlan's pieces):
//   using T;                                  __nv_bfloat16
//   static constexpr long long kN, kK;        features, reduced extent (multiples of 8)
//   static constexpr int kReductions;         R >= 0 row statistics
//   const T* X() const; const T* W() const; T* Out() const;
//   float Operand(float x, long long k) const;          g
//   void Stats(float x, long long k, float* s) const;    s[i] += e_i (R values)
//   float RowScale(const float* s) const;                 f of the R sums
//   float Epilogue(float v, long long m, long long n) const;  bias, residual, activation
// Launch: grid ceil(count / kTokens) x ceil(kN / kBlockN), kThreads threads, the larger of
// the pipeline's kStages x kStageElems x 2 bytes and the epilogue's f32 tiles of dynamic
// shared memory (NormMatmulSmemBytes, passes/fusion/norm_matmul_plan.h); count is M, the token rows. x, W and Out are 16-byte aligned.
#pragma once

#include "mma_sync.cuh"
#include "pointwise.cuh"  // the pointwise ops the Body's expressions call

namespace kiln {

template <int kTokens_, int kBlockN_, int kWarps_, int kStages_, int kKSteps_, bool kWTransposed_>
struct NormMatmulShape {
  static constexpr int kTokens = kTokens_, kBlockN = kBlockN_, kWarps = kWarps_, kStages = kStages_;
  static constexpr int kKSteps = kKSteps_;  // k16 steps per warp per k tile
  static constexpr bool kWTransposed = kWTransposed_;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kBlockK = 16 * kWarps * kKSteps;
  // Shared-memory tiles in 16-bit elements, rows padded by 16 bytes (ldmatrix without bank
  // conflicts): x [kTokens][kBlockK], W [kBlockK][kBlockN] or [kBlockN][kBlockK].
  static constexpr int kXStride = kBlockK + 8;
  static constexpr int kWRows = kWTransposed ? kBlockN : kBlockK;
  static constexpr int kWCols = kWTransposed ? kBlockK : kBlockN;
  static constexpr int kWStride = kWCols + 8;
  static constexpr int kStageElems = kTokens * kXStride + kWRows * kWStride;
  static constexpr int kFTiles = kBlockN / 16, kTGroups = kTokens / 8;
  static constexpr int kXChunksPerRow = kBlockK / 8;
  static constexpr int kXChunks = kTokens * kXChunksPerRow;
  static constexpr int kXChunksPerThread = (kXChunks + kThreads - 1) / kThreads;
  static constexpr int kRedStride = kBlockN + 4;  // f32 partials [kTokens][kBlockN], padded
  static_assert(kTokens % 8 == 0 && kTokens <= 64, "tokens are whole n8 fragments, at most 64");
  static_assert(kBlockN % 16 == 0, "features are whole m16 fragments");
  static_assert(kStages >= 2 && kStages <= 8, "2 to 8 pipeline stages");
  static_assert(kThreads % kXChunksPerRow == 0 && kXChunksPerRow <= 32,
                "a token row's chunks sit in consecutive threads of one warp");
};

template <class Body, class Shape>
__device__ __forceinline__ void NormMatmulKernel(const Body& body, long long count) {
  using T = typename Body::T;
  using namespace kiln::mma;  // NOLINT: the PTX wrappers
  constexpr int kR = Body::kReductions > 0 ? Body::kReductions : 1;
  constexpr int kTokens = Shape::kTokens, kBlockN = Shape::kBlockN, kWarps = Shape::kWarps;
  constexpr int kStages = Shape::kStages, kBlockK = Shape::kBlockK, kThreads = Shape::kThreads;
  constexpr int kXStride = Shape::kXStride, kWStride = Shape::kWStride, kStageElems = Shape::kStageElems;
  constexpr int kCpr = Shape::kXChunksPerRow;
  constexpr long long kN = Body::kN, kK = Body::kK;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const smem = reinterpret_cast<T*>(smem_raw);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const long long n0 = static_cast<long long>(blockIdx.y) * kBlockN;
  const T* const x = body.X();
  const T* const w = body.W();
  const int k_tiles = static_cast<int>((kK + kBlockK - 1) / kBlockK);

  for (long long m0 = static_cast<long long>(blockIdx.x) * kTokens; m0 < count;
       m0 += static_cast<long long>(gridDim.x) * kTokens) {
    auto load = [&](int kt) {
      T* const xs = smem + (kt % kStages) * kStageElems;
      T* const ws = xs + kTokens * kXStride;
      const long long k0 = static_cast<long long>(kt) * kBlockK;
      for (int c = tid; c < Shape::kXChunks; c += kThreads) {
        const int r = c / kCpr, col = (c % kCpr) * 8;
        const bool valid = m0 + r < count && k0 + col < kK;
        CpAsync16(xs + r * kXStride + col, valid ? x + (m0 + r) * kK + k0 + col : ZeroFillSource<T>(), valid);
      }
      constexpr int kWCpr = Shape::kWCols / 8;
      for (int c = tid; c < Shape::kWRows * kWCpr; c += kThreads) {
        const int r = c / kWCpr, col = (c % kWCpr) * 8;
        const long long kk = Shape::kWTransposed ? k0 + col : k0 + r;
        const long long nn = Shape::kWTransposed ? n0 + r : n0 + col;
        const bool valid = kk < kK && nn < kN;
        const T* src = Shape::kWTransposed ? w + nn * kK + kk : w + kk * kN + nn;
        CpAsync16(ws + r * kWStride + col, valid ? src : ZeroFillSource<T>(), valid);
      }
    };

    float acc[Shape::kFTiles][Shape::kTGroups][4];
#pragma unroll
    for (int f = 0; f < Shape::kFTiles; ++f)
#pragma unroll
      for (int j = 0; j < Shape::kTGroups; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[f][j][e] = 0.0f;
    float stats[Shape::kXChunksPerThread][kR];
#pragma unroll
    for (int i = 0; i < Shape::kXChunksPerThread; ++i)
#pragma unroll
      for (int s = 0; s < kR; ++s) stats[i][s] = 0.0f;

#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < k_tiles) load(s);
      CpAsyncCommit();
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
      CpAsyncWait<kStages - 2>();
      __syncthreads();
      // The slot this refills was read by the previous tile's mma, which every warp finished
      // before the barrier: issue it now, so the conversion below (whose weight loads wait on
      // L2) overlaps the loads in flight instead of delaying the next one.
      if (kt + kStages - 1 < k_tiles) load(kt + kStages - 1);
      CpAsyncCommit();
      T* const xs = smem + (kt % kStages) * kStageElems;
      const T* const ws = xs + kTokens * kXStride;
      const long long k0 = static_cast<long long>(kt) * kBlockK;
      // The x tile becomes the mma operand g(x, k) in place; its row statistics accumulate.
#pragma unroll
      for (int i = 0; i < Shape::kXChunksPerThread; ++i) {
        const int c = tid + i * kThreads;
        if (c >= Shape::kXChunks) break;
        const int r = c / kCpr, col = (c % kCpr) * 8;
        const long long k = k0 + col;
        if (m0 + r < count && k < kK) {  // padding stays zero: a zero operand
          uint4* const p = reinterpret_cast<uint4*>(xs + r * kXStride + col);
          uint4 raw = *p, out;
          const T* v = reinterpret_cast<const T*>(&raw);
          T* o = reinterpret_cast<T*>(&out);
#pragma unroll
          for (int e = 0; e < 8; ++e) {
            const float xv = ToCompute(v[e]);
            body.Stats(xv, k + e, stats[i]);
            o[e] = FromCompute<T>(body.Operand(xv, k + e));
          }
          *p = out;
        }
      }
      __syncthreads();
#pragma unroll
      for (int step = 0; step < Shape::kKSteps; ++step) {
        const int kk = (step * kWarps + warp) * 16;
        if (k0 + kk < kK) {
          unsigned b[Shape::kTGroups][2];
#pragma unroll
          for (int j = 0; j < Shape::kTGroups; ++j) {
            LdMatrixX2(b[j], xs + (j * 8 + lane % 8) * kXStride + kk + ((lane / 8) % 2) * 8);
          }
          const int q = lane / 8, r = lane % 8;
#pragma unroll
          for (int f = 0; f < Shape::kFTiles; ++f) {
            unsigned a[4];
            if (Shape::kWTransposed) {
              LdMatrixX4(a, ws + (f * 16 + r + (q & 1) * 8) * kWStride + kk + (q >> 1) * 8);
            } else {
              LdMatrixX4Trans(a, ws + (kk + r + (q >> 1) * 8) * kWStride + f * 16 + (q & 1) * 8);
            }
#pragma unroll
            for (int j = 0; j < Shape::kTGroups; ++j) Mma<T>::Run(acc[f][j], a, b[j][0], b[j][1]);
          }
        }
      }
    }
    CpAsyncWait<0>();
    __syncthreads();  // the pipeline buffers become the epilogue's

    float* const red = reinterpret_cast<float*>(smem_raw);  // [kTokens][kRedStride]
    float* const scale = red + kTokens * Shape::kRedStride;  // [kTokens]
    float* const row_stats = scale + kTokens;               // [kTokens][kR]
    // A token row's chunks are kCpr consecutive threads of one warp, at the same i.
#pragma unroll
    for (int i = 0; i < Shape::kXChunksPerThread; ++i) {
      const int c = tid + i * kThreads;
#pragma unroll
      for (int s = 0; s < kR; ++s) {
        float v = stats[i][s];
#pragma unroll
        for (int off = kCpr / 2; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
        if (c < Shape::kXChunks && c % kCpr == 0) row_stats[(c / kCpr) * kR + s] = v;
      }
    }
    for (int wp = 0; wp < kWarps; ++wp) {  // warp-ordered sum of the partial accumulators
      if (warp == wp) {
#pragma unroll
        for (int f = 0; f < Shape::kFTiles; ++f)
#pragma unroll
          for (int j = 0; j < Shape::kTGroups; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              float* dst = red + (j * 8 + 2 * t + (e & 1)) * Shape::kRedStride + f * 16 + g + (e >> 1) * 8;
              *dst = wp == 0 ? acc[f][j][e] : *dst + acc[f][j][e];
            }
      }
      __syncthreads();
    }
    if (tid < kTokens) scale[tid] = body.RowScale(row_stats + tid * kR);
    __syncthreads();
    constexpr int kOutCpr = kBlockN / 8;
    for (int c = tid; c < kTokens * kOutCpr; c += kThreads) {
      const int r = c / kOutCpr, col = (c % kOutCpr) * 8;
      const long long m = m0 + r, n = n0 + col;
      if (m >= count || n >= kN) continue;
      uint4 out;
      T* o = reinterpret_cast<T*>(&out);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        o[e] = FromCompute<T>(body.Epilogue(scale[r] * red[r * Shape::kRedStride + col + e], m, n + e));
      }
      *reinterpret_cast<uint4*>(body.Out() + m * kN + n) = out;
    }
    __syncthreads();  // the next token tile reuses shared memory
  }
}

}  // namespace kiln
