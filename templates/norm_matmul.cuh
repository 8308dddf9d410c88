// norm_matmul.cuh: a row normalisation folded into the matmul that reads it (region kind
// norm_matmul), on the mma.sync tensor-core path (sm_80 and later; bf16, f32 accumulation).
//
//   out[m, n] = epilogue(s[m] * sum_k g(x[m, k], k) W[k, n], m, n)
//   s[m]      = f(sum_k e_1(x[m, k], k), ..., sum_k e_R(x[m, k], k))     (sums over k)
//
// For rms_norm(x, w) @ W: g = x w[k], e_1 = x^2, f = rsqrt(e_1 / K + eps). For layer_norm the
// Body centres x (kCentre: every g and e_i sees x - mean_m, the mean summed here first over all
// of K) and adds the bias's product: out = epilogue(s[m] sum_k g W + sum_k b[k] W[k, n]), the
// second sum a virtual token row of every tile whose operand is b (kColumnBias). The normalised
// activations never exist: each block turns its slice of x into the mma operand g(x, k) in
// shared memory once, adding up the row statistics e_i as it goes, and applies the row scale
// s[m] (known only once every slice is summed) to the f32 accumulators in the epilogue. (The
// unfused graph rounds x s w to T before the matmul; here x w is rounded and s applied in
// f32: the same bf16 rounding, at another place.)
//
// The design streams W, the one large operand of a decoding step, at the copy bandwidth,
// which takes many bytes in flight on every SM and few instructions per byte:
// * Orientation: tokens are few (1 to 64 rows), so they are the mma's n (8 per fragment) and
//   output features its m (16 per fragment): D^T[n, m] = W^T[n, :] . g(x)^T[:, m].
// * W goes from global memory straight into the A fragments: each warp loads kUnroll k32
//   chunks at once (independent 16-, 8- or 4-byte loads off one base pointer, compile-time
//   offsets) and then runs their mma; no shared memory and no barrier on W's path, and many
//   resident warps keep the loads in flight (double-buffering the registers measured slower:
//   it costs the residency that hides the latency). A sum over k does not care which physical k sits
//   in which fragment slot, as long as A and B agree; nor which feature sits in which row, as
//   long as the epilogue knows. So each thread loads contiguous memory:
//     W [N, K] (kWTransposed): rows f*16+g and f*16+g+8 of fragment f, k columns 8t..8t+7 of
//       the chunk (one 16-byte load per row and chunk, both k16 steps);
//     W [K, N]: k rows 16s+4t..+3 of the chunk's step s, features g*V..g*V+V-1 of the warp's
//       kWarpN (V = 2 kFTiles: 4-, 8- or 16-byte loads), packed in pairs of k with a byte
//       permute; fragment f's row g is feature g*V+2f, row g+8 is g*V+2f+1.
//   The x operand in shared memory is read with the same k assignment.
// * Parallelism over the whole machine at any M: a block owns kTokens token rows x kBlockN
//   features; its kWarps warps are kWarpsN along the features (kFTiles m16 fragments each)
//   times kWarpsK along k (k32 chunks round-robin), and kSplit blocks (grid z) share one
//   output tile, each taking a contiguous 1 / kSplit of the k32 chunks. Partials are summed
//   in a fixed order: warps along k through shared memory, in warp order; split blocks through
//   the scratch, where the last block to arrive (an atomic ticket) sums the kSplit partial
//   tiles and row statistics in split order and runs the epilogue. Deterministic, no float
//   atomics; the ticket is left zero for the next launch.
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
//   static constexpr bool kCentre, kColumnBias;   x centred on its row mean; a column bias
//   float ColumnBias(long long k) const;                  b[k] (with kColumnBias)
// A tile holds kRows = kTokens - kColumnBias rows of x (the last row is the virtual one).
// Launch: grid ceil(count / kRows) x ceil(kN / kBlockN) x kSplit, kThreads threads,
// NormMatmulShape::kSmemBytes of dynamic shared memory (passes/fusion/norm_matmul_plan.cc
// mirrors it), and with kSplit > 1 kScratchItemBytes of zero-initialised scratch per (token
// tile, feature tile); count is M, the token rows. x, W and Out are 16-byte aligned.
#pragma once

#include "mma_sync.cuh"
#include "pointwise.cuh"  // the pointwise ops the Body's expressions call

namespace kiln {

template <int kTokens_, int kBlockN_, int kWarps_, int kWarpsN_, int kSplit_, int kUnroll_, bool kWTransposed_,
          int kR_, long long kK_>
struct NormMatmulShape {
  static constexpr int kTokens = kTokens_, kBlockN = kBlockN_, kWarps = kWarps_, kWarpsN = kWarpsN_;
  static constexpr int kSplit = kSplit_, kUnroll = kUnroll_;
  static constexpr bool kWTransposed = kWTransposed_;
  static constexpr int kR = kR_ > 0 ? kR_ : 1;  // row statistics (at least one slot)
  static constexpr int kWarpsK = kWarps / kWarpsN;
  static constexpr int kWarpN = kBlockN / kWarpsN;  // features per warp
  static constexpr int kFTiles = kWarpN / 16;
  static constexpr int kTGroups = kTokens / 8;
  static constexpr int kThreads = 32 * kWarps;
  // A thread's share of one k32 chunk of W, in 32-bit words (both layouts): 2 k16 steps x
  // kFTiles fragments x 4 registers; loaded as pieces of kPieceBytes.
  static constexpr int kRawWords = 8 * kFTiles;
  static constexpr int kPieceBytes = kWTransposed ? 16 : 4 * kFTiles;
  static constexpr int kPieces = kRawWords * 4 / kPieceBytes;
  // The k32 chunks of K, and of one split block's slice (the last slices may be shorter).
  static constexpr int kChunks = static_cast<int>((kK_ + 31) / 32);
  static constexpr int kSliceChunks = (kChunks + kSplit - 1) / kSplit;
  static constexpr int kSliceCols = 32 * kSliceChunks;
  // x slice rows padded so a warp's fragment reads hit distinct banks: 16-byte reads of 64
  // bytes per row ([N, K]) want rows 64 bytes apart modulo 128, 8-byte reads of 32 bytes per
  // row ([K, N]) rows an odd multiple of 32 bytes apart.
  static constexpr int kXStride = kSliceCols + (kWTransposed ? (kSliceChunks % 2 == 0 ? 32 : 0) : 16);
  static constexpr int kRedStride = kBlockN + 4;  // f32 partial tile [kTokens][kBlockN], padded
  static constexpr int kXBytes = kTokens * kXStride * 2;
  static constexpr int kChunkStatsBytes = kTokens * (kSliceCols / 8) * kR * 4;  // per 8-column chunk
  // Dynamic shared memory: the x slice, the statistics of its 8-column chunks, then the
  // block's row means, row statistics and scales; the partial tile reuses the x slice once the
  // mma is done.
  static constexpr int kSmemBytes = (kXBytes > kTokens * kRedStride * 4 ? kXBytes : kTokens * kRedStride * 4) +
                                    kChunkStatsBytes + (2 * kTokens + kTokens * kR) * 4;
  // Scratch per (token tile, feature tile) item: a 16-byte ticket, then kSplit partial tiles
  // [kTokens][kBlockN] f32, then kSplit x kTokens x kR partial row statistics.
  static constexpr long long kScratchItemBytes = 16 + 4LL * kSplit * kTokens * (kBlockN + kR);
  static_assert(kTokens % 8 == 0 && kTokens >= 8 && kTokens <= 64, "tokens are whole n8 fragments, 8 to 64");
  static_assert(kWarps % kWarpsN == 0, "warps are kWarpsN along the features times kWarpsK along k");
  static_assert(kBlockN % (16 * kWarpsN) == 0, "a warp's features are whole m16 fragments");
  static_assert(kWTransposed || kFTiles == 1 || kFTiles == 2 || kFTiles == 4,
                "W [K, N]: a thread's features per k row are one 4-, 8- or 16-byte load");
  static_assert(kUnroll >= 1 && kUnroll <= 8, "1 to 8 k32 chunks in flight per warp");
};

template <class Body, class Shape>
__device__ __forceinline__ void NormMatmulKernel(const Body& body, long long count, void* scratch) {
  using T = typename Body::T;
  using namespace kiln::mma;  // NOLINT: the PTX wrappers
  constexpr int kTokens = Shape::kTokens, kBlockN = Shape::kBlockN, kWarps = Shape::kWarps;
  constexpr int kWarpsN = Shape::kWarpsN, kWarpsK = Shape::kWarpsK, kFT = Shape::kFTiles, kTG = Shape::kTGroups;
  constexpr int kU = Shape::kUnroll, kRaw = Shape::kRawWords, kR = Shape::kR, kSplit = Shape::kSplit;
  constexpr int kXStride = Shape::kXStride, kRedStride = Shape::kRedStride, kThreads = Shape::kThreads;
  constexpr int kPieceBytes = Shape::kPieceBytes, kPieces = Shape::kPieces;
  constexpr long long kN = Body::kN, kK = Body::kK;
  constexpr int kRows = kTokens - (Body::kColumnBias ? 1 : 0);  // rows of x per tile; then the virtual row
  static_assert(Shape::kChunks == static_cast<int>((kK + 31) / 32), "the shape is made for this body's K");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const xs = reinterpret_cast<T*>(smem_raw);                       // [kTokens][kXStride]
  float* const red = reinterpret_cast<float*>(smem_raw);              // [kTokens][kRedStride], after the mma
  float* const row_stats = reinterpret_cast<float*>(smem_raw + Shape::kSmemBytes) - kTokens * (kR + 1);
  float* const chunk_stats = row_stats - Shape::kChunkStatsBytes / 4;  // [kTokens][kSliceCols / 8][kR]
  float* const scale = row_stats + kTokens * kR;                      // [kTokens]
  float* const centre = row_stats - Shape::kChunkStatsBytes / 4 - kTokens;  // [kTokens] row means (kCentre)
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const int wn = warp % kWarpsN, wk = warp / kWarpsN;
  const int split = blockIdx.z;
  const long long n0 = static_cast<long long>(blockIdx.y) * kBlockN;
  const long long n_warp = n0 + wn * Shape::kWarpN;
  const T* const x = body.X();
  const T* const w = body.W();
  // This block's k32 chunks [c_begin, c_end), and this warp's: c_begin + wk + kWarpsK i.
  const int c_begin = static_cast<int>(static_cast<long long>(split) * Shape::kChunks / kSplit);
  const int c_end = static_cast<int>(static_cast<long long>(split + 1) * Shape::kChunks / kSplit);
  const long long k_begin = 32LL * c_begin;
  const long long k_end = 32LL * c_end < kK ? 32LL * c_end : kK;
  const int my_chunks = c_end - c_begin > wk ? (c_end - c_begin - wk + kWarpsK - 1) / kWarpsK : 0;

  // Chunk i of this warp into raw words: piece q is the chunk's base pointer plus a
  // compile-time offset ([N, K]: piece f 2 + h is row f 16 + 8 h; [K, N]: piece s 4 + r is k
  // row 16 s + r). Only a block at the edge of N, a K that is not a multiple of 32, or a
  // chunk past the warp's share checks each piece (zeros there).
  const bool whole_n = n0 + kBlockN <= kN;
  const T* const w_thread = Shape::kWTransposed ? w + (n_warp + g) * kK + 8 * t : w + 4 * t * kN + n_warp + g * 2 * kFT;
  auto load_chunk = [&](unsigned (&raw)[kRaw], int i) {
    const long long k0 = 32LL * (c_begin + wk) + 32LL * kWarpsK * i;
    const T* const base = w_thread + k0 * (Shape::kWTransposed ? 1 : kN);
    const bool fast = whole_n && kK % 32 == 0 && i < my_chunks;
#pragma unroll
    for (int q = 0; q < kPieces; ++q) {
      const long long off = Shape::kWTransposed ? (q / 2 * 16 + q % 2 * 8) * kK : (q / 4 * 16 + q % 4) * kN;
      bool ok = true;
      if (!fast) {
        ok = i < my_chunks && (Shape::kWTransposed ? n_warp + q / 2 * 16 + q % 2 * 8 + g < kN && k0 + 8 * t < kK
                                                   : n_warp + g * 2 * kFT < kN && k0 + q / 4 * 16 + 4 * t + q % 4 < kK);
      }
      unsigned* const dst = raw + q * (kPieceBytes / 4);
      if constexpr (kPieceBytes == 16) {
        const uint4 v = ok ? __ldg(reinterpret_cast<const uint4*>(base + off)) : make_uint4(0u, 0u, 0u, 0u);
        dst[0] = v.x, dst[1] = v.y, dst[2] = v.z, dst[3] = v.w;
      } else if constexpr (kPieceBytes == 8) {
        const uint2 v = ok ? __ldg(reinterpret_cast<const uint2*>(base + off)) : make_uint2(0u, 0u);
        dst[0] = v.x, dst[1] = v.y;
      } else {
        dst[0] = ok ? __ldg(reinterpret_cast<const unsigned*>(base + off)) : 0u;
      }
    }
  };

  for (long long m0 = static_cast<long long>(blockIdx.x) * kRows; m0 < count;
       m0 += static_cast<long long>(gridDim.x) * kRows) {
    // x[m0 .., k_begin .. k_end) -> shared memory as it is (zeros past M, the slice and the
    // virtual row) ...
    constexpr int kXChunks = kTokens * (Shape::kSliceCols / 8);
    for (int c = tid; c < kXChunks; c += kThreads) {
      const int r = c / (Shape::kSliceCols / 8), col = (c % (Shape::kSliceCols / 8)) * 8;
      const long long k = k_begin + col;
      const bool ok = (kRows == kTokens || r < kRows) && m0 + r < count && k < k_end;
      CpAsync16(xs + r * kXStride + col, ok ? x + (m0 + r) * kK + k : x, ok);
    }
    CpAsyncCommit();
    if constexpr (Body::kCentre) {
      // ... while each row's mean over all of K is summed from global memory (L2): a warp per
      // row, each lane its 8-column vectors in order, then a fixed shuffle tree, so that every
      // split block of the row subtracts the same mean.
      // (Eight vectors a lane in flight: the row's loads are latency, not bandwidth.)
      constexpr int kCentreIters = static_cast<int>((kK + 255) / 256);
      for (int r = warp; r < kRows; r += kWarps) {
        float sum = 0.0f;
        if (m0 + r < count) {
          const T* row = x + (m0 + r) * kK;
#pragma unroll 8
          for (int i = 0; i < kCentreIters; ++i) {
            const long long k = 8LL * lane + 256LL * i;
            if (k < kK) {
              const uint4 raw = __ldg(reinterpret_cast<const uint4*>(row + k));
              const T* v = reinterpret_cast<const T*>(&raw);
#pragma unroll
              for (int e = 0; e < 8; ++e) sum += ToCompute(v[e]);
            }
          }
        }
#pragma unroll
        for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
        if (lane == 0) centre[r] = sum / static_cast<float>(kK);
      }
    }
    CpAsyncWait<0>();
    __syncthreads();

    // ... then every thread takes 8-column chunks of it (all of a chunk's loads of x and of
    // the per-column weights in flight at once): the operand g(x, k) in place (padding stays
    // zero: a zero operand) and the chunk's statistics, which a warp per token row then sums
    // in a fixed order (lanes over chunks, a fixed shuffle tree).
    constexpr int kCpr = Shape::kSliceCols / 8;
#pragma unroll
    for (int i = 0; i < (kTokens * kCpr + kThreads - 1) / kThreads; ++i) {
      const int c = tid + i * kThreads;
      if (kTokens * kCpr % kThreads != 0 && c >= kTokens * kCpr) break;
      const int r = c / kCpr, col = (c % kCpr) * 8;
      const long long k = k_begin + col;
      float st[kR];
#pragma unroll
      for (int q = 0; q < kR; ++q) st[q] = 0.0f;
      if ((kRows == kTokens || r < kRows) && m0 + r < count && k < k_end) {
        uint4* const p = reinterpret_cast<uint4*>(xs + r * kXStride + col);
        uint4 raw = *p, out;
        const T* v = reinterpret_cast<const T*>(&raw);
        T* o = reinterpret_cast<T*>(&out);
        const float mean = Body::kCentre ? centre[r] : 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          float xv = ToCompute(v[e]);
          if constexpr (Body::kCentre) xv -= mean;
          body.Stats(xv, k + e, st);
          o[e] = FromCompute<T>(body.Operand(xv, k + e));
        }
        *p = out;
      } else if constexpr (Body::kColumnBias) {
        if (r == kRows && k < k_end) {  // the virtual row: b, whose product is b @ W
          uint4 out;
          T* o = reinterpret_cast<T*>(&out);
#pragma unroll
          for (int e = 0; e < 8; ++e) o[e] = FromCompute<T>(body.ColumnBias(k + e));
          *reinterpret_cast<uint4*>(xs + r * kXStride + col) = out;
        }
      }
#pragma unroll
      for (int q = 0; q < kR; ++q) chunk_stats[c * kR + q] = st[q];
    }
    __syncthreads();
    for (int r = warp; r < kTokens; r += kWarps) {
#pragma unroll
      for (int q = 0; q < kR; ++q) {
        float v = 0.0f;
        for (int c = lane; c < kCpr; c += 32) v += chunk_stats[(r * kCpr + c) * kR + q];
#pragma unroll
        for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
        if (lane == 0) row_stats[r * kR + q] = v;
      }
    }
    __syncthreads();

    float acc[kFT][kTG][4];
#pragma unroll
    for (int f = 0; f < kFT; ++f)
#pragma unroll
      for (int j = 0; j < kTG; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[f][j][e] = 0.0f;

    for (int i0 = 0; i0 < my_chunks; i0 += kU) {
      unsigned raw[kU][kRaw];
#pragma unroll
      for (int u = 0; u < kU; ++u) load_chunk(raw[u], i0 + u);  // all loads in flight at once
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        if (i0 + u >= my_chunks) break;
        const int col = 32 * (wk + kWarpsK * (i0 + u));  // the chunk's column in the x slice
        // A fragments of both k16 steps from the raw words.
        unsigned a[2][kFT][4];
#pragma unroll
        for (int f = 0; f < kFT; ++f) {
          if constexpr (Shape::kWTransposed) {
#pragma unroll
            for (int s = 0; s < 2; ++s) {
              a[s][f][0] = raw[u][(f * 2 + 0) * 4 + 2 * s];
              a[s][f][1] = raw[u][(f * 2 + 1) * 4 + 2 * s];
              a[s][f][2] = raw[u][(f * 2 + 0) * 4 + 2 * s + 1];
              a[s][f][3] = raw[u][(f * 2 + 1) * 4 + 2 * s + 1];
            }
          } else {
#pragma unroll
            for (int s = 0; s < 2; ++s) {
              const unsigned* r = raw[u] + s * 4 * kFT;  // words f of k rows 0..3
              a[s][f][0] = __byte_perm(r[0 * kFT + f], r[1 * kFT + f], 0x5410);
              a[s][f][1] = __byte_perm(r[0 * kFT + f], r[1 * kFT + f], 0x7632);
              a[s][f][2] = __byte_perm(r[2 * kFT + f], r[3 * kFT + f], 0x5410);
              a[s][f][3] = __byte_perm(r[2 * kFT + f], r[3 * kFT + f], 0x7632);
            }
          }
        }
#pragma unroll
        for (int j = 0; j < kTG; ++j) {
          const T* xr = xs + (j * 8 + g) * kXStride + col;
          unsigned bf[2][2];
          if constexpr (Shape::kWTransposed) {
            const uint4 v = *reinterpret_cast<const uint4*>(xr + 8 * t);
            bf[0][0] = v.x, bf[0][1] = v.y, bf[1][0] = v.z, bf[1][1] = v.w;
          } else {
#pragma unroll
            for (int s = 0; s < 2; ++s) {
              const uint2 v = *reinterpret_cast<const uint2*>(xr + 16 * s + 4 * t);
              bf[s][0] = v.x, bf[s][1] = v.y;
            }
          }
#pragma unroll
          for (int s = 0; s < 2; ++s)
#pragma unroll
            for (int f = 0; f < kFT; ++f) Mma<T>::Run(acc[f][j], a[s][f], bf[s][0], bf[s][1]);
        }
      }
    }
    __syncthreads();  // every warp is done with the x slice: it becomes the partial tile

    // The warps along k add up in warp order; accumulator (f, j, e) is token j*8 + 2t + (e & 1)
    // and the warp's feature of fragment f, row g + 8 (e >> 1) (see the load mapping above).
    auto feature = [&](int f, int h) {
      return wn * Shape::kWarpN + (Shape::kWTransposed ? f * 16 + g + 8 * h : g * 2 * kFT + 2 * f + h);
    };
    for (int q = 0; q < kWarpsK; ++q) {
      if (wk == q) {
#pragma unroll
        for (int f = 0; f < kFT; ++f)
#pragma unroll
          for (int j = 0; j < kTG; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              float* dst = red + (j * 8 + 2 * t + (e & 1)) * kRedStride + feature(f, e >> 1);
              *dst = q == 0 ? acc[f][j][e] : *dst + acc[f][j][e];
            }
      }
      __syncthreads();
    }

    constexpr int kOutCpr = kBlockN / 8;
    if constexpr (kSplit == 1) {
      if (tid < kTokens) scale[tid] = body.RowScale(row_stats + tid * kR);
      __syncthreads();
      for (int c = tid; c < kRows * kOutCpr; c += kThreads) {
        const int r = c / kOutCpr, col = (c % kOutCpr) * 8;
        const long long m = m0 + r, n = n0 + col;
        if (m >= count || n >= kN) continue;
        uint4 out;
        T* o = reinterpret_cast<T*>(&out);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          float y = scale[r] * red[r * kRedStride + col + e];
          if constexpr (Body::kColumnBias) y += red[kRows * kRedStride + col + e];
          o[e] = FromCompute<T>(body.Epilogue(y, m, n + e));
        }
        *reinterpret_cast<uint4*>(body.Out() + m * kN + n) = out;
      }
    } else {
      // Publish this split's partial tile and statistics; the last block of the item merges.
      const long long item = (m0 / kRows) * gridDim.y + blockIdx.y;
      unsigned char* const base = static_cast<unsigned char*>(scratch) + item * Shape::kScratchItemBytes;
      unsigned* const ticket = reinterpret_cast<unsigned*>(base);
      float* const parts = reinterpret_cast<float*>(base + 16);           // [kSplit][kTokens][kBlockN]
      float* const part_stats = parts + kSplit * kTokens * kBlockN;        // [kSplit][kTokens][kR]
      for (int c = tid; c < kTokens * kBlockN / 4; c += kThreads) {
        const int r = c / (kBlockN / 4), col = (c % (kBlockN / 4)) * 4;
        const float* s = red + r * kRedStride + col;
        __stcg(reinterpret_cast<float4*>(parts + (split * kTokens + r) * kBlockN + col), make_float4(s[0], s[1], s[2], s[3]));
      }
      if (tid < kTokens * kR) __stcg(part_stats + split * kTokens * kR + tid, row_stats[tid]);
      __shared__ bool last;
      __threadfence();
      __syncthreads();
      if (tid == 0) {
        last = atomicAdd(ticket, 1u) == kSplit - 1;
        if (last) *ticket = 0;  // left zero for the next launch
      }
      __syncthreads();
      if (last) {
        __threadfence();  // the other splits' partials are visible
        if (tid < kTokens) {
          float st[kR];
#pragma unroll
          for (int i = 0; i < kR; ++i) st[i] = 0.0f;
          for (int sp = 0; sp < kSplit; ++sp)
#pragma unroll
            for (int i = 0; i < kR; ++i) st[i] += __ldcg(part_stats + (sp * kTokens + tid) * kR + i);
          scale[tid] = body.RowScale(st);
        }
        __syncthreads();
        // Row r's 8 columns at `col`, summed over the splits in split order, added to v.
        auto merge = [&](int r, int col, float (&v)[8]) {
          for (int sp = 0; sp < kSplit; ++sp) {
            const float* p = parts + (sp * kTokens + r) * kBlockN + col;
            const float4 lo = __ldcg(reinterpret_cast<const float4*>(p));
            const float4 hi = __ldcg(reinterpret_cast<const float4*>(p + 4));
            v[0] += lo.x, v[1] += lo.y, v[2] += lo.z, v[3] += lo.w;
            v[4] += hi.x, v[5] += hi.y, v[6] += hi.z, v[7] += hi.w;
          }
        };
        for (int c = tid; c < kRows * kOutCpr; c += kThreads) {
          const int r = c / kOutCpr, col = (c % kOutCpr) * 8;
          const long long m = m0 + r, n = n0 + col;
          if (m >= count || n >= kN) continue;
          float v[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
          merge(r, col, v);
#pragma unroll
          for (int e = 0; e < 8; ++e) v[e] *= scale[r];
          if constexpr (Body::kColumnBias) merge(kRows, col, v);  // + b @ W
          uint4 out;
          T* o = reinterpret_cast<T*>(&out);
#pragma unroll
          for (int e = 0; e < 8; ++e) o[e] = FromCompute<T>(body.Epilogue(v[e], m, n + e));
          *reinterpret_cast<uint4*>(body.Out() + m * kN + n) = out;
        }
      }
    }
    __syncthreads();  // the next token tile reuses shared memory
  }
}

}  // namespace kiln
