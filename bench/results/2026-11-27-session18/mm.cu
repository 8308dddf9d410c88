// Session 18 probe: cuBLASLt bf16 row-major D[M,N] = A[M,K] @ W, W stored [K,N] (opN) or [N,K] (opT),
// every heuristic candidate timed (median of 15 after 5 warm-ups).
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#define CK(x) do { auto st_ = (x); if ((int)st_ != 0) { printf("ERR %s:%d %d\n", __FILE__, __LINE__, (int)st_); exit(1);} } while (0)
__global__ void fill(__nv_bfloat16* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995; h ^= h >> 15;
    p[i] = __float2bfloat16(((h & 0xffff) / 65536.0f - 0.5f) * 0.1f);
  }
}
int main() {
  cublasLtHandle_t lt; CK(cublasLtCreate(&lt));
  size_t ws_bytes = 32 << 20; void* ws; CK(cudaMalloc(&ws, ws_bytes));
  struct S { int m, k, n; bool resid; const char* what; };
  std::vector<S> shapes = {{4096, 4096, 6144, false, "qkv"}, {4096, 4096, 4096, true, "o+res"}, {4096, 4096, 28672, false, "gate/up"},
                           {4096, 14336, 4096, true, "down+res"}, {4096, 4096, 14336, false, "gate"}, {4096, 4096, 4096, false, "q"},
                           {4096, 1024, 3072, false, "gpt2 qkv user"}, {4096, 1024, 4096, false, "gpt2 fc1"}};
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (auto s : shapes) {
    __nv_bfloat16 *A, *W, *D, *C;
    CK(cudaMalloc(&A, (size_t)s.m * s.k * 2)); CK(cudaMalloc(&W, (size_t)s.k * s.n * 2));
    CK(cudaMalloc(&D, (size_t)s.m * s.n * 2)); CK(cudaMalloc(&C, (size_t)s.m * s.n * 2));
    fill<<<1024, 256>>>(A, (size_t)s.m * s.k, 1); fill<<<1024, 256>>>(W, (size_t)s.k * s.n, 2); fill<<<1024, 256>>>(C, (size_t)s.m * s.n, 3);
    for (int wt = 0; wt < 2; ++wt) for (int align : {16, 256}) {
      cublasLtMatmulDesc_t desc; CK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      cublasOperation_t ta = wt ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
      CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
      CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
      cublasLtMatrixLayout_t la, lb, ld;
      if (wt) CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, s.k, s.n, s.k)); else CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, s.n, s.k, s.n));
      CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, s.k, s.m, s.k));
      CK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, s.n, s.m, s.n));
      cublasLtMatmulPreference_t pref; CK(cublasLtMatmulPreferenceCreate(&pref));
      uint64_t wsb = ws_bytes; CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof(wsb)));
      if (align == 16) { uint32_t a = 16;
        for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
          CK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &a, sizeof(a))); }
      cublasLtMatmulHeuristicResult_t res[16]; int cnt = 0;
      CK(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 16, res, &cnt));
      float alpha = 1, beta = s.resid ? 1 : 0;
      printf("%-14s M%d K%d N%d W%s align%d: %d candidates:", s.what, s.m, s.k, s.n, wt ? "[N,K] opT" : "[K,N] opN", align, cnt);
      double flops = 2.0 * s.m * s.n * s.k; float first = 0, best = 1e9; int bi = -1;
      for (int i = 0; i < cnt; ++i) {
        if (res[i].state != 0) continue;
        auto run = [&] { return cublasLtMatmul(lt, desc, &alpha, W, la, A, lb, &beta, s.resid ? C : D, ld, D, ld, &res[i].algo, ws, ws_bytes, 0); };
        bool ok = true; for (int w = 0; w < 5; ++w) ok &= run() == CUBLAS_STATUS_SUCCESS;
        if (!ok) { printf(" [%d fail]", i); continue; }
        std::vector<float> t;
        for (int r = 0; r < 15; ++r) { cudaEventRecord(e0); run(); cudaEventRecord(e1); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms * 1e3f); }
        std::sort(t.begin(), t.end()); float us = t[7];
        if (i == 0) first = us; if (us < best) { best = us; bi = i; }
        printf(" %.1f", us);
      }
      printf("\n   first %.1f us (%.0f TF/s), best #%d %.1f us (%.0f TF/s)\n", first, flops / first / 1e6, bi, best, flops / best / 1e6);
      cublasLtMatmulPreferenceDestroy(pref); cublasLtMatrixLayoutDestroy(la); cublasLtMatrixLayoutDestroy(lb); cublasLtMatrixLayoutDestroy(ld); cublasLtMatmulDescDestroy(desc);
    }
    cudaFree(A); cudaFree(W); cudaFree(D); cudaFree(C);
  }
  CK(cudaGetLastError()); return 0;
}
