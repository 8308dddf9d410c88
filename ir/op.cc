#include "ir/op.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/attributes.h"
#include "ir/base/edit_distance.h"
#include "ir/base/status.h"

namespace kiln {

const std::vector<OpInfo>& AllOps() {
  static const auto* ops = new std::vector<OpInfo>{
#define KILN_OP(Enum, text, min_arity, max_arity, category, formula) \
  {OpKind::k##Enum, text, min_arity, max_arity, OpCategory::category, formula},
#include "ir/ops.def"
#undef KILN_OP
  };
  return *ops;
}

const OpInfo& GetOpInfo(OpKind kind) {
  const auto& ops = AllOps();
  size_t index = static_cast<size_t>(kind);
  KILN_CHECK(index < ops.size()) << "bad OpKind " << index;
  return ops[index];
}

const char* OpName(OpKind kind) { return GetOpInfo(kind).name; }
OpCategory GetCategory(OpKind kind) { return GetOpInfo(kind).category; }

const char* CategoryName(OpCategory category) {
  switch (category) {
    case OpCategory::kLeaf: return "leaf";
    case OpCategory::kPointwise: return "pointwise";
    case OpCategory::kReduction: return "reduction";
    case OpCategory::kComposite: return "composite";
    case OpCategory::kRandom: return "random";
    case OpCategory::kAttention: return "attention";
    case OpCategory::kLayout: return "layout";
    case OpCategory::kBroadcast: return "broadcast";
    case OpCategory::kMatmul: return "matmul";
  }
  return "?";
}

std::vector<std::string> ClosestOpNames(absl::string_view name, int max) {
  std::vector<std::pair<int, std::string>> scored;
  for (const OpInfo& op : AllOps()) {
    std::string candidate = op.name;
    int d = EditDistance(name, candidate);
    // A substring match ("norm" -> "layer_norm") is as good as a one-letter typo.
    if (candidate.find(std::string(name)) != std::string::npos && !name.empty()) d = std::min(d, 1);
    scored.push_back({d, candidate});
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (const auto& [d, n] : scored) {
    if (static_cast<int>(out.size()) >= max) break;
    out.push_back(n);
  }
  return out;
}

absl::StatusOr<OpKind> ParseOpKind(absl::string_view name) {
  for (const OpInfo& op : AllOps()) {
    if (name == op.name) return op.kind;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown op \"", name, "\"; did you mean ",
                                                 absl::StrJoin(ClosestOpNames(name), ", "),
                                                 "?"));
}

const std::vector<AttrSpec>& AttrSpecsFor(OpKind kind) {
  using V = std::vector<int64_t>;
  static const std::vector<AttrSpec> kNone;
  static const std::vector<AttrSpec> kReduce = {
      {"axes", AttrType::kInts, AttrValue(V{}), "axes to reduce; empty means all axes"},
      {"keep_dims", AttrType::kBool, AttrValue(false), "keep reduced axes with extent 1"}};
  static const std::vector<AttrSpec> kAxisLast = {
      {"axis", AttrType::kInt, AttrValue(int64_t{-1}), "the axis to normalise over"}};
  static const std::vector<AttrSpec> kLayerNorm = {
      {"axis", AttrType::kInt, AttrValue(int64_t{-1}), "first normalised axis; all later ones too"},
      {"eps", AttrType::kFloat, AttrValue(1e-5), "added to the variance"}};
  static const std::vector<AttrSpec> kRmsNorm = {
      {"axis", AttrType::kInt, AttrValue(int64_t{-1}), "first normalised axis; all later ones too"},
      {"eps", AttrType::kFloat, AttrValue(1e-6), "added to the mean square"}};
  static const std::vector<AttrSpec> kCrossEntropy = {
      {"reduction", AttrType::kString, AttrValue(std::string("mean")), "none, mean or sum"},
      {"ignore_index", AttrType::kInt, AttrValue(int64_t{-100}),
       "rows whose target equals this contribute 0 and are not counted by mean"}};
  static const std::vector<AttrSpec> kDropout = {
      {"p", AttrType::kFloat, std::nullopt, "probability of dropping an element, in [0, 1]"},
      {"seed", AttrType::kInt, AttrValue(int64_t{0}), "used when no seed operand is given"},
      {"offset", AttrType::kInt, AttrValue(int64_t{0}), "used when no offset operand is given"}};
  static const std::vector<AttrSpec> kAttentionLse = {
      {"scale", AttrType::kFloat, AttrValue(0.0), "score scale; 0 means 1/sqrt(head dim)"},
      {"causal", AttrType::kBool, AttrValue(false),
       "query i attends to keys j <= i (top-left aligned)"}};
  static const std::vector<AttrSpec> kAttention = {
      kAttentionLse[0], kAttentionLse[1],
      {"dropout", AttrType::kFloat, AttrValue(0.0),
       "probability of dropping a probability (docs/dropout.md, element i of [..,S,T]); 0: none"},
      {"seed", AttrType::kInt, AttrValue(int64_t{0}), "the dropout's seed when no seed operand is given"},
      {"offset", AttrType::kInt, AttrValue(int64_t{0}), "the dropout's offset when no offset operand is given"}};
  static const std::vector<AttrSpec> kCast = {
      {"dtype", AttrType::kString, std::nullopt, "target dtype: f32, f16, bf16, i32, i64, bool"}};
  static const std::vector<AttrSpec> kShape = {
      {"shape", AttrType::kInts, std::nullopt, "the output shape"}};
  static const std::vector<AttrSpec> kTranspose = {
      {"perm", AttrType::kInts, std::nullopt, "output axis d is input axis perm[d]"}};
  static const std::vector<AttrSpec> kSlice = {
      {"starts", AttrType::kInts, std::nullopt, "first index per axis (negative counts from the end)"},
      {"ends", AttrType::kInts, std::nullopt, "one past the last index per axis, clamped"},
      {"steps", AttrType::kInts, AttrValue(V{}), "stride per axis (> 0); empty means all 1"}};
  static const std::vector<AttrSpec> kIota = {
      {"shape", AttrType::kInts, std::nullopt, "the output shape"},
      {"axis", AttrType::kInt, AttrValue(int64_t{-1}), "the axis whose index is the value"},
      {"dtype", AttrType::kString, AttrValue(std::string("i64")), "the output dtype"}};
  static const std::vector<AttrSpec> kAxisZero = {
      {"axis", AttrType::kInt, AttrValue(int64_t{0}), "the axis"}};

  switch (kind) {
    case OpKind::kReduceSum: case OpKind::kReduceMean:
    case OpKind::kReduceMax: case OpKind::kReduceMin: return kReduce;
    case OpKind::kSoftmax: case OpKind::kLogSoftmax: return kAxisLast;
    case OpKind::kLayerNorm: return kLayerNorm;
    case OpKind::kRmsNorm: return kRmsNorm;
    case OpKind::kCrossEntropy: return kCrossEntropy;
    case OpKind::kDropout: case OpKind::kDropoutGrad: return kDropout;
    case OpKind::kAttention: return kAttention;
    case OpKind::kAttentionLse: return kAttentionLse;
    case OpKind::kCast: return kCast;
    case OpKind::kReshape: case OpKind::kBroadcastTo: return kShape;
    case OpKind::kTranspose: return kTranspose;
    case OpKind::kIota: return kIota;
    case OpKind::kSlice: return kSlice;
    case OpKind::kConcat: case OpKind::kGather: return kAxisZero;
    default: return kNone;
  }
}

}  // namespace kiln
