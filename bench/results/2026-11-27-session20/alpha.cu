// Feasibility: cuBLASLt per-row (token) alpha vector for rms_norm(x) @ W = diag(rstd) (x @ W').
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cmath>
#define CK(x) do { auto e = (x); if (e != cudaSuccess) { printf("cuda %s line %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
#define CB(x) do { auto e = (x); if (e != CUBLAS_STATUS_SUCCESS) { printf("cublas %d line %d\n", (int)e, __LINE__); return -1.0;} } while (0)
cublasLtHandle_t h; void* ws; size_t wsb = 32 << 20;
__global__ void fill(__nv_bfloat16* p, size_t n, unsigned s, float scale) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned v = (unsigned)(i * 2654435761u) ^ s; v ^= v >> 13; v *= 0x5bd1e995; v ^= v >> 15;
    p[i] = __float2bfloat16(((v & 0xffff) / 65535.0f - 0.5f) * scale);
  }
}
struct Lay { cublasLtMatrixLayout_t l; };
static cublasLtMatrixLayout_t mk(int64_t rows, int64_t cols, int64_t ld, bool rowmajor) {
  cublasLtMatrixLayout_t l; cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, rows, cols, ld);
  if (rowmajor) { cublasLtOrder_t o = CUBLASLT_ORDER_ROW; cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &o, sizeof(o)); }
  return l;
}
// variant 0: kiln today (m = N, n = M, col-major), host alpha 1
// variant 1: all ORDER_ROW: A=x [M,K], B=W [K,N], D [M,N]; alpha vector [M]
// variant 2: A = x as col-major [K,M] op T, B = W as col-major [N,K] op T, D ORDER_ROW [M,N]; alpha vector
// variant 3: as 1 but host alpha (is ORDER_ROW itself slow?)
double run(int var, int M, int N, int K, __nv_bfloat16* x, __nv_bfloat16* const* W, int nW, __nv_bfloat16* D, float* alpha_vec, int reps) {
  cublasLtMatmulDesc_t desc; CB(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtMatrixLayout_t la, lb, ld;
  bool vec = var == 1 || var == 2;
  if (vec) { cublasLtPointerMode_t pm = CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO; CB(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof(pm))); }
  if (var == 0) { la = mk(N, K, N, false); lb = mk(K, M, K, false); ld = mk(N, M, N, false); }
  else if (var == 1 || var == 3) { la = mk(M, K, K, true); lb = mk(K, N, N, true); ld = mk(M, N, N, true); }
  else { cublasOperation_t t = CUBLAS_OP_T;
    CB(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)));
    CB(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &t, sizeof(t)));
    la = mk(K, M, K, false); lb = mk(N, K, N, false); ld = mk(M, N, N, true); }
  cublasLtMatmulPreference_t pref; cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof(wsb));
  cublasLtMatmulHeuristicResult_t res[8]; int cnt = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, ld, ld, pref, 8, res, &cnt);
  if (st != CUBLAS_STATUS_SUCCESS || cnt == 0) { printf("  var %d: no algo (status %d, %d)\n", var, (int)st, cnt); return -1; }
  float one = 1.f, zero = 0.f;
  const void* a = vec ? (const void*)alpha_vec : (const void*)&one;
  auto call = [&](int i) {
    const void* A = var == 0 ? (const void*)W[i % nW] : (const void*)x;
    const void* B = var == 0 ? (const void*)x : (const void*)W[i % nW];
    return cublasLtMatmul(h, desc, a, A, la, B, lb, &zero, D, ld, D, ld, &res[0].algo, ws, wsb, 0);
  };
  CB(call(0)); CK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int i = 0; i < 3; ++i) call(i);
  cudaEventRecord(e0); for (int i = 0; i < reps; ++i) call(i); cudaEventRecord(e1); CK(cudaEventSynchronize(e1));
  float ms; cudaEventElapsedTime(&ms, e0, e1);
  return 1000.0 * ms / reps;
}
int main() {
  cublasLtCreate(&h); CK(cudaMalloc(&ws, wsb));
  const int K = 4096; int Ms[] = {1, 16, 64, 4096}; int Ns[] = {4096, 14336};
  for (int N : Ns) {
    int nW = 6; __nv_bfloat16* W[6];
    for (int i = 0; i < nW; ++i) { CK(cudaMalloc(&W[i], (size_t)K * N * 2)); fill<<<1024, 256>>>(W[i], (size_t)K * N, 7 + i, 0.05f); }
    for (int M : Ms) {
      __nv_bfloat16 *x, *D0, *D1; float* av;
      CK(cudaMalloc(&x, (size_t)M * K * 2)); CK(cudaMalloc(&D0, (size_t)M * N * 2)); CK(cudaMalloc(&D1, (size_t)M * N * 2)); CK(cudaMalloc(&av, M * 4));
      fill<<<1024, 256>>>(x, (size_t)M * K, 99, 2.0f);
      std::vector<float> ah(M); for (int i = 0; i < M; ++i) ah[i] = 0.5f + (i % 7) * 0.25f;
      CK(cudaMemcpy(av, ah.data(), M * 4, cudaMemcpyHostToDevice));
      int reps = M == 4096 ? 20 : 100;
      double t0 = run(0, M, N, K, x, W, nW, D0, av, reps);
      std::vector<__nv_bfloat16> h0((size_t)M * N), h1((size_t)M * N);
      CK(cudaMemcpy(h0.data(), D0, h0.size() * 2, cudaMemcpyDeviceToHost));  // D0 = x @ W[last]
      for (int var = 1; var <= 3; ++var) {
        CK(cudaMemset(D1, 0xff, (size_t)M * N * 2));
        double t = run(var, M, N, K, x, W, nW, D1, av, reps);
        if (t < 0) continue;
        // D1 was written by call index (reps-1)+3 ... recompute with same W as D0: rerun single call is simpler:
        double maxerr = 0, maxref = 0;
        CK(cudaMemcpy(h1.data(), D1, h1.size() * 2, cudaMemcpyDeviceToHost));
        for (int m = 0; m < M; ++m) for (int n = 0; n < N; ++n) {
          double ref = (double)__bfloat162float(h0[(size_t)m * N + n]) * (var == 3 ? 1.0 : ah[m]);
          double d = fabs(ref - (double)__bfloat162float(h1[(size_t)m * N + n]));
          maxerr = fmax(maxerr, d); maxref = fmax(maxref, fabs(ref));
        }
        printf("M %5d N %5d K %d: var0 %8.2f us | var%d %8.2f us (x%.3f)  err/max %.2e\n", M, N, K, t0, var, t, t / t0, maxerr / maxref);
      }
      cudaFree(x); cudaFree(D0); cudaFree(D1); cudaFree(av);
    }
    for (int i = 0; i < nW; ++i) cudaFree(W[i]);
  }
  return 0;
}
