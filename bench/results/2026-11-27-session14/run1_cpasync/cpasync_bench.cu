// Micro-benchmark: does the shared-memory destination layout of 16-byte cp.async change the L2
// sectors a request? 256 blocks x 128 threads stream 4 GiB (K-like rows of 256 B) through a
// 3-stage ring of 64-row tiles, as kiln's decode kernel does.
#include <cstdio>
#include <cuda_runtime.h>
constexpr int kRows = 64, kRowBytes = 256, kStages = 3, kThreads = 128;
__device__ __forceinline__ void CpAsync16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
template <int kMode>
__device__ __forceinline__ int Dst(int r, int chunk) {
  if (kMode == 0) return r * 256 + chunk * 16;                          // unpadded
  if (kMode == 1) return r * 272 + chunk * 16;                          // padded 16 B (kiln today)
  if (kMode == 2) return r * 256 + ((chunk ^ (r & 7)) * 16);            // XOR swizzle (8 x 16 B)
  if (kMode == 3) return r * 384 + chunk * 16;  // padded 128 B
  return r * 288 + chunk * 16;                                          // padded 32 B
}
template <int kMode>
__global__ void __launch_bounds__(kThreads) Stream(const char* src, long long bytes_per_block, float* out) {
  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int stage_bytes = kRows * 400;
  const char* p = src + blockIdx.x * bytes_per_block;
  const int tiles = static_cast<int>(bytes_per_block / (kRows * kRowBytes));
  float acc = 0.f;
  for (int t = 0; t < tiles + kStages - 1; ++t) {
    if (t < tiles) {
      const char* tile = p + static_cast<long long>(t) * kRows * kRowBytes;
#pragma unroll
      for (int i = 0; i < kRows * 16 / kThreads; ++i) {
        const int c = threadIdx.x + i * kThreads, r = c / 16, chunk = c % 16;
        CpAsync16(base + (t % kStages) * stage_bytes + Dst<kMode>(r, chunk), tile + r * kRowBytes + chunk * 16);
      }
    }
    asm volatile("cp.async.commit_group;\n");
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kStages - 1));
    __syncthreads();
    if (t >= kStages - 1) acc += reinterpret_cast<const float*>(smem + ((t - kStages + 1) % kStages) * stage_bytes)[threadIdx.x];
    __syncthreads();
  }
  if (acc == 12345.f) out[threadIdx.x] = acc;
}
template <int kMode>
void Run(const char* src, long long total, float* out) {
  const int blocks = 256;
  const int smem = kStages * kRows * 400;
  cudaFuncSetAttribute(Stream<kMode>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  float best = 1e30f;
  for (int rep = 0; rep < 5; ++rep) {
    cudaEventRecord(a);
    Stream<kMode><<<blocks, kThreads, smem>>>(src, total / blocks, out);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    if (ms < best) best = ms;
  }
  printf("mode %d: %.1f us, %.0f GB/s (%s)\n", kMode, best * 1e3, total / (best * 1e-3) / 1e9, cudaGetErrorString(cudaGetLastError()));
}
int main(int argc, char** argv) {
  const long long total = 4LL << 30;
  char* src;
  float* out;
  cudaMalloc(&src, total);
  cudaMalloc(&out, 4096);
  cudaMemset(src, 1, total);
  int only = argc > 1 ? atoi(argv[1]) : -1;
  if (only < 0 || only == 0) Run<0>(src, total, out);
  if (only < 0 || only == 1) Run<1>(src, total, out);
  if (only < 0 || only == 2) Run<2>(src, total, out);
  if (only < 0 || only == 3) Run<3>(src, total, out);
  if (only < 0 || only == 4) Run<4>(src, total, out);
  // copy bandwidth for reference
  char* dst;
  cudaMalloc(&dst, total / 2);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  float best = 1e30f;
  for (int rep = 0; rep < 5; ++rep) {
    cudaEventRecord(a);
    cudaMemcpy(dst, src, total / 2, cudaMemcpyDeviceToDevice);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    if (ms < best) best = ms;
  }
  printf("memcpy: %.0f GB/s (read+write)\n", total / (best * 1e-3) / 1e9);
}
