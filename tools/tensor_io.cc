#include "tools/tensor_io.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "ir/base/status.h"

namespace kiln {
namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicLen = 6;

absl::Status CheckBools(const Tensor& t, const std::string& source) {
  if (t.dtype() != DType::kBool) return absl::OkStatus();
  const uint8_t* p = t.data();
  for (int64_t i = 0; i < t.num_bytes(); ++i) {
    if (p[i] > 1) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": bool element ", i, " is byte ",
                                                     static_cast<int>(p[i]), "; expected 0 or 1"));
    }
  }
  return absl::OkStatus();
}

std::string DescribeType(DType dtype, const Shape& shape) {
  return absl::StrCat(DTypeName(dtype), ShapeToString(shape));
}

// The value of 'key' in the header dict, as the raw text up to the next top-level comma
// (a tuple keeps its commas). Empty when the key is missing.
std::string HeaderField(absl::string_view header, absl::string_view key) {
  std::string quoted = absl::StrCat("'", key, "'");
  size_t at = header.find(quoted);
  if (at == absl::string_view::npos) return "";
  size_t colon = header.find(':', at + quoted.size());
  if (colon == absl::string_view::npos) return "";
  size_t i = colon + 1;
  int depth = 0;
  size_t start = i;
  for (; i < header.size(); ++i) {
    char c = header[i];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if ((c == ',' && depth == 0) || c == '}') break;
  }
  return std::string(absl::StripAsciiWhitespace(header.substr(start, i - start)));
}

absl::StatusOr<DType> DTypeFromDescr(const std::string& descr, const std::string& source) {
  std::string d = descr;
  if (d.size() >= 2 && (d.front() == '\'' || d.front() == '"')) d = d.substr(1, d.size() - 2);
  // '=' is native order, which kiln assumes is little-endian; '|' is "not applicable".
  if (!d.empty() && (d[0] == '=' || d[0] == '|')) d[0] = '<';
  if (d == "<f4") return DType::kF32;
  if (d == "<f2") return DType::kF16;
  if (d == "<u2") return DType::kBF16;
  if (d == "<i4") return DType::kI32;
  if (d == "<i8") return DType::kI64;
  if (d == "<b1") return DType::kBool;
  return absl::InvalidArgumentError(absl::StrCat(
      source, ": unsupported .npy dtype ", descr,
      "; kiln reads '<f4' (f32), '<f2' (f16), '<u2' (bf16 bit patterns), '<i4' (i32), '<i8' (i64), "
      "'|b1' (bool), little-endian"));
}

absl::StatusOr<Shape> ShapeFromTuple(const std::string& text, const std::string& source) {
  absl::string_view t = absl::StripAsciiWhitespace(text);
  if (t.size() < 2 || t.front() != '(' || t.back() != ')') {
    return absl::InvalidArgumentError(absl::StrCat(source, ": bad .npy shape ", text));
  }
  t = t.substr(1, t.size() - 2);
  Shape shape;
  for (absl::string_view part : absl::StrSplit(t, ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (part.empty()) continue;
    if (!part.empty() && part.back() == 'L') part.remove_suffix(1);  // Python 2 longs
    int64_t v;
    if (!absl::SimpleAtoi(part, &v) || v < 0) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": bad .npy shape ", text));
    }
    shape.push_back(v);
  }
  return shape;
}

// The bytes a tensor of `dtype` and `shape` takes, or an error naming `source` when the
// element count is over CheckedNumElements' limit (2^48) or a dimension is negative.
absl::StatusOr<int64_t> TensorBytes(DType dtype, const Shape& shape, const std::string& source) {
  absl::StatusOr<int64_t> elements = CheckedNumElements(shape);
  if (!elements.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", elements.status().message()));
  }
  return *elements * ByteSize(dtype);
}

}  // namespace

const char* NpyDescr(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "<f4";
    case DType::kF16: return "<f2";
    case DType::kBF16: return "<u2";
    case DType::kI32: return "<i4";
    case DType::kI64: return "<i8";
    case DType::kBool: return "|b1";
  }
  return "?";
}

absl::StatusOr<std::string> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  return buffer.str();
}

absl::Status WriteFileBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat("failed writing ", path));
  return absl::OkStatus();
}

absl::StatusOr<Tensor> ReadRawTensor(const std::string& path, DType dtype, const Shape& shape) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  // The size is checked before the tensor is allocated, so a wrong file costs nothing.
  KILN_ASSIGN_OR_RETURN(int64_t needs, TensorBytes(dtype, shape, path));
  if (static_cast<int64_t>(bytes.size()) != needs) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": holds ", bytes.size(), " bytes but ", DescribeType(dtype, shape), " needs ",
        needs, " (raw little-endian ", DTypeName(dtype), ", row-major)"));
  }
  Tensor t(dtype, shape);
  if (!bytes.empty()) std::memcpy(t.data(), bytes.data(), bytes.size());
  KILN_RETURN_IF_ERROR(CheckBools(t, path));
  return t;
}

absl::Status WriteRawTensor(const std::string& path, const Tensor& tensor) {
  return WriteFileBytes(path, std::string(reinterpret_cast<const char*>(tensor.data()),
                                          static_cast<size_t>(tensor.num_bytes())));
}

absl::StatusOr<Tensor> ParseNpy(const std::string& bytes, const std::string& source) {
  if (bytes.size() < kNpyMagicLen + 4 || bytes.compare(0, kNpyMagicLen, kNpyMagic) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": not an .npy file (bad magic)"));
  }
  int major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": truncated .npy header"));
    }
    for (int i = 3; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(bytes[8 + i]);
    header_start = 12;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": .npy format version ", major, " is not supported (1, 2, 3 are)"));
  }
  if (bytes.size() < header_start + header_len) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": truncated .npy header"));
  }
  absl::string_view header(bytes.data() + header_start, header_len);
  std::string descr = HeaderField(header, "descr");
  std::string fortran = HeaderField(header, "fortran_order");
  std::string shape_text = HeaderField(header, "shape");
  if (descr.empty() || fortran.empty() || shape_text.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": .npy header lacks descr, fortran_order or shape: ", header));
  }
  KILN_ASSIGN_OR_RETURN(DType dtype, DTypeFromDescr(descr, source));
  KILN_ASSIGN_OR_RETURN(Shape shape, ShapeFromTuple(shape_text, source));
  if (fortran != "False" && shape.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": .npy array is in Fortran order; save it C-contiguous (np.ascontiguousarray)"));
  }
  // The header's shape is checked against the bytes that follow before anything is allocated:
  // a forged shape is an error, not a bad_alloc or an overflowing element count.
  KILN_ASSIGN_OR_RETURN(int64_t needs, TensorBytes(dtype, shape, source));
  size_t data_start = header_start + header_len;
  size_t have = bytes.size() - data_start;
  if (static_cast<int64_t>(have) != needs) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": .npy data is ", have, " bytes but ",
                                                   DescribeType(dtype, shape), " needs ", needs));
  }
  Tensor t(dtype, shape);
  if (have > 0) std::memcpy(t.data(), bytes.data() + data_start, have);
  KILN_RETURN_IF_ERROR(CheckBools(t, source));
  return t;
}

absl::StatusOr<Tensor> ReadNpyTensor(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  return ParseNpy(bytes, path);
}

std::string SerializeNpy(const Tensor& tensor) {
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape().size(); ++i) {
    absl::StrAppend(&shape, tensor.shape()[i], tensor.shape().size() == 1 ? "," : "",
                    i + 1 < tensor.shape().size() ? ", " : "");
  }
  shape += ")";
  std::string header = absl::StrCat("{'descr': '", NpyDescr(tensor.dtype()),
                                    "', 'fortran_order': False, 'shape': ", shape, ", }");
  // Pad with spaces and end with '\n' so the data starts at a multiple of 64 bytes.
  size_t prefix = kNpyMagicLen + 2 + 2;
  bool v2 = prefix + header.size() + 1 > 65535;
  if (v2) prefix += 2;
  size_t total = prefix + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kNpyMagic, kNpyMagicLen);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  size_t len = header.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (v2) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  out += header;
  out.append(reinterpret_cast<const char*>(tensor.data()), static_cast<size_t>(tensor.num_bytes()));
  return out;
}

absl::Status WriteNpyTensor(const std::string& path, const Tensor& tensor) {
  return WriteFileBytes(path, SerializeNpy(tensor));
}

absl::StatusOr<Tensor> ReadTensorFile(const std::string& path, DType dtype, const Shape& shape) {
  if (!absl::EndsWith(path, ".npy")) return ReadRawTensor(path, dtype, shape);
  KILN_ASSIGN_OR_RETURN(Tensor t, ReadNpyTensor(path));
  if (t.dtype() != dtype || t.shape() != shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": holds ", DescribeType(t.dtype(), t.shape()), " ('", NpyDescr(t.dtype()),
        "') but the graph input is ", DescribeType(dtype, shape), " ('", NpyDescr(dtype), "'",
        dtype == DType::kBF16 ? ", bf16 bit patterns" : "", ")"));
  }
  return t;
}

}  // namespace kiln
