// attention_sm90_tma.cuh: the wgmma attention kernel with its key and value tiles brought in
// by the tensor memory accelerator (tma.cuh) and a producer warpgroup (FlashAttention-3's warp
// specialization). The products, the online softmax and the results are attention_sm90.cuh's
// (read that file's comment first); what differs is who loads and how the warps wait.
//
// A block is 1 + kBlockM / 64 warpgroups. Warpgroup 0 is the producer: it keeps 24 registers
// (setmaxnreg) and one of its threads issues, per key tile, one TMA copy per 64-column panel of
// K and of V into a ring of kStages slots, each announced on the slot's `full` mbarrier. The
// other warpgroups compute, on up to 240 registers: each owns 64 query rows (loaded once with
// cp.async), waits on a slot's `full` barrier, runs q k^T and p v on it with the 3-stage
// kernel's overlap (tile n's q k^T issued with tile n - 1's p v, tile n's softmax while that p v
// runs), and once the p v that read the slot has completed, each of its warps arrives on the
// slot's `empty` barrier; the producer refills a slot when all of them have. No barrier spans
// the block after the start: a warpgroup runs ahead of the other by up to the ring's depth.
//
// The Body contract adds, to attention.cuh's:
//   static constexpr int kKRank, kVRank;          the rank of K's and V's tensor maps (2..5)
//   void KCoords(long long b, int (&c)[5]) const; the coordinates of K/V batch b in dimensions
//   void VCoords(long long b, int (&c)[5]) const; 2 .. rank - 1 of the maps (0 and 1 are the
//                                                 head dim and the key)
// and the kernel takes the maps: each of rank kKRank / kVRank, dimension 0 the head dim (kD /
// kE elements), 1 the keys (kT), then the batch coordinates; box 64 x kBlockN (x 1 ...), 16-bit
// elements, 128-byte swizzle, zeros outside. Launch: as attention_sm90.cuh's, with
// 32 kWarps + 128 threads (kWarps the computing warps) and __launch_bounds__(threads, 1).
// No split, no grouped-head packing (kG 1), no dropout-free restriction: dropout and masks
// run as in attention_sm90.cuh.
#pragma once

#include "attention_sm90.cuh"
#include "tma.cuh"

namespace kiln {

template <class Body, class Shape, bool kPingPong = true>
__device__ __forceinline__ void AttentionKernelSm90Tma(const Body& body, long long count, const tma::TensorMap* k_map,
                                                       const tma::TensorMap* v_map) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = typename Body::T;
  constexpr int kBM = Shape::kBlockM, kBN = Shape::kBlockN, kStages = Shape::kStages;
  constexpr int kGroups = kBM / 64;  // computing warpgroups
  static_assert(Shape::kMTiles == 1 && kBM % 64 == 0, "a warp owns 16 rows, a warpgroup the 64 rows of one wgmma");
  static_assert(kBN % 64 == 0 && kBN <= 256, "key tiles are one wgmma wide (n 64..256)");
  static_assert(Shape::kSplit == 1 && Body::kG == 1, "no split keys, no packed heads");
  static_assert(kStages >= 2 && kStages <= 4, "a ring of 2 to 4 slots");
  constexpr int kDP = attn::RoundUp64(Body::kD), kEP = attn::RoundUp64(Body::kE);
  static_assert(kDP <= 256 && kEP <= 256, "head dims up to 256");
  constexpr int kR = attn::Rows<Body>::kR;
  constexpr int kQBytes = kBM * kDP * 2, kKBytes = kBN * kDP * 2, kVBytes = kBN * kEP * 2;
  static_assert(Body::kD % 8 == 0 && Body::kE % 8 == 0, "head dims are whole 16-byte chunks");

  extern __shared__ __align__(16) unsigned char attention_smem[];
  unsigned char* sQ = attention_smem + ((1024 - (attn::SmemAddress(attention_smem) & 1023)) & 1023);
  unsigned char* sK = sQ + kQBytes;
  unsigned char* sV = sK + kStages * kKBytes;
  __shared__ unsigned long long full[kStages], empty[kStages];

  if (static_cast<long long>(blockIdx.x) >= count) return;
  constexpr int kMBlocks = (kR + kBM - 1) / kBM;
  const attn::Rows<Body> rows = attn::BlockRows<Body, kMBlocks>(count);
  const int m0 = attn::FirstRow<Body, kBM, kMBlocks>(rows.qb);
  int keys = Body::kT;
  if (Body::kCausal) keys = min(Body::kT, rows.MaxSeq(m0, m0 + kBM - 1) + 1);
  const int n_end = (keys + kBN - 1) / kBN;

  const int wg = threadIdx.x / 128;
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      tma::BarrierInit(&full[s], 1);
      tma::BarrierInit(&empty[s], 4 * kGroups);  // every computing warp
    }
    tma::FenceBarrierInit();
  }
  __syncthreads();

  if (wg == 0) {
    // The producer.
    tma::RegistersDown<24>();
    if (threadIdx.x == 0) {
      tma::Prefetch(k_map);
      tma::Prefetch(v_map);
      int kc[5] = {0, 0, 0, 0, 0}, vc[5] = {0, 0, 0, 0, 0};
      body.KCoords(rows.b, kc);
      body.VCoords(rows.b, vc);
      for (int n = 0; n < n_end; ++n) {
        const int slot = n % kStages;
        if (n >= kStages) tma::Wait(&empty[slot], (n / kStages - 1) & 1);
        tma::ArriveExpectTx(&full[slot], kKBytes + kVBytes);
        kc[1] = vc[1] = n * kBN;
#pragma unroll
        for (int p = 0; p < kDP / 64; ++p) {
          kc[0] = p * 64;
          tma::Load<Body::kKRank>(sK + slot * kKBytes + p * kBN * 128, k_map, &full[slot], kc);
        }
#pragma unroll
        for (int p = 0; p < kEP / 64; ++p) {
          vc[0] = p * 64;
          tma::Load<Body::kVRank>(sV + slot * kVBytes + p * kBN * 128, v_map, &full[slot], vc);
        }
      }
    }
    return;
  }

  // 65536 registers an SM: the producer's 128 x 24, the rest shared by the computing threads.
  static_assert(kGroups == 2 || kGroups == 3, "two or three computing warpgroups");
  tma::RegistersUp<kGroups == 2 ? 240 : 160>();
  const int cw = wg - 1;  // this computing warpgroup
  const int warp = threadIdx.x / 32 - 4, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int warp_row0 = m0 + warp * 16, wg_row0 = m0 + cw * 64;

  // This warpgroup's 64 rows of Q, in the 128-byte swizzle: row r of panel p at 128 (p kBM + r).
  attn::LoadRows<64, kDP, 128, T>(
      [&](int r, int col) {
        return sQ + (col / 64) * kBM * 128 + (cw * 64 + r) * 128 + ((((col % 64) / 8) ^ (r % 8)) * 16);
      },
      wg_row0, Body::kD,
      [&](int r) { return rows.Has(r) ? body.Q(rows.QBatch(r)) + rows.Seq(r) * Body::kQRow : nullptr; },
      threadIdx.x - 128 * wg);
  attn::CpAsyncCommit();
  attn::CpAsyncWait<0>();
  wgmma::FenceProxyAsync();
  tma::NamedBarrier(1 + cw, 128);

  float o[1][kEP / 8][4];
  float row_max[1][2] = {{kNegInfF(), kNegInfF()}}, row_sum[1][2] = {{0.0f, 0.0f}};
#pragma unroll
  for (int e = 0; e < kEP / 8; ++e) o[0][e][0] = o[0][e][1] = o[0][e][2] = o[0][e][3] = 0.0f;
  const int warp_min_seq = rows.MinSeq(warp_row0, warp_row0 + 15);
  const unsigned q_addr = attn::SmemAddress(sQ) + cw * 64 * 128;

  using Products = attn::WarpgroupProducts<T, kBM, kBN, kDP, kEP>;
  using Scores = typename Products::Scores;
  using Probabilities = typename Products::Probabilities;
  const Products products{q_addr};
  auto issue_qk = [&](Scores& s, int n) { products.IssueQK(s, attn::SmemAddress(sK + (n % kStages) * kKBytes)); };
  auto issue_pv = [&](const Probabilities& pa, int n) {
    Products::IssuePV(o, pa, attn::SmemAddress(sV + (n % kStages) * kVBytes));
  };
  auto wait_full = [&](int n) { tma::Wait(&full[n % kStages], (n / kStages) & 1); };
  // Every wgmma of this warp that read slot n's tiles has completed.
  auto release = [&](int n) {
    if (lane == 0) tma::Arrive(&empty[n % kStages]);
  };

  Scores s;
  Probabilities pa;
  float correction[1][2];
  const attn::WarpgroupTiles mine = attn::TilesOfWarpgroup<Body, kBN>(rows, wg_row0, n_end);
  const int wg_tiles = mine.tiles;
  auto probabilities = [&](int n) {
    attn::TileProbabilitiesOf(body, rows, s, n, mine.plain, warp_row0, warp_min_seq, row_max, row_sum, correction, g, t);
  };
  // With kPingPong the warpgroups issue their products in turns (named barriers 5.. passed round
  // the warpgroups): each one's softmax then runs while the next one's products hold the tensor
  // cores (FlashAttention-3's ping-pong schedule). Every warpgroup takes n_end + 1 turns, empty
  // ones for the tiles past its rows, so that the barriers pair up.
  auto turn_begin = [&]() {
    if constexpr (kPingPong) tma::NamedBarrier(5 + cw, 256);
  };
  auto turn_end = [&]() {
    if constexpr (kPingPong) tma::NamedBarrierArrive(5 + (cw + 1) % kGroups, 256);
  };
  if (kPingPong && cw == kGroups - 1) tma::NamedBarrierArrive(5, 256);  // warpgroup 0 goes first
  if (wg_tiles > 0) {
    wait_full(0);
    turn_begin();
    issue_qk(s, 0);
    turn_end();
    wgmma::Wait<0>();
    wgmma::FenceOperands(s[0]);
    probabilities(0);  // o is still zero: no rescale
    Products::Pack(pa, s);
  }
  for (int n = 1; n < wg_tiles; ++n) {
    wait_full(n);
    turn_begin();
    issue_qk(s, n);
    issue_pv(pa, n - 1);
    turn_end();
    wgmma::Wait<1>();  // q k^T done, p v may still run
    wgmma::FenceOperands(s[0]);
    probabilities(n);
    wgmma::Wait<0>();
    wgmma::FenceOperands(o[0]);
    release(n - 1);
    attn::Rescale(o, correction);
    Products::Pack(pa, s);
  }
  if (wg_tiles > 0) {
    turn_begin();
    issue_pv(pa, wg_tiles - 1);
    turn_end();
    wgmma::Wait<0>();
    wgmma::FenceOperands(o[0]);
    release(wg_tiles - 1);
  } else {
    turn_begin();
    turn_end();
  }
  // The block's tiles past this warpgroup's rows (causal): released unread, in order (a slot's
  // phases complete one fill at a time).
  for (int n = wg_tiles; n < n_end; ++n) {
    wait_full(n);
    release(n);
    turn_begin();
    turn_end();
  }
  if (kPingPong && cw == 0) tma::NamedBarrier(5, 256);  // the last warpgroup's final arrival
  attn::FinishRows<Body, kBM, kEP, 1>(body, rows, o, row_max, row_sum, nullptr, warp, warp_row0, g, t);
#else
  __trap();
#endif
}

}  // namespace kiln
