// pointwise.cuh: the elementwise kernel (region kinds pointwise and layout, when they are not
// tiled) and the f32 helpers generated expressions call. The kernel
// is one grid-stride loop over a run-time element count; codegen (emit_elementwise.cc)
// generates only the Body: straight-line code from the op table for kV consecutive elements
// (Vector) and for one (Scalar). All index arithmetic is 64-bit, so tensors above 2^31
// elements are addressed correctly.
#pragma once

#include "kiln_types.cuh"

namespace kiln {

// The first index this thread handles and the distance to its next one, both 64-bit.
__device__ __forceinline__ long long GlobalThreadIndex() {
  return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long long GridStride() {
  return static_cast<long long>(gridDim.x) * blockDim.x;
}

// The elementwise kernel. Body provides kV (elements per step), kTail (whether count may not be
// a multiple of kV: then the last count % kV elements are taken one at a time), Vector(i)
// (elements [i, i + kV), i a multiple of kV) when kV > 1, and Scalar(i) when kV == 1 or kTail.
template <class Body>
__device__ __forceinline__ void PointwiseKernel(const Body& body, long long count) {
  constexpr int kV = Body::kV;
  static_assert(kV >= 1 && (kV & (kV - 1)) == 0, "a vector is a power of two of elements");
  if constexpr (kV > 1) {
    const long long vectors = count / kV;
    for (long long v = GlobalThreadIndex(); v < vectors; v += GridStride()) body.Vector(v * kV);
    if constexpr (Body::kTail) {
      for (long long i = vectors * kV + GlobalThreadIndex(); i < count; i += GridStride()) body.Scalar(i);
    }
  } else {
    for (long long i = GlobalThreadIndex(); i < count; i += GridStride()) body.Scalar(i);
  }
}

// ---- f32 helpers the emitted expressions call (one formula each) ------------------------
// relu: y = x > 0 ? x : 0, NaN propagates (as torch and the interpreter).
__device__ __forceinline__ float Relu(float x) { return (x > 0.0f || x != x) ? x : 0.0f; }
// maximum: NaN if either is NaN, else std::max(a, b) = (a < b ? b : a).
__device__ __forceinline__ float MaxNaN(float a, float b) {
  return (a != a || b != b) ? kNaNF() : (a < b ? b : a);
}
// minimum: NaN if either is NaN, else std::min(a, b) = (b < a ? b : a).
__device__ __forceinline__ float MinNaN(float a, float b) {
  return (a != a || b != b) ? kNaNF() : (b < a ? b : a);
}
// exp: y = e^x as 2^(x log2 e) on the special-function unit (ex2.approx.ftz): about 2 ulp,
// plus |x| 2^-24 relative from rounding the product; results below 2^-126 flush to 0. Two
// instructions instead of expf's eight (what Triton's exp does too): softmax and its kin are
// otherwise instruction-bound at the copy bandwidth.
__device__ __forceinline__ float Exp(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x * 1.4426950408889634f));
  return y;
}
// sigmoid: y = 1 / (1 + e^-x).
__device__ __forceinline__ float Sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
// gelu: y = x/2 * (1 + erf(x / sqrt(2))).
__device__ __forceinline__ float Gelu(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.707106781186547524f));
}
// gelu_tanh: y = x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
__device__ __forceinline__ float GeluTanh(float x) {
  return 0.5f * x * (1.0f + tanhf(0.797884560802865355f * (x + 0.044715f * x * x * x)));
}
// silu: y = x / (1 + e^-x).
__device__ __forceinline__ float Silu(float x) { return x / (1.0f + expf(-x)); }
// rsqrt: y = 1 / sqrt(x), correctly rounded sqrt then IEEE division (not the rsqrtf approximation).
__device__ __forceinline__ float Rsqrt(float x) { return 1.0f / sqrtf(x); }

// ---- integer helpers: wrap modulo 2^64 instead of signed-overflow UB --------------------
__device__ __forceinline__ long long WrapAdd(long long a, long long b) {
  return static_cast<long long>(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b));
}
__device__ __forceinline__ long long WrapSub(long long a, long long b) {
  return static_cast<long long>(static_cast<unsigned long long>(a) - static_cast<unsigned long long>(b));
}
__device__ __forceinline__ long long WrapMul(long long a, long long b) {
  return static_cast<long long>(static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b));
}
__device__ __forceinline__ long long WrapNeg(long long a) { return WrapSub(0, a); }
__device__ __forceinline__ long long WrapAbs(long long a) { return a < 0 ? WrapNeg(a) : a; }
// div: truncates toward zero; INT64_MIN / -1 wraps; a zero divisor gives 0 (the interpreter
// rejects it; the GPU cannot report it, so it must at least not trap or read anything).
__device__ __forceinline__ long long IntDiv(long long a, long long b) {
  return b == 0 ? 0 : (b == -1 ? WrapNeg(a) : a / b);
}
// i32 storage semantics for an integer intermediate: wrap to 32 bits, sign-extend back.
__device__ __forceinline__ long long WrapI32(long long a) {
  return static_cast<long long>(static_cast<int>(static_cast<unsigned int>(static_cast<unsigned long long>(a))));
}

// ---- casts (ir/interpreter_ops.cc EvalCast) ------------------------------------------------
// float -> f16 / bf16 value: round to nearest even, back to float.
__device__ __forceinline__ float RoundToF16(float x) { return __half2float(__float2half_rn(x)); }
__device__ __forceinline__ float RoundToBF16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
// float -> integer: truncate toward zero; NaN and +-inf give 0; out of range saturates.
__device__ __forceinline__ long long FloatToI32(float x) {
  if (!(fabsf(x) < kInfF())) return 0;
  const float t = truncf(x);
  if (t <= -2147483648.0f) return -2147483647LL - 1;
  if (t >= 2147483648.0f) return 2147483647LL;
  return static_cast<long long>(static_cast<int>(t));
}
__device__ __forceinline__ long long FloatToI64(float x) {
  if (!(fabsf(x) < kInfF())) return 0;
  const float t = truncf(x);
  if (t <= -9223372036854775808.0f) return -9223372036854775807LL - 1;
  if (t >= 9223372036854775808.0f) return 9223372036854775807LL;
  return static_cast<long long>(t);
}

}  // namespace kiln
