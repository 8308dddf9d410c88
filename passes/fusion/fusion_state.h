// The region graph priority fusion works on (priority_fusion.h): regions as node sets, which
// regions read which, and the cycle checks a merge or a recompute must pass. A node belongs to
// several regions only when it was recomputed. Region ids are never reused.
//
// Planning time stays near-linear in graph size (issue 15) because nothing here looks at the
// whole graph per candidate: a region is described from its own nodes (sorted by their
// post-order position, not by a scan of the post order); every region carries a rank, a
// topological order of the region graph kept valid across merges (the Pearce-Kelly update:
// only regions ranked between the two merged ones move), so a cycle search never walks past
// the rank of the region it looks for; and a recompute is tried in place and undone, not on a
// copy of the state.
#ifndef KILN_PASSES_FUSION_FUSION_STATE_H_
#define KILN_PASSES_FUSION_FUSION_STATE_H_

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "ir/graph.h"
#include "passes/cost/device_spec.h"
#include "passes/fusion/region.h"

namespace kiln {

class FusionState {
 public:
  // One region per non-leaf node of `graph`.
  FusionState(const Graph& graph, const DeviceSpec& device);

  const std::map<int, std::vector<Node*>>& regions() const { return regions_; }
  const std::vector<Node*>& post_order() const { return post_order_; }

  // Region `id` as it stands; kept until the next Recompute (pricing asks for a region once
  // per candidate it is part of).
  Region Describe(int id) const;
  // `nodes` as one region that takes the place of the regions `replaced` (a merge candidate:
  // the producer and the consumer).
  Region Describe(int id, const std::vector<Node*>& nodes, const std::set<int>& replaced) const;

  // Regions that read a tensor `p` writes, by id.
  std::vector<int> Consumers(int p) const;
  // Regions that write a tensor `c` reads, by id.
  std::vector<int> Producers(int c) const;

  // Would merging p into c create a cycle: is c reachable from p through another region?
  bool CreatesCycle(int p, int c) const;
  // Would recomputing p inside every region of `consumers` create a cycle? Tried in place.
  bool RecomputeCreatesCycle(int p, const std::vector<int>& consumers);
  // Whether the region graph has a cycle through one of `ids`, the rest of it being acyclic
  // (the state during a TryRecompute, `ids` the new regions).
  bool CycleThrough(const std::vector<int>& ids) const;

  // Region `id`'s place in the topological order the state keeps (lower: earlier).
  int64_t Rank(int id) const { return rank_.at(id); }

  // p's nodes and b's, b's not in a first.
  std::vector<Node*> Union(int a, int b) const;

  // Puts p's nodes into every region of `consumers` (new ids, in that order) and drops p.
  // A merge is the one-consumer case. Returns the new ids.
  std::vector<int> Recompute(int p, const std::vector<int>& consumers);

  // Recompute for a look: the state after it until Undo() puts everything back, ids and the
  // next fresh id included. One trial at a time.
  std::vector<int> TryRecompute(int p, const std::vector<int>& consumers);
  void Undo();

  // Regions in an order where every region comes after the regions it reads from, ready
  // regions by their first node so the order follows the graph. Shorter than regions() when
  // the region graph has a cycle.
  std::vector<int> TopologicalOrder() const;

 private:
  bool Holds(int r, const Node* n) const {
    auto it = node_regions_.find(n);
    return it != node_regions_.end() && it->second.count(r) > 0;
  }
  int AddRegion(std::vector<Node*> nodes, int id = -1);
  void RemoveRegion(int id);
  std::vector<int> RecomputeNoRanks(int p, const std::vector<int>& consumers);
  // Regions reachable from `starts` (following Consumers, or Producers when `backward`) with
  // a rank strictly between `lo` and `hi`.
  std::vector<int> Reach(const std::vector<int>& starts, bool backward, int64_t lo, int64_t hi) const;
  // Whether every edge at the regions `ids` goes from a lower rank to a higher one.
  bool RanksValidAround(const std::vector<int>& ids) const;
  void RebuildRanks();

  const Graph& graph_;
  DeviceSpec device_;
  std::vector<Node*> post_order_;
  absl::flat_hash_map<const Node*, int> position_;  // in post_order_
  std::map<int, std::vector<Node*>> regions_;
  absl::flat_hash_map<const Node*, std::set<int>> node_regions_;
  absl::flat_hash_map<int, int64_t> rank_;  // a topological order of the region graph
  int next_id_ = 0;
  mutable absl::flat_hash_map<int, Region> described_;  // Describe(id) since the last Recompute

  struct Trial {
    bool active = false;
    int next_id = 0;
    std::vector<std::pair<int, std::vector<Node*>>> removed;  // id, nodes
    std::vector<int> added;
  } trial_;
};

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_FUSION_STATE_H_
