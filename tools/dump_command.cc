#include "tools/dump_command.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/compiler.h"
#include "api/fusion_report.h"
#include "tools/cli_args.h"
#include "tools/cli_common.h"

namespace kiln {

const char kDumpCommandUsage[] = R"(usage: kiln dump GRAPH [options]

Shows every fusion decision for GRAPH and the cost-model numbers behind it.

  --device NAME     device spec to price with: auto (default: this GPU's query; without a
                    GPU the h100 spec, and the header says so), h100 or h200
  --format FORMAT   text (default): regions, bytes, predicted time, refusals, summary
                    json: one document {graph, device, summary, regions, decisions}
                    jsonl: the fusion ledger, one record per line
                    dot: Graphviz, one cluster per region
  --svg FILE        also render the Graphviz form to FILE (needs `dot`, from graphviz)
  --why NODE        why NODE is (not) fused with its neighbours
  --after PASS      print the graph after PASS instead (see the pass list below)
  --measured FILE   (text) show next to each prediction the time `kiln bench --json FILE`
                    measured for the region, and the graph's end-to-end time
  --code            (text) after the report, each region's generated CUDA source, with the
                    heuristic KernelParams (no NVRTC needed; `kiln tune` may pick others)
  --candidates      (text) after the report, each kernel's tuning candidates with the cost
                    model's time for each (column reductions; `kiln tune` shows it beside
                    the measured time)
  --shape BINDINGS  ONNX symbolic dimensions: NAME=DIM[,DIM...] separated by ';'

Environment: KILN_FUSION_FUEL=N stops after N merges; KILN_FORCE_FUSE=rule,... takes every legal
merge of those rules whatever its price; KILN_DISABLE_PASSES=a,b skips passes;
KILN_DUMP=ir,passes,ledger writes dumps to KILN_DUMP_DIR (or stderr).
)";

namespace {

int Fail(const std::string& message, int code) {
  std::cerr << "kiln dump: error: " << message << "\n";
  return code;
}

std::string PassNames() { return absl::StrJoin(PipelinePassNames(), ", "); }

}  // namespace

int DumpCommand(const std::vector<std::string>& args) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(
      args, {{"device", true}, {"format", true}, {"svg", true}, {"why", true}, {"after", true}, {"shape", true},
             {"measured", true}, {"code", false}, {"candidates", false}});
  if (!parsed.ok()) return Fail(std::string(parsed.status().message()), 2);
  if (parsed->help) {
    std::cout << kDumpCommandUsage << "passes, in order: " << PassNames() << "\n";
    return 0;
  }
  if (parsed->positional.size() != 1) return Fail("expected one GRAPH argument (see kiln dump --help)", 2);
  std::string format = parsed->values.count("format") ? parsed->values.at("format") : "text";
  if (format != "text" && format != "json" && format != "jsonl" && format != "dot") {
    return Fail(absl::StrCat("unknown --format \"", format, "\"; expected text, json, jsonl or dot"), 2);
  }

  absl::StatusOr<DebugOptions> debug = DebugOptionsFromEnv();
  if (!debug.ok()) return Fail(std::string(debug.status().message()), 2);
  AnalyzeOptions options;
  options.debug = *debug;
  if (parsed->values.count("device")) options.device = parsed->values.at("device");
  options.keep_pass_snapshots = parsed->values.count("after") > 0;

  LoadedGraph loaded = LoadAndVerify("dump", parsed->positional[0], &*parsed);
  if (loaded.graph == nullptr) return loaded.exit_code;
  absl::StatusOr<Analysis> analysis = Analyze(std::move(loaded.graph), options);
  if (!analysis.ok()) {
    bool user = analysis.status().code() == absl::StatusCode::kInvalidArgument;
    return Fail(std::string(analysis.status().message()), user ? 2 : 1);
  }

  if (parsed->values.count("after")) {
    const std::string& pass = parsed->values.at("after");
    if (pass == "import") {
      std::cout << analysis->imported_text;
      return 0;
    }
    for (const auto& [name, text] : analysis->snapshots) {
      if (name == pass) {
        std::cout << text;  // the first run of a pass that appears twice
        return 0;
      }
    }
    return Fail(absl::StrCat("no pass \"", pass, "\" ran; passes: import, ", PassNames()), 2);
  }
  if (parsed->values.count("why")) {
    absl::StatusOr<std::string> why = WhyReport(*analysis, parsed->values.at("why"));
    if (!why.ok()) return Fail(std::string(why.status().message()), 2);
    std::cout << *why;
    return 0;
  }
  if (parsed->values.count("svg")) {
    const std::string& path = parsed->values.at("svg");
    if (path.find('\'') != std::string::npos) return Fail("--svg path must not contain a single quote", 2);
    std::string dot_path = path + ".dot";
    std::ofstream(dot_path) << FusionDot(*analysis);
    std::string command = absl::StrCat("dot -Tsvg '", dot_path, "' -o '", path, "'");
    if (std::system(command.c_str()) != 0) {
      return Fail(absl::StrCat("rendering with `", command, "` failed (is graphviz installed?)"), 1);
    }
    std::remove(dot_path.c_str());
  }
  if (format == "json") {
    std::cout << FusionPlanJson(analysis->plan) << "\n";
  } else if (format == "jsonl") {
    std::cout << LedgerJsonLines(analysis->plan);
  } else if (format == "dot") {
    std::cout << FusionDot(*analysis);
  } else if (parsed->values.count("measured")) {
    absl::StatusOr<MeasuredTimes> measured = ReadMeasuredTimes(parsed->values.at("measured"), analysis->graph->name());
    if (!measured.ok()) return Fail(std::string(measured.status().message()), 2);
    std::cout << FusionReport(*analysis, &*measured);
  } else {
    std::cout << FusionReport(*analysis);
  }
  if (format == "text" && parsed->Has("code")) std::cout << GeneratedCodeReport(*analysis);
  if (format == "text" && parsed->Has("candidates")) std::cout << CandidatesReport(*analysis);
  return 0;
}

}  // namespace kiln
