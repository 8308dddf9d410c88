#include "ir/tensor.h"

#include "ir/base/status.h"

namespace kiln {

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)),
      bytes_(static_cast<size_t>(NumElements(shape_) * ByteSize(dtype_)), 0) {}

double Tensor::GetF64(int64_t i) const {
  switch (dtype_) {
    case DType::kF32: return data_as<float>()[i];
    case DType::kF16: return HalfBitsToFloat(data_as<uint16_t>()[i]);
    case DType::kBF16: return BF16BitsToFloat(data_as<uint16_t>()[i]);
    case DType::kI32: return data_as<int32_t>()[i];
    case DType::kI64: return static_cast<double>(data_as<int64_t>()[i]);
    case DType::kBool: return data_as<uint8_t>()[i] ? 1.0 : 0.0;
  }
  return 0;
}

void Tensor::SetF64(int64_t i, double value) {
  switch (dtype_) {
    case DType::kF32: data_as<float>()[i] = static_cast<float>(value); return;
    case DType::kF16: data_as<uint16_t>()[i] = FloatToHalfBits(static_cast<float>(value)); return;
    case DType::kBF16: data_as<uint16_t>()[i] = FloatToBF16Bits(static_cast<float>(value)); return;
    case DType::kI32: data_as<int32_t>()[i] = static_cast<int32_t>(RoundToDType(value, dtype_)); return;
    case DType::kI64: data_as<int64_t>()[i] = static_cast<int64_t>(RoundToDType(value, dtype_)); return;
    case DType::kBool: data_as<uint8_t>()[i] = value != 0 ? 1 : 0; return;
  }
}

int64_t Tensor::GetI64(int64_t i) const {
  switch (dtype_) {
    case DType::kI32: return data_as<int32_t>()[i];
    case DType::kI64: return data_as<int64_t>()[i];
    // Saturated like every store into an integer tensor: casting an out-of-range double (a
    // float constant read as an ONNX shape or axis) was undefined.
    default: return static_cast<int64_t>(RoundToDType(GetF64(i), DType::kI64));
  }
}

void Tensor::SetI64(int64_t i, int64_t value) {
  switch (dtype_) {
    case DType::kI32: data_as<int32_t>()[i] = static_cast<int32_t>(value); return;
    case DType::kI64: data_as<int64_t>()[i] = value; return;
    default: SetF64(i, static_cast<double>(value)); return;
  }
}

Tensor Tensor::CastTo(DType dtype) const {
  Tensor out(dtype, shape_);
  int64_t n = num_elements();
  if (IsInteger(dtype) && IsInteger(dtype_)) {
    for (int64_t i = 0; i < n; ++i) out.SetI64(i, GetI64(i));
  } else {
    for (int64_t i = 0; i < n; ++i) out.SetF64(i, GetF64(i));
  }
  return out;
}

}  // namespace kiln
