// Standalone check of the sm_90a attention kernel against the mma.sync one and a naive f32 reference.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cmath>
#include "attention_sm90.cuh"

template <int D_, int S_, int T_, bool C_, class TT = __nv_bfloat16>
struct Body {
  using T = TT;
  static constexpr int kD = D_, kE = D_, kS = S_, kT = T_, kG = 1;
  static constexpr bool kCausal = C_, kHasMask = false;
  static constexpr float kScaleLog2 = 1.4426950408889634f / 11.313708498984761f;
  static constexpr long long kQRow = D_, kKRow = D_, kVRow = D_, kORow = D_;
  const T *q, *k, *v; T* o;
  __device__ const T* Q(long long b) const { return q + b * S_ * D_; }
  __device__ const T* K(long long b) const { return k + b * T_ * D_; }
  __device__ const T* V(long long b) const { return v + b * T_ * D_; }
  __device__ T* O(long long b) const { return o + b * S_ * D_; }
  __device__ float Mask(long long, int, int) const { return 0; }
};

template <class B, class Sh, int MB> __global__ void __launch_bounds__(Sh::kThreads, MB) k90(B body, long long count) { kiln::AttentionKernelSm90<B, Sh>(body, count, nullptr); }
template <class B, class Sh> __global__ void __launch_bounds__(Sh::kThreads) k80(B body, long long count) { kiln::AttentionKernel<B, Sh>(body, count, nullptr); }

template <class B>
__global__ void ref(B body, float* out, int count) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= count * B::kS) return;
  int b = row / B::kS, i = row % B::kS;
  const auto* q = body.Q(b) + i * B::kD;
  float m = -INFINITY, l = 0; float acc[B::kD];
  for (int e = 0; e < B::kD; ++e) acc[e] = 0;
  for (int j = 0; j < B::kT; ++j) {
    if (B::kCausal && j > i) break;
    float s = 0; const auto* kk = body.K(b) + j * B::kD;
    for (int e = 0; e < B::kD; ++e) s += float(q[e]) * float(kk[e]);
    s *= B::kScaleLog2;
    float nm = fmaxf(m, s); float c = exp2f(m - nm); float p = exp2f(s - nm);
    l = l * c + p; const auto* vv = body.V(b) + j * B::kD;
    for (int e = 0; e < B::kD; ++e) acc[e] = acc[e] * c + p * float(vv[e]);
    m = nm;
  }
  for (int e = 0; e < B::kD; ++e) out[(long long)row * B::kD + e] = acc[e] / l;
}

__global__ void fill(__nv_bfloat16* p, long long n, unsigned seed) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) { unsigned x = (unsigned)i * 2654435761u ^ seed; x ^= x >> 13; x *= 0x5bd1e995; x ^= x >> 15; p[i] = __float2bfloat16((x % 2001) / 1000.0f - 1.0f); }
}

template <class B, class Sh, bool k90path, int MB = 1>
void launch(B body, int count, cudaStream_t st = 0) {
  constexpr int kDP = k90path ? kiln::attn::RoundUp64(B::kD) : kiln::attn::RoundUp16(B::kD);
  int smem = k90path ? 2 * (Sh::kBlockM * kDP + Sh::kStages * Sh::kBlockN * 2 * kDP) + 1024
                     : 2 * (Sh::kBlockM * (kDP + 8) + Sh::kStages * Sh::kBlockN * 2 * (kDP + 8));
  dim3 grid(count, (B::kS + Sh::kBlockM - 1) / Sh::kBlockM, 1);
  if constexpr (k90path) {
    cudaFuncSetAttribute(k90<B, Sh, MB>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    k90<B, Sh, MB><<<grid, Sh::kThreads, smem, st>>>(body, count);
  } else {
    cudaFuncSetAttribute(k80<B, Sh>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    k80<B, Sh><<<grid, Sh::kThreads, smem, st>>>(body, count);
  }
}

template <class B, class Sh, bool k90path, int MB = 1>
void run(const char* name, int count, bool check) {
  using T = typename B::T;
  long long nq = (long long)count * B::kS * B::kD, nk = (long long)count * B::kT * B::kD;
  T *q, *k, *v, *o; float* r;
  cudaMalloc(&q, nq * 2); cudaMalloc(&k, nk * 2); cudaMalloc(&v, nk * 2); cudaMalloc(&o, nq * 2);
  fill<<<(nq + 255) / 256, 256>>>(q, nq, 1); fill<<<(nk + 255) / 256, 256>>>(k, nk, 2); fill<<<(nk + 255) / 256, 256>>>(v, nk, 3);
  cudaMemset(o, 0xff, nq * 2);
  B body{q, k, v, o};
  launch<B, Sh, k90path, MB>(body, count);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("%s: error %s\n", name, cudaGetErrorString(e)); exit(1); }
  double max_err = 0;
  if (check) {
    cudaMalloc(&r, nq * 4);
    ref<B><<<(count * B::kS + 127) / 128, 128>>>(body, r, count);
    cudaDeviceSynchronize();
    std::vector<float> hr(nq); std::vector<T> ho(nq);
    cudaMemcpy(hr.data(), r, nq * 4, cudaMemcpyDeviceToHost); cudaMemcpy(ho.data(), o, nq * 2, cudaMemcpyDeviceToHost);
    for (long long i = 0; i < nq; ++i) { double d = fabs(double(float(ho[i])) - hr[i]); if (!(d <= max_err)) max_err = d; }
    cudaFree(r);
  }
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) launch<B, Sh, k90path, MB>(body, count);
  cudaEventRecord(a);
  const int reps = 10;
  for (int i = 0; i < reps; ++i) launch<B, Sh, k90path, MB>(body, count);
  cudaEventRecord(b); cudaEventSynchronize(b);
  float ms; cudaEventElapsedTime(&ms, a, b); ms /= reps;
  double flops = 4.0 * count * B::kS * (double)B::kT * B::kD * (B::kCausal ? 0.5 : 1.0);
  printf("%-40s max_err %.4g  %.1f us  %.0f TFLOP/s\n", name, max_err, ms * 1e3, flops / ms / 1e9);
  cudaFree(q); cudaFree(k); cudaFree(v); cudaFree(o);
}

using Sh128 = kiln::AttentionShape<128, 128, 8, 2, false, 1>;
using Sh128n64 = kiln::AttentionShape<128, 64, 8, 2, false, 1>;
using Sh192 = kiln::AttentionShape<192, 128, 12, 2, false, 1>;
using Sh192n64 = kiln::AttentionShape<192, 64, 12, 2, false, 1>;
using Sh128s3 = kiln::AttentionShape<128, 128, 8, 3, false, 1>;
using Sh80 = kiln::AttentionShape<128, 32, 4, 2, true, 1>;

template <int M, int N, int W, int St> using Sh = kiln::AttentionShape<M, N, W, St, false, 1>;
int main() {
  run<Body<128, 1000, 1000, false>, Sh<128, 128, 8, 3>, true>("sm90 D128 S1000 check s3", 4, true);
  run<Body<128, 1000, 1000, true>, Sh<128, 64, 8, 3>, true>("sm90 D128 S1000 causal check s3", 4, true);
  run<Body<64, 777, 777, true>, Sh<192, 128, 12, 3>, true>("sm90 D64 S777 causal check s3", 3, true);
  run<Body<96, 300, 300, false>, Sh<128, 64, 8, 3>, true>("sm90 D96 S300 check s3", 3, true);
  run<Body<256, 500, 500, true>, Sh<128, 64, 8, 2>, true>("sm90 D256 S500 causal check", 2, true);
  run<Body<128, 4096, 4096, false>, Sh<192, 128, 12, 2>, true>("sm90 D128 S4096 192x128 s2", 256, false);
  run<Body<128, 4096, 4096, false>, Sh<128, 128, 8, 3>, true>("sm90 D128 S4096 128x128 s3", 256, false);
  run<Body<128, 4096, 4096, false>, Sh<128, 64, 8, 3>, true>("sm90 D128 S4096 128x64 s3", 256, false);
  run<Body<128, 4096, 4096, false>, Sh<192, 64, 12, 3>, true>("sm90 D128 S4096 192x64 s3", 256, false);
  run<Body<128, 4096, 4096, true>, Sh<128, 128, 8, 3>, true>("sm90 D128 S4096 causal 128x128 s3", 256, false);
  run<Body<128, 4096, 4096, true>, Sh<192, 64, 12, 3>, true>("sm90 D128 S4096 causal 192x64 s3", 256, false);
  run<Body<128, 4096, 4096, true>, Sh<128, 64, 8, 3>, true>("sm90 D128 S4096 causal 128x64 s3", 256, false);
  run<Body<64, 4096, 4096, false>, Sh<128, 128, 8, 3>, true>("sm90 D64 S4096 128x128 s3", 256, false);
  run<Body<64, 4096, 4096, false>, Sh<192, 128, 12, 3>, true>("sm90 D64 S4096 192x128 s3", 256, false);
  run<Body<64, 4096, 4096, false>, Sh<128, 64, 8, 3>, true, 2>("sm90 D64 S4096 128x64 s3 mb2", 256, false);
  run<Body<64, 4096, 4096, false>, Sh<192, 64, 12, 3>, true>("sm90 D64 S4096 192x64 s3", 256, false);
  return 0;
}
