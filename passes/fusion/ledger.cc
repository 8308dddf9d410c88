// The fusion ledger as JSON: one record per line (KILN_DUMP=ledger, `kiln dump --format
// jsonl`), or one document (`kiln dump --format json`). Written with RapidJSON's Writer so
// names are escaped correctly. Every object says what it is in "record" ("decision" or
// "region"); a region's "kind" is its region kind. Decisions name regions by merge-time id
// ("producer_merge_id", "consumer_merge_ids"), which each final region carries as "merge_id"
// next to its execution-order "id".
#include <string>

#include "passes/fusion/priority_fusion.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace kiln {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void Str(Writer& w, const char* key, const std::string& value) {
  w.Key(key);
  w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
}

void Num(Writer& w, const char* key, double value) {
  w.Key(key);
  w.Double(value);
}

void Int(Writer& w, const char* key, int64_t value) {
  w.Key(key);
  w.Int64(value);
}

void Names(Writer& w, const char* key, const std::vector<std::string>& names) {
  w.Key(key);
  w.StartArray();
  for (const std::string& n : names) w.String(n.c_str(), static_cast<rapidjson::SizeType>(n.size()));
  w.EndArray();
}

void Ids(Writer& w, const char* key, const std::vector<int>& ids) {
  w.Key(key);
  w.StartArray();
  for (int id : ids) w.Int(id);
  w.EndArray();
}

void Terms(Writer& w, const char* key, const RunTimeEstimate& e) {
  w.Key(key);
  w.StartObject();
  Int(w, "bytes_read", e.bytes_read);
  Int(w, "bytes_written", e.bytes_written);
  Num(w, "flops", e.flops);
  Num(w, "transcendentals", e.transcendentals);
  Num(w, "memory_us", e.memory_us);
  Num(w, "compute_us", e.compute_us);
  Num(w, "launch_us", e.launch_us);
  Int(w, "passes", e.passes);
  w.Key("row_on_chip");
  w.Bool(e.row_on_chip);
  if (!e.row_fit.empty()) Str(w, "row_fit", e.row_fit);
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
    Names(w, "producer", r.producer_nodes);
    Names(w, "consumer", r.consumer_nodes);
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

void WriteRegion(Writer& w, const Region& region, const RunTimeEstimate& e) {
  w.StartObject();
  Str(w, "record", "region");
  Int(w, "id", region.id);
  Int(w, "merge_id", region.merge_id);
  Str(w, "kind", RegionKindName(region.kind));
  Str(w, "template", RegionTemplate(region.kind));
  std::vector<std::string> nodes, ops;
  for (const Node* n : region.nodes) {
    nodes.push_back(n->name());
    ops.push_back(OpName(n->op()));
  }
  Names(w, "nodes", nodes);
  Names(w, "ops", ops);
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
  if (region.kind == RegionKind::kRowReduction) {
    Int(w, "rows", region.rows);
    Int(w, "row_length", region.row_length);
  }
  Terms(w, "predicted", e);
  w.EndObject();
}

std::string Take(rapidjson::StringBuffer& buffer) { return std::string(buffer.GetString(), buffer.GetSize()); }

}  // namespace

std::string LedgerJsonLines(const FusionPlan& plan) {
  std::string out;
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
  w.Key("fuel_exhausted");
  w.Bool(plan.fuel_exhausted);
  w.EndObject();
  w.Key("regions");
  w.StartArray();
  for (size_t i = 0; i < plan.regions.size(); ++i) WriteRegion(w, plan.regions[i], plan.estimates[i]);
  w.EndArray();
  w.Key("decisions");
  w.StartArray();
  for (const FusionRecord& r : plan.records) WriteRecord(w, r);
  w.EndArray();
  w.EndObject();
  return Take(buffer);
}

}  // namespace kiln
