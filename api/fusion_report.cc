#include "api/fusion_report.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <map>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "rapidjson/document.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "codegen/emit_kernel.h"
#include "codegen/kernel_params.h"
#include "ir/base/status.h"
#include "passes/fusion/reduce_placement.h"
#include "passes/fusion/region_kind.h"

namespace kiln {
namespace {

std::string Bytes(int64_t b) {
  if (b >= (1 << 30)) return absl::StrFormat("%.2f GB", b / 1073741824.0);
  if (b >= (1 << 20)) return absl::StrFormat("%.1f MB", b / 1048576.0);
  if (b >= (1 << 10)) return absl::StrFormat("%.1f KB", b / 1024.0);
  return absl::StrFormat("%d B", b);
}

std::string TensorList(const std::vector<Node*>& nodes) {
  std::vector<std::string> parts;
  for (const Node* n : nodes) {
    parts.push_back(absl::StrCat(n->name(), " ", DTypeName(n->dtype()), ShapeToString(n->shape()), " (",
                                 Bytes(n->num_bytes()), ")"));
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, ", ");
}

// Traffic and time if every op of the region ran as its own kernel.
RunTimeEstimate OneKernelPerOp(const Analysis& a, const Region& region) {
  RunTimeEstimate sum;
  for (Node* n : region.nodes) {
    RunTimeEstimate e = EstimateRunTime(DescribeOrderedRegion(-1, {n}, *a.graph, a.plan.device), a.plan.device);
    sum.bytes_read += e.bytes_read;
    sum.bytes_written += e.bytes_written;
    sum.total_us += e.total_us;
  }
  return sum;
}

// The final region holding the first node of a record's side, or -1. `home`: each node's
// first region (FusionPlan::RegionOf), looked up once for the whole ledger.
int FinalRegion(const absl::flat_hash_map<const Node*, int>& home, const Graph& g,
                const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    auto it = home.find(g.FindNode(name));
    if (it != home.end()) return it->second;
  }
  return -1;
}

std::string Describe(const FusionRecord& r) {
  return absl::StrFormat("%s: %s (unfused %.2f us, fused %.2f us)", r.rule, r.reason, r.unfused_us(), r.fused_us());
}

}  // namespace

std::string FusionReport(const Analysis& a, const MeasuredTimes* measured) {
  const FusionPlan& plan = a.plan;
  std::string out = absl::StrFormat("kiln dump: %s on %s\n", plan.graph_name, plan.device.ToString());
  std::vector<std::string> passes;
  for (const PassRecord& p : a.passes) {
    passes.push_back(!p.ran ? absl::StrCat(p.name, " (disabled)")
                            : absl::StrFormat("%s %.2f ms%s", p.name, p.ms, p.changed ? "" : " (unchanged)"));
  }
  absl::StrAppend(&out, "passes: ", absl::StrJoin(passes, ", "), "\n");
  for (const auto& [pass, d] : plan.pass_decisions) {
    absl::StrAppend(&out, pass, ": ", d.decision ? "fused " : "refused ", absl::StrJoin(d.nodes, ", "), " (",
                    d.decision.rule(), "): ", d.decision.reason(), "\n");
  }
  out += "\n";

  // Refusals that still separate two final regions: the latest record per (pair, rule).
  std::map<int, std::map<std::string, std::string>> refused;
  absl::flat_hash_map<const Node*, int> home;
  for (const Region& r : plan.regions) {
    for (const Node* n : r.nodes) home.emplace(n, r.id);
  }
  for (const FusionRecord& r : plan.records) {
    if (r.event == "stop" || r.verdict == "fuse") continue;
    int p = FinalRegion(home, *a.graph, r.producer_nodes);
    int c = FinalRegion(home, *a.graph, r.consumer_nodes);
    if (p < 0 || c < 0 || p == c) continue;
    std::string what = r.verdict == "unprofitable" ? "not profitable" : "refused";
    refused[p][absl::StrCat("region ", c, " ", r.rule)] =
        absl::StrCat(what, " into region ", c, (r.mode == "recompute" ? " (recompute)" : ""), ": ", Describe(r));
    refused[c][absl::StrCat("region ", p, " ", r.rule)] =
        absl::StrCat(what, " from region ", p, (r.mode == "recompute" ? " (recompute)" : ""), ": ", Describe(r));
  }

  for (size_t i = 0; i < plan.regions.size(); ++i) {
    const Region& r = plan.regions[i];
    const RunTimeEstimate& e = plan.estimates[i];
    RunTimeEstimate unfused = OneKernelPerOp(a, r);
    std::string space = r.kind == RegionKind::kRowReduction ? absl::StrFormat(" [%d rows x %d]", r.rows(), r.row_length())
                        : r.reduce ? absl::StrCat(" ", ShapeToString(r.space), " as ", r.reduce->space.ToString())
                                   : absl::StrCat(" ", ShapeToString(r.space));
    absl::StrAppendFormat(&out, "region %d  %s%s  template %s\n", r.id, RegionKindName(r.kind), space,
                          KindInfo(r.kind).runs_as);
    std::vector<std::string> ops;
    for (const Node* n : r.nodes) ops.push_back(absl::StrCat(n->name(), "=", OpName(n->op())));
    absl::StrAppend(&out, "  ops (", r.nodes.size(), "): ", absl::StrJoin(ops, " "), "\n");
    absl::StrAppend(&out, "  reads:  ", TensorList(r.inputs), "\n");
    absl::StrAppend(&out, "  writes: ", TensorList(r.outputs), "\n");
    absl::StrAppendFormat(&out, "  bytes:  %s fused vs %s one kernel per op\n", Bytes(e.bytes_read + e.bytes_written),
                          Bytes(unfused.bytes_read + unfused.bytes_written));
    absl::StrAppendFormat(&out, "  predicted: %.2f us (%s); one kernel per op: %.2f us\n", e.total_us,
                          e.ToString(), unfused.total_us);
    if (!e.row_fit.empty()) absl::StrAppend(&out, "  row fit: ", e.row_fit, "\n");
    if (!e.layout.empty()) absl::StrAppend(&out, "  layout: ", e.layout, "\n");
    if (measured != nullptr) {
      auto m = measured->region_us.find(r.id);
      if (m != measured->region_us.end()) {
        absl::StrAppendFormat(&out, "  measured:  %.2f us on %s (kiln bench; %.2fx the prediction)\n", m->second,
                              measured->device, e.total_us > 0 ? m->second / e.total_us : 0.0);
      }
    }
    for (const auto& [key, line] : refused[r.id]) absl::StrAppend(&out, "  - ", line, "\n");
    out += "\n";
  }
  int views = static_cast<int>(plan.regions.size()) - plan.num_kernels();
  absl::StrAppendFormat(&out,
                        "summary: %d ops -> %d kernel%s%s; %d merges; bytes %s -> %s (saved %s); "
                        "predicted %.2f us -> %.2f us (%.2fx over one kernel per op)%s\n",
                        plan.ops, plan.num_kernels(), plan.num_kernels() == 1 ? "" : "s", views ? absl::StrFormat(" + %d views", views) : "",
                        plan.merges, Bytes(plan.unfused_bytes), Bytes(plan.fused_bytes),
                        Bytes(plan.unfused_bytes - plan.fused_bytes), plan.unfused_us, plan.fused_us,
                        plan.fused_us > 0 ? plan.unfused_us / plan.fused_us : 0.0,
                        plan.fuel_exhausted ? " [stopped by KILN_FUSION_FUEL]" : "");
  if (measured != nullptr) {
    absl::StrAppendFormat(&out, "measured: %.2f us end to end on %s (kiln bench)\n", measured->graph_us, measured->device);
  }
  return out;
}

absl::StatusOr<MeasuredTimes> ReadMeasuredTimes(const std::string& path, const std::string& graph_name) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("--measured: cannot open ", path));
  std::stringstream text;
  text << in.rdbuf();
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(text.str().c_str());
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("--measured ", path, ": ", why, " (expected `kiln bench --json` output)"));
  };
  if (doc.HasParseError() || !doc.IsObject()) return bad("not a JSON object");
  if (!doc.HasMember("graph") || !doc["graph"].IsString() || !doc.HasMember("steps") || !doc["steps"].IsArray()) {
    return bad("no \"graph\" and \"steps\"");
  }
  if (graph_name != doc["graph"].GetString()) {
    return bad(absl::StrCat("recorded for graph '", doc["graph"].GetString(), "', not '", graph_name, "'"));
  }
  MeasuredTimes m;
  if (doc.HasMember("device") && doc["device"].IsString()) m.device = doc["device"].GetString();
  if (doc.HasMember("graph_us") && doc["graph_us"].IsNumber()) m.graph_us = doc["graph_us"].GetDouble();
  for (const auto& step : doc["steps"].GetArray()) {
    if (!step.IsObject() || !step.HasMember("region") || !step["region"].IsInt() || !step.HasMember("measured_us") ||
        !step["measured_us"].IsNumber()) {
      return bad("a step without \"region\" and \"measured_us\"");
    }
    m.region_us[step["region"].GetInt()] += step["measured_us"].GetDouble();
  }
  return m;
}

namespace {

// The pass that removed `name` at or after pass `from`, and where its value went, or null.
const RemovedNode* FindRemoval(const Analysis& a, const std::string& name, size_t from, size_t* pass) {
  for (size_t i = from; i < a.passes.size(); ++i) {
    for (const RemovedNode& r : a.passes[i].removed) {
      if (r.name == name) {
        *pass = i;
        return &r;
      }
    }
  }
  return nullptr;
}

}  // namespace

// The report on `name` in the final graph (or where its value went).
static absl::StatusOr<std::string> WhyReportAfterPasses(const Analysis& a, const std::string& name);

absl::StatusOr<std::string> WhyReport(const Analysis& a, const std::string& name) {
  std::string passes;  // the pass decisions naming it, before whatever follows
  for (const auto& [pass, d] : a.plan.pass_decisions) {
    if (std::count(d.nodes.begin(), d.nodes.end(), name) == 0) continue;
    absl::StrAppend(&passes, pass, ": ", d.decision ? "fused " : "refused ", absl::StrJoin(d.nodes, ", "), " (",
                    d.decision.rule(), "): ", d.decision.reason(), "\n");
  }
  if (!passes.empty()) {
    KILN_ASSIGN_OR_RETURN(std::string rest, WhyReportAfterPasses(a, name));
    return passes + rest;
  }
  return WhyReportAfterPasses(a, name);
}

static absl::StatusOr<std::string> WhyReportAfterPasses(const Analysis& a, const std::string& name) {
  const Node* node = a.graph->FindNode(name);
  if (node == nullptr) {
    // A node the passes removed: say which pass, and follow its value to the node holding it.
    size_t pass = 0;
    if (const RemovedNode* removed = FindRemoval(a, name, 0, &pass)) {
      std::string out;
      while (removed != nullptr) {
        absl::StrAppend(&out, "node ", removed->name, " was removed by ", a.passes[pass].name);
        if (removed->now.empty()) {
          absl::StrAppend(&out, "; nothing reads its value any more (dead, or folded into a rewritten user)\n");
          return out;
        }
        absl::StrAppend(&out, "; its value is now ", removed->now, "\n");
        const std::string now = removed->now;
        if (a.graph->FindNode(now) != nullptr) {
          KILN_ASSIGN_OR_RETURN(std::string rest, WhyReport(a, now));
          return out + rest;
        }
        removed = FindRemoval(a, now, pass + 1, &pass);
      }
      return out;
    }
    // Composite ops keep their name on the node that computes their result; intermediate
    // nodes are named after them ("ln1.reduce_mean"), so list candidates.
    std::vector<std::string> close;
    for (const Node* n : a.graph->nodes()) {
      if (n->name().rfind(name, 0) == 0) close.push_back(n->name());
    }
    return absl::NotFoundError(absl::StrCat(
        "no node \"", name, "\" after the passes",
        close.empty() ? std::string("") : absl::StrCat("; nodes it became: ", absl::StrJoin(close, ", "))));
  }
  std::string out = absl::StrCat("node ", node->ToString(), "\n");
  if (node->category() == OpCategory::kLeaf) {
    absl::StrAppend(&out, "a graph ", OpName(node->op()), ", never fused: ",
                    node->num_elements() == 1 ? "a literal in the kernels that use it\n"
                                              : "read from memory by regions");
    if (node->num_elements() != 1) {
      for (const Region& r : a.plan.regions) {
        if (std::count(r.inputs.begin(), r.inputs.end(), node)) absl::StrAppend(&out, " ", r.id);
      }
      out += "\n";
    }
    return out;
  }
  std::vector<const Region*> holders;
  for (const Region& r : a.plan.regions) {
    if (r.Contains(node)) holders.push_back(&r);
  }
  if (holders.size() > 1) {
    absl::StrAppend(&out, "is recomputed in ", holders.size(), " regions (never written between them):\n");
  }
  for (const Region* region : holders) {
    absl::StrAppendFormat(&out, "%sis in region %d (%s) with: %s\n", holders.size() > 1 ? "  " : "", region->id,
                          RegionKindName(region->kind), region->NodeList(12));
  }
  absl::StrAppend(&out, "decisions naming it:\n");
  for (const FusionRecord& r : a.plan.records) {
    if (r.event == "stop") continue;
    bool in_p = std::count(r.producer_nodes.begin(), r.producer_nodes.end(), name) > 0;
    bool in_c = std::count(r.consumer_nodes.begin(), r.consumer_nodes.end(), name) > 0;
    if (!in_p && !in_c) continue;
    const std::vector<std::string>& other = in_p ? r.consumer_nodes : r.producer_nodes;
    std::vector<std::string> shown(other.begin(), other.begin() + std::min<size_t>(other.size(), 4));
    if (other.size() > 4) shown.push_back(absl::StrCat("+", other.size() - 4, " more"));
    std::string other_kind = in_p ? r.consumer_kind : r.producer_kind;
    std::string verdict = r.event == "fuse"     ? "FUSED"
                          : r.verdict == "fuse" ? "legal and saves time (not yet the best)"
                                                : r.verdict;
    absl::StrAppendFormat(&out, "  step %d %s%s: %s %s{%s}: %s; %s\n", r.step, r.event,
                          r.mode == "recompute" ? " (recompute)" : "", in_p ? "as producer, into" : "as consumer, of",
                          other_kind.empty() ? "" : other_kind + " ", absl::StrJoin(shown, ", "), verdict, Describe(r));
  }
  return out;
}

std::string FusionDot(const Analysis& a) {
  std::string out = absl::StrCat("digraph \"", a.plan.graph_name, "\" {\n  rankdir=TB;\n  node [shape=box, fontsize=10];\n");
  auto id = [](const Node* n) { return absl::StrCat("\"", absl::StrReplaceAll(n->name(), {{"\"", ""}}), "\""); };
  for (const Node* n : a.graph->nodes()) {
    if (n->category() == OpCategory::kLeaf && n->num_elements() > 1) {
      absl::StrAppend(&out, "  ", id(n), " [shape=ellipse, label=\"", n->name(), "\\n", DTypeName(n->dtype()),
                      ShapeToString(n->shape()), "\"];\n");
    }
  }
  for (size_t i = 0; i < a.plan.regions.size(); ++i) {
    const Region& r = a.plan.regions[i];
    absl::StrAppendFormat(&out, "  subgraph cluster_%d {\n    label=\"region %d: %s (%.1f us)\";\n", r.id, r.id,
                          RegionKindName(r.kind), a.plan.estimates[i].total_us);
    for (const Node* n : r.nodes) absl::StrAppend(&out, "    ", id(n), " [label=\"", n->name(), "\\n", OpName(n->op()), "\"];\n");
    out += "  }\n";
  }
  for (const Node* n : a.graph->nodes()) {
    for (const Node* o : n->operands()) {
      if (o->category() == OpCategory::kLeaf && o->num_elements() <= 1) continue;  // inlined literal
      absl::StrAppend(&out, "  ", id(o), " -> ", id(n), ";\n");
    }
  }
  out += "}\n";
  return out;
}

std::string GeneratedCodeReport(const Analysis& analysis) {
  std::vector<RegionSource> sources = KernelSources(analysis);
  std::string out;
  for (const Region& r : analysis.plan.regions) {
    absl::StrAppend(&out, "\n==== region ", r.id, " ", RegionKindName(r.kind), ": ");
    auto rs = std::find_if(sources.begin(), sources.end(), [&](const RegionSource& s) { return s.region == r.id; });
    if (rs != sources.end()) {
      absl::StrAppend(&out, rs->error.empty() ? absl::StrCat(rs->kernel, " (", rs->params, ")\n", rs->source)
                                              : absl::StrCat("codegen failed: ", rs->error, "\n"));
    } else {
      absl::StrAppend(&out, "runs as ", KindInfo(r.kind).runs_as, " (no generated kernel)\n");
    }
  }
  return out;
}

std::string CandidatesReport(const Analysis& analysis) {
  std::string out;
  for (const Region& r : analysis.plan.regions) {
    if (!HasKernel(r.kind)) continue;
    const std::vector<KernelParams> candidates = CandidateParams(r, analysis.plan.device);
    absl::StrAppend(&out, "\n==== region ", r.id, " ", RegionKindName(r.kind), ": ", candidates.size(),
                    " tuning candidate", candidates.size() == 1 ? "" : "s", "\n");
    for (size_t c = 0; c < candidates.size(); ++c) {
      const std::optional<RunTimeEstimate> e = CandidateEstimate(r, candidates[c], analysis.plan.device);
      const double us = e ? e->total_us : -1;
      std::string terms;  // what the price rests on: blocks, residency, values per thread, passes
      if (std::optional<RowFit> fit = CandidateColumnFit(r, candidates[c], analysis.plan.device)) {
        const ReduceSpace& s = r.reduce->space;
        const int64_t tiles = s.outer * ((s.inner + fit->lanes * fit->vector - 1) / (fit->lanes * fit->vector));
        terms = absl::StrFormat("  [%d blocks, %d an SM, %d values a thread, %d pass%s of %d level%s, %s]",
                                tiles * fit->split, fit->blocks_per_sm, fit->per_thread, fit->passes,
                                fit->passes == 1 ? "" : "es", r.reduce->levels, r.reduce->levels == 1 ? "" : "s",
                                fit->shared ? "shared" : fit->on_chip ? "registers" : "streamed");
        absl::StrAppend(&terms, absl::StrFormat(" memory %.1f, chain %.1f, launch and merges %.1f us", e->memory_us,
                                                e->compute_us, e->launch_us));
      }
      absl::StrAppend(&out, "  ", candidates[c].ToString(), us >= 0 ? absl::StrFormat("  pred %.1f us", us) : "",
                      terms, c == 0 ? "  (default)" : "", "\n");
    }
  }
  return out;
}

}  // namespace kiln
