#include "passes/fusion/priority_fusion.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/base/status.h"
#include "passes/fusion/legality.h"
#include "passes/fusion/region_kind.h"

namespace kiln {
namespace {

// Regions as node sets; a node belongs to several regions only when it was recomputed.
class FusionState {
 public:
  FusionState(const Graph& graph, const DeviceSpec& device)
      : graph_(graph), device_(device), post_order_(graph.PostOrder()) {
    for (Node* n : post_order_) {
      if (n->category() == OpCategory::kLeaf) continue;
      AddRegion({n});
    }
  }

  const std::map<int, std::vector<Node*>>& regions() const { return regions_; }
  const std::vector<Node*>& post_order() const { return post_order_; }

  Region Describe(int id) const { return Describe(id, regions_.at(id), {id}); }
  // `nodes` as one region that takes the place of the regions `replaced` (a merge candidate:
  // the producer and the consumer).
  Region Describe(int id, const std::vector<Node*>& nodes, const std::set<int>& replaced) const {
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
    return DescribeRegion(id, nodes, graph_, post_order_, device_, reads);
  }

  // Regions that read a tensor `p` writes.
  std::vector<int> Consumers(int p) const {
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

  // Would merging p into c create a cycle: is c reachable from p through another region?
  bool CreatesCycle(int p, int c) const {
    std::vector<int> stack;
    for (int x : Consumers(p)) {
      if (x != c) stack.push_back(x);
    }
    std::set<int> seen;
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      if (x == c) return true;
      if (!seen.insert(x).second) continue;
      for (int y : Consumers(x)) stack.push_back(y);
    }
    return false;
  }

  std::vector<Node*> Union(int a, int b) const {
    std::vector<Node*> nodes = regions_.at(a);
    for (Node* n : regions_.at(b)) {
      if (!Holds(a, n)) nodes.push_back(n);
    }
    return nodes;
  }

  int AddRegion(std::vector<Node*> nodes) {
    int id = next_id_++;
    for (Node* n : nodes) node_regions_[n].insert(id);
    regions_[id] = std::move(nodes);
    return id;
  }

  void RemoveRegion(int id) {
    for (Node* n : regions_.at(id)) node_regions_[n].erase(id);
    regions_.erase(id);
  }

  // Puts p's nodes into every region of `consumers` (new ids, in that order) and drops p.
  // A merge is the one-consumer case.
  std::vector<int> Recompute(int p, const std::vector<int>& consumers) {
    std::vector<int> ids;
    for (int c : consumers) {
      std::vector<Node*> merged = Union(p, c);
      RemoveRegion(c);
      ids.push_back(AddRegion(std::move(merged)));
    }
    RemoveRegion(p);
    return ids;
  }

  // Regions in an order where every region comes after the regions it reads from, ready
  // regions by their first node so the order follows the graph. Shorter than regions() when
  // the region graph has a cycle.
  std::vector<int> TopologicalOrder() const {
    std::map<int, int> pending;
    std::map<int, std::vector<int>> consumers;
    for (const auto& [id, nodes] : regions_) pending[id];
    for (const auto& [id, nodes] : regions_) {
      for (int c : Consumers(id)) {
        consumers[id].push_back(c);
        ++pending[c];
      }
    }
    absl::flat_hash_map<const Node*, int> position;
    for (size_t i = 0; i < post_order_.size(); ++i) position[post_order_[i]] = i;
    auto first = [&](int id) {
      int best = 1 << 30;
      for (const Node* n : regions_.at(id)) best = std::min(best, position.at(n));
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
  bool Acyclic() const { return TopologicalOrder().size() == regions_.size(); }

 private:
  bool Holds(int r, const Node* n) const {
    auto it = node_regions_.find(n);
    return it != node_regions_.end() && it->second.count(r) > 0;
  }

  const Graph& graph_;
  DeviceSpec device_;
  std::vector<Node*> post_order_;
  std::map<int, std::vector<Node*>> regions_;
  absl::flat_hash_map<const Node*, std::set<int>> node_regions_;
  int next_id_ = 0;
};

std::vector<std::string> Names(const std::vector<Node*>& nodes) {
  std::vector<std::string> out;
  for (const Node* n : nodes) out.push_back(n->name());
  return out;
}

// A merge pays when it saves time. Folding a view (a reshape, no kernel) into a neighbour
// saves nothing by itself but lets the neighbour meet what lies beyond the view, so it is
// taken when it costs nothing.
bool Profitable(const FusionRecord& r) {
  constexpr double kEpsilonUs = 1e-9;
  if (r.saved_us() > kEpsilonUs) return true;
  bool view = r.producer_kind == "view" || r.consumer_kind == "view";
  return view && r.saved_us() > -kEpsilonUs;
}

struct Candidate {
  FusionRecord record;
  std::vector<int> consumers;  // recompute: every consumer
  bool allowed = false;
};

constexpr char kMergeCycle[] =
    "the consumer also reads the producer through another region; merging would create a cycle";
constexpr char kRecomputeCycle[] =
    "recomputing the producer in every consumer would create a cycle in the region graph";

// Prices merging region p into region c.
Candidate PriceMerge(const FusionState& state, const DeviceSpec& device, int p, int c) {
  Candidate cand;
  Region rp = state.Describe(p), rc = state.Describe(c);
  Region merged = state.Describe(-1, state.Union(p, c), {p, c});
  FusionRecord& rec = cand.record;
  rec.mode = "merge";
  rec.producer_id = p;
  rec.consumer_id = c;
  rec.consumer_ids = {c};
  rec.producer_nodes = Names(rp.nodes);
  rec.consumer_nodes = Names(rc.nodes);
  rec.producer_kind = RegionKindName(rp.kind);
  rec.consumer_kind = RegionKindName(rc.kind);
  cand.consumers = {c};
  FusionDecision decision =
      state.CreatesCycle(p, c) ? FusionDecision::Forbid("cycle", kMergeCycle) : CanMerge(rp, rc, merged);
  rec.rule = decision.rule();
  rec.reason = decision.reason();
  rec.times.unfused = EstimateRunTime(rp, device);
  rec.times.unfused.Add(EstimateRunTime(rc, device));
  rec.times.fused = EstimateRunTime(merged, device);
  cand.allowed = decision.ok();
  rec.verdict = !decision.ok() ? "refuse" : Profitable(rec) ? "fuse" : "unprofitable";
  return cand;
}

// Prices recomputing pointwise producer p inside every one of its consumers. Each merged
// region is described on the state after the whole recompute, where no consumer reads the
// producer from memory any more, and the cycle check runs on that region graph too.
std::optional<Candidate> PriceRecompute(const FusionState& state, const DeviceSpec& device, int p,
                                        const std::vector<int>& consumers, const Graph& graph) {
  Region rp = state.Describe(p);
  if (consumers.size() < 2 || rp.kind != RegionKind::kPointwise) return std::nullopt;
  for (const Graph::Output& out : graph.outputs()) {
    if (rp.Contains(out.node)) return std::nullopt;  // a graph output is written once, by its home
  }
  FusionState after = state;
  std::vector<int> merged_ids = after.Recompute(p, consumers);
  Candidate cand;
  FusionRecord& rec = cand.record;
  rec.mode = "recompute";
  rec.producer_id = p;
  rec.consumer_ids = consumers;
  rec.producer_nodes = Names(rp.nodes);
  rec.producer_kind = RegionKindName(rp.kind);
  rec.times.unfused = EstimateRunTime(rp, device);
  cand.allowed = true;
  cand.consumers = consumers;
  FusionDecision refusal = FusionDecision::Allow("recompute");
  for (size_t i = 0; i < consumers.size(); ++i) {
    Region rc = state.Describe(consumers[i]);
    Region merged = after.Describe(merged_ids[i]);
    for (const Node* n : rc.nodes) rec.consumer_nodes.push_back(n->name());
    rec.times.unfused.Add(EstimateRunTime(rc, device));
    rec.times.fused.Add(EstimateRunTime(merged, device));
    FusionDecision decision = CanMerge(rp, rc, merged);
    if (!decision.ok() && refusal.ok()) {
      refusal = FusionDecision::Forbid(decision.rule(),
                                       absl::StrCat("recompute into ", rc.NodeList(2), ": ", decision.reason()));
    }
  }
  if (refusal.ok() && !after.Acyclic()) refusal = FusionDecision::Forbid("cycle", kRecomputeCycle);
  cand.allowed = refusal.ok();
  rec.rule = refusal.rule();
  rec.reason = refusal.ok() ? absl::StrFormat("producer has %d consumer regions; recomputing it in each costs "
                                              "%.2f us in all, against %.2f us with it written once",
                                              consumers.size(), rec.fused_us(), rec.unfused_us())
                            : refusal.reason();
  rec.verdict = !cand.allowed ? "refuse" : Profitable(rec) ? "fuse" : "unprofitable";
  return cand;
}

// Whether `cand` may still be applied to `state`: the regions it names are unchanged (its key
// says so), but a merge elsewhere may have put a path between them.
bool StillAcyclic(const FusionState& state, const Candidate& cand) {
  if (cand.record.mode == "merge") return !state.CreatesCycle(cand.record.producer_id, cand.record.consumer_id);
  FusionState after = state;
  after.Recompute(cand.record.producer_id, cand.consumers);
  return after.Acyclic();
}

std::string CandidateKey(const Candidate& c) {
  return absl::StrCat(c.record.mode, ":", c.record.producer_id, ">", absl::StrJoin(c.consumers, ","));
}

std::vector<int> ExecutionOrder(const FusionState& state) {
  std::vector<int> order = state.TopologicalOrder();
  KILN_CHECK(order.size() == state.regions().size()) << "fusion produced a cyclic region graph";
  return order;
}

}  // namespace

int FusionPlan::num_kernels() const {
  int n = 0;
  for (const Region& r : regions) n += KindInfo(r.kind).lowering != Lowering::kAlias;
  return n;
}

const Region* FusionPlan::RegionOf(const Node* node) const {
  for (const Region& r : regions) {
    if (r.Contains(node)) return &r;
  }
  return nullptr;
}

absl::StatusOr<FusionPlan> PlanFusion(const Graph& graph, const DeviceSpec& device,
                                      const FusionOptions& options) {
  FusionState state(graph, device);
  FusionPlan plan;
  plan.graph_name = graph.name();
  plan.device = device;
  plan.ops = static_cast<int>(state.regions().size());
  for (const auto& [id, nodes] : state.regions()) {
    RunTimeEstimate e = EstimateRunTime(state.Describe(id), device);
    plan.unfused_us += e.total_us;
    plan.unfused_bytes += e.bytes_read + e.bytes_written;
  }

  // Priced candidates by key; a key names region ids, and ids are never reused, so an entry
  // stays valid until one of its regions is merged away. Only the cycle check is global and
  // is redone at pick time.
  std::map<std::string, Candidate> priced;
  while (true) {
    std::vector<std::string> live_keys;
    for (const auto& [p, nodes] : state.regions()) {
      std::vector<int> consumers = state.Consumers(p);
      std::vector<Candidate> fresh;
      for (int c : consumers) fresh.push_back(PriceMerge(state, device, p, c));
      if (auto r = PriceRecompute(state, device, p, consumers, graph)) fresh.push_back(*r);
      for (Candidate& cand : fresh) {
        std::string key = CandidateKey(cand);
        live_keys.push_back(key);
        if (priced.count(key)) continue;
        cand.record.step = plan.merges;
        cand.record.event = plan.merges == 0 ? "candidate" : "reprice";
        plan.records.push_back(cand.record);
        priced.emplace(key, std::move(cand));
      }
    }
    // The best legal, profitable, acyclic candidate; ties go to the earliest key. A recompute
    // must save clearly more (kRecomputeMargin) than a merge to win over it: it computes the
    // producer twice, and the merge keeps a value whole for what fuses next (a bias add left
    // in its matmul's epilogue lets attention fold the head split of the sliced result).
    const Candidate* best = nullptr;
    auto beats = [](const FusionRecord& a, const FusionRecord& b) {
      constexpr double kRecomputeMargin = 1.01;
      if (a.mode == "recompute" && b.mode == "merge") return a.saved_us() > b.saved_us() * kRecomputeMargin;
      if (a.mode == "merge" && b.mode == "recompute") return a.saved_us() * kRecomputeMargin >= b.saved_us();
      return a.saved_us() > b.saved_us();
    };
    for (const std::string& key : live_keys) {
      const Candidate& cand = priced.at(key);
      if (!cand.allowed || !Profitable(cand.record)) continue;
      if (best != nullptr && !beats(cand.record, best->record)) continue;
      if (!StillAcyclic(state, cand)) {
        FusionRecord rec = cand.record;
        rec.event = "reprice";
        rec.step = plan.merges;
        rec.verdict = "cycle";
        rec.rule = "cycle";
        rec.reason = rec.mode == "merge" ? kMergeCycle : kRecomputeCycle;
        plan.records.push_back(rec);
        priced.at(key).allowed = false;
        continue;
      }
      best = &cand;
    }
    if (best == nullptr) {
      FusionRecord stop;
      stop.event = "stop";
      stop.step = plan.merges;
      stop.reason = "no legal merge saves time";
      plan.records.push_back(stop);
      break;
    }
    if (options.fuel && plan.merges >= *options.fuel) {
      FusionRecord stop;
      stop.event = "stop";
      stop.step = plan.merges;
      stop.reason = absl::StrCat("KILN_FUSION_FUEL=", *options.fuel, " exhausted");
      plan.records.push_back(stop);
      plan.fuel_exhausted = true;
      break;
    }
    FusionRecord fuse = best->record;
    fuse.event = "fuse";
    fuse.step = plan.merges;
    state.Recompute(fuse.producer_id, best->consumers);
    plan.records.push_back(fuse);
    ++plan.merges;
  }

  for (int id : ExecutionOrder(state)) {
    plan.regions.push_back(state.Describe(id));
    plan.estimates.push_back(EstimateRunTime(plan.regions.back(), device));
    plan.fused_us += plan.estimates.back().total_us;
    plan.fused_bytes += plan.estimates.back().bytes_read + plan.estimates.back().bytes_written;
  }
  // Renumber regions 0..n-1 in execution order for people; records keep the merge-time ids.
  for (size_t i = 0; i < plan.regions.size(); ++i) {
    plan.regions[i].merge_id = plan.regions[i].id;
    plan.regions[i].id = static_cast<int>(i);
  }
  // Every tensor a region reads is a graph input, a constant, or written by an earlier region.
  std::set<const Node*> written;
  for (const Region& r : plan.regions) {
    for (const Node* in : r.inputs) {
      KILN_CHECK(in->category() == OpCategory::kLeaf || written.count(in))
          << "region " << r.id << " (" << r.NodeList(4) << ") reads " << in->name()
          << ", which no earlier region writes";
    }
    written.insert(r.outputs.begin(), r.outputs.end());
  }
  return plan;
}

}  // namespace kiln
