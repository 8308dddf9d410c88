#include "passes/fusion/sibling_fusion.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/fusion/legality.h"
#include "passes/fusion/region_kind.h"

namespace kiln {
namespace {

bool Elementwise(RegionKind kind) { return kind == RegionKind::kPointwise || kind == RegionKind::kLayout; }

bool Reads(const FusionState& state, int a, int b) {
  const std::vector<int> c = state.Consumers(a);
  return std::find(c.begin(), c.end(), b) != c.end();
}

struct Pair {
  double saved;
  int a, b;
  // The queue's top is the largest saving, ties to the lowest ids (deterministic plans).
  bool operator<(const Pair& o) const {
    if (saved != o.saved) return saved < o.saved;
    return std::tie(a, b) > std::tie(o.a, o.b);
  }
};

class Siblings {
 public:
  Siblings(FusionState& state, const DeviceSpec& device, FusionPlan* plan)
      : state_(state), device_(device), plan_(*plan) {}

  void Run() {
    for (const auto& [id, nodes] : state_.regions()) Add(id);
    std::set<std::pair<int, int>> priced;
    for (const auto& [in, ids] : readers_) PriceAll(ids, &priced);
    while (!queue_.empty()) {
      const Pair best = queue_.top();
      queue_.pop();
      if (!alive_.count(best.a) || !alive_.count(best.b)) continue;
      // A merge since pricing may have put a path between them.
      if (state_.CreatesCycle(best.a, best.b) || state_.CreatesCycle(best.b, best.a)) continue;
      FusionRecord rec = Price(best.a, best.b);
      if (rec.verdict != "fuse") continue;
      rec.event = "fuse";
      rec.step = plan_.merges;
      plan_.records.push_back(rec);
      ++plan_.merges;
      const int merged = state_.Recompute(best.a, {best.b}).front();
      Remove(best.a);
      Remove(best.b);
      Add(merged);
      std::set<std::pair<int, int>> fresh;
      for (const Node* in : inputs_[merged]) PriceAll(readers_[in], &fresh);
    }
  }

 private:
  void Add(int id) {
    Region r = state_.Describe(id);
    if (!Elementwise(r.kind)) return;
    alive_.insert(id);
    inputs_[id] = std::vector<const Node*>(r.inputs.begin(), r.inputs.end());
    for (const Node* in : r.inputs) readers_[in].insert(id);
  }

  void Remove(int id) {
    alive_.erase(id);
    for (const Node* in : inputs_[id]) readers_[in].erase(id);
    inputs_.erase(id);
  }

  void PriceAll(const std::set<int>& ids, std::set<std::pair<int, int>>* priced) {
    if (ids.size() < 2 || ids.size() > kMaxSiblingReaders) return;
    for (auto i = ids.begin(); i != ids.end(); ++i) {
      for (auto j = std::next(i); j != ids.end(); ++j) {
        if (!priced->insert({*i, *j}).second) continue;
        FusionRecord rec = Price(*i, *j);
        rec.event = plan_.merges == 0 ? "candidate" : "reprice";
        rec.step = plan_.merges;
        if (rec.verdict == "fuse") queue_.push(Pair{rec.saved_us(), *i, *j});
        if (!rec.rule.empty()) plan_.records.push_back(std::move(rec));
      }
    }
  }

  // Region a and region b as one kernel. Pairs that are not siblings (a different space, an
  // edge or a path between them) are skipped unrecorded: priority fusion weighed those.
  FusionRecord Price(int a, int b) {
    FusionRecord rec;
    const Region ra = state_.Describe(a), rb = state_.Describe(b);
    if (ra.space != rb.space || Reads(state_, a, b) || Reads(state_, b, a) || state_.CreatesCycle(a, b) ||
        state_.CreatesCycle(b, a)) {
      return rec;
    }
    const Region merged = state_.Describe(-1, state_.Union(a, b), {a, b});
    rec.mode = "sibling";
    rec.producer_id = a;
    rec.consumer_id = b;
    rec.consumer_ids = {b};
    for (const Node* n : ra.nodes) rec.producer_nodes.push_back(n->name());
    for (const Node* n : rb.nodes) rec.consumer_nodes.push_back(n->name());
    rec.producer_kind = RegionKindName(ra.kind);
    rec.consumer_kind = RegionKindName(rb.kind);
    rec.times.unfused = EstimateRunTime(ra, device_);
    rec.times.unfused.Add(EstimateRunTime(rb, device_));
    rec.times.fused = EstimateRunTime(merged, device_);
    FusionDecision decision = Elementwise(merged.kind) ? CanMerge(ra, rb, merged)
                                                       : FusionDecision::Forbid("sibling", "the union is not elementwise");
    std::vector<std::string> shared;
    for (const Node* in : ra.inputs) {
      if (std::find(rb.inputs.begin(), rb.inputs.end(), in) != rb.inputs.end()) shared.push_back(in->name());
    }
    rec.rule = decision.ok() ? "sibling" : decision.rule();
    rec.reason = decision.ok() ? absl::StrCat("both read ", absl::StrJoin(shared, ", "),
                                              ": one kernel reads them once and writes both regions' outputs")
                               : decision.reason();
    constexpr double kEpsilonUs = 1e-9;
    rec.verdict = !decision.ok() ? "refuse" : rec.saved_us() > kEpsilonUs ? "fuse" : "unprofitable";
    return rec;
  }

  FusionState& state_;
  const DeviceSpec& device_;
  FusionPlan& plan_;
  std::set<int> alive_;
  std::map<int, std::vector<const Node*>> inputs_;
  std::map<const Node*, std::set<int>> readers_;
  std::priority_queue<Pair> queue_;
};

}  // namespace

void FuseSiblings(FusionState& state, const DeviceSpec& device, FusionPlan* plan) { Siblings(state, device, plan).Run(); }

}  // namespace kiln
