#include "tools/summary.h"

#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/dtype.h"

namespace kiln {
namespace {

// The shortest %g text that reads back to exactly `value` once rounded to `dtype`.
std::string ShortestFloat(double value, DType dtype) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  for (int precision = 1; precision < 17; ++precision) {
    std::string text = absl::StrFormat("%.*g", precision, value);
    if (RoundToDType(std::strtod(text.c_str(), nullptr), dtype) == value) return text;
  }
  return absl::StrFormat("%.17g", value);
}

std::string FormatStat(double value) { return absl::StrFormat("%.6g", value); }

}  // namespace

std::string FormatElement(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kI32: case DType::kI64: return absl::StrCat(t.GetI64(i));
    case DType::kBool: return t.GetF64(i) != 0 ? "1" : "0";
    default: return ShortestFloat(t.GetF64(i), t.dtype());
  }
}

TensorSummary Summarize(const Tensor& t, int first_count) {
  TensorSummary s;
  s.count = t.num_elements();
  const bool integer = IsInteger(t.dtype());
  int64_t min_index = -1, max_index = -1;
  double mean = 0, m2 = 0;
  for (int64_t i = 0; i < s.count; ++i) {
    double v = integer ? static_cast<double>(t.GetI64(i)) : t.GetF64(i);
    if (std::isnan(v)) {
      ++s.nan_count;
      continue;
    }
    if (std::isinf(v)) {
      ++s.inf_count;
      continue;
    }
    ++s.finite;
    double delta = v - mean;
    mean += delta / static_cast<double>(s.finite);
    m2 += delta * (v - mean);
    if (min_index < 0 || v < s.min) {
      s.min = v;
      min_index = i;
    }
    if (max_index < 0 || v > s.max) {
      s.max = v;
      max_index = i;
    }
  }
  if (s.finite > 0) {
    s.mean = mean;
    s.std = std::sqrt(m2 / static_cast<double>(s.finite));
    s.min_text = FormatElement(t, min_index);
    s.max_text = FormatElement(t, max_index);
  }
  for (int64_t i = 0; i < s.count && i < first_count; ++i) s.first.push_back(FormatElement(t, i));
  return s;
}

std::string FormatSummary(const std::string& name, const Tensor& t, const TensorSummary& s) {
  std::string first = absl::StrCat("[", absl::StrJoin(s.first, ", "),
                                   s.count > static_cast<int64_t>(s.first.size()) ? ", ..." : "", "]");
  std::string stats = s.finite > 0 ? absl::StrCat("min=", s.min_text, " max=", s.max_text,
                                                  " mean=", FormatStat(s.mean), " std=", FormatStat(s.std))
                                   : "min=- max=- mean=- std=-";
  return absl::StrCat(name, ": ", DTypeName(t.dtype()), ShapeToString(t.shape()), "\n  ", stats,
                      " nan=", s.nan_count, " inf=", s.inf_count, " first=", first, "\n");
}

}  // namespace kiln
