// Constant data in the JSON format: inline values, side files and the shortest exact text.
//
// Inline values are checked one by one against the dtype: floats may round (to nearest even,
// as storing does) but a finite value that overflows the dtype is an error; integers must be
// whole and in range; bools are true/false or 0/1. Side files are raw little-endian bytes in
// the dtype; a file is found only inside the graph's folder, comparing weakly_canonical paths
// so that neither `..` nor a symlink can lead out of it.
#include "frontends/json/json_tensor_data.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "frontends/json/json_common.h"

namespace kiln::json_internal {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "side data files are little-endian and read without byte swapping");
static_assert(std::numeric_limits<float>::is_iec559 && std::numeric_limits<double>::is_iec559,
              "float conversions must round to nearest and overflow to infinity");

namespace {

namespace fs = std::filesystem;

// The bits `value` is stored as in a float dtype, the way the importer stores it: through
// float, then rounded to nearest even for f16/bf16.
uint32_t StoredFloatBits(double value, DType dtype) {
  float f = static_cast<float>(value);
  switch (dtype) {
    case DType::kF16: return FloatToHalfBits(f);
    case DType::kBF16: return FloatToBF16Bits(f);
    default: {
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof(bits));
      return bits;
    }
  }
}

double StoredFloatValue(uint32_t bits, DType dtype) {
  switch (dtype) {
    case DType::kF16: return HalfBitsToFloat(static_cast<uint16_t>(bits));
    case DType::kBF16: return BF16BitsToFloat(static_cast<uint16_t>(bits));
    default: {
      float f;
      std::memcpy(&f, &bits, sizeof(f));
      return f;
    }
  }
}

absl::StatusOr<double> ReadFloat(const rapidjson::Value& v, DType dtype, const std::string& path) {
  double value;
  if (v.IsString()) {
    absl::string_view s(v.GetString(), v.GetStringLength());
    if (s == "nan") {
      value = std::numeric_limits<double>::quiet_NaN();
    } else if (s == "inf" || s == "-inf") {
      value = s == "inf" ? HUGE_VAL : -HUGE_VAL;
    } else {
      return Invalid(path, absl::StrCat("expected a number or \"nan\", \"inf\", \"-inf\" (",
                                        DTypeName(dtype), "), got ", Describe(v)));
    }
  } else if (v.IsNumber()) {
    value = v.GetDouble();
  } else {
    return Invalid(path, absl::StrCat("expected a number (", DTypeName(dtype), "), got ",
                                      Describe(v)));
  }
  if (std::isfinite(value) && std::isinf(StoredFloatValue(StoredFloatBits(value, dtype), dtype))) {
    return Invalid(path, absl::StrCat(Describe(v), " is not representable in ", DTypeName(dtype),
                                      ": it overflows to infinity (write \"inf\" if meant)"));
  }
  return value;
}

absl::StatusOr<int64_t> ReadInt(const rapidjson::Value& v, DType dtype, const std::string& path) {
  int64_t lo = dtype == DType::kI32 ? std::numeric_limits<int32_t>::min()
                                    : std::numeric_limits<int64_t>::min();
  int64_t hi = dtype == DType::kI32 ? std::numeric_limits<int32_t>::max()
                                    : std::numeric_limits<int64_t>::max();
  std::string range = absl::StrCat("the ", DTypeName(dtype), " range [", lo, ", ", hi, "]");
  int64_t value;
  if (v.IsInt64()) {
    value = v.GetInt64();
  } else if (v.IsUint64()) {
    return Invalid(path, absl::StrCat(Describe(v), " is not representable in ", DTypeName(dtype),
                                      ": outside ", range));
  } else if (v.IsDouble()) {
    double d = v.GetDouble();
    if (d != std::trunc(d)) {
      return Invalid(path, absl::StrCat(Describe(v), " is not representable in ",
                                        DTypeName(dtype), ": not an integer"));
    }
    // 2^63 is exactly representable; every whole double below it in magnitude fits int64.
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {
      return Invalid(path, absl::StrCat(Describe(v), " is not representable in ",
                                        DTypeName(dtype), ": outside ", range));
    }
    value = static_cast<int64_t>(d);
  } else {
    return Invalid(path, absl::StrCat("expected an integer (", DTypeName(dtype), "), got ",
                                      Describe(v)));
  }
  if (value < lo || value > hi) {
    return Invalid(path, absl::StrCat(Describe(v), " is not representable in ", DTypeName(dtype),
                                      ": outside ", range));
  }
  return value;
}

absl::StatusOr<bool> ReadBool(const rapidjson::Value& v, const std::string& path) {
  if (v.IsBool()) return v.GetBool();
  if (v.IsInt64() && (v.GetInt64() == 0 || v.GetInt64() == 1)) return v.GetInt64() == 1;
  if (v.IsNumber()) {
    return Invalid(path, absl::StrCat(Describe(v),
                                      " is not representable in bool: write true/false or 0/1"));
  }
  return Invalid(path, absl::StrCat("expected true/false or 0/1 (bool), got ", Describe(v)));
}

}  // namespace

absl::StatusOr<int64_t> CheckedNumElements(const Shape& shape, DType dtype,
                                           const std::string& path) {
  int64_t count = 1, bytes = 0;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(count, d, &count)) count = -1;
    if (count < 0) break;
  }
  if (count < 0 || __builtin_mul_overflow(count, ByteSize(dtype), &bytes)) {
    return Invalid(path, absl::StrCat("shape ", ShapeToString(shape), " of ", DTypeName(dtype),
                                      " has too many elements: its byte size overflows 64 bits"));
  }
  return count;
}

absl::StatusOr<Tensor> ReadInlineData(const rapidjson::Value& data, DType dtype,
                                      const Shape& shape, const std::string& path) {
  auto count = CheckedNumElements(shape, dtype, path);
  if (!count.ok()) return count.status();
  if (!data.IsArray()) {
    return Invalid(path, absl::StrCat("expected a flat array of ", *count, " values (row-major ",
                                      DTypeName(dtype), ShapeToString(shape), "), got ",
                                      Describe(data)));
  }
  if (static_cast<int64_t>(data.Size()) != *count) {
    return Invalid(path, absl::StrCat("has ", data.Size(), " values, but ", DTypeName(dtype),
                                      ShapeToString(shape), " needs ", *count,
                                      " (a flat row-major array)"));
  }
  Tensor tensor(dtype, shape);
  for (int64_t i = 0; i < *count; ++i) {
    const rapidjson::Value& v = data[static_cast<rapidjson::SizeType>(i)];
    std::string at = Index(path, i);
    switch (dtype) {
      case DType::kF32: case DType::kF16: case DType::kBF16: {
        auto value = ReadFloat(v, dtype, at);
        if (!value.ok()) return value.status();
        uint32_t bits = StoredFloatBits(*value, dtype);
        if (dtype == DType::kF32) {
          std::memcpy(tensor.data_as<uint32_t>() + i, &bits, sizeof(bits));
        } else {
          tensor.data_as<uint16_t>()[i] = static_cast<uint16_t>(bits);
        }
        break;
      }
      case DType::kI32: case DType::kI64: {
        auto value = ReadInt(v, dtype, at);
        if (!value.ok()) return value.status();
        tensor.SetI64(i, *value);
        break;
      }
      case DType::kBool: {
        auto value = ReadBool(v, at);
        if (!value.ok()) return value.status();
        tensor.data_as<uint8_t>()[i] = *value ? 1 : 0;
        break;
      }
    }
  }
  return tensor;
}

absl::StatusOr<Tensor> ReadSideFile(const std::string& base_dir, const std::string& file,
                                    int64_t offset, DType dtype, const Shape& shape,
                                    const std::string& path) {
  if (file.empty() || file.find('\0') != std::string::npos) {
    return Invalid(path, absl::StrCat("expected a file name, got ", Quote(file)));
  }
  fs::path rel(file);
  if (rel.has_root_name() || rel.has_root_directory()) {
    return PathError(absl::StatusCode::kPermissionDenied, path,
                     absl::StrCat("absolute path ", Quote(file), " is not allowed: name side "
                                  "data files relative to the graph's folder"));
  }
  if (base_dir.empty()) {
    return PathError(absl::StatusCode::kFailedPrecondition, path,
                     absl::StrCat("side data file ", Quote(file), " needs the graph's folder: "
                                  "use ImportJsonGraphFile or pass base_dir"));
  }
  std::error_code ec;
  fs::path base = fs::weakly_canonical(fs::absolute(base_dir, ec), ec);
  if (ec || !fs::is_directory(base, ec)) {
    return PathError(absl::StatusCode::kNotFound, path,
                     absl::StrCat("the graph's folder ", Quote(base_dir), " is not a directory"));
  }
  if (base.filename().empty()) base = base.parent_path();  // a trailing '/'
  fs::path target = fs::weakly_canonical(base / rel, ec);
  if (ec) {
    return PathError(absl::StatusCode::kNotFound, path,
                     absl::StrCat("cannot resolve data file ", Quote(file), ": ", ec.message()));
  }
  auto [base_end, target_it] = std::mismatch(base.begin(), base.end(), target.begin(), target.end());
  if (base_end != base.end() || target_it == target.end()) {
    return PathError(absl::StatusCode::kPermissionDenied, path,
                     absl::StrCat("data file ", Quote(file), " resolves to ",
                                  Quote(target.string()), ", outside the graph's folder ",
                                  Quote(base.string())));
  }
  fs::file_status status = fs::status(target, ec);
  if (!fs::exists(status)) {
    return PathError(absl::StatusCode::kNotFound, path,
                     absl::StrCat("data file ", Quote(file), " not found (looked for ",
                                  Quote(target.string()), ")"));
  }
  if (!fs::is_regular_file(status)) {
    return Invalid(path, absl::StrCat("data file ", Quote(file), " is not a regular file"));
  }
  auto count = CheckedNumElements(shape, dtype, path);
  if (!count.ok()) return count.status();
  int64_t bytes = *count * ByteSize(dtype);
  int64_t needed = 0;
  if (__builtin_add_overflow(offset, bytes, &needed)) {
    return PathError(absl::StatusCode::kOutOfRange, path, "offset + byte size overflows 64 bits");
  }
  int64_t size = static_cast<int64_t>(fs::file_size(target, ec));
  if (ec) {
    return PathError(absl::StatusCode::kNotFound, path,
                     absl::StrCat("cannot read data file ", Quote(file), ": ", ec.message()));
  }
  if (size < needed) {
    return PathError(absl::StatusCode::kDataLoss, path,
                     absl::StrCat("data file ", Quote(file), " is too short: ", DTypeName(dtype),
                                  ShapeToString(shape), " (", bytes, " bytes) at offset ", offset,
                                  " needs ", needed, " bytes, the file has ", size));
  }
  Tensor tensor(dtype, shape);
  std::ifstream in(target, std::ios::binary);
  in.seekg(offset);
  in.read(reinterpret_cast<char*>(tensor.data()), bytes);
  if (!in || in.gcount() != bytes) {
    return PathError(absl::StatusCode::kDataLoss, path,
                     absl::StrCat("could not read ", bytes, " bytes at offset ", offset,
                                  " of data file ", Quote(file)));
  }
  if (dtype == DType::kBool) {
    const uint8_t* b = tensor.data();
    for (int64_t i = 0; i < bytes; ++i) {
      if (b[i] > 1) {
        return Invalid(path, absl::StrCat("data file ", Quote(file), " holds byte ", int{b[i]},
                                          " for bool element ", i, "; bools are bytes 0 or 1"));
      }
    }
  }
  return tensor;
}

std::string FormatElement(const Tensor& tensor, int64_t i) {
  DType dtype = tensor.dtype();
  switch (dtype) {
    case DType::kBool: return tensor.data_as<uint8_t>()[i] ? "true" : "false";
    case DType::kI32: case DType::kI64: return absl::StrCat(tensor.GetI64(i));
    default: break;
  }
  uint32_t bits = dtype == DType::kF32 ? tensor.data_as<uint32_t>()[i]
                                       : tensor.data_as<uint16_t>()[i];
  double value = StoredFloatValue(bits, dtype);
  if (std::isnan(value)) return "\"nan\"";
  if (std::isinf(value)) return value > 0 ? "\"inf\"" : "\"-inf\"";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0";
  char buf[64];
  // At 9 significant digits every float reads back exactly, so the loop always returns.
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, value);
    if (StoredFloatBits(std::strtod(buf, nullptr), dtype) == bits) break;
  }
  return buf;
}

std::string FormatFloatAttr(double value) {
  if (std::isnan(value)) return "\"nan\"";
  if (std::isinf(value)) return value > 0 ? "\"inf\"" : "\"-inf\"";
  std::string s = ShortestDouble(value);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace kiln::json_internal
