// Element types of kiln tensors and their host-side conversions. f16 and bf16 are stored as
// raw 16-bit patterns; converting to them rounds to nearest even, as the CUDA intrinsics
// __float2half_rn and __float2bfloat16_rn do, so the interpreter and the GPU agree.
#ifndef KILN_IR_DTYPE_H_
#define KILN_IR_DTYPE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln {

enum class DType : uint8_t { kF32, kF16, kBF16, kI32, kI64, kBool };

inline constexpr DType kAllDTypes[] = {DType::kF32, DType::kF16, DType::kBF16,
                                       DType::kI32, DType::kI64, DType::kBool};

// "f32", "f16", "bf16", "i32", "i64", "bool".
const char* DTypeName(DType dtype);
absl::StatusOr<DType> ParseDType(absl::string_view name);
// Bytes per element in storage (bool is one byte).
int64_t ByteSize(DType dtype);
bool IsFloat(DType dtype);    // f32, f16, bf16
bool IsInteger(DType dtype);  // i32, i64

// IEEE binary16 and bfloat16 <-> float, round to nearest even; NaN stays NaN.
uint16_t FloatToHalfBits(float value);
float HalfBitsToFloat(uint16_t bits);
uint16_t FloatToBF16Bits(float value);
float BF16BitsToFloat(uint16_t bits);

// Rounds `value` to the nearest value representable in `dtype` (integers truncate toward
// zero like a C cast but saturate at the type's limits, NaN and infinities give 0; bool is
// value != 0). This is what storing into a tensor of that dtype does.
double RoundToDType(double value, DType dtype);

}  // namespace kiln

#endif  // KILN_IR_DTYPE_H_
