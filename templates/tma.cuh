// tma.cuh: sm_90's tensor memory accelerator and the barriers around it, as small wrappers
// over inline PTX (PTX ISA 8.x: "cp.async.bulk.tensor", "mbarrier", "setmaxnreg").
//
// A TMA copy moves a box of a tensor (up to 5 dimensions) from global to shared memory on the
// copy engine: one thread issues it, no thread waits for it. Where the box lands and how it is
// laid out (here: rows of 128 bytes in the 128-byte swizzle wgmma.cuh describes) is fixed by a
// tensor map, a 128-byte descriptor the host encodes (cuTensorMapEncodeTiled, runtime/
// launch.cc EncodeTensorMap) and passes as a __grid_constant__ kernel parameter. Elements of the box
// outside the tensor are written as zeros.
//
// Completion is counted on an mbarrier in shared memory: the issuing thread announces the bytes
// to expect (ArriveExpectTx), each copy adds what it wrote, and the barrier's phase completes
// when both the arrivals and the bytes are in. Waiters spin on a phase's parity (Wait): phase k
// of a barrier completes with parity k & 1. The same barrier serves the ring slot it guards
// for the whole kernel: a slot's k-th fill is phase k of its "full" barrier.
//
// Everything here compiles only for sm_90 (the copies) and sm_90a (setmaxnreg); callers guard it.
#pragma once

namespace kiln {
namespace tma {

// The host's CUtensorMap, opaque: 128 bytes, 64-byte aligned.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

__device__ __forceinline__ unsigned Smem(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void BarrierInit(unsigned long long* bar, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(Smem(bar)), "r"(arrivals) : "memory");
}
// Makes the initialised barriers visible to the copy engine (and the other threads, after a
// barrier).
__device__ __forceinline__ void FenceBarrierInit() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

__device__ __forceinline__ void Arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(Smem(bar)) : "memory");
}
// One arrival that also expects `bytes` of copies to complete on this phase.
__device__ __forceinline__ void ArriveExpectTx(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(Smem(bar)), "r"(bytes) : "memory");
}
// Until the phase of parity `parity` has completed.
__device__ __forceinline__ void Wait(unsigned long long* bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "KILN_TMA_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra KILN_TMA_WAIT;\n"
      "}\n" ::"r"(Smem(bar)),
      "r"(parity)
      : "memory");
}

// The box at coordinates c (innermost first; kRank of them) of the tensor `map` describes, into
// shared memory at dst (1024-byte aligned for the 128-byte swizzle), counted on bar.
template <int kRank>
__device__ __forceinline__ void Load(void* dst, const TensorMap* map, unsigned long long* bar, const int (&c)[5]) {
  const unsigned long long m = reinterpret_cast<unsigned long long>(map);
  if constexpr (kRank == 2) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
            Smem(dst)),
        "l"(m), "r"(Smem(bar)), "r"(c[0]), "r"(c[1])
        : "memory");
  } else if constexpr (kRank == 3) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], "
        "[%2];\n" ::"r"(Smem(dst)),
        "l"(m), "r"(Smem(bar)), "r"(c[0]), "r"(c[1]), "r"(c[2])
        : "memory");
  } else if constexpr (kRank == 4) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], "
        "[%2];\n" ::"r"(Smem(dst)),
        "l"(m), "r"(Smem(bar)), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3])
        : "memory");
  } else {
    static_assert(kRank == 5, "tensor maps of rank 2 to 5");
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, "
        "%7}], [%2];\n" ::"r"(Smem(dst)),
        "l"(m), "r"(Smem(bar)), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4])
        : "memory");
  }
}

// Fetches the tensor map into the constant cache ahead of the first copy.
__device__ __forceinline__ void Prefetch(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

// A warpgroup gives registers back to the SM's pool (kDec) or takes them (kInc): a producer
// warpgroup that only issues copies keeps few, the computing ones get the rest. ptxas honours
// it only under __launch_bounds__(threads, 1).
template <int kRegs>
__device__ __forceinline__ void RegistersDown() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void RegistersUp() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

// A barrier over `threads` threads (a multiple of 32) by id (1..15; 0 is __syncthreads): Sync
// waits for the others, Arrive counts this warp's threads and goes on.
__device__ __forceinline__ void NamedBarrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void NamedBarrierArrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace tma
}  // namespace kiln
