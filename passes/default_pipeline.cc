// The table of contents of kiln's graph optimisation: every pass, in order, with the reason
// wherever the order matters. Fusion (passes/fusion/priority_fusion.h) runs on the result.
#include <set>

#include "passes/canonicalize.h"
#include "passes/constant_fold.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/decompose.h"
#include "passes/horizontal_matmul.h"
#include "passes/lower_attention.h"
#include "passes/match_attention.h"
#include "passes/pass_pipeline.h"

namespace kiln {

PassPipeline DefaultPipeline() {
  PassPipeline pipeline;
  // Normalised axes and exporter spellings first, so the matchers below see one form.
  pipeline.Add(std::make_unique<Canonicalize>());
  // Before decompose: the attention pattern is matched on the composite softmax.
  pipeline.Add(std::make_unique<MatchAttention>());
  // Attention the tiled template does not run becomes matmul, softmax and matmul here, once,
  // so that fusion prices what runs.
  pipeline.Add(std::make_unique<LowerAttention>());
  pipeline.Add(std::make_unique<Decompose>());
  // Decompositions create scalar constants and foldable pairs; fold, then merge duplicates
  // (two norms of one tensor share their mean), then drop what nothing reads.
  pipeline.Add(std::make_unique<Canonicalize>());
  pipeline.Add(std::make_unique<ConstantFold>());
  pipeline.Add(std::make_unique<Cse>());
  // After cse (matmuls of one A read one node), on the final matmul and bias forms; attention
  // is matched already, and absorbs the slices this leaves.
  pipeline.Add(std::make_unique<HorizontalMatmul>());
  pipeline.Add(std::make_unique<Dce>());
  return pipeline;
}

std::vector<std::string> KnownPassNames() {
  std::set<std::string> names;
  const PassPipeline pipeline = DefaultPipeline();  // a named object: passes() refers into it
  for (const auto& pass : pipeline.passes()) names.insert(pass->name());
  return {names.begin(), names.end()};
}

}  // namespace kiln
