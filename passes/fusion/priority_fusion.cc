#include "passes/fusion/priority_fusion.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/base/status.h"
#include "passes/fusion/fusion_state.h"
#include "passes/fusion/legality.h"
#include "passes/fusion/region_kind.h"
#include "passes/fusion/sibling_fusion.h"

namespace kiln {
namespace {

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

// The verdict of an allowed or refused candidate. A legal merge whose rule KILN_FORCE_FUSE
// names is taken whatever its price (to measure what the model declines), and says so.
void SetVerdict(bool allowed, const FusionOptions& options, FusionRecord& rec) {
  if (!allowed) {
    rec.verdict = "refuse";
  } else if (Profitable(rec)) {
    rec.verdict = "fuse";
  } else if (options.forced_rules.count(rec.rule) > 0) {
    rec.verdict = "fuse";
    absl::StrAppend(&rec.reason, " [forced by KILN_FORCE_FUSE: priced ", absl::StrFormat("%.2f", -rec.saved_us()),
                    " us slower]");
  } else {
    rec.verdict = "unprofitable";
  }
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
Candidate PriceMerge(const FusionState& state, const DeviceSpec& device, const FusionOptions& options, int p, int c) {
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
  SetVerdict(cand.allowed, options, rec);
  return cand;
}

// A producer read by more regions than this is written once, not recomputed in each: that
// would repeat its work in every one, and pricing it describes every consumer again each time
// one of them merges (a value read by the 2,000 ops of a 1,000-layer chain took 28 s to plan,
// 5,000 layers over 300 s). The examples, zoo, ONNX fixtures and random graphs recompute into
// at most 5.
constexpr size_t kMaxRecomputeConsumers = 16;

// Prices recomputing pointwise producer p inside every one of its consumers. Each merged
// region is described on the state after the whole recompute, where no consumer reads the
// producer from memory any more, and the cycle check runs on that region graph too.
std::optional<Candidate> PriceRecompute(FusionState& state, const DeviceSpec& device, const FusionOptions& options,
                                        int p, const std::vector<int>& consumers, const Graph& graph) {
  Region rp = state.Describe(p);
  if (consumers.size() < 2 || rp.kind != RegionKind::kPointwise) return std::nullopt;
  for (const Graph::Output& out : graph.outputs()) {
    if (rp.Contains(out.node)) return std::nullopt;  // a graph output is written once, by its home
  }
  Candidate cand;
  FusionRecord& rec = cand.record;
  rec.mode = "recompute";
  rec.producer_id = p;
  rec.consumer_ids = consumers;
  rec.producer_nodes = Names(rp.nodes);
  rec.producer_kind = RegionKindName(rp.kind);
  rec.times.unfused = EstimateRunTime(rp, device);
  if (consumers.size() > kMaxRecomputeConsumers) {  // refused unpriced: the consumers are not described
    rec.times.fused = rec.times.unfused;
    rec.verdict = "refuse";
    rec.rule = "recompute-fanout";
    rec.reason = absl::StrFormat("producer has %d consumer regions; kiln recomputes a producer in at most %d (not priced)",
                                 consumers.size(), kMaxRecomputeConsumers);
    return cand;
  }
  std::vector<Region> before;
  for (int c : consumers) before.push_back(state.Describe(c));
  cand.allowed = true;
  cand.consumers = consumers;
  FusionDecision refusal = FusionDecision::Allow("recompute");
  std::vector<int> merged_ids = state.TryRecompute(p, consumers);
  for (size_t i = 0; i < consumers.size(); ++i) {
    const Region& rc = before[i];
    Region merged = state.Describe(merged_ids[i]);
    for (const Node* n : rc.nodes) rec.consumer_nodes.push_back(n->name());
    rec.times.unfused.Add(EstimateRunTime(rc, device));
    rec.times.fused.Add(EstimateRunTime(merged, device));
    FusionDecision decision = CanMerge(rp, rc, merged);
    if (!decision.ok() && refusal.ok()) {
      refusal = FusionDecision::Forbid(decision.rule(),
                                       absl::StrCat("recompute into ", rc.NodeList(2), ": ", decision.reason()));
    }
  }
  if (refusal.ok() && state.CycleThrough(merged_ids)) refusal = FusionDecision::Forbid("cycle", kRecomputeCycle);
  state.Undo();
  cand.allowed = refusal.ok();
  rec.rule = refusal.rule();
  rec.reason = refusal.ok() ? absl::StrFormat("producer has %d consumer regions; recomputing it in each costs "
                                              "%.2f us in all, against %.2f us with it written once",
                                              consumers.size(), rec.fused_us(), rec.unfused_us())
                            : refusal.reason();
  SetVerdict(cand.allowed, options, rec);
  return cand;
}

// Whether `cand` may still be applied to `state`: the regions it names are unchanged (its key
// says so), but a merge elsewhere may have put a path between them.
bool StillAcyclic(FusionState& state, const Candidate& cand) {
  if (cand.record.mode == "merge") return !state.CreatesCycle(cand.record.producer_id, cand.record.consumer_id);
  return !state.RecomputeCreatesCycle(cand.record.producer_id, cand.consumers);
}

// Whether candidate a wins over b, the incumbent (see PlanFusion).
bool Beats(bool a_recompute, double a_saved, bool b_recompute, double b_saved) {
  constexpr double kRecomputeMargin = 1.01;
  if (a_recompute && !b_recompute) return a_saved > b_saved * kRecomputeMargin;
  if (!a_recompute && b_recompute) return a_saved * kRecomputeMargin >= b_saved;
  return a_saved > b_saved;
}

// The allowed, profitable candidates in the order they are weighed (by slot), as blocks of
// consecutive entries that keep their best merge and recompute saving: a pick skips every
// block none of whose entries could beat the incumbent, and an insert or erase moves one
// block's entries. One sorted vector cost O(candidates) per insert, erase and pick, which
// made planning quadratic past ~20,000 ops (a 200,000-op chain: 74 s).
template <typename Slot, typename Cand>
class EligibleList {
 public:
  struct Entry {
    Slot slot;
    Cand* cand;
    bool recompute;
    double saved;
    bool operator<(const Entry& o) const { return slot < o.slot; }
  };

  void Insert(const Entry& e) {
    if (blocks_.empty()) blocks_.emplace_back();  // the only block that is ever empty, briefly
    const size_t bi = BlockOf(e.slot);
    Block& b = blocks_[bi];
    b.entries.insert(std::lower_bound(b.entries.begin(), b.entries.end(), e), e);
    b.Refresh();
    if (b.entries.size() > 2 * kBlock) Split(bi);
  }

  void Erase(const Slot& slot) {
    if (blocks_.empty()) return;
    const size_t bi = BlockOf(slot);
    Block& b = blocks_[bi];
    Entry key{slot, nullptr, false, 0};
    auto it = std::lower_bound(b.entries.begin(), b.entries.end(), key);
    if (it == b.entries.end() || !(it->slot == slot)) return;
    b.entries.erase(it);
    b.Refresh();
    if (b.entries.empty()) blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(bi));
  }

  // The entries in slot order, each weighed against the best so far by `beats(e, best)`;
  // `keep(e)` is asked of each one that would become the best and drops it when false.
  // Returns the best one's candidate, or null. Blocks whose best merge and best recompute
  // both lose to the incumbent are skipped whole: `beats` grows with e.saved for each mode.
  template <typename Beats, typename Keep>
  Cand* Pick(Beats beats, Keep keep) {
    std::optional<Entry> best;
    for (size_t bi = 0; bi < blocks_.size();) {
      Block& b = blocks_[bi];
      if (best && !beats(Entry{Slot{}, nullptr, false, b.best_merge}, *best) &&
          !beats(Entry{Slot{}, nullptr, true, b.best_recompute}, *best)) {
        ++bi;
        continue;
      }
      bool changed = false;
      for (size_t i = 0; i < b.entries.size();) {
        const Entry& e = b.entries[i];
        if (best && !beats(e, *best)) {
          ++i;
          continue;
        }
        if (!keep(e)) {
          b.entries.erase(b.entries.begin() + static_cast<std::ptrdiff_t>(i));
          changed = true;
          continue;
        }
        best = e;
        ++i;
      }
      if (changed) b.Refresh();
      if (b.entries.empty()) {
        blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(bi));
      } else {
        ++bi;
      }
    }
    return best ? best->cand : nullptr;
  }

 private:
  static constexpr size_t kBlock = 256;
  struct Block {
    std::vector<Entry> entries;
    double best_merge = -1e300, best_recompute = -1e300;
    void Refresh() {
      best_merge = best_recompute = -1e300;
      for (const Entry& e : entries) {
        double& best = e.recompute ? best_recompute : best_merge;
        best = std::max(best, e.saved);
      }
    }
  };

  // The block that holds, or would hold, `slot`: the first whose last entry is not before it
  // (an empty block, the first Insert's, is not before anything).
  size_t BlockOf(const Slot& slot) const {
    auto it = std::lower_bound(blocks_.begin(), blocks_.end(), slot, [](const Block& b, const Slot& s) {
      return !b.entries.empty() && b.entries.back().slot < s;
    });
    return it == blocks_.end() ? blocks_.size() - 1 : static_cast<size_t>(it - blocks_.begin());
  }

  void Split(size_t bi) {
    Block tail;
    std::vector<Entry>& head = blocks_[bi].entries;
    tail.entries.assign(head.begin() + static_cast<std::ptrdiff_t>(kBlock), head.end());
    head.resize(kBlock);
    blocks_[bi].Refresh();
    tail.Refresh();
    blocks_.insert(blocks_.begin() + static_cast<std::ptrdiff_t>(bi) + 1, std::move(tail));
  }

  std::vector<Block> blocks_;  // every block non-empty, blocks in slot order
};

// The live candidates of PlanFusion, each priced once, and the order they are weighed in.
class LiveCandidates {
 public:
  // (producer, 0, consumer) for a merge, (producer, 1, -1) for its recompute.
  using Slot = std::tuple<int, int, int>;

  // Records p's consumer regions, forgetting the candidates whose key that changes.
  void SetConsumers(int p, std::vector<int> consumers) {
    for (int c : consumers_[p]) producers_[c].erase(p);
    for (int c : consumers) producers_[c].insert(p);
    consumers_[p] = std::move(consumers);
  }
  const std::vector<int>& consumers_of(int p) const { return consumers_.at(p); }
  std::vector<int> producers_of(int c) const {
    auto it = producers_.find(c);
    return it == producers_.end() ? std::vector<int>{} : std::vector<int>(it->second.begin(), it->second.end());
  }
  bool Has(int p, int c) const { return live_.count({p, 0, c}) > 0; }
  // Whether p's recompute into exactly `consumers` is live; drops one into others.
  bool HasRecompute(int p, const std::vector<int>& consumers) {
    auto it = live_.find({p, 1, -1});
    if (it == live_.end()) return false;
    if (it->second.consumers == consumers) return true;
    Erase(it->first);
    return false;
  }

  // A newly priced candidate (consumer -1: a recompute); its first record goes to the ledger.
  void Add(int p, int c, Candidate cand, FusionPlan& plan) {
    cand.record.step = plan.merges;
    cand.record.event = plan.merges == 0 ? "candidate" : "reprice";
    plan.records.push_back(cand.record);
    Slot slot{p, c < 0 ? 1 : 0, c};
    Candidate& stored = live_.emplace(slot, std::move(cand)).first->second;
    if (!stored.allowed || stored.record.verdict != "fuse") return;
    eligible_.Insert({slot, &stored, stored.record.mode == "recompute", stored.record.saved_us()});
  }

  // Region r is gone: its candidates as producer and as consumer.
  void Drop(int r) {
    for (auto it = live_.lower_bound({r, 0, -1}); it != live_.end() && std::get<0>(it->first) == r;) {
      Slot slot = (it++)->first;
      Erase(slot);
    }
    for (int q : producers_of(r)) Erase({q, 0, r});
    SetConsumers(r, {});
    consumers_.erase(r);
    producers_.erase(r);
  }

  // Weighs the allowed, profitable candidates in order and returns the best, or null.
  // `acyclic` is asked of each one that would become the best and may refuse it for good.
  template <typename Check>
  const Candidate* Pick(Check acyclic) {
    using Entry = Eligible::Entry;
    return eligible_.Pick(
        [](const Entry& e, const Entry& best) { return Beats(e.recompute, e.saved, best.recompute, best.saved); },
        [&](const Entry& e) { return acyclic(*e.cand); });
  }

 private:
  using Eligible = EligibleList<Slot, Candidate>;
  void Erase(const Slot& slot) {
    eligible_.Erase(slot);
    live_.erase(slot);
  }

  std::map<Slot, Candidate> live_;
  Eligible eligible_;  // the allowed and profitable ones, by slot
  std::map<int, std::vector<int>> consumers_;
  absl::flat_hash_map<int, std::set<int>> producers_;
};

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

  // Live candidates, in the order they are weighed: by producer id, each producer's merges by
  // consumer id, then its recompute. A candidate names region ids, and ids are never reused,
  // so it is priced once and stays valid until one of its regions is merged away; only the
  // cycle check looks beyond its regions and is redone at pick time. After a step, only the
  // new regions and the producers that fed a region merged away can have new candidates.
  LiveCandidates live;
  std::set<int> dirty;
  for (const auto& [id, nodes] : state.regions()) dirty.insert(id);
  while (true) {
    for (int p : dirty) {
      live.SetConsumers(p, state.Consumers(p));
      for (int c : live.consumers_of(p)) {
        if (live.Has(p, c)) continue;
        live.Add(p, c, PriceMerge(state, device, options, p, c), plan);
      }
      if (!live.HasRecompute(p, live.consumers_of(p))) {
        if (auto r = PriceRecompute(state, device, options, p, live.consumers_of(p), graph)) {
          live.Add(p, -1, *r, plan);
        }
      }
    }
    dirty.clear();
    // The best legal, profitable, acyclic candidate; ties go to the earliest. A recompute
    // must save clearly more (kRecomputeMargin) than a merge to win over it: it computes the
    // producer twice, and the merge keeps a value whole for what fuses next (a bias add left
    // in its matmul's epilogue lets attention fold the head split of the sliced result).
    const Candidate* best = live.Pick([&](Candidate& cand) {
      if (StillAcyclic(state, cand)) return true;
      FusionRecord rec = cand.record;
      rec.event = "reprice";
      rec.step = plan.merges;
      rec.verdict = "cycle";
      rec.rule = "cycle";
      rec.reason = rec.mode == "merge" ? kMergeCycle : kRecomputeCycle;
      plan.records.push_back(rec);
      cand.allowed = false;
      return false;
    });
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
    const std::vector<int> consumers = best->consumers;
    fuse.event = "fuse";
    fuse.step = plan.merges;
    std::vector<int> removed = consumers;
    removed.push_back(fuse.producer_id);
    for (int r : removed) {
      for (int q : live.producers_of(r)) dirty.insert(q);
    }
    std::vector<int> added = state.Recompute(fuse.producer_id, consumers);
    for (int r : removed) {
      live.Drop(r);
      dirty.erase(r);
    }
    dirty.insert(added.begin(), added.end());
    plan.records.push_back(fuse);
    ++plan.merges;
  }

  if (!plan.fuel_exhausted) FuseSiblings(state, device, options.fuel, &plan);

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
