// Stand-alone sweep of templates/norm_matmul.cuh (session 15): every config in configs.cu on the
// issue-16 decode shapes, checked against a naive f32 reference, launched twice for bitwise
// determinism, and timed with W rotating over copies that exceed L2 (DRAM-bound like a real
// decoding step), beside cuBLAS (x @ W, no norm) and a device-to-device copy in the same process.
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <algorithm>
#include "kiln_types.cuh"
#include "norm_matmul.cuh"

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); exit(1);} } while (0)
constexpr long long K = 4096;
using bf16 = __nv_bfloat16;

template <long long N_>
struct Body {
  using T = bf16;
  static constexpr long long kN = N_, kK = K;
  static constexpr int kReductions = 1;
  const T* x; const T* w; const T* wm; T* out;
  __device__ const T* X() const { return x; }
  __device__ const T* W() const { return wm; }
  __device__ T* Out() const { return out; }
  __device__ float Operand(float v, long long k) const { return v * kiln::ToCompute(w[k]); }
  __device__ void Stats(float v, long long k, float* s) const { s[0] += v * v; }
  __device__ float RowScale(const float* s) const { return kiln::Rsqrt(s[0] / float(K) + 1e-5f); }
  __device__ float Epilogue(float y, long long m, long long n) const { return y; }
};

template <int M, int N, int Tok, int BN, int Wp, int WN, int S, int U, bool WT>
__global__ void __launch_bounds__(32 * Wp) Kern(Body<N> b, long long count, void* scratch) {
  kiln::NormMatmulKernel<Body<N>, kiln::NormMatmulShape<Tok, BN, Wp, WN, S, U, WT, 1, K>>(b, count, scratch);
}

struct Config {
  int m, n, tokens, bn, warps, wn, split, u, tk;
  bool wt;
  int smem;
  long long scratch_bytes;
  void (*run)(const bf16*, const bf16*, const bf16*, bf16*, void*, cudaStream_t);
};

template <int M, int N, int Tok, int BN, int Wp, int WN, int S, int U, bool WT>
void Run(const bf16* x, const bf16* w, const bf16* wm, bf16* out, void* scratch, cudaStream_t s) {
  using Sh = kiln::NormMatmulShape<Tok, BN, Wp, WN, S, U, WT, 1, K>;
  static bool init = false;
  if (!init) {
    CK(cudaFuncSetAttribute(Kern<M, N, Tok, BN, Wp, WN, S, U, WT>, cudaFuncAttributeMaxDynamicSharedMemorySize, Sh::kSmemBytes));
    init = true;
  }
  dim3 grid((M + Tok - 1) / Tok, (N + BN - 1) / BN, S);
  Kern<M, N, Tok, BN, Wp, WN, S, U, WT><<<grid, 32 * Wp, Sh::kSmemBytes, s>>>(Body<N>{x, w, wm, out}, M, scratch);
}

template <int M, int N, int Tok, int BN, int Wp, int WN, int S, int U, bool WT>
Config MakeConfig() {
  using Sh = kiln::NormMatmulShape<Tok, BN, Wp, WN, S, U, WT, 1, K>;
  const long long items = ((M + Tok - 1) / Tok) * ((N + BN - 1) / BN);
  return Config{M, N, Tok, BN, Wp, WN, S, U, 0, WT, Sh::kSmemBytes, S > 1 ? items * Sh::kScratchItemBytes : 0,
                &Run<M, N, Tok, BN, Wp, WN, S, U, WT>};
}

std::vector<Config> AllConfigs();

