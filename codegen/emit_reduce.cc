// The reduction emitter: one reduction region -> the `Body` its kernel template runs (the
// templates' RowKernel / ColumnKernel comments list the members), plus the extern "C" entry
// that builds the Body from the kernel's pointer arguments and calls the template with the
// launch shape of the region's KernelParams. Where nodes sit in the space comes from the
// region's ReducePlacement; the code here only writes, function by function:
//   Vec / Row (Cell) / AccL   the cached inputs of one vector (rows: or what the region
//                             computes from them before its first reduction, see
//                             reduce_frontier.cc), the per-row (per-column) values, each
//                             level's accumulators (a max and its sum(e^(x - max)) share one
//                             MaxSum, a mean and its sum of squared deviations one MeanVar;
//                             columns: one per lane)
//   BeginRow, Finish          per-row values, at the level they become known; a one-hot pick
//                             is read as one element in its level's Finish (rows)
//   Step / Step1              one level's accumulation over a vector / one element (rows)
//   Store / Store1            the outputs of the full space; StoreRow the per-row ones
//   Partials / Combined       per-row values reduced over all rows, and what follows (rows)
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/emit_kernel.h"
#include "codegen/reduce_emitter.h"
#include "ir/base/status.h"
#include "passes/cost/row_fit.h"
#include "passes/fusion/region_kind.h"

namespace kiln {
namespace codegen_internal {

ReduceEmitter::ReduceEmitter(const Region& region, const KernelParams& params)
    : r_(region),
      pl_(*region.reduce),
      p_(params),
      column_(region.kind == RegionKind::kColumnReduction),
      N_(region.reduce->space.reduced),
      I_(region.reduce->space.inner),
      row_(column_ ? "cell" : "row") {
  members_.insert(region.nodes.begin(), region.nodes.end());
}

std::string ReduceEmitter::VecDecl(const Node* in, const std::string& field) const {
  return absl::StrCat(CTypeName(ComputeType(in->dtype())), " ", field, "[", V_, "];  // ", in->name());
}

absl::Status ReduceEmitter::LoadCachedInputs() {
  for (const Node* in : r_.inputs) {
    auto field = vec_fields_.find(in);
    if (field == vec_fields_.end()) continue;
    KILN_ASSIGN_OR_RETURN(std::string index, IndexOf(in, 0));
    w_.Line(VectorLoad(in, index, absl::StrCat("x.", field->second)));
  }
  return absl::OkStatus();
}

void ReduceEmitter::Begin(Where where) {
  where_ = where;
  w_ = CodeWriter(2);
}

std::string ReduceEmitter::End() {
  std::string body = w_.text();
  w_ = CodeWriter(2);
  return body;
}

void ReduceEmitter::Function(const std::string& signature) {
  absl::StrAppend(&functions_, "  __device__ __forceinline__ void ", signature, " const {\n", End(), "  }\n");
}

std::string ReduceEmitter::FunctorOf(const Node* red) const {
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

namespace {

// The 32-bit words of an accumulator type AccTypeOf names (row_reduce.cuh's AccWords).
int AccWordsOf(const std::string& type) {
  return type == "float" ? 1 : type == "kiln::MeanVar" ? 3 : 2;  // long long, MaxSum: 2
}

}  // namespace

std::string ReduceEmitter::AccTypeOf(const Node* red) const {
  if (pl_.IsPairedMax(red)) return "kiln::MaxSum";
  if (pl_.IsPairedMean(red)) return "kiln::MeanVar";
  return ComputeType(red->operand(0)->dtype()) == CType::kInt ? "long long" : "float";
}

// An output that does not vary along a group is written once: by row (o) 0 and, in column
// mode, by the first column of the first tile.
// Ragged columns: a lane past the inner extent stores nothing.
std::string ReduceEmitter::Guard(const Node* output, int lane) const {
  const Placement& p = pl_.Of(output);
  std::vector<std::string> conditions;
  if (!p.outer() && pl_.space.outer > 1) conditions.push_back(column_ ? "o == 0" : "r == 0");
  if (column_ && !p.inner() && I_ > 1) conditions.push_back(lane == 0 ? "i0 == 0" : "false");
  if (ragged_ && p.inner() && lane > 0) conditions.push_back(absl::StrCat("i0 + ", lane, " < ", I_, "LL"));
  return absl::StrJoin(conditions, " && ");
}

std::string ReduceEmitter::VectorLoad(const Node* n, const std::string& index, const std::string& dest) const {
  const std::string type = StorageTypeName(n->dtype());
  if (ragged_) {
    return absl::StrCat("kiln::LoadVecAt<", type, ", ", V_, ">(", in_names_.at(n), ", ", index, ", ",
                        n->num_elements(), "LL, ", dest, ");");
  }
  return absl::StrCat("kiln::LoadVec<", type, ", ", V_, ">(", in_names_.at(n), " + ", index, ", ", dest, ");");
}

absl::Status ReduceEmitter::EmitBeginRow() {
  Begin(Where::kPerRow);
  for (int lane = 0; lane < PerRowLanes(); ++lane) {
    for (const Node* n : r_.inputs) {
      if (PerRow(n)) KILN_RETURN_IF_ERROR(Value(n, lane).status());
    }
    for (const Node* n : r_.nodes) {
      if (PerRow(n) && !IsReduction(n) && pl_.Of(n).level == 0) KILN_RETURN_IF_ERROR(Value(n, lane).status());
    }
  }
  KILN_RETURN_IF_ERROR(EmitReciprocals(0));
  Function(column_ ? "BeginCell(long long o, long long i0, Cell& cell)" : "BeginRow(long long r, Row& row)");
  return absl::OkStatus();
}

// x / s with s constant along the row and x not (softmax's e / sum, a norm's d / std): one
// IEEE division per row and a multiply per element, instead of a division per element (about
// ten instructions: the row kernels are otherwise instruction-bound). Within 1.5 ulp of f32.
absl::Status ReduceEmitter::EmitReciprocals(int level) {
  for (const Node* n : r_.nodes) {
    if (n->op() != OpKind::kDiv || ComputeType(n->dtype()) != CType::kFloat || PerRow(n)) continue;
    const Node* s = n->operand(1);
    if (IsInlinedConstant(s) || !PerRow(s) || pl_.Of(s).level != level || recip_fields_.count(s)) continue;
    const std::string field = absl::StrCat("v", row_decls_.size());
    row_decls_.push_back(absl::StrCat("float ", field, column_ ? absl::StrCat("[", V_, "]") : "", ";  // 1 / ",
                                      s->name()));
    recip_fields_[s] = field;
    for (int lane = 0; lane < PerRowLanes(); ++lane) {
      KILN_ASSIGN_OR_RETURN(TypedExpr v, Value(s, lane));
      w_.Line(absl::StrCat(FieldRef(field, lane), " = 1.0f / ", Coerce(v, CType::kFloat).code, ";  // 1 / ",
                           s->name()));
    }
  }
  return absl::OkStatus();
}

// One level's accumulation over a vector (Step) or one element of a row (Step1).
absl::Status ReduceEmitter::EmitStep(int level, bool vector) {
  Begin(vector ? Where::kVector : Where::kElement);
  const int lanes = vector ? V_ : 1;
  std::vector<std::pair<const Node*, std::string>> pair_lanes;  // region order: deterministic source
  for (const Node* red : pl_.reductions) {
    if (column_ || pl_.Of(red).level != level || !acc_fields_.count(red)) continue;
    if (!pl_.IsPairedMax(red) && !pl_.IsPairedMean(red)) continue;
    pair_lanes.push_back({red, w_.Fresh("m")});
    w_.Line(absl::StrCat("float ", pair_lanes.back().second, "[", lanes, "];"));
  }
  for (int lane = 0; lane < lanes; ++lane) {
    for (const Node* red : pl_.reductions) {
      if (pl_.Of(red).level != level || !acc_fields_.count(red)) continue;
      KILN_ASSIGN_OR_RETURN(TypedExpr v, Value(red->operand(0), lane));
      const std::string acc = column_ ? absl::StrCat("a.", acc_fields_.at(red), "[", lane, "]")
                                      : absl::StrCat("a.", acc_fields_.at(red));
      auto pair = std::find_if(pair_lanes.begin(), pair_lanes.end(), [&](const auto& p) { return p.first == red; });
      if (pair != pair_lanes.end()) {
        w_.Line(absl::StrCat(pair->second, "[", lane, "] = ", Coerce(v, CType::kFloat).code, ";"));
      } else if (pl_.IsPairedMax(red)) {  // columns: each lane is its own column, one element a step
        w_.Line(absl::StrCat(acc, " = kiln::MaxSumAddVec<1>(", acc, ", {", Coerce(v, CType::kFloat).code, "});"));
      } else {
        const CType acc_type = ComputeType(red->operand(0)->dtype()) == CType::kInt ? CType::kInt : CType::kFloat;
        w_.Line(absl::StrCat(acc, " = ", FunctorOf(red), "::Apply(", acc, ", ", Coerce(v, acc_type).code, ");"));
      }
    }
  }
  if (!column_) {
    for (const auto& [red, lanes_var] : pair_lanes) {
      w_.Line(absl::StrCat("a.", acc_fields_.at(red), " = kiln::", pl_.IsPairedMax(red) ? "MaxSum" : "MeanVar",
                           "AddVec<", lanes, ">(a.", acc_fields_.at(red), ", ", lanes_var, ");"));
    }
  }
  const std::string acc = absl::StrCat("Acc", level);
  if (column_) {
    Function(absl::StrCat("Step(const Cell& cell, ", acc, "& a, const Vec& x, long long o, long long k, long long i0)"));
  } else {
    Function(vector ? absl::StrCat("Step(const Row& row, ", acc, "& a, const Vec& x, long long r, long long c0)")
                    : absl::StrCat("Step1(const Row& row, ", acc, "& a, const Vec& x, long long r, long long c)"));
  }
  return absl::OkStatus();
}

// After the pass of its level: the one-hot row sum is its value at column s (0 outside the row).
absl::Status ReduceEmitter::EmitPick(const Node* red) {
  const OneHotPick& p = pl_.picks.at(red);
  KILN_ASSIGN_OR_RETURN(TypedExpr index, Value(p.index, -1));
  const std::string acc = w_.Fresh("pick");
  w_.Line(absl::StrCat("float ", acc, " = 0.0f;  // ", red->name(), ": ", p.value->name(), " at column ",
                       p.index->name()));
  w_.Open(absl::StrCat("if (", index.code, " >= 0LL && ", index.code, " < ", N_, "LL)"));
  w_.Line(absl::StrCat("const long long pc = ", index.code, ";"));
  where_ = Where::kPick;
  absl::StatusOr<TypedExpr> value = Value(p.value, 0);
  where_ = Where::kPerRow;
  KILN_RETURN_IF_ERROR(value.status());
  w_.Line(absl::StrCat(acc, " = ", Coerce(*value, CType::kFloat).code, ";"));
  w_.Close();
  SetRowField(red, TypedExpr{acc, CType::kFloat}, 0);
  return absl::OkStatus();
}

absl::Status ReduceEmitter::EmitFinish(int level) {
  Begin(Where::kPerRow);
  for (int lane = 0; lane < PerRowLanes(); ++lane) {
    for (const Node* red : pl_.reductions) {
      if (pl_.Of(red).level != level || pl_.picks.count(red) || pl_.IsPairedSecond(red)) continue;
      const std::string a = column_ ? absl::StrCat("a.", acc_fields_.at(red), "[", lane, "]")
                                    : absl::StrCat("a.", acc_fields_.at(red));
      if (pl_.IsPairedMax(red)) {
        const std::string pair = w_.Fresh("p");
        w_.Line(absl::StrCat("const kiln::MaxSum ", pair, " = kiln::MaxSumFinish(", a, ");"));
        SetRowField(red, TypedExpr{pair + ".m", CType::kFloat}, lane);
        for (const Node* sum : pl_.reductions) {
          if (pl_.IsPairedSum(sum) && pl_.online_max.at(sum) == red) {
            SetRowField(sum, TypedExpr{pair + ".s", CType::kFloat}, lane);
          }
        }
        continue;
      }
      if (pl_.IsPairedMean(red)) {  // the mean, and each paired sum (or mean) of squared deviations
        SetRowField(red, TypedExpr{a + ".mean", CType::kFloat}, lane);
        for (const auto& [variance, mean] : pl_.online_mean) {
          if (mean != red) continue;
          TypedExpr m2{a + ".m2", CType::kFloat};
          if (variance->op() == OpKind::kReduceMean) {
            m2.code = absl::StrCat("(", a, ".m2 / ", FloatLiteral(static_cast<float>(N_)), ")");
          }
          SetRowField(variance, Coerce(m2, ComputeType(variance->dtype())), lane);
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
      SetRowField(red, out, lane);
    }
  }
  for (const Node* red : pl_.reductions) {
    if (pl_.Of(red).level == level && pl_.picks.count(red)) KILN_RETURN_IF_ERROR(EmitPick(red));
  }
  for (int lane = 0; lane < PerRowLanes(); ++lane) {
    for (const Node* n : r_.nodes) {
      if (PerRow(n) && !IsReduction(n) && pl_.Of(n).level == level) KILN_RETURN_IF_ERROR(Value(n, lane).status());
    }
  }
  KILN_RETURN_IF_ERROR(EmitReciprocals(level));
  Function(column_ ? absl::StrCat("Finish(const Acc", level, "& a, Cell& cell, long long o, long long i0)")
                   : absl::StrCat("Finish(const Acc", level, "& a, Row& row, long long r)"));
  return absl::OkStatus();
}

absl::Status ReduceEmitter::EmitLevel(int level) {
  std::vector<std::string> fields;
  std::string init, merge;
  const std::string lanes = column_ ? absl::StrCat("[", V_, "]") : "";
  const std::string j = column_ ? "[j]" : "";
  for (const Node* red : pl_.reductions) {
    if (pl_.Of(red).level != level || pl_.picks.count(red) || pl_.IsPairedSecond(red)) continue;
    const std::string field = absl::StrCat("a", acc_fields_.size());
    acc_fields_[red] = field;
    const std::string type = AccTypeOf(red);
    fields.push_back(absl::StrCat(type, " ", field, lanes, ";  // ", red->name()));
    const std::string f = absl::StrCat("a.", field, j), g = absl::StrCat("b.", field, j);
    if (type == "kiln::MaxSum" || type == "kiln::MeanVar") {
      const std::string pair = type.substr(6);
      absl::StrAppend(&init, "    ", f, " = kiln::", pair, "Identity();\n");
      absl::StrAppend(&merge, "    ", f, " = kiln::", pair, "Merge(", f, ", ", g, ");\n");
    } else {
      absl::StrAppend(&init, "    ", f, " = ", FunctorOf(red), "::Identity();\n");
      absl::StrAppend(&merge, "    ", f, " = ", FunctorOf(red), "::Apply(", f, ", ", g, ");\n");
    }
  }
  if (column_ && !init.empty()) {  // every lane
    init = absl::StrCat("    for (int j = 0; j < kV; ++j) {\n", init, "    }\n");
    merge = absl::StrCat("    for (int j = 0; j < kV; ++j) {\n", merge, "    }\n");
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

// The outputs of the full space (those along the reduced axis only: from row / o 0).
absl::Status ReduceEmitter::EmitStore(bool vector) {
  Begin(vector ? Where::kVector : Where::kElement);
  const int lanes = vector ? V_ : 1;
  for (const Node* o : r_.outputs) {
    if (!pl_.Of(o).reduced()) continue;
    const CType t = ComputeType(o->dtype());
    const std::string guard = Guard(o, 0);
    if (!guard.empty()) w_.Open(absl::StrCat("if (", guard, ")"));
    if (vector && VectorLoadable(o)) {
      const std::string y = w_.Fresh("y");
      w_.Line(absl::StrCat(CTypeName(t), " ", y, "[", lanes, "];"));
      for (int lane = 0; lane < lanes; ++lane) {
        KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(StoredValue(o), lane));
        w_.Line(absl::StrCat(y, "[", lane, "] = ", Coerce(e, t).code, ";"));
      }
      KILN_ASSIGN_OR_RETURN(std::string index, IndexOf(o, 0));
      const std::string type = StorageTypeName(o->dtype());
      w_.Line(ragged_ ? absl::StrCat("kiln::StoreVecAt<", type, ", ", lanes, ">(", out_names_.at(o), ", ", index, ", ",
                                     I_, "LL - i0, ", y, ");  // ", o->name())
                      : absl::StrCat("kiln::StoreVec<", type, ", ", lanes, ">(", out_names_.at(o), " + ", index, ", ",
                                     y, ");  // ", o->name()));
    } else {
      const int stored = column_ && !pl_.Of(o).inner() ? 1 : lanes;  // constant along i: lane 0 writes
      for (int lane = 0; lane < stored; ++lane) {
        const std::string lane_guard = lane > 0 ? Guard(o, lane) : "";
        if (!lane_guard.empty() && lane_guard != guard) w_.Open(absl::StrCat("if (", lane_guard, ")"));
        KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(StoredValue(o), lane));
        KILN_ASSIGN_OR_RETURN(std::string index, IndexOf(o, lane));
        w_.Line(absl::StrCat(out_names_.at(o), "[", index, "] = kiln::FromCompute<", StorageTypeName(o->dtype()), ">(",
                             Coerce(e, t).code, ");  // ", o->name()));
        if (!lane_guard.empty() && lane_guard != guard) w_.Close();
      }
    }
    if (!guard.empty()) w_.Close();
  }
  if (column_) {
    Function("Store(const Cell& cell, const Vec& x, long long o, long long k, long long i0)");
  } else {
    Function(vector ? "Store(const Row& row, const Vec& x, long long r, long long c0)"
                    : "Store1(const Row& row, const Vec& x, long long r, long long c)");
  }
  return absl::OkStatus();
}

absl::Status ReduceEmitter::EmitStoreRow() {
  Begin(Where::kPerRow);
  for (const Node* o : r_.outputs) {
    const Placement& place = pl_.Of(o);
    if (place.reduced() || place.combined) continue;
    const int stored = column_ && place.inner() ? V_ : 1;
    for (int lane = 0; lane < stored; ++lane) {
      const std::string guard = Guard(o, lane);
      if (!guard.empty()) w_.Open(absl::StrCat("if (", guard, ")"));
      KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(StoredValue(o), lane));
      KILN_ASSIGN_OR_RETURN(std::string index, IndexOf(o, lane));
      w_.Line(absl::StrCat(out_names_.at(o), "[", index, "] = kiln::FromCompute<", StorageTypeName(o->dtype()), ">(",
                           Coerce(e, ComputeType(o->dtype())).code, ");  // ", o->name()));
      if (!guard.empty()) w_.Close();
    }
  }
  Function(column_ ? "StoreCell(const Cell& cell, long long o, long long i0)" : "StoreRow(const Row& row, long long r)");
  if (pl_.combines.empty()) return absl::OkStatus();
  Begin(Where::kPerRow);
  for (size_t k = 0; k < pl_.combines.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(pl_.combines[k]->operand(0), -1));
    w_.Line(absl::StrCat("p[", k, "] = ", Coerce(e, CType::kFloat).code, ";  // ", pl_.combines[k]->name()));
  }
  Function("Partials(const Row& row, float* p)");
  return absl::OkStatus();
}

// The combines (each a fixed-order fold over the rows' partials), then the outputs that
// depend on them, written by thread 0.
absl::Status ReduceEmitter::EmitCombined() {
  if (pl_.combines.empty()) return absl::OkStatus();
  Begin(Where::kCombined);
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
  absl::StrAppend(&functions_, "  template <int kBlock>\n");
  Function("Combined(const float* partials, long long rows, float* smem)");
  return absl::OkStatus();
}

absl::StatusOr<KernelSource> ReduceEmitter::Emit() {
  if (N_ <= 0 || I_ <= 0) return absl::InvalidArgumentError("an empty reduction space");
  if (column_ && !pl_.combines.empty()) return absl::UnimplementedError("a combine in a column region");
  V_ = p_.vector_width;
  // Rows: at most the row (a head and a tail take what vectors do not). Columns: a divisor of
  // the inner extent, or a ragged vector (LoadVecAt's chunks hold whole words) where the
  // parameters ask for one that does not divide it.
  const int64_t narrowest = NarrowestBytes(r_);
  while (V_ > 1 && (column_ ? I_ % V_ != 0 && V_ * narrowest < 4 : V_ > N_)) V_ /= 2;
  if (V_ != p_.vector_width) {
    notes_.push_back(absl::StrCat("vector width lowered to ", V_, column_ ? " (inner extent " : " (N = ",
                                  column_ ? I_ : N_, ")"));
  }
  p_.vector_width = V_;
  aligned_ = column_ || N_ % V_ == 0;
  ragged_ = column_ && I_ % V_ != 0;
  if (ragged_) {
    notes_.push_back(absl::StrCat("inner extent ", I_, " is not a multiple of ", V_, ": vectors start anywhere "
                                  "(aligned chunks shifted into place), lanes past the extent store nothing"));
  }
  if (!aligned_) notes_.push_back(absl::StrCat("N = ", N_, " is not a multiple of ", V_, ": each row has a head and a "
                                               "tail of single elements around its aligned vectors"));
  for (const Node* in : r_.inputs) {  // the cache candidates, region order: deterministic source
    const Placement& p = pl_.Of(in);
    const bool candidate =
        VectorLoadable(in) && (column_ ? p.reduced()
                                       : IsCachedRowInput(pl_, in) || (pl_.fit.weights_cached && IsRowWeight(pl_, in)));
    if (!candidate) continue;
    const std::string field = absl::StrCat("x", vec_decls_.size());
    vec_fields_[in] = field;
    vec_decls_.push_back(VecDecl(in, field));
  }
  KernelSource ks;
  ks.kind = r_.kind;
  ks.template_name = KindInfo(r_.kind).runs_as;
  std::vector<std::string> params, fields;
  PointerParams(r_, &ks.args, &params, &fields, &in_names_, &out_names_);
  KILN_ASSIGN_OR_RETURN(const bool frontier, PlanFrontier());  // writes Load if so
  KILN_RETURN_IF_ERROR(EmitBeginRow());
  unsigned pass_mask = 0;
  int exchange_words = 1;
  for (int level = 1; level <= pl_.levels; ++level) {
    const size_t before = acc_fields_.size();
    KILN_RETURN_IF_ERROR(EmitLevel(level));
    if (acc_fields_.size() > before) pass_mask |= 1u << level;
    int words = 0;
    for (const Node* red : pl_.reductions) {
      if (pl_.Of(red).level == level && acc_fields_.count(red)) words += AccWordsOf(AccTypeOf(red));
    }
    exchange_words = std::max(exchange_words, words * (column_ ? V_ : 1));
  }
  KILN_RETURN_IF_ERROR(EmitStore(true));
  if (!aligned_) KILN_RETURN_IF_ERROR(EmitStore(false));
  KILN_RETURN_IF_ERROR(EmitStoreRow());
  KILN_RETURN_IF_ERROR(EmitCombined());
  // Load: the cached inputs of one vector.
  if (!frontier) {
    Begin(Where::kVector);
    KILN_RETURN_IF_ERROR(LoadCachedInputs());
    Function(column_ ? "Load(long long o, long long k, long long i0, Vec& x)" : "Load(long long r, long long c0, Vec& x)");
  }

  // The launch shape: threads per row (lanes along i for columns), the register or shared
  // memory cache, the streamed loop's unroll, blocks per row (tile).
  const int threads = column_ ? p_.block_size / std::max(p_.tile_n, 1) : ThreadsPerRow(p_);  // along the reduced axis
  const int64_t per_split = column_ ? (N_ + p_.split - 1) / p_.split : (N_ / V_ + p_.split - 1) / p_.split;
  const int64_t iters = (per_split + threads - 1) / threads;
  const int64_t cache_floats = static_cast<int64_t>(vec_decls_.size()) * iters * V_;  // Vec's arrays
  int64_t slot_bytes = 0;  // one vector of every cached input
  for (const auto& [in, field] : vec_fields_) slot_bytes += V_ * ByteSize(in->dtype());
  // Rows: the share over the block's threads (all along the row); columns: every lane's too,
  // counted by the one rule the model and the candidates use (row_fit.h's ColumnSharedBytes).
  const int64_t shared_bytes =
      column_ ? ColumnSharedBytes(r_, pl_, V_, threads, p_.split, p_.block_size) : slot_bytes * iters * threads;
  KILN_CHECK(!column_ || ragged_ || shared_bytes == slot_bytes * iters * p_.block_size)
      << "column cache inputs differ from ColumnSharedBytes': " << shared_bytes << " against "
      << slot_bytes * iters * p_.block_size;
  // A ragged column vector is not copied raw (it starts anywhere in memory).
  const bool shared = p_.smem && p_.chunk == 0 && !vec_fields_.empty() && shared_bytes <= kMaxSharedCacheBytes &&
                      !(column_ && ragged_);
  // The fit's larger limit for few rows holds in blocks of at most 256 threads (row_fit.h).
  const int64_t cache_limit = p_.block_size <= 256 ? pl_.fit.cache_limit : kRowCacheFloatsPerThread;
  const bool cached = p_.chunk == 0 && !vec_decls_.empty() && (shared || (!p_.smem && cache_floats <= cache_limit));
  if (p_.chunk == 0 && !cached && !vec_decls_.empty()) {
    notes_.push_back(p_.smem ? absl::StrCat("does not fit the shared-memory cache (", shared_bytes, " bytes): streamed")
                             : absl::StrCat("does not fit the register cache (", cache_floats,
                                            " floats per thread): streamed"));
  }
  // Columns streamed through a shared-memory ring (column_reduce.cuh's kRing): `chunk` slots per
  // thread, each one vector of every streamed input.
  const int ring = column_ && p_.smem && p_.chunk > 0 && !vec_fields_.empty() && !ragged_
                       ? static_cast<int>(std::clamp<int64_t>(p_.chunk, 2, 32))
                       : 0;
  if (shared || ring > 0) {
    // Prefetch / LoadShared: the cached inputs of one slot, each input's slots together.
    int64_t before = 0;
    std::string prefetch, load;
    for (const Node* in : r_.inputs) {
      auto field = vec_fields_.find(in);
      if (field == vec_fields_.end()) continue;
      KILN_ASSIGN_OR_RETURN(std::string index, IndexOf(in, 0));
      const int64_t bytes = V_ * ByteSize(in->dtype());
      const std::string at = absl::StrCat("smem + ", before, "LL * slots + slot * ", bytes, "LL");
      const std::string type = StorageTypeName(in->dtype());
      absl::StrAppend(&prefetch, "    kiln::CopyVecAsync<", type, ", ", V_, ">(", at, ", ", in_names_.at(in), " + ", index,
                      ");\n");
      absl::StrAppend(&load, "    kiln::LoadVec<", type, ", ", V_, ">(reinterpret_cast<const ", type, "*>(", at, "), x.",
                      field->second, ");\n");
      before += bytes;
    }
    absl::StrAppend(&functions_,
                    column_ ? "  __device__ __forceinline__ void Prefetch(long long o, long long k, long long i0, "
                              "char* smem, int slot, int slots) const {\n"
                            : "  __device__ __forceinline__ void Prefetch(long long r, long long c0, char* smem, int slot, "
                              "int slots) const {\n",
                    prefetch, "  }\n",
                    "  __device__ __forceinline__ void LoadShared(const char* smem, int slot, int slots, Vec& x) "
                    "const {\n",
                    load, "  }\n");
  }
  if (!aligned_) {  // never with a frontier
    // Load1: element c of the cached inputs, into lane 0 of each (a head or tail element, which
    // the template loads with the row's vectors and keeps beside them).
    Begin(Where::kElement);
    for (const Node* in : r_.inputs) {
      auto field = vec_fields_.find(in);
      if (field == vec_fields_.end()) continue;
      KILN_ASSIGN_OR_RETURN(std::string index, IndexOf(in, 0));
      w_.Line(absl::StrCat("x.", field->second, "[0] = kiln::ToCompute(", in_names_.at(in), "[", index, "]);"));
    }
    Function("Load1(long long r, long long c, Vec& x)");
  }
  notes_.push_back(ring > 0 ? absl::StrCat("streamed through shared memory: ", ring, " vectors in flight per thread, ",
                                            ring * slot_bytes * p_.block_size, " bytes per block (cp.async)")
                   : shared ? absl::StrCat("cached in shared memory: ", iters, " x ", V_, " per thread, ", shared_bytes,
                                           " bytes per block (cp.async)")
                   : cached ? absl::StrCat("cached in registers: ", iters, " x ", V_, " per thread")
                            : absl::StrCat("streamed from global memory, ", pl_.levels + 1, " passes at most",
                                           pl_.OnlinePairs().empty() ? "" : ", ", pl_.OnlinePairs()));
  // A column region whose full-space outputs wait for no reduction stores them as level 1 reads
  // its inputs (kStoreInStep): no final pass, and no wait for them.
  const bool store_in_step = column_ && ColumnStoresInStep(r_, pl_);
  const bool stores = !store_in_step && std::any_of(r_.outputs.begin(), r_.outputs.end(),
                                                    [&](const Node* o) { return pl_.Of(o).reduced(); });
  if (store_in_step) notes_.push_back("outputs of the full space stored in the first pass (they wait for no reduction)");
  // The blocks of a split row (tile) wait for the merged result only where they use it after:
  // another level, or outputs of the full space (row_reduce.cuh's SplitMerge).
  // A cluster's blocks merge through distributed shared memory, each getting the result: no
  // global-memory wait, no cooperative launch.
  const bool cluster = p_.cluster && p_.split > 1;
  const bool wait = !cluster && p_.split > 1 && SplitBlocksWait(pl_.levels, stores);
  const bool no_wait = !cluster && p_.split > 1 && !wait;
  if (p_.split > 1) {
    notes_.push_back(cluster ? absl::StrCat("split over ", p_.split,
                                            " blocks of one thread-block cluster (they merge through distributed "
                                            "shared memory)")
                     : wait  ? absl::StrCat("split over ", p_.split, " blocks (cooperative launch: they wait for the merge)")
                             : absl::StrCat("split over ", p_.split, " blocks (the last to finish merges and stores)"));
  }
  for (const Node* red : pl_.reductions) {
    if (pl_.picks.count(red)) notes_.push_back(red->name() + ": one-hot row sum read as one element per row");
  }
  // Tensors read, and outputs stored, through a transpose (reduce_placement.h).
  for (const auto& [n, place] : pl_.place) {
    const Node* t = place.through != nullptr ? place.through : place.stored_through;
    if (t == nullptr) continue;
    notes_.push_back(absl::StrCat(n->name(), place.through != nullptr ? " read" : " stored", " through transpose ",
                                  t->name(), " {perm = [", absl::StrJoin(t->attrs().GetInts("perm"), ", "),
                                  "]}, in contiguous runs (gcd of their lengths and strides: ", pl_.through_run, " elements)"));
  }
  std::vector<std::string> accs;
  for (int level = 1; level <= pl_.levels; ++level) accs.push_back(absl::StrCat("Acc", level));
  std::string body = column_ ? absl::StrCat("  static constexpr long long kK = ", N_, ";\n  static constexpr long long kI = ",
                                            I_, ";\n")
                             : absl::StrCat("  static constexpr long long kN = ", N_, ";\n");
  absl::StrAppend(&body, "  static constexpr bool kStores = ", stores ? "true" : "false", ";\n");
  if (column_) {
    absl::StrAppend(&body, "  static constexpr bool kStoreInStep = ", store_in_step ? "true" : "false",
                    ";\n  static constexpr bool kRagged = ", ragged_ ? "true" : "false", ";\n");
  }
  absl::StrAppend(&body, "  static constexpr int kV = ", V_, ";\n  static constexpr int kLevels = ", pl_.levels,
                  ";\n  static constexpr unsigned kPassMask = ", pass_mask, "u;\n  static constexpr int kCombines = ",
                  pl_.combines.size(), ";\n  static constexpr int kExchangeWords = ", exchange_words, ";\n");
  for (const std::string& f : fields) absl::StrAppend(&body, "  ", f, ";\n");
  absl::StrAppend(&body, "  struct Vec {\n    ", vec_decls_.empty() ? "float unused;" : absl::StrJoin(vec_decls_, "\n    "),
                  "\n  };\n  struct ", column_ ? "Cell" : "Row", " {\n    ",
                  row_decls_.empty() ? "float unused;" : absl::StrJoin(row_decls_, "\n    "), "\n  };\n", functions_);
  absl::StrAppend(&body, "  template <int L>\n  struct AccOf {\n    using Type = typename kiln::SelectType<L, ",
                  absl::StrJoin(accs, ", "), ">::Type;\n  };\n");

  ks.has_scratch = !pl_.combines.empty() || (p_.split > 1 && !cluster);
  if (ks.has_scratch) params.push_back("void* __restrict__ scratch");
  params.push_back("long long count");
  std::string call;
  if (column_) {
    const int lanes = std::max(p_.tile_n, 1);
    const int64_t tiles = (I_ + lanes * V_ - 1) / (lanes * V_);
    // kWait, then kAhead: the streamed loop's vectors in flight (KernelParams::chunk).
    const int ahead = !cached && ring == 0 && p_.chunk >= 8 ? 8 : 4;
    // kWait, kAhead, kRing, kCluster, kSharedCache (their defaults: 1, 4, 0, 0, 0).
    const std::string column_flags = shared       ? absl::StrCat(", ", no_wait ? 0 : 1, ", 4, 0, ", cluster ? 1 : 0, ", 1")
                                     : cluster    ? absl::StrCat(", 1, ", ring > 0 ? 4 : ahead, ", ", ring, ", 1")
                                     : ring > 0   ? absl::StrCat(", ", no_wait ? 0 : 1, ", 4, ", ring)
                                     : ahead != 4 ? absl::StrCat(", ", no_wait ? 0 : 1, ", ", ahead)
                                     : no_wait    ? ", 0"
                                                  : "";
    if (ring > 0) ks.launch.dynamic_smem_bytes = static_cast<int>(ring * slot_bytes * p_.block_size);
    if (shared) ks.launch.dynamic_smem_bytes = static_cast<int>(shared_bytes);
    call = absl::StrCat("kiln::ColumnKernel<Body, kiln::ColumnShape<", p_.block_size, ", ", lanes, ", ", V_, ", ",
                        cached ? iters : 0, ", ", p_.split, column_flags, ">>(body, count, ",
                        ks.has_scratch ? "scratch" : "nullptr", ");");
    ks.count = pl_.space.outer * tiles;
    ks.count_meaning = "tiles";
    ks.launch.items_per_block = 1;
    ks.scratch_bytes_per_count =
        p_.split > 1 && !cluster ? 12 + 4 * static_cast<int64_t>(pl_.levels) * (p_.split + 1) * lanes * exchange_words
                                 : 0;
  } else {
    const int64_t step = static_cast<int64_t>(threads) * V_;
    const int unroll = !cached && p_.chunk > 0 && p_.chunk % step == 0 ? static_cast<int>(std::clamp<int64_t>(p_.chunk / step, 1, 8)) : 1;
    // kSharedCache, kWait, kCluster (their defaults: 0, 1, 0).
    const std::string flags = cluster   ? absl::StrCat(", ", shared ? 1 : 0, ", 1, 1")
                              : no_wait ? absl::StrCat(", ", shared ? 1 : 0, ", 0")
                              : shared  ? ", 1"
                                        : "";
    call = absl::StrCat("kiln::RowKernel<Body, kiln::RowShape<", p_.block_size, ", ", threads, ", ", V_, ", ",
                        cached ? iters : 0, ", ", unroll, ", ", p_.split, flags, ">>(body, count, ",
                        ks.has_scratch ? "scratch" : "nullptr", ");");
    if (shared) ks.launch.dynamic_smem_bytes = static_cast<int>(shared_bytes);
    ks.count = pl_.space.outer;
    ks.count_meaning = "rows";
    ks.launch.items_per_block = p_.block_size / threads;
    ks.scratch_bytes_per_count =
        4 * static_cast<int64_t>(pl_.combines.size()) +
        (p_.split > 1 && !cluster ? 12 + 4 * static_cast<int64_t>(pl_.levels) * (p_.split + 1) * exchange_words : 0);
  }
  if (cluster) ks.launch.cluster_x = p_.split;
  ks.scratch_fixed_bytes = ks.has_scratch ? 32 : 0;
  ks.launch.block = p_.block_size;
  ks.launch.blocks_per_item_group = p_.split;
  ks.launch.cooperative = wait;
  ks.params = p_;
  ks.notes = notes_;
  std::vector<std::string> includes = {"kiln_types.cuh", "pointwise.cuh", "row_reduce.cuh"};
  if (column_) includes.push_back("column_reduce.cuh");
  if (uses_philox_) includes.push_back("kiln_philox.cuh");
  std::vector<std::string> comment = {
      absl::StrCat("kiln ", RegionKindName(r_.kind), " kernel (", ks.template_name, "), reduced extent ", N_,
                   column_ ? absl::StrCat(", inner extent ", I_) : "", ", ", p_.ToString()),
      "Generated by codegen/emit_reduce.cc from these nodes (place in the space):"};
  for (const Node* n : r_.nodes) comment.push_back(absl::StrCat("  ", NodeComment(n), "  [", pl_.Of(n).FormName(), "]"));
  FinishKernel(KindInfo(r_.kind).tag, includes, comment, p_, params, body, call, &ks);
  return ks;
}

absl::StatusOr<KernelSource> EmitReduceKernel(const Region& region, const KernelParams& params) {
  ReduceEmitter e(region, params);
  return e.Emit();
}

}  // namespace codegen_internal
}  // namespace kiln
