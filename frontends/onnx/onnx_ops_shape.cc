// ONNX converters, part 2: shapes, layout and matrix products. Shape-valued inputs
// (Reshape's shape, Expand's shape, Slice's starts/ends/axes/steps, Split's split,
// Squeeze/Unsqueeze axes, Tile's repeats, ConstantOfShape's shape, Range's bounds) must be
// constants -- folded from initializers, Constant nodes and the static shapes Shape reports --
// because kiln shapes are static. Shape and Size fold to constants. Flatten, Squeeze and
// Unsqueeze become reshape; Expand becomes broadcast_to; Split becomes slices; Gemm becomes
// transposes + matmul + mul/add; MatMul with 1-D operands is a reshaped 2-D matmul; Tile is
// reshape + broadcast_to + reshape.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/onnx/onnx_context.h"
#include "frontends/onnx/onnx_tensor.h"
#include "ir/base/status.h"

namespace kiln::onnx_internal {
namespace {

constexpr char kStatic[] = "kiln shapes are static";

int64_t Rank(const Node* x) { return static_cast<int64_t>(x->shape().size()); }

// Normalises `axis` into [0, rank) (or [0, rank] with `inclusive`), naming it in the error.
absl::StatusOr<int64_t> Axis(NodeContext& ctx, int64_t axis, int64_t rank, const char* what,
                             bool inclusive = false) {
  int64_t limit = inclusive ? rank + 1 : rank;
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= limit) {
    return ctx.Error(absl::StrCat(what, " ", axis, " is out of range for rank ", rank));
  }
  return a;
}

absl::Status Reshape(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"allowzero"}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> spec, ctx.ConstInts(1, kStatic));
  KILN_ASSIGN_OR_RETURN(int64_t allowzero, ctx.AttrInt("allowzero", 0));
  Shape out(spec.size());
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (spec[i] == 0 && !allowzero) {
      if (i >= x->shape().size()) return ctx.Error(absl::StrCat("shape[", i, "] = 0 copies a dimension the input lacks"));
      out[i] = x->shape()[i];
    } else if (spec[i] == -1) {
      if (infer >= 0) return ctx.Error("at most one -1 in the shape");
      infer = i;
      continue;
    } else if (spec[i] < 0) {
      return ctx.Error(absl::StrCat("bad dimension ", spec[i], " in shape"));
    } else {
      out[i] = spec[i];
    }
    if (out[i] != 0 && known > (int64_t{1} << 48) / out[i]) {
      return ctx.Error(absl::StrCat("shape [", absl::StrJoin(spec, ","), "] has more than 2^48 elements"));
    }
    known *= out[i];
  }
  if (infer >= 0) {
    if (known == 0 || x->num_elements() % known != 0) {
      return ctx.Error(absl::StrCat("cannot infer the -1 in [", absl::StrJoin(spec, ","), "] for ",
                                    ShapeToString(x->shape())));
    }
    out[infer] = x->num_elements() / known;
  }
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Reshape(x, out));
  return ctx.SetOutput(0, y);
}

absl::Status Flatten(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"axis"}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.AttrInt("axis", 1));
  KILN_ASSIGN_OR_RETURN(axis, Axis(ctx, axis, Rank(x), "axis", /*inclusive=*/true));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < Rank(x); ++d) (d < axis ? outer : inner) *= x->shape()[d];
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Reshape(x, {outer, inner}));
  return ctx.SetOutput(0, y);
}

absl::Status Squeeze(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  std::vector<bool> drop(Rank(x), false);
  if (ctx.has_input(1)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.ConstInts(1, kStatic));
    for (int64_t a : axes) {
      KILN_ASSIGN_OR_RETURN(int64_t d, Axis(ctx, a, Rank(x), "axis"));
      if (x->shape()[d] != 1) {
        return ctx.Error(absl::StrCat("cannot squeeze axis ", a, " of extent ", x->shape()[d]));
      }
      drop[d] = true;
    }
  } else {
    for (int64_t d = 0; d < Rank(x); ++d) drop[d] = x->shape()[d] == 1;
  }
  Shape out;
  for (int64_t d = 0; d < Rank(x); ++d) if (!drop[d]) out.push_back(x->shape()[d]);
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Reshape(x, out));
  return ctx.SetOutput(0, y);
}

absl::Status Unsqueeze(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.ConstInts(1, kStatic));
  const int64_t rank = Rank(x) + static_cast<int64_t>(axes.size());
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    KILN_ASSIGN_OR_RETURN(int64_t d, Axis(ctx, a, rank, "axis"));
    if (inserted[d]) return ctx.Error(absl::StrCat("axis ", a, " is repeated"));
    inserted[d] = true;
  }
  Shape out;
  for (int64_t d = 0, k = 0; d < rank; ++d) out.push_back(inserted[d] ? 1 : x->shape()[k++]);
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Reshape(x, out));
  return ctx.SetOutput(0, y);
}

absl::Status Transpose(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"perm"}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(auto perm, ctx.AttrInts("perm"));
  std::vector<int64_t> p;
  if (perm) {
    p = *perm;
  } else {
    for (int64_t d = Rank(x) - 1; d >= 0; --d) p.push_back(d);
  }
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Transpose(x, p));
  return ctx.SetOutput(0, y);
}

absl::Status Expand(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ctx.ConstInts(1, kStatic));
  absl::StatusOr<Shape> out = BroadcastShapes(x->shape(), shape);
  if (!out.ok()) return ctx.Annotate(out.status());
  Node* y = x;
  if (*out != x->shape()) { KILN_ASSIGN_OR_RETURN(y, ctx.Op(OpKind::kBroadcastTo, {x}, {{"shape", *out}})); }
  return ctx.SetOutput(0, y);
}

absl::Status Slice(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  const Shape& s = x->shape();
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> starts, ctx.ConstInts(1, kStatic));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> ends, ctx.ConstInts(2, kStatic));
  std::vector<int64_t> axes, steps;
  if (ctx.has_input(3)) {
    KILN_ASSIGN_OR_RETURN(axes, ctx.ConstInts(3, kStatic));
  } else {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(i);
  }
  if (ctx.has_input(4)) {
    KILN_ASSIGN_OR_RETURN(steps, ctx.ConstInts(4, kStatic));
  } else {
    steps.assign(starts.size(), 1);
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    return ctx.Error("starts, ends, axes and steps must have the same length");
  }
  std::vector<int64_t> b(s.size(), 0), e(s.begin(), s.end()), st(s.size(), 1);
  std::vector<bool> seen(s.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(int64_t d, Axis(ctx, axes[i], Rank(x), "axis"));
    if (seen[d]) return ctx.Error(absl::StrCat("axis ", axes[i], " is repeated"));
    seen[d] = true;
    if (steps[i] == 0) return ctx.Error("a step of 0 is invalid");
    if (steps[i] < 0) {
      return ctx.Unsupported(absl::StrCat("negative step ", steps[i], " on axis ", axes[i],
                                          " is not supported (kiln's slice steps forward only)"),
                             "attribute Slice negative step");
    }
    auto clamp = [&](int64_t v) {
      if (v < 0) v = v < -s[d] ? 0 : v + s[d];
      return std::min(v, s[d]);
    };
    b[d] = clamp(starts[i]);
    e[d] = clamp(ends[i]);
    st[d] = steps[i];
  }
  Node* y = x;
  bool identity = true;
  for (size_t d = 0; d < s.size(); ++d) identity = identity && b[d] == 0 && e[d] == s[d] && st[d] == 1;
  if (!identity) {
    KILN_ASSIGN_OR_RETURN(y, ctx.Op(OpKind::kSlice, {x}, {{"starts", b}, {"ends", e}, {"steps", st}}));
  }
  return ctx.SetOutput(0, y);
}

absl::Status Concat(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"axis"}));
  if (ctx.Attr("axis") == nullptr) return ctx.Error("attribute \"axis\" is required");
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.AttrInt("axis", 0));
  std::vector<Node*> xs;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(i));
    xs.push_back(x);
  }
  if (xs.empty()) return ctx.Error("needs at least one input");
  KILN_ASSIGN_OR_RETURN(axis, Axis(ctx, axis, Rank(xs[0]), "axis"));
  // Empty operands contribute nothing (ONNX allows them; one is kept if all are empty).
  std::vector<Node*> kept;
  for (Node* x : xs) if (x->num_elements() > 0) kept.push_back(x);
  if (kept.empty()) kept.push_back(xs[0]);
  Node* y = kept[0];
  if (kept.size() > 1) { KILN_ASSIGN_OR_RETURN(y, ctx.Op(OpKind::kConcat, kept, {{"axis", axis}})); }
  return ctx.SetOutput(0, y);
}

absl::Status Split(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"axis", "num_outputs"}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.AttrInt("axis", 0));
  KILN_ASSIGN_OR_RETURN(axis, Axis(ctx, axis, Rank(x), "axis"));
  const int64_t dim = x->shape()[axis];
  std::vector<int64_t> sizes;
  if (ctx.has_input(1)) {
    KILN_ASSIGN_OR_RETURN(sizes, ctx.ConstInts(1, kStatic));
  } else {
    KILN_ASSIGN_OR_RETURN(int64_t n, ctx.AttrInt("num_outputs", ctx.num_outputs()));
    if (n <= 0) return ctx.Error("num_outputs must be positive");
    // Before 18 the split must be even; from 18 the last chunk may be smaller.
    int64_t chunk = ctx.Attr("num_outputs") ? (dim + n - 1) / n : dim / n;
    if (!ctx.Attr("num_outputs") && dim % n != 0) {
      return ctx.Error(absl::StrCat("axis of extent ", dim, " does not split evenly into ", n));
    }
    for (int64_t i = 0; i < n; ++i) sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
  }
  int64_t total = 0;
  bool sizes_fit = true;  // each in [0, dim], so the sum cannot overflow
  for (int64_t v : sizes) {
    sizes_fit &= v >= 0 && v <= dim;
    if (sizes_fit) total += v;
  }
  if (!sizes_fit || total != dim || static_cast<int>(sizes.size()) != ctx.num_outputs()) {
    return ctx.Error(absl::StrCat("split sizes [", absl::StrJoin(sizes, ","), "] must sum to ", dim, " and give ",
                                  ctx.num_outputs(), " outputs"));
  }
  int64_t begin = 0;
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    std::vector<int64_t> b(Rank(x), 0), e(x->shape().begin(), x->shape().end());
    b[axis] = begin;
    e[axis] = begin + sizes[i];
    begin += sizes[i];
    if (!ctx.wants_output(i)) continue;
    Node* y = x;
    if (sizes[i] != dim) {
      KILN_ASSIGN_OR_RETURN(y, ctx.Op(OpKind::kSlice, {x}, {{"starts", b}, {"ends", e}}));
    }
    KILN_RETURN_IF_ERROR(ctx.SetOutput(i, y));
  }
  return absl::OkStatus();
}

absl::Status Gather(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"axis"}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(Node * idx, ctx.Input(1));
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.AttrInt("axis", 0));
  KILN_ASSIGN_OR_RETURN(axis, Axis(ctx, axis, Rank(x), "axis"));
  const int64_t dim = x->shape()[axis];
  if (!IsInteger(idx->dtype())) return ctx.Error("indices must be int32 or int64");
  // ONNX indices may be negative (counted from the end); kiln's gather takes [0, dim).
  if (idx->op() == OpKind::kConstant) {
    Tensor t = *idx->value();
    bool changed = false;
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      int64_t v = t.GetI64(i);
      if (v < -dim || v >= dim) return ctx.Error(absl::StrCat("index ", v, " is out of range for extent ", dim));
      if (v < 0) { t.SetI64(i, v + dim); changed = true; }
    }
    if (changed) { KILN_ASSIGN_OR_RETURN(idx, ctx.Const(std::move(t))); }
  } else {
    KILN_ASSIGN_OR_RETURN(Node * zero, ctx.Scalar(0, idx->dtype()));
    KILN_ASSIGN_OR_RETURN(Node * n, ctx.Scalar(static_cast<double>(dim), idx->dtype()));
    KILN_ASSIGN_OR_RETURN(Node * neg, ctx.Op(OpKind::kLt, {idx, zero}));
    KILN_ASSIGN_OR_RETURN(Node * wrapped, ctx.Op(OpKind::kAdd, {idx, n}));
    KILN_ASSIGN_OR_RETURN(idx, ctx.Op(OpKind::kWhere, {neg, wrapped, idx}));
  }
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Op(OpKind::kGather, {x, idx}, {{"axis", axis}}));
  return ctx.SetOutput(0, y);
}

absl::Status ShapeOp(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"start", "end"}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  const int64_t r = Rank(x);
  KILN_ASSIGN_OR_RETURN(int64_t start, ctx.AttrInt("start", 0));
  KILN_ASSIGN_OR_RETURN(int64_t end, ctx.AttrInt("end", r));
  auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
  start = clamp(start);
  end = clamp(end);
  Tensor t(DType::kI64, {std::max<int64_t>(0, end - start)});
  for (int64_t d = start; d < end; ++d) t.SetI64(d - start, x->shape()[d]);
  KILN_ASSIGN_OR_RETURN(Node * c, ctx.Const(std::move(t)));
  return ctx.SetOutput(0, c);
}

absl::Status Size(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  Tensor t(DType::kI64, {});
  t.SetI64(0, x->num_elements());
  KILN_ASSIGN_OR_RETURN(Node * c, ctx.Const(std::move(t)));
  return ctx.SetOutput(0, c);
}

absl::Status ConstantOfShape(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"value"}));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ctx.ConstInts(0, kStatic));
  Tensor scalar(DType::kF32, {});
  if (const onnx::AttributeProto* a = ctx.Attr("value")) {
    absl::StatusOr<Tensor> v = TensorFromOnnx(a->t(), ctx.model_dir(), /*allow_double=*/true);
    if (!v.ok()) return ctx.Annotate(v.status());
    if (v->num_elements() != 1) return ctx.Error("attribute value must hold exactly one element");
    scalar = Tensor(v->dtype(), {});
    std::memcpy(scalar.data(), v->data(), ByteSize(v->dtype()));
  }
  for (int64_t d : shape) if (d < 0) return ctx.Error(absl::StrCat("negative dimension ", d));
  KILN_ASSIGN_OR_RETURN(Node * c, ctx.Const(std::move(scalar)));
  Node* y = c;
  if (!shape.empty()) { KILN_ASSIGN_OR_RETURN(y, ctx.Op(OpKind::kBroadcastTo, {c}, {{"shape", shape}})); }
  return ctx.SetOutput(0, y);
}

absl::Status Range(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  constexpr char kWhy[] = "its length sets a static shape";
  const Tensor* v[3];
  for (int i = 0; i < 3; ++i) {
    KILN_ASSIGN_OR_RETURN(v[i], ctx.ConstInput(i, kWhy));
    if (v[i]->num_elements() != 1) return ctx.Error(absl::StrCat("input ", i, " must be a scalar"));
  }
  const DType dtype = v[0]->dtype();
  if (v[1]->dtype() != dtype || v[2]->dtype() != dtype) {
    return ctx.Error(absl::StrCat("start, limit and delta must have one dtype, not ", DTypeName(v[0]->dtype()), ", ",
                                  DTypeName(v[1]->dtype()), " and ", DTypeName(v[2]->dtype())));
  }
  // The output is a constant made now, so its length is bounded before it is allocated (and
  // computed without overflow: in 128 bits, or checked finite for floats).
  constexpr int64_t kMaxRange = int64_t{1} << 26;
  auto too_long = [&](const std::string& n) {
    return ctx.Error(absl::StrCat("Range of ", n, " elements is over kiln's limit of ", kMaxRange,
                                  " (the output is a constant made at import)"));
  };
  Tensor out;
  if (IsInteger(dtype)) {
    int64_t start = v[0]->GetI64(0), limit = v[1]->GetI64(0), delta = v[2]->GetI64(0);
    if (delta == 0) return ctx.Error("delta must not be 0");
    __int128 span = static_cast<__int128>(limit) - start;
    __int128 n128 = span / delta + (span % delta != 0 && (span < 0) == (delta < 0) ? 1 : 0);
    if (n128 > kMaxRange) return too_long(absl::StrCat(static_cast<double>(n128)));
    const int64_t n = n128 > 0 ? static_cast<int64_t>(n128) : 0;  // n128 may be below INT64_MIN
    out = Tensor(dtype, {n});
    // start + i * delta lies between start and limit, but i * delta alone can overflow.
    for (int64_t i = 0; i < n; ++i) out.SetI64(i, static_cast<int64_t>(start + static_cast<__int128>(i) * delta));
  } else {
    double start = v[0]->GetF64(0), limit = v[1]->GetF64(0), delta = v[2]->GetF64(0);
    if (delta == 0) return ctx.Error("delta must not be 0");
    double length = std::ceil((limit - start) / delta);
    if (std::isnan(length)) return ctx.Error("start, limit and delta must be finite");
    if (length > kMaxRange) return too_long(absl::StrCat(length));
    const int64_t n = length > 0 ? static_cast<int64_t>(length) : 0;  // (-1e30 would not convert)
    out = Tensor(dtype, {n});
    for (int64_t i = 0; i < n; ++i) out.SetF64(i, start + static_cast<double>(i) * delta);
  }
  KILN_ASSIGN_OR_RETURN(Node * c, ctx.Const(std::move(out)));
  return ctx.SetOutput(0, c);
}

absl::Status Tile(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> reps, ctx.ConstInts(1, kStatic));
  if (static_cast<int64_t>(reps.size()) != Rank(x)) return ctx.Error("repeats needs one entry per axis");
  Shape split, target, out;
  for (int64_t d = 0; d < Rank(x); ++d) {
    if (reps[d] < 0) return ctx.Error("repeats must be >= 0");
    split.push_back(1);
    split.push_back(x->shape()[d]);
    target.push_back(reps[d]);
    target.push_back(x->shape()[d]);
    int64_t extent;
    if (__builtin_mul_overflow(reps[d], x->shape()[d], &extent)) {
      return ctx.Error(absl::StrCat("repeats ", reps[d], " times extent ", x->shape()[d], " overflows int64"));
    }
    out.push_back(extent);
  }
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Reshape(x, split));
  KILN_ASSIGN_OR_RETURN(y, ctx.Op(OpKind::kBroadcastTo, {y}, {{"shape", target}}));
  KILN_ASSIGN_OR_RETURN(y, ctx.Reshape(y, out));
  return ctx.SetOutput(0, y);
}

absl::Status MatMul(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  KILN_ASSIGN_OR_RETURN(Node * a, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(Node * b, ctx.Input(1));
  if (Rank(a) == 0 || Rank(b) == 0) return ctx.Error("MatMul operands must have rank >= 1");
  const bool a_vec = Rank(a) == 1, b_vec = Rank(b) == 1;
  if (a_vec) { KILN_ASSIGN_OR_RETURN(a, ctx.Reshape(a, {1, a->shape()[0]})); }
  if (b_vec) { KILN_ASSIGN_OR_RETURN(b, ctx.Reshape(b, {b->shape()[0], 1})); }
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Op(OpKind::kMatmul, {a, b}));
  if (a_vec || b_vec) {
    Shape s = y->shape();
    if (b_vec) s.pop_back();
    if (a_vec) s.erase(s.end() - (b_vec ? 1 : 2));
    KILN_ASSIGN_OR_RETURN(y, ctx.Reshape(y, s));
  }
  return ctx.SetOutput(0, y);
}

// Gemm: Y = alpha * A' B' + beta * C, A' = transA ? A^T : A, B' likewise; C broadcasts.
absl::Status Gemm(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"alpha", "beta", "transA", "transB"}));
  KILN_ASSIGN_OR_RETURN(Node * a, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(Node * b, ctx.Input(1));
  if (Rank(a) != 2 || Rank(b) != 2) return ctx.Error("A and B must be 2-D");
  KILN_ASSIGN_OR_RETURN(float alpha, ctx.AttrFloat("alpha", 1.0f));
  KILN_ASSIGN_OR_RETURN(float beta, ctx.AttrFloat("beta", 1.0f));
  KILN_ASSIGN_OR_RETURN(int64_t ta, ctx.AttrInt("transA", 0));
  KILN_ASSIGN_OR_RETURN(int64_t tb, ctx.AttrInt("transB", 0));
  if (ta) { KILN_ASSIGN_OR_RETURN(a, ctx.Transpose(a, {1, 0})); }
  if (tb) { KILN_ASSIGN_OR_RETURN(b, ctx.Transpose(b, {1, 0})); }
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Op(OpKind::kMatmul, {a, b}));
  if (alpha != 1.0f) {
    KILN_ASSIGN_OR_RETURN(Node * s, ctx.Scalar(alpha, y->dtype()));
    KILN_ASSIGN_OR_RETURN(y, ctx.Op(OpKind::kMul, {y, s}));
  }
  if (Node* c = ctx.OptionalInput(2)) {
    if (beta != 1.0f) {
      KILN_ASSIGN_OR_RETURN(Node * s, ctx.Scalar(beta, c->dtype()));
      KILN_ASSIGN_OR_RETURN(c, ctx.Op(OpKind::kMul, {c, s}));
    }
    KILN_ASSIGN_OR_RETURN(y, ctx.Op(OpKind::kAdd, {y, c}));
  }
  return ctx.SetOutput(0, y);
}

}  // namespace

// Trilu (14): keeps the upper (upper = 1) or lower triangle of the last two axes, counted from
// diagonal k (a constant input, default 0): y = where(j - i >= k (upper) | j - i <= k, x, 0),
// with i, j from iotas, so a causal mask written with Trilu stays a fusible, foldable pattern.
absl::Status Trilu(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"upper"}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(int64_t upper, ctx.AttrInt("upper", 1));
  int64_t k = 0;
  if (ctx.has_input(1)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> ks, ctx.ConstInts(1, "Trilu's diagonal k"));
    if (ks.size() != 1) return ctx.Error("k must be a scalar");
    k = ks[0];
  }
  size_t rank = x->shape().size();
  if (rank < 2) return ctx.Error("Trilu needs rank >= 2");
  Shape plane = {x->shape()[rank - 2], x->shape()[rank - 1]};
  KILN_ASSIGN_OR_RETURN(Node * i, ctx.Op(OpKind::kIota, {}, {{"shape", plane}, {"axis", int64_t{0}}, {"dtype", std::string("i64")}}));
  KILN_ASSIGN_OR_RETURN(Node * j, ctx.Op(OpKind::kIota, {}, {{"shape", plane}, {"axis", int64_t{1}}, {"dtype", std::string("i64")}}));
  KILN_ASSIGN_OR_RETURN(Node * d, ctx.Op(OpKind::kSub, {j, i}));
  KILN_ASSIGN_OR_RETURN(Node * kc, ctx.Scalar(static_cast<double>(k), DType::kI64));
  KILN_ASSIGN_OR_RETURN(Node * keep, ctx.Op(upper ? OpKind::kGe : OpKind::kLe, {d, kc}));
  KILN_ASSIGN_OR_RETURN(Node * zero, ctx.Scalar(0.0, x->dtype()));
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Op(OpKind::kWhere, {keep, x, zero}));
  return ctx.SetOutput(0, y);
}

void RegisterShapeOps(ConverterTable& t) {
  t["Trilu"] = Trilu;
  t["Reshape"] = Reshape;
  t["Flatten"] = Flatten;
  t["Squeeze"] = Squeeze;
  t["Unsqueeze"] = Unsqueeze;
  t["Transpose"] = Transpose;
  t["Expand"] = Expand;
  t["Slice"] = Slice;
  t["Concat"] = Concat;
  t["Split"] = Split;
  t["Gather"] = Gather;
  t["Shape"] = ShapeOp;
  t["Size"] = Size;
  t["ConstantOfShape"] = ConstantOfShape;
  t["Range"] = Range;
  t["Tile"] = Tile;
  t["MatMul"] = MatMul;
  t["Gemm"] = Gemm;
}

}  // namespace kiln::onnx_internal
