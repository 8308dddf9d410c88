// The row-reduction emitter (template row_reduce.cuh). A row region lives in a row space
// [rows x N]; every node gets a form: row-shaped (r, c), per-row (r), broadcast into the row
// (c, e.g. a weight [N] or an iota), or scalar. The kernel:
//
//   for each row r owned by this group of kThreadsPerRow threads (a warp, or the block):
//     per-row values that need no reduction (e.g. a target index)
//     pass L = 1..levels: accumulate the reductions of level L (a reduction's level is one
//       more than the deepest reduction it depends on) over the row, recomputing the pointwise
//       prologue each needs; GroupReduce; then the per-row values that became computable
//     final pass: the row-shaped (and broadcast-into-row) outputs, as vectors
//     per-row outputs (thread 0 of the group); per-row partials of combines to scratch
//   combine: the last block reduces the partials in a fixed order, then the scalar epilogue
//
// Row-shaped inputs are cached in registers when KernelParams::chunk == 0 and they fit
// kRowCacheFloatsPerThread; otherwise every pass streams the row from global memory, and a
// reduce_max followed by reduce_sum(exp(x - max)) is done in one pass (online MaxSum).
// A one-hot sum, reduce_sum(where(eq(iota over the row, s), f, 0)) with s per row (the target
// pick of cross-entropy), is not accumulated over the row at all: it equals f at column s
// (0 when s lies outside [0, N)), read once per row after the pass of its level.
// Regions this scheme cannot place (partially broadcast operands, integer reductions) return
// Unimplemented and EmitKernel falls back to the elementwise emitter.
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "codegen/emit_kernel.h"
#include "codegen/emitter_util.h"
#include "codegen/row_emitter.h"
#include "ir/base/status.h"

namespace kiln {
namespace codegen_internal {

// After the pass of its level: every thread of the group reads f at column s.
absl::Status RowEmitter::EmitPick(const Node* red) {
  const Pick& p = picks_.at(red);
  KILN_ASSIGN_OR_RETURN(Form index_view, ViewOf(p.eq, form_.at(p.eq), p.index));
  KILN_ASSIGN_OR_RETURN(TypedExpr index, Value(p.index, index_view, -1));
  const std::string acc = w_.Fresh("acc");
  w_.Line(absl::StrCat("float ", acc, " = 0.0f;  // ", red->name(), ": the one-hot row sum is ",
                       p.value->name(), " at column ", p.index->name()));
  w_.Open(absl::StrCat("if (", index.code, " >= 0LL && ", index.code, " < ", N_, "LL)"));
  w_.Line(absl::StrCat("const int pc = static_cast<int>(", index.code, ");"));
  picking_ = true;
  const Node* w = red->operand(0);
  absl::StatusOr<Form> view = ViewOf(w, form_.at(w), p.value);
  absl::StatusOr<TypedExpr> value = view.ok() ? Value(p.value, *view, 0) : view.status();
  picking_ = false;
  KILN_RETURN_IF_ERROR(value.status());
  w_.Line(absl::StrCat(acc, " = ", Coerce(*value, CType::kFloat).code, ";"));
  w_.Close();
  std::string var = w_.Fresh("v");
  w_.Line(absl::StrCat("const float ", var, " = ", acc, ";  // ", red->name()));
  w_.Remember(absl::StrCat(red->name(), "@row"), var);
  return absl::OkStatus();
}

std::string RowEmitter::LinearIndex(Form f, int lane) const {
  return SumTerms({f.row ? Scale("r", f.col ? N_ : 1) : "", f.col && lane >= 0 ? Col(lane) : ""});
}

std::string RowEmitter::FunctorOf(const Node* red) const {
  switch (red->op()) {
    case OpKind::kReduceMax: return "kiln::Max";
    case OpKind::kReduceMin: return "kiln::Min";
    default: return "kiln::Sum";
  }
}

absl::StatusOr<TypedExpr> RowEmitter::Load(const Node* n, Form view, int lane) {
  const std::string& arg = in_names_.at(n);
  const CType t = ComputeType(n->dtype());
  if (!view.col) {
    const std::string key = absl::StrCat("load:", n->name(), view.row ? ":r" : ":0");
    if (const std::string* v = w_.Lookup(key)) return TypedExpr{*v, t};
    std::string var = w_.Fresh("s");
    w_.Line(absl::StrCat("const ", CTypeName(t), " ", var, " = kiln::ToCompute(", arg, "[", LinearIndex(view, -1),
                         "]);  // ", n->name()));
    w_.Remember(key, var);
    return TypedExpr{var, t};
  }
  if (lane < 0) return absl::InternalError(absl::StrCat(n->name(), " read outside a column loop"));
  if (picking_) {  // one element, at column pc (not from the register cache: it may not hold pc)
    const std::string key = absl::StrCat("pload:", n->name(), view.row ? ":r" : ":0");
    if (const std::string* v = w_.Lookup(key)) return TypedExpr{*v, t};
    std::string var = w_.Fresh("p");
    w_.Line(absl::StrCat("const ", CTypeName(t), " ", var, " = kiln::ToCompute(", arg, "[", LinearIndex(view, 0),
                         "]);  // ", n->name(), " at column pc"));
    w_.Remember(key, var);
    return TypedExpr{var, t};
  }
  if (view.row && cached_ && cache_.count(n)) {
    const std::string& arr = cache_.at(n);
    if (!cache_loaded_.count(n)) {
      // The first pass that reads the row loads it into registers (once per k).
      const std::string key = absl::StrCat("cacheload:", n->name());
      if (!w_.Lookup(key)) {
        w_.Line(absl::StrCat("kiln::LoadVec<", StorageTypeName(n->dtype()), ", ", V_, ">(", arg, " + r * ", N_,
                             "LL + c0, ", arr, "[k]);"));
        w_.Remember(key, "1");
        cache_pending_.insert(n);
      }
    }
    return TypedExpr{absl::StrCat(arr, "[k][", lane, "]"), t};
  }
  const std::string key = absl::StrCat("vload:", n->name(), view.row ? ":r" : ":0");
  const std::string* found = w_.Lookup(key);
  std::string arr;
  if (found) {
    arr = *found;
  } else {
    arr = w_.Fresh("x");
    w_.Line(absl::StrCat(CTypeName(t), " ", arr, "[", V_, "];  // ", n->name()));
    w_.Line(absl::StrCat("kiln::LoadVec<", StorageTypeName(n->dtype()), ", ", V_, ">(", arg, " + ",
                         view.row ? absl::StrCat("r * ", N_, "LL + ") : "", "c0, ", arr, ");"));
    w_.Remember(key, arr);
  }
  return TypedExpr{absl::StrCat(arr, "[", lane, "]"), t};
}

absl::StatusOr<TypedExpr> RowEmitter::Value(const Node* n, Form view, int lane) {
  if (IsInlinedConstant(n)) return ConstantLiteral(*n);
  if (!Member(n)) return Load(n, view, lane);
  const Form f = form_.at(n);
  const std::string key =
      absl::StrCat(n->name(), "@", f.col ? (picking_ ? "pc" : absl::StrCat("lane", lane)) : "row");
  if (const std::string* v = w_.Lookup(key)) return TypedExpr{*v, ComputeType(n->dtype())};
  if (IsReduction(n)) {
    return absl::InternalError(absl::StrCat("reduction ", n->name(), " used before its pass"));
  }
  if (f.col && lane < 0) return absl::InternalError(absl::StrCat(n->name(), " needed outside a column loop"));
  TypedExpr e;
  if (n->op() == OpKind::kReshape || n->op() == OpKind::kBroadcastTo) {
    KILN_ASSIGN_OR_RETURN(Form v, ViewOf(n, f, n->operand(0)));
    KILN_ASSIGN_OR_RETURN(e, Value(n->operand(0), v, lane));
  } else {
    std::vector<TypedExpr> operands;
    for (const Node* o : n->operands()) {
      KILN_ASSIGN_OR_RETURN(Form v, ViewOf(n, f, o));
      KILN_ASSIGN_OR_RETURN(TypedExpr oe, Value(o, v, lane));
      operands.push_back(oe);
    }
    uses_philox_ |= n->category() == OpCategory::kRandom;
    if (n->category() == OpCategory::kRandom && f.col && lane >= 0 && V_ % 4 == 0 && !picking_) {
      // Lanes 4q..4q+3 are elements 4g..4g+3 (r * N and c0 are multiples of V, V of 4): one
      // Philox call serves them (docs/dropout.md).
      const std::string wkey = absl::StrCat(n->name(), "@words", lane / 4);
      const std::string* words = w_.Lookup(wkey);
      std::string wvar = words ? *words : w_.Fresh("w");
      const std::string group = absl::StrCat("(", LinearIndex(f, lane - lane % 4), ") >> 2");
      KILN_ASSIGN_OR_RETURN(DropoutPieces d, EmitDropoutShared(*n, operands, group, wvar, lane));
      if (!words && !d.words.empty()) {
        w_.Line(absl::StrCat("const kiln::Philox4 ", wvar, " = ", d.words, ";  // ", n->name(), ", elements ",
                             lane - lane % 4, "..", lane - lane % 4 + 3, " of this vector"));
        w_.Remember(wkey, wvar);
      }
      e = d.value;
    } else {
      KILN_ASSIGN_OR_RETURN(e, EmitPointwiseExpr(*n, operands, LinearIndex(f, lane)));
    }
  }
  std::string var = w_.Fresh("v");
  w_.Line(absl::StrCat("const ", CTypeName(e.type), " ", var, " = ", e.code, ";  // ", n->name()));
  w_.Remember(key, var);
  return TypedExpr{var, e.type};
}

// Per-row and scalar values computable once the reductions of `level` are known.
absl::Status RowEmitter::HoistPerRow(int level) {
  for (const Node* n : r_.nodes) {
    const Form f = form_.at(n);
    if (f.col || IsReduction(n) || combined_.at(n) || level_.at(n) > level) continue;
    if (!f.row && level_.at(n) == 0 && level > 0) continue;  // scalars without reductions: done at level 0
    KILN_RETURN_IF_ERROR(Value(n, f, -1).status());
  }
  return absl::OkStatus();
}

absl::Status RowEmitter::EmitPass(int level, bool final_pass) {
  std::vector<const Node*> reds;
  std::vector<const Node*> picks;
  for (const Node* n : r_.nodes) {
    if (!IsRowReduction(n) || level_.at(n) != level) continue;
    (picks_.count(n) ? picks : reds).push_back(n);
  }
  std::vector<const Node*> outs;
  if (final_pass) {
    for (const Node* o : r_.outputs) {
      if (form_.at(o).col) outs.push_back(o);
    }
    if (outs.empty()) return absl::OkStatus();
    w_.Line("// final pass: the row-shaped outputs");
  } else if (reds.empty()) {  // only one-hot sums at this level: no pass over the row
    for (const Node* n : picks) KILN_RETURN_IF_ERROR(EmitPick(n));
    return absl::OkStatus();
  } else {
    std::string names;
    for (const Node* n : reds) absl::StrAppend(&names, names.empty() ? "" : ", ", n->name());
    w_.Line(absl::StrCat("// pass ", level, ": ", names));
  }
  std::map<const Node*, std::string> acc;
  for (const Node* n : reds) {
    if (pair_of_.count(n)) continue;  // accumulated with its max
    std::string a = w_.Fresh("acc");
    if (pair_max_.count(n)) {
      w_.Line(absl::StrCat("kiln::MaxSum ", a, " = kiln::MaxSumIdentity();  // ", n->name(), " and its sum(exp(x - max))"));
    } else {
      w_.Line(absl::StrCat("float ", a, " = ", FunctorOf(n), "::Identity();  // ", n->name()));
    }
    acc[n] = a;
  }
  if (cached_) {
    w_.Line("#pragma unroll");
    w_.Open(absl::StrCat("for (int k = 0; k < ", iters_, "; ++k)"));
    w_.Line(absl::StrCat("const int c0 = (k * kThreadsPerRow + t) * ", V_, ";"));
    w_.Open(absl::StrCat("if (c0 < ", N_, ")"));
  } else {
    if (unroll_ > 1) w_.Line(absl::StrCat("#pragma unroll ", unroll_));
    w_.Open(absl::StrCat("for (int c0 = t * ", V_, "; c0 < ", N_, "; c0 += kThreadsPerRow * ", V_, ")"));
  }
  std::map<const Node*, std::string> out_arrays;
  for (const Node* o : outs) {
    if (!form_.at(o).row) {
      w_.Open(absl::StrCat("if (r == 0", Guard(), ")"));  // a broadcast-into-row output: written by row 0 only
    } else if (!Guard().empty()) {
      w_.Open("if (active)");
    }
    std::string y = w_.Fresh("y");
    w_.Line(absl::StrCat(CTypeName(ComputeType(o->dtype())), " ", y, "[", V_, "];"));
    for (int lane = 0; lane < V_; ++lane) {
      KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(o, form_.at(o), lane));
      w_.Line(absl::StrCat(y, "[", lane, "] = ", Coerce(e, ComputeType(o->dtype())).code, ";"));
    }
    w_.Line(absl::StrCat("kiln::StoreVec<", StorageTypeName(o->dtype()), ", ", V_, ">(", out_names_.at(o), " + ",
                         form_.at(o).row ? absl::StrCat("r * ", N_, "LL + ") : "", "c0, ", y, ");  // ", o->name()));
    if (!form_.at(o).row || !Guard().empty()) w_.Close();
  }
  std::map<const Node*, std::string> pair_lanes;  // online pairs take the whole vector at once
  for (const Node* n : reds) {
    if (!pair_max_.count(n)) continue;
    pair_lanes[n] = w_.Fresh("m");
    w_.Line(absl::StrCat("float ", pair_lanes[n], "[", V_, "];"));
  }
  for (int lane = 0; lane < V_; ++lane) {
    for (const Node* n : reds) {
      if (pair_of_.count(n)) continue;
      const Node* x = n->operand(0);
      Form xf = Member(x) ? form_.at(x) : Form{true, true};
      KILN_ASSIGN_OR_RETURN(TypedExpr v, Value(x, xf, lane));
      const std::string fv = Coerce(v, CType::kFloat).code;
      if (pair_max_.count(n)) {
        w_.Line(absl::StrCat(pair_lanes[n], "[", lane, "] = ", fv, ";"));
      } else {
        w_.Line(absl::StrCat(acc[n], " = ", FunctorOf(n), "::Apply(", acc[n], ", ", fv, ");"));
      }
    }
  }
  for (const auto& [n, lanes] : pair_lanes) {
    w_.Line(absl::StrCat(acc[n], " = kiln::MaxSumAddVec<", V_, ">(", acc[n], ", ", lanes, ");"));
  }
  if (cached_) w_.Close();
  w_.Close();
  // Rows loaded into the register cache by this pass are read from registers from now on.
  cache_loaded_.insert(cache_pending_.begin(), cache_pending_.end());
  cache_pending_.clear();
  for (const Node* n : reds) {
    if (pair_of_.count(n)) continue;
    const std::string& a = acc[n];
    if (pair_max_.count(n)) {
      w_.Line(absl::StrCat(a, " = kiln::MaxSumFinish(kiln::GroupReduceMaxSum<kThreadsPerRow, kBlock>(", a, ", smem));"));
      w_.Remember(absl::StrCat(n->name(), "@row"), a + ".m");
      for (auto& [sum, max] : pair_of_) {
        if (max == n) w_.Remember(absl::StrCat(sum->name(), "@row"), a + ".s");
      }
      continue;
    }
    w_.Line(absl::StrCat(a, " = kiln::GroupReduce<", FunctorOf(n), ", kThreadsPerRow, kBlock>(", a, ", smem);"));
    std::string value = a;
    if (n->op() == OpKind::kReduceMean) value = absl::StrCat("(", a, " / ", FloatLiteral(static_cast<float>(N_)), ")");
    std::string var = w_.Fresh("v");
    w_.Line(absl::StrCat("const float ", var, " = ", value, ";  // ", n->name()));
    w_.Remember(absl::StrCat(n->name(), "@row"), var);
  }
  for (const Node* n : picks) KILN_RETURN_IF_ERROR(EmitPick(n));
  return absl::OkStatus();
}

absl::StatusOr<KernelSource> RowEmitter::Emit() {
  members_.insert(r_.nodes.begin(), r_.nodes.end());
  if (R_ <= 0 || N_ <= 0) return absl::UnimplementedError("an empty row space");
  KILN_RETURN_IF_ERROR(Classify());
  G_ = p_.block_size / p_.rows_per_block;
  V_ = p_.vector_width;
  while (V_ > 1 && N_ % V_ != 0) V_ /= 2;
  if (V_ != p_.vector_width) notes_.push_back(absl::StrCat("vector width lowered to ", V_, " (N = ", N_, ")"));
  p_.vector_width = V_;
  iters_ = static_cast<int>((N_ + static_cast<int64_t>(G_) * V_ - 1) / (static_cast<int64_t>(G_) * V_));
  // Row-shaped inputs read by the passes are the cache candidates.
  std::vector<const Node*> row_inputs;
  for (const Node* in : r_.inputs) {
    if (in->num_elements() == R_ * N_) row_inputs.push_back(in);
  }
  const int64_t cache_floats = static_cast<int64_t>(row_inputs.size()) * iters_ * V_;
  cached_ = p_.chunk == 0 && cache_floats <= kRowCacheFloatsPerThread;
  if (p_.chunk == 0 && !cached_) {
    notes_.push_back(absl::StrCat("row does not fit the register cache (", cache_floats, " floats per thread): streamed"));
  }
  FindPicks();
  if (!cached_) {
    FindOnlinePairs();
    const int64_t step = static_cast<int64_t>(G_) * V_;
    unroll_ = p_.chunk > 0 && p_.chunk % step == 0 ? static_cast<int>(std::min<int64_t>(p_.chunk / step, 8)) : 1;
  }
  notes_.push_back(cached_ ? absl::StrCat("row cached in registers: ", iters_, " x ", V_, " per thread")
                           : absl::StrCat("row streamed from global memory, ", max_level_ + 1, " passes at most",
                                          pair_of_.empty() ? "" : ", online max+sum"));

  KernelSource ks;
  ks.kind = r_.kind;
  ks.template_name = RegionTemplate(r_.kind);
  std::vector<std::string> params;
  PointerParams(r_, &ks.args, &params, &in_names_, &out_names_);
  const bool has_combine = !combines_.empty();
  if (has_combine) params.push_back("void* __restrict__ scratch");
  params.push_back("long long count");

  w_.Line(absl::StrCat("constexpr int kBlock = ", p_.block_size, ";"));
  w_.Line(absl::StrCat("constexpr int kThreadsPerRow = ", G_, ";  // ",
                       G_ < 32 ? "part of a warp per row" : G_ == 32 ? "a warp per row" : "the block owns a row"));
  w_.Line(absl::StrCat("constexpr int kRowsPerBlock = kBlock / kThreadsPerRow;"));
  w_.Line("const long long rows = count;");
  w_.Line("__shared__ float smem[64];");
  w_.Line("const int t = threadIdx.x % kThreadsPerRow;  // thread within the row group");
  w_.Line("const int group = threadIdx.x / kThreadsPerRow;");
  // Scalars that depend on nothing per row: written once, by thread 0 of block 0.
  for (const Node* o : r_.outputs) {
    const Form f = form_.at(o);
    if (f.row || f.col || combined_.at(o)) continue;
    w_.Open("if (blockIdx.x == 0 && threadIdx.x == 0)");
    KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(o, f, -1));
    w_.Line(absl::StrCat(out_names_.at(o), "[0] = kiln::FromCompute<", StorageTypeName(o->dtype()), ">(",
                         Coerce(e, ComputeType(o->dtype())).code, ");  // ", o->name()));
    w_.Close();
  }
  if (G_ < 32) {
    // Several rows per warp: the groups of a warp shuffle together, so every group runs every
    // iteration; a group past the last row recomputes row rows - 1 and writes nothing.
    w_.Open("for (long long r0 = static_cast<long long>(blockIdx.x) * kRowsPerBlock; r0 < rows; "
            "r0 += static_cast<long long>(gridDim.x) * kRowsPerBlock)");
    w_.Line("const bool active = r0 + group < rows;");
    w_.Line("const long long r = active ? r0 + group : rows - 1;");
  } else {
    w_.Open("for (long long r = static_cast<long long>(blockIdx.x) * kRowsPerBlock + group; r < rows; "
            "r += static_cast<long long>(gridDim.x) * kRowsPerBlock)");
  }
  for (const Node* in : row_inputs) {
    if (!cached_) break;
    std::string arr = w_.Fresh("row");
    w_.Line(absl::StrCat(CTypeName(ComputeType(in->dtype())), " ", arr, "[", iters_, "][", V_, "];  // ", in->name(),
                         ", cached"));
    cache_[in] = arr;
  }
  KILN_RETURN_IF_ERROR(HoistPerRow(0));
  for (int level = 1; level <= max_level_; ++level) {
    KILN_RETURN_IF_ERROR(EmitPass(level, false));
    KILN_RETURN_IF_ERROR(HoistPerRow(level));
  }
  KILN_RETURN_IF_ERROR(EmitPass(max_level_ + 1, true));
  // Per-row outputs and combine partials: thread 0 of the group.
  bool any_per_row = has_combine;
  for (const Node* o : r_.outputs) any_per_row |= form_.at(o) == Form{true, false};
  if (any_per_row) {
    w_.Open(absl::StrCat("if (t == 0", Guard(), ")"));
    for (const Node* o : r_.outputs) {
      if (form_.at(o) != Form{true, false}) continue;
      KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(o, form_.at(o), -1));
      w_.Line(absl::StrCat(out_names_.at(o), "[r] = kiln::FromCompute<", StorageTypeName(o->dtype()), ">(",
                           Coerce(e, ComputeType(o->dtype())).code, ");  // ", o->name()));
    }
    for (size_t k = 0; k < combines_.size(); ++k) {
      KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(combines_[k]->operand(0), Form{true, false}, -1));
      w_.Line(absl::StrCat("kiln::CombinePartials(scratch)[r * ", combines_.size(), "LL + ", k, "] = ",
                           Coerce(e, CType::kFloat).code, ";  // ", combines_[k]->name(), " partial"));
    }
    w_.Close();
  }
  w_.Close();  // rows
  if (has_combine) {
    w_.Line("// combine: the last block folds the per-row partials in a fixed order (deterministic)");
    w_.Open("if (kiln::LastBlockDone(scratch))");
    for (size_t k = 0; k < combines_.size(); ++k) {
      const Node* c = combines_[k];
      std::string var = w_.Fresh("v");
      std::string value = absl::StrCat("kiln::CombineRows<", FunctorOf(c), ", kBlock>(kiln::CombinePartials(scratch), rows, ",
                                       k, ", ", combines_.size(), ", smem)");
      w_.Line(absl::StrCat("const float ", var, "_sum = ", value, ";"));
      if (c->op() == OpKind::kReduceMean) {
        w_.Line(absl::StrCat("const float ", var, " = ", var, "_sum / static_cast<float>(rows);  // ", c->name()));
      } else {
        w_.Line(absl::StrCat("const float ", var, " = ", var, "_sum;  // ", c->name()));
      }
      w_.Remember(absl::StrCat(c->name(), "@row"), var);
    }
    w_.Open("if (threadIdx.x == 0)");
    for (const Node* o : r_.outputs) {
      if (!combined_.at(o)) continue;
      KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(o, form_.at(o), -1));
      w_.Line(absl::StrCat(out_names_.at(o), "[0] = kiln::FromCompute<", StorageTypeName(o->dtype()), ">(",
                           Coerce(e, ComputeType(o->dtype())).code, ");  // ", o->name()));
    }
    w_.Close();
    w_.Line("kiln::ResetCombineCounter(scratch);");
    w_.Close();
    ks.has_scratch = true;
    ks.scratch_fixed_bytes = 16;
    ks.scratch_bytes_per_count = 4 * static_cast<int64_t>(combines_.size());
  }
  ks.count = R_;
  ks.count_meaning = "rows";
  ks.params = p_;
  ks.launch.block = p_.block_size;
  ks.launch.items_per_block = p_.block_size / G_;
  ks.notes = notes_;
  std::vector<std::string> includes = {"kiln_types.cuh", "pointwise.cuh", "row_reduce.cuh"};
  if (uses_philox_) includes.push_back("kiln_philox.cuh");
  std::vector<std::string> comment = {
      absl::StrCat("kiln row_reduction kernel (row_reduce.cuh), row length ", N_, ", ", p_.ToString()),
      "Generated by codegen/emit_row.cc from these nodes (form in the row space):"};
  for (const Node* n : r_.nodes) comment.push_back(absl::StrCat("  ", NodeComment(n), "  [", FormName(form_.at(n)), "]"));
  FinishKernel("row", includes, comment, p_.block_size, params, w_.text(), &ks);
  return ks;
}


absl::StatusOr<KernelSource> EmitRowKernel(const Region& region, const KernelParams& params) {
  RowEmitter e(region, params);
  return e.Emit();
}

}  // namespace codegen_internal
}  // namespace kiln
