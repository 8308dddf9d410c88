// Interpret() and RandomInputs(): input validation, the evaluation loop in graph.PostOrder()
// with value lifetimes (a value is freed as soon as its last user has run, so peak memory
// stays near the live tensors of the graph), and dispatch to the per-family evaluators in
// interpreter_ops.cc (pointwise, reductions, layout) and interpreter_nn.cc (matmul,
// normalisations, cross_entropy, attention, dropout).
#include "ir/interpreter.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/base/status.h"
#include "ir/interpreter_internal.h"
#include "ir/philox.h"

namespace kiln {
namespace {

std::string TypeString(DType dtype, const Shape& shape) {
  return absl::StrCat(DTypeName(dtype), ShapeToString(shape));
}

absl::Status CheckInputs(const Graph& graph, const std::map<std::string, Tensor>& inputs) {
  std::unordered_set<std::string> names;
  for (const Node* in : graph.inputs()) {
    names.insert(in->name());
    auto it = inputs.find(in->name());
    if (it == inputs.end()) {
      return absl::InvalidArgumentError(absl::StrCat("missing input \"", in->name(), "\" (",
                                                     TypeString(in->dtype(), in->shape()), ")"));
    }
    const Tensor& t = it->second;
    if (t.dtype() != in->dtype() || t.shape() != in->shape()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input \"", in->name(), "\" is ", TypeString(t.dtype(), t.shape()),
          " but the graph declares ", TypeString(in->dtype(), in->shape())));
    }
  }
  for (const auto& [name, tensor] : inputs) {
    if (names.count(name) == 0) {
      std::vector<std::string> known;
      for (const Node* in : graph.inputs()) known.push_back(in->name());
      return absl::InvalidArgumentError(absl::StrCat("unknown input \"", name,
                                                     "\"; the graph's inputs are: ",
                                                     absl::StrJoin(known, ", ")));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Evaluate(const Node& node, const std::vector<const Tensor*>& args) {
  switch (node.category()) {
    case OpCategory::kPointwise: return interp::EvalPointwise(node, args);
    case OpCategory::kReduction: return interp::EvalReduction(node, *args[0]);
    case OpCategory::kComposite:
      if (node.op() == OpKind::kCrossEntropy) return interp::EvalCrossEntropy(node, *args[0], *args[1]);
      return interp::EvalNormalization(node, args);
    case OpCategory::kRandom: return interp::EvalDropout(node, args);
    case OpCategory::kAttention: return interp::EvalAttention(node, args);
    case OpCategory::kLayout: case OpCategory::kBroadcast: return interp::EvalLayout(node, args);
    case OpCategory::kMatmul: return interp::EvalMatmul(node, *args[0], *args[1]);
    case OpCategory::kLeaf: break;
  }
  KILN_CHECK(false) << "leaves are not evaluated: " << node.ToString();
  return absl::InternalError("unreachable");
}

std::vector<const Node*> DistinctOperands(const Node* node) {
  std::vector<const Node*> out;
  for (const Node* o : node->operands()) {
    if (std::find(out.begin(), out.end(), o) == out.end()) out.push_back(o);
  }
  return out;
}

}  // namespace

// Only nodes that reach a graph output are evaluated (a dead node cannot change an output).
absl::StatusOr<std::vector<Tensor>> Interpret(const Graph& graph,
                                              const std::map<std::string, Tensor>& inputs) {
  KILN_RETURN_IF_ERROR(CheckInputs(graph, inputs));

  // Live nodes: those an output depends on.
  std::unordered_set<const Node*> live;
  std::vector<const Node*> stack;
  for (const auto& out : graph.outputs()) stack.push_back(out.node);
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!live.insert(n).second) continue;
    for (const Node* o : n->operands()) stack.push_back(o);
  }
  // Remaining live users per node; graph outputs hold a value until the end.
  std::unordered_map<const Node*, int> pending_users;
  std::unordered_set<const Node*> is_output;
  for (const auto& out : graph.outputs()) is_output.insert(out.node);
  for (const Node* n : live) {
    for (const Node* o : DistinctOperands(n)) ++pending_users[o];
  }

  std::unordered_map<const Node*, const Tensor*> value;  // what every evaluated node holds
  std::unordered_map<const Node*, Tensor> owned;         // node-stable storage for results
  for (const Node* node : graph.PostOrder()) {
    if (live.count(node) == 0) continue;
    if (node->op() == OpKind::kInput) {
      value[node] = &inputs.at(node->name());
      continue;
    }
    if (node->op() == OpKind::kConstant) {
      value[node] = node->value();
      continue;
    }
    std::vector<const Tensor*> args;
    for (const Node* o : node->operands()) args.push_back(value.at(o));
    absl::StatusOr<Tensor> result = Evaluate(*node, args);
    if (!result.ok()) {
      return absl::Status(result.status().code(),
                          absl::StrCat("node \"", node->name(), "\" (", OpName(node->op()),
                                       "): ", result.status().message()));
    }
    KILN_CHECK(result->dtype() == node->dtype() && result->shape() == node->shape())
        << "interpreter produced " << TypeString(result->dtype(), result->shape()) << " for "
        << node->ToString();
    value[node] = &(owned[node] = *std::move(result));
    for (const Node* o : DistinctOperands(node)) {
      if (--pending_users[o] == 0 && is_output.count(o) == 0) {
        owned.erase(o);
        value.erase(o);
      }
    }
  }

  // Outputs in order; a value used by one output only is moved out, others are copied.
  std::unordered_map<const Node*, int> output_refs;
  for (const auto& out : graph.outputs()) ++output_refs[out.node];
  std::vector<Tensor> results;
  results.reserve(graph.outputs().size());
  for (const auto& out : graph.outputs()) {
    auto it = owned.find(out.node);
    if (it != owned.end() && --output_refs[out.node] == 0) {
      results.push_back(std::move(it->second));
    } else {
      results.push_back(*value.at(out.node));
    }
  }
  return results;
}

namespace {

// The exclusive upper bound for the values of integer tensor `node` implied by how the graph
// uses it (cross_entropy targets: the class count; gather indices: the gathered axis),
// following value-preserving ops (cast, reshape, transpose, slice, broadcast_to); 16 if none.
int64_t IndexBound(const Node* node, int depth = 0) {
  int64_t bound = 16;
  bool found = false;
  for (const Node* user : node->users()) {
    for (int i = 0; i < user->num_operands(); ++i) {
      if (user->operand(i) != node) continue;
      int64_t b = -1;
      if (user->op() == OpKind::kCrossEntropy && i == 1) {
        b = user->operand(0)->shape().back();
      } else if (user->op() == OpKind::kGather && i == 1) {
        const Shape& s = user->operand(0)->shape();
        int64_t axis = user->attrs().GetInt("axis");
        b = s[axis < 0 ? axis + static_cast<int64_t>(s.size()) : axis];
      } else if (depth < 8 && (user->op() == OpKind::kCast || user->op() == OpKind::kReshape ||
                               user->op() == OpKind::kTranspose || user->op() == OpKind::kSlice ||
                               user->op() == OpKind::kBroadcastTo)) {
        b = IndexBound(user, depth + 1);
      }
      if (b >= 0 && (!found || b < bound)) {
        bound = b;
        found = true;
      }
    }
  }
  return bound;
}

// K when `node` is (through cast and layout ops) the right operand of a matmul contracting K,
// else 0: such weights are drawn in (-1, 1) / sqrt(K), so that products keep the scale of their
// inputs through a deep graph (the full-size transformer block would otherwise reach |y| ~ 1e3,
// where bf16's rounding of the partial sums is larger than many of the results).
int64_t MatmulFanIn(const Node* node, int depth = 0) {
  for (const Node* user : node->users()) {
    if (user->op() == OpKind::kMatmul && user->num_operands() == 2 && user->operand(1) == node &&
        user->operand(0) != node) {
      const Shape& a = user->operand(0)->shape();
      if (!a.empty()) return a.back();
    }
    if (depth < 8 && (user->op() == OpKind::kCast || user->op() == OpKind::kReshape ||
                      user->op() == OpKind::kTranspose || user->op() == OpKind::kBroadcastTo)) {
      if (int64_t k = MatmulFanIn(user, depth + 1)) return k;
    }
  }
  return 0;
}

bool IsDropoutSeedOrOffset(const Node* node) {
  for (const Node* user : node->users()) {
    if (user->category() != OpCategory::kRandom) continue;
    for (int i = 1; i < user->num_operands(); ++i) {
      if (user->operand(i) == node) return true;
    }
  }
  return false;
}

}  // namespace

// Input k's element e takes word e & 3 of Philox4x32_10((e >> 2, k, 0x6b696c6e), seed).
std::map<std::string, Tensor> RandomInputs(const Graph& graph, uint64_t seed) {
  std::map<std::string, Tensor> result;
  const std::array<uint32_t, 2> key = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  for (size_t k = 0; k < graph.inputs().size(); ++k) {
    const Node* in = graph.inputs()[k];
    Tensor t(in->dtype(), in->shape());
    const int64_t n = t.num_elements();
    const bool seed_like = IsInteger(in->dtype()) && IsDropoutSeedOrOffset(in);
    const int64_t bound = IsInteger(in->dtype()) ? IndexBound(in) : 0;
    const int64_t fan_in = IsFloat(in->dtype()) ? MatmulFanIn(in) : 0;
    const double scale = fan_in > 1 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 1.0;
    interp::ParallelFor((n + 3) / 4, 1 << 14, [&](int64_t begin, int64_t end) {
      for (int64_t g = begin; g < end; ++g) {
        const std::array<uint32_t, 4> words = Philox4x32_10(
            {static_cast<uint32_t>(g), static_cast<uint32_t>(g >> 32), static_cast<uint32_t>(k),
             0x6b696c6eu},
            key);
        for (int lane = 0; lane < 4 && 4 * g + lane < n; ++lane) {
          const int64_t e = 4 * g + lane;
          const uint32_t w = words[lane];
          if (IsFloat(in->dtype())) {
            // An odd multiple of 2^-24 minus 1: uniform over (-1, 1) and never exactly 0.
            t.SetF64(e, ((2.0 * (w >> 8) + 1.0) * 0x1p-24 - 1.0) * scale);
          } else if (in->dtype() == DType::kBool) {
            t.SetF64(e, w & 1);
          } else if (seed_like) {
            t.SetI64(e, 1 + w % 999);
          } else {
            t.SetI64(e, bound > 0 ? static_cast<int64_t>(w % static_cast<uint64_t>(bound)) : 0);
          }
        }
      }
    });
    result.emplace(in->name(), std::move(t));
  }
  return result;
}

}  // namespace kiln
