// ONNX converters, part 1: elementwise math, comparisons and logic, variadic Max/Min/Sum/Mean,
// Clip, Cast/CastLike, Where, Identity, Constant, and the Reduce* family (axes as an
// attribute before opset 18 -- 13 for ReduceSum -- and as an optional input from then on;
// keepdims; noop_with_empty_axes). Mod is supported on constants only (it is folded; kiln
// has no mod op). Opsets 13..23 of each op are covered: where an op changed within that
// range the converter reads the node's opset (ctx.opset()).
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/onnx_context.h"
#include "frontends/onnx/onnx_tensor.h"
#include "ir/base/status.h"

namespace kiln::onnx_internal {
namespace {

template <OpKind kOp>
absl::Status Unary(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Op(kOp, {x}));
  return ctx.SetOutput(0, y);
}

template <OpKind kOp>
absl::Status Binary(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  KILN_ASSIGN_OR_RETURN(Node * a, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(Node * b, ctx.Input(1));
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Op(kOp, {a, b}));
  return ctx.SetOutput(0, y);
}

// Pow: the exponent may have another numeric type than the base; it is cast to the base's.
absl::Status Pow(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  KILN_ASSIGN_OR_RETURN(Node * a, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(Node * b, ctx.Input(1));
  if (!IsFloat(a->dtype())) {
    return ctx.Unsupported(absl::StrCat("Pow with a ", DTypeName(a->dtype()), " base is not supported (kiln's pow is "
                                        "float-only)"),
                           "dtype Pow integer base");
  }
  KILN_ASSIGN_OR_RETURN(b, ctx.Cast(b, a->dtype()));
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Op(OpKind::kPow, {a, b}));
  return ctx.SetOutput(0, y);
}

// Max, Min, Sum, Mean: variadic, folded left to right with numpy broadcasting.
template <OpKind kOp, bool kMean = false>
absl::Status Variadic(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  if (ctx.num_inputs() < 1) return ctx.Error("needs at least one input");
  KILN_ASSIGN_OR_RETURN(Node * acc, ctx.Input(0));
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(i));
    KILN_ASSIGN_OR_RETURN(acc, ctx.Op(kOp, {acc, x}));
  }
  if (kMean && ctx.num_inputs() > 1) {
    KILN_ASSIGN_OR_RETURN(Node * n, ctx.Scalar(ctx.num_inputs(), acc->dtype()));
    KILN_ASSIGN_OR_RETURN(acc, ctx.Op(OpKind::kDiv, {acc, n}));
  }
  return ctx.SetOutput(0, acc);
}

// Clip(x, min?, max?) = minimum(maximum(x, min), max).
absl::Status Clip(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Input(0));
  if (Node* lo = ctx.OptionalInput(1)) { KILN_ASSIGN_OR_RETURN(y, ctx.Op(OpKind::kMaximum, {y, lo})); }
  if (Node* hi = ctx.OptionalInput(2)) { KILN_ASSIGN_OR_RETURN(y, ctx.Op(OpKind::kMinimum, {y, hi})); }
  return ctx.SetOutput(0, y);
}

absl::Status CastTo(NodeContext& ctx, Node* x, int32_t onnx_type) {
  absl::StatusOr<DType> to = DTypeFromOnnx(onnx_type);
  if (!to.ok()) {
    return ctx.Unsupported(absl::StrCat("cast to ", OnnxTypeName(onnx_type), " is not supported (kiln has FLOAT, "
                                        "FLOAT16, BFLOAT16, INT32, INT64, BOOL)"),
                           absl::StrCat("dtype ", OnnxTypeName(onnx_type)));
  }
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Cast(x, *to));
  return ctx.SetOutput(0, y);
}

absl::Status Cast(NodeContext& ctx) {
  // saturate (19+) only affects float8 targets, which are refused anyway.
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"to", "saturate"}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  if (ctx.Attr("to") == nullptr) return ctx.Error("attribute \"to\" is required");
  KILN_ASSIGN_OR_RETURN(int64_t to, ctx.AttrInt("to", 0));
  return CastTo(ctx, x, static_cast<int32_t>(to));
}

absl::Status CastLike(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"saturate"}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(Node * like, ctx.Input(1));
  return CastTo(ctx, x, OnnxTypeFromDType(like->dtype()));
}

absl::Status Where(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  KILN_ASSIGN_OR_RETURN(Node * c, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(Node * a, ctx.Input(1));
  KILN_ASSIGN_OR_RETURN(Node * b, ctx.Input(2));
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Op(OpKind::kWhere, {c, a, b}));
  return ctx.SetOutput(0, y);
}

absl::Status Identity(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  return ctx.SetOutput(0, x);
}

absl::Status Constant(NodeContext& ctx) {
  if (ctx.proto().attribute_size() != 1) {
    return ctx.Error("needs exactly one of value, value_float, value_floats, value_int, value_ints");
  }
  const onnx::AttributeProto& a = ctx.proto().attribute(0);
  Tensor t;
  if (a.name() == "value") {
    absl::StatusOr<Tensor> v = TensorFromOnnx(a.t(), ctx.model_dir(), /*allow_double=*/true);
    if (!v.ok()) return ctx.Annotate(v.status());
    t = std::move(*v);
  } else if (a.name() == "value_float") {
    t = Tensor(DType::kF32, {});
    t.SetF64(0, a.f());
  } else if (a.name() == "value_int") {
    t = Tensor(DType::kI64, {});
    t.SetI64(0, a.i());
  } else if (a.name() == "value_floats") {
    t = Tensor(DType::kF32, {static_cast<int64_t>(a.floats_size())});
    for (int i = 0; i < a.floats_size(); ++i) t.SetF64(i, a.floats(i));
  } else if (a.name() == "value_ints") {
    t = Tensor(DType::kI64, {static_cast<int64_t>(a.ints_size())});
    for (int i = 0; i < a.ints_size(); ++i) t.SetI64(i, a.ints(i));
  } else {
    return ctx.Unsupported(absl::StrCat("Constant attribute ", Quote(a.name()), " is not supported (strings and "
                                        "sparse tensors have no kiln dtype)"),
                           absl::StrCat("attribute Constant.", a.name()));
  }
  KILN_ASSIGN_OR_RETURN(Node * c, ctx.Const(std::move(t)));
  return ctx.SetOutput(0, c);
}

// Mod on constants only: fmod=1 is C fmod, fmod=0 takes the divisor's sign (integers only).
absl::Status Mod(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"fmod"}));
  KILN_ASSIGN_OR_RETURN(int64_t fmod, ctx.AttrInt("fmod", 0));
  constexpr char kWhy[] = "kiln has no mod op, so Mod is evaluated at import time";
  KILN_ASSIGN_OR_RETURN(const Tensor* a, ctx.ConstInput(0, kWhy));
  KILN_ASSIGN_OR_RETURN(const Tensor* b, ctx.ConstInput(1, kWhy));
  if (a->dtype() != b->dtype()) return ctx.Error("both inputs must have the same dtype");
  if (!IsInteger(a->dtype())) {
    return ctx.Unsupported("Mod of floats is not supported", "dtype Mod float");
  }
  KILN_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(a->shape(), b->shape()));
  Tensor out(a->dtype(), shape);
  // Broadcast by row-major index arithmetic.
  auto index_of = [&](const Tensor& t, int64_t i) {
    int64_t off = 0, stride = 1;
    const Shape& s = t.shape();
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      int64_t idx = i % shape[d];
      i /= shape[d];
      int td = d - (static_cast<int>(shape.size()) - static_cast<int>(s.size()));
      if (td >= 0) {
        if (s[td] != 1) off += idx * stride;
        stride *= s[td];
      }
    }
    return off;
  };
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    int64_t x = a->GetI64(index_of(*a, i)), y = b->GetI64(index_of(*b, i));
    if (y == 0) return ctx.Error("integer Mod by zero");
    int64_t r = y == -1 ? 0 : x % y;  // INT64_MIN % -1 overflows
    if (!fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
    out.SetI64(i, r);
  }
  KILN_ASSIGN_OR_RETURN(Node * c, ctx.Const(std::move(out)));
  return ctx.SetOutput(0, c);
}

// ---- reductions -------------------------------------------------------------------------

enum class Reduce { kSum, kMean, kMax, kMin, kSumSquare, kL1, kL2, kLogSum, kLogSumExp };

template <Reduce kKind>
absl::Status ReduceOp(NodeContext& ctx) {
  // Axes moved from an attribute to an input in ReduceSum-13 and the others' 18.
  const bool axes_input = kKind == Reduce::kSum ? true : ctx.opset() >= 18;
  if (axes_input) {
    KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"keepdims", "noop_with_empty_axes"}));
  } else {
    KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"keepdims", "axes"}));
  }
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(int64_t keepdims, ctx.AttrInt("keepdims", 1));
  KILN_ASSIGN_OR_RETURN(int64_t noop, ctx.AttrInt("noop_with_empty_axes", 0));
  std::vector<int64_t> axes;
  if (axes_input) {
    if (ctx.has_input(1)) { KILN_ASSIGN_OR_RETURN(axes, ctx.ConstInts(1, "kiln reduces over static axes")); }
  } else {
    KILN_ASSIGN_OR_RETURN(auto attr, ctx.AttrInts("axes"));
    if (attr) axes = *attr;
  }
  if (axes.empty() && noop) return ctx.SetOutput(0, x);
  if (axes.empty()) {
    for (int64_t d = 0; d < static_cast<int64_t>(x->shape().size()); ++d) axes.push_back(d);
  }
  if (x->dtype() == DType::kBool) {
    return ctx.Unsupported("reductions of bool tensors are not supported", "dtype Reduce bool");
  }
  Attributes attrs{{"axes", axes}, {"keep_dims", keepdims != 0}};
  Node* in = x;
  if (kKind == Reduce::kSumSquare || kKind == Reduce::kL2) {
    KILN_ASSIGN_OR_RETURN(in, ctx.Op(OpKind::kMul, {x, x}));
  } else if (kKind == Reduce::kL1) {
    KILN_ASSIGN_OR_RETURN(in, ctx.Op(OpKind::kAbs, {x}));
  } else if (kKind == Reduce::kLogSumExp) {
    KILN_ASSIGN_OR_RETURN(in, ctx.Op(OpKind::kExp, {x}));
  }
  OpKind op = kKind == Reduce::kMean ? OpKind::kReduceMean
              : kKind == Reduce::kMax ? OpKind::kReduceMax
              : kKind == Reduce::kMin ? OpKind::kReduceMin
                                      : OpKind::kReduceSum;
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Op(op, {in}, attrs));
  if (kKind == Reduce::kL2) { KILN_ASSIGN_OR_RETURN(y, ctx.Op(OpKind::kSqrt, {y})); }
  if (kKind == Reduce::kLogSum || kKind == Reduce::kLogSumExp) { KILN_ASSIGN_OR_RETURN(y, ctx.Op(OpKind::kLog, {y})); }
  return ctx.SetOutput(0, y);
}

}  // namespace

void RegisterElementwiseOps(ConverterTable& t) {
  t["Neg"] = Unary<OpKind::kNeg>;
  t["Abs"] = Unary<OpKind::kAbs>;
  t["Exp"] = Unary<OpKind::kExp>;
  t["Log"] = Unary<OpKind::kLog>;
  t["Sqrt"] = Unary<OpKind::kSqrt>;
  t["Reciprocal"] = Unary<OpKind::kReciprocal>;
  t["Tanh"] = Unary<OpKind::kTanh>;
  t["Sigmoid"] = Unary<OpKind::kSigmoid>;
  t["Erf"] = Unary<OpKind::kErf>;
  t["Relu"] = Unary<OpKind::kRelu>;
  t["Not"] = Unary<OpKind::kLogicalNot>;
  t["Add"] = Binary<OpKind::kAdd>;
  t["Sub"] = Binary<OpKind::kSub>;
  t["Mul"] = Binary<OpKind::kMul>;
  t["Div"] = Binary<OpKind::kDiv>;
  t["Pow"] = Pow;
  t["Equal"] = Binary<OpKind::kEq>;
  t["Less"] = Binary<OpKind::kLt>;
  t["LessOrEqual"] = Binary<OpKind::kLe>;
  t["Greater"] = Binary<OpKind::kGt>;
  t["GreaterOrEqual"] = Binary<OpKind::kGe>;
  t["And"] = Binary<OpKind::kLogicalAnd>;
  t["Or"] = Binary<OpKind::kLogicalOr>;
  t["Xor"] = Binary<OpKind::kNe>;
  t["Max"] = Variadic<OpKind::kMaximum>;
  t["Min"] = Variadic<OpKind::kMinimum>;
  t["Sum"] = Variadic<OpKind::kAdd>;
  t["Mean"] = Variadic<OpKind::kAdd, true>;
  t["Clip"] = Clip;
  t["Cast"] = Cast;
  t["CastLike"] = CastLike;
  t["Where"] = Where;
  t["Identity"] = Identity;
  t["Constant"] = Constant;
  t["Mod"] = Mod;
  t["ReduceSum"] = ReduceOp<Reduce::kSum>;
  t["ReduceMean"] = ReduceOp<Reduce::kMean>;
  t["ReduceMax"] = ReduceOp<Reduce::kMax>;
  t["ReduceMin"] = ReduceOp<Reduce::kMin>;
  t["ReduceSumSquare"] = ReduceOp<Reduce::kSumSquare>;
  t["ReduceL1"] = ReduceOp<Reduce::kL1>;
  t["ReduceL2"] = ReduceOp<Reduce::kL2>;
  t["ReduceLogSum"] = ReduceOp<Reduce::kLogSum>;
  t["ReduceLogSumExp"] = ReduceOp<Reduce::kLogSumExp>;
}

}  // namespace kiln::onnx_internal
