// wgmma.cuh: the sm_90a warpgroup tensor-core instructions kiln's templates use, as small
// wrappers over inline PTX (PTX ISA 8.x, "Asynchronous Warpgroup Level Matrix Multiply").
//
// A warpgroup is 4 consecutive warps (128 threads, the first a multiple of 4). One
// `wgmma.mma_async` computes D[64 x N] (+)= A[64 x 16] B[16 x N] with f32 accumulators spread
// over the warpgroup exactly like four stacked mma.sync m16n8 accumulators: warp w of the group
// holds rows 16 w .. 16 w + 15, and d[j][2 h + c] of lane l is row 16 w + l / 4 + 8 h, column
// 8 j + 2 (l % 4) + c. A comes from shared memory (a descriptor) or from registers (the
// mma.sync m16n8k16 A fragment of each warp's 16 rows); B always from shared memory.
//
// Shared-memory operands here are in the 128-byte swizzle layout: a "panel" of 64 16-bit
// columns, each row 128 bytes, rows consecutive; the 16-byte chunk c of row r sits at chunk
// c ^ (r % 8). Panels start on 1024-byte boundaries (the swizzle repeats every 8 rows and the
// hardware applies it to address bits, so the pattern must be anchored there).
//  * K-major operand (the reduced dim contiguous: Q or K for q k^T): rows are M or N, 8-row
//    groups 1024 bytes apart (SBO); the k16 step s of a panel starts 32 s bytes into it.
//  * MN-major operand (N contiguous: V for p v, the instruction's transpose-B flag): rows are
//    the reduced dim, 8-row groups 1024 bytes apart (SBO), consecutive 64-column panels of N
//    LBO bytes apart; k16 step s starts 16 rows (2048 bytes) further.
//
// Ordering: wgmma reads shared memory through the async proxy, so data written there by
// ordinary stores or cp.async needs FenceProxyAsync() (then a barrier) before a wgmma reads
// it; accumulators and register A operands written by ordinary instructions need Fence()
// before the wgmma that reads them; results are readable after Commit() and Wait<0>().
// Everything here compiles only for sm_90a (__CUDA_ARCH_FEAT_SM90_ALL).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace kiln {
namespace wgmma {

// A shared-memory matrix descriptor, 128-byte swizzle: start address, leading and stride
// byte offsets, each in 16-byte units (14 bits); layout type 1 in bits 62-63.
__device__ __forceinline__ unsigned long long Sw128Desc(unsigned smem_addr, unsigned lbo_bytes, unsigned sbo_bytes) {
  return static_cast<unsigned long long>((smem_addr & 0x3FFFF) >> 4) |
         (static_cast<unsigned long long>((lbo_bytes >> 4) & 0x3FFF) << 16) |
         (static_cast<unsigned long long>((sbo_bytes >> 4) & 0x3FFF) << 32) | (1ULL << 62);
}

__device__ __forceinline__ void Fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void Commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void Wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Orders this thread's generic-proxy shared-memory writes (stores, cp.async after its wait)
// before later async-proxy reads (wgmma) of the CTA.
__device__ __forceinline__ void FenceProxyAsync() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Keeps the compiler from moving reads or writes of accumulator registers across a wgmma
// that is still in flight (the asm has them as operands; this pins the other uses).
template <int N>
__device__ __forceinline__ void FenceOperands(float (&d)[N][4]) {
#pragma unroll
  for (int j = 0; j < N; ++j) {
#pragma unroll
    for (int c = 0; c < 4; ++c) asm volatile("" : "+f"(d[j][c])::"memory");
  }
}

// The accumulator operand lists: "{%0, .., %(N/2 - 1)}" and d[0][0] .. d[N/8 - 1][3].
#define KILN_WGMMA_ACC_64 \
  "{" \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define KILN_WGMMA_ACC_128 \
  "{" \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define KILN_WGMMA_ACC_192 \
  "{" \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}"
#define KILN_WGMMA_ACC_256 \
  "{" \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define KILN_WGMMA_D1(j) "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
#define KILN_WGMMA_D8(j)                                                                                 \
  KILN_WGMMA_D1(j), KILN_WGMMA_D1(j + 1), KILN_WGMMA_D1(j + 2), KILN_WGMMA_D1(j + 3), KILN_WGMMA_D1(j + 4), \
      KILN_WGMMA_D1(j + 5), KILN_WGMMA_D1(j + 6), KILN_WGMMA_D1(j + 7)
#define KILN_WGMMA_OPS_64 KILN_WGMMA_D8(0)
#define KILN_WGMMA_OPS_128 KILN_WGMMA_D8(0), KILN_WGMMA_D8(8)
#define KILN_WGMMA_OPS_192 KILN_WGMMA_D8(0), KILN_WGMMA_D8(8), KILN_WGMMA_D8(16)
#define KILN_WGMMA_OPS_256 KILN_WGMMA_D8(0), KILN_WGMMA_D8(8), KILN_WGMMA_D8(16), KILN_WGMMA_D8(24)

// Mma<T, N>::SS: d (+)= A B, A and B from descriptors (K-major both). RS: A from registers
// (a[4], the m16n8k16 A fragment), B an MN-major descriptor (transposed). `accumulate` 0
// overwrites d (the first k step), 1 adds to it. R is the accumulator count N / 2, so the
// operands after the accumulators are %R, %R+1, ..., their numbers spelled out as strings below.
template <class T, int N>
struct Mma;

#define KILN_WGMMA_SPECIALIZE(TYPE, PTXTYPE, N, A, B, SCALE, A0, A1, A2, A3, BR, SCALER)               \
  template <>                                                                                          \
  struct Mma<TYPE, N> {                                                                                \
    static __device__ __forceinline__ void SS(float (&d)[N / 8][4], unsigned long long da,             \
                                              unsigned long long db, int accumulate) {                 \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" SCALE ", 0;\n"                                  \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTXTYPE "." PTXTYPE " "            \
                   KILN_WGMMA_ACC_##N ", %" A ", %" B ", p, 1, 1, 0, 0;\n}\n"                            \
                   : KILN_WGMMA_OPS_##N                                                                \
                   : "l"(da), "l"(db), "r"(accumulate)                                                 \
                   : "memory");                                                                        \
    }                                                                                                  \
    static __device__ __forceinline__ void RS(float (&d)[N / 8][4], const unsigned (&a)[4],            \
                                              unsigned long long db, int accumulate) {                 \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" SCALER ", 0;\n"                                 \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTXTYPE "." PTXTYPE " "            \
                   KILN_WGMMA_ACC_##N ", {%" A0 ", %" A1 ", %" A2 ", %" A3 "}, %" BR ", p, 1, 1, 1;\n}\n" \
                   : KILN_WGMMA_OPS_##N                                                                \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate)              \
                   : "memory");                                                                        \
    }                                                                                                  \
  };
KILN_WGMMA_SPECIALIZE(__nv_bfloat16, "bf16", 64, "32", "33", "34", "32", "33", "34", "35", "36", "37")
KILN_WGMMA_SPECIALIZE(__nv_bfloat16, "bf16", 128, "64", "65", "66", "64", "65", "66", "67", "68", "69")
KILN_WGMMA_SPECIALIZE(__nv_bfloat16, "bf16", 192, "96", "97", "98", "96", "97", "98", "99", "100", "101")
KILN_WGMMA_SPECIALIZE(__nv_bfloat16, "bf16", 256, "128", "129", "130", "128", "129", "130", "131", "132", "133")
KILN_WGMMA_SPECIALIZE(__half, "f16", 64, "32", "33", "34", "32", "33", "34", "35", "36", "37")
KILN_WGMMA_SPECIALIZE(__half, "f16", 128, "64", "65", "66", "64", "65", "66", "67", "68", "69")
KILN_WGMMA_SPECIALIZE(__half, "f16", 192, "96", "97", "98", "96", "97", "98", "99", "100", "101")
KILN_WGMMA_SPECIALIZE(__half, "f16", 256, "128", "129", "130", "128", "129", "130", "131", "132", "133")

#undef KILN_WGMMA_SPECIALIZE

}  // namespace wgmma
}  // namespace kiln
