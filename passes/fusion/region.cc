#include "passes/fusion/region.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/base/status.h"
#include "passes/fusion/reduce_placement.h"
#include "passes/fusion/region_kind.h"

namespace kiln {

bool IsReduction(const Node* node) { return node->category() == OpCategory::kReduction; }

bool IsPureLayout(const Node* node) {
  return node->category() == OpCategory::kLayout || node->category() == OpCategory::kBroadcast;
}

bool IsInlinedConstant(const Node* node) {
  return node->op() == OpKind::kConstant && node->num_elements() == 1;
}

bool Region::Contains(const Node* node) const {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

int64_t Region::rows() const { return reduce ? reduce->space.outer : 0; }
int64_t Region::row_length() const { return reduce ? reduce->space.reduced : 0; }

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
                      const std::vector<Node*>& post_order, const DeviceSpec& device,
                      const ReadsFromMemory& reads_from_memory) {
  absl::flat_hash_set<const Node*> members(nodes.begin(), nodes.end());
  std::vector<Node*> ordered;
  for (Node* n : post_order) {
    if (members.contains(n)) ordered.push_back(n);
  }
  return DescribeOrderedRegion(id, std::move(ordered), graph, device, reads_from_memory);
}

Region DescribeOrderedRegion(int id, std::vector<Node*> nodes, const Graph& graph, const DeviceSpec& device,
                             const ReadsFromMemory& reads_from_memory) {
  Region r;
  r.id = id;
  absl::flat_hash_set<const Node*> members(nodes.begin(), nodes.end());
  r.nodes = std::move(nodes);
  absl::flat_hash_set<const Node*> graph_outputs;
  for (const Graph::Output& out : graph.outputs()) graph_outputs.insert(out.node);
  absl::flat_hash_set<const Node*> seen_inputs;
  const Node* matmul = nullptr;  // the last matmul
  bool has_attention = false, has_compute = false, has_copy = false;
  const Node* reduction = nullptr;  // the largest reduction: its input is the space
  for (Node* n : r.nodes) {
    for (Node* operand : n->operands()) {
      if (members.contains(operand) || IsInlinedConstant(operand)) continue;
      if (seen_inputs.insert(operand).second) r.inputs.push_back(operand);
    }
    bool external_user = std::any_of(n->users().begin(), n->users().end(), [&](const Node* u) {
      return reads_from_memory ? reads_from_memory(n, u) : !members.contains(u);
    });
    if (external_user || graph_outputs.contains(n)) r.outputs.push_back(n);
    if (graph_outputs.contains(n)) r.returned_bytes += n->num_bytes();
    switch (n->category()) {
      case OpCategory::kMatmul: matmul = n; break;
      case OpCategory::kAttention: has_attention = true; break;
      case OpCategory::kReduction:
        if (!reduction || n->operand(0)->num_elements() > reduction->operand(0)->num_elements()) reduction = n;
        break;
      case OpCategory::kLayout:
      case OpCategory::kBroadcast:
        if (n->op() != OpKind::kReshape) has_copy = true;
        break;
      default: has_compute = true; break;
    }
  }
  if (matmul != nullptr) {
    // A reduction that computes the matmul's A (a norm) makes the fold; any other stays the
    // matmul kind, whose epilogue rules refuse it.
    r.kind = reduction != nullptr && members.contains(matmul->operand(0)) ? RegionKind::kNormMatmul
                                                                         : RegionKind::kMatmul;
  } else if (has_attention) {
    r.kind = RegionKind::kAttention;
  } else if (reduction != nullptr) {
    absl::StatusOr<ReduceSpace> space = SpaceOf(reduction);
    r.kind = space.ok() && space->inner > 1 ? RegionKind::kColumnReduction : RegionKind::kRowReduction;
    r.space = reduction->operand(0)->shape();
  } else if (has_compute) {
    r.kind = RegionKind::kPointwise;
  } else if (has_copy) {
    r.kind = RegionKind::kLayout;
  } else {
    r.kind = RegionKind::kView;
  }
  if (r.space.empty()) {
    // An elementwise kernel loops over its largest output and evaluates every member at the
    // positions its users need (a slice of a larger member, a piece of a concat): its space is
    // that output, not its largest member.
    const bool elementwise = IsElementwiseKind(r.kind);
    for (const Node* n : elementwise && !r.outputs.empty() ? r.outputs : r.nodes) {
      if (n->num_elements() > NumElements(r.space) || r.space.empty()) r.space = n->shape();
    }
  }
  if (const auto analyze = KindInfo(r.kind).analyze) analyze(r, device);
  return r;
}

}  // namespace kiln
