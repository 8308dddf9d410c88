// TensorProto -> kiln Tensor: element types, raw_data and the typed fields, and external data
// files read safely inside the model's folder (see onnx_tensor.h for the rules).
#include "frontends/onnx/onnx_tensor.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

#include "absl/strings/cord.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "frontends/onnx/onnx_import.h"
#include "ir/base/status.h"
#include "onnx/onnx_pb.h"

namespace kiln {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "ONNX raw_data is little-endian and read without byte swapping");

namespace {

namespace fs = std::filesystem;
using onnx::TensorProto;

std::string Q(const std::string& text) { return absl::StrCat("\"", absl::CHexEscape(text), "\""); }

absl::Status Unsupported(const std::string& message, const std::string& category) {
  return WithUnsupportedCategory(absl::UnimplementedError(message), category);
}

// Element count of `proto`'s dims; negative dims and overflow are errors.
absl::StatusOr<Shape> DimsOf(const TensorProto& proto) {
  Shape shape(proto.dims().begin(), proto.dims().end());
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat("negative dimension ", d, " in dims"));
    if (__builtin_mul_overflow(count, d, &count) || count > (int64_t{1} << 40)) {
      return absl::InvalidArgumentError(
          absl::StrCat("dims ", ShapeToString(shape), " hold too many elements"));
    }
  }
  return shape;
}

// Fills `out` from little-endian bytes of ONNX type `onnx_type` (DOUBLE is narrowed to f32).
absl::Status FromBytes(const char* bytes, int64_t size, int32_t onnx_type, Tensor& out) {
  const int64_t n = out.num_elements();
  const int64_t elem = onnx_type == TensorProto::DOUBLE ? 8 : ByteSize(out.dtype());
  if (size != n * elem) {
    return absl::InvalidArgumentError(
        absl::StrCat("data has ", size, " bytes but ", OnnxTypeName(onnx_type),
                     ShapeToString(out.shape()), " needs ", n * elem));
  }
  if (onnx_type == TensorProto::DOUBLE) {
    for (int64_t i = 0; i < n; ++i) {
      double v;
      std::memcpy(&v, bytes + 8 * i, 8);
      out.SetF64(i, v);
    }
  } else if (out.dtype() == DType::kBool) {
    for (int64_t i = 0; i < n; ++i) out.data()[i] = bytes[i] != 0 ? 1 : 0;
  } else if (size > 0) {
    std::memcpy(out.data(), bytes, size);
  }
  return absl::OkStatus();
}

absl::Status CountMatches(int64_t have, int64_t want, const char* field) {
  if (have == want) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " has ", have, " values but the dims hold ", want));
}

// The typed field of `proto`'s type: its name and how many values it holds.
std::pair<const char*, int64_t> TypedField(const TensorProto& proto) {
  switch (proto.data_type()) {
    case TensorProto::FLOAT: return {"float_data", proto.float_data_size()};
    case TensorProto::DOUBLE: return {"double_data", proto.double_data_size()};
    case TensorProto::INT64: return {"int64_data", proto.int64_data_size()};
    default: return {"int32_data", proto.int32_data_size()};
  }
}

// Typed-field storage: float_data, int32_data (also f16/bf16 bits and bools), int64_data,
// double_data.
absl::Status FromTypedFields(const TensorProto& proto, Tensor& out) {
  const int64_t n = out.num_elements();
  switch (proto.data_type()) {
    case TensorProto::FLOAT:
      KILN_RETURN_IF_ERROR(CountMatches(proto.float_data_size(), n, "float_data"));
      for (int64_t i = 0; i < n; ++i) out.data_as<float>()[i] = proto.float_data(i);
      return absl::OkStatus();
    case TensorProto::DOUBLE:
      KILN_RETURN_IF_ERROR(CountMatches(proto.double_data_size(), n, "double_data"));
      for (int64_t i = 0; i < n; ++i) out.SetF64(i, proto.double_data(i));
      return absl::OkStatus();
    case TensorProto::INT64:
      KILN_RETURN_IF_ERROR(CountMatches(proto.int64_data_size(), n, "int64_data"));
      for (int64_t i = 0; i < n; ++i) out.data_as<int64_t>()[i] = proto.int64_data(i);
      return absl::OkStatus();
    case TensorProto::INT32: case TensorProto::BOOL:
    case TensorProto::FLOAT16: case TensorProto::BFLOAT16:
      KILN_RETURN_IF_ERROR(CountMatches(proto.int32_data_size(), n, "int32_data"));
      for (int64_t i = 0; i < n; ++i) {
        int32_t v = proto.int32_data(i);
        if (out.dtype() == DType::kI32) out.data_as<int32_t>()[i] = v;
        else if (out.dtype() == DType::kBool) out.data()[i] = v != 0 ? 1 : 0;
        else out.data_as<uint16_t>()[i] = static_cast<uint16_t>(v & 0xffff);
      }
      return absl::OkStatus();
    default:
      return absl::InternalError("unreachable: unsupported type passed the dtype check");
  }
}

// Opens `location` inside `model_dir` and reads [offset, offset + length) (see the header for
// every rule). `want` is the tensor's byte size.
absl::StatusOr<std::string> ReadExternal(const TensorProto& proto, const std::string& model_dir,
                                         int64_t want) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& entry : proto.external_data()) {
    const std::string& key = entry.key();
    if (key == "location") {
      location = entry.value();
    } else if (key == "offset" || key == "length") {
      int64_t v;
      if (!absl::SimpleAtoi(entry.value(), &v) || v < 0) {
        return absl::InvalidArgumentError(absl::StrCat("external data ", key, " ", Q(entry.value()),
                                                       " is not a non-negative integer"));
      }
      (key == "offset" ? offset : length) = v;
    } else if (key != "checksum") {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown external data key ", Q(key), " (expected location, offset, length, checksum)"));
    }
  }
  if (location.empty() || location.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("external data without a valid \"location\"");
  }
  fs::path rel(location);
  if (rel.has_root_name() || rel.has_root_directory()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "external data location ", Q(location), " is absolute; it must be relative to the model's folder"));
  }
  for (const fs::path& part : rel) {
    if (part == "..") {
      return absl::PermissionDeniedError(absl::StrCat(
          "external data location ", Q(location), " contains \"..\"; it must stay inside the model's folder"));
    }
  }
  if (model_dir.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "external data ", Q(location), " needs the model's folder: use ImportOnnxFile or pass model_dir"));
  }
  std::error_code ec;
  fs::path base = fs::weakly_canonical(fs::absolute(model_dir, ec), ec);
  if (ec || !fs::is_directory(base, ec)) {
    return absl::NotFoundError(absl::StrCat("the model's folder ", Q(model_dir), " is not a directory"));
  }
  fs::path target = fs::weakly_canonical(base / rel, ec);
  if (ec) return absl::NotFoundError(absl::StrCat("cannot resolve external data ", Q(location), ": ", ec.message()));
  auto [base_end, target_it] = std::mismatch(base.begin(), base.end(), target.begin(), target.end());
  if (base_end != base.end() || target_it == target.end()) {
    return absl::PermissionDeniedError(absl::StrCat("external data ", Q(location), " resolves to ",
                                                    Q(target.string()), ", outside the model's folder ",
                                                    Q(base.string())));
  }
  // The canonical path has no symlinks left; O_NOFOLLOW refuses one swapped in since.
  int fd = ::open(target.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat("cannot open external data ", Q(location), " (",
                                            Q(target.string()), "): ", std::strerror(errno)));
  }
  struct stat st;
  std::string data;
  absl::Status status;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    status = absl::InvalidArgumentError(absl::StrCat("external data ", Q(location), " is not a regular file"));
  } else if (st.st_nlink > 1) {
    status = absl::PermissionDeniedError(absl::StrCat(
        "external data ", Q(location), " has ", st.st_nlink, " hard links; refused (it may alias a file "
        "outside the model's folder)"));
  } else if (length >= 0 && length != want) {
    status = absl::InvalidArgumentError(absl::StrCat("external data ", Q(location), " length ", length,
                                                     " differs from the tensor's byte size ", want));
  } else {
    int64_t end;
    if (__builtin_add_overflow(offset, want, &end) || end > st.st_size) {
      status = absl::DataLossError(absl::StrCat("external data ", Q(location), " is too short: ", want,
                                                " bytes at offset ", offset, " need ", offset, " + ", want,
                                                " bytes, the file has ", st.st_size));
    } else {
      data.resize(want);
      int64_t done = 0;
      while (done < want) {
        ssize_t got = ::pread(fd, data.data() + done, want - done, offset + done);
        if (got <= 0) break;
        done += got;
      }
      if (done != want) {
        status = absl::DataLossError(absl::StrCat("cannot read external data ", Q(location)));
      }
    }
  }
  ::close(fd);
  if (!status.ok()) return status;
  return data;
}

}  // namespace

absl::Status WithUnsupportedCategory(absl::Status status, const std::string& category) {
  status.SetPayload(kOnnxUnsupportedPayload, absl::Cord(category));
  return status;
}

std::string OnnxTypeName(int32_t t) {
  static const char* kNames[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32",
                                 "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64",
                                 "COMPLEX64", "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",
                                 "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4",
                                 "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2"};
  if (t >= 0 && t < static_cast<int32_t>(sizeof(kNames) / sizeof(kNames[0]))) return kNames[t];
  return absl::StrCat("type ", t);
}

absl::StatusOr<DType> DTypeFromOnnx(int32_t t) {
  switch (t) {
    case TensorProto::FLOAT: return DType::kF32;
    case TensorProto::FLOAT16: return DType::kF16;
    case TensorProto::BFLOAT16: return DType::kBF16;
    case TensorProto::INT32: return DType::kI32;
    case TensorProto::INT64: return DType::kI64;
    case TensorProto::BOOL: return DType::kBool;
    default:
      return Unsupported(absl::StrCat("element type ", OnnxTypeName(t),
                                      " is not supported (kiln has FLOAT, FLOAT16, BFLOAT16, INT32, "
                                      "INT64, BOOL)"),
                         absl::StrCat("dtype ", OnnxTypeName(t)));
  }
}

int32_t OnnxTypeFromDType(DType dtype) {
  switch (dtype) {
    case DType::kF32: return TensorProto::FLOAT;
    case DType::kF16: return TensorProto::FLOAT16;
    case DType::kBF16: return TensorProto::BFLOAT16;
    case DType::kI32: return TensorProto::INT32;
    case DType::kI64: return TensorProto::INT64;
    case DType::kBool: return TensorProto::BOOL;
  }
  return TensorProto::UNDEFINED;
}

absl::StatusOr<Tensor> TensorFromOnnx(const TensorProto& proto, const std::string& model_dir,
                                      bool allow_double) {
  const int32_t type = proto.data_type();
  DType dtype;
  if (type == TensorProto::DOUBLE && allow_double) {
    dtype = DType::kF32;
  } else {
    KILN_ASSIGN_OR_RETURN(dtype, DTypeFromOnnx(type));
  }
  if (proto.has_segment()) {
    return Unsupported("segmented tensors are not supported", "segmented tensor");
  }
  KILN_ASSIGN_OR_RETURN(Shape shape, DimsOf(proto));
  const int64_t n = NumElements(shape);
  const int64_t elem = type == TensorProto::DOUBLE ? 8 : ByteSize(dtype);
  // The data must be there before the tensor is allocated: dims are the file's word, and a
  // small file can claim 2^40 elements (a std::bad_alloc abort before this check).
  if (proto.data_location() == TensorProto::EXTERNAL) {
    KILN_ASSIGN_OR_RETURN(std::string bytes, ReadExternal(proto, model_dir, n * elem));
    Tensor out(dtype, shape);
    KILN_RETURN_IF_ERROR(FromBytes(bytes.data(), bytes.size(), type, out));
    return out;
  }
  if (proto.has_raw_data()) {
    if (static_cast<int64_t>(proto.raw_data().size()) != n * elem) {
      return absl::InvalidArgumentError(absl::StrCat("data has ", proto.raw_data().size(), " bytes but ",
                                                     OnnxTypeName(type), ShapeToString(shape), " needs ", n * elem));
    }
    Tensor out(dtype, shape);
    KILN_RETURN_IF_ERROR(FromBytes(proto.raw_data().data(), proto.raw_data().size(), type, out));
    return out;
  }
  const auto [field, count] = TypedField(proto);
  KILN_RETURN_IF_ERROR(CountMatches(count, n, field));
  Tensor out(dtype, shape);
  KILN_RETURN_IF_ERROR(FromTypedFields(proto, out));
  return out;
}

}  // namespace kiln
