// attention.cuh: tiled attention (region kind attention), FlashAttention-2 style on the
// mma.sync tensor-core path (sm_80 and later; f32 accumulation): 16-bit inputs as m16n8k16
// products, f32 inputs as 3xTF32 m16n8k8 products (mma_sync.cuh Mma<float>: f32-grade
// accuracy at about a sixth of the 16-bit rate).
//
//   y[b, i, :] = sum_j softmax_j(s[b, i, j]) v[b, j, :],
//   s[b, i, j] = scale q[b, i, :] . k[b, j, :] + mask[b, i, j], -inf where causal and j > i
//
// A block owns kBlockM query rows of one batch index b (B x H flattened): its Q tile stays in
// shared memory (and in each warp's registers as mma A fragments), the key and value tiles
// of kBlockN rows stream through kStages shared-memory buffers (cp.async, zero-filled past the
// tensor), and the scores of one key tile never leave registers: an online softmax (running
// max and sum per row, in f32, exponentials as 2^x) rescales the output accumulators, and the
// probabilities (rounded to the input's type when it is 16-bit) are the A fragments of P.V. The S x T
// scores are never stored. Each warp owns kMTiles tiles of 16 rows; causal blocks compute key
// tiles only up to their last row (tiles past the diagonal are skipped, not masked).
//
// Grouped-query heads (kG > 1: kG query heads read one K/V head) are packed into one block's
// rows: row r of K/V batch b is query row r % kS of query batch b kG + r / kS, so a decoding
// step (S = 1) fills an m-tile with the group's heads and reads each K/V tile once for all of
// them. With kSplit > 1 the key tiles of a block are split over kSplit blocks (blockIdx.z)
// that each publish unnormalised partial outputs with their row maxima and sums; the last to
// finish merges all of them in split order (flash-decoding; deterministic, no float atomics).
//
// Codegen (codegen/emit_attention.cc) generates only the Body: where each operand lives (the
// layout ops around attention folded into pointer arithmetic: AttentionPlan), the mask, and
// the constants. Body contract:
//   using T;                                     __half, __nv_bfloat16 or float
//   static constexpr int kD, kE;                 head dims of q/k and of v (16-byte rows)
//   static constexpr int kS, kT, kG;             query and key lengths, query heads per K/V head
//   static constexpr bool kCausal, kHasMask, kHasLse;
//   static constexpr float kScaleLog2;           scale * log2(e)
//   static constexpr long long kSection;         K/V batches whose blocks run together (BlockRows)
//   static constexpr long long kQRow, kKRow, kVRow, kORow;   row (sequence) strides, elements
//   const T* Q(long long bq) const;  T* O(bq)    query batch bq's [bq, 0, 0] element
//   const T* K(long long b) const;   V(b)        K/V batch b's (b = bq / kG)
//   float Mask(long long bq, int i, int j) const; additive mask at [bq, i, j] (kHasMask only)
//   float* Lse(long long bq) const;              the f32 log-sum-exp of query batch bq's rows,
//                                                ln sum_j e^(s_ij), +inf for a row with no key
//                                                (kHasLse only)
//   static constexpr bool kDropout;              dropout on the probabilities (docs/dropout.md):
//   static constexpr bool kDropAll;              p == 1 (kDropout only)
//   static constexpr unsigned kDropThreshold;    the keep threshold and scale of p (DropoutThreshold,
//   static constexpr float kDropScale;           DropoutScale; kDropout only)
//   unsigned long long Seed() const, Offset() const;   the dropout's seed and offset (kDropout only)
// Launch: grid (count = K/V batches) x ceil(kG kS / kBlockM) x kSplit, kThreads threads,
// AttentionSmemBytes of dynamic shared memory; with kSplit > 1 a scratch of
// AttentionScratchBytes per (count x y) item, zero before the first launch and left zero.
// Rows whose scores are all -inf (fully masked) give 0. With kDropout, probability (bq, i, j) is
// element (bq kS + i) kT + j of docs/dropout.md's contract: dropped after the row sums counted
// it (dropout follows the softmax), so the mask is regenerated per tile and never stored.
#pragma once

#include "kiln_philox.cuh"
#include "kiln_types.cuh"
#include "mma_sync.cuh"

namespace kiln {

template <int kBlockM_, int kBlockN_, int kWarps_, int kStages_, bool kQInRegs_, int kSplit_ = 1>
struct AttentionShape {
  static constexpr int kBlockM = kBlockM_, kBlockN = kBlockN_, kWarps = kWarps_, kStages = kStages_;
  static constexpr bool kQInRegs = kQInRegs_;
  static constexpr int kSplit = kSplit_;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kMTiles = kBlockM / (16 * kWarps);
  static_assert(kBlockM % (16 * kWarps) == 0, "each warp owns whole 16-row m-tiles");
  static_assert(kBlockN % 16 == 0, "key tiles are whole k16 steps of P.V");
  static_assert(kStages >= 2 && kStages <= 4, "the pipeline keeps 1 to 3 key tiles in flight");
  static_assert(kSplit >= 1, "at least one block per query block");
};

namespace attn {

// The PTX wrappers (cp.async, ldmatrix, mma.sync) are mma_sync.cuh's.
using namespace kiln::mma;  // NOLINT: attn:: code names them unqualified

// 2^x on the special-function unit (ex2.approx.ftz: about 2 ulp; 2^-inf = 0).
__device__ __forceinline__ float Exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Max and sum over the four lanes that share a row of an mma fragment.
__device__ __forceinline__ float QuadMax(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float QuadSum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Max and sum of N values as a tree (log2 N dependent steps instead of N: the softmax is
// otherwise a chain of fixed-latency instructions per row). N is a power of two; the recursion
// keeps every index a constant (a loop over halving widths is not always unrolled, and then
// the array goes to local memory).
template <int N>
__device__ __forceinline__ float TreeMax(const float (&v)[N]) {
  static_assert((N & (N - 1)) == 0, "a power of two");
  if constexpr (N == 1) {
    return v[0];
  } else {
    float h[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i) h[i] = fmaxf(v[i], v[i + N / 2]);
    return TreeMax(h);
  }
}
template <int N>
__device__ __forceinline__ float TreeSum(const float (&v)[N]) {
  static_assert((N & (N - 1)) == 0, "a power of two");
  if constexpr (N == 1) {
    return v[0];
  } else {
    float h[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i) h[i] = v[i] + v[i + N / 2];
    return TreeSum(h);
  }
}

__host__ __device__ constexpr int RoundUp16(int x) { return (x + 15) / 16 * 16; }


// Partials of one split block (kSplit > 1), per (batch, query block) item of the scratch:
//   [0, 16)                           the item's arrival counter
//   then kSplit x kBlockM x kEP f32   unnormalised outputs
//   then kSplit x kBlockM x 2 f32     row maxima (log2 domain) and sums
template <int kBlockM, int kEP, int kSplit>
struct SplitScratch {
  static constexpr long long kItemBytes = 16 + 4LL * kSplit * kBlockM * (kEP + 2);
  unsigned char* item;
  __device__ unsigned* Counter() const { return reinterpret_cast<unsigned*>(item); }
  __device__ float* Out(int split) const { return reinterpret_cast<float*>(item + 16) + split * kBlockM * kEP; }
  __device__ float* Stats(int split) const {
    return reinterpret_cast<float*>(item + 16) + kSplit * kBlockM * kEP + split * kBlockM * 2;
  }
};

// Rows [row0, row0 + kRows) of an operand, kCols (padded) columns, into shared memory, 16 bytes
// (kVec elements) per cp.async, the threads of the block taking consecutive chunks (coalesced reads); row_ptr(r)
// is row r's first element, or null past the operand (zeros are written), and columns from
// cols_valid on are zeros too. place(r, col) is where element (r, col) goes. `thread` is this
// thread's index among the kThreads that share the load.
template <int kRows, int kCols, int kThreads, class T, class Place, class RowPtr>
__device__ __forceinline__ void LoadRows(const Place& place, int row0, int cols_valid, const RowPtr& row_ptr,
                                         int thread = static_cast<int>(threadIdx.x)) {
  constexpr int kVec = 16 / sizeof(T);
  constexpr int kChunks = kCols / kVec;  // 16-byte chunks per row
  static_assert(kCols % kVec == 0, "rows are whole 16-byte chunks");
#pragma unroll
  for (int i = 0; i < (kRows * kChunks + kThreads - 1) / kThreads; ++i) {
    const int c = thread + i * kThreads;
    if (kRows * kChunks % kThreads != 0 && c >= kRows * kChunks) break;
    const int r = c / kChunks, col = (c % kChunks) * kVec;
    const T* row = row_ptr(row0 + r);
    const bool valid = row != nullptr && col < cols_valid;
    CpAsync16(place(r, col), valid ? row + col : ZeroFillSource<T>(), valid);
  }
}

// Shared-memory rows of kCols elements for the mma.sync kernel. A row of a multiple of 8
// 16-byte chunks is stored unpadded with its chunk c at c ^ (r % 8) (an XOR swizzle); another
// width is padded by one chunk. Either way the 8 rows that one ldmatrix phase reads at the same
// column hit 8 distinct bank groups. The swizzle matters for the loads too: with rows padded by
// 16 bytes, the rows one cp.async instruction copies land in shared memory with gaps between
// them, and each 128-byte line of K and V was requested 2.6 times from L2, half its sectors
// fetched twice; streaming 4 GiB that way took 8% longer (H200 micro-benchmark,
// bench/results/2026-11-27-session14). Swizzled rows are whole 128-byte lines: one request of 4
// sectors a line.
// f32 rows stay padded: its 3xTF32 products, not its loads, bound that kernel, and the XORed
// column of its scalar V reads takes registers that D 256 does not have (ptxas spills).
template <class T, int kCols>
struct RowLayout {
  static constexpr int kVec = 16 / sizeof(T);
  static constexpr bool kSwizzled = sizeof(T) == 2 && kCols / kVec % 8 == 0;
  static constexpr int kStride = kSwizzled ? kCols : kCols + kVec;  // elements from row to row
  static_assert(kCols % kVec == 0, "rows are whole 16-byte chunks");
  // Element (r, col)'s offset: the swizzle XORs the chunk index, col's bits above the chunk's.
  __device__ __forceinline__ static int At(int r, int col) {
    return r * kStride + (kSwizzled ? col ^ ((r % 8) * kVec) : col);
  }
};

// LoadRows into the rows of RowLayout<T, kCols>.
template <int kRows, int kCols, int kThreads, class T, class RowPtr>
__device__ __forceinline__ void LoadTile(T* smem, int row0, int cols_valid, const RowPtr& row_ptr) {
  LoadRows<kRows, kCols, kThreads, T>([&](int r, int col) { return smem + RowLayout<T, kCols>::At(r, col); }, row0,
                                      cols_valid, row_ptr);
}


// The probabilities of the 8-key blocks 2 kk and 2 kk + 1 (accumulator layout) as the 16-bit
// A fragment of k16 step kk of p v.
template <class T, int kNB>
__device__ __forceinline__ void PackP(unsigned (&pa)[4], const float (&s)[kNB][4], int kk) {
  pa[0] = Mma<T>::Pack(s[2 * kk][0], s[2 * kk][1]);
  pa[1] = Mma<T>::Pack(s[2 * kk][2], s[2 * kk][3]);
  pa[2] = Mma<T>::Pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
  pa[3] = Mma<T>::Pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
}

// The rows of one K/V batch b: row r is query position r % kS of query batch b kG + r / kS
// (grouped heads packed, kG > 1), or position r of batch b.
template <class Body>
struct Rows {
  static constexpr int kS = Body::kS, kG = Body::kG, kR = kG * kS;
  long long b;
  int qb;  // the query block in launch order: 0 holds the last rows (the longest causal block)
  __device__ __forceinline__ int Seq(int r) const { return kG == 1 ? r : r % kS; }
  __device__ __forceinline__ long long QBatch(int r) const { return kG == 1 ? b : b * kG + r / kS; }
  // Whether row r exists: a block's rows may end past the last row, and causal blocks may start
  // before row 0 (FirstRow).
  __device__ __forceinline__ static bool Has(int r) { return (!Body::kCausal || r >= 0) && r < kR; }
  // Whether any of rows [lo, hi] exists.
  __device__ __forceinline__ static bool AnyOf(int lo, int hi) { return lo < kR && (!Body::kCausal || hi >= 0); }
  // The nearest row that exists: rows that do not are computed like it and never stored.
  __device__ __forceinline__ static int Clamp(int r) { return min(Body::kCausal ? max(r, 0) : r, kR - 1); }
  // The largest / smallest query position among rows [lo, hi] (clamped to the rows there are).
  __device__ __forceinline__ int MaxSeq(int lo, int hi) const {
    if constexpr (Body::kCausal) lo = max(lo, 0);
    hi = min(hi, kR - 1);
    return (kG == 1 || lo / kS == hi / kS) ? Seq(hi) : kS - 1;
  }
  __device__ __forceinline__ int MinSeq(int lo, int hi) const {
    if constexpr (Body::kCausal) lo = max(lo, 0);
    hi = min(hi, kR - 1);
    return (kG == 1 || lo / kS == hi / kS) ? Seq(lo) : 0;
  }
};

// The first row of the query block that runs qb-th in launch order, kBM rows a block. Without a
// causal mask every block computes every key, and block qb starts at (kMBlocks - 1 - qb) kBM.
// With one, blocks end at the last row instead (qb 0: rows kR - kBM .. kR - 1, the longest), so
// that where kBM does not divide the rows the partial block is the one with the fewest keys, its
// rows before row 0 skipped: aligned at row 0, the partial block would be the longest, a chain of
// every key tile with most of its warps idle (S 1024 in 192-row blocks: 16 tile steps of one
// warpgroup instead of one).
template <class Body, int kBM, int kMBlocks>
__device__ __forceinline__ int FirstRow(int qb) {
  return Body::kCausal ? Rows<Body>::kR - (qb + 1) * kBM : (kMBlocks - 1 - qb) * kBM;
}

// The (K/V batch, query block) this block computes, from its place in launch order
// (blockIdx.y count + blockIdx.x; blocks start roughly in that order). The batches go in
// sections of Body::kSection, whose K and V together fit in L2: a section's blocks run before
// the next section's, so the blocks in flight read a few batches' K and V from L2 instead of
// every batch's from memory. Within a section the query blocks go longest first (causal), the
// batches of one query block side by side. kSection >= count is the plain (x, y) order.
template <class Body, int kMBlocks>
__device__ __forceinline__ Rows<Body> BlockRows(long long count) {
  const long long linear = static_cast<long long>(blockIdx.y) * count + blockIdx.x;
  const long long section = linear / (Body::kSection * kMBlocks);
  const long long first = section * Body::kSection;  // the section's first batch
  const long long within = linear - first * kMBlocks;
  const long long batches = min(static_cast<long long>(Body::kSection), count - first);
  return Rows<Body>{first + within % batches, static_cast<int>(within / batches)};
}

// The scores s of kMT 16-row tiles (rows row0 + 16 mt + g + 8 h) against the key tile at key0,
// in mma accumulator layout. With a mask: scaled into the log2 domain and the mask added;
// without, left raw (the scale is folded into the exponential). Keys past T and (causal) past
// the row become -inf where `edge` says the tile reaches them.
template <class Body, int kMT, int kNB>
__device__ __forceinline__ void MaskScores(const Body& body, const Rows<Body>& rows, float (&s)[kMT][kNB][4], int row0,
                                           int key0, bool edge, int g, int t) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + mt * 16 + g + 8 * h;
      const int pos = rows.Seq(rows.Clamp(row));
#pragma unroll
      for (int j = 0; j < kNB; ++j) {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int col = key0 + j * 8 + 2 * t + c;
          float x = s[mt][j][2 * h + c];
          if constexpr (Body::kHasMask) {
            x = x * Body::kScaleLog2 +
                body.Mask(rows.QBatch(rows.Clamp(row)), pos, min(col, Body::kT - 1)) * 1.4426950408889634f;
          }
          if (edge && (col >= Body::kT || (Body::kCausal && col > pos))) x = kNegInfF();
          s[mt][j][2 * h + c] = x;
        }
      }
    }
  }
}

// Online softmax over one key tile: new row maxima (row_max is in the log2 domain), the scores
// turned into p = 2^(x scale - shift) in place (one FFMA and one ex2 each), their sums added to
// row_sum (per lane; QuadSum at the end), and the factor 2^(old max - new max) that what was
// accumulated in o must be scaled by before this tile's p v adds to it (Rescale).
template <class Body, int kMT, int kNB>
__device__ __forceinline__ void SoftmaxStats(float (&s)[kMT][kNB][4], float (&row_max)[kMT][2], float (&row_sum)[kMT][2],
                                             float (&correction)[kMT][2]) {
  constexpr float kScale = Body::kHasMask ? 1.0f : Body::kScaleLog2;  // the scale left on x
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float part[kNB];
#pragma unroll
      for (int j = 0; j < kNB; ++j) part[j] = fmaxf(s[mt][j][2 * h], s[mt][j][2 * h + 1]);
      // kScale > 0: -inf stays -inf.
      const float mx = fmaxf(row_max[mt][h], QuadMax(TreeMax(part)) * kScale);
      const float shift = mx == kNegInfF() ? 0.0f : mx;  // a row with nothing visible yet: 2^-inf = 0
      correction[mt][h] = Exp2(row_max[mt][h] - shift);
      row_max[mt][h] = mx;
#pragma unroll
      for (int j = 0; j < kNB; ++j) {
        s[mt][j][2 * h] = Exp2(fmaf(s[mt][j][2 * h], kScale, -shift));
        s[mt][j][2 * h + 1] = Exp2(fmaf(s[mt][j][2 * h + 1], kScale, -shift));
        part[j] = s[mt][j][2 * h] + s[mt][j][2 * h + 1];
      }
      row_sum[mt][h] = row_sum[mt][h] * correction[mt][h] + TreeSum(part);
    }
  }
}
// Dropout on the probabilities in s (kMT 16-row tiles, rows row0 + 16 mt + g + 8 h, against the
// key tile at key0), after SoftmaxStats has summed them: probability (bq, pos, key) is element
// i = (bq kS + pos) kT + key of docs/dropout.md, kept (times kDropScale) iff word i & 3 of the
// Philox call of group i >> 2 reaches kDropThreshold, else 0. A lane's two keys 2t, 2t + 1 are
// consecutive elements: one call serves both unless they straddle two groups (odd kT only);
// where kT is a multiple of 4, one call serves the four keys of a lane pair.
// The keep bits of a row are drawn first, in a loop that is not unrolled (one Philox call's
// registers live at a time, beside the score and output accumulators), then applied.
template <class Body, int kMT, int kNB>
__device__ __forceinline__ void DropProbabilities(const Body& body, const Rows<Body>& rows, float (&s)[kMT][kNB][4],
                                                  int row0, int key0, int g, int t) {
  static_assert(2 * kNB <= 64, "a row's keep bits fit 64 bits (key tiles up to 256)");
  const unsigned long long seed = body.Seed(), offset = body.Offset();
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = rows.Clamp(row0 + mt * 16 + g + 8 * h);
      const unsigned long long base =
          (static_cast<unsigned long long>(rows.QBatch(row)) * Body::kS + rows.Seq(row)) * Body::kT + key0 + 2 * t;
      unsigned long long keep = 0;  // bit 2 j + c: key j * 8 + 2 t + c of the tile
      auto bits = [](unsigned w0, unsigned w1) {
        return static_cast<unsigned long long>((w0 >= Body::kDropThreshold ? 1u : 0u) |
                                               (w1 >= Body::kDropThreshold ? 2u : 0u));
      };
      if constexpr (Body::kT % 4 == 0) {
        // Rows start on a group of four: lanes t and t ^ 1 hold the four keys of one group in
        // every 8-key block j. Each computes the call of every other block (t even: j even) and
        // hands its partner the two words it needs: half the calls.
        const int odd = t & 1;
#pragma unroll 1
        for (int jj = 0; jj < kNB / 2; ++jj) {
          const int j = 2 * jj + odd;  // the block this lane draws
          const Philox4 w = DropoutWords(seed, offset, (base + j * 8) >> 2);
          const unsigned r0 = __shfl_xor_sync(0xffffffffu, odd ? w.w[0] : w.w[2], 1);
          const unsigned r1 = __shfl_xor_sync(0xffffffffu, odd ? w.w[1] : w.w[3], 1);
          keep |= bits(odd ? w.w[2] : w.w[0], odd ? w.w[3] : w.w[1]) << (2 * j);
          keep |= bits(r0, r1) << (2 * (j ^ 1));
        }
      } else {
#pragma unroll 1
        for (int j = 0; j < kNB; ++j) {
          const unsigned long long i = base + j * 8;
          const Philox4 w = DropoutWords(seed, offset, i >> 2);
          const unsigned lane = static_cast<unsigned>(i & 3);
          const unsigned w1 = (Body::kT % 2 == 0 || lane != 3) ? PhiloxWord(w, lane + 1)
                                                                  : DropoutWords(seed, offset, (i + 1) >> 2).w[0];
          keep |= bits(PhiloxWord(w, lane), w1) << (2 * j);
        }
      }
      if (Body::kDropAll) keep = 0;
#pragma unroll
      for (int j = 0; j < kNB; ++j) {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          float& p = s[mt][j][2 * h + c];
          p = (keep >> (2 * j + c)) & 1 ? p * Body::kDropScale : 0.0f;
        }
      }
    }
  }
}

template <int kMT, int kOB>
__device__ __forceinline__ void Rescale(float (&o)[kMT][kOB][4], const float (&correction)[kMT][2]) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int e = 0; e < kOB; ++e) {
      o[mt][e][0] *= correction[mt][0];
      o[mt][e][1] *= correction[mt][0];
      o[mt][e][2] *= correction[mt][1];
      o[mt][e][3] *= correction[mt][1];
    }
  }
}
// Both, for a kernel that adds this tile's p v right after.
template <class Body, int kMT, int kNB, int kOB>
__device__ __forceinline__ void SoftmaxStep(float (&s)[kMT][kNB][4], float (&o)[kMT][kOB][4], float (&row_max)[kMT][2],
                                            float (&row_sum)[kMT][2]) {
  float correction[kMT][2];
  SoftmaxStats<Body>(s, row_max, row_sum, correction);
  Rescale(o, correction);
}

// The end of a block: row sums completed over the quad; with kSplit > 1 this split's partials
// published and, in the last of the item's kSplit blocks to finish, all of them merged in
// split order (the others return); then every row normalised (a row that saw no key, l = 0,
// gives 0) and stored as pairs of columns, and (kHasLse) its log-sum-exp written,
// (max + log2 l) ln 2 in natural units, +inf where l = 0. The block's warp w owns local rows
// 16 kMT w .. 16 kMT (w + 1) - 1, the first of them row0 of the K/V batch's rows.
template <class Body, int kBM, int kEP, int kSplit, int kMT>
__device__ __forceinline__ void FinishRows(const Body& body, const Rows<Body>& rows, float (&o)[kMT][kEP / 8][4],
                                           float (&row_max)[kMT][2], float (&row_sum)[kMT][2], void* scratch,
                                           int warp, int row0, int g, int t) {
  using T = typename Body::T;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) row_sum[mt][h] = QuadSum(row_sum[mt][h]);
  }
  if constexpr (kSplit > 1) {
    using Scratch = SplitScratch<kBM, kEP, kSplit>;
    const Scratch sc{static_cast<unsigned char*>(scratch) + (rows.b * gridDim.y + rows.qb) * Scratch::kItemBytes};
    const int split = blockIdx.z;
    // m-tiles wholly past the rows (decoding: a group's few rows in a 64-row block) are neither
    // published nor merged.
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      if (!Rows<Body>::AnyOf(row0 + mt * 16, row0 + mt * 16 + 15)) continue;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int lr = warp * 16 * kMT + mt * 16 + g + 8 * h;  // the block's local row
#pragma unroll
        for (int e = 0; e < kEP / 8; ++e) {
          __stcg(reinterpret_cast<float2*>(sc.Out(split) + lr * kEP + e * 8 + 2 * t),
                 make_float2(o[mt][e][2 * h], o[mt][e][2 * h + 1]));
        }
        if (t == 0) __stcg(reinterpret_cast<float2*>(sc.Stats(split) + 2 * lr), make_float2(row_max[mt][h], row_sum[mt][h]));
      }
    }
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
      last = atomicAdd(sc.Counter(), 1u) == kSplit - 1;
      if (last) *sc.Counter() = 0;  // left zero for the next launch
    }
    __syncthreads();
    if (!last) return;
    __threadfence();  // the other splits' partials are visible
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      if (!Rows<Body>::AnyOf(row0 + mt * 16, row0 + mt * 16 + 15)) continue;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int lr = warp * 16 * kMT + mt * 16 + g + 8 * h;
        float mx = kNegInfF();
        for (int sp = 0; sp < kSplit; ++sp) mx = fmaxf(mx, __ldcg(sc.Stats(sp) + 2 * lr));
        const float shift = mx == kNegInfF() ? 0.0f : mx;
        float l = 0.0f;
#pragma unroll
        for (int e = 0; e < kEP / 8; ++e) o[mt][e][2 * h] = o[mt][e][2 * h + 1] = 0.0f;
        for (int sp = 0; sp < kSplit; ++sp) {
          const float2 st = __ldcg(reinterpret_cast<const float2*>(sc.Stats(sp) + 2 * lr));
          const float w = Exp2(st.x - shift);
          l += st.y * w;
#pragma unroll
          for (int e = 0; e < kEP / 8; ++e) {
            const float2 part = __ldcg(reinterpret_cast<const float2*>(sc.Out(sp) + lr * kEP + e * 8 + 2 * t));
            o[mt][e][2 * h] += part.x * w;
            o[mt][e][2 * h + 1] += part.y * w;
          }
        }
        row_sum[mt][h] = l;
        row_max[mt][h] = shift;
      }
    }
  }
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float l = row_sum[mt][h];
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;
      const int row = row0 + mt * 16 + g + 8 * h;
      if (!Rows<Body>::Has(row)) continue;
      if constexpr (Body::kHasLse) {
        if (t == 0) {
          body.Lse(rows.QBatch(row))[rows.Seq(row)] =
              l > 0.0f ? (row_max[mt][h] + log2f(l)) * 0.6931471805599453f : __int_as_float(0x7f800000);
        }
      }
      T* out = body.O(rows.QBatch(row)) + rows.Seq(row) * Body::kORow;
#pragma unroll
      for (int e = 0; e < kEP / 8; ++e) {
        const int col = e * 8 + 2 * t;
        if (col >= Body::kE) continue;
        Mma<T>::Store2(out + col, o[mt][e][2 * h] * inv, o[mt][e][2 * h + 1] * inv);
      }
    }
  }
}

}  // namespace attn

template <class Body, class Shape>
__device__ __forceinline__ void AttentionKernel(const Body& body, long long count, void* scratch) {
  using T = typename Body::T;
  using M = attn::Mma<T>;
  constexpr int kBM = Shape::kBlockM, kBN = Shape::kBlockN, kMT = Shape::kMTiles, kThreads = Shape::kThreads;
  constexpr int kStages = Shape::kStages, kSplit = Shape::kSplit;
  constexpr int kDP = attn::RoundUp16(Body::kD), kEP = attn::RoundUp16(Body::kE);
  // kVec elements make 16 bytes (one cp.async, one ldmatrix row); a product's k step is 32
  // bytes: kStep elements (m16n8k16 for 16-bit types, m16n8k8 for f32).
  constexpr int kVec = 16 / sizeof(T), kStep = 2 * kVec;
  using QK = attn::RowLayout<T, kDP>;  // Q's and K's rows in shared memory
  using VL = attn::RowLayout<T, kEP>;  // V's
  constexpr int kQS = QK::kStride, kKS = QK::kStride, kVS = VL::kStride;
  constexpr int kR = attn::Rows<Body>::kR;                             // query rows of one K/V batch
  static_assert(Body::kD % kVec == 0 && Body::kE % kVec == 0, "head dims are whole 16-byte chunks");
  static_assert(Body::kS >= 1 && Body::kT >= 1 && Body::kG >= 1, "attention over empty sequences is not launched");

  extern __shared__ __align__(128) unsigned char attention_smem[];
  T* sQ = reinterpret_cast<T*>(attention_smem);
  T* sK = sQ + kBM * kQS;
  T* sV = sK + kStages * kBN * kKS;

  if (static_cast<long long>(blockIdx.x) >= count) return;
  constexpr int kMBlocks = (kR + kBM - 1) / kBM;
  const attn::Rows<Body> rows = attn::BlockRows<Body, kMBlocks>(count);
  const int m0 = attn::FirstRow<Body, kBM, kMBlocks>(rows.qb);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int warp_row0 = m0 + warp * 16 * kMT;  // this warp's first row

  const T* k = body.K(rows.b);
  const T* v = body.V(rows.b);
  // Key tiles of this block: all, or (causal) up to its last row's position; this split's share.
  int keys = Body::kT;
  if (Body::kCausal) keys = min(Body::kT, rows.MaxSeq(m0, m0 + kBM - 1) + 1);
  const int all_tiles = (keys + kBN - 1) / kBN;
  const int per_split = (all_tiles + kSplit - 1) / kSplit;
  const int n_begin = kSplit == 1 ? 0 : min(all_tiles, static_cast<int>(blockIdx.z) * per_split);
  const int n_end = kSplit == 1 ? all_tiles : min(all_tiles, n_begin + per_split);

  auto load_kv = [&](int tile) {
    const int stage = tile % kStages;
    attn::LoadTile<kBN, kDP, kThreads>(sK + stage * kBN * kKS, tile * kBN, Body::kD, [&](int j) {
      return j < Body::kT ? k + j * Body::kKRow : nullptr;
    });
    attn::LoadTile<kBN, kEP, kThreads>(sV + stage * kBN * kVS, tile * kBN, Body::kE, [&](int j) {
      return j < Body::kT ? v + j * Body::kVRow : nullptr;
    });
  };
  attn::LoadTile<kBM, kDP, kThreads>(sQ, m0, Body::kD, [&](int r) {
    return rows.Has(r) ? body.Q(rows.QBatch(r)) + rows.Seq(r) * Body::kQRow : nullptr;
  });
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (n_begin + s < n_end) load_kv(n_begin + s);
    attn::CpAsyncCommit();
  }

  // ldmatrix addressing of this lane: A (Q) fragments, B fragments of K (non-transposed) and
  // of V (transposed, 16-bit only), each x4 covering two 8-wide n blocks of one k step.
  const int a_row = lane % 16, a_col = (lane / 16) * kVec;
  const int kb_row = (lane / 16) * 8 + lane % 8, kb_col = ((lane / 8) % 2) * kVec;

  unsigned qf[Shape::kQInRegs ? kMT : 1][kDP / kStep][4];
  float o[kMT][kEP / 8][4];
  float row_max[kMT][2], row_sum[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int e = 0; e < kEP / 8; ++e) o[mt][e][0] = o[mt][e][1] = o[mt][e][2] = o[mt][e][3] = 0.0f;
    row_max[mt][0] = row_max[mt][1] = kNegInfF();
    row_sum[mt][0] = row_sum[mt][1] = 0.0f;
  }
  // This warp's rows: none past the block's rows (short query blocks: decoding), and the
  // positions a causal mask compares keys with.
  const bool warp_has_rows = rows.AnyOf(warp_row0, warp_row0 + 16 * kMT - 1);
  const int warp_max_seq = rows.MaxSeq(warp_row0, warp_row0 + 16 * kMT - 1);
  const int warp_min_seq = rows.MinSeq(warp_row0, warp_row0 + 16 * kMT - 1);

  for (int n = n_begin; n < n_end; ++n) {
    attn::CpAsyncWait<kStages - 2>();
    __syncthreads();  // tile n is in shared memory; every warp is done with tile n - 1
    if constexpr (Shape::kQInRegs) {
      if (n == n_begin) {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
          for (int kk = 0; kk < kDP / kStep; ++kk) {
            attn::LdMatrixX4(qf[mt][kk], sQ + QK::At(warp * 16 * kMT + mt * 16 + a_row, kk * kStep + a_col));
          }
        }
      }
    }
    if (n + kStages - 1 < n_end) load_kv(n + kStages - 1);
    attn::CpAsyncCommit();

    const int key0 = n * kBN;
    // A warp with no rows, or whose rows all precede this tile's first key (causal), has
    // nothing to do.
    if (!warp_has_rows || (Body::kCausal && key0 > warp_max_seq)) continue;
    const T* cK = sK + (n % kStages) * kBN * kKS;
    const T* cV = sV + (n % kStages) * kBN * kVS;

    // s = q k^T for this warp's rows and the tile's keys.
    float s[kMT][kBN / 8][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.0f;
    }
    // The fragments of k step kk + 1 are loaded while the products of step kk run (two
    // register buffers; the unrolled loop makes every index a constant).
    unsigned kf[2][kBN / 16][4], qa[2][kMT][4];
    auto load_step = [&](int kk, int buf) {
#pragma unroll
      for (int nb = 0; nb < kBN / 16; ++nb) {
        attn::LdMatrixX4(kf[buf][nb], cK + QK::At(nb * 16 + kb_row, kk * kStep + kb_col));
      }
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        if constexpr (Shape::kQInRegs) {
#pragma unroll
          for (int r = 0; r < 4; ++r) qa[buf][mt][r] = qf[mt][kk][r];
        } else {
          attn::LdMatrixX4(qa[buf][mt], sQ + QK::At(warp * 16 * kMT + mt * 16 + a_row, kk * kStep + a_col));
        }
      }
    };
    load_step(0, 0);
#pragma unroll
    for (int kk = 0; kk < kDP / kStep; ++kk) {
      if (kk + 1 < kDP / kStep) load_step(kk + 1, (kk + 1) % 2);
#pragma unroll
      for (int nb = 0; nb < kBN / 16; ++nb) {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          M::Run(s[mt][2 * nb], qa[kk % 2][mt], kf[kk % 2][nb][0], kf[kk % 2][nb][1]);
          M::Run(s[mt][2 * nb + 1], qa[kk % 2][mt], kf[kk % 2][nb][2], kf[kk % 2][nb][3]);
        }
      }
    }

    const bool edge = key0 + kBN > Body::kT || (Body::kCausal && key0 + kBN - 1 > warp_min_seq);
    attn::MaskScores(body, rows, s, warp_row0, key0, edge, g, t);
    attn::SoftmaxStep<Body>(s, o, row_max, row_sum);
    if constexpr (Body::kDropout) attn::DropProbabilities(body, rows, s, warp_row0, key0, g, t);

    if constexpr (sizeof(T) == 2) {
      // o += p v: the score accumulators of two 8-key blocks are the A fragment of a k16 step.
      // The V fragment of step i + 2 is loaded while the products of step i run (three buffers
      // over the unrolled (kk, eb) sequence).
      constexpr int kEB = kEP / 16, kVSteps = kBN / 16 * kEB;
      const int vb_row = ((lane / 8) % 2) * 8 + lane % 8, vb_col = (lane / 16) * 8;
      unsigned vf[3][4];
      auto load_v = [&](int i) {
        attn::LdMatrixX4Trans(vf[i % 3], cV + VL::At((i / kEB) * 16 + vb_row, (i % kEB) * 16 + vb_col));
      };
      load_v(0);
      if (kVSteps > 1) load_v(1);
      unsigned pa[kMT][4];
#pragma unroll
      for (int i = 0; i < kVSteps; ++i) {
        const int kk = i / kEB, eb = i % kEB;
        if (i + 2 < kVSteps) load_v(i + 2);
        if (eb == 0) {
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) attn::PackP<T>(pa[mt], s[mt], kk);
        }
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          M::Run(o[mt][2 * eb], pa[mt], vf[i % 3][0], vf[i % 3][1]);
          M::Run(o[mt][2 * eb + 1], pa[mt], vf[i % 3][2], vf[i % 3][3]);
        }
      }
    } else {
      // f32: o += p v in k8 steps of 8 keys. Lane (g, t) holds the probabilities of keys 2t and
      // 2t + 1 (rows g, g + 8) of 8-key block j; m16n8k8 takes them as its k = t and t + 4,
      // which permutes the step's keys, and V's fragment is read with the same permutation:
      // b0, b1 = V rows 2t and 2t + 1 at column g, two 32-bit loads (f32 rows are padded: they
      // start 4 words apart mod 32, so the 32 lanes hit 32 banks). The sum over keys does not
      // depend on their order.
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j) {
        unsigned pa[kMT][4];
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          pa[mt][0] = __float_as_uint(s[mt][j][0]);
          pa[mt][1] = __float_as_uint(s[mt][j][2]);
          pa[mt][2] = __float_as_uint(s[mt][j][1]);
          pa[mt][3] = __float_as_uint(s[mt][j][3]);
        }
        static_assert(!VL::kSwizzled, "f32 rows are padded");
        const T* vrow = cV + (j * 8 + 2 * t) * kVS + g;
#pragma unroll
        for (int e = 0; e < kEP / 8; ++e) {
          const unsigned b0 = __float_as_uint(vrow[e * 8]), b1 = __float_as_uint(vrow[kVS + e * 8]);
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) M::Run(o[mt][e], pa[mt], b0, b1);
        }
      }
    }
  }
  attn::CpAsyncWait<0>();  // nothing may be in flight when the block exits
  attn::FinishRows<Body, kBM, kEP, kSplit>(body, rows, o, row_max, row_sum, scratch, warp, warp_row0, g, t);
}

}  // namespace kiln
