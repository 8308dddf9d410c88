// A host tensor: dtype, shape and row-major bytes in the storage dtype. Used for constants,
// interpreter values, and inputs/outputs read from or written to disk.
#ifndef KILN_IR_TENSOR_H_
#define KILN_IR_TENSOR_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/shape.h"

namespace kiln {

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled.
  Tensor(DType dtype, Shape shape);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t num_elements() const { return NumElements(shape_); }
  int64_t num_bytes() const { return static_cast<int64_t>(bytes_.size()); }
  uint8_t* data() { return bytes_.data(); }
  const uint8_t* data() const { return bytes_.data(); }
  template <typename T>
  T* data_as() { return reinterpret_cast<T*>(bytes_.data()); }
  template <typename T>
  const T* data_as() const { return reinterpret_cast<const T*>(bytes_.data()); }

  // Element i (row-major) as a double, and storing a double with the dtype's rounding
  // (RoundToDType). These are the interpreter's accessors; f16/bf16 go through float.
  double GetF64(int64_t i) const;
  void SetF64(int64_t i, double value);
  // Exact for i32/i64 (doubles lose i64 precision past 2^53).
  int64_t GetI64(int64_t i) const;
  void SetI64(int64_t i, int64_t value);

  // A new tensor with the same values in `dtype` (rounded as by SetF64).
  Tensor CastTo(DType dtype) const;

  bool BitwiseEqual(const Tensor& other) const {
    return dtype_ == other.dtype_ && shape_ == other.shape_ && bytes_ == other.bytes_;
  }

 private:
  DType dtype_ = DType::kF32;
  Shape shape_;
  std::vector<uint8_t> bytes_;
};

}  // namespace kiln

#endif  // KILN_IR_TENSOR_H_
