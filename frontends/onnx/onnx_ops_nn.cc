// ONNX converters, part 3: the neural-network ops kiln has composites for. Softmax and
// LogSoftmax (opset 13 semantics: one axis), Gelu (20; approximate none|tanh), LayerNormalization
// (17; optional Mean/InvStdDev outputs computed with reduce_mean), RMSNormalization (23),
// BatchNormalization (15; inference and training_mode), InstanceNormalization (22),
// GroupNormalization (21; and 18's per-group scale), MeanVarianceNormalization (13),
// Dropout (13/22: identity in inference, kiln's Philox dropout in training; its mask output is
// regenerated from the same seed), SoftmaxCrossEntropyLoss (13; cross_entropy, or log_softmax
// + a one-hot NLL when class weights are given), NegativeLogLikelihoodLoss (13) and Attention
// (23; 3-D and 4-D forms, GQA by repeating KV heads, bool or additive masks, is_causal, scale).
// kiln always stages normalisations in at least f32, which is what stash_type = 1 asks for.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/onnx_context.h"
#include "frontends/onnx/onnx_tensor.h"
#include "ir/base/status.h"

namespace kiln::onnx_internal {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int64_t Rank(const Node* x) { return static_cast<int64_t>(x->shape().size()); }

absl::StatusOr<int64_t> NormAxis(NodeContext& ctx, int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) return ctx.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  return a;
}

template <OpKind kOp>
absl::Status SoftmaxOp(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"axis"}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.AttrInt("axis", -1));
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Op(kOp, {x}, {{"axis", axis}}));
  return ctx.SetOutput(0, y);
}

absl::Status Gelu(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"approximate"}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(std::string approx, ctx.AttrString("approximate", "none"));
  if (approx != "none" && approx != "tanh") {
    return ctx.Error(absl::StrCat("approximate must be \"none\" or \"tanh\", got ", Quote(approx)));
  }
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Op(approx == "tanh" ? OpKind::kGeluTanh : OpKind::kGelu, {x}));
  return ctx.SetOutput(0, y);
}

// Shared by the norms: y = norm(x) * scale (+ bias). Parameters that broadcast to the
// normalised trailing shape go into the composite; others (allowed by ONNX's broadcasting
// against the whole of X) are applied after it.
absl::StatusOr<Node*> Normalize(NodeContext& ctx, OpKind op, Node* x, Node* scale, Node* bias, int64_t axis,
                                double eps) {
  Shape trailing(x->shape().begin() + axis, x->shape().end());
  Attributes attrs{{"axis", axis}, {"eps", eps}};
  bool inside = BroadcastsTo(scale->shape(), trailing) && scale->dtype() == x->dtype() &&
                (bias == nullptr || (BroadcastsTo(bias->shape(), trailing) && bias->dtype() == x->dtype()));
  if (inside) {
    std::vector<Node*> operands{x, scale};
    if (bias) operands.push_back(bias);
    return ctx.Op(op, operands, attrs);
  }
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Op(op, {x}, attrs));
  KILN_ASSIGN_OR_RETURN(y, ctx.Cast(y, scale->dtype()));
  KILN_ASSIGN_OR_RETURN(y, ctx.Op(OpKind::kMul, {y, scale}));
  if (bias) { KILN_ASSIGN_OR_RETURN(y, ctx.Op(OpKind::kAdd, {y, bias})); }
  return y;
}

absl::Status LayerNormalization(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"axis", "epsilon", "stash_type"}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(Node * scale, ctx.Input(1));
  Node* bias = ctx.OptionalInput(2);
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.AttrInt("axis", -1));
  KILN_ASSIGN_OR_RETURN(axis, NormAxis(ctx, axis, Rank(x)));
  KILN_ASSIGN_OR_RETURN(float eps, ctx.AttrFloat("epsilon", 1e-5f));
  KILN_ASSIGN_OR_RETURN(int64_t stash, ctx.AttrInt("stash_type", 1));
  KILN_ASSIGN_OR_RETURN(Node * y, Normalize(ctx, OpKind::kLayerNorm, x, scale, bias, axis, eps));
  KILN_RETURN_IF_ERROR(ctx.SetOutput(0, y));
  if (ctx.wants_output(1) || ctx.wants_output(2)) {
    // Mean and InvStdDev, with the normalised axes kept as 1, in the stash type (FLOAT).
    if (stash != 1) {
      return ctx.Unsupported("the Mean/InvStdDev outputs need stash_type = 1 (FLOAT)",
                             "attribute LayerNormalization.stash_type");
    }
    std::vector<int64_t> axes;
    for (int64_t d = axis; d < Rank(x); ++d) axes.push_back(d);
    Attributes reduce{{"axes", axes}, {"keep_dims", true}};
    KILN_ASSIGN_OR_RETURN(Node * xf, ctx.Cast(x, DType::kF32));
    KILN_ASSIGN_OR_RETURN(Node * mean, ctx.Op(OpKind::kReduceMean, {xf}, reduce));
    KILN_ASSIGN_OR_RETURN(Node * d, ctx.Op(OpKind::kSub, {xf, mean}));
    KILN_ASSIGN_OR_RETURN(Node * d2, ctx.Op(OpKind::kMul, {d, d}));
    KILN_ASSIGN_OR_RETURN(Node * var, ctx.Op(OpKind::kReduceMean, {d2}, reduce));
    KILN_ASSIGN_OR_RETURN(Node * e, ctx.Scalar(eps, DType::kF32));
    KILN_ASSIGN_OR_RETURN(Node * ve, ctx.Op(OpKind::kAdd, {var, e}));
    KILN_ASSIGN_OR_RETURN(Node * inv, ctx.Op(OpKind::kRsqrt, {ve}));
    KILN_RETURN_IF_ERROR(ctx.SetOutput(1, mean));
    KILN_RETURN_IF_ERROR(ctx.SetOutput(2, inv));
  }
  return absl::OkStatus();
}

absl::Status RMSNormalization(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"axis", "epsilon", "stash_type"}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(Node * scale, ctx.Input(1));
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.AttrInt("axis", -1));
  KILN_ASSIGN_OR_RETURN(axis, NormAxis(ctx, axis, Rank(x)));
  KILN_ASSIGN_OR_RETURN(float eps, ctx.AttrFloat("epsilon", 1e-5f));
  KILN_ASSIGN_OR_RETURN(Node * y, Normalize(ctx, OpKind::kRmsNorm, x, scale, nullptr, axis, eps));
  return ctx.SetOutput(0, y);
}

// Parameter `p` of the channels of X (NumElements(shape) values: one per channel, or per group)
// reshaped to `shape`, where it broadcasts against X or a view of it, in `dtype`.
absl::StatusOr<Node*> ChannelParam(NodeContext& ctx, Node* p, const Shape& shape, DType dtype, const char* what) {
  if (p->num_elements() != NumElements(shape)) {
    return ctx.Error(absl::StrCat(what, " has shape ", ShapeToString(p->shape()), ", not ", NumElements(shape),
                                  " values (one for each channel of X, or group)"));
  }
  KILN_ASSIGN_OR_RETURN(p, ctx.Reshape(p, shape));
  return ctx.Cast(p, dtype);
}

absl::StatusOr<Node*> ChannelsInput(NodeContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  if (Rank(x) < 3) {
    return ctx.Error(absl::StrCat("X must be [N, C, D1, ...] (rank 3 or more), got ", ShapeToString(x->shape())));
  }
  return x;
}

// BatchNormalization (15): y = (x - mean) / sqrt(var + epsilon) * scale + B per channel (axis
// 1). Inference uses the given running statistics; training_mode = 1 the batch's own (over every
// axis but 1: one row kernel, canonicalize.h) and also outputs the updated running statistics,
// running * momentum + batch * (1 - momentum). Arithmetic in f32, y in X's type.
absl::Status BatchNormalization(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"epsilon", "momentum", "training_mode"}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  if (Rank(x) < 2) return ctx.Error(absl::StrCat("X must be [N, C, ...], got ", ShapeToString(x->shape())));
  const int64_t rank = Rank(x), channels = x->shape()[1];
  KILN_ASSIGN_OR_RETURN(float eps, ctx.AttrFloat("epsilon", 1e-5f));
  KILN_ASSIGN_OR_RETURN(float momentum, ctx.AttrFloat("momentum", 0.9f));
  KILN_ASSIGN_OR_RETURN(int64_t training, ctx.AttrInt("training_mode", 0));
  Shape per_channel(static_cast<size_t>(rank - 1), 1);  // [C, 1, ..., 1] against X
  per_channel[0] = channels;
  std::vector<Node*> p(5, nullptr);
  const char* names[] = {"", "scale", "B", "input_mean", "input_var"};
  for (int i = 1; i < 5; ++i) {
    KILN_ASSIGN_OR_RETURN(Node * in, ctx.Input(i));
    KILN_ASSIGN_OR_RETURN(p[i], ChannelParam(ctx, in, per_channel, DType::kF32, names[i]));
  }
  KILN_ASSIGN_OR_RETURN(Node * xf, ctx.Cast(x, DType::kF32));
  Node *mean = p[3], *var = p[4], *d = nullptr;
  if (training != 0) {
    std::vector<int64_t> axes{0};
    for (int64_t a = 2; a < rank; ++a) axes.push_back(a);
    const Attributes reduce{{"axes", axes}, {"keep_dims", true}};
    KILN_ASSIGN_OR_RETURN(mean, ctx.Op(OpKind::kReduceMean, {xf}, reduce));
    KILN_ASSIGN_OR_RETURN(d, ctx.Op(OpKind::kSub, {xf, mean}));
    KILN_ASSIGN_OR_RETURN(Node * d2, ctx.Op(OpKind::kMul, {d, d}));
    KILN_ASSIGN_OR_RETURN(var, ctx.Op(OpKind::kReduceMean, {d2}, reduce));
    KILN_ASSIGN_OR_RETURN(mean, ctx.Reshape(mean, p[3]->shape()));
    KILN_ASSIGN_OR_RETURN(var, ctx.Reshape(var, p[4]->shape()));
  } else {
    KILN_RETURN_IF_ERROR(ctx.RejectOutputsFrom(1, "running statistics, which only training_mode = 1 updates"));
    KILN_ASSIGN_OR_RETURN(d, ctx.Op(OpKind::kSub, {xf, mean}));
  }
  KILN_ASSIGN_OR_RETURN(Node * e, ctx.Scalar(eps, DType::kF32));
  KILN_ASSIGN_OR_RETURN(Node * ve, ctx.Op(OpKind::kAdd, {var, e}));
  KILN_ASSIGN_OR_RETURN(Node * inv, ctx.Op(OpKind::kRsqrt, {ve}));
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Op(OpKind::kMul, {d, inv}));
  KILN_ASSIGN_OR_RETURN(y, ctx.Op(OpKind::kMul, {y, p[1]}));
  KILN_ASSIGN_OR_RETURN(y, ctx.Op(OpKind::kAdd, {y, p[2]}));
  KILN_ASSIGN_OR_RETURN(y, ctx.Cast(y, x->dtype()));
  KILN_RETURN_IF_ERROR(ctx.SetOutput(0, y));
  if (training == 0) return absl::OkStatus();
  KILN_RETURN_IF_ERROR(ctx.RejectOutputsFrom(3, "outputs beyond running_mean and running_var"));
  KILN_ASSIGN_OR_RETURN(Node * keep, ctx.Scalar(momentum, DType::kF32));
  KILN_ASSIGN_OR_RETURN(Node * take, ctx.Scalar(1.0 - static_cast<double>(momentum), DType::kF32));
  for (int o = 1; o <= 2; ++o) {
    if (!ctx.wants_output(o)) continue;
    KILN_ASSIGN_OR_RETURN(Node * running, ctx.Input(o + 2));
    KILN_ASSIGN_OR_RETURN(Node * old, ctx.Op(OpKind::kMul, {p[o + 2], keep}));
    KILN_ASSIGN_OR_RETURN(Node * now, ctx.Op(OpKind::kMul, {o == 1 ? mean : var, take}));
    KILN_ASSIGN_OR_RETURN(Node * updated, ctx.Op(OpKind::kAdd, {old, now}));
    KILN_ASSIGN_OR_RETURN(updated, ctx.Reshape(updated, running->shape()));
    KILN_ASSIGN_OR_RETURN(updated, ctx.Cast(updated, running->dtype()));
    KILN_RETURN_IF_ERROR(ctx.SetOutput(o, updated));
  }
  return absl::OkStatus();
}

// y = layer_norm of X viewed as [N, G, C / G, D1 * D2 * ...] over its last two axes, times a
// scale and plus a bias of one value per channel (viewed as [G, C / G, 1]; per group, [G, 1, 1],
// for GroupNormalization-18's), viewed back as X: InstanceNormalization (G = C) and
// GroupNormalization. In this view the affine step shares the normalisation's row kernel.
absl::Status ChannelNorm(NodeContext& ctx, Node* x, int64_t groups, float eps) {
  const int64_t channels = x->shape()[1], n = x->shape()[0];
  const int64_t rest = x->num_elements() / std::max<int64_t>(n * channels, 1);
  KILN_ASSIGN_OR_RETURN(Node * scale, ctx.Input(1));
  KILN_ASSIGN_OR_RETURN(Node * bias, ctx.Input(2));
  KILN_ASSIGN_OR_RETURN(Node * v, ctx.Reshape(x, Shape{n, groups, channels / groups, rest}));
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Op(OpKind::kLayerNorm, {v}, {{"axis", int64_t{2}}, {"eps", double{eps}}}));
  const bool per_group = groups != channels && scale->num_elements() == groups && bias->num_elements() == groups;
  const Shape param = per_group ? Shape{groups, 1, 1} : Shape{groups, channels / groups, 1};
  KILN_ASSIGN_OR_RETURN(scale, ChannelParam(ctx, scale, param, x->dtype(), "scale"));
  KILN_ASSIGN_OR_RETURN(bias, ChannelParam(ctx, bias, param, x->dtype(), "B"));
  KILN_ASSIGN_OR_RETURN(y, ctx.Op(OpKind::kMul, {y, scale}));
  KILN_ASSIGN_OR_RETURN(y, ctx.Op(OpKind::kAdd, {y, bias}));
  KILN_ASSIGN_OR_RETURN(y, ctx.Reshape(y, x->shape()));
  return ctx.SetOutput(0, y);
}

absl::Status InstanceNormalization(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"epsilon"}));
  KILN_ASSIGN_OR_RETURN(Node * x, ChannelsInput(ctx));
  KILN_ASSIGN_OR_RETURN(float eps, ctx.AttrFloat("epsilon", 1e-5f));
  return ChannelNorm(ctx, x, x->shape()[1], eps);
}

absl::Status GroupNormalization(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"epsilon", "num_groups", "stash_type"}));
  KILN_ASSIGN_OR_RETURN(Node * x, ChannelsInput(ctx));
  KILN_ASSIGN_OR_RETURN(float eps, ctx.AttrFloat("epsilon", 1e-5f));
  KILN_ASSIGN_OR_RETURN(int64_t groups, ctx.AttrInt("num_groups", 0));
  const int64_t channels = x->shape()[1];
  if (groups <= 0 || channels % groups != 0) {
    return ctx.Error(absl::StrCat("num_groups ", groups, " does not divide the ", channels, " channels of X"));
  }
  return ChannelNorm(ctx, x, groups, eps);
}

// MeanVarianceNormalization (13): y = (x - mean) / (sqrt(var) + 1e-9) over `axes` (default
// [0, 2, 3]), as ONNX's function body defines it; the variance as the mean of squared
// deviations (E[x^2] - E[x]^2 in the body is the same value, less stable). f32 arithmetic.
absl::Status MeanVarianceNormalization(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"axes"}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> given, ctx.AttrInts("axes"));
  std::vector<int64_t> axes = given.value_or(std::vector<int64_t>{0, 2, 3});
  for (int64_t& a : axes) {
    KILN_ASSIGN_OR_RETURN(a, NormAxis(ctx, a, Rank(x)));
  }
  const Attributes reduce{{"axes", axes}, {"keep_dims", true}};
  KILN_ASSIGN_OR_RETURN(Node * xf, ctx.Cast(x, DType::kF32));
  KILN_ASSIGN_OR_RETURN(Node * mean, ctx.Op(OpKind::kReduceMean, {xf}, reduce));
  KILN_ASSIGN_OR_RETURN(Node * d, ctx.Op(OpKind::kSub, {xf, mean}));
  KILN_ASSIGN_OR_RETURN(Node * d2, ctx.Op(OpKind::kMul, {d, d}));
  KILN_ASSIGN_OR_RETURN(Node * var, ctx.Op(OpKind::kReduceMean, {d2}, reduce));
  KILN_ASSIGN_OR_RETURN(Node * sd, ctx.Op(OpKind::kSqrt, {var}));
  KILN_ASSIGN_OR_RETURN(Node * e, ctx.Scalar(1e-9, DType::kF32));
  KILN_ASSIGN_OR_RETURN(sd, ctx.Op(OpKind::kAdd, {sd, e}));
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Op(OpKind::kDiv, {d, sd}));
  KILN_ASSIGN_OR_RETURN(y, ctx.Cast(y, x->dtype()));
  return ctx.SetOutput(0, y);
}

absl::Status Dropout(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"seed"}));
  KILN_ASSIGN_OR_RETURN(Node * x, ctx.Input(0));
  bool training = false;
  if (ctx.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(const Tensor* t, ctx.ConstInput(2, "kiln compiles inference and training graphs "
                                                             "separately, so the mode must be known"));
    if (t->num_elements() != 1) return ctx.Error("training_mode must be a scalar");
    training = t->GetF64(0) != 0;
  }
  double ratio = 0.5;
  if (ctx.has_input(1)) {
    KILN_ASSIGN_OR_RETURN(const Tensor* r, ctx.ConstInput(1, "kiln's dropout probability is a compile-time "
                                                             "attribute"));
    if (r->num_elements() != 1) return ctx.Error("ratio must be a scalar");
    ratio = r->GetF64(0);
  }
  if (!(ratio >= 0 && ratio < 1)) return ctx.Error(absl::StrCat("ratio ", ratio, " is outside [0, 1)"));
  // Without a seed attribute every node gets its own Philox key, (0, N + 1) for node #N, so two
  // same-shaped Dropouts never share a mask; an explicit seed (below 2^32) never collides.
  KILN_ASSIGN_OR_RETURN(int64_t seed, ctx.AttrInt("seed", (int64_t{ctx.index()} + 1) << 32));
  auto all_true = [&]() -> absl::StatusOr<Node*> {
    Tensor t(DType::kBool, {});
    t.SetF64(0, 1);
    KILN_ASSIGN_OR_RETURN(Node * c, ctx.Const(std::move(t)));
    if (x->shape().empty()) return c;
    return ctx.Op(OpKind::kBroadcastTo, {c}, {{"shape", x->shape()}});
  };
  if (!training || ratio == 0) {
    KILN_RETURN_IF_ERROR(ctx.SetOutput(0, x));
    if (ctx.wants_output(1)) {
      KILN_ASSIGN_OR_RETURN(Node * m, all_true());
      KILN_RETURN_IF_ERROR(ctx.SetOutput(1, m));
    }
    return absl::OkStatus();
  }
  Attributes attrs{{"p", ratio}, {"seed", seed}};
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Op(OpKind::kDropout, {x}, attrs));
  KILN_RETURN_IF_ERROR(ctx.SetOutput(0, y));
  if (ctx.wants_output(1)) {
    // The keep bit of element i depends only on (seed, offset, i), so dropping a tensor of
    // ones with the same seed reproduces the mask.
    KILN_ASSIGN_OR_RETURN(Node * one, ctx.Scalar(1, x->dtype()));
    Node* ones = one;
    if (!x->shape().empty()) { KILN_ASSIGN_OR_RETURN(ones, ctx.Op(OpKind::kBroadcastTo, {one}, {{"shape", x->shape()}})); }
    KILN_ASSIGN_OR_RETURN(Node * kept, ctx.Op(OpKind::kDropout, {ones}, attrs));
    KILN_ASSIGN_OR_RETURN(Node * zero, ctx.Scalar(0, x->dtype()));
    KILN_ASSIGN_OR_RETURN(Node * mask, ctx.Op(OpKind::kNe, {kept, zero}));
    KILN_RETURN_IF_ERROR(ctx.SetOutput(1, mask));
  }
  return absl::OkStatus();
}

// [N, C, D1..Dk] -> [N, D1..Dk, C]: kiln's losses take classes on the last axis.
absl::StatusOr<Node*> ClassesLast(NodeContext& ctx, Node* x) {
  std::vector<int64_t> perm{0};
  for (int64_t d = 2; d < Rank(x); ++d) perm.push_back(d);
  perm.push_back(1);
  return ctx.Transpose(x, perm);
}

// NLL on log-probabilities `logp` [N, C, D...]: loss = -w[t] * logp[t] per element (0 where
// t == ignore_index), then none / sum / mean (divided by the sum of the weights used).
absl::StatusOr<Node*> Nll(NodeContext& ctx, Node* logp, Node* target, Node* weight, std::optional<int64_t> ignore,
                          const std::string& reduction) {
  KILN_ASSIGN_OR_RETURN(Node * xt, ClassesLast(ctx, logp));
  const int64_t classes = logp->shape()[1];
  Shape tshape = target->shape();
  tshape.push_back(1);
  KILN_ASSIGN_OR_RETURN(Node * t1, ctx.Reshape(target, tshape));
  KILN_ASSIGN_OR_RETURN(Node * iota, ctx.Op(OpKind::kIota, {}, {{"shape", Shape{classes}}, {"axis", int64_t{0}},
                                                               {"dtype", std::string(DTypeName(target->dtype()))}}));
  KILN_ASSIGN_OR_RETURN(Node * onehot, ctx.Op(OpKind::kEq, {t1, iota}));
  KILN_ASSIGN_OR_RETURN(Node * zero, ctx.Scalar(0, logp->dtype()));
  Attributes last{{"axes", std::vector<int64_t>{-1}}, {"keep_dims", false}};
  KILN_ASSIGN_OR_RETURN(Node * sel, ctx.Op(OpKind::kWhere, {onehot, xt, zero}));
  KILN_ASSIGN_OR_RETURN(Node * picked, ctx.Op(OpKind::kReduceSum, {sel}, last));
  KILN_ASSIGN_OR_RETURN(Node * loss, ctx.Op(OpKind::kNeg, {picked}));
  Node* w = nullptr;  // per-element weight, or nullptr for all ones
  if (weight) {
    KILN_ASSIGN_OR_RETURN(Node * wsel, ctx.Op(OpKind::kWhere, {onehot, weight, zero}));
    KILN_ASSIGN_OR_RETURN(w, ctx.Op(OpKind::kReduceSum, {wsel}, last));
  }
  if (ignore) {
    KILN_ASSIGN_OR_RETURN(Node * ii, ctx.Scalar(static_cast<double>(*ignore), target->dtype()));
    KILN_ASSIGN_OR_RETURN(Node * valid, ctx.Op(OpKind::kNe, {target, ii}));
    if (w) {
      KILN_ASSIGN_OR_RETURN(w, ctx.Op(OpKind::kWhere, {valid, w, zero}));
    } else {
      KILN_ASSIGN_OR_RETURN(w, ctx.Cast(valid, logp->dtype()));
    }
  }
  if (w) { KILN_ASSIGN_OR_RETURN(loss, ctx.Op(OpKind::kMul, {loss, w})); }
  if (reduction == "none") return loss;
  Attributes all{{"axes", std::vector<int64_t>{}}, {"keep_dims", false}};
  KILN_ASSIGN_OR_RETURN(Node * sum, ctx.Op(OpKind::kReduceSum, {loss}, all));
  if (reduction == "sum") return sum;
  if (w == nullptr) return ctx.Op(OpKind::kReduceMean, {loss}, all);
  KILN_ASSIGN_OR_RETURN(Node * wsum, ctx.Op(OpKind::kReduceSum, {w}, all));
  return ctx.Op(OpKind::kDiv, {sum, wsum});
}

absl::StatusOr<std::string> Reduction(NodeContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string r, ctx.AttrString("reduction", "mean"));
  if (r != "none" && r != "mean" && r != "sum") {
    return ctx.Error(absl::StrCat("reduction must be none, mean or sum, got ", Quote(r)));
  }
  return r;
}

absl::Status SoftmaxCrossEntropyLoss(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"ignore_index", "reduction"}));
  KILN_ASSIGN_OR_RETURN(Node * scores, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(Node * labels, ctx.Input(1));
  Node* weights = ctx.OptionalInput(2);
  KILN_ASSIGN_OR_RETURN(std::string reduction, Reduction(ctx));
  std::optional<int64_t> ignore;
  if (ctx.Attr("ignore_index")) { KILN_ASSIGN_OR_RETURN(ignore, ctx.AttrInt("ignore_index", 0)); }
  if (Rank(scores) < 2) return ctx.Error("scores must be [N, C, D1..Dk]");
  Node* logp = nullptr;
  if (ctx.wants_output(1) || weights) {
    KILN_ASSIGN_OR_RETURN(logp, ctx.Op(OpKind::kLogSoftmax, {scores}, {{"axis", int64_t{1}}}));
  }
  Node* loss;
  if (weights) {
    KILN_ASSIGN_OR_RETURN(loss, Nll(ctx, logp, labels, weights, ignore, reduction));
  } else {
    KILN_ASSIGN_OR_RETURN(Node * logits, ClassesLast(ctx, scores));
    // Without ignore_index no valid target is ignored; kiln's default (-100) is never a
    // valid class, so it is left in place.
    Attributes attrs{{"reduction", reduction}};
    if (ignore) attrs.Set("ignore_index", *ignore);
    KILN_ASSIGN_OR_RETURN(loss, ctx.Op(OpKind::kCrossEntropy, {logits, labels}, attrs));
  }
  KILN_RETURN_IF_ERROR(ctx.SetOutput(0, loss));
  if (ctx.wants_output(1)) KILN_RETURN_IF_ERROR(ctx.SetOutput(1, logp));
  return absl::OkStatus();
}

absl::Status NegativeLogLikelihoodLoss(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"ignore_index", "reduction"}));
  KILN_ASSIGN_OR_RETURN(Node * logp, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(Node * target, ctx.Input(1));
  KILN_ASSIGN_OR_RETURN(std::string reduction, Reduction(ctx));
  std::optional<int64_t> ignore;
  if (ctx.Attr("ignore_index")) { KILN_ASSIGN_OR_RETURN(ignore, ctx.AttrInt("ignore_index", 0)); }
  if (Rank(logp) < 2) return ctx.Error("input must be [N, C, D1..Dk]");
  KILN_ASSIGN_OR_RETURN(Node * loss, Nll(ctx, logp, target, ctx.OptionalInput(2), ignore, reduction));
  return ctx.SetOutput(0, loss);
}

// [B, S, heads * D] -> [B, heads, S, D].
absl::StatusOr<Node*> SplitHeads(NodeContext& ctx, Node* x, int64_t heads, const char* what) {
  const Shape& s = x->shape();
  if (heads <= 0 || s[2] % heads != 0) {
    return ctx.Error(absl::StrCat(what, " hidden size ", s[2], " is not a multiple of its head count ", heads));
  }
  KILN_ASSIGN_OR_RETURN(Node * r, ctx.Reshape(x, {s[0], s[1], heads, s[2] / heads}));
  return ctx.Transpose(r, {0, 2, 1, 3});
}

absl::Status Attention(NodeContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.CheckAttrs({"is_causal", "kv_num_heads", "q_num_heads", "qk_matmul_output_mode",
                                       "scale", "softcap", "softmax_precision"}));
  KILN_ASSIGN_OR_RETURN(Node * q, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(Node * k, ctx.Input(1));
  KILN_ASSIGN_OR_RETURN(Node * v, ctx.Input(2));
  Node* mask = ctx.OptionalInput(3);
  if (ctx.has_input(4) || ctx.has_input(5)) {
    return ctx.Unsupported("past_key/past_value (a KV cache) are not supported; kiln's attention takes whole "
                           "K and V", "input Attention.past_kv");
  }
  for (int i = 6; i < ctx.num_inputs(); ++i) {
    if (ctx.has_input(i)) return ctx.Unsupported(absl::StrCat("input ", i, " is not supported"), "input Attention.extra");
  }
  KILN_RETURN_IF_ERROR(ctx.RejectOutputsFrom(1, "kiln's attention returns Y only (no present KV cache and no "
                                                "QK^T output)"));
  KILN_ASSIGN_OR_RETURN(float softcap, ctx.AttrFloat("softcap", 0));
  if (softcap != 0) {
    return ctx.Unsupported("softcap is not supported by kiln's attention", "attribute Attention.softcap");
  }
  KILN_ASSIGN_OR_RETURN(int64_t causal, ctx.AttrInt("is_causal", 0));
  const int64_t rank = Rank(q);
  if (rank != 3 && rank != 4) return ctx.Error("Q, K and V must be 3-D or 4-D");
  if (Rank(k) != rank || Rank(v) != rank) return ctx.Error("Q, K and V must have the same rank");
  int64_t hq, hkv;
  if (rank == 3) {
    if (!ctx.Attr("q_num_heads") || !ctx.Attr("kv_num_heads")) {
      return ctx.Error("3-D inputs need the q_num_heads and kv_num_heads attributes");
    }
    KILN_ASSIGN_OR_RETURN(hq, ctx.AttrInt("q_num_heads", 0));
    KILN_ASSIGN_OR_RETURN(hkv, ctx.AttrInt("kv_num_heads", 0));
    KILN_ASSIGN_OR_RETURN(q, SplitHeads(ctx, q, hq, "Q"));
    KILN_ASSIGN_OR_RETURN(k, SplitHeads(ctx, k, hkv, "K"));
    KILN_ASSIGN_OR_RETURN(v, SplitHeads(ctx, v, hkv, "V"));
  } else {
    hq = q->shape()[1];
    hkv = k->shape()[1];
  }
  if (hq != hkv) {
    // Grouped-query attention: query head i uses KV head i / (hq / hkv) (np.repeat order).
    if (hkv <= 0 || hq % hkv != 0 || v->shape()[1] != hkv) {
      return ctx.Error(absl::StrCat(hq, " query heads cannot share ", hkv, " KV heads evenly"));
    }
    const int64_t g = hq / hkv;
    for (Node** t : {&k, &v}) {
      Shape s = (*t)->shape();
      KILN_ASSIGN_OR_RETURN(Node * r, ctx.Reshape(*t, {s[0], hkv, 1, s[2], s[3]}));
      KILN_ASSIGN_OR_RETURN(r, ctx.Op(OpKind::kBroadcastTo, {r}, {{"shape", Shape{s[0], hkv, g, s[2], s[3]}}}));
      KILN_ASSIGN_OR_RETURN(*t, ctx.Reshape(r, {s[0], hq, s[2], s[3]}));
    }
  }
  std::vector<Node*> operands{q, k, v};
  if (mask) {
    if (mask->dtype() == DType::kBool) {
      KILN_ASSIGN_OR_RETURN(Node * zero, ctx.Scalar(0, q->dtype()));
      KILN_ASSIGN_OR_RETURN(Node * ninf, ctx.Scalar(-kInf, q->dtype()));
      KILN_ASSIGN_OR_RETURN(mask, ctx.Op(OpKind::kWhere, {mask, zero, ninf}));
    } else {
      KILN_ASSIGN_OR_RETURN(mask, ctx.Cast(mask, q->dtype()));
    }
    const int64_t total = k->shape()[2];
    if (Rank(mask) >= 1 && mask->shape().back() < total) {
      // A mask shorter than the key length is padded with -inf (ONNX Attention-23).
      Shape pad = mask->shape();
      pad.back() = total - pad.back();
      KILN_ASSIGN_OR_RETURN(Node * ninf, ctx.Scalar(-kInf, q->dtype()));
      KILN_ASSIGN_OR_RETURN(Node * fill, ctx.Op(OpKind::kBroadcastTo, {ninf}, {{"shape", pad}}));
      KILN_ASSIGN_OR_RETURN(mask, ctx.Op(OpKind::kConcat, {mask, fill}, {{"axis", Rank(mask) - 1}}));
    }
    operands.push_back(mask);
  }
  Attributes attrs{{"causal", causal != 0}};
  if (ctx.Attr("scale")) {
    KILN_ASSIGN_OR_RETURN(float scale, ctx.AttrFloat("scale", 0));
    if (!(scale > 0)) return ctx.Error(absl::StrCat("scale must be > 0, got ", scale));
    attrs.Set("scale", static_cast<double>(scale));
  }
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Op(OpKind::kAttention, operands, attrs));
  if (rank == 3) {
    KILN_ASSIGN_OR_RETURN(y, ctx.Transpose(y, {0, 2, 1, 3}));
    const Shape& s = y->shape();
    KILN_ASSIGN_OR_RETURN(y, ctx.Reshape(y, {s[0], s[1], s[2] * s[3]}));
  }
  return ctx.SetOutput(0, y);
}

}  // namespace

void RegisterNnOps(ConverterTable& t) {
  t["Softmax"] = SoftmaxOp<OpKind::kSoftmax>;
  t["LogSoftmax"] = SoftmaxOp<OpKind::kLogSoftmax>;
  t["Gelu"] = Gelu;
  t["LayerNormalization"] = LayerNormalization;
  t["RMSNormalization"] = RMSNormalization;
  t["BatchNormalization"] = BatchNormalization;
  t["InstanceNormalization"] = InstanceNormalization;
  t["GroupNormalization"] = GroupNormalization;
  t["MeanVarianceNormalization"] = MeanVarianceNormalization;
  t["Dropout"] = Dropout;
  t["SoftmaxCrossEntropyLoss"] = SoftmaxCrossEntropyLoss;
  t["NegativeLogLikelihoodLoss"] = NegativeLogLikelihoodLoss;
  t["Attention"] = Attention;
}

}  // namespace kiln::onnx_internal
