#include "passes/fusion/region.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/base/status.h"

namespace kiln {

const char* RegionKindName(RegionKind kind) {
  switch (kind) {
    case RegionKind::kPointwise: return "pointwise";
    case RegionKind::kRowReduction: return "row_reduction";
    case RegionKind::kOtherReduction: return "other_reduction";
    case RegionKind::kMatmul: return "matmul";
    case RegionKind::kAttention: return "attention";
    case RegionKind::kLayout: return "layout";
    case RegionKind::kView: return "view";
  }
  return "?";
}

const char* RegionTemplate(RegionKind kind) {
  switch (kind) {
    case RegionKind::kPointwise: return "pointwise.cuh";
    case RegionKind::kRowReduction: return "row_reduce.cuh";
    case RegionKind::kOtherReduction: return "col_reduce.cuh";
    case RegionKind::kMatmul: return "cublasLt";
    case RegionKind::kAttention: return "none yet: cuBLASLt QK^T, row kernel, cuBLASLt PV (runtime/jit fallback)";
    case RegionKind::kLayout: return "layout.cuh";
    case RegionKind::kView: return "none (alias)";
  }
  return "?";
}

bool IsReduction(const Node* node) { return node->category() == OpCategory::kReduction; }

std::optional<std::pair<int64_t, int64_t>> RowReductionSpace(const Node* node) {
  if (!IsReduction(node)) return std::nullopt;
  const Shape& in = node->operand(0)->shape();
  std::vector<int64_t> axes = node->attrs().GetInts("axes");
  int64_t rank = in.size();
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  for (int64_t& a : axes) a = a < 0 ? a + rank : a;
  std::sort(axes.begin(), axes.end());
  int64_t first = rank - static_cast<int64_t>(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] != first + static_cast<int64_t>(i)) return std::nullopt;
  }
  int64_t rows = 1, length = 1;
  for (int64_t d = 0; d < rank; ++d) (d < first ? rows : length) *= in[d];
  return std::make_pair(rows, length);
}

bool IsPureLayout(const Node* node) {
  return node->category() == OpCategory::kLayout || node->category() == OpCategory::kBroadcast;
}

bool IsInlinedConstant(const Node* node) {
  return node->op() == OpKind::kConstant && node->num_elements() == 1;
}

bool Region::Contains(const Node* node) const {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

std::string Region::NodeList(int max) const {
  std::vector<std::string> names;
  for (const Node* n : nodes) {
    if (static_cast<int>(names.size()) == max) {
      names.push_back(absl::StrCat("+", nodes.size() - max, " more"));
      break;
    }
    names.push_back(n->name());
  }
  return absl::StrJoin(names, ", ");
}

Region DescribeRegion(int id, const std::vector<Node*>& nodes, const Graph& graph,
                      const std::vector<Node*>& post_order,
                      const ReadsFromMemory& reads_from_memory) {
  Region r;
  r.id = id;
  absl::flat_hash_set<const Node*> members(nodes.begin(), nodes.end());
  for (Node* n : post_order) {
    if (members.contains(n)) r.nodes.push_back(n);
  }
  absl::flat_hash_set<const Node*> graph_outputs;
  for (const Graph::Output& out : graph.outputs()) graph_outputs.insert(out.node);
  absl::flat_hash_set<const Node*> seen_inputs;
  bool has_matmul = false, has_attention = false, has_compute = false, has_copy = false;
  const Node* row_reduction = nullptr;
  const Node* other_reduction = nullptr;
  for (Node* n : r.nodes) {
    for (Node* operand : n->operands()) {
      if (members.contains(operand) || IsInlinedConstant(operand)) continue;
      if (seen_inputs.insert(operand).second) r.inputs.push_back(operand);
    }
    bool external_user = std::any_of(n->users().begin(), n->users().end(), [&](const Node* u) {
      return reads_from_memory ? reads_from_memory(n, u) : !members.contains(u);
    });
    if (external_user || graph_outputs.contains(n)) r.outputs.push_back(n);
    switch (n->category()) {
      case OpCategory::kMatmul: has_matmul = true; break;
      case OpCategory::kAttention: has_attention = true; break;
      case OpCategory::kReduction:
        if (RowReductionSpace(n)) {
          if (!row_reduction) row_reduction = n;
        } else if (!other_reduction) {
          other_reduction = n;
        }
        break;
      case OpCategory::kLayout:
      case OpCategory::kBroadcast:
        if (n->op() != OpKind::kReshape) has_copy = true;
        break;
      default: has_compute = true; break;
    }
  }
  if (has_matmul) {
    r.kind = RegionKind::kMatmul;
  } else if (has_attention) {
    r.kind = RegionKind::kAttention;
  } else if (row_reduction != nullptr && other_reduction == nullptr) {
    r.kind = RegionKind::kRowReduction;
    auto space = *RowReductionSpace(row_reduction);
    r.rows = space.first;
    r.row_length = space.second;
    r.space = row_reduction->operand(0)->shape();
  } else if (other_reduction != nullptr || row_reduction != nullptr) {
    r.kind = RegionKind::kOtherReduction;
    r.space = (other_reduction ? other_reduction : row_reduction)->operand(0)->shape();
  } else if (has_compute) {
    r.kind = RegionKind::kPointwise;
  } else if (has_copy) {
    r.kind = RegionKind::kLayout;
  } else {
    r.kind = RegionKind::kView;
  }
  if (r.space.empty()) {
    for (const Node* n : r.nodes) {
      if (n->num_elements() > NumElements(r.space) || r.space.empty()) r.space = n->shape();
    }
  }
  return r;
}

}  // namespace kiln
