#include "api/lowering_ledger.h"

#include <algorithm>

#include "ir/base/json_writer.h"
#include "passes/fusion/region_kind.h"

namespace kiln {
namespace {

using json::Str;
using json::Writer;

}  // namespace

std::string LoweringJsonLines(const LowerResult& lowered, const TuneResult& tuning, bool with_origin) {
  const Program& p = lowered.program;
  std::string out;
  for (const LoweredRegion& r : lowered.regions) {
    rapidjson::StringBuffer buffer;
    Writer w(buffer);
    w.StartObject();
    Str(w, "record", "lowered");
    w.Key("region");
    w.Int(r.region);
    Str(w, "kind", RegionKindName(r.kind));
    Str(w, "template", KindInfo(r.kind).runs_as);
    w.Key("steps");
    w.StartArray();
    for (int s : r.steps) w.Int(s);
    w.EndArray();
    w.Key("kernels");
    w.StartArray();
    for (size_t k = 0; k < r.kernels.size(); ++k) {
      auto m = std::find_if(p.modules.begin(), p.modules.end(), [&](const Module& m) { return m.name == r.kernels[k]; });
      w.StartObject();
      Str(w, "name", r.kernels[k]);
      if (m != p.modules.end()) {
        Str(w, "params", m->params);
        w.Key("registers");
        w.Int(m->registers);
        w.Key("spill_bytes");
        w.Int64(m->spill_bytes);
        w.Key("compile_ms");
        w.Double(m->compile_ms);
      }
      if (with_origin) Str(w, "origin", k < r.origins.size() ? r.origins[k] : "");
      w.EndObject();
    }
    w.EndArray();
    w.Key("notes");
    w.StartArray();
    for (const std::string& n : r.notes) w.String(n.c_str(), static_cast<rapidjson::SizeType>(n.size()));
    w.EndArray();
    for (const TunedRegion& t : tuning.regions) {
      if (t.region != r.region) continue;
      w.Key("tuning");
      w.StartObject();
      w.Key("candidates");
      w.StartArray();
      for (size_t c = 0; c < t.candidates.size(); ++c) {
        w.StartObject();
        Str(w, "params", t.candidates[c].ToString());
        if (c < t.us.size()) {
          w.Key("us");
          w.Double(t.us[c]);
        }
        w.EndObject();
      }
      w.EndArray();
      Str(w, "chosen", t.candidates[t.chosen].ToString());
      w.Key("remembered");
      w.Bool(t.cached);
      w.EndObject();
    }
    w.EndObject();
    out += buffer.GetString();
    out += "\n";
  }
  return out;
}

std::string MeasuredJsonLine(int region, double measured_us, double predicted_us, int steps) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  Str(w, "record", "measured");
  w.Key("region");
  w.Int(region);
  w.Key("measured_us");
  w.Double(measured_us);
  w.Key("predicted_us");
  w.Double(predicted_us);
  w.Key("steps");
  w.Int(steps);
  w.EndObject();
  return std::string(buffer.GetString()) + "\n";
}

}  // namespace kiln
