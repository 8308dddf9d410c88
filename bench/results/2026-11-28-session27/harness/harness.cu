// Stand-alone A/B of the wgmma attention kernels: cp.async (attention_sm90.cuh) vs TMA + producer.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cmath>
#include "kiln_types.cuh"
#include "attention_sm90_tma.cuh"

constexpr int B = 1, HQ = 32, HKV = 8, S = 4096, D = 128;
template <bool kC>
struct BodyT {
  using T = __nv_bfloat16;
  static constexpr int kD = 128, kE = 128, kS = S, kT = S, kG = 1;
  static constexpr bool kCausal = kC, kHasMask = false, kHasLse = false;
  static constexpr float kScaleLog2 = 0.127517431f;
  static constexpr long long kSection = 16;
  static constexpr long long kQRow = 128, kKRow = 128, kVRow = 128, kORow = 128;
  static constexpr int kKRank = 3, kVRank = 3;
  const T* __restrict__ in0; const T* __restrict__ in1; const T* __restrict__ in2; T* __restrict__ out0;
  __device__ __forceinline__ const T* Q(long long b) const { return in2 + b * 524288LL; }
  __device__ __forceinline__ const T* K(long long b) const { return in0 + (b / 4LL) * 524288LL; }
  __device__ __forceinline__ const T* V(long long b) const { return in1 + (b / 4LL) * 524288LL; }
  __device__ __forceinline__ T* O(long long b) const { return out0 + b * 524288LL; }
  __device__ __forceinline__ void KCoords(long long b, int (&c)[5]) const { c[2] = static_cast<int>(b / 4); }
  __device__ __forceinline__ void VCoords(long long b, int (&c)[5]) const { c[2] = static_cast<int>(b / 4); }
  static constexpr bool kDropout = false;
};
using T = __nv_bfloat16;

#define OLD(NAME, C, BM, BN, W, ST) \
extern "C" __global__ void __launch_bounds__(W * 32) NAME(const T* a, const T* b, const T* c, T* o, long long count) { \
  const BodyT<C> body{a, b, c, o}; kiln::AttentionKernelSm90<BodyT<C>, kiln::AttentionShape<BM, BN, W, ST, false, 1>>(body, count, nullptr); }
#define NEW(NAME, C, BM, BN, ST) NEWP(NAME, C, BM, BN, ST, true) NEWP(NAME##_np, C, BM, BN, ST, false)
#define NEWP(NAME, C, BM, BN, ST, PP) \
extern "C" __global__ void __launch_bounds__(BM * 2 + 128, 1) NAME(const T* a, const T* b, const T* c, T* o, long long count, \
    const __grid_constant__ kiln::tma::TensorMap km, const __grid_constant__ kiln::tma::TensorMap vm) { \
  const BodyT<C> body{a, b, c, o}; kiln::AttentionKernelSm90Tma<BodyT<C>, kiln::AttentionShape<BM, BN, BM / 16, ST, false, 1>, PP>(body, count, &km, &vm); }

OLD(old_c_192x64_3, true, 192, 64, 12, 3)
OLD(old_c_128x128_3, true, 128, 128, 8, 3)
OLD(old_n_128x128_3, false, 128, 128, 8, 3)
NEW(new_c_128x128_2, true, 128, 128, 2)
NEW(new_c_128x128_3, true, 128, 128, 3)
NEW(new_c_128x64_3, true, 128, 64, 3)
NEW(new_c_128x64_4, true, 128, 64, 4)
NEW(new_c_192x64_3, true, 192, 64, 3)
NEW(new_c_192x64_4, true, 192, 64, 4)
NEW(new_n_128x128_2, false, 128, 128, 2)
NEW(new_n_128x128_3, false, 128, 128, 3)
NEW(new_n_192x64_3, false, 192, 64, 3)

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

static kiln::tma::TensorMap Encode(const T* base, int bn) {
  CUtensorMap m;
  cuuint64_t dims[3] = {D, S, HKV};
  cuuint64_t strides[2] = {D * 2, (cuuint64_t)S * D * 2};
  cuuint32_t box[3] = {64, (cuuint32_t)bn, 1};
  cuuint32_t es[3] = {1, 1, 1};
  CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, (void*)base, dims, strides, box, es,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) { printf("encode failed %d\n", (int)r); exit(1); }
  kiln::tma::TensorMap t; memcpy(&t, &m, sizeof t); return t;
}

int main() {
  size_t nq = (size_t)B * HQ * S * D, nk = (size_t)B * HKV * S * D;
  std::vector<T> hq(nq), hk(nk), hv(nk);
  srand(1);
  for (auto& x : hq) x = __float2bfloat16((rand() / (float)RAND_MAX - 0.5f) * 2);
  for (auto& x : hk) x = __float2bfloat16((rand() / (float)RAND_MAX - 0.5f) * 2);
  for (auto& x : hv) x = __float2bfloat16((rand() / (float)RAND_MAX - 0.5f) * 2);
  T *q, *k, *v, *o_ref, *o;
  CK(cudaMalloc(&q, nq * 2)); CK(cudaMalloc(&k, nk * 2)); CK(cudaMalloc(&v, nk * 2));
  CK(cudaMalloc(&o_ref, nq * 2)); CK(cudaMalloc(&o, nq * 2));
  CK(cudaMemcpy(q, hq.data(), nq * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(k, hk.data(), nk * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(v, hv.data(), nk * 2, cudaMemcpyHostToDevice));
  std::vector<T> ref(nq), got(nq);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  const long long count = B * HQ;
  auto smem = [](int bm, int bn, int st) { return 2 * (bm * 128 + st * bn * 256) + 1024; };
  auto time = [&](auto launch) {
    for (int i = 0; i < 3; ++i) launch();
    CK(cudaDeviceSynchronize());
    float best = 1e9;
    for (int r = 0; r < 5; ++r) {
      cudaEventRecord(e0);
      for (int i = 0; i < 10; ++i) launch();
      cudaEventRecord(e1); CK(cudaEventSynchronize(e1));
      float ms; cudaEventElapsedTime(&ms, e0, e1); best = fminf(best, ms * 100.0f);
    }
    return best;
  };
  const double flops_c = 4.0 * B * HQ * (double)S * S * D / 2;
  for (int causal = 1; causal >= 0; --causal) {
    // reference: old 128x128 3 stages
    auto ref_fn = causal ? (void*)old_c_128x128_3 : (void*)old_n_128x128_3;
    int sm = smem(128, 128, 3);
    CK(cudaFuncSetAttribute(ref_fn, cudaFuncAttributeMaxDynamicSharedMemorySize, sm));
    auto launch_ref = [&]() {
      void* args[] = {&k, &v, &q, &o_ref, (void*)&count};
      CK(cudaLaunchKernel(ref_fn, dim3(count, S / 128, 1), dim3(256), args, sm, 0));
    };
    CK(cudaMemset(o_ref, 0xff, nq * 2));
    launch_ref(); CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(ref.data(), o_ref, nq * 2, cudaMemcpyDeviceToHost));
    const double fl = causal ? flops_c : 2 * flops_c;
    float tr = time(launch_ref);
    printf("%s old 128x128x3: %.1f us (%.0f TFLOP/s)\n", causal ? "causal" : "full", tr, fl / tr / 1e6);
    if (causal) {
      int sm2 = smem(192, 64, 3);
      CK(cudaFuncSetAttribute((void*)old_c_192x64_3, cudaFuncAttributeMaxDynamicSharedMemorySize, sm2));
      float t2 = time([&]() {
        void* args[] = {&k, &v, &q, &o, (void*)&count};
        CK(cudaLaunchKernel((void*)old_c_192x64_3, dim3(count, (S + 191) / 192, 1), dim3(384), args, sm2, 0));
      });
      printf("causal old 192x64x3: %.1f us (%.0f TFLOP/s)\n", t2, fl / t2 / 1e6);
    }
    struct V { const char* name; void* fn; int bm, bn, st; bool c; };
    V vs[] = {{"nopp 128x128x3", (void*)new_c_128x128_3_np, 128, 128, 3, true}, {"nopp 192x64x3", (void*)new_c_192x64_3_np, 192, 64, 3, true},
              {"nopp 128x128x3", (void*)new_n_128x128_3_np, 128, 128, 3, false},{"new 128x128x2", (void*)new_c_128x128_2, 128, 128, 2, true}, {"new 128x128x3", (void*)new_c_128x128_3, 128, 128, 3, true},
              {"new 128x64x3", (void*)new_c_128x64_3, 128, 64, 3, true}, {"new 128x64x4", (void*)new_c_128x64_4, 128, 64, 4, true},
              {"new 192x64x3", (void*)new_c_192x64_3, 192, 64, 3, true}, {"new 192x64x4", (void*)new_c_192x64_4, 192, 64, 4, true},
              {"new 128x128x2", (void*)new_n_128x128_2, 128, 128, 2, false}, {"new 128x128x3", (void*)new_n_128x128_3, 128, 128, 3, false},
              {"new 192x64x3", (void*)new_n_192x64_3, 192, 64, 3, false}};
    for (const V& x : vs) {
      if (x.c != (causal != 0)) continue;
      kiln::tma::TensorMap km = Encode(k, x.bn), vm = Encode(v, x.bn);
      int sm3 = smem(x.bm, x.bn, x.st);
      cudaFuncAttributes at; CK(cudaFuncGetAttributes(&at, x.fn));
      CK(cudaFuncSetAttribute(x.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, sm3));
      auto launch = [&]() {
        void* args[] = {&k, &v, &q, &o, (void*)&count, &km, &vm};
        CK(cudaLaunchKernel(x.fn, dim3(count, (S + x.bm - 1) / x.bm, 1), dim3(x.bm * 2 + 128), args, sm3, 0));
      };
      CK(cudaMemset(o, 0xff, nq * 2));
      launch(); CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(got.data(), o, nq * 2, cudaMemcpyDeviceToHost));
      double maxd = 0, maxr = 0; size_t bad = 0;
      for (size_t i = 0; i < nq; ++i) {
        float a = __bfloat162float(ref[i]), b2 = __bfloat162float(got[i]);
        if (!(fabs(a - b2) <= 2e-2)) ++bad;
        maxd = fmax(maxd, fabs(a - b2)); maxr = fmax(maxr, fabs(a));
      }
      float tn = time(launch);
      printf("%s %s: %.1f us (%.0f TFLOP/s) regs %d local %zu | max diff %.3g of %.3g, bad %zu\n", causal ? "causal" : "full",
             x.name, tn, fl / tn / 1e6, at.numRegs, (size_t)at.localSizeBytes, maxd, maxr, bad);
    }
  }
  return 0;
}
