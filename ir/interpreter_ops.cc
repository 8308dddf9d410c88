// The reference interpreter's elementary ops: the broadcast-stride walker every op indexes
// with, the parallel loop, pointwise ops (float math in double, integer math exact in
// int64), reductions (accumulated in double, or exactly in int64 for integer tensors), and
// the layout ops (pure element copies, so they are exact for every dtype).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "absl/strings/str_cat.h"
#include "ir/base/status.h"
#include "ir/interpreter_internal.h"

namespace kiln::interp {

std::vector<int64_t> BroadcastStrides(const Shape& operand, const Shape& out) {
  KILN_CHECK(BroadcastsTo(operand, out))
      << ShapeToString(operand) << " does not broadcast to " << ShapeToString(out);
  std::vector<int64_t> own = RowMajorStrides(operand);
  std::vector<int64_t> strides(out.size(), 0);
  size_t lead = out.size() - operand.size();
  for (size_t d = 0; d < operand.size(); ++d) {
    strides[lead + d] = operand[d] == 1 ? 0 : own[d];
  }
  return strides;
}

IndexWalker::IndexWalker(const Shape& shape, std::vector<std::vector<int64_t>> strides,
                         std::vector<int64_t> bases)
    : shape_(shape), strides_(std::move(strides)), bases_(std::move(bases)) {
  bases_.resize(strides_.size(), 0);
  for (const auto& s : strides_) KILN_CHECK(s.size() == shape_.size()) << "stride rank";
  index_.assign(shape_.size(), 0);
  offsets_ = bases_;
}

void IndexWalker::Seek(int64_t linear) {
  for (int d = static_cast<int>(shape_.size()) - 1; d >= 0; --d) {
    int64_t extent = std::max<int64_t>(shape_[d], 1);
    index_[d] = linear % extent;
    linear /= extent;
  }
  for (size_t k = 0; k < strides_.size(); ++k) {
    int64_t off = bases_[k];
    for (size_t d = 0; d < shape_.size(); ++d) off += index_[d] * strides_[k][d];
    offsets_[k] = off;
  }
}

void IndexWalker::Next() {
  for (int d = static_cast<int>(shape_.size()) - 1; d >= 0; --d) {
    ++index_[d];
    for (size_t k = 0; k < strides_.size(); ++k) offsets_[k] += strides_[k][d];
    if (index_[d] < shape_[d]) return;
    for (size_t k = 0; k < strides_.size(); ++k) offsets_[k] -= strides_[k][d] * shape_[d];
    index_[d] = 0;
  }
}

void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  int64_t workers = std::max(1u, std::thread::hardware_concurrency());
  workers = std::min(workers, n / std::max<int64_t>(grain, 1));
  if (workers <= 1) {
    fn(0, n);
    return;
  }
  std::vector<std::thread> threads;
  int64_t chunk = (n + workers - 1) / workers;
  for (int64_t w = 1; w < workers; ++w) {
    int64_t begin = w * chunk, end = std::min(n, begin + chunk);
    if (begin < end) threads.emplace_back(fn, begin, end);
  }
  fn(0, std::min(n, chunk));
  for (auto& t : threads) t.join();
}

namespace {

// Calls fn(i, offsets) for every row-major index i of `out_shape`; offsets[k] is the element
// of args[k] that broadcasts to i. Runs in parallel over contiguous ranges of i.
template <typename Fn>
void ForEachBroadcast(const Shape& out_shape, const std::vector<const Tensor*>& args, Fn fn) {
  std::vector<std::vector<int64_t>> strides;
  for (const Tensor* a : args) strides.push_back(BroadcastStrides(a->shape(), out_shape));
  ParallelFor(NumElements(out_shape), 1 << 16, [&](int64_t begin, int64_t end) {
    IndexWalker walker(out_shape, strides);
    walker.Seek(begin);
    int64_t offsets[3] = {0, 0, 0};
    for (int64_t i = begin; i < end; ++i, walker.Next()) {
      for (size_t k = 0; k < args.size(); ++k) offsets[k] = walker.offset(k);
      fn(i, offsets);
    }
  });
}

double Relu(double x) { return x > 0 || std::isnan(x) ? x : 0.0; }  // NaN propagates, as in torch

double FloatUnary(OpKind op, double x) {
  switch (op) {
    case OpKind::kNeg: return -x;
    case OpKind::kAbs: return std::fabs(x);
    case OpKind::kExp: return std::exp(x);
    case OpKind::kLog: return std::log(x);
    case OpKind::kSqrt: return std::sqrt(x);
    case OpKind::kRsqrt: return 1.0 / std::sqrt(x);
    case OpKind::kReciprocal: return 1.0 / x;
    case OpKind::kTanh: return std::tanh(x);
    case OpKind::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
    case OpKind::kErf: return std::erf(x);
    case OpKind::kRelu: return Relu(x);
    case OpKind::kGelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case OpKind::kGeluTanh: {
      const double k = std::sqrt(2.0 / M_PI);
      return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
    }
    case OpKind::kSilu: return x / (1.0 + std::exp(-x));
    case OpKind::kLogicalNot: return x == 0 ? 1.0 : 0.0;
    default: KILN_CHECK(false) << "not a unary op: " << OpName(op); return 0;
  }
}

// Integer arithmetic wraps modulo 2^64 (then to the storage width) instead of being UB.
int64_t Wrap(uint64_t v) { return static_cast<int64_t>(v); }

int64_t IntUnary(OpKind op, int64_t x) {
  switch (op) {
    case OpKind::kNeg: return Wrap(0 - static_cast<uint64_t>(x));
    case OpKind::kAbs: return x < 0 ? Wrap(0 - static_cast<uint64_t>(x)) : x;
    case OpKind::kRelu: return x > 0 ? x : 0;
    default: KILN_CHECK(false) << "not an integer unary op: " << OpName(op); return 0;
  }
}

double FloatBinary(OpKind op, double a, double b) {
  switch (op) {
    case OpKind::kAdd: return a + b;
    case OpKind::kSub: return a - b;
    case OpKind::kMul: return a * b;
    case OpKind::kDiv: return a / b;
    case OpKind::kPow: return std::pow(a, b);
    case OpKind::kMaximum:
      return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, b);
    case OpKind::kMinimum:
      return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::min(a, b);
    case OpKind::kEq: return a == b;
    case OpKind::kNe: return a != b;
    case OpKind::kLt: return a < b;
    case OpKind::kLe: return a <= b;
    case OpKind::kGt: return a > b;
    case OpKind::kGe: return a >= b;
    case OpKind::kLogicalAnd: return a != 0 && b != 0;
    case OpKind::kLogicalOr: return a != 0 || b != 0;
    default: KILN_CHECK(false) << "not a binary op: " << OpName(op); return 0;
  }
}

// Division truncates toward zero; the caller has ruled out b == 0. INT64_MIN / -1 wraps.
int64_t IntBinary(OpKind op, int64_t a, int64_t b) {
  uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
    case OpKind::kAdd: return Wrap(ua + ub);
    case OpKind::kSub: return Wrap(ua - ub);
    case OpKind::kMul: return Wrap(ua * ub);
    case OpKind::kDiv:
      if (b == -1) return Wrap(0 - ua);
      return a / b;
    case OpKind::kMaximum: return std::max(a, b);
    case OpKind::kMinimum: return std::min(a, b);
    case OpKind::kEq: return a == b;
    case OpKind::kNe: return a != b;
    case OpKind::kLt: return a < b;
    case OpKind::kLe: return a <= b;
    case OpKind::kGt: return a > b;
    case OpKind::kGe: return a >= b;
    default: KILN_CHECK(false) << "not an integer binary op: " << OpName(op); return 0;
  }
}

// float -> integer: truncate toward zero; NaN and +-inf give 0; finite values outside the
// target range saturate (as CUDA's __float2int_rz does) instead of being undefined.
int64_t FloatToInt(double x, DType to) {
  if (!std::isfinite(x)) return 0;
  double t = std::trunc(x);
  double lo = to == DType::kI32 ? -2147483648.0 : -9223372036854775808.0;
  double hi = to == DType::kI32 ? 2147483647.0 : 9223372036854775807.0;
  if (t <= lo) return to == DType::kI32 ? std::numeric_limits<int32_t>::min()
                                        : std::numeric_limits<int64_t>::min();
  if (t >= hi) return to == DType::kI32 ? std::numeric_limits<int32_t>::max()
                                        : std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(t);
}

absl::StatusOr<Tensor> EvalCast(const Node& node, const Tensor& x) {
  Tensor out(node.dtype(), node.shape());
  DType from = x.dtype(), to = node.dtype();
  ForEachBroadcast(node.shape(), {&x}, [&](int64_t i, const int64_t* o) {
    if (to == DType::kBool) {
      out.SetF64(i, x.GetF64(o[0]) != 0 ? 1.0 : 0.0);  // NaN != 0: true
    } else if (IsInteger(to)) {
      out.SetI64(i, IsFloat(from) ? FloatToInt(x.GetF64(o[0]), to) : x.GetI64(o[0]));
    } else if (from == DType::kI64) {
      out.SetF64(i, static_cast<float>(x.GetI64(o[0])));  // one rounding, int64 -> float
    } else {
      out.SetF64(i, x.GetF64(o[0]));
    }
  });
  return out;
}

bool IsIntegerPath(const Tensor& t) { return IsInteger(t.dtype()); }

}  // namespace

absl::StatusOr<Tensor> EvalPointwise(const Node& node, const std::vector<const Tensor*>& args) {
  const OpKind op = node.op();
  if (op == OpKind::kCast) return EvalCast(node, *args[0]);
  Tensor out(node.dtype(), node.shape());
  if (op == OpKind::kIota) {  // y[..., j, ...] = j along `axis`; exact for integer dtypes
    const Shape& s = node.shape();
    int64_t axis = node.attrs().GetInt("axis");
    if (axis < 0) axis += s.size();
    int64_t inner = 1;
    for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
    const int64_t extent = s[axis];
    ParallelFor(out.num_elements(), 1 << 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out.SetI64(i, (i / inner) % extent);
    });
    return out;
  }
  if (op == OpKind::kWhere) {
    const Tensor &cond = *args[0], &a = *args[1], &b = *args[2];
    bool exact = IsInteger(a.dtype());
    ForEachBroadcast(node.shape(), args, [&](int64_t i, const int64_t* o) {
      const Tensor& src = cond.GetF64(o[0]) != 0 ? a : b;
      int64_t at = &src == &a ? o[1] : o[2];
      if (exact) out.SetI64(i, src.GetI64(at));
      else out.SetF64(i, src.GetF64(at));
    });
    return out;
  }
  if (args.size() == 1) {
    const Tensor& x = *args[0];
    if (IsIntegerPath(x)) {
      ForEachBroadcast(node.shape(), args, [&](int64_t i, const int64_t* o) {
        out.SetI64(i, IntUnary(op, x.GetI64(o[0])));
      });
    } else {
      ForEachBroadcast(node.shape(), args, [&](int64_t i, const int64_t* o) {
        out.SetF64(i, FloatUnary(op, x.GetF64(o[0])));
      });
    }
    return out;
  }
  const Tensor &a = *args[0], &b = *args[1];
  if (IsIntegerPath(a)) {
    if (op == OpKind::kDiv && out.num_elements() > 0) {
      for (int64_t j = 0; j < b.num_elements(); ++j) {
        if (b.GetI64(j) == 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("integer division by zero: element ", j, " of the divisor is 0"));
        }
      }
    }
    ForEachBroadcast(node.shape(), args, [&](int64_t i, const int64_t* o) {
      out.SetI64(i, IntBinary(op, a.GetI64(o[0]), b.GetI64(o[1])));
    });
  } else {
    ForEachBroadcast(node.shape(), args, [&](int64_t i, const int64_t* o) {
      out.SetF64(i, FloatBinary(op, a.GetF64(o[0]), b.GetF64(o[1])));
    });
  }
  return out;
}

// Reductions walk the input in row-major order and accumulate into the output element the
// input maps to (the output viewed from the input through strides that are 0 on reduced
// axes), so each output's accumulation order is fixed: increasing input index. When the
// reduced axes are a trailing block (the common case: rows), rows are split across workers;
// each row is still summed in input order, so the result is the same as one thread's.
// Integer sums are exact (wrapping) in int64; integer means truncate toward zero, and an
// empty integer mean is 0. Float max/min propagate NaN.
absl::StatusOr<Tensor> EvalReduction(const Node& node, const Tensor& x) {
  const OpKind op = node.op();
  const Shape& in = x.shape();
  const int64_t rank = in.size();
  std::vector<bool> reduced(rank, node.attrs().GetInts("axes").empty());
  for (int64_t axis : node.attrs().GetInts("axes")) reduced[axis < 0 ? axis + rank : axis] = true;
  Shape kept(in);
  int64_t count = 1;
  bool trailing = true;  // reduced axes form a suffix of the shape
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d]) {
      kept[d] = 1;
      count *= in[d];
    } else if (d > 0 && reduced[d - 1]) {
      trailing = false;
    }
  }
  std::vector<int64_t> out_strides = RowMajorStrides(kept);
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d]) out_strides[d] = 0;
  }
  Tensor out(node.dtype(), node.shape());
  const int64_t n_out = out.num_elements();
  const int64_t n_in = x.num_elements();
  const bool is_max = op == OpKind::kReduceMax, is_min = op == OpKind::kReduceMin;
  // Runs accumulate(walker, begin, end) over input ranges: rows in parallel when trailing.
  auto for_input = [&](const auto& accumulate) {
    auto run = [&](int64_t begin, int64_t end) {
      IndexWalker walker(in, {out_strides});
      walker.Seek(begin);
      accumulate(walker, begin, end);
    };
    if (trailing && count > 0) {
      ParallelFor(n_out, std::max<int64_t>(1, (int64_t{1} << 16) / count),
                  [&](int64_t r0, int64_t r1) { run(r0 * count, r1 * count); });
    } else {
      run(0, n_in);
    }
  };

  if (IsInteger(x.dtype())) {
    const bool i32 = x.dtype() == DType::kI32;
    int64_t init = 0;
    if (is_max) init = i32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
    if (is_min) init = i32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
    std::vector<int64_t> acc(n_out, init);
    for_input([&](IndexWalker& walker, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i, walker.Next()) {
        const int64_t v = x.GetI64(i);
        int64_t& a = acc[walker.offset(0)];
        if (is_max) a = std::max(a, v);
        else if (is_min) a = std::min(a, v);
        else a = Wrap(static_cast<uint64_t>(a) + static_cast<uint64_t>(v));
      }
    });
    for (int64_t j = 0; j < n_out; ++j) {
      int64_t v = acc[j];
      if (op == OpKind::kReduceMean) v = count == 0 ? 0 : v / count;
      out.SetI64(j, v);
    }
    return out;
  }

  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> acc(n_out, is_max ? -inf : is_min ? inf : 0.0);
  for_input([&](IndexWalker& walker, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i, walker.Next()) {
      const double v = x.GetF64(i);
      double& a = acc[walker.offset(0)];
      if (is_max) {
        if ((std::isnan(v) || v > a) && !std::isnan(a)) a = v;
      } else if (is_min) {
        if ((std::isnan(v) || v < a) && !std::isnan(a)) a = v;
      } else {
        a += v;
      }
    }
  });
  for (int64_t j = 0; j < n_out; ++j) {
    double v = acc[j];
    if (op == OpKind::kReduceMean) v /= static_cast<double>(count);  // empty: 0/0 = NaN
    out.SetF64(j, v);
  }
  return out;
}

namespace {

// Copies element `from` of src to element `to` of dst (same dtype): layout ops move bytes,
// so they are exact for every dtype.
inline void CopyElement(const Tensor& src, int64_t from, Tensor& dst, int64_t to, int64_t size) {
  std::memcpy(dst.data() + to * size, src.data() + from * size, size);
}

// out[i] = x[offset of the walker], for strides/bases given over the output shape.
Tensor StridedCopy(const Node& node, const Tensor& x, std::vector<int64_t> strides, int64_t base) {
  Tensor out(node.dtype(), node.shape());
  const int64_t size = ByteSize(x.dtype());
  ParallelFor(out.num_elements(), 1 << 16, [&](int64_t begin, int64_t end) {
    IndexWalker walker(node.shape(), {strides}, {base});
    walker.Seek(begin);
    for (int64_t i = begin; i < end; ++i, walker.Next()) CopyElement(x, walker.offset(0), out, i, size);
  });
  return out;
}

absl::StatusOr<Tensor> EvalGather(const Node& node, const Tensor& x, const Tensor& indices) {
  const Shape& s = x.shape();
  const int64_t rank = s.size();
  int64_t axis = node.attrs().GetInt("axis");
  if (axis < 0) axis += rank;
  const int64_t extent = s[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= s[d];
  const int64_t n_idx = indices.num_elements();
  std::vector<int64_t> idx(n_idx);
  for (int64_t j = 0; j < n_idx; ++j) {
    int64_t v = indices.GetI64(j);
    if (v < -extent || v >= extent) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gather index ", v, " at position ", j, " of the indices is out of range for axis ",
          axis, " of extent ", extent, " (valid: [", -extent, ", ", extent, "))"));
    }
    idx[j] = v < 0 ? v + extent : v;
  }
  Tensor out(node.dtype(), node.shape());
  const int64_t size = ByteSize(x.dtype());
  const int64_t block = inner * size;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n_idx; ++j) {
      std::memcpy(out.data() + ((o * n_idx + j) * inner) * size,
                  x.data() + ((o * extent + idx[j]) * inner) * size, block);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<Tensor> EvalLayout(const Node& node, const std::vector<const Tensor*>& args) {
  const Tensor& x = *args[0];
  const Shape& s = x.shape();
  const int64_t rank = s.size();
  const std::vector<int64_t> in_strides = RowMajorStrides(s);
  switch (node.op()) {
    case OpKind::kReshape: {
      Tensor out(node.dtype(), node.shape());
      if (out.num_bytes() > 0) std::memcpy(out.data(), x.data(), out.num_bytes());
      return out;
    }
    case OpKind::kTranspose: {
      const auto& perm = node.attrs().GetInts("perm");
      std::vector<int64_t> strides(rank);
      for (int64_t d = 0; d < rank; ++d) strides[d] = in_strides[perm[d]];
      return StridedCopy(node, x, strides, 0);
    }
    case OpKind::kSlice: {
      // Same normalisation as shape inference: negative starts/ends count from the end,
      // then both clamp to [0, extent].
      const auto &starts = node.attrs().GetInts("starts");
      std::vector<int64_t> steps = node.attrs().GetInts("steps");
      if (steps.empty()) steps.assign(rank, 1);
      std::vector<int64_t> strides(rank);
      int64_t base = 0;
      for (int64_t d = 0; d < rank; ++d) {
        int64_t b = starts[d] < 0 ? starts[d] + s[d] : starts[d];
        b = std::clamp<int64_t>(b, 0, s[d]);
        base += b * in_strides[d];
        strides[d] = in_strides[d] * steps[d];
      }
      return StridedCopy(node, x, strides, base);
    }
    case OpKind::kBroadcastTo:
      return StridedCopy(node, x, BroadcastStrides(s, node.shape()), 0);
    case OpKind::kConcat: {
      int64_t axis = node.attrs().GetInt("axis");
      if (axis < 0) axis += rank;
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= s[d];
      for (int64_t d = axis + 1; d < rank; ++d) inner *= s[d];
      Tensor out(node.dtype(), node.shape());
      const int64_t size = ByteSize(x.dtype());
      uint8_t* dst = out.data();
      for (int64_t o = 0; o < outer; ++o) {
        for (const Tensor* t : args) {
          int64_t block = t->shape()[axis] * inner * size;
          if (block > 0) std::memcpy(dst, t->data() + o * block, block);
          dst += block;
        }
      }
      return out;
    }
    case OpKind::kGather: return EvalGather(node, x, *args[1]);
    default:
      KILN_CHECK(false) << "not a layout op: " << OpName(node.op());
      return absl::InternalError("unreachable");
  }
}

}  // namespace kiln::interp
