#include "codegen/pointwise_expr.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "ir/base/status.h"
#include "ir/philox.h"

namespace kiln {

CType ComputeType(DType dtype) {
  switch (dtype) {
    case DType::kF32: case DType::kF16: case DType::kBF16: return CType::kFloat;
    case DType::kI32: case DType::kI64: return CType::kInt;
    case DType::kBool: return CType::kBool;
  }
  return CType::kFloat;
}

const char* CTypeName(CType type) {
  switch (type) {
    case CType::kFloat: return "float";
    case CType::kInt: return "long long";
    case CType::kBool: return "bool";
  }
  return "?";
}

const char* StorageTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "float";
    case DType::kF16: return "__half";
    case DType::kBF16: return "__nv_bfloat16";
    case DType::kI32: return "int";
    case DType::kI64: return "long long";
    case DType::kBool: return "unsigned char";
  }
  return "?";
}

TypedExpr Coerce(const TypedExpr& e, CType to) {
  if (e.type == to) return e;
  switch (to) {
    case CType::kFloat:
      if (e.type == CType::kBool) return {absl::StrCat("((", e.code, ") ? 1.0f : 0.0f)"), to};
      return {absl::StrCat("static_cast<float>(", e.code, ")"), to};
    case CType::kInt:
      if (e.type == CType::kBool) return {absl::StrCat("((", e.code, ") ? 1LL : 0LL)"), to};
      return {absl::StrCat("static_cast<long long>(", e.code, ")"), to};
    case CType::kBool:
      return {absl::StrCat("((", e.code, ") != 0)"), to};
  }
  return e;
}

std::string FloatLiteral(float value) {
  if (std::isnan(value)) return "kiln::kNaNF()";
  if (std::isinf(value)) return value > 0 ? "kiln::kInfF()" : "kiln::kNegInfF()";
  if (value == 0.0f) return std::signbit(value) ? "-0.0f" : "0.0f";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%af", static_cast<double>(value));  // exact, e.g. 0x1.8p+0f
  return buf;
}

std::string IntLiteral(int64_t value) {
  if (value == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1)";
  return absl::StrCat(value, "LL");
}

absl::StatusOr<TypedExpr> ConstantLiteral(const Node& constant) {
  const Tensor* t = constant.value();
  if (t == nullptr || t->num_elements() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("constant ", constant.name(), " is not a one-element constant"));
  }
  switch (ComputeType(t->dtype())) {
    case CType::kFloat:
      return TypedExpr{FloatLiteral(static_cast<float>(t->GetF64(0))), CType::kFloat};
    case CType::kInt:
      return TypedExpr{IntLiteral(t->GetI64(0)), CType::kInt};
    case CType::kBool:
      return TypedExpr{t->GetF64(0) != 0 ? "true" : "false", CType::kBool};
  }
  return absl::InternalError("unreachable");
}

// 1 / c rounded to f32, for a one-element constant c that is finite, non-zero and whose
// reciprocal is a normal f32. x * (1 / c) is within 1.5 ulp of the correctly rounded x / c (and
// equal to it for a power of two); the IEEE division it replaces is a ten-instruction sequence
// with a slow path, which made erf-GELU's x / sqrt(2) half of a pointwise kernel's
// instructions. Peers do the same: XLA rewrites division by a constant, Triton divides with
// div.full.f32 (2 ulp).
static std::optional<float> ReciprocalOfConstant(const Node& divisor) {
  if (divisor.op() != OpKind::kConstant || divisor.value() == nullptr || divisor.value()->num_elements() != 1 ||
      ComputeType(divisor.dtype()) != CType::kFloat) {
    return std::nullopt;
  }
  const double c = static_cast<float>(divisor.value()->GetF64(0));
  if (c == 0 || !std::isfinite(c)) return std::nullopt;
  const float r = static_cast<float>(1.0 / c);
  if (!std::isnormal(r)) return std::nullopt;
  return r;
}

bool HasPointwiseEmitter(OpKind op) {
  OpCategory c = GetCategory(op);
  return c == OpCategory::kPointwise || c == OpCategory::kRandom;
}

namespace {

std::string Call(const char* fn, const std::string& a) { return absl::StrCat(fn, "(", a, ")"); }
std::string Call(const char* fn, const std::string& a, const std::string& b) {
  return absl::StrCat(fn, "(", a, ", ", b, ")");
}
std::string Paren(const std::string& a, const char* op, const std::string& b) {
  return absl::StrCat("(", a, " ", op, " ", b, ")");
}

// The type binary arithmetic/comparison runs in: float if either side is float, int64 if
// either is an integer, else float (bool arithmetic goes through 0.0/1.0 as in the interpreter).
CType ArithType(const std::vector<TypedExpr>& ops) {
  bool any_float = false, any_int = false;
  for (const TypedExpr& e : ops) {
    any_float |= e.type == CType::kFloat;
    any_int |= e.type == CType::kInt;
  }
  if (any_float) return CType::kFloat;
  if (any_int) return CType::kInt;
  return CType::kFloat;
}

// The result of the node in its compute type, with i32 wrapping applied to integer results.
TypedExpr Finish(const Node& node, TypedExpr e) {
  CType want = ComputeType(node.dtype());
  e = Coerce(e, want);
  if (want == CType::kInt && node.dtype() == DType::kI32) e.code = Call("kiln::WrapI32", e.code);
  return e;
}

absl::StatusOr<TypedExpr> EmitCast(const Node& node, const TypedExpr& x) {
  const DType to = node.dtype();
  switch (to) {
    case DType::kBool:
      return TypedExpr{x.type == CType::kBool ? x.code : absl::StrCat("((", x.code, ") != 0)"),
                       CType::kBool};
    case DType::kI32: case DType::kI64:
      if (x.type == CType::kFloat) {
        return TypedExpr{Call(to == DType::kI32 ? "kiln::FloatToI32" : "kiln::FloatToI64", x.code),
                         CType::kInt};
      }
      return Finish(node, Coerce(x, CType::kInt));
    case DType::kF32: return Coerce(x, CType::kFloat);
    case DType::kF16: return TypedExpr{Call("kiln::RoundToF16", Coerce(x, CType::kFloat).code), CType::kFloat};
    case DType::kBF16: return TypedExpr{Call("kiln::RoundToBF16", Coerce(x, CType::kFloat).code), CType::kFloat};
  }
  return absl::InternalError("unreachable");
}

absl::StatusOr<TypedExpr> EmitDropout(const Node& node, const std::vector<TypedExpr>& operands,
                                      const std::string& index) {
  const double p = node.attrs().GetFloat("p");
  const TypedExpr x = Coerce(operands[0], CType::kFloat);
  if (p >= 1.0) return Finish(node, TypedExpr{"0.0f", CType::kFloat});  // drops everything
  if (!(p > 0.0)) return Finish(node, x);                               // keeps everything, s = 1
  auto seed_of = [&](int pos, const char* attr) -> std::string {
    if (static_cast<int>(operands.size()) > pos) {
      return absl::StrCat("static_cast<unsigned long long>(", Coerce(operands[pos], CType::kInt).code, ")");
    }
    return absl::StrCat(static_cast<uint64_t>(node.attrs().GetInt(attr)), "ULL");
  };
  const std::string keep = absl::StrCat(
      "kiln::DropoutKeep(", seed_of(1, "seed"), ", ", seed_of(2, "offset"), ", static_cast<unsigned long long>(",
      index, "), ", DropoutThreshold(p), "u, false, false)");
  return Finish(node, TypedExpr{absl::StrCat("kiln::DropoutApply(", x.code, ", ", keep, ", ",
                                             FloatLiteral(DropoutScale(p)), ")"),
                                CType::kFloat});
}

}  // namespace

absl::StatusOr<DropoutPieces> EmitDropoutShared(const Node& node, const std::vector<TypedExpr>& operands,
                                                const std::string& group_index, const std::string& words_var,
                                                int lane) {
  if (node.op() != OpKind::kDropout && node.op() != OpKind::kDropoutGrad) {
    return absl::InvalidArgumentError(absl::StrCat(node.name(), " is not a dropout"));
  }
  const double p = node.attrs().GetFloat("p");
  DropoutPieces out;
  if (p >= 1.0 || !(p > 0.0)) {
    KILN_ASSIGN_OR_RETURN(out.value, EmitDropout(node, operands, "0"));
    return out;
  }
  auto seed_of = [&](int pos, const char* attr) -> std::string {
    if (static_cast<int>(operands.size()) > pos) {
      return absl::StrCat("static_cast<unsigned long long>(", Coerce(operands[pos], CType::kInt).code, ")");
    }
    return absl::StrCat(static_cast<uint64_t>(node.attrs().GetInt(attr)), "ULL");
  };
  out.words = absl::StrCat("kiln::DropoutWords(", seed_of(1, "seed"), ", ", seed_of(2, "offset"),
                           ", static_cast<unsigned long long>(", group_index, "))");
  const TypedExpr x = Coerce(operands[0], CType::kFloat);
  out.value = Finish(node, TypedExpr{absl::StrCat("kiln::DropoutApply(", x.code, ", ", words_var, ".w[", lane & 3,
                                                  "] >= ", DropoutThreshold(p), "u, ",
                                                  FloatLiteral(DropoutScale(p)), ")"),
                                     CType::kFloat});
  return out;
}

absl::StatusOr<TypedExpr> EmitPointwiseExpr(const Node& node, const std::vector<TypedExpr>& operands,
                                            const std::string& index) {
  const OpKind op = node.op();
  if (!HasPointwiseEmitter(op)) {
    return absl::InvalidArgumentError(absl::StrCat(OpName(op), " is not a pointwise op"));
  }
  if (static_cast<int>(operands.size()) != node.num_operands()) {
    return absl::InternalError(absl::StrCat(node.name(), ": ", operands.size(), " operand expressions for ",
                                            node.num_operands(), " operands"));
  }
  const int n = node.num_operands();
  if (op == OpKind::kDropout || op == OpKind::kDropoutGrad) return EmitDropout(node, operands, index);
  if (op == OpKind::kCast) return EmitCast(node, operands[0]);
  if (op == OpKind::kIota) {
    const Shape& s = node.shape();
    int64_t axis = node.attrs().GetInt("axis");
    if (axis < 0) axis += s.size();
    int64_t inner = 1;
    for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
    std::string e = absl::StrCat("(static_cast<long long>(", index, ")");
    if (inner != 1) absl::StrAppend(&e, " / ", inner, "LL");
    if (axis > 0) absl::StrAppend(&e, " % ", s[axis], "LL");
    absl::StrAppend(&e, ")");
    return Finish(node, TypedExpr{e, CType::kInt});
  }
  if (op == OpKind::kWhere) {
    CType t = ComputeType(node.dtype());
    TypedExpr c = Coerce(operands[0], CType::kBool);
    return Finish(node, TypedExpr{absl::StrCat("(", c.code, " ? ", Coerce(operands[1], t).code, " : ",
                                               Coerce(operands[2], t).code, ")"),
                                  t});
  }
  if (op == OpKind::kLogicalNot) {
    return Finish(node, TypedExpr{absl::StrCat("(!", Coerce(operands[0], CType::kBool).code, ")"), CType::kBool});
  }
  if (op == OpKind::kLogicalAnd || op == OpKind::kLogicalOr) {
    return Finish(node, TypedExpr{Paren(Coerce(operands[0], CType::kBool).code, op == OpKind::kLogicalAnd ? "&&" : "||",
                                        Coerce(operands[1], CType::kBool).code),
                                  CType::kBool});
  }
  if (n == 1) {
    const TypedExpr& x0 = operands[0];
    if (x0.type == CType::kInt && ComputeType(node.dtype()) == CType::kInt) {
      switch (op) {
        case OpKind::kNeg: return Finish(node, {Call("kiln::WrapNeg", x0.code), CType::kInt});
        case OpKind::kAbs: return Finish(node, {Call("kiln::WrapAbs", x0.code), CType::kInt});
        case OpKind::kRelu:
          return Finish(node, {absl::StrCat("((", x0.code, ") > 0 ? (", x0.code, ") : 0LL)"), CType::kInt});
        default: break;  // float math on an integer: through f32
      }
    }
    const std::string x = Coerce(x0, CType::kFloat).code;
    std::string e;
    switch (op) {
      case OpKind::kNeg: e = absl::StrCat("(-", x, ")"); break;
      case OpKind::kAbs: e = Call("fabsf", x); break;
      case OpKind::kExp: e = Call("kiln::Exp", x); break;
      case OpKind::kLog: e = Call("logf", x); break;
      case OpKind::kSqrt: e = Call("sqrtf", x); break;
      case OpKind::kRsqrt: e = Call("kiln::Rsqrt", x); break;
      case OpKind::kReciprocal: e = absl::StrCat("(1.0f / ", x, ")"); break;
      case OpKind::kTanh: e = Call("tanhf", x); break;
      case OpKind::kSigmoid: e = Call("kiln::Sigmoid", x); break;
      case OpKind::kErf: e = Call("erff", x); break;
      case OpKind::kRelu: e = Call("kiln::Relu", x); break;
      case OpKind::kGelu: e = Call("kiln::Gelu", x); break;
      case OpKind::kGeluTanh: e = Call("kiln::GeluTanh", x); break;
      case OpKind::kSilu: e = Call("kiln::Silu", x); break;
      default:
        return absl::UnimplementedError(absl::StrCat("no CUDA emitter for unary op ", OpName(op)));
    }
    return Finish(node, TypedExpr{e, CType::kFloat});
  }
  // Binary arithmetic and comparisons.
  const CType t = ArithType(operands);
  const std::string a = Coerce(operands[0], t).code, b = Coerce(operands[1], t).code;
  const bool is_int = t == CType::kInt;
  std::string e;
  CType result = t;
  switch (op) {
    case OpKind::kAdd: e = is_int ? Call("kiln::WrapAdd", a, b) : Paren(a, "+", b); break;
    case OpKind::kSub: e = is_int ? Call("kiln::WrapSub", a, b) : Paren(a, "-", b); break;
    case OpKind::kMul: e = is_int ? Call("kiln::WrapMul", a, b) : Paren(a, "*", b); break;
    case OpKind::kDiv:
      if (is_int) {
        e = Call("kiln::IntDiv", a, b);
      } else if (std::optional<float> r = ReciprocalOfConstant(*node.operand(1))) {
        e = Paren(a, "*", FloatLiteral(*r));  // x / c as x * (1 / c)
      } else {
        e = Paren(a, "/", b);
      }
      break;
    case OpKind::kPow:
      e = Call("powf", Coerce(operands[0], CType::kFloat).code, Coerce(operands[1], CType::kFloat).code);
      result = CType::kFloat;
      break;
    case OpKind::kMaximum:
      e = is_int ? absl::StrCat("((", a, ") < (", b, ") ? (", b, ") : (", a, "))") : Call("kiln::MaxNaN", a, b);
      break;
    case OpKind::kMinimum:
      e = is_int ? absl::StrCat("((", b, ") < (", a, ") ? (", b, ") : (", a, "))") : Call("kiln::MinNaN", a, b);
      break;
    case OpKind::kEq: e = Paren(a, "==", b); result = CType::kBool; break;
    case OpKind::kNe: e = Paren(a, "!=", b); result = CType::kBool; break;
    case OpKind::kLt: e = Paren(a, "<", b); result = CType::kBool; break;
    case OpKind::kLe: e = Paren(a, "<=", b); result = CType::kBool; break;
    case OpKind::kGt: e = Paren(a, ">", b); result = CType::kBool; break;
    case OpKind::kGe: e = Paren(a, ">=", b); result = CType::kBool; break;
    default:
      return absl::UnimplementedError(absl::StrCat("no CUDA emitter for op ", OpName(op)));
  }
  return Finish(node, TypedExpr{e, result});
}

}  // namespace kiln
