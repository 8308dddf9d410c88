// Every template compiles on its own with NVRTC for sm_90a (no GPU needed): a tiny kernel per
// template includes it by name and instantiates its pieces.
#include <string>

#include "gtest/gtest.h"
#include "runtime/nvrtc_compile.h"
#include "templates/embedded_templates.h"

namespace kiln {
namespace {

struct TemplateUse {
  std::string header;
  std::string body;  // a kernel that uses it
  std::string kernel;  // its name
};

std::vector<TemplateUse> Uses() {
  return {
      {"kiln_types.cuh", R"(
extern "C" __global__ void __launch_bounds__(256) use_types(const __nv_bfloat16* x, __half* y, float* z) {
  __shared__ float smem[32];
  float v[8];
  kiln::LoadVec<__nv_bfloat16, 8>(x + threadIdx.x * 8, v);
  kiln::StoreVec<__half, 8>(y + threadIdx.x * 8, v);
  float s = kiln::BlockReduce<kiln::Sum, 256>(v[0], smem);
  float m = kiln::GroupReduce<kiln::Max, 32, 256>(v[1], smem);
  float n = kiln::BlockReduce<kiln::Min, 256>(v[2] + kiln::kInfF() * 0.0f, smem);
  if (threadIdx.x == 0) z[blockIdx.x] = s + m + n + kiln::kNaNF();
})", "use_types"},
      {"kiln_philox.cuh", R"(
extern "C" __global__ void use_philox(unsigned int* out, float* y, const float* x) {
  kiln::Philox4 w = kiln::DropoutWords(1234ULL, 7ULL, threadIdx.x);
  out[threadIdx.x] = w.w[0] ^ w.w[3];
  bool keep = kiln::DropoutKeep(1ULL, 2ULL, threadIdx.x, 429496729u, false, false);
  y[threadIdx.x] = kiln::DropoutApply(x[threadIdx.x], keep, 0x1.19999ap+0f);
})", "use_philox"},
      {"pointwise.cuh", R"(
struct Body {
  static constexpr int kV = 4;
  static constexpr bool kTail = true;
  const float* __restrict__ x;
  float* __restrict__ y;
  __device__ void Vector(long long i) const {
    float v[4];
    kiln::LoadVec<float, 4>(x + i, v);
    for (int j = 0; j < 4; ++j) v[j] = kiln::Silu(v[j]);
    kiln::StoreVec<float, 4>(y + i, v);
  }
  __device__ void Scalar(long long i) const { y[i] = kiln::Silu(x[i]); }
};
extern "C" __global__ void use_pointwise(const float* x, long long* q, float* y, long long count) {
  kiln::PointwiseKernel<Body>(Body{x, y}, count);
  for (long long i = kiln::GlobalThreadIndex(); i < count; i += kiln::GridStride()) {
    const float a = x[i];
    y[i] = kiln::Gelu(a) + kiln::GeluTanh(a) + kiln::Silu(a) + kiln::Sigmoid(a) + kiln::Relu(a) +
           kiln::MaxNaN(a, 1.0f) + kiln::MinNaN(a, 0.0f) + kiln::Rsqrt(a) + kiln::RoundToF16(a) +
           kiln::RoundToBF16(a);
    q[i] = kiln::WrapAdd(kiln::FloatToI64(a), kiln::FloatToI32(a)) + kiln::IntDiv(i, 3) +
           kiln::WrapI32(kiln::WrapMul(i, i)) + kiln::WrapAbs(-i);
  }
})", "use_pointwise"},
      {"row_reduce.cuh", R"(
// A hand-written Body (what codegen/emit_row.cc generates): log-sum-exp of every row, x minus
// it, and the sum of the row results over all rows; N = 2049 is not a multiple of the vector,
// so rows have heads and tails. Instantiated cached with a warp per row, and streamed with
// each row split over 4 blocks.
struct Body {
  static constexpr long long kN = 2049;
  static constexpr bool kStores = true;
  static constexpr int kV = 4;
  static constexpr int kLevels = 1;
  static constexpr unsigned kPassMask = 2u;
  static constexpr int kCombines = 1;
  static constexpr int kExchangeWords = 2;
  const float* __restrict__ x;
  float* __restrict__ y;
  float* __restrict__ total;
  struct Vec { float x0[4]; };
  struct Row { float v0; };
  struct Acc1 { kiln::MaxSum a0; };
  template <int L> struct AccOf { using Type = typename kiln::SelectType<L, Acc1>::Type; };
  __device__ void Load(long long r, long long c0, Vec& v) const { kiln::LoadVec<float, 4>(x + r * kN + c0, v.x0); }
  __device__ void BeginRow(long long r, Row& row) const {}
  __device__ void Init(Acc1& a) const { a.a0 = kiln::MaxSumIdentity(); }
  __device__ void Merge(Acc1& a, const Acc1& b) const { a.a0 = kiln::MaxSumMerge(a.a0, b.a0); }
  __device__ void Step(const Row& row, Acc1& a, const Vec& v, long long r, long long c0) const {
    a.a0 = kiln::MaxSumAddVec<4>(a.a0, v.x0);
  }
  __device__ void Load1(long long r, long long c, Vec& v) const { v.x0[0] = x[r * kN + c]; }
  __device__ void Step1(const Row& row, Acc1& a, const Vec& v, long long r, long long c) const {
    const float e[1] = {v.x0[0]};
    a.a0 = kiln::MaxSumAddVec<1>(a.a0, e);
  }
  __device__ void Finish(const Acc1& a, Row& row, long long r) const {
    const kiln::MaxSum p = kiln::MaxSumFinish(a.a0);
    row.v0 = p.m + logf(p.s);
  }
  __device__ void Store(const Row& row, const Vec& v, long long r, long long c0) const {
    float o[4];
    for (int j = 0; j < 4; ++j) o[j] = v.x0[j] - row.v0;
    kiln::StoreVec<float, 4>(y + r * kN + c0, o);
  }
  __device__ void Store1(const Row& row, const Vec& v, long long r, long long c) const { y[r * kN + c] = v.x0[0] - row.v0; }
  __device__ void StoreRow(const Row& row, long long r) const {}
  __device__ void Partials(const Row& row, float* p) const { p[0] = row.v0; }
  template <int kBlock>
  __device__ void Combined(const float* partials, long long rows, float* smem) const {
    const float t = kiln::CombineRows<kiln::Sum, kBlock>(partials, rows, 0, 1, smem);
    if (threadIdx.x == 0) total[0] = t;
  }
};
extern "C" __global__ void __launch_bounds__(256) use_row(const float* x, float* y, float* total, void* scratch,
                                                        long long rows) {
  const Body body{x, y, total};
  kiln::RowKernel<Body, kiln::RowShape<256, 32, 4, 17, 1, 1>>(body, rows, scratch);
}
extern "C" __global__ void __launch_bounds__(256) use_row_split(const float* x, float* y, float* total,
                                                              void* scratch, long long rows) {
  const Body body{x, y, total};
  kiln::RowKernel<Body, kiln::RowShape<256, 256, 4, 0, 2, 4>>(body, rows, scratch);
}
)", "use_row"},
      {"column_reduce.cuh", R"(
// A hand-written column Body (what codegen/emit_reduce.cc generates in column mode): the sum
// over K of every column of [outer x 1000 x 96] and x divided by it; instantiated cached and
// streamed with each tile split over 4 blocks.
struct Body {
  static constexpr long long kK = 1000;
  static constexpr long long kI = 96;
  static constexpr bool kStores = true;
  static constexpr bool kStoreInStep = false;
  static constexpr bool kRagged = false;
  static constexpr int kV = 4;
  static constexpr int kLevels = 1;
  static constexpr unsigned kPassMask = 2u;
  static constexpr int kCombines = 0;
  static constexpr int kExchangeWords = 4;
  const float* __restrict__ x;
  float* __restrict__ y;
  long long* __restrict__ m;
  struct Vec { float x0[4]; };
  struct Cell { float v0[4]; };
  struct Acc1 { float a0[4]; };
  template <int L> struct AccOf { using Type = typename kiln::SelectType<L, Acc1>::Type; };
  __device__ void Load(long long o, long long k, long long i0, Vec& v) const {
    kiln::LoadVec<float, 4>(x + (o * kK + k) * kI + i0, v.x0);
  }
  __device__ void BeginCell(long long o, long long i0, Cell& cell) const {}
  __device__ void Init(Acc1& a) const { for (int j = 0; j < kV; ++j) a.a0[j] = kiln::Sum::Identity(); }
  __device__ void Merge(Acc1& a, const Acc1& b) const { for (int j = 0; j < kV; ++j) a.a0[j] += b.a0[j]; }
  __device__ void Step(const Cell& cell, Acc1& a, const Vec& v, long long o, long long k, long long i0) const {
    for (int j = 0; j < kV; ++j) a.a0[j] = kiln::Sum::Apply(a.a0[j], v.x0[j]);
  }
  __device__ void Finish(const Acc1& a, Cell& cell, long long o, long long i0) const {
    for (int j = 0; j < kV; ++j) cell.v0[j] = a.a0[j];
  }
  __device__ void Store(const Cell& cell, const Vec& v, long long o, long long k, long long i0) const {
    float out[4];
    for (int j = 0; j < kV; ++j) out[j] = v.x0[j] / cell.v0[j];
    kiln::StoreVec<float, 4>(y + (o * kK + k) * kI + i0, out);
  }
  __device__ void StoreCell(const Cell& cell, long long o, long long i0) const {
    m[o * kI + i0] = kiln::MaxI64::Apply(kiln::SumI64::Apply(1, kiln::MinI32::Identity()), kiln::MaxI32::Identity()) +
                     kiln::MinI64::Identity();
  }
};
extern "C" __global__ void __launch_bounds__(256) use_col(const float* x, float* y, long long* m, void* scratch,
                                                        long long tiles) {
  kiln::ColumnKernel<Body, kiln::ColumnShape<256, 32, 4, 0, 4>>(Body{x, y, m}, tiles, scratch);
}
extern "C" __global__ void __launch_bounds__(256) use_col_cached(const float* x, float* y, long long* m,
                                                               void* scratch, long long tiles) {
  kiln::ColumnKernel<Body, kiln::ColumnShape<256, 8, 4, 16, 1>>(Body{x, y, m}, tiles, scratch);
}
)", "use_col"},
      {"layout.cuh", R"(
extern "C" __global__ void use_layout(const __half* x, __half* y, const long long* idx, long long count) {
  for (long long i = kiln::GlobalThreadIndex(); i < count; i += kiln::GridStride()) {
    y[i] = x[kiln::GatherIndex(idx[i % 4], 10) * 3 + kiln::ClampIndex(i - 5, 3)];
  }
}
// A hand-written tiled Body (what codegen/emit_layout.cc generates): y[r, b, a] = x[r, a, b] +
// w[r, b, a] over [7 x 1000 x 4096] (a = 4096, b = 1000, rest 7), x staged, w read along a;
// instantiated with 64 x 64 tiles of 8-element vectors and 32 x 32 scalar ones.
template <class TileT>
struct Body {
  using Tile = TileT;
  static constexpr int kV = Tile::kV;
  static constexpr long long kA = 4096, kB = 1000;
  struct Smem { kiln::StagedTile<__nv_bfloat16, Tile> s0; };
  struct Base { long long f0; };
  const __nv_bfloat16* __restrict__ x;
  const __nv_bfloat16* __restrict__ w;
  __nv_bfloat16* __restrict__ y;
  __device__ Base Begin(long long rest) const { return Base{rest * kA * kB}; }
  __device__ void Stage(const Base& base, long long b, long long a, int tb, int ta, Smem& smem) const {
    kiln::StageVec<kV>(x + base.f0 + a * kB + b, smem.s0, tb, ta);
  }
  __device__ void Store(const Base& base, long long b, long long a, int tb, int ta, const Smem& smem) const {
    float v[kV], o[kV];
    kiln::LoadVec<__nv_bfloat16, kV>(w + base.f0 + b * kA + a, v);
    for (int j = 0; j < kV; ++j) o[j] = kiln::ToCompute(smem.s0.Get(tb, ta + j)) + v[j];
    kiln::StoreVec<__nv_bfloat16, kV>(y + base.f0 + b * kA + a, o);
  }
};
extern "C" __global__ void __launch_bounds__(256) use_tiled(const __nv_bfloat16* x, const __nv_bfloat16* w,
                                                           __nv_bfloat16* y, long long tiles) {
  using Vector = Body<kiln::TileShape<64, 64, 8, 256, 2>>;
  kiln::TiledTransposeKernel<Vector, Vector::Tile>(Vector{x, w, y}, tiles);
}
extern "C" __global__ void __launch_bounds__(256) use_tiled_scalar(const __nv_bfloat16* x, const __nv_bfloat16* w,
                                                                  __nv_bfloat16* y, long long tiles) {
  using Scalar = Body<kiln::TileShape<32, 32, 1, 256, 2>>;
  kiln::TiledTransposeKernel<Scalar, Scalar::Tile>(Scalar{x, w, y}, tiles);
}
)", "use_tiled"},
      {"attention.cuh", R"(
struct Body {
  using T = __half;
  static constexpr int kD = 40, kE = 24, kS = 100, kT = 77, kG = 2;
  static constexpr bool kCausal = true, kHasMask = true, kHasLse = true;
  static constexpr bool kDropout = true, kDropAll = false;
  static constexpr unsigned kDropThreshold = 429496729u;
  static constexpr float kDropScale = 1.11111116f;
  static constexpr float kScaleLog2 = 0.2f;
  static constexpr long long kSection = 3;
  static constexpr long long kQRow = 40, kKRow = 40, kVRow = 24, kORow = 24;
  const __half* __restrict__ q;
  const __half* __restrict__ k;
  const __half* __restrict__ v;
  const float* __restrict__ m;
  __half* __restrict__ o;
  float* __restrict__ l;
  __device__ const T* Q(long long b) const { return q + b * kS * kD; }
  __device__ const T* K(long long b) const { return k + b * kT * kD; }
  __device__ const T* V(long long b) const { return v + b * kT * kE; }
  __device__ T* O(long long b) const { return o + b * kS * kE; }
  __device__ float* Lse(long long b) const { return l + b * kS; }
  __device__ float Mask(long long b, int i, int j) const { return m[i * kT + j]; }
  __device__ unsigned long long Seed() const { return 7ULL; }
  __device__ unsigned long long Offset() const { return 3ULL; }
};
extern "C" __global__ void __launch_bounds__(128) use_attention(const __half* q, const __half* k, const __half* v,
                                                              const float* m, __half* o, float* l, void* scratch,
                                                              long long count) {
  kiln::AttentionKernel<Body, kiln::AttentionShape<64, 32, 4, 3, false, 4>>(Body{q, k, v, m, o, l}, count, scratch);
}
)", "use_attention"},
      {"attention_sm90.cuh", R"(
struct Body {
  using T = __nv_bfloat16;
  static constexpr int kD = 80, kE = 72, kS = 100, kT = 77, kG = 2;
  static constexpr bool kCausal = true, kHasMask = true, kHasLse = false;
  static constexpr bool kDropout = true, kDropAll = false;
  static constexpr unsigned kDropThreshold = 2147483648u;
  static constexpr float kDropScale = 2.0f;
  static constexpr float kScaleLog2 = 0.2f;
  static constexpr long long kSection = 3;
  static constexpr long long kQRow = 80, kKRow = 80, kVRow = 72, kORow = 72;
  const T* __restrict__ q;
  const T* __restrict__ k;
  const T* __restrict__ v;
  const float* __restrict__ m;
  T* __restrict__ o;
  __device__ const T* Q(long long b) const { return q + b * kS * kD; }
  __device__ const T* K(long long b) const { return k + b * kT * kD; }
  __device__ const T* V(long long b) const { return v + b * kT * kE; }
  __device__ T* O(long long b) const { return o + b * kS * kE; }
  __device__ float Mask(long long b, int i, int j) const { return m[i * kT + j]; }
  __device__ unsigned long long Seed() const { return 7ULL; }
  __device__ unsigned long long Offset() const { return 3ULL; }
};
extern "C" __global__ void __launch_bounds__(256) use_attention_sm90(const __nv_bfloat16* q, const __nv_bfloat16* k,
                                                                   const __nv_bfloat16* v, const float* m,
                                                                   __nv_bfloat16* o, long long count) {
  kiln::AttentionKernelSm90<Body, kiln::AttentionShape<128, 64, 8, 3, false, 1>>(Body{q, k, v, m, o}, count, nullptr);
}
)", "use_attention_sm90"},
      {"attention_sm90_tma.cuh", R"(
// The TMA kernel with a mask, dropout and three computing warpgroups (ping-pong; dropout spills
// here at 160 registers, which is why the cost model keeps dropout off this kernel), and a
// causal two-warpgroup instance without it; K and V through rank-3 tensor maps.
template <bool kC>
struct Body {
  using T = __nv_bfloat16;
  static constexpr int kD = 80, kE = 72, kS = 100, kT = 77, kG = 1;
  static constexpr bool kCausal = kC, kHasMask = !kC, kHasLse = false;
  static constexpr bool kDropout = !kC, kDropAll = false;
  static constexpr unsigned kDropThreshold = 2147483648u;
  static constexpr float kDropScale = 2.0f;
  static constexpr float kScaleLog2 = 0.2f;
  static constexpr long long kSection = 3;
  static constexpr long long kQRow = 80, kKRow = 80, kVRow = 72, kORow = 72;
  static constexpr int kKRank = 3, kVRank = 3;
  const T* __restrict__ q;
  const T* __restrict__ k;
  const T* __restrict__ v;
  const float* __restrict__ m;
  T* __restrict__ o;
  __device__ const T* Q(long long b) const { return q + b * kS * kD; }
  __device__ const T* K(long long b) const { return k + b * kT * kD; }
  __device__ const T* V(long long b) const { return v + b * kT * kE; }
  __device__ T* O(long long b) const { return o + b * kS * kE; }
  __device__ float Mask(long long b, int i, int j) const { return m[i * kT + j]; }
  __device__ unsigned long long Seed() const { return 7ULL; }
  __device__ unsigned long long Offset() const { return 3ULL; }
  __device__ void KCoords(long long b, int (&c)[5]) const { c[2] = static_cast<int>(b); }
  __device__ void VCoords(long long b, int (&c)[5]) const { c[2] = static_cast<int>(b); }
};
extern "C" __global__ void __launch_bounds__(512, 1) use_attention_sm90_tma(
    const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, const float* m, __nv_bfloat16* o,
    long long count, const __grid_constant__ kiln::tma::TensorMap k_map, const __grid_constant__ kiln::tma::TensorMap v_map) {
  kiln::AttentionKernelSm90Tma<Body<false>, kiln::AttentionShape<192, 64, 12, 3, false, 1>, true>(
      Body<false>{q, k, v, m, o}, count, &k_map, &v_map);
}
extern "C" __global__ void __launch_bounds__(384, 1) use_attention_sm90_tma_causal(
    const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, __nv_bfloat16* o, long long count,
    const __grid_constant__ kiln::tma::TensorMap k_map, const __grid_constant__ kiln::tma::TensorMap v_map) {
  kiln::AttentionKernelSm90Tma<Body<true>, kiln::AttentionShape<128, 128, 8, 4, false, 1>, false>(
      Body<true>{q, k, v, nullptr, o}, count, &k_map, &v_map);
}
)", "use_attention_sm90_tma"},
      {"tma.cuh", R"(
// One TMA copy of a 64 x 64 box into shared memory, waited for on an mbarrier, summed.
extern "C" __global__ void __launch_bounds__(128, 1) use_tma(const __grid_constant__ kiln::tma::TensorMap map,
                                                             float* out) {
  __shared__ __align__(1024) unsigned char box[64 * 128];
  __shared__ unsigned long long full;
  if (threadIdx.x == 0) {
    kiln::tma::BarrierInit(&full, 1);
    kiln::tma::FenceBarrierInit();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    kiln::tma::Prefetch(&map);
    kiln::tma::ArriveExpectTx(&full, sizeof(box));
    const int c[5] = {0, 0, 0, 0, 0};
    kiln::tma::Load<2>(box, &map, &full, c);
  }
  kiln::tma::Wait(&full, 0);
  kiln::tma::NamedBarrier(1, 128);
  out[threadIdx.x] = static_cast<float>(box[threadIdx.x * 64]);
}
)", "use_tma"},
      {"mma_sync.cuh", R"(
// One m16n8k16 product of ldmatrix-loaded tiles staged by cp.async, bf16, written back as f32.
extern "C" __global__ void __launch_bounds__(32) use_mma_sync(const __nv_bfloat16* a, const __nv_bfloat16* b,
                                                              float* out) {
  __shared__ __align__(16) __nv_bfloat16 sa[16 * 16], sb[8 * 16];
  const int l = threadIdx.x;
  for (int c = l; c < 48; c += 32) {
    if (c < 32) kiln::mma::CpAsync16(sa + c * 8, a + c * 8, true);
    else kiln::mma::CpAsync16(sb + (c - 32) * 8, c < 40 ? b + (c - 32) * 8 : kiln::mma::ZeroFillSource<__nv_bfloat16>(), c < 40);
  }
  kiln::mma::CpAsyncCommit();
  kiln::mma::CpAsyncWait<0>();
  __syncwarp();
  unsigned fa[4], fb[2];
  kiln::mma::LdMatrixX4(fa, sa + (l % 16) * 16 + (l / 16) * 8);
  kiln::mma::LdMatrixX2(fb, sb + (l % 8) * 16 + ((l / 8) % 2) * 8);
  float d[4] = {0, 0, 0, 0};
  kiln::mma::Mma<__nv_bfloat16>::Run(d, fa, fb[0], fb[1]);
  for (int e = 0; e < 4; ++e) out[l * 4 + e] = d[e];
}
)", "use_mma_sync"},
      {"norm_matmul.cuh", R"(
struct Body {  // rms_norm(x, w) @ W + bias, K 72, N 40
  using T = __nv_bfloat16;
  static constexpr long long kN = 40, kK = 72;
  static constexpr int kReductions = 1;
  static constexpr bool kCentre = false, kColumnBias = false;
  const T* __restrict__ x;
  const T* __restrict__ w;
  const T* __restrict__ wt;
  const T* __restrict__ bias;
  T* __restrict__ out;
  __device__ const T* X() const { return x; }
  __device__ const T* W() const { return wt; }
  __device__ T* Out() const { return out; }
  __device__ float Operand(float v, long long k) const { return v * kiln::ToCompute(w[k]); }
  __device__ void Stats(float v, long long k, float* s) const { s[0] += v * v; }
  __device__ float RowScale(const float* s) const { return kiln::Rsqrt(s[0] / 72.0f + 1e-6f); }
  __device__ float Epilogue(float y, long long m, long long n) const { return y + kiln::ToCompute(bias[n]); }
};
struct LayerNormBody : Body {  // layer_norm(x, w, b) @ W: x centred, b (here w again) a virtual row
  static constexpr bool kCentre = true, kColumnBias = true;
  __device__ float ColumnBias(long long k) const { return kiln::ToCompute(w[k]); }
};
// Both W layouts: [N, K] in 2 x 2 warps, 3 split blocks; [K, N] with 4 fragments per warp.
extern "C" __global__ void __launch_bounds__(128) use_norm_matmul(const __nv_bfloat16* x, const __nv_bfloat16* w,
                                                                 const __nv_bfloat16* wt, const __nv_bfloat16* bias,
                                                                 __nv_bfloat16* out, long long count, void* scratch,
                                                                 int layout) {
  if (layout == 0) {
    kiln::NormMatmulKernel<Body, kiln::NormMatmulShape<16, 32, 4, 2, 3, 2, true, 1, 72>>(Body{x, w, wt, bias, out},
                                                                                           count, scratch);
  } else if (layout == 1) {
    kiln::NormMatmulKernel<Body, kiln::NormMatmulShape<8, 64, 4, 1, 1, 1, false, 1, 72>>(Body{x, w, wt, bias, out},
                                                                                          count, scratch);
  } else {
    kiln::NormMatmulKernel<LayerNormBody, kiln::NormMatmulShape<16, 32, 4, 2, 3, 2, true, 1, 72>>(
        LayerNormBody{{x, w, wt, bias, out}}, count, scratch);
  }
}
)", "use_norm_matmul"},
      {"wgmma.cuh", R"(
// One m64n64k16 product from two swizzled 64 x 16 tiles, f16, written back as f32.
extern "C" __global__ void __launch_bounds__(128) use_wgmma(float* out) {
  __shared__ __align__(1024) __half a[64 * 64], b[64 * 64];
  for (int i = threadIdx.x; i < 64 * 64; i += 128) a[i] = b[i] = __float2half(1.0f);
  kiln::wgmma::FenceProxyAsync();
  __syncthreads();
  float d[8][4];
  const unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(a)), sb = static_cast<unsigned>(__cvta_generic_to_shared(b));
  kiln::wgmma::Fence();
  kiln::wgmma::Mma<__half, 64>::SS(d, kiln::wgmma::Sw128Desc(sa, 16, 1024), kiln::wgmma::Sw128Desc(sb, 16, 1024), 0);
  kiln::wgmma::Commit();
  kiln::wgmma::Wait<0>();
  kiln::wgmma::FenceOperands(d);
  for (int j = 0; j < 8; ++j) out[threadIdx.x * 32 + 4 * j] = d[j][0] + d[j][1] + d[j][2] + d[j][3];
}
)", "use_wgmma"},
  };
}

TEST(TemplatesNvrtcTest, EveryTemplateCompilesOnItsOwnForSm90a) {
  const auto& templates = EmbeddedTemplates();
  for (const TemplateUse& use : Uses()) {
    bool found = false;
    for (const auto& t : templates) found |= t.first == use.header;
    EXPECT_TRUE(found) << use.header << " is not embedded";
    const std::string source = "#include \"" + use.header + "\"\n" + use.body + "\n";
    auto compiled = CompileCuda(use.kernel, source, "sm_90a");
    ASSERT_TRUE(compiled.ok()) << use.header << ":\n" << compiled.status();
    EXPECT_FALSE(compiled->cubin.empty()) << use.header;
    EXPECT_GT(compiled->registers, 0) << use.header << "\n" << compiled->log;
    std::printf("%-16s %7.1f ms  %3d registers  %lld spill bytes\n", use.header.c_str(), compiled->compile_ms,
                compiled->registers, static_cast<long long>(compiled->spill_store_bytes));
  }
  // Every embedded template has a use above.
  for (const auto& t : templates) {
    bool used = false;
    for (const TemplateUse& use : Uses()) used |= use.header == t.first;
    EXPECT_TRUE(used) << t.first << " has no self-test kernel here";
  }
}

TEST(TemplatesNvrtcTest, CompileErrorNamesTheKernelAndCarriesTheLog) {
  auto compiled = CompileCuda("broken_kernel", "extern \"C\" __global__ void broken_kernel() { undefined_name(); }", "sm_90a");
  ASSERT_FALSE(compiled.ok());
  const std::string message(compiled.status().message());
  EXPECT_NE(message.find("broken_kernel"), std::string::npos) << message;
  EXPECT_NE(message.find("undefined_name"), std::string::npos) << message;
}

TEST(TemplatesNvrtcTest, RefusesVirtualArchitectures) {
  auto compiled = CompileCuda("k", "extern \"C\" __global__ void k() {}", "compute_90");
  ASSERT_FALSE(compiled.ok());
  EXPECT_NE(std::string(compiled.status().message()).find("empty CUBIN"), std::string::npos);
}

}  // namespace
}  // namespace kiln
