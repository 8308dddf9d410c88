// The prologue frontier of a row region (codegen/reduce_emitter.h): what a row's cached vectors
// hold. Before, Vec held the region's row inputs, and every pass over the row (each level's Step
// and the Store) recomputed whatever the region computes from them before its first reduction:
// dropout's Philox words, a residual add, a cast. A LayerNorm after dropout and a residual add
// drew its Philox numbers three times per element, and NVRTC compiled that code three times.
//
// Now Load computes that prologue once per vector and Vec holds its frontier: the prologue
// values that something after the prologue reads (a reduction, a node that needs a row value,
// an output), with the inputs that such nodes still read. A value equal to another (a cast
// between two types of one compute type, such as bf16 -> f32) shares its field. The frontier
// replaces the inputs only where it holds no more arrays than they did (no more registers per
// cached vector) and saves work: a random op in the prologue, or fewer arrays. Rows only, in
// registers or streamed; a shared-memory cache keeps raw input bytes copied by cp.async. Not
// for rows with a head and a tail of single elements (a width that is not a multiple of the
// vector): add + layer_norm over 8192 rows of 4095 bf16 took 82.0 us with it and 79.4 without
// (H200, session 18), where the aligned rows measured level (add + rms_norm 130.2 / 130.1,
// dropout + add + layer_norm 131.2 / 130.7 us, untuned, L2 flushed).
//
// The prologue: members, row-shaped over the whole space (one value per element), that are not
// reductions and read only cached inputs, inlined constants and other prologue nodes; none of
// them reads a per-row value, so Load (which has no Row) can compute them.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "codegen/reduce_emitter.h"
#include "ir/base/status.h"

namespace kiln::codegen_internal {

absl::StatusOr<bool> ReduceEmitter::PlanFrontier() {
  if (column_ || p_.smem || !aligned_ || vec_fields_.empty()) return false;
  // The prologue, in region order (operands first).
  std::set<const Node*> prologue;
  for (const Node* n : r_.nodes) {
    const Placement& place = pl_.Of(n);
    if (IsReduction(n) || PerRow(n) || place.combined || NumElements(place.Part(n, 1)) != N_ ||
        NumElements(place.Part(n, 0)) != pl_.space.outer || NumElements(place.Part(n, 2)) != 1) {
      continue;
    }
    const OpCategory c = n->category();
    if (c != OpCategory::kPointwise && c != OpCategory::kRandom && n->op() != OpKind::kReshape &&
        n->op() != OpKind::kTranspose) {
      continue;
    }
    bool reads_row = false, ok = !n->operands().empty();
    for (const Node* o : n->operands()) {
      if (prologue.count(o) || vec_fields_.count(o)) {
        reads_row = true;
      } else if (!IsInlinedConstant(o)) {
        ok = false;
      }
    }
    if (!ok || !reads_row) continue;
    prologue.insert(n);
  }
  if (prologue.empty()) return false;
  // The frontier of a prologue: its values read after it or written out, and the cached inputs
  // that nodes after it still read.
  auto frontier_of = [&](const std::set<const Node*>& pro, std::set<const Node*>* kept) {
    std::set<const Node*> f;
    auto read_after = [&](const Node* o) {
      if (pro.count(o)) f.insert(o);
      if (vec_fields_.count(o) && kept != nullptr) kept->insert(o);
    };
    for (const Node* n : r_.nodes) {
      if (pro.count(n)) continue;
      for (const Node* o : n->operands()) read_after(o);
    }
    for (const Node* out : r_.outputs) read_after(out);
    return f;
  };
  // The arrays Vec needs for a prologue: its frontier's values (a cast or reshape that keeps the
  // compute type is its operand's value; Load finds those equal and shares the field) and the
  // inputs still read after it.
  auto arrays_of = [&](const std::set<const Node*>& pro) {
    std::set<const Node*> kept, values;
    for (const Node* n : frontier_of(pro, &kept)) {
      while ((n->op() == OpKind::kCast || n->op() == OpKind::kReshape || n->op() == OpKind::kTranspose) &&
             pro.count(n->operand(0)) &&
             ComputeType(n->dtype()) == ComputeType(n->operand(0)->dtype())) {
        n = n->operand(0);
      }
      values.insert(n);
    }
    return values.size() + kept.size();
  };
  // A frontier value that is cheap to recompute (no random numbers, read by no other prologue
  // node) leaves the prologue when that takes fewer arrays: rms_norm's h * h is one multiply
  // from h, which Vec holds anyway.
  for (bool pruned = true; pruned;) {
    pruned = false;
    const size_t arrays = arrays_of(prologue);
    for (const Node* f : r_.nodes) {
      if (!prologue.count(f) || f->category() == OpCategory::kRandom) continue;
      const bool read_in_prologue = std::any_of(prologue.begin(), prologue.end(), [&](const Node* n) {
        return std::find(n->operands().begin(), n->operands().end(), f) != n->operands().end();
      });
      if (read_in_prologue) continue;
      std::set<const Node*> smaller = prologue;
      smaller.erase(f);
      if (smaller.empty() || arrays_of(smaller) >= arrays) continue;
      prologue = smaller;
      pruned = true;
      break;
    }
  }
  std::set<const Node*> kept_inputs;
  const std::set<const Node*> frontier_set = frontier_of(prologue, &kept_inputs);
  std::vector<const Node*> frontier;
  for (const Node* n : r_.nodes) {
    if (frontier_set.count(n)) frontier.push_back(n);
  }
  const bool random =
      std::any_of(prologue.begin(), prologue.end(), [](const Node* n) { return n->category() == OpCategory::kRandom; });

  // Load, tentatively: the kept inputs, then each frontier value computed from the others.
  std::map<const Node*, std::string> inputs = vec_fields_;
  for (auto it = vec_fields_.begin(); it != vec_fields_.end();) {
    it = kept_inputs.count(it->first) ? std::next(it) : vec_fields_.erase(it);
  }
  // Writes Load; returns the frontier's fields and their declarations.
  auto emit_load = [&](std::map<const Node*, Cached>& fields, std::vector<std::string>& decls) -> absl::Status {
    Begin(Where::kVector);
    KILN_RETURN_IF_ERROR(LoadCachedInputs());
    std::vector<std::pair<std::vector<std::string>, Cached>> seen;  // each field's lanes, to share equal values
    std::vector<std::string> stores;
    for (const Node* f : frontier) {
      std::vector<std::string> codes;
      CType type = CType::kFloat;
      for (int lane = 0; lane < V_; ++lane) {
        KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(f, lane));
        codes.push_back(e.code);
        type = e.type;
      }
      auto same = std::find_if(seen.begin(), seen.end(),
                               [&](const auto& s) { return s.first == codes && s.second.type == type; });
      if (same != seen.end()) {
        fields[f] = same->second;
        continue;
      }
      const Cached field{absl::StrCat("f", seen.size()), type};
      seen.push_back({codes, field});
      fields[f] = field;
      decls.push_back(absl::StrCat(CTypeName(type), " ", field.field, "[", V_, "];  // ", f->name()));
      for (int lane = 0; lane < V_; ++lane) {
        stores.push_back(absl::StrCat("x.", field.field, "[", lane, "] = ", codes[lane], ";"));
      }
    }
    for (const std::string& line : stores) w_.Line(line);
    Function("Load(long long r, long long c0, Vec& x)");
    return absl::OkStatus();
  };
  const size_t functions_before = functions_.size();
  std::map<const Node*, Cached> fields;
  std::vector<std::string> decls;
  in_load_ = true;
  absl::Status loaded = emit_load(fields, decls);
  in_load_ = false;
  KILN_RETURN_IF_ERROR(loaded);
  const size_t arrays = vec_fields_.size() + decls.size();
  if (arrays > inputs.size() || (!random && arrays == inputs.size())) {
    vec_fields_ = inputs;  // no gain: the inputs stay cached, Load is written as before
    functions_.resize(functions_before);
    return false;
  }
  frontier_ = fields;
  vec_decls_.clear();
  for (const Node* in : r_.inputs) {
    if (auto field = vec_fields_.find(in); field != vec_fields_.end()) vec_decls_.push_back(VecDecl(in, field->second));
  }
  vec_decls_.insert(vec_decls_.end(), decls.begin(), decls.end());
  notes_.push_back(absl::StrCat("row cache holds the prologue's frontier (", decls.size(), " value",
                                decls.size() == 1 ? "" : "s", " and ", vec_fields_.size(), " input",
                                vec_fields_.size() == 1 ? "" : "s", " per element, against ", inputs.size(),
                                " inputs): computed once per element", random ? ", its random numbers drawn once" : ""));
  return true;
}

}  // namespace kiln::codegen_internal
