// Host tensors on disk, for `kiln run --inputs/--outputs`:
//  * raw: the elements, row-major, little-endian, in the tensor's own dtype, nothing else
//    (bool is one byte, 0 or 1; f16/bf16 are their 16-bit patterns). The file carries no
//    dtype or shape, so the reader is told both and the size must match exactly.
//  * NumPy .npy, format versions 1.0, 2.0 and 3.0 read, 1.0 written (2.0 when the header
//    needs it). dtype descriptors: f32 '<f4', f16 '<f2', i32 '<i4', i64 '<i8', bool '|b1',
//    and bf16 '<u2' — NumPy has no bfloat16, so a bf16 tensor is stored as its raw uint16 bit
//    patterns (in PyTorch: `t.view(torch.uint16).numpy()`; back: `torch.from_numpy(a).view(torch.bfloat16)`).
//    C order only (fortran_order must be False unless rank <= 1).
// kiln assumes a little-endian host (x86-64, AArch64).
#ifndef KILN_TOOLS_TENSOR_IO_H_
#define KILN_TOOLS_TENSOR_IO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/dtype.h"
#include "ir/shape.h"
#include "ir/tensor.h"

namespace kiln {

// The .npy descriptor kiln uses for `dtype` ("<f4", "<f2", "<u2", "<i4", "<i8", "|b1").
const char* NpyDescr(DType dtype);

// A raw file of exactly NumElements(shape) * ByteSize(dtype) bytes.
absl::StatusOr<Tensor> ReadRawTensor(const std::string& path, DType dtype, const Shape& shape);
absl::Status WriteRawTensor(const std::string& path, const Tensor& tensor);

// An .npy file in memory -> Tensor; '<u2' reads as bf16. `source` names the file in errors.
absl::StatusOr<Tensor> ParseNpy(const std::string& bytes, const std::string& source);
absl::StatusOr<Tensor> ReadNpyTensor(const std::string& path);
// The bytes of an .npy file holding `tensor`.
std::string SerializeNpy(const Tensor& tensor);
absl::Status WriteNpyTensor(const std::string& path, const Tensor& tensor);

// Reads `path` (".npy" or anything else as raw) and checks it holds `dtype` and `shape`;
// errors name the file and say what was expected.
absl::StatusOr<Tensor> ReadTensorFile(const std::string& path, DType dtype, const Shape& shape);

// Whole-file helpers; errors name the path and the OS reason.
absl::StatusOr<std::string> ReadFileBytes(const std::string& path);
absl::Status WriteFileBytes(const std::string& path, const std::string& bytes);

}  // namespace kiln

#endif  // KILN_TOOLS_TENSOR_IO_H_
