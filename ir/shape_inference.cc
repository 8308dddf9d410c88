// InferOutputType: the dtype and shape of every op's output, and the operand checks that
// make a node well formed. Operands are named by position ("operand 1") because the caller
// knows the node's place (JSON path, ONNX node, pass) and adds it to the message.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/base/status.h"
#include "ir/graph.h"

namespace kiln {
namespace {

absl::Status Error(OpKind op, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(OpName(op), ": ", message));
}

std::string Describe(const Node* node) {
  return absl::StrCat("\"", node->name(), "\" ", DTypeName(node->dtype()),
                      ShapeToString(node->shape()));
}

absl::Status RequireFloat(OpKind op, const Node* x, int index) {
  if (IsFloat(x->dtype())) return absl::OkStatus();
  return Error(op, absl::StrCat("operand ", index, " ", Describe(x), " must be a float (f32, f16, bf16)"));
}

absl::Status RequireSameDType(OpKind op, const std::vector<const Node*>& xs, size_t from = 0) {
  for (size_t i = from + 1; i < xs.size(); ++i) {
    if (xs[i]->dtype() != xs[from]->dtype()) {
      return Error(op, absl::StrCat("operand ", i, " ", Describe(xs[i]), " has a different dtype from operand ",
                                    from, " ", Describe(xs[from]), "; insert a cast"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Shape> BroadcastAll(OpKind op, const std::vector<const Node*>& xs) {
  Shape shape = xs[0]->shape();
  for (size_t i = 1; i < xs.size(); ++i) {
    auto b = BroadcastShapes(shape, xs[i]->shape());
    if (!b.ok()) {
      return Error(op, absl::StrCat("operand ", i, " ", Describe(xs[i]), ": ", b.status().message()));
    }
    shape = *b;
  }
  return shape;
}

absl::StatusOr<TypeAndShape> InferIota(const Attributes& attrs) {
  OpKind op = OpKind::kIota;
  const Shape& shape = attrs.GetInts("shape");
  for (int64_t d : shape) {
    if (d < 0) return Error(op, absl::StrCat("negative dimension in shape ", ShapeToString(shape)));
  }
  auto axis = NormalizeAxis(attrs.GetInt("axis"), shape.size());
  if (!axis.ok()) return Error(op, std::string(axis.status().message()));
  auto dtype = ParseDType(attrs.GetString("dtype"));
  if (!dtype.ok()) return Error(op, std::string(dtype.status().message()));
  if (*dtype == DType::kBool) return Error(op, "dtype must be numeric, not bool");
  return TypeAndShape{*dtype, shape};
}

absl::StatusOr<TypeAndShape> InferPointwise(OpKind op, const std::vector<const Node*>& xs,
                                            const Attributes& attrs) {
  if (op == OpKind::kIota) return InferIota(attrs);
  KILN_ASSIGN_OR_RETURN(Shape shape, BroadcastAll(op, xs));
  DType dtype = xs[0]->dtype();
  switch (op) {
    case OpKind::kCast: {
      auto target = ParseDType(attrs.GetString("dtype"));
      if (!target.ok()) return Error(op, std::string(target.status().message()));
      return TypeAndShape{*target, shape};
    }
    case OpKind::kNeg: case OpKind::kAbs: case OpKind::kRelu:
      if (dtype == DType::kBool) return Error(op, "operand 0 must be numeric, not bool");
      return TypeAndShape{dtype, shape};
    case OpKind::kLogicalNot: case OpKind::kLogicalAnd: case OpKind::kLogicalOr:
      for (size_t i = 0; i < xs.size(); ++i) {
        if (xs[i]->dtype() != DType::kBool) {
          return Error(op, absl::StrCat("operand ", i, " ", Describe(xs[i]), " must be bool"));
        }
      }
      return TypeAndShape{DType::kBool, shape};
    case OpKind::kAdd: case OpKind::kSub: case OpKind::kMul: case OpKind::kDiv:
    case OpKind::kMaximum: case OpKind::kMinimum:
      KILN_RETURN_IF_ERROR(RequireSameDType(op, xs));
      if (dtype == DType::kBool) return Error(op, "operands must be numeric, not bool");
      return TypeAndShape{dtype, shape};
    case OpKind::kPow:
      KILN_RETURN_IF_ERROR(RequireSameDType(op, xs));
      KILN_RETURN_IF_ERROR(RequireFloat(op, xs[0], 0));
      return TypeAndShape{dtype, shape};
    case OpKind::kEq: case OpKind::kNe: case OpKind::kLt: case OpKind::kLe:
    case OpKind::kGt: case OpKind::kGe:
      KILN_RETURN_IF_ERROR(RequireSameDType(op, xs));
      return TypeAndShape{DType::kBool, shape};
    case OpKind::kWhere:
      if (xs[0]->dtype() != DType::kBool) {
        return Error(op, absl::StrCat("operand 0 (the condition) ", Describe(xs[0]), " must be bool"));
      }
      KILN_RETURN_IF_ERROR(RequireSameDType(op, xs, 1));
      return TypeAndShape{xs[1]->dtype(), shape};
    default:  // float-only unary math
      KILN_RETURN_IF_ERROR(RequireFloat(op, xs[0], 0));
      return TypeAndShape{dtype, shape};
  }
}

// Normalised, sorted, distinct axes; empty `axes` means all.
absl::StatusOr<std::vector<int64_t>> ReductionAxes(OpKind op, const std::vector<int64_t>& axes,
                                                   int64_t rank) {
  std::set<int64_t> out;
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) out.insert(i);
  }
  for (int64_t axis : axes) {
    auto a = NormalizeAxis(axis, rank);
    if (!a.ok()) return Error(op, std::string(a.status().message()));
    if (!out.insert(*a).second) return Error(op, absl::StrCat("axis ", axis, " is repeated"));
  }
  return std::vector<int64_t>(out.begin(), out.end());
}

absl::StatusOr<TypeAndShape> InferReduction(OpKind op, const Node* x, const Attributes& attrs) {
  if (x->dtype() == DType::kBool) return Error(op, "operand 0 must be numeric, not bool");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                        ReductionAxes(op, attrs.GetInts("axes"), x->shape().size()));
  bool keep = attrs.GetBool("keep_dims");
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(x->shape().size()); ++d) {
    bool reduced = std::binary_search(axes.begin(), axes.end(), d);
    if (!reduced) out.push_back(x->shape()[d]);
    else if (keep) out.push_back(1);
  }
  return TypeAndShape{x->dtype(), out};
}

// For norms: weight/bias must have exactly the normalised trailing shape (or broadcast to it).
absl::Status CheckNormParams(OpKind op, const std::vector<const Node*>& xs, int64_t axis) {
  const Node* x = xs[0];
  Shape trailing(x->shape().begin() + axis, x->shape().end());
  for (size_t i = 1; i < xs.size(); ++i) {
    if (xs[i]->dtype() != x->dtype()) {
      return Error(op, absl::StrCat("operand ", i, " ", Describe(xs[i]), " must have the dtype of operand 0 ",
                                    Describe(x)));
    }
    if (!BroadcastsTo(xs[i]->shape(), trailing)) {
      return Error(op, absl::StrCat("operand ", i, " ", Describe(xs[i]),
                                    " must broadcast to the normalised shape ", ShapeToString(trailing)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<TypeAndShape> InferComposite(OpKind op, const std::vector<const Node*>& xs,
                                            const Attributes& attrs) {
  const Node* x = xs[0];
  KILN_RETURN_IF_ERROR(RequireFloat(op, x, 0));
  int64_t rank = x->shape().size();
  switch (op) {
    case OpKind::kSoftmax: case OpKind::kLogSoftmax: {
      auto axis = NormalizeAxis(attrs.GetInt("axis"), rank);
      if (!axis.ok()) return Error(op, std::string(axis.status().message()));
      return TypeAndShape{x->dtype(), x->shape()};
    }
    case OpKind::kLayerNorm: case OpKind::kRmsNorm: {
      auto axis = NormalizeAxis(attrs.GetInt("axis"), rank);
      if (!axis.ok()) return Error(op, std::string(axis.status().message()));
      if (attrs.GetFloat("eps") < 0) return Error(op, "eps must be >= 0");
      KILN_RETURN_IF_ERROR(CheckNormParams(op, xs, *axis));
      return TypeAndShape{x->dtype(), x->shape()};
    }
    case OpKind::kCrossEntropy: {
      const Node* t = xs[1];
      if (rank < 1) return Error(op, "logits must have rank >= 1 (classes on the last axis)");
      if (!IsInteger(t->dtype())) {
        return Error(op, absl::StrCat("operand 1 (targets) ", Describe(t), " must be i32 or i64"));
      }
      Shape rows(x->shape().begin(), x->shape().end() - 1);
      if (t->shape() != rows) {
        return Error(op, absl::StrCat("targets ", Describe(t), " must have shape ", ShapeToString(rows),
                                      " (the logits' shape without the class axis)"));
      }
      const std::string& reduction = attrs.GetString("reduction");
      if (reduction == "none") return TypeAndShape{x->dtype(), rows};
      if (reduction == "mean" || reduction == "sum") return TypeAndShape{x->dtype(), Shape{}};
      return Error(op, absl::StrCat("reduction \"", reduction, "\" is not one of none, mean, sum"));
    }
    default:
      KILN_CHECK(false) << "not a composite: " << OpName(op);
      return Error(op, "");
  }
}

absl::StatusOr<TypeAndShape> InferRandom(OpKind op, const std::vector<const Node*>& xs,
                                         const Attributes& attrs) {
  KILN_RETURN_IF_ERROR(RequireFloat(op, xs[0], 0));
  double p = attrs.GetFloat("p");
  if (!(p >= 0.0 && p <= 1.0)) return Error(op, absl::StrCat("p = ", p, " is outside [0, 1]"));
  for (size_t i = 1; i < xs.size(); ++i) {
    if (!IsInteger(xs[i]->dtype()) || !xs[i]->shape().empty()) {
      return Error(op, absl::StrCat("operand ", i, " (", i == 1 ? "seed" : "offset", ") ", Describe(xs[i]),
                                    " must be an integer scalar"));
    }
  }
  return TypeAndShape{xs[0]->dtype(), xs[0]->shape()};
}

// attention(q, k, v[, mask][, seed[, offset]]) and attention_lse(q, k[, mask]) (v stands in
// for k there).
absl::StatusOr<TypeAndShape> InferAttention(OpKind op, const std::vector<const Node*>& xs, const Attributes& attrs) {
  const bool lse = op == OpKind::kAttentionLse;
  const Node *q = xs[0], *k = xs[1], *v = lse ? xs[1] : xs[2];
  const AttentionArgs args = AttentionArgsOf(lse, xs);
  const size_t floats = args.mask >= 0 ? args.mask + 1 : (lse ? 2 : 3);
  for (size_t i = floats; i < xs.size(); ++i) {
    if (lse || !IsInteger(xs[i]->dtype()) || !xs[i]->shape().empty()) {
      return Error(op, absl::StrCat("operand ", i, " ", Describe(xs[i]), " must be ",
                                    lse ? "absent (attention_lse takes q, k and a mask)"
                                        : "an integer scalar (the dropout's seed, then its offset)"));
    }
  }
  if (!lse) {
    const double p = attrs.GetFloat("dropout");
    if (!(p >= 0.0 && p <= 1.0)) return Error(op, absl::StrCat("dropout = ", p, " is outside [0, 1]"));
  }
  KILN_RETURN_IF_ERROR(RequireFloat(op, q, 0));
  KILN_RETURN_IF_ERROR(RequireSameDType(op, std::vector<const Node*>(xs.begin(), xs.begin() + floats)));
  const size_t mask_arg = args.mask >= 0 ? args.mask : xs.size();
  for (size_t i = 0; i < std::min<size_t>(mask_arg, 3); ++i) {
    if (xs[i]->shape().size() < 2) {
      return Error(op, absl::StrCat("operand ", i, " ", Describe(xs[i]), " must have rank >= 2 ([..., seq, dim])"));
    }
  }
  const Shape &qs = q->shape(), &ks = k->shape(), &vs = v->shape();
  if (qs.size() != ks.size() || qs.size() != vs.size()) {
    return Error(op, "q, k and v must have the same rank");
  }
  size_t r = qs.size();
  if (qs[r - 1] != ks[r - 1]) {
    return Error(op, absl::StrCat("q ", Describe(q), " and k ", Describe(k), " differ in head dim"));
  }
  if (ks[r - 2] != vs[r - 2]) {
    return Error(op, absl::StrCat("k ", Describe(k), " and v ", Describe(v), " differ in key length"));
  }
  Shape qb(qs.begin(), qs.end() - 2), kb(ks.begin(), ks.end() - 2), vb(vs.begin(), vs.end() - 2);
  if (qb != kb || qb != vb) return Error(op, "q, k and v must have the same batch dims");
  if (attrs.GetFloat("scale") < 0) return Error(op, "scale must be >= 0 (0 means 1/sqrt(head dim))");
  Shape out = qs;
  out[r - 1] = vs[r - 1];
  if (xs.size() > mask_arg) {
    Shape scores = qb;
    scores.push_back(qs[r - 2]);
    scores.push_back(ks[r - 2]);
    if (!BroadcastsTo(xs[mask_arg]->shape(), scores)) {
      return Error(op, absl::StrCat("mask ", Describe(xs[mask_arg]), " must broadcast to the score shape ",
                                    ShapeToString(scores)));
    }
  }
  if (lse) return TypeAndShape{DType::kF32, Shape(qs.begin(), qs.end() - 1)};
  return TypeAndShape{q->dtype(), out};
}

absl::StatusOr<TypeAndShape> InferLayout(OpKind op, const std::vector<const Node*>& xs,
                                         const Attributes& attrs) {
  const Node* x = xs[0];
  const Shape& s = x->shape();
  int64_t rank = s.size();
  switch (op) {
    case OpKind::kReshape: {
      Shape out = attrs.GetInts("shape");
      int64_t known = 1, infer = -1;
      for (size_t i = 0; i < out.size(); ++i) {
        if (out[i] == -1) {
          if (infer >= 0) return Error(op, "at most one -1 in shape");
          infer = i;
        } else if (out[i] < 0) {
          return Error(op, absl::StrCat("bad dimension ", out[i], " in shape"));
        } else if (out[i] != 0 && known > (int64_t{1} << 48) / out[i]) {
          return Error(op, absl::StrCat("shape ", ShapeToString(out), " has more than 2^48 elements"));
        } else {
          known *= out[i];
        }
      }
      if (infer >= 0 && known > 0) out[infer] = x->num_elements() / known;
      if (NumElements(out) != x->num_elements()) {
        return Error(op, absl::StrCat("cannot reshape ", Describe(x), " (", x->num_elements(),
                                      " elements) to ", ShapeToString(attrs.GetInts("shape"))));
      }
      return TypeAndShape{x->dtype(), out};
    }
    case OpKind::kTranspose: {
      const auto& perm = attrs.GetInts("perm");
      std::vector<int64_t> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      bool ok = static_cast<int64_t>(perm.size()) == rank;
      for (int64_t i = 0; ok && i < rank; ++i) ok = sorted[i] == i;
      if (!ok) {
        return Error(op, absl::StrCat("perm [", absl::StrJoin(perm, ","), "] is not a permutation of ",
                                      rank, " axes"));
      }
      Shape out(rank);
      for (int64_t d = 0; d < rank; ++d) out[d] = s[perm[d]];
      return TypeAndShape{x->dtype(), out};
    }
    case OpKind::kSlice: {
      const auto &starts = attrs.GetInts("starts"), &ends = attrs.GetInts("ends");
      std::vector<int64_t> steps = attrs.GetInts("steps");
      if (steps.empty()) steps.assign(rank, 1);
      if (static_cast<int64_t>(starts.size()) != rank || static_cast<int64_t>(ends.size()) != rank ||
          static_cast<int64_t>(steps.size()) != rank) {
        return Error(op, absl::StrCat("starts, ends and steps need one entry per axis (", rank, ")"));
      }
      Shape out(rank);
      for (int64_t d = 0; d < rank; ++d) {
        if (steps[d] <= 0) return Error(op, absl::StrCat("step ", steps[d], " on axis ", d, " must be > 0"));
        int64_t b = starts[d] < 0 ? starts[d] + s[d] : starts[d];
        int64_t e = ends[d] < 0 ? ends[d] + s[d] : ends[d];
        b = std::clamp<int64_t>(b, 0, s[d]);
        e = std::clamp<int64_t>(e, 0, s[d]);
        out[d] = e > b ? 1 + (e - b - 1) / steps[d] : 0;  // no overflow for huge steps
      }
      return TypeAndShape{x->dtype(), out};
    }
    case OpKind::kConcat: {
      auto axis = NormalizeAxis(attrs.GetInt("axis"), rank);
      if (!axis.ok()) return Error(op, std::string(axis.status().message()));
      KILN_RETURN_IF_ERROR(RequireSameDType(op, xs));
      Shape out = s;
      for (size_t i = 1; i < xs.size(); ++i) {
        const Shape& si = xs[i]->shape();
        bool ok = static_cast<int64_t>(si.size()) == rank;
        for (int64_t d = 0; ok && d < rank; ++d) ok = d == *axis || si[d] == s[d];
        if (!ok) {
          return Error(op, absl::StrCat("operand ", i, " ", Describe(xs[i]), " does not match operand 0 ",
                                        Describe(x), " outside axis ", *axis));
        }
        out[*axis] += si[*axis];
      }
      return TypeAndShape{x->dtype(), out};
    }
    case OpKind::kGather: {
      auto axis = NormalizeAxis(attrs.GetInt("axis"), rank);
      if (!axis.ok()) return Error(op, std::string(axis.status().message()));
      if (!IsInteger(xs[1]->dtype())) {
        return Error(op, absl::StrCat("operand 1 (indices) ", Describe(xs[1]), " must be i32 or i64"));
      }
      Shape out(s.begin(), s.begin() + *axis);
      out.insert(out.end(), xs[1]->shape().begin(), xs[1]->shape().end());
      out.insert(out.end(), s.begin() + *axis + 1, s.end());
      return TypeAndShape{x->dtype(), out};
    }
    default:
      KILN_CHECK(false) << "not a layout op: " << OpName(op);
      return Error(op, "");
  }
}

absl::StatusOr<TypeAndShape> InferMatmul(const std::vector<const Node*>& xs) {
  OpKind op = OpKind::kMatmul;
  const Node *a = xs[0], *b = xs[1];
  KILN_RETURN_IF_ERROR(RequireSameDType(op, xs));
  if (a->dtype() == DType::kBool) return Error(op, "operands must be numeric");
  if (a->shape().size() < 2 || b->shape().size() < 2) {
    return Error(op, absl::StrCat("operands ", Describe(a), " and ", Describe(b),
                                  " must have rank >= 2; reshape vectors first"));
  }
  const Shape &sa = a->shape(), &sb = b->shape();
  int64_t m = sa[sa.size() - 2], k = sa.back(), kb = sb[sb.size() - 2], n = sb.back();
  if (k != kb) {
    return Error(op, absl::StrCat("contraction mismatch: ", Describe(a), " has K = ", k, " but ",
                                  Describe(b), " has K = ", kb));
  }
  auto batch = BroadcastShapes(Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2));
  if (!batch.ok()) return Error(op, absl::StrCat("batch dims: ", batch.status().message()));
  Shape out = *batch;
  out.push_back(m);
  out.push_back(n);
  return TypeAndShape{a->dtype(), out};
}

}  // namespace

absl::StatusOr<TypeAndShape> InferOutputType(OpKind op, const std::vector<const Node*>& operands,
                                             const Attributes& attrs) {
  switch (GetCategory(op)) {
    case OpCategory::kLeaf:
      return Error(op, "leaves have no operands to infer from");
    case OpCategory::kPointwise: return InferPointwise(op, operands, attrs);
    case OpCategory::kReduction: return InferReduction(op, operands[0], attrs);
    case OpCategory::kComposite: return InferComposite(op, operands, attrs);
    case OpCategory::kRandom: return InferRandom(op, operands, attrs);
    case OpCategory::kAttention: return InferAttention(op, operands, attrs);
    case OpCategory::kLayout: return InferLayout(op, operands, attrs);
    case OpCategory::kBroadcast: {
      const Shape& target = attrs.GetInts("shape");
      if (!BroadcastsTo(operands[0]->shape(), target)) {
        return Error(op, absl::StrCat("operand 0 ", Describe(operands[0]), " does not broadcast to ",
                                      ShapeToString(target)));
      }
      return TypeAndShape{operands[0]->dtype(), target};
    }
    case OpCategory::kMatmul: return InferMatmul(operands);
  }
  return Error(op, "unknown category");
}

}  // namespace kiln
