#include "passes/fusion/sibling_fusion.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/fusion/legality.h"
#include "passes/fusion/region_kind.h"

namespace kiln {
namespace {

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

constexpr char kSiblingCycle[] =
    "a merge since this pair was priced put a path between the two regions; one kernel would wait on itself";

class Siblings {
 public:
  Siblings(FusionState& state, const DeviceSpec& device, std::optional<int> fuel, FusionPlan* plan)
      : state_(state), device_(device), fuel_(fuel), plan_(*plan) {}

  void Run() {
    for (const auto& [id, nodes] : state_.regions()) Add(id);
    for (const auto& [position, ids] : readers_) PriceAmong(ids, -1);
    while (!queue_.empty()) {
      const Pair best = queue_.top();
      queue_.pop();
      if (!alive_.count(best.a) || !alive_.count(best.b)) continue;
      // A merge since pricing may have put a path between them (the only way two live
      // siblings stop being siblings): priced again, and recorded either way.
      FusionRecord rec = Price(best.a, best.b);
      if (rec.rule.empty()) rec = Refusal(best.a, best.b, "cycle", kSiblingCycle);
      rec.event = "reprice";
      rec.step = plan_.merges;
      if (rec.verdict != "fuse") {
        plan_.records.push_back(std::move(rec));
        continue;
      }
      if (fuel_ && plan_.merges >= *fuel_) {
        FusionRecord stop;
        stop.event = "stop";
        stop.step = plan_.merges;
        stop.reason = absl::StrCat("KILN_FUSION_FUEL=", *fuel_, " exhausted (sibling fusion)");
        plan_.records.push_back(stop);
        plan_.fuel_exhausted = true;
        return;
      }
      rec.event = "fuse";
      plan_.records.push_back(rec);
      ++plan_.merges;
      // The lower-ranked region goes in as the producer: the state's rank update then holds
      // without a rebuild (neither reaches the other).
      const bool a_first = state_.Rank(best.a) < state_.Rank(best.b);
      const int merged = state_.Recompute(a_first ? best.a : best.b, {a_first ? best.b : best.a}).front();
      Remove(best.a);
      Remove(best.b);
      Add(merged);
      for (int64_t position : inputs_[merged]) PriceAmong(readers_[position], merged);
    }
  }

 private:
  // Inputs are keyed by their post-order position, so that pairs are priced (and recorded) in
  // the same order on every run.
  void Add(int id) {
    Region r = state_.Describe(id);
    if (!IsElementwiseKind(r.kind)) return;
    alive_.insert(id);
    std::vector<int64_t>& positions = inputs_[id];
    for (const Node* in : r.inputs) {
      positions.push_back(Position(in));
      readers_[positions.back()].insert(id);
    }
  }

  void Remove(int id) {
    alive_.erase(id);
    for (int64_t position : inputs_[id]) readers_[position].erase(id);
    inputs_.erase(id);
  }

  int64_t Position(const Node* n) {
    if (positions_.empty()) {
      const std::vector<Node*>& order = state_.post_order();
      for (size_t i = 0; i < order.size(); ++i) positions_[order[i]] = static_cast<int64_t>(i);
    }
    auto it = positions_.find(n);
    if (it != positions_.end()) return it->second;
    return positions_.emplace(n, static_cast<int64_t>(positions_.size()) + (1LL << 40)).first->second;
  }

  // Prices the pairs among `ids` (only those with `with`, when it is a region id) not priced
  // before, records each, and queues the profitable ones.
  void PriceAmong(const std::set<int>& ids, int with) {
    if (ids.size() < 2 || ids.size() > kMaxSiblingReaders) return;
    for (auto i = ids.begin(); i != ids.end(); ++i) {
      for (auto j = std::next(i); j != ids.end(); ++j) {
        if (with >= 0 && *i != with && *j != with) continue;
        if (!priced_.insert({*i, *j}).second) continue;
        FusionRecord rec = Price(*i, *j);
        if (rec.rule.empty()) continue;  // not siblings
        rec.event = "candidate";
        rec.step = plan_.merges;
        if (rec.verdict == "fuse") queue_.push(Pair{rec.saved_us(), *i, *j});
        plan_.records.push_back(std::move(rec));
      }
    }
  }

  // A sibling record of regions a and b as they stand, fused time = unfused until priced.
  FusionRecord Record(int a, int b, const Region& ra, const Region& rb) const {
    FusionRecord rec;
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
    rec.times.fused = rec.times.unfused;
    return rec;
  }

  FusionRecord Refusal(int a, int b, const std::string& rule, const std::string& reason) {
    FusionRecord rec = Record(a, b, state_.Describe(a), state_.Describe(b));
    rec.verdict = "cycle";
    rec.rule = rule;
    rec.reason = reason;
    return rec;
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
    rec = Record(a, b, ra, rb);
    rec.times.fused = EstimateRunTime(merged, device_);
    FusionDecision decision = IsElementwiseKind(merged.kind) ? CanMerge(ra, rb, merged)
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
  const std::optional<int> fuel_;
  FusionPlan& plan_;
  std::set<int> alive_;
  std::map<int, std::vector<int64_t>> inputs_;     // region -> its inputs' positions
  std::map<int64_t, std::set<int>> readers_;       // input position -> the regions reading it
  absl::flat_hash_map<const Node*, int64_t> positions_;
  std::set<std::pair<int, int>> priced_;
  std::priority_queue<Pair> queue_;
};

}  // namespace

void FuseSiblings(FusionState& state, const DeviceSpec& device, std::optional<int> fuel, FusionPlan* plan) {
  Siblings(state, device, fuel, plan).Run();
}

}  // namespace kiln
