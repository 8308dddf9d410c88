#include "ir/dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "ir/base/status.h"

namespace kiln {

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kBool: return "bool";
  }
  KILN_CHECK(false) << "unknown dtype " << static_cast<int>(dtype);
  return "";
}

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  for (DType dtype : kAllDTypes) {
    if (name == DTypeName(dtype)) return dtype;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown dtype \"", name, "\"; expected one of f32, f16, bf16, i32, i64, bool"));
}

int64_t ByteSize(DType dtype) {
  switch (dtype) {
    case DType::kF32: case DType::kI32: return 4;
    case DType::kF16: case DType::kBF16: return 2;
    case DType::kI64: return 8;
    case DType::kBool: return 1;
  }
  KILN_CHECK(false) << "unknown dtype";
  return 0;
}

bool IsFloat(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

bool IsInteger(DType dtype) { return dtype == DType::kI32 || dtype == DType::kI64; }

namespace {

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

}  // namespace

uint16_t FloatToBF16Bits(float value) {
  uint32_t u = FloatBits(value);
  if (std::isnan(value)) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  uint32_t rounding_bias = 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>((u + rounding_bias) >> 16);
}

float BF16BitsToFloat(uint16_t bits) { return BitsFloat(static_cast<uint32_t>(bits) << 16); }

uint16_t FloatToHalfBits(float value) {
  uint32_t u = FloatBits(value);
  uint32_t sign = (u >> 16) & 0x8000;
  uint32_t abs = u & 0x7FFFFFFF;
  if (abs > 0x7F800000) return static_cast<uint16_t>(sign | 0x7E00);  // NaN
  if (abs >= 0x477FF000) return static_cast<uint16_t>(sign | 0x7C00);  // overflow -> inf
  if (abs < 0x38800000) {
    // Subnormal or zero in half: value = mantissa * 2^-24, rounded to nearest even.
    if (abs < 0x33000000) return static_cast<uint16_t>(sign);  // < 2^-25 rounds to 0
    int exp = static_cast<int>(abs >> 23);
    uint32_t mant = (abs & 0x7FFFFF) | 0x800000;
    int shift = 126 - exp;  // 113 - exp + 13
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t rebased = abs - 0x38000000;  // exponent bias 127 -> 15
  uint32_t half = rebased >> 13;
  uint32_t rem = rebased & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;
  return static_cast<uint16_t>(sign | half);
}

float HalfBitsToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  uint32_t exp = (bits >> 10) & 0x1F;
  uint32_t mant = bits & 0x3FF;
  if (exp == 0x1F) return BitsFloat(sign | 0x7F800000 | (mant << 13));
  if (exp == 0) {
    float f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  }
  return BitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

double RoundToDType(double value, DType dtype) {
  switch (dtype) {
    case DType::kF32: return static_cast<float>(value);
    case DType::kF16: return HalfBitsToFloat(FloatToHalfBits(static_cast<float>(value)));
    case DType::kBF16: return BF16BitsToFloat(FloatToBF16Bits(static_cast<float>(value)));
    // Truncated toward zero and saturated: casting an out-of-range double is undefined. The
    // i64 bound is the largest double below 2^63, so the caller's cast back is defined too.
    case DType::kI32: return std::isfinite(value) ? std::clamp(std::trunc(value), -2147483648.0, 2147483647.0) : 0;
    case DType::kI64:
      return std::isfinite(value) ? std::clamp(std::trunc(value), -9223372036854775808.0, 9223372036854774784.0) : 0;
    case DType::kBool: return value != 0 ? 1.0 : 0.0;
  }
  return value;
}

}  // namespace kiln
