// Session 29 probe: decoding-size bf16 products (M 1 to 64 token rows) through kiln's cuBLASLt
// mapping (cuBLASLt A = our W, col-major [N, K]; B = x, [K, M]; D [N, M]; compute 32F, 32 MiB
// workspace, 16-byte alignment) against cublasGemmEx (the legacy entry torch's mm without a
// bias takes). Each call is timed in a CUDA graph of 20 calls (captured once), the median
// replay of 50 after 5 warm-up, per call, as bench/norm_linear.py times torch and kiln;
// cuBLASLt's first heuristic choice and the best of its 16 candidates. nvcc -O2 -std=c++17 lt_decode.cu -lcublasLt -lcublas -o lt_decode
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#define CK(x) do { auto s_ = (x); if ((int)s_ != 0) { printf("error %d at %s:%d\n", (int)s_, __FILE__, __LINE__); return 1; } } while (0)

static float PerCall(cudaStream_t st, const std::function<bool()>& call) {
  for (int i = 0; i < 3; ++i) if (!call()) return 1e30f;
  cudaStreamSynchronize(st);
  cudaGraph_t graph;
  if (cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return 1e30f;
  bool ok = true;
  for (int i = 0; i < 20; ++i) ok = ok && call();
  if (cudaStreamEndCapture(st, &graph) != cudaSuccess || !ok) return 1e30f;
  cudaGraphExec_t exec;
  if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) return 1e30f;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> t;
  for (int r = 0; r < 55; ++r) {
    cudaEventRecord(e0, st);
    cudaGraphLaunch(exec, st);
    cudaEventRecord(e1, st);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (r >= 5) t.push_back(ms * 1000 / 20);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main() {
  const int shapes[][3] = {{1, 1024, 1024}, {16, 1024, 1024}, {1, 3072, 1024}, {16, 3072, 1024},
                           {1, 4096, 4096}, {16, 4096, 4096}, {64, 4096, 4096}, {1, 14336, 4096}};
  cublasLtHandle_t h;
  CK(cublasLtCreate(&h));
  cublasHandle_t hb;
  CK(cublasCreate(&hb));
  size_t ws_bytes = 32 << 20;
  void* ws;
  CK(cudaMalloc(&ws, ws_bytes));
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  CK(cublasSetStream(hb, st));
  CK(cublasSetWorkspace(hb, ws, ws_bytes));
  for (const auto& s : shapes) {
    const int m = s[0], n = s[1], k = s[2];
    void *a, *b, *d;
    CK(cudaMalloc(&a, (size_t)m * k * 2));
    CK(cudaMalloc(&b, (size_t)k * n * 2));
    CK(cudaMalloc(&d, (size_t)m * n * 2));
    cudaMemset(a, 0x3c, (size_t)m * k * 2);
    cudaMemset(b, 0x3c, (size_t)k * n * 2);
    cublasLtMatmulDesc_t desc;
    CK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtMatrixLayout_t la, lb, ld;
    CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, n, k, n));
    CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, k, m, k));
    CK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, n, m, n));
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
      times.push_back(PerCall(st, [&] {
        return cublasLtMatmul(h, desc, &alpha, b, la, a, lb, &beta, d, ld, d, ld, &res[i].algo, ws, ws_bytes, st) == 0;
      }));
    }
    const float gemm_ex = PerCall(st, [&] {
      return cublasGemmEx(hb, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, CUDA_R_16BF, n, a, CUDA_R_16BF, k, &beta, d,
                          CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == 0;
    });
    const int best = std::min_element(times.begin(), times.end()) - times.begin();
    printf("M%5d N%6d K%5d: cublasLt first %7.2f us, best #%d %7.2f us (of %d); cublasGemmEx %7.2f us; W at %6.0f GB/s (GemmEx)\n",
           m, n, k, times[0], best, times[best], count, gemm_ex, 2.0 * n * k / gemm_ex / 1e3);
    cudaFree(a); cudaFree(b); cudaFree(d);
  }
  return 0;
}
