// Does a row kernel lose time loading its along-row inputs (a norm's weight and bias) only in
// its store pass, after the row's reductions? The Body below is `kiln dump --code` of the zoo's
// layer_norm_odd1000_f16 (LayerNorm over [8192, 1000] f16, one warp per row, 4 rows a block,
// the row in registers), with the weight and bias loads placed four ways:
//   0  as generated: loaded in Store (after both reductions);
//   1  loaded raw into the Row right after the row's own loads (BeginRow), widened in Store;
//   2  prefetched to L1 in BeginRow, loaded in Store as generated;
//   3  none (y = (x - mean) * rstd): what the weights cost at all.
// Variants 0-2 must write the same bits. Built with nvcc and run on the device
// (bench/results/2026-11-29-session34, run 2):
//   nvcc -O3 -std=c++17 -arch=sm_90a -I templates bench/probes/row_along_early.cu -o rae && ./rae
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kiln_types.cuh"
#include "pointwise.cuh"
#include "row_reduce.cuh"

constexpr long long kRows = 8192, kN = 1000;
constexpr int kThreads = 32, kIters = 4;  // one warp per row; 125 vectors of 8 over 32 lanes

template <int kVariant>
struct Body {
  static constexpr long long kN = ::kN;
  static constexpr bool kStores = true;
  static constexpr int kV = 8;
  static constexpr int kLevels = 2;
  static constexpr unsigned kPassMask = 6u;
  static constexpr int kCombines = 0;
  static constexpr int kExchangeWords = 1;
  const __half* __restrict__ in0;
  const __half* __restrict__ in1;
  const __half* __restrict__ in2;
  __half* __restrict__ out0;
  struct Vec {
    float x0[8];
  };
  struct Row {
    float v0, v1, v2, v3;
    uint4 w[kVariant == 1 ? kIters : 1], b[kVariant == 1 ? kIters : 1];
  };
  __device__ __forceinline__ void BeginRow(long long r, Row& row) const {
    const int t = threadIdx.x % kThreads;
#pragma unroll
    for (int k = 0; k < kIters; ++k) {
      const long long c0 = (static_cast<long long>(k) * kThreads + t) * kV;
      if (c0 >= kN) continue;
      if constexpr (kVariant == 1) {
        row.w[k] = *reinterpret_cast<const uint4*>(in1 + c0);
        row.b[k] = *reinterpret_cast<const uint4*>(in2 + c0);
      } else if constexpr (kVariant == 2) {
        asm volatile("prefetch.global.L1 [%0];" ::"l"(in1 + c0));
        asm volatile("prefetch.global.L1 [%0];" ::"l"(in2 + c0));
      }
    }
  }
  struct Acc1 {
    float a0;
  };
  __device__ __forceinline__ void Init(Acc1& a) const { a.a0 = 0.0f; }
  __device__ __forceinline__ void Merge(Acc1& a, const Acc1& b) const { a.a0 += b.a0; }
  __device__ __forceinline__ void Step(const Row&, Acc1& a, const Vec& x, long long, long long) const {
#pragma unroll
    for (int i = 0; i < 8; ++i) a.a0 += x.x0[i];
  }
  __device__ __forceinline__ void Finish(const Acc1& a, Row& row, long long) const { row.v0 = a.a0 / 1000.0f; }
  struct Acc2 {
    float a1;
  };
  __device__ __forceinline__ void Init(Acc2& a) const { a.a1 = 0.0f; }
  __device__ __forceinline__ void Merge(Acc2& a, const Acc2& b) const { a.a1 += b.a1; }
  __device__ __forceinline__ void Step(const Row& row, Acc2& a, const Vec& x, long long, long long) const {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float d = x.x0[i] - row.v0;
      a.a1 += d * d;
    }
  }
  __device__ __forceinline__ void Finish(const Acc2& a, Row& row, long long) const {
    row.v1 = a.a1 / 1000.0f;
    row.v2 = row.v1 + 1e-5f;
    row.v3 = kiln::Rsqrt(row.v2);
  }
  __device__ __forceinline__ void Store(const Row& row, const Vec& x, long long r, long long c0) const {
    float w[8], b[8], y[8];
    if constexpr (kVariant == 1) {
      const int k = static_cast<int>((c0 / kV - threadIdx.x % kThreads) / kThreads);
      uint4 wr = row.w[0], br = row.b[0];
#pragma unroll
      for (int j = 1; j < kIters; ++j) {
        if (k == j) wr = row.w[j], br = row.b[j];
      }
      const __half* wh = reinterpret_cast<const __half*>(&wr);
      const __half* bh = reinterpret_cast<const __half*>(&br);
#pragma unroll
      for (int i = 0; i < 8; ++i) w[i] = __half2float(wh[i]), b[i] = __half2float(bh[i]);
    } else if constexpr (kVariant != 3) {
      kiln::LoadVec<__half, 8>(in1 + c0, w);
      kiln::LoadVec<__half, 8>(in2 + c0, b);
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float n = (x.x0[i] - row.v0) * row.v3;
      y[i] = kVariant == 3 ? n : n * w[i] + b[i];
    }
    kiln::StoreVec<__half, 8>(out0 + (r * kN + c0), y);
  }
  __device__ __forceinline__ void StoreRow(const Row&, long long) const {}
  __device__ __forceinline__ void Load(long long r, long long c0, Vec& x) const {
    kiln::LoadVec<__half, 8>(in0 + (r * kN + c0), x.x0);
  }
  template <int L>
  struct AccOf {
    using Type = typename kiln::SelectType<L, Acc1, Acc2>::Type;
  };
};

template <int kVariant>
__global__ void __launch_bounds__(128) Norm(const __half* x, const __half* w, const __half* b, __half* y, long long rows) {
  const Body<kVariant> body{x, w, b, y};
  kiln::RowKernel<Body<kVariant>, kiln::RowShape<128, 32, 8, 4, 1, 1>>(body, rows, nullptr);
}

__global__ void Flush(const float4* p, long long n, float* sink) {
  float s = 0;
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s += p[i].x;
  if (s == 12345.0f) *sink = s;
}

template <int kVariant>
float Time(const __half* x, const __half* w, const __half* b, __half* y, const float4* flush, float* sink) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> times;
  for (int rep = 0; rep < 31; ++rep) {
    Flush<<<1024, 256>>>(flush, (256ll << 20) / 16, sink);
    cudaEventRecord(e0);
    Norm<kVariant><<<kRows / 4, 128>>>(x, w, b, y, kRows);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    times.push_back(ms * 1000);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int main() {
  std::vector<__half> hx(kRows * kN), hw(kN), hb(kN);
  unsigned s = 12345;
  auto rnd = [&] { s = s * 1664525u + 1013904223u; return static_cast<float>(s >> 8) / 16777216.0f * 4 - 2; };
  for (auto& v : hx) v = __float2half(rnd());
  for (auto& v : hw) v = __float2half(rnd());
  for (auto& v : hb) v = __float2half(rnd());
  __half *x, *w, *b, *y;
  float4* flush;
  float* sink;
  cudaMalloc(&x, hx.size() * 2);
  cudaMalloc(&w, kN * 2);
  cudaMalloc(&b, kN * 2);
  cudaMalloc(&y, hx.size() * 2);
  cudaMalloc(&flush, 256ll << 20);
  cudaMalloc(&sink, 4);
  cudaMemset(flush, 0, 256ll << 20);
  cudaMemcpy(x, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(w, hw.data(), kN * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(b, hb.data(), kN * 2, cudaMemcpyHostToDevice);
  std::vector<unsigned short> ref(hx.size()), got(hx.size());
  const float t0 = Time<0>(x, w, b, y, flush, sink);
  cudaMemcpy(ref.data(), y, ref.size() * 2, cudaMemcpyDeviceToHost);
  const float t1 = Time<1>(x, w, b, y, flush, sink);
  cudaMemcpy(got.data(), y, got.size() * 2, cudaMemcpyDeviceToHost);
  const bool same1 = ref == got;
  cudaMemset(y, 0xff, hx.size() * 2);
  const float t2 = Time<2>(x, w, b, y, flush, sink);
  cudaMemcpy(got.data(), y, got.size() * 2, cudaMemcpyDeviceToHost);
  const bool same2 = ref == got;
  const float t3 = Time<3>(x, w, b, y, flush, sink);
  std::printf("layer_norm [8192, 1000] f16, one warp a row, L2 flushed, median of 31 (us):\n");
  std::printf("  0 weights loaded in Store      %6.2f\n", t0);
  std::printf("  1 weights loaded in BeginRow   %6.2f  same bits: %s\n", t1, same1 ? "yes" : "NO");
  std::printf("  2 weights prefetched to L1     %6.2f  same bits: %s\n", t2, same2 ? "yes" : "NO");
  std::printf("  3 no weights                   %6.2f\n", t3);
  std::printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
