// mma_sync.cuh: the PTX wrappers of the sm_80 tensor-core path, shared by the templates that
// tile a product through shared memory (attention.cuh, norm_matmul.cuh): 16-byte cp.async
// copies with zero fill, ldmatrix fragment loads and mma.sync with f32 accumulators: m16n8k16
// for 16-bit inputs (bf16, f16), and for f32 inputs three m16n8k8 TF32 products (3xTF32).
//
// One k step of a product covers 32 bytes of the reduced dim: 16 elements of a 16-bit type,
// 8 of f32. ldmatrix moves 16-byte rows whatever the type, so in bytes the fragment addressing
// of the two is the same: lane l of a 32-bit m16n8k8 fragment receives word (l / 4, l % 4) of
// each 8 x 16-byte matrix, which is where the TF32 A and B fragments want it.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace kiln {
namespace mma {

__device__ __forceinline__ unsigned SmemAddress(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, cached in L2 only; `valid` false writes 16 zero bytes and reads
// nothing (rows past the sequence, columns past the head dim).
__device__ __forceinline__ void CpAsync16(void* smem, const void* gmem, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(SmemAddress(smem)), "l"(gmem),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// Four 8x8 matrices of 16-bit elements from shared memory; lane l gives the address of row
// l % 8 of matrix l / 8, and receives in r[m] the elements (l / 4, 2 (l % 4) .. +1) of matrix m
// (of its transpose with .trans).
__device__ __forceinline__ void LdMatrixX4(unsigned (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SmemAddress(smem)));
}
__device__ __forceinline__ void LdMatrixX4Trans(unsigned (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SmemAddress(smem)));
}

// Two 8x8 matrices: lanes 0..15 give the row addresses (lanes 16..31 are ignored).
__device__ __forceinline__ void LdMatrixX2(unsigned (&r)[2], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(SmemAddress(smem)));
}

// d += a b for a 16x16 A (row-major fragment a[4]) and a 16x8 B (column-major fragment b0, b1),
// f32 accumulators: lane l holds d (row l/4, cols 2(l%4)..+1) and (row l/4 + 8, same cols).
template <class T>
struct Mma;
template <>
struct Mma<__nv_bfloat16> {
  static __device__ __forceinline__ void Run(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  // Two floats as the low and high halves of one register, round to nearest even.
  static __device__ __forceinline__ unsigned Pack(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&v);
  }
  // Two adjacent output elements (p 4-byte aligned).
  static __device__ __forceinline__ void Store2(__nv_bfloat16* p, float lo, float hi) {
    *reinterpret_cast<unsigned*>(p) = Pack(lo, hi);
  }
};
template <>
struct Mma<__half> {
  static __device__ __forceinline__ void Run(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ unsigned Pack(float lo, float hi) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&v);
  }
  static __device__ __forceinline__ void Store2(__half* p, float lo, float hi) {
    *reinterpret_cast<unsigned*>(p) = Pack(lo, hi);
  }
};
// f32 inputs: d += a b for a 16x8 A and an 8x8 B whose registers hold f32 bits, as three TF32
// products. Each operand is split into big = tf32(x) and small = tf32(x - big) (x - big is
// exact in f32), and d += a_small b_big + a_big b_small + a_big b_big: the dropped
// a_small b_small and the rounding of the small parts are about 2^-22 of |a b|, f32-grade (a
// single TF32 product is 2^-11). This is what CUTLASS calls OpMultiplyAddFastF32, and PyTorch's
// memory-efficient attention runs f32 with it on sm_80+. Fragments (g = l / 4, t = l % 4):
// a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4); b0 (k t, n g), b1 (k t + 4, n g).
// The asm is not volatile: splits of a fragment used by several products are computed once.
template <>
struct Mma<float> {
  static __device__ __forceinline__ unsigned Tf32(float x) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return r;
  }
  static __device__ __forceinline__ void Split(unsigned x, unsigned& big, unsigned& small) {
    big = Tf32(__uint_as_float(x));
    small = Tf32(__uint_as_float(x) - __uint_as_float(big));
  }
  static __device__ __forceinline__ void Product(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ void Run(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    unsigned ab[4], as[4], bb0, bs0, bb1, bs1;
#pragma unroll
    for (int i = 0; i < 4; ++i) Split(a[i], ab[i], as[i]);
    Split(b0, bb0, bs0);
    Split(b1, bb1, bs1);
    Product(d, as, bb0, bb1);  // the small terms first: they are added to d before the large one
    Product(d, ab, bs0, bs1);
    Product(d, ab, bb0, bb1);
  }
  static __device__ __forceinline__ void Store2(float* p, float lo, float hi) {
    *reinterpret_cast<float2*>(p) = make_float2(lo, hi);
  }
};

// A global address for cp.async's zero-filling form, which reads nothing from it.
__device__ __align__(16) unsigned char zero_fill_source[16];
template <class T>
__device__ __forceinline__ const T* ZeroFillSource() {
  return reinterpret_cast<const T*>(zero_fill_source);
}

}  // namespace mma
}  // namespace kiln
