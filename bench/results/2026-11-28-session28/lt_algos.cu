// Session 28 probe: does timing cuBLASLt's heuristic candidates beat its first choice?
// For each (M, N, K, dtype) of issue 13's models, kiln's row-major mapping (cuBLASLt A = our B,
// col-major [N, K]; B = our A, [K, M]; D [N, M]), compute 32F, 32 MiB workspace, 16-byte
// alignment: asks for 16 candidates, times each (median of 15 after 3 warm-up) and prints the
// first's time, the best's and its rank. nvcc -O2 -std=c++17 lt_algos.cu -lcublasLt -o lt_algos
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>

#define CK(x) do { auto s_ = (x); if ((int)s_ != 0) { printf("error %d at %s:%d\n", (int)s_, __FILE__, __LINE__); return 1; } } while (0)

struct Shape { const char* name; int m, n, k; cudaDataType_t t; };

int main() {
  const Shape shapes[] = {
      {"gpt2 f32 qkv", 4096, 3072, 1024, CUDA_R_32F},  {"gpt2 f32 o", 4096, 1024, 1024, CUDA_R_32F},
      {"gpt2 f32 fc1", 4096, 4096, 1024, CUDA_R_32F},  {"gpt2 f32 fc2", 4096, 1024, 4096, CUDA_R_32F},
      {"ce f32 head", 4096, 32000, 1024, CUDA_R_32F},  {"gpt2 bf16 qkv", 4096, 3072, 1024, CUDA_R_16BF},
      {"gpt2 bf16 fc2", 4096, 1024, 4096, CUDA_R_16BF}, {"gqa bf16 qkv", 4096, 6144, 4096, CUDA_R_16BF},
      {"gqa bf16 o", 4096, 4096, 4096, CUDA_R_16BF},    {"gqa bf16 gate_up", 4096, 28672, 4096, CUDA_R_16BF},
      {"gqa bf16 down", 4096, 4096, 14336, CUDA_R_16BF}, {"tb bf16 qkv", 2048, 3072, 1024, CUDA_R_16BF},
      {"tb bf16 fc2", 2048, 1024, 4096, CUDA_R_16BF},   {"decode bf16", 16, 4096, 4096, CUDA_R_16BF},
  };
  cublasLtHandle_t h;
  CK(cublasLtCreate(&h));
  size_t ws_bytes = 32 << 20;
  void* ws;
  CK(cudaMalloc(&ws, ws_bytes));
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (const Shape& s : shapes) {
    size_t es = s.t == CUDA_R_32F ? 4 : 2;
    void *a, *b, *d;
    CK(cudaMalloc(&a, (size_t)s.m * s.k * es));
    CK(cudaMalloc(&b, (size_t)s.k * s.n * es));
    CK(cudaMalloc(&d, (size_t)s.m * s.n * es));
    cudaMemset(a, 0x3c, (size_t)s.m * s.k * es);  // small non-zero values
    cudaMemset(b, 0x3c, (size_t)s.k * s.n * es);
    cublasLtMatmulDesc_t desc;
    CK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t op = CUBLAS_OP_N;
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op, sizeof(op)));
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op, sizeof(op)));
    cublasLtMatrixLayout_t la, lb, ld;
    CK(cublasLtMatrixLayoutCreate(&la, s.t, s.n, s.k, s.n));
    CK(cublasLtMatrixLayoutCreate(&lb, s.t, s.k, s.m, s.k));
    CK(cublasLtMatrixLayoutCreate(&ld, s.t, s.n, s.m, s.n));
    cublasLtMatmulPreference_t pref;
    CK(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t mw = ws_bytes;
    CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &mw, sizeof(mw)));
    uint32_t al = 16;
    for (auto at : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      CK(cublasLtMatmulPreferenceSetAttribute(pref, at, &al, sizeof(al)));
    cublasLtMatmulHeuristicResult_t res[16];
    int count = 0;
    CK(cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, ld, ld, pref, 16, res, &count));
    float alpha = 1, beta = 0;
    std::vector<float> times;
    for (int i = 0; i < count; ++i) {
      std::vector<float> t;
      bool ok = true;
      for (int r = 0; r < 18 && ok; ++r) {
        cudaEventRecord(e0, st);
        ok = cublasLtMatmul(h, desc, &alpha, b, la, a, lb, &beta, d, ld, d, ld, &res[i].algo, ws, ws_bytes, st) == 0;
        cudaEventRecord(e1, st);
        cudaEventSynchronize(e1);
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (r >= 3) t.push_back(ms * 1000);
      }
      std::sort(t.begin(), t.end());
      times.push_back(ok ? t[t.size() / 2] : 1e30f);
    }
    int best = std::min_element(times.begin(), times.end()) - times.begin();
    double flops = 2.0 * s.m * s.n * s.k;
    printf("%-18s M%6d N%6d K%6d: %2d candidates; first %8.1f us (%5.1f TFLOP/s), best #%d %8.1f us (%.3f of first); all:",
           s.name, s.m, s.n, s.k, count, times[0], flops / times[0] / 1e6, best, times[best], times[best] / times[0]);
    for (float x : times) printf(" %.1f", x);
    printf("\n");
    cudaFree(a); cudaFree(b); cudaFree(d);
  }
  return 0;
}
