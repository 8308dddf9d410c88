// attention_sm90.cuh: the tiled attention kernel on sm_90a's warpgroup tensor cores (wgmma).
// Same Body contract, launch and results as attention.cuh's mma.sync kernel (read that
// file's comment first); what differs is where the products run.
//
// Each warpgroup (4 warps, 128 threads) owns 64 query rows of the block's kBlockM; a block
// has kBlockM / 64 of them. Q, and the K and V tiles of kBlockN keys streaming through kStages
// buffers (cp.async, all threads, the next tile in flight while this one is computed), sit in
// shared memory in the 128-byte swizzle layout of wgmma.cuh, padded with zeros to 64-column
// panels (head dims that are not a multiple of 64 compute on the zeros). Per key tile a
// warpgroup issues
//   s = q k^T    kDP / 16 wgmma m64 n kBlockN k16, both operands from shared memory;
//   the mask, the online softmax and the 16-bit probabilities in registers: the
//                accumulators have the mma.sync layout per warp, so this is the same code as
//                the mma.sync kernel (attn::MaskScores, SoftmaxStep, PackP);
//   o += p v     kBlockN / 16 wgmma m64 n kEP k16, p from registers, v from shared memory
//                through the transposed (MN-major) descriptor.
// With kStages 3 a warpgroup issues tile n's q k^T together with tile n - 1's p v and runs
// tile n's mask and softmax while that p v is on the tensor cores (FlashAttention-3's
// intra-warpgroup pipelining); with kStages 2 it does one tile at a time. No register that a
// wgmma in flight accumulates into is touched before its wait: otherwise ptxas serialises
// every wgmma of the kernel (its warning C7515; tests/codegen/attention_nvrtc_test.cc fails on
// it). There is no producer warpgroup and no ping-pong schedule: the warpgroups of a block
// (and of a second block on the SM where it fits) overlap each other's softmax with their
// products.
// No split keys (kSplit 1): decoding stays on the mma.sync kernel, whose tiles fit it.
// Does its work only when compiled for sm_90a; elsewhere the kernel traps.
#pragma once

#include "attention.cuh"
#include "wgmma.cuh"

namespace kiln {
namespace attn {

__host__ __device__ constexpr int RoundUp64(int x) { return (x + 63) / 64 * 64; }

// Rows [row0, row0 + kRows) of an operand, columns [0, kCols) (a multiple of 64), into
// 128-byte-swizzled panels: panel p holds columns 64 p .. 64 p + 63 of every row, row r at byte
// 128 (p kRows + r), its 16-byte chunk c at (c ^ r % 8) 16. row_ptr(r) is row r's first element
// or null past the operand; columns from cols_valid on are zeros.
template <int kRows, int kCols, int kThreads, class T, class RowPtr>
__device__ __forceinline__ void LoadTileSw128(unsigned char* smem, int row0, int cols_valid, const RowPtr& row_ptr) {
  static_assert(kCols % 64 == 0, "whole 64-column panels");
  LoadRows<kRows, kCols, kThreads, T>(
      [&](int r, int col) { return smem + (col / 64) * kRows * 128 + r * 128 + ((((col % 64) / 8) ^ (r % 8)) * 16); },
      row0, cols_valid, row_ptr);
}

// Key tile key0's finished scores -> the row statistics, the correction of o and p in s.
// kEdge: compiled with the -inf compares (keys past T or, causal, past the row; `edge` per
// warp as in MaskScores); without, none are made.
template <bool kEdge, class Body, int kNB>
__device__ __forceinline__ void TileProbabilities(const Body& body, const Rows<Body>& rows, float (&s)[1][kNB][4],
                                                  int warp_row0, int warp_min_seq, int key0, float (&row_max)[1][2],
                                                  float (&row_sum)[1][2], float (&correction)[1][2], int g, int t) {
  constexpr int kBN = kNB * 8;
  const bool edge = kEdge && (key0 + kBN > Body::kT || (Body::kCausal && key0 + kBN - 1 > warp_min_seq));
  if constexpr (kEdge || Body::kHasMask) MaskScores(body, rows, s, warp_row0, key0, edge, g, t);
  SoftmaxStats<Body>(s, row_max, row_sum, correction);
  if constexpr (Body::kDropout) DropProbabilities(body, rows, s, warp_row0, key0, g, t);
}

// One warpgroup's products against a key tile, both in the 128-byte-swizzled panels above
// (attention_sm90.cuh's kernel and attention_sm90_tma.cuh's share them). `q_addr`: the shared
// address of this warpgroup's 64 rows of Q's first panel (Q's panels are kBM rows tall).
template <class T, int kBM, int kBN, int kDP, int kEP>
struct WarpgroupProducts {
  using Scores = float[1][kBN / 8][4];
  using Probabilities = unsigned[kBN / 16][4];
  unsigned q_addr;
  // s = q k^T for the key tile at k_addr, issued (not waited for): k16 step kk reads 32 bytes at
  // 32 (kk % 4) into panel kk / 4 of Q and K.
  __device__ __forceinline__ void IssueQK(Scores& s, unsigned k_addr) const {
    wgmma::Fence();
#pragma unroll
    for (int kk = 0; kk < kDP / 16; ++kk) {
      wgmma::Mma<T, kBN>::SS(s[0], wgmma::Sw128Desc(q_addr + (kk / 4) * kBM * 128 + (kk % 4) * 32, 16, 1024),
                             wgmma::Sw128Desc(k_addr + (kk / 4) * kBN * 128 + (kk % 4) * 32, 16, 1024), kk > 0);
    }
    wgmma::Commit();
  }
  // The probabilities in s as the 16-bit A fragments of p v (registers a wgmma reads are written
  // before its fence).
  __device__ __forceinline__ static void Pack(Probabilities& pa, const Scores& s) {
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) PackP<T>(pa[kk], s[0], kk);
  }
  // o += p v for the value tile at v_addr, issued (not waited for): kBN / 16 steps of 16 keys,
  // each 2048 bytes (16 swizzled rows) further into V's panels.
  __device__ __forceinline__ static void IssuePV(float (&o)[1][kEP / 8][4], const Probabilities& pa, unsigned v_addr) {
    wgmma::Fence();
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) {
      wgmma::Mma<T, kEP>::RS(o[0], pa[kk], wgmma::Sw128Desc(v_addr + kk * 2048, kBN * 128, 1024), 1);
    }
    wgmma::Commit();
  }
};

// Which of a block's n_end key tiles a warpgroup of rows [wg_row0, wg_row0 + 63] computes:
// `tiles`, the first ones (causal: up to its last row; none without rows); of those, the first
// `plain` need no -inf for any of its rows (past T or, causal, past the row) and run a step
// compiled without the compares (else ptxas predicates them into every tile).
struct WarpgroupTiles {
  int tiles, plain;
};
template <class Body, int kBN>
__device__ __forceinline__ WarpgroupTiles TilesOfWarpgroup(const Rows<Body>& rows, int wg_row0, int n_end) {
  const int max_seq = rows.MaxSeq(wg_row0, wg_row0 + 63), min_seq = rows.MinSeq(wg_row0, wg_row0 + 63);
  const int tiles = !rows.AnyOf(wg_row0, wg_row0 + 63) ? 0 : Body::kCausal ? min(n_end, (max_seq + kBN) / kBN) : n_end;
  return WarpgroupTiles{tiles, min(Body::kT / kBN, Body::kCausal ? (min_seq + 1) / kBN : n_end)};
}

// TileProbabilities for key tile n of a warpgroup whose first `plain` tiles need no -inf.
template <class Body, int kNB>
__device__ __forceinline__ void TileProbabilitiesOf(const Body& body, const Rows<Body>& rows, float (&s)[1][kNB][4],
                                                    int n, int plain, int warp_row0, int warp_min_seq,
                                                    float (&row_max)[1][2], float (&row_sum)[1][2],
                                                    float (&correction)[1][2], int g, int t) {
  if (n < plain) {
    TileProbabilities<false>(body, rows, s, warp_row0, warp_min_seq, n * kNB * 8, row_max, row_sum, correction, g, t);
  } else {
    TileProbabilities<true>(body, rows, s, warp_row0, warp_min_seq, n * kNB * 8, row_max, row_sum, correction, g, t);
  }
}

}  // namespace attn

template <class Body, class Shape>
__device__ __forceinline__ void AttentionKernelSm90(const Body& body, long long count, void* scratch) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = typename Body::T;
  constexpr int kBM = Shape::kBlockM, kBN = Shape::kBlockN, kThreads = Shape::kThreads, kStages = Shape::kStages;
  static_assert(Shape::kMTiles == 1 && kBM % 64 == 0, "a warp owns 16 rows, a warpgroup the 64 rows of one wgmma");
  static_assert(kBN % 64 == 0 && kBN <= 256, "key tiles are one wgmma wide (n 64..256)");
  static_assert(Shape::kSplit == 1, "the wgmma kernel does not split keys");
  constexpr int kDP = attn::RoundUp64(Body::kD), kEP = attn::RoundUp64(Body::kE);
  static_assert(kDP <= 256 && kEP <= 256, "head dims up to 256");
  constexpr int kR = attn::Rows<Body>::kR;
  constexpr int kQBytes = kBM * kDP * 2, kKBytes = kBN * kDP * 2, kVBytes = kBN * kEP * 2;
  static_assert(Body::kD % 8 == 0 && Body::kE % 8 == 0, "head dims are whole 16-byte chunks");

  // The panels start on 1024-byte boundaries: the launch adds 1024 bytes of slack.
  extern __shared__ __align__(16) unsigned char attention_smem[];
  unsigned char* sQ = attention_smem + ((1024 - (attn::SmemAddress(attention_smem) & 1023)) & 1023);
  unsigned char* sK = sQ + kQBytes;
  unsigned char* sV = sK + kStages * kKBytes;

  if (static_cast<long long>(blockIdx.x) >= count) return;
  constexpr int kMBlocks = (kR + kBM - 1) / kBM;
  const attn::Rows<Body> rows = attn::BlockRows<Body, kMBlocks>(count);
  const int m0 = attn::FirstRow<Body, kBM, kMBlocks>(rows.qb);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int warp_row0 = m0 + warp * 16, wg = warp / 4, wg_row0 = m0 + wg * 64;

  const T* k = body.K(rows.b);
  const T* v = body.V(rows.b);
  int keys = Body::kT;
  if (Body::kCausal) keys = min(Body::kT, rows.MaxSeq(m0, m0 + kBM - 1) + 1);
  const int n_end = (keys + kBN - 1) / kBN;

  auto load_kv = [&](int tile) {
    const int stage = tile % kStages;
    attn::LoadTileSw128<kBN, kDP, kThreads, T>(sK + stage * kKBytes, tile * kBN, Body::kD, [&](int j) {
      return j < Body::kT ? k + j * Body::kKRow : nullptr;
    });
    attn::LoadTileSw128<kBN, kEP, kThreads, T>(sV + stage * kVBytes, tile * kBN, Body::kE, [&](int j) {
      return j < Body::kT ? v + j * Body::kVRow : nullptr;
    });
  };
  attn::LoadTileSw128<kBM, kDP, kThreads, T>(sQ, m0, Body::kD, [&](int r) {
    return rows.Has(r) ? body.Q(rows.QBatch(r)) + rows.Seq(r) * Body::kQRow : nullptr;
  });
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < n_end) load_kv(s);
    attn::CpAsyncCommit();
  }

  float o[1][kEP / 8][4];
  float row_max[1][2] = {{kNegInfF(), kNegInfF()}}, row_sum[1][2] = {{0.0f, 0.0f}};
#pragma unroll
  for (int e = 0; e < kEP / 8; ++e) o[0][e][0] = o[0][e][1] = o[0][e][2] = o[0][e][3] = 0.0f;
  // The warpgroup computes (wgmma is collective) only its own key tiles (TilesOfWarpgroup:
  // none without rows; causal, none whose first key follows all of its rows); masking is per
  // warp. The block's loops run to n_end for the loads and barriers.
  const attn::WarpgroupTiles mine = attn::TilesOfWarpgroup<Body, kBN>(rows, wg_row0, n_end);
  const int warp_min_seq = rows.MinSeq(warp_row0, warp_row0 + 15);
  const unsigned q_addr = attn::SmemAddress(sQ) + wg * 64 * 128;  // this warpgroup's rows of each panel

  using Products = attn::WarpgroupProducts<T, kBM, kBN, kDP, kEP>;
  using Scores = typename Products::Scores;
  using Probabilities = typename Products::Probabilities;
  const Products products{q_addr};
  auto issue_qk = [&](Scores& s, int n) { products.IssueQK(s, attn::SmemAddress(sK + (n % kStages) * kKBytes)); };
  auto issue_pv = [&](const Probabilities& pa, int n) {
    Products::IssuePV(o, pa, attn::SmemAddress(sV + (n % kStages) * kVBytes));
  };
  // The mask and online softmax of tile n's finished scores, then o += p v issued.
  auto softmax_pv = [&](Scores& s, int n) {
    const int key0 = n * kBN;
    const bool edge = key0 + kBN > Body::kT || (Body::kCausal && key0 + kBN - 1 > warp_min_seq);
    attn::MaskScores(body, rows, s, warp_row0, key0, edge, g, t);
    attn::SoftmaxStep<Body>(s, o, row_max, row_sum);
    if constexpr (Body::kDropout) attn::DropProbabilities(body, rows, s, warp_row0, key0, g, t);
    Probabilities pa;
    Products::Pack(pa, s);
    wgmma::FenceOperands(o[0]);
    issue_pv(pa, n);
  };

  if constexpr (kStages == 2) {
    // One tile at a time: q k^T, softmax, p v, each waited for.
    Scores s;
    for (int n = 0; n < n_end; ++n) {
      attn::CpAsyncWait<0>();
      wgmma::FenceProxyAsync();  // this thread's cp.async data, before any warpgroup's wgmma reads it
      __syncthreads();           // tile n is in shared memory; every warpgroup is done with tile n - 1
      if (n + 1 < n_end) load_kv(n + 1);
      attn::CpAsyncCommit();
      if (n >= mine.tiles) continue;
      issue_qk(s, n);
      wgmma::Wait<0>();
      wgmma::FenceOperands(s[0]);
      softmax_pv(s, n);
      wgmma::Wait<0>();
      wgmma::FenceOperands(o[0]);
    }
  } else {
    // FlashAttention-3's intra-warpgroup overlap: tile n's q k^T and tile n - 1's p v are issued
    // together, and tile n's mask and softmax run on the other units while p v still runs on
    // the tensor cores; o is rescaled after that p v is done, and tile n's probabilities are
    // packed once nothing reads the old ones. Each wgmma in flight has its accumulators
    // untouched until its wait (else ptxas serialises every wgmma of the kernel, C7515).
    // Shared memory holds tile n (K now, V next step), tile n - 1 (V) and tile n + 1 in flight.
    Scores s;
    Probabilities pa;
    float correction[1][2];
    const int wg_tiles = mine.tiles;
    auto probabilities = [&](int n) {
      attn::TileProbabilitiesOf(body, rows, s, n, mine.plain, warp_row0, warp_min_seq, row_max, row_sum, correction, g, t);
    };
    attn::CpAsyncWait<1>();
    wgmma::FenceProxyAsync();
    __syncthreads();
    if (wg_tiles > 0) {
      issue_qk(s, 0);
      wgmma::Wait<0>();
      wgmma::FenceOperands(s[0]);
      probabilities(0);  // o is still zero: no rescale
      Products::Pack(pa, s);
    }
    for (int n = 1; n < n_end; ++n) {
      attn::CpAsyncWait<0>();
      wgmma::FenceProxyAsync();
      __syncthreads();  // tile n is in shared memory; every warpgroup is done with tile n - 2
      if (n + 1 < n_end) load_kv(n + 1);
      attn::CpAsyncCommit();
      if (n < wg_tiles) {
        issue_qk(s, n);
        issue_pv(pa, n - 1);
        wgmma::Wait<1>();  // q k^T done, p v may still run
        wgmma::FenceOperands(s[0]);
        probabilities(n);
        wgmma::Wait<0>();
        wgmma::FenceOperands(o[0]);
        attn::Rescale(o, correction);
        Products::Pack(pa, s);
      } else if (n == wg_tiles) {  // this warpgroup's last p v
        issue_pv(pa, n - 1);
        wgmma::Wait<0>();
        wgmma::FenceOperands(o[0]);
      }
    }
    if (wg_tiles == n_end && n_end > 0) {
      issue_pv(pa, n_end - 1);
      wgmma::Wait<0>();
      wgmma::FenceOperands(o[0]);
    }
  }
  attn::CpAsyncWait<0>();  // nothing may be in flight when the block exits
  attn::FinishRows<Body, kBM, kEP, 1>(body, rows, o, row_max, row_sum, scratch, warp, warp_row0, g, t);
#else
  // Not sm_90a (nvcc's whole-program compile also runs a compute_90 pass): kiln emits this
  // kernel only for sm_90 devices (DeviceSpec::wgmma), so reaching this is a bug.
  __trap();
#endif
}

}  // namespace kiln
