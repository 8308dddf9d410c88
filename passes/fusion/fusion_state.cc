// FusionState: the region graph of priority fusion, its ranks (a topological order kept valid
// across merges) and the cycle checks that use them to stay local. See fusion_state.h.
#include "passes/fusion/fusion_state.h"

#include <algorithm>
#include <functional>

#include "absl/container/flat_hash_set.h"
#include "ir/base/status.h"
#include "passes/fusion/region_kind.h"

namespace kiln {
namespace {

// The graph's post order, except that each attention_lse comes right after its twin attention
// (they start in one region and must be adjacent in the order that ranks regions): a Kahn
// sort of the graph with each pair as one unit, ready units taken in post-order position.
// AttentionTwin refuses a twin the attention_lse reaches, so the units form no cycle. A graph
// without attention_lse keeps its post order exactly.
std::vector<Node*> PlanningOrder(const Graph& graph) {
  std::vector<Node*> order = graph.PostOrder();
  std::map<const Node*, Node*> lse_of;         // twin -> its attention_lse
  std::map<const Node*, const Node*> twin_of;  // attention_lse -> its twin
  for (Node* n : order) {
    if (n->op() != OpKind::kAttentionLse) continue;
    const Node* twin = AttentionTwin(*n);
    KILN_CHECK(twin != nullptr) << "attention_lse without its attention reached fusion: " << n->ToString();
    KILN_CHECK(lse_of.emplace(twin, n).second) << "two attention_lse of " << twin->ToString() << " (cse merges them)";
    twin_of[n] = twin;
  }
  if (lse_of.empty()) return order;
  std::map<const Node*, int> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
  auto unit = [&](const Node* n) {
    auto it = twin_of.find(n);
    return it == twin_of.end() ? n : it->second;
  };
  std::map<const Node*, std::set<const Node*>> needs, needed_by;
  for (Node* n : order) {
    needs[unit(n)];
    for (const Node* operand : n->operands()) {
      if (unit(operand) == unit(n)) continue;
      needs[unit(n)].insert(unit(operand));
      needed_by[unit(operand)].insert(unit(n));
    }
  }
  std::set<std::pair<int, const Node*>> ready;
  for (const auto& [u, operands] : needs) {
    if (operands.empty()) ready.insert({position.at(u), u});
  }
  std::vector<Node*> out;
  while (!ready.empty()) {
    const Node* u = ready.begin()->second;
    ready.erase(ready.begin());
    out.push_back(const_cast<Node*>(u));
    if (auto it = lse_of.find(u); it != lse_of.end()) out.push_back(it->second);
    for (const Node* user : needed_by[u]) {
      needs.at(user).erase(u);
      if (needs.at(user).empty()) ready.insert({position.at(user), user});
    }
  }
  KILN_CHECK(out.size() == order.size()) << "attention_lse pairing left a cycle";
  return out;
}

}  // namespace

FusionState::FusionState(const Graph& graph, const DeviceSpec& device)
    : graph_(graph), device_(device), post_order_(PlanningOrder(graph)) {
  for (size_t i = 0; i < post_order_.size(); ++i) position_[post_order_[i]] = static_cast<int>(i);
  std::map<const Node*, int> attention_region;
  for (Node* n : post_order_) {
    if (n->category() == OpCategory::kLeaf || n->op() == OpKind::kAttentionLse) continue;
    const int id = AddRegion({n});
    rank_[id] = position_.at(n);  // operands come first in the post order
    if (n->op() == OpKind::kAttention) attention_region[n] = id;
  }
  // An attention_lse starts in its twin's region (the kernel writes both; lower_attention left
  // only those whose twin the template runs), right after it in the order: the twin's rank
  // stays the region's.
  for (size_t i = 0; i < post_order_.size(); ++i) {
    Node* n = post_order_[i];
    if (n->op() != OpKind::kAttentionLse) continue;
    const Node* twin = post_order_[i - 1];  // PlanningOrder put it right after its twin
    KILN_CHECK(twin->op() == OpKind::kAttention && attention_region.count(twin)) << n->ToString();
    const int id = attention_region.at(twin);
    regions_.at(id).push_back(n);
    node_regions_[n].insert(id);
  }
}

Region FusionState::Describe(int id) const {
  if (trial_.active) return Describe(id, regions_.at(id), {id});  // Undo restores what is kept
  auto it = described_.find(id);
  if (it == described_.end()) it = described_.emplace(id, Describe(id, regions_.at(id), {id})).first;
  return it->second;
}

Region FusionState::Describe(int id, const std::vector<Node*>& nodes, const std::set<int>& replaced) const {
  // `user` reads `value` from memory if some region it sits in, other than the ones this
  // region replaces, does not hold `value`. That includes a member of this region that was
  // also recomputed in another region without `value`: there it reads what this one writes.
  auto reads = [this, &replaced](const Node* value, const Node* user) {
    auto it = node_regions_.find(user);
    if (it == node_regions_.end()) return true;
    for (int r : it->second) {
      if (!replaced.count(r) && !Holds(r, value)) return true;
    }
    return false;
  };
  std::vector<Node*> ordered = nodes;
  std::sort(ordered.begin(), ordered.end(),
            [this](const Node* a, const Node* b) { return position_.at(a) < position_.at(b); });
  ordered.erase(std::unique(ordered.begin(), ordered.end()), ordered.end());
  return DescribeOrderedRegion(id, std::move(ordered), graph_, device_, reads);
}

std::vector<int> FusionState::Consumers(int p) const {
  std::set<int> out;
  for (Node* n : regions_.at(p)) {
    for (Node* user : n->users()) {
      for (int r : node_regions_.at(user)) {
        if (r != p && !Holds(r, n)) out.insert(r);
      }
    }
  }
  return {out.begin(), out.end()};
}

std::vector<int> FusionState::Producers(int c) const {
  std::set<int> out;
  for (Node* n : regions_.at(c)) {
    for (Node* operand : n->operands()) {
      if (Holds(c, operand)) continue;
      auto it = node_regions_.find(operand);
      if (it == node_regions_.end()) continue;  // a leaf
      for (int r : it->second) {
        if (r != c) out.insert(r);
      }
    }
  }
  return {out.begin(), out.end()};
}

bool FusionState::CreatesCycle(int p, int c) const {
  // Every edge climbs in rank, so a region ranked above c cannot lead to it.
  const int64_t limit = rank_.at(c);
  std::vector<int> stack;
  for (int x : Consumers(p)) {
    if (x != c && rank_.at(x) <= limit) stack.push_back(x);
  }
  absl::flat_hash_set<int> seen;
  while (!stack.empty()) {
    int x = stack.back();
    stack.pop_back();
    if (x == c) return true;
    if (!seen.insert(x).second) continue;
    for (int y : Consumers(x)) {
      if (rank_.at(y) <= limit) stack.push_back(y);
    }
  }
  return false;
}

bool FusionState::CycleThrough(const std::vector<int>& ids) const {
  // Any cycle passes through `ids`; cut at them, it is a chain of paths from one of them to
  // another (or itself) through the other regions, where every edge climbs in rank and the
  // last one ends below the rank of its target. Find those paths, then a cycle among `ids`.
  int64_t limit = 0;
  for (int id : ids) limit = std::max(limit, rank_.at(id));
  const std::set<int> targets(ids.begin(), ids.end());
  std::map<int, std::set<int>> next;  // id -> ids it reaches
  for (int from : ids) {
    std::vector<int> stack = Consumers(from);
    absl::flat_hash_set<int> seen;
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      if (targets.count(x)) {
        next[from].insert(x);
        continue;
      }
      if (rank_.at(x) > limit || !seen.insert(x).second) continue;
      for (int y : Consumers(x)) stack.push_back(y);
    }
  }
  std::map<int, int> color;  // 1: on the path, 2: done
  std::function<bool(int)> visit = [&](int id) {
    color[id] = 1;
    for (int y : next[id]) {
      if (color[y] == 1 || (color[y] == 0 && visit(y))) return true;
    }
    color[id] = 2;
    return false;
  };
  for (int id : ids) {
    if (color[id] == 0 && visit(id)) return true;
  }
  return false;
}

bool FusionState::RecomputeCreatesCycle(int p, const std::vector<int>& consumers) {
  std::vector<int> ids = TryRecompute(p, consumers);
  bool cycle = CycleThrough(ids);
  Undo();
  return cycle;
}

std::vector<Node*> FusionState::Union(int a, int b) const {
  std::vector<Node*> nodes = regions_.at(a);
  for (Node* n : regions_.at(b)) {
    if (!Holds(a, n)) nodes.push_back(n);
  }
  return nodes;
}

int FusionState::AddRegion(std::vector<Node*> nodes, int id) {
  if (id < 0) id = next_id_++;
  for (Node* n : nodes) node_regions_[n].insert(id);
  regions_[id] = std::move(nodes);
  return id;
}

void FusionState::RemoveRegion(int id) {
  for (Node* n : regions_.at(id)) node_regions_[n].erase(id);
  regions_.erase(id);
}

std::vector<int> FusionState::RecomputeNoRanks(int p, const std::vector<int>& consumers) {
  std::vector<int> ids;
  for (int c : consumers) {
    std::vector<Node*> merged = Union(p, c);
    RemoveRegion(c);
    ids.push_back(AddRegion(std::move(merged)));
  }
  RemoveRegion(p);
  return ids;
}

std::vector<int> FusionState::Reach(const std::vector<int>& starts, bool backward, int64_t lo, int64_t hi) const {
  std::vector<int> stack(starts), out;
  absl::flat_hash_set<int> seen;
  while (!stack.empty()) {
    int x = stack.back();
    stack.pop_back();
    const int64_t r = rank_.at(x);
    if (r <= lo || r >= hi || !seen.insert(x).second) continue;
    out.push_back(x);
    for (int y : backward ? Producers(x) : Consumers(x)) stack.push_back(y);
  }
  return out;
}

std::vector<int> FusionState::Recompute(int p, const std::vector<int>& consumers) {
  KILN_CHECK(!trial_.active) << "Recompute during a trial";
  described_.clear();
  if (consumers.size() != 1) {
    // Each consumer keeps its rank: the producer's nodes bring in only edges from the
    // producer's own producers, which rank below it and so below every consumer.
    std::vector<int64_t> ranks;
    for (int c : consumers) ranks.push_back(rank_.at(c));
    std::vector<int> ids = RecomputeNoRanks(p, consumers);
    for (size_t i = 0; i < ids.size(); ++i) rank_[ids[i]] = ranks[i];
    for (int c : consumers) rank_.erase(c);
    rank_.erase(p);
    if (!RanksValidAround(ids)) RebuildRanks();
    return ids;
  }
  // A merge contracts the edge p -> c. Between their ranks, the regions p reaches (F) must
  // end up after the merged region and those that reach c (B) before it; they share none
  // (that would be a cycle). B, the merged region and F take the ranks B, F, p and c held,
  // in that order, each set keeping its own order; every other region keeps its rank.
  const int c = consumers[0];
  const int64_t rp = rank_.at(p), rc = rank_.at(c);
  std::vector<int> starts_f, starts_b;
  for (int x : Consumers(p)) {
    if (x != c) starts_f.push_back(x);
  }
  for (int x : Producers(c)) {
    if (x != p) starts_b.push_back(x);
  }
  std::vector<int> f = Reach(starts_f, /*backward=*/false, rp, rc);
  std::vector<int> b = Reach(starts_b, /*backward=*/true, rp, rc);
  auto by_rank = [this](int x, int y) { return rank_.at(x) < rank_.at(y); };
  std::sort(f.begin(), f.end(), by_rank);
  std::sort(b.begin(), b.end(), by_rank);
  std::vector<int64_t> pool = {rp, rc};
  for (int x : f) pool.push_back(rank_.at(x));
  for (int x : b) pool.push_back(rank_.at(x));
  std::sort(pool.begin(), pool.end());
  std::vector<int> ids = RecomputeNoRanks(p, consumers);
  rank_.erase(p);
  rank_.erase(c);
  size_t next = 0;
  for (int x : b) rank_[x] = pool[next++];
  rank_[ids[0]] = pool[next++];
  for (int x : f) rank_[x] = pool[next++];
  std::vector<int> moved = ids;
  moved.insert(moved.end(), f.begin(), f.end());
  moved.insert(moved.end(), b.begin(), b.end());
  if (!RanksValidAround(moved)) RebuildRanks();
  return ids;
}

std::vector<int> FusionState::TryRecompute(int p, const std::vector<int>& consumers) {
  KILN_CHECK(!trial_.active) << "nested TryRecompute";
  trial_.active = true;
  trial_.next_id = next_id_;
  trial_.removed.clear();
  trial_.removed.push_back({p, regions_.at(p)});
  for (int c : consumers) trial_.removed.push_back({c, regions_.at(c)});
  trial_.added = RecomputeNoRanks(p, consumers);
  // The merged regions rank where their consumers did (see Recompute); CycleThrough needs no
  // more than that.
  for (size_t i = 0; i < consumers.size(); ++i) rank_[trial_.added[i]] = rank_.at(consumers[i]);
  return trial_.added;
}

void FusionState::Undo() {
  KILN_CHECK(trial_.active) << "Undo without TryRecompute";
  for (int id : trial_.added) {
    RemoveRegion(id);
    rank_.erase(id);
  }
  for (auto& [id, nodes] : trial_.removed) AddRegion(std::move(nodes), id);
  next_id_ = trial_.next_id;
  trial_ = Trial{};
}

bool FusionState::RanksValidAround(const std::vector<int>& ids) const {
  for (int id : ids) {
    const int64_t r = rank_.at(id);
    for (int x : Producers(id)) {
      if (rank_.at(x) >= r) return false;
    }
    for (int x : Consumers(id)) {
      if (rank_.at(x) <= r) return false;
    }
  }
  return true;
}

void FusionState::RebuildRanks() {
  std::vector<int> order = TopologicalOrder();
  if (order.size() != regions_.size()) return;  // cyclic: ExecutionOrder reports it
  for (size_t i = 0; i < order.size(); ++i) rank_[order[i]] = static_cast<int64_t>(i);
}

std::vector<int> FusionState::TopologicalOrder() const {
  std::map<int, int> pending;
  std::map<int, std::vector<int>> consumers;
  for (const auto& [id, nodes] : regions_) pending[id];
  for (const auto& [id, nodes] : regions_) {
    for (int c : Consumers(id)) {
      consumers[id].push_back(c);
      ++pending[c];
    }
  }
  auto first = [&](int id) {
    int best = 1 << 30;
    for (const Node* n : regions_.at(id)) best = std::min(best, position_.at(n));
    return best;
  };
  std::set<std::pair<int, int>> ready;
  for (const auto& [id, count] : pending) {
    if (count == 0) ready.insert({first(id), id});
  }
  std::vector<int> order;
  while (!ready.empty()) {
    int id = ready.begin()->second;
    ready.erase(ready.begin());
    order.push_back(id);
    for (int c : consumers[id]) {
      if (--pending[c] == 0) ready.insert({first(c), c});
    }
  }
  return order;
}

}  // namespace kiln
