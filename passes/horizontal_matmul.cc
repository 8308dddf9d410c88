#include "passes/horizontal_matmul.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/base/status.h"
#include "passes/fusion/matmul_epilogue.h"
#include "passes/rewrite_util.h"

namespace kiln {
namespace {

// One matmul of a group, as the rewrite sees it.
struct Branch {
  Node* matmul = nullptr;
  Node* weight = nullptr;   // the constant B, or the W under B = transpose(W)
  bool transposed = false;  // B = transpose(W): W is [N, K]
  Node* bias = nullptr;     // a constant row bias, or nullptr
  Node* result = nullptr;   // what the slice replaces: the bias add, else the matmul
  int64_t n = 0;
};

// An activation cuBLASLt could apply as an epilogue: the tensor it reads, its nodes.
struct Activation {
  const Node* x = nullptr;
  const char* what = "";
  std::vector<const Node*> nodes;  // the result first
};

std::string Bytes(int64_t b) {
  if (b >= (1 << 20)) return absl::StrFormat("%.1f MB", b / 1048576.0);
  if (b >= (1 << 10)) return absl::StrFormat("%.1f KB", b / 1024.0);
  return absl::StrFormat("%d B", b);
}

class HorizontalRewrite {
 public:
  HorizontalRewrite(Graph& graph, std::vector<PassDecision>& decisions) : graph_(graph), decisions_(decisions) {
    for (const Graph::Output& out : graph.outputs()) outputs_.insert(out.node);
    // Every activation cuBLASLt could apply as an epilogue, by the tensor it reads.
    for (const Node* n : graph.nodes()) {
      std::optional<GeluTanhMatch> m = MatchGeluTanh(n);
      const char* what = "gelu_tanh";
      if (!m) {
        m = MatchRelu(n);
        what = "relu";
      }
      if (m) activations_.push_back({m->x, what, m->nodes});
    }
  }

  // Fuses the matmuls reading `a` (each still reads it: none was rewritten yet). Returns
  // whether the graph changed.
  bool Group(const std::vector<Node*>& matmuls) {
    a_ = matmuls[0]->operand(0);
    std::vector<Branch> eligible;
    for (Node* mm : matmuls) {
      Branch b;
      FusionDecision d = Analyze(mm, b);
      if (d) {
        eligible.push_back(b);
      } else {
        decisions_.push_back({{mm->name()}, d});
      }
    }
    bool changed = false;
    for (bool transposed : {false, true}) {
      std::vector<Branch> form;
      for (const Branch& b : eligible) {
        if (b.transposed == transposed) form.push_back(b);
      }
      if (form.size() == 1 && eligible.size() == 1) {
        decisions_.push_back({{form[0].matmul->name()},
                              FusionDecision::Forbid("horizontal-alone",
                                                     absl::StrCat("no other matmul of ", form[0].matmul->operand(0)->name(),
                                                                  " can join it (each one's refusal says why)"))});
      } else if (form.size() == 1) {
        decisions_.push_back(
            {{form[0].matmul->name()},
             FusionDecision::Forbid("horizontal-transpose",
                                    absl::StrCat("the only matmul of ", form[0].matmul->operand(0)->name(),
                                                 transposed ? " that reads its weight transposed"
                                                            : " that reads its weight untransposed",
                                                 ": one cuBLASLt call has one transpose flag for B"))});
      }
      if (form.size() >= 2) {
        Fuse(form);
        changed = true;
      }
    }
    return changed;
  }

 private:
  // Whether `mm` may join its A's fused call; fills `b`.
  FusionDecision Analyze(Node* mm, Branch& b) {
    b.matmul = mm;
    Node* w = mm->operand(1);
    if (SwapsLastTwoAxes(w)) {
      b.transposed = true;
      w = w->operand(0);
    }
    b.weight = w;
    if (w->op() != OpKind::kConstant) {
      return FusionDecision::Forbid(
          "horizontal-weights",
          absl::StrCat("weights are inputs: concatenation would copy them every run (", w->name(), " is a ",
                       OpName(w->op()), ", not a constant)"));
    }
    if (w->shape().size() != 2) {
      return FusionDecision::Forbid("horizontal-weights",
                                    absl::StrCat("weight ", w->name(), " ", ShapeToString(w->shape()),
                                                 " is batched: only [K, N] weights are joined"));
    }
    b.n = b.transposed ? w->shape()[0] : w->shape()[1];
    b.result = mm;
    if (mm->users().size() == 1 && !outputs_.count(mm) && mm->users()[0]->op() == OpKind::kAdd) {
      Node* add = mm->users()[0];
      Node* other = add->operand(0) == mm ? add->operand(1) : add->operand(0);
      if (other != mm && add->shape() == mm->shape() && IsRowBias(other->shape(), mm->shape())) {
        if (other->op() != OpKind::kConstant) {
          return FusionDecision::Forbid(
              "horizontal-weights", absl::StrCat("bias ", other->name(),
                                                 " is an input: concatenation would copy it every run"));
        }
        b.bias = other;
        b.result = add;
      }
    }
    KILN_RETURN_IF_NOT_FUSIBLE(KeepsItsEpilogue(b.result));
    return ReadAsSlice(b.result);
  }

  // Refuses a result that ends in an epilogue its own cuBLASLt call would apply for free.
  FusionDecision KeepsItsEpilogue(const Node* r) {
    if (outputs_.count(r)) return FusionDecision::Allow("");
    for (const Activation& act : activations_) {
      if (act.x != r) continue;
      const std::vector<const Node*>& nodes = act.nodes;
      const bool all_users_in = std::all_of(r->users().begin(), r->users().end(), [&](const Node* u) {
        return std::find(nodes.begin(), nodes.end(), u) != nodes.end();
      });
      if (all_users_in) {
        return FusionDecision::Forbid(
            "horizontal-epilogue",
            absl::StrCat("its ", act.what, " (", nodes[0]->name(),
                         ") rides free on its own call as a cuBLASLt epilogue; one fused call has one epilogue "
                         "for all of N, so it would become a pass of its own over the slice"));
      }
    }
    // A residual add of a tensor computed from A itself (q * k + v) is no free epilogue: its C
    // would need the sibling calls first, and fused, one call does the work of all three.
    if (r->users().size() == 1 && r->users()[0]->op() == OpKind::kAdd) {
      const Node* add = r->users()[0];
      const Node* other = add->operand(0) == r ? add->operand(1) : add->operand(0);
      if (other != r && other->shape() == r->shape() && add->shape() == r->shape() &&
          !DependsOn(other, a_)) {
        return FusionDecision::Forbid(
            "horizontal-epilogue",
            absl::StrCat("its residual add ", add->name(),
                         " rides free on its own call (cuBLASLt's C); one fused call cannot add it to one slice"));
      }
    }
    return FusionDecision::Allow("");
  }

  // Whether `a` is `n` or one of its operands' ancestors.
  static bool DependsOn(const Node* n, const Node* a) {
    std::vector<const Node*> work = {n};
    absl::flat_hash_set<const Node*> seen;
    while (!work.empty()) {
      const Node* x = work.back();
      work.pop_back();
      if (x == a) return true;
      if (!seen.insert(x).second) continue;
      for (const Node* o : x->operands()) work.push_back(o);
    }
    return false;
  }

  // Refuses a result a matmul reads, or that is a graph output, directly or through views.
  FusionDecision ReadAsSlice(const Node* r) {
    std::vector<const Node*> work = {r};
    while (!work.empty()) {
      const Node* n = work.back();
      work.pop_back();
      if (outputs_.count(n)) {
        return FusionDecision::Forbid("horizontal-slice-copy",
                                      absl::StrCat(n->name(), " is a graph output: its slice would be copied"));
      }
      for (const Node* u : n->users()) {
        if (u->op() == OpKind::kMatmul) {
          return FusionDecision::Forbid(
              "horizontal-slice-copy",
              absl::StrCat("matmul ", u->name(), " reads ", n->name(),
                           ": cuBLASLt reads dense operands, so its slice would be copied"));
        }
        if (u->op() == OpKind::kReshape || SwapsLastTwoAxes(u)) work.push_back(u);
      }
    }
    return FusionDecision::Allow("");
  }

  // The joined weight: W_i [K, N_i] side by side, or W_i [N_i, K] stacked.
  Node* JoinWeights(const std::vector<Branch>& form, int64_t total, const std::string& prefix) {
    const Node* first = form[0].weight;
    const bool transposed = form[0].transposed;
    const int64_t k = transposed ? first->shape()[1] : first->shape()[0];
    const int64_t element = ByteSize(first->dtype());
    Tensor joined(first->dtype(), transposed ? Shape{total, k} : Shape{k, total});
    int64_t offset = 0;  // in columns (plain) or rows (transposed)
    for (const Branch& b : form) {
      const uint8_t* src = b.weight->value()->data();
      if (transposed) {
        std::memcpy(joined.data() + offset * k * element, src, b.n * k * element);
      } else {
        for (int64_t row = 0; row < k; ++row) {
          std::memcpy(joined.data() + (row * total + offset) * element, src + row * b.n * element, b.n * element);
        }
      }
      offset += b.n;
    }
    absl::StatusOr<Node*> node = graph_.AddConstant(graph_.FreshName(prefix + ".weight"), std::move(joined));
    KILN_CHECK(node.ok()) << node.status();
    return *node;
  }

  Node* JoinBiases(const std::vector<Branch>& form, int64_t total, const std::string& prefix) {
    const DType dtype = form[0].matmul->dtype();
    Tensor joined(dtype, {total});  // zeros where a branch has no bias
    int64_t offset = 0;
    for (const Branch& b : form) {
      if (b.bias != nullptr) {
        std::memcpy(joined.data() + offset * ByteSize(dtype), b.bias->value()->data(), b.n * ByteSize(dtype));
      }
      offset += b.n;
    }
    absl::StatusOr<Node*> node = graph_.AddConstant(graph_.FreshName(prefix + ".bias"), std::move(joined));
    KILN_CHECK(node.ok()) << node.status();
    return *node;
  }

  void Fuse(const std::vector<Branch>& form) {
    Node* a = form[0].matmul->operand(0);
    const std::string prefix = absl::StrCat(form[0].matmul->name(), ".hfuse");
    Rewriter rw(graph_, prefix);
    int64_t total = 0;
    bool any_bias = false;
    std::vector<const Node*> matmuls;
    for (const Branch& b : form) {
      total += b.n;
      any_bias |= b.bias != nullptr;
      matmuls.push_back(b.matmul);
    }
    Node* weight = JoinWeights(form, total, prefix);
    Node* rhs = weight;
    if (form[0].transposed) rhs = rw.Add(OpKind::kTranspose, {weight}, {{"perm", std::vector<int64_t>{1, 0}}});
    Node* fused = rw.Add(OpKind::kMatmul, {a, rhs});
    if (any_bias) fused = rw.Add(OpKind::kAdd, {fused, JoinBiases(form, total, prefix)});
    const Shape& out = fused->shape();
    int64_t offset = 0;
    for (const Branch& b : form) {
      std::vector<int64_t> starts(out.size(), 0), ends(out.begin(), out.end());
      starts.back() = offset;
      ends.back() = offset + b.n;
      offset += b.n;
      Node* slice = rw.Add(OpKind::kSlice, {fused}, {{"starts", starts}, {"ends", ends}});
      replacements_.Replace(graph_, b.result, slice);
    }
    std::vector<std::string> names;
    for (const Node* m : matmuls) names.push_back(m->name());
    const int64_t calls = static_cast<int64_t>(form.size());
    decisions_.push_back(
        {names, FusionDecision::Allow(
                    "horizontal-matmul",
                    absl::StrCat("one cuBLASLt call instead of ", calls, " on weights joined at compile time (",
                                 weight->name(), " ", DTypeName(weight->dtype()), ShapeToString(weight->shape()),
                                 any_bias ? ", biases joined" : "", "): ", a->name(), " (", Bytes(a->num_bytes()),
                                 ") read once instead of ", calls, " times; the consumers read slices"))});
    replacements_.Finish(graph_);
  }

  Graph& graph_;
  std::vector<PassDecision>& decisions_;
  const Node* a_ = nullptr;  // the group's shared A
  absl::flat_hash_set<const Node*> outputs_;
  std::vector<Activation> activations_;
  Replacements replacements_;
};

}  // namespace

absl::StatusOr<bool> HorizontalMatmul::Run(Graph& graph) {
  decisions_.clear();
  // The matmuls of every A read by two or more, in post order (deterministic).
  std::map<int, std::vector<Node*>> by_a;  // A's id -> its matmuls
  std::vector<int> order;
  for (Node* n : graph.PostOrder()) {
    if (n->op() != OpKind::kMatmul) continue;
    std::vector<Node*>& group = by_a[n->operand(0)->id()];
    if (group.empty()) order.push_back(n->operand(0)->id());
    group.push_back(n);
  }
  bool changed = false;
  for (int id : order) {
    const std::vector<Node*>& group = by_a[id];
    if (group.size() < 2) continue;
    // Rebuilt per group: an earlier group's rewrite changes users and outputs.
    HorizontalRewrite rewrite(graph, decisions_);
    changed |= rewrite.Group(group);
  }
  return changed;
}

}  // namespace kiln
