// The row-reduction emitter: one row region -> the `Body` that templates/row_reduce.cuh's
// RowKernel runs (its comment lists the members a Body provides), plus the extern "C" entry
// that builds the Body from the kernel's pointer arguments and calls the template with the
// launch shape of the region's KernelParams. Everything about where nodes sit in the row space
// comes from the region's ReducePlacement; the code here only writes, function by function:
//   Vec / Row / AccL      the cached inputs of one vector, the per-row values, each level's
//                         accumulators (a max and its sum(e^(x - max)) share one MaxSum)
//   BeginRow, Finish      per-row values, at the level they become known; a one-hot pick is
//                         read as one element in its level's Finish
//   Step / Step1          one level's accumulation over a vector / one element
//   Store / Store1        the row-shaped outputs; StoreRow the per-row ones
//   Partials / Combined   per-row values reduced over all rows, and what follows them
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/emit_kernel.h"
#include "codegen/row_emitter.h"
#include "ir/base/status.h"
#include "passes/cost/row_fit.h"
#include "passes/fusion/region_kind.h"

namespace kiln {
namespace codegen_internal {

RowEmitter::RowEmitter(const Region& region, const KernelParams& params)
    : r_(region), pl_(*region.reduce), p_(params), N_(region.reduce->space.reduced) {
  members_.insert(region.nodes.begin(), region.nodes.end());
}

void RowEmitter::Begin(RowWhere where) {
  where_ = where;
  w_ = CodeWriter(2);
}

std::string RowEmitter::End() {
  std::string body = w_.text();
  w_ = CodeWriter(2);
  return body;
}

std::string RowEmitter::FunctorOf(const Node* red) const {
  if (ComputeType(red->operand(0)->dtype()) == CType::kInt) {
    const bool i32 = red->operand(0)->dtype() == DType::kI32;
    switch (red->op()) {
      case OpKind::kReduceMax: return i32 ? "kiln::MaxI32" : "kiln::MaxI64";
      case OpKind::kReduceMin: return i32 ? "kiln::MinI32" : "kiln::MinI64";
      default: return "kiln::SumI64";
    }
  }
  switch (red->op()) {
    case OpKind::kReduceMax: return "kiln::Max";
    case OpKind::kReduceMin: return "kiln::Min";
    default: return "kiln::Sum";
  }
}

std::string RowEmitter::AccTypeOf(const Node* red) const {
  if (pl_.IsPairedMax(red)) return "kiln::MaxSum";
  return ComputeType(red->operand(0)->dtype()) == CType::kInt ? "long long" : "float";
}

absl::Status RowEmitter::EmitBeginRow() {
  Begin(RowWhere::kRow);
  for (const Node* n : r_.inputs) {
    if (PerRow(n)) KILN_RETURN_IF_ERROR(Value(n, -1).status());
  }
  for (const Node* n : r_.nodes) {
    if (PerRow(n) && !IsReduction(n) && pl_.Of(n).level == 0) KILN_RETURN_IF_ERROR(Value(n, -1).status());
  }
  absl::StrAppend(&functions_, "  __device__ __forceinline__ void BeginRow(long long r, Row& row) const {\n", End(),
                  "  }\n");
  return absl::OkStatus();
}

// One level's accumulation over a vector (Step) or one element (Step1).
absl::Status RowEmitter::EmitStep(int level, bool vector) {
  Begin(vector ? RowWhere::kVector : RowWhere::kElement);
  const int lanes = vector ? V_ : 1;
  std::vector<std::pair<const Node*, std::string>> pair_lanes;  // region order: deterministic source
  for (const Node* red : pl_.reductions) {
    if (pl_.Of(red).level != level || !acc_fields_.count(red) || !pl_.IsPairedMax(red)) continue;
    pair_lanes.push_back({red, w_.Fresh("m")});
    w_.Line(absl::StrCat("float ", pair_lanes.back().second, "[", lanes, "];"));
  }
  for (int lane = 0; lane < lanes; ++lane) {
    for (const Node* red : pl_.reductions) {
      if (pl_.Of(red).level != level || !acc_fields_.count(red)) continue;
      KILN_ASSIGN_OR_RETURN(TypedExpr v, Value(red->operand(0), lane));
      const std::string& field = acc_fields_.at(red);
      auto pair = std::find_if(pair_lanes.begin(), pair_lanes.end(), [&](const auto& p) { return p.first == red; });
      if (pair != pair_lanes.end()) {
        w_.Line(absl::StrCat(pair->second, "[", lane, "] = ", Coerce(v, CType::kFloat).code, ";"));
      } else {
        const CType acc_type = ComputeType(red->operand(0)->dtype()) == CType::kInt ? CType::kInt : CType::kFloat;
        w_.Line(absl::StrCat("a.", field, " = ", FunctorOf(red), "::Apply(a.", field, ", ", Coerce(v, acc_type).code,
                             ");"));
      }
    }
  }
  for (const auto& [red, lanes_var] : pair_lanes) {
    w_.Line(absl::StrCat("a.", acc_fields_.at(red), " = kiln::MaxSumAddVec<", lanes, ">(a.", acc_fields_.at(red), ", ",
                         lanes_var, ");"));
  }
  const std::string acc = absl::StrCat("Acc", level);
  absl::StrAppend(&functions_, "  __device__ __forceinline__ void ",
                  vector ? absl::StrCat("Step(const Row& row, ", acc, "& a, const Vec& x, long long r, long long c0)")
                         : absl::StrCat("Step1(const Row& row, ", acc, "& a, long long r, long long c)"),
                  " const {\n", End(), "  }\n");
  return absl::OkStatus();
}

// After the pass of its level: the one-hot row sum is its value at column s (0 outside the row).
absl::Status RowEmitter::EmitPick(const Node* red) {
  const OneHotPick& p = pl_.picks.at(red);
  KILN_ASSIGN_OR_RETURN(TypedExpr index, Value(p.index, -1));
  const std::string acc = w_.Fresh("pick");
  w_.Line(absl::StrCat("float ", acc, " = 0.0f;  // ", red->name(), ": ", p.value->name(), " at column ",
                       p.index->name()));
  w_.Open(absl::StrCat("if (", index.code, " >= 0LL && ", index.code, " < ", N_, "LL)"));
  w_.Line(absl::StrCat("const long long pc = ", index.code, ";"));
  where_ = RowWhere::kPick;
  absl::StatusOr<TypedExpr> value = Value(p.value, 0);
  where_ = RowWhere::kRow;
  KILN_RETURN_IF_ERROR(value.status());
  w_.Line(absl::StrCat(acc, " = ", Coerce(*value, CType::kFloat).code, ";"));
  w_.Close();
  SetRowField(red, TypedExpr{acc, CType::kFloat});
  return absl::OkStatus();
}

absl::Status RowEmitter::EmitFinish(int level) {
  Begin(RowWhere::kRow);
  for (const Node* red : pl_.reductions) {
    if (pl_.Of(red).level != level) continue;
    if (pl_.picks.count(red)) continue;  // after the accumulated ones, below
    if (pl_.IsPairedSum(red)) continue;  // with its max
    const std::string a = absl::StrCat("a.", acc_fields_.at(red));
    if (pl_.IsPairedMax(red)) {
      const std::string pair = w_.Fresh("p");
      w_.Line(absl::StrCat("const kiln::MaxSum ", pair, " = kiln::MaxSumFinish(", a, ");"));
      SetRowField(red, TypedExpr{pair + ".m", CType::kFloat});
      for (const Node* sum : pl_.reductions) {
        if (pl_.IsPairedSum(sum) && pl_.online_max.at(sum) == red) SetRowField(sum, TypedExpr{pair + ".s", CType::kFloat});
      }
      continue;
    }
    const bool integer = ComputeType(red->operand(0)->dtype()) == CType::kInt;
    TypedExpr value{a, integer ? CType::kInt : CType::kFloat};
    if (red->op() == OpKind::kReduceMean) {
      value.code = integer ? absl::StrCat("(", a, " / ", N_, "LL)")
                           : absl::StrCat("(", a, " / ", FloatLiteral(static_cast<float>(N_)), ")");
    }
    TypedExpr out = Coerce(value, ComputeType(red->dtype()));
    if (red->dtype() == DType::kI32) out.code = absl::StrCat("kiln::WrapI32(", out.code, ")");
    SetRowField(red, out);
  }
  for (const Node* red : pl_.reductions) {
    if (pl_.Of(red).level == level && pl_.picks.count(red)) KILN_RETURN_IF_ERROR(EmitPick(red));
  }
  for (const Node* n : r_.nodes) {
    if (PerRow(n) && !IsReduction(n) && pl_.Of(n).level == level) KILN_RETURN_IF_ERROR(Value(n, -1).status());
  }
  absl::StrAppend(&functions_, "  __device__ __forceinline__ void Finish(const Acc", level,
                  "& a, Row& row, long long r) const {\n", End(), "  }\n");
  return absl::OkStatus();
}

absl::Status RowEmitter::EmitLevel(int level) {
  std::vector<std::string> fields;
  std::string init, merge;
  for (const Node* red : pl_.reductions) {
    if (pl_.Of(red).level != level || pl_.picks.count(red) || pl_.IsPairedSum(red)) continue;
    const std::string field = absl::StrCat("a", acc_fields_.size());
    acc_fields_[red] = field;
    const std::string type = AccTypeOf(red);
    fields.push_back(absl::StrCat(type, " ", field, ";  // ", red->name()));
    if (type == "kiln::MaxSum") {
      absl::StrAppend(&init, "    a.", field, " = kiln::MaxSumIdentity();\n");
      absl::StrAppend(&merge, "    a.", field, " = kiln::MaxSumMerge(a.", field, ", b.", field, ");\n");
    } else {
      absl::StrAppend(&init, "    a.", field, " = ", FunctorOf(red), "::Identity();\n");
      absl::StrAppend(&merge, "    a.", field, " = ", FunctorOf(red), "::Apply(a.", field, ", b.", field, ");\n");
    }
  }
  const std::string acc = absl::StrCat("Acc", level);
  if (fields.empty()) fields.push_back("float unused;  // this level only reads one-hot picks");
  absl::StrAppend(&functions_, "  struct ", acc, " {\n    ", absl::StrJoin(fields, "\n    "), "\n  };\n");
  absl::StrAppend(&functions_, "  __device__ __forceinline__ void Init(", acc, "& a) const {\n", init, "  }\n");
  if (!merge.empty()) {
    absl::StrAppend(&functions_, "  __device__ __forceinline__ void Merge(", acc, "& a, const ", acc, "& b) const {\n",
                    merge, "  }\n");
    KILN_RETURN_IF_ERROR(EmitStep(level, true));
    if (!aligned_) KILN_RETURN_IF_ERROR(EmitStep(level, false));
  }
  return EmitFinish(level);
}

// The row-shaped outputs (and those along the row only, written by row 0).
absl::Status RowEmitter::EmitStore(bool vector) {
  Begin(vector ? RowWhere::kVector : RowWhere::kElement);
  const int lanes = vector ? V_ : 1;
  for (const Node* o : r_.outputs) {
    const Placement& place = pl_.Of(o);
    if (!place.reduced()) continue;
    if (!place.outer() && pl_.space.outer > 1) w_.Open("if (r == 0)");
    const CType t = ComputeType(o->dtype());
    if (vector && VectorLoadable(o)) {
      const std::string y = w_.Fresh("y");
      w_.Line(absl::StrCat(CTypeName(t), " ", y, "[", lanes, "];"));
      for (int lane = 0; lane < lanes; ++lane) {
        KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(o, lane));
        w_.Line(absl::StrCat(y, "[", lane, "] = ", Coerce(e, t).code, ";"));
      }
      KILN_ASSIGN_OR_RETURN(std::string index, IndexOf(o, 0));
      w_.Line(absl::StrCat("kiln::StoreVec<", StorageTypeName(o->dtype()), ", ", lanes, ">(", out_names_.at(o), " + ",
                           index, ", ", y, ");  // ", o->name()));
    } else {
      for (int lane = 0; lane < lanes; ++lane) {
        KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(o, lane));
        KILN_ASSIGN_OR_RETURN(std::string index, IndexOf(o, lane));
        w_.Line(absl::StrCat(out_names_.at(o), "[", index, "] = kiln::FromCompute<", StorageTypeName(o->dtype()), ">(",
                             Coerce(e, t).code, ");  // ", o->name()));
      }
    }
    if (!place.outer() && pl_.space.outer > 1) w_.Close();
  }
  absl::StrAppend(&functions_, "  __device__ __forceinline__ void ",
                  vector ? "Store(const Row& row, const Vec& x, long long r, long long c0)"
                         : "Store1(const Row& row, long long r, long long c)",
                  " const {\n", End(), "  }\n");
  return absl::OkStatus();
}

absl::Status RowEmitter::EmitStoreRow() {
  Begin(RowWhere::kRow);
  for (const Node* o : r_.outputs) {
    const Placement& place = pl_.Of(o);
    if (place.reduced() || place.combined) continue;
    if (!place.outer() && pl_.space.outer > 1) w_.Open("if (r == 0)");
    KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(o, -1));
    KILN_ASSIGN_OR_RETURN(std::string index, IndexOf(o, -1));
    w_.Line(absl::StrCat(out_names_.at(o), "[", index, "] = kiln::FromCompute<", StorageTypeName(o->dtype()), ">(",
                         Coerce(e, ComputeType(o->dtype())).code, ");  // ", o->name()));
    if (!place.outer() && pl_.space.outer > 1) w_.Close();
  }
  absl::StrAppend(&functions_, "  __device__ __forceinline__ void StoreRow(const Row& row, long long r) const {\n",
                  End(), "  }\n");
  if (pl_.combines.empty()) return absl::OkStatus();
  Begin(RowWhere::kRow);
  for (size_t k = 0; k < pl_.combines.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(pl_.combines[k]->operand(0), -1));
    w_.Line(absl::StrCat("p[", k, "] = ", Coerce(e, CType::kFloat).code, ";  // ", pl_.combines[k]->name()));
  }
  absl::StrAppend(&functions_, "  __device__ __forceinline__ void Partials(const Row& row, float* p) const {\n", End(),
                  "  }\n");
  return absl::OkStatus();
}

// The combines (each a fixed-order fold over the rows' partials), then the outputs that
// depend on them, written by thread 0.
absl::Status RowEmitter::EmitCombined() {
  if (pl_.combines.empty()) return absl::OkStatus();
  Begin(RowWhere::kCombined);
  for (size_t k = 0; k < pl_.combines.size(); ++k) {
    const Node* c = pl_.combines[k];
    const std::string t = w_.Fresh("t");
    std::string value = absl::StrCat("kiln::CombineRows<", FunctorOf(c), ", kBlock>(partials, rows, ", k, ", ",
                                     pl_.combines.size(), ", smem)");
    if (c->op() == OpKind::kReduceMean) value = absl::StrCat(value, " / static_cast<float>(rows)");
    w_.Line(absl::StrCat("const float ", t, " = ", value, ";  // ", c->name()));
    combine_values_[c] = t;
  }
  w_.Open("if (threadIdx.x == 0)");
  for (const Node* o : r_.outputs) {
    if (!pl_.Of(o).combined) continue;
    KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(o, -1));
    w_.Line(absl::StrCat(out_names_.at(o), "[0] = kiln::FromCompute<", StorageTypeName(o->dtype()), ">(",
                         Coerce(e, ComputeType(o->dtype())).code, ");  // ", o->name()));
  }
  w_.Close();
  absl::StrAppend(&functions_,
                  "  template <int kBlock>\n  __device__ __forceinline__ void Combined(const float* partials, long long "
                  "rows, float* smem) const {\n",
                  End(), "  }\n");
  return absl::OkStatus();
}

absl::StatusOr<KernelSource> RowEmitter::Emit() {
  if (N_ <= 0) return absl::InvalidArgumentError("an empty row");
  const int G = ThreadsPerRow(p_);
  V_ = p_.vector_width;
  while (V_ > 1 && V_ > N_) V_ /= 2;
  if (V_ != p_.vector_width) notes_.push_back(absl::StrCat("vector width lowered to ", V_, " (N = ", N_, ")"));
  p_.vector_width = V_;
  aligned_ = N_ % V_ == 0;
  if (!aligned_) notes_.push_back(absl::StrCat("N = ", N_, " is not a multiple of ", V_, ": each row has a head and a "
                                               "tail of single elements around its aligned vectors"));
  // The register cache: the row-shaped inputs, vector by vector, when they fit the budget.
  for (const Node* in : r_.inputs) {
    if (!IsCachedRowInput(pl_, in) || !VectorLoadable(in)) continue;  // region order: deterministic source
    const std::string field = absl::StrCat("x", vec_decls_.size());
    vec_fields_[in] = field;
    vec_decls_.push_back(absl::StrCat(CTypeName(ComputeType(in->dtype())), " ", field, "[", V_, "];  // ", in->name()));
  }
  const int64_t vectors_per_split = (N_ / V_ + p_.split - 1) / p_.split;
  const int64_t iters = (vectors_per_split + G - 1) / G;
  const int64_t cache_floats = static_cast<int64_t>(vec_fields_.size()) * iters * V_;
  const bool cached = p_.chunk == 0 && cache_floats <= kRowCacheFloatsPerThread && !vec_fields_.empty();
  if (p_.chunk == 0 && !cached && !vec_fields_.empty()) {
    notes_.push_back(absl::StrCat("row does not fit the register cache (", cache_floats, " floats per thread): streamed"));
  }
  const int64_t step = static_cast<int64_t>(G) * V_;
  const int unroll = !cached && p_.chunk > 0 && p_.chunk % step == 0 ? static_cast<int>(std::clamp<int64_t>(p_.chunk / step, 1, 8)) : 1;
  notes_.push_back(cached ? absl::StrCat("row cached in registers: ", iters, " x ", V_, " per thread")
                          : absl::StrCat("row streamed from global memory, ", pl_.levels + 1, " passes at most",
                                         pl_.online_max.empty() ? "" : ", online max+sum"));
  if (p_.split > 1) notes_.push_back(absl::StrCat("each row split over ", p_.split, " blocks (cooperative launch)"));
  for (const Node* red : pl_.reductions) {
    if (pl_.picks.count(red)) notes_.push_back(red->name() + ": one-hot row sum read as one element per row");
  }

  KernelSource ks;
  ks.kind = r_.kind;
  ks.template_name = "row_reduce.cuh";
  std::vector<std::string> params, fields;
  PointerParams(r_, &ks.args, &params, &fields, &in_names_, &out_names_);

  KILN_RETURN_IF_ERROR(EmitBeginRow());
  unsigned pass_mask = 0;
  int exchange_words = 1;
  for (int level = 1; level <= pl_.levels; ++level) {
    const size_t before = acc_fields_.size();
    KILN_RETURN_IF_ERROR(EmitLevel(level));
    if (acc_fields_.size() > before) pass_mask |= 1u << level;
    int words = 0;
    for (const Node* red : pl_.reductions) {
      if (pl_.Of(red).level == level && acc_fields_.count(red)) words += AccTypeOf(red) == "float" ? 1 : 2;
    }
    exchange_words = std::max(exchange_words, words);
  }
  KILN_RETURN_IF_ERROR(EmitStore(true));
  if (!aligned_) KILN_RETURN_IF_ERROR(EmitStore(false));
  KILN_RETURN_IF_ERROR(EmitStoreRow());
  KILN_RETURN_IF_ERROR(EmitCombined());

  // Load: the cached inputs of one vector.
  std::string load;
  where_ = RowWhere::kVector;
  for (const Node* in : r_.inputs) {
    auto field = vec_fields_.find(in);
    if (field == vec_fields_.end()) continue;
    KILN_ASSIGN_OR_RETURN(std::string index, IndexOf(in, 0));
    absl::StrAppend(&load, "    kiln::LoadVec<", StorageTypeName(in->dtype()), ", ", V_, ">(", in_names_.at(in), " + ",
                    index, ", x.", field->second, ");\n");
  }
  std::vector<std::string> accs;
  for (int level = 1; level <= pl_.levels; ++level) accs.push_back(absl::StrCat("Acc", level));
  std::string body = absl::StrCat(
      "  static constexpr long long kN = ", N_, ";\n  static constexpr int kV = ", V_,
      ";\n  static constexpr int kLevels = ", pl_.levels, ";\n  static constexpr unsigned kPassMask = ", pass_mask,
      "u;\n  static constexpr int kCombines = ", pl_.combines.size(), ";\n  static constexpr int kExchangeWords = ",
      exchange_words, ";\n");
  for (const std::string& f : fields) absl::StrAppend(&body, "  ", f, ";\n");
  absl::StrAppend(&body, "  struct Vec {\n    ", vec_decls_.empty() ? "float unused;" : absl::StrJoin(vec_decls_, "\n    "),
                  "\n  };\n  struct Row {\n    ", row_decls_.empty() ? "float unused;" : absl::StrJoin(row_decls_, "\n    "),
                  "\n  };\n");
  absl::StrAppend(&body, functions_);
  absl::StrAppend(&body, "  template <int L>\n  struct AccOf {\n    using Type = typename kiln::SelectType<L, ",
                  absl::StrJoin(accs, ", "), ">::Type;\n  };\n");
  absl::StrAppend(&body, "  __device__ __forceinline__ void Load(long long r, long long c0, Vec& x) const {\n", load,
                  "  }\n");

  const bool has_scratch = !pl_.combines.empty() || p_.split > 1;
  if (has_scratch) params.push_back("void* __restrict__ scratch");
  params.push_back("long long count");
  const std::string shape = absl::StrCat("kiln::RowShape<", p_.block_size, ", ", G, ", ", V_, ", ", cached ? iters : 0,
                                         ", ", unroll, ", ", p_.split, ">");
  const std::string call = absl::StrCat("kiln::RowKernel<Body, ", shape, ">(body, count, ",
                                        has_scratch ? "scratch" : "nullptr", ");");
  ks.has_scratch = has_scratch;
  ks.scratch_fixed_bytes = has_scratch ? 32 : 0;
  ks.scratch_bytes_per_count =
      4 * static_cast<int64_t>(pl_.combines.size()) +
      (p_.split > 1 ? 8 + 4 * static_cast<int64_t>(pl_.levels) * p_.split * exchange_words : 0);
  ks.count = pl_.space.outer;
  ks.count_meaning = "rows";
  ks.params = p_;
  ks.launch.block = p_.block_size;
  ks.launch.items_per_block = p_.block_size / G;
  ks.launch.blocks_per_item_group = p_.split;
  ks.launch.cooperative = p_.split > 1;
  ks.notes = notes_;
  std::vector<std::string> includes = {"kiln_types.cuh", "pointwise.cuh", "row_reduce.cuh"};
  if (uses_philox_) includes.push_back("kiln_philox.cuh");
  std::vector<std::string> comment = {
      absl::StrCat("kiln row_reduction kernel (row_reduce.cuh), row length ", N_, ", ", p_.ToString()),
      "Generated by codegen/emit_row.cc from these nodes (place in the row space):"};
  for (const Node* n : r_.nodes) comment.push_back(absl::StrCat("  ", NodeComment(n), "  [", pl_.Of(n).FormName(), "]"));
  FinishKernel(KindInfo(r_.kind).tag, includes, comment, p_.block_size, params, body, call, &ks);
  return ks;
}

absl::StatusOr<KernelSource> EmitRowKernel(const Region& region, const KernelParams& params) {
  RowEmitter e(region, params);
  return e.Emit();
}

}  // namespace codegen_internal
}  // namespace kiln
