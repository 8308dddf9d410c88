// How many thread-block clusters of each size an H100/H200 keeps resident at once
// (cudaOccupancyMaxActiveClusters), for 512-thread blocks of which one, two or three fit an SM
// (200, 100 and 64 KB of shared memory): the GPC packing that a split row's or column tile's
// cluster pays. Built with nvcc and run on the device (bench/results/2026-11-29-session33, run 2:
// `nvcc -O2 -arch=sm_90a bench/probes/cluster_occupancy.cu -o co && ./co`).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void Probe(int* out) {
  extern __shared__ int smem[];
  if (threadIdx.x == 0 && out) out[blockIdx.x] = smem[0];
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaFuncSetAttribute(Probe, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  cudaFuncSetAttribute(Probe, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
  std::printf("SMs %d\n", sms);
  for (int smem_kb : {200, 100, 64}) {
    for (int size = 1; size <= 16; ++size) {
      cudaLaunchConfig_t config = {};
      config.gridDim = dim3(size * 64);
      config.blockDim = dim3(512);
      config.dynamicSmemBytes = smem_kb * 1024;
      cudaLaunchAttribute attribute;
      attribute.id = cudaLaunchAttributeClusterDimension;
      attribute.val.clusterDim.x = size;
      attribute.val.clusterDim.y = 1;
      attribute.val.clusterDim.z = 1;
      config.attrs = &attribute;
      config.numAttrs = 1;
      int clusters = 0;
      cudaError_t e = cudaOccupancyMaxActiveClusters(&clusters, Probe, &config);
      std::printf("smem %3d KB cluster %2d: %s %4d clusters = %4d blocks resident\n", smem_kb, size,
                  e == cudaSuccess ? "ok " : cudaGetErrorString(e), clusters, clusters * size);
    }
  }
  return 0;
}
