// The fusion ledger as JSON: one record per line (KILN_DUMP=ledger, `kiln dump --format
// jsonl`), or one document (`kiln dump --format json`). Written with RapidJSON's Writer so
// names are escaped correctly. Every object says what it is in "record" ("decision" or
// "region"); a region's "kind" is its region kind. Decisions name regions by merge-time id
// ("producer_merge_id", "consumer_merge_ids"), which each final region carries as "merge_id"
// next to its execution-order "id". Rewrites a pass weighed before fusion (horizontal_matmul)
// are "pass_decision" records, first in the lines and under "pass_decisions" in the document.
#include <string>

#include "passes/fusion/ledger.h"

#include "ir/base/json_writer.h"
#include "passes/fusion/reduce_placement.h"
#include "passes/fusion/region_kind.h"

namespace kiln {
namespace {

using json::Int;
using json::Num;
using json::Str;
using json::Take;
using json::Writer;

void Ids(Writer& w, const char* key, const std::vector<int>& ids) { json::Ints(w, key, ids); }

void Terms(Writer& w, const char* key, const RunTimeEstimate& e) {
  w.Key(key);
  w.StartObject();
  Int(w, "bytes_read", e.bytes_read);
  Int(w, "bytes_written", e.bytes_written);
  Num(w, "flops", e.flops);
  Num(w, "transcendentals", e.transcendentals);
  Num(w, "index_ops", e.index_ops);
  Num(w, "memory_us", e.memory_us);
  Num(w, "compute_us", e.compute_us);
  Num(w, "launch_us", e.launch_us);
  Int(w, "passes", e.passes);
  json::Bool(w, "row_on_chip", e.row_on_chip);
  if (e.blocks > 0) Int(w, "blocks", e.blocks);
  if (!e.row_fit.empty()) Str(w, "row_fit", e.row_fit);
  if (e.wasted_bytes > 0) Int(w, "wasted_bytes", e.wasted_bytes);
  if (!e.layout.empty()) Str(w, "layout", e.layout);
  Num(w, "total_us", e.total_us);
  w.EndObject();
}

void WriteRecord(Writer& w, const FusionRecord& r) {
  w.StartObject();
  Str(w, "record", "decision");
  Int(w, "step", r.step);
  Str(w, "event", r.event);
  if (r.event != "stop") {
    Str(w, "mode", r.mode);
    Int(w, "producer_merge_id", r.producer_id);
    Ids(w, "consumer_merge_ids", r.consumer_ids);
    Str(w, "producer_kind", r.producer_kind);
    if (!r.consumer_kind.empty()) Str(w, "consumer_kind", r.consumer_kind);
    json::Strings(w, "producer", r.producer_nodes);
    json::Strings(w, "consumer", r.consumer_nodes);
    Str(w, "verdict", r.verdict);
    Str(w, "rule", r.rule);
    Num(w, "predicted_unfused_us", r.unfused_us());
    Num(w, "predicted_fused_us", r.fused_us());
    Num(w, "saved_us", r.saved_us());
    Terms(w, "unfused_terms", r.times.unfused);
    Terms(w, "fused_terms", r.times.fused);
  }
  Str(w, "reason", r.reason);
  w.EndObject();
}

// {"record": "pass_decision", "pass", "verdict": "fuse" | "refuse", "rule", "nodes", "reason"}.
void WritePassDecision(Writer& w, const std::string& pass, const PassDecision& d) {
  w.StartObject();
  Str(w, "record", "pass_decision");
  Str(w, "pass", pass);
  Str(w, "verdict", d.decision ? "fuse" : "refuse");
  Str(w, "rule", d.decision.rule());
  json::Strings(w, "nodes", d.nodes);
  Str(w, "reason", d.decision.reason());
  w.EndObject();
}

void WriteRegion(Writer& w, const Region& region, const RunTimeEstimate& e) {
  w.StartObject();
  Str(w, "record", "region");
  Int(w, "id", region.id);
  Int(w, "merge_id", region.merge_id);
  Str(w, "kind", RegionKindName(region.kind));
  Str(w, "template", KindInfo(region.kind).runs_as);
  std::vector<std::string> nodes, ops;
  for (const Node* n : region.nodes) {
    nodes.push_back(n->name());
    ops.push_back(OpName(n->op()));
  }
  json::Strings(w, "nodes", nodes);
  json::Strings(w, "ops", ops);
  for (const char* side : {"inputs", "outputs"}) {
    w.Key(side);
    w.StartArray();
    for (const Node* n : side[0] == 'i' ? region.inputs : region.outputs) {
      w.StartObject();
      Str(w, "name", n->name());
      Str(w, "type", std::string(DTypeName(n->dtype())) + ShapeToString(n->shape()));
      Int(w, "bytes", n->num_bytes());
      w.EndObject();
    }
    w.EndArray();
  }
  if (region.reduce) {
    const ReduceSpace& s = region.reduce->space;
    Int(w, "outer", s.outer);
    Int(w, "reduced", s.reduced);
    Int(w, "inner", s.inner);
  }
  Terms(w, "predicted", e);
  w.EndObject();
}

}  // namespace

std::string LedgerJsonLines(const FusionPlan& plan) {
  std::string out;
  for (const auto& [pass, d] : plan.pass_decisions) {
    rapidjson::StringBuffer buffer;
    Writer w(buffer);
    WritePassDecision(w, pass, d);
    out += Take(buffer) + "\n";
  }
  for (const FusionRecord& r : plan.records) {
    rapidjson::StringBuffer buffer;
    Writer w(buffer);
    WriteRecord(w, r);
    out += Take(buffer) + "\n";
  }
  for (size_t i = 0; i < plan.regions.size(); ++i) {
    rapidjson::StringBuffer buffer;
    Writer w(buffer);
    WriteRegion(w, plan.regions[i], plan.estimates[i]);
    out += Take(buffer) + "\n";
  }
  return out;
}

std::string FusionPlanJson(const FusionPlan& plan) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  Str(w, "graph", plan.graph_name);
  Str(w, "device", plan.device.ToString());
  w.Key("summary");
  w.StartObject();
  Int(w, "ops", plan.ops);
  Int(w, "kernels", plan.num_kernels());
  Int(w, "regions", static_cast<int64_t>(plan.regions.size()));
  Int(w, "merges", plan.merges);
  Int(w, "unfused_bytes", plan.unfused_bytes);
  Int(w, "fused_bytes", plan.fused_bytes);
  Num(w, "predicted_unfused_us", plan.unfused_us);
  Num(w, "predicted_fused_us", plan.fused_us);
  json::Bool(w, "fuel_exhausted", plan.fuel_exhausted);
  w.EndObject();
  w.Key("regions");
  w.StartArray();
  for (size_t i = 0; i < plan.regions.size(); ++i) WriteRegion(w, plan.regions[i], plan.estimates[i]);
  w.EndArray();
  w.Key("decisions");
  w.StartArray();
  for (const FusionRecord& r : plan.records) WriteRecord(w, r);
  w.EndArray();
  w.Key("pass_decisions");
  w.StartArray();
  for (const auto& [pass, d] : plan.pass_decisions) WritePassDecision(w, pass, d);
  w.EndArray();
  w.EndObject();
  return Take(buffer);
}

}  // namespace kiln
