// The elementwise emitter: pointwise and layout regions. One grid-stride loop over `count` = the largest
// output's element count; every output o is evaluated at its own row-major index i (for
// i < numel(o)), by walking the region backwards from o: a pointwise node combines its
// operands at their broadcast indices, a layout node remaps the index (reshape keeps it,
// transpose/slice/broadcast_to permute or offset it, concat selects a piece, gather reads its
// index tensor).
// Values and indices are memoised per scope, so a value used twice at one index is computed once.
// Vectorised form (pointwise regions of pointwise ops and broadcasts only, every output the
// full space; other regions vectorise through their layout plan, emit_vector.cc): i counts vectors; inputs are loaded as V-wide vectors (or once per vector when
// their innermost axis is broadcast) and outputs stored as vectors. Either the innermost extent
// is a multiple of V (a vector never crosses a row), or every input is the full space or a
// single element (the tensors are flat: a vector may cross rows), and a scalar loop finishes
// the last count % V elements.
// In place: a region with one output reports the inputs it may be written over
// (KernelSource::in_place, InPlacePairs below); the buffer plan decides whether it is.
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/emit_kernel.h"
#include "codegen/emitter_util.h"
#include "ir/base/status.h"
#include "passes/fusion/layout_access.h"
#include "passes/fusion/region_kind.h"

namespace kiln {
namespace codegen_internal {
namespace {

class ElementwiseEmitter {
 public:
  ElementwiseEmitter(const Region& region, const KernelParams& params) : r_(region), p_(params) {}

  absl::StatusOr<KernelSource> Emit();

 private:
  bool Member(const Node* n) const { return members_.count(n) > 0; }
  // A variable holding index expression `expr` (or expr itself when trivial).
  std::string Index(const std::string& expr);
  absl::StatusOr<TypedExpr> Value(const Node* n, const std::string& idx);
  absl::StatusOr<TypedExpr> Compute(const Node* n, const std::string& idx);
  absl::StatusOr<TypedExpr> Load(const Node* n, const std::string& idx);
  absl::StatusOr<TypedExpr> Concat(const Node* n, const std::string& idx);
  absl::StatusOr<TypedExpr> Gather(const Node* n, const std::string& idx);
  std::string Bind(const TypedExpr& e, const std::string& key, const std::string& comment);
  enum class Vectorization { kNone, kRows, kFlat };
  Vectorization CanVectorize() const;
  absl::Status EmitVectorBody(int v);
  absl::Status EmitScalarBody();

  const Region& r_;
  KernelParams p_;
  std::set<const Node*> members_;
  std::map<const Node*, std::string> in_names_, out_names_;
  CodeWriter w_{2};
  bool uses_philox_ = false, uses_layout_ = false;
  std::string guard_;                          // the enclosing concat pieces' selection, if any
  std::map<std::string, std::string> guards_;  // selection condition -> its variable
  // Vector mode: the loaded value of each input for the lane being evaluated.
  int lane_ = -1;
  std::map<const Node*, std::pair<std::string, bool>> vec_inputs_;  // name, is_array
};

std::string ElementwiseEmitter::Index(const std::string& expr) {
  bool trivial = expr == "0" || expr.find_first_of(" ()/%*+") == std::string::npos;
  if (trivial) return expr;
  std::string key = "idx:" + expr;
  if (const std::string* v = w_.Lookup(key)) return *v;
  std::string var = w_.Fresh("i");
  w_.Line(absl::StrCat("const long long ", var, " = ", expr, ";"));
  w_.Remember(key, var);
  return var;
}

std::string ElementwiseEmitter::Bind(const TypedExpr& e, const std::string& key, const std::string& comment) {
  std::string var = w_.Fresh("v");
  w_.Line(absl::StrCat("const ", CTypeName(e.type), " ", var, " = ", e.code, ";", comment.empty() ? "" : "  // ",
                       comment));
  w_.Remember(key, var);
  return var;
}

absl::StatusOr<TypedExpr> ElementwiseEmitter::Value(const Node* n, const std::string& idx) {
  if (IsInlinedConstant(n)) return ConstantLiteral(*n);
  const std::string key = absl::StrCat(n->name(), "@", lane_ >= 0 ? absl::StrCat("lane", lane_) : idx, "|", guard_);
  if (const std::string* v = w_.Lookup(key)) return TypedExpr{*v, ComputeType(n->dtype())};
  TypedExpr e;
  if (!Member(n)) {
    KILN_ASSIGN_OR_RETURN(e, Load(n, idx));
  } else {
    KILN_ASSIGN_OR_RETURN(e, Compute(n, idx));
  }
  return TypedExpr{Bind(e, key, Member(n) ? n->name() : ""), e.type};
}

absl::StatusOr<TypedExpr> ElementwiseEmitter::Load(const Node* n, const std::string& idx) {
  auto it = in_names_.find(n);
  if (it == in_names_.end()) {
    return absl::InternalError(absl::StrCat("region reads ", n->name(), " but it is not a region input"));
  }
  if (lane_ >= 0) {
    const auto& [name, is_array] = vec_inputs_.at(n);
    return TypedExpr{is_array ? absl::StrCat(name, "[", lane_, "]") : name, ComputeType(n->dtype())};
  }
  // Inside a concat's piece only the selected piece reads its address; the others read element 0
  // (one cached line, not the piece's whole tensor).
  const std::string at = guard_.empty() ? Index(idx) : absl::StrCat("(", guard_, " ? ", Index(idx), " : 0LL)");
  return TypedExpr{absl::StrCat("kiln::ToCompute(", it->second, "[", at, "])"), ComputeType(n->dtype())};
}

absl::StatusOr<TypedExpr> ElementwiseEmitter::Compute(const Node* n, const std::string& idx) {
  const Shape& s = n->shape();
  switch (n->category()) {
    case OpCategory::kPointwise:
    case OpCategory::kRandom: {
      std::vector<TypedExpr> operands;
      for (const Node* o : n->operands()) {
        KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(o, BroadcastIndex(s, o->shape(), idx)));
        operands.push_back(e);
      }
      uses_philox_ |= n->category() == OpCategory::kRandom;
      if (n->category() == OpCategory::kRandom && lane_ >= 0 && p_.vector_width % 4 == 0 && s == r_.space) {
        // Vector lanes 4q..4q+3 are elements 4g..4g+3 (i is a multiple of V, V of 4): one
        // Philox call serves them (docs/dropout.md).
        const std::string wkey = absl::StrCat(n->name(), "@words", lane_ / 4);
        const std::string* words = w_.Lookup(wkey);
        std::string wvar = words ? *words : w_.Fresh("w");
        const std::string group = absl::StrCat("(i + ", lane_ - lane_ % 4, "LL) >> 2");
        KILN_ASSIGN_OR_RETURN(DropoutPieces d, EmitDropoutShared(*n, operands, group, wvar, lane_));
        if (!words && !d.words.empty()) {
          w_.Line(absl::StrCat("const kiln::Philox4 ", wvar, " = ", d.words, ";  // ", n->name()));
          w_.Remember(wkey, wvar);
        }
        return d.value;
      }
      bool needs_index = n->op() == OpKind::kIota || n->category() == OpCategory::kRandom;
      return EmitPointwiseExpr(*n, operands, needs_index ? Index(idx) : idx);
    }
    case OpCategory::kBroadcast:
      return Value(n->operand(0), BroadcastIndex(s, n->operand(0)->shape(), idx));
    case OpCategory::kLayout:
      break;
    default:
      return absl::UnimplementedError(absl::StrCat("the elementwise emitter cannot compute ", OpName(n->op()), " ",
                                                   n->name()));
  }
  uses_layout_ = true;
  const Node* x = n->operand(0);
  const Shape& xs = x->shape();
  const std::vector<int64_t> ys = RowMajorStrides(s), xst = RowMajorStrides(xs);
  const int rank = s.size();
  switch (n->op()) {
    case OpKind::kReshape:
      return Value(x, idx);
    case OpKind::kTranspose: {
      const auto& perm = n->attrs().GetInts("perm");
      std::vector<std::string> terms;
      for (int d = 0; d < rank; ++d) terms.push_back(Scale(Coord(idx, ys[d], s[d], d == 0), xst[perm[d]]));
      return Value(x, SumTerms(terms));
    }
    case OpKind::kSlice: {
      const auto& starts = n->attrs().GetInts("starts");
      std::vector<int64_t> steps = n->attrs().GetInts("steps");
      if (steps.empty()) steps.assign(rank, 1);
      int64_t base = 0;
      std::vector<std::string> terms;
      for (int d = 0; d < rank; ++d) {
        int64_t b = starts[d] < 0 ? starts[d] + xs[d] : starts[d];
        b = std::clamp<int64_t>(b, 0, xs[d]);
        base += b * xst[d];
        terms.push_back(Scale(Coord(idx, ys[d], s[d], d == 0), xst[d] * steps[d]));
      }
      if (base != 0) terms.push_back(absl::StrCat(base, "LL"));
      return Value(x, SumTerms(terms));
    }
    case OpKind::kConcat: return Concat(n, idx);
    case OpKind::kGather: return Gather(n, idx);
    default: break;
  }
  return absl::UnimplementedError(absl::StrCat("no index mapping for ", OpName(n->op())));
}

absl::StatusOr<TypedExpr> ElementwiseEmitter::Concat(const Node* n, const std::string& idx) {
  const Shape& s = n->shape();
  int64_t axis = n->attrs().GetInt("axis");
  if (axis < 0) axis += s.size();
  int64_t inner = 1;
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  const std::string i = Index(idx);
  const std::string outer = Index(absl::StrCat("(", i, " / ", s[axis] * inner, "LL)"));
  const std::string along = Index(absl::StrCat("((", i, " / ", inner, "LL) % ", s[axis], "LL)"));
  const std::string within = inner == 1 ? "0" : Index(absl::StrCat("(", i, " % ", inner, "LL)"));
  // Every piece is evaluated at a clamped index (so its loads stay in bounds), then one is selected;
  // a piece's loads are guarded by its selection, so the others read no memory of their own.
  std::vector<std::pair<int64_t, TypedExpr>> pieces;
  int64_t offset = 0;
  const CType t = ComputeType(n->dtype());
  const std::string outer_guard = guard_;
  for (const Node* o : n->operands()) {
    const int64_t ext = o->shape()[axis];
    if (ext == 0) continue;
    std::string local = absl::StrCat("kiln::ClampIndex(", along, " - ", offset, "LL, ", ext, "LL)");
    std::string pidx = SumTerms({Scale(outer, ext * inner), Scale(absl::StrCat("(", local, ")"), inner), within});
    const std::string cond = absl::StrCat(outer_guard.empty() ? "" : outer_guard + " && ", along, " >= ", offset,
                                          "LL && ", along, " < ", offset + ext, "LL");
    std::string& g = guards_[cond];
    if (g.empty()) {
      g = w_.Fresh("g");
      w_.Line(absl::StrCat("const bool ", g, " = ", cond, ";"));
    }
    guard_ = g;
    absl::StatusOr<TypedExpr> v = Value(o, pidx);
    guard_ = outer_guard;
    if (!v.ok()) return v.status();
    offset += ext;
    pieces.push_back({offset, Coerce(*v, t)});
  }
  if (pieces.empty()) return absl::InvalidArgumentError(absl::StrCat("concat ", n->name(), " has no elements"));
  std::string e = pieces.back().second.code;
  for (int k = static_cast<int>(pieces.size()) - 2; k >= 0; --k) {
    e = absl::StrCat("(", along, " < ", pieces[k].first, "LL ? ", pieces[k].second.code, " : ", e, ")");
  }
  return TypedExpr{e, t};
}

absl::StatusOr<TypedExpr> ElementwiseEmitter::Gather(const Node* n, const std::string& idx) {
  const Node* x = n->operand(0);
  const Node* indices = n->operand(1);
  const Shape& xs = x->shape();
  int64_t axis = n->attrs().GetInt("axis");
  if (axis < 0) axis += xs.size();
  int64_t inner = 1;
  for (size_t d = axis + 1; d < xs.size(); ++d) inner *= xs[d];
  const int64_t extent = xs[axis], n_idx = indices->num_elements();
  const std::string i = Index(idx);
  const std::string outer = Index(absl::StrCat("(", i, " / ", n_idx * inner, "LL)"));
  const std::string j = n_idx == 1 ? "0" : Index(absl::StrCat("((", i, " / ", inner, "LL) % ", n_idx, "LL)"));
  const std::string within = inner == 1 ? "0" : Index(absl::StrCat("(", i, " % ", inner, "LL)"));
  KILN_ASSIGN_OR_RETURN(TypedExpr iv, Value(indices, j));
  const std::string g = Index(absl::StrCat("kiln::GatherIndex(", Coerce(iv, CType::kInt).code, ", ", extent, "LL)"));
  return Value(x, SumTerms({Scale(outer, extent * inner), Scale(g, inner), within}));
}

// Pointwise regions with one output may write it over an input of the same element size read
// at the output's own index (its shape is the whole space): thread i reads element i of every
// input (or its vector [i, i + V)) before it writes element i of the output, and no other
// thread reads element i of that input. One output only, because the scalar body computes and
// stores its outputs one after another: a second output's loads would follow the first one's
// store. Layout ops (a transpose reads another thread's element) and reductions are out.
// Whether every node of `r` reads its operands at the element's own (broadcast) index:
// pointwise, random and broadcast ops only (the vectorised body and in-place outputs need it).
bool OnlyElementwiseNodes(const Region& r) {
  return std::all_of(r.nodes.begin(), r.nodes.end(), [](const Node* n) {
    const OpCategory c = n->category();
    return c == OpCategory::kPointwise || c == OpCategory::kRandom || c == OpCategory::kBroadcast;
  });
}

std::vector<std::pair<int, int>> InPlacePairs(const Region& r) {
  if (r.kind != RegionKind::kPointwise || r.outputs.size() != 1 || r.outputs[0]->shape() != r.space ||
      !OnlyElementwiseNodes(r)) {
    return {};
  }
  const Node* out = r.outputs[0];
  std::vector<std::pair<int, int>> pairs;
  const int out_arg = static_cast<int>(r.inputs.size());  // PointerParams: inputs, then outputs
  for (size_t k = 0; k < r.inputs.size(); ++k) {
    const Node* in = r.inputs[k];
    if (in->shape() == out->shape() && ByteSize(in->dtype()) == ByteSize(out->dtype())) {
      pairs.push_back({static_cast<int>(k), out_arg});
    }
  }
  return pairs;
}

ElementwiseEmitter::Vectorization ElementwiseEmitter::CanVectorize() const {
  const int v = p_.vector_width;
  if (v <= 1 || r_.kind != RegionKind::kPointwise || r_.space.empty() || !OnlyElementwiseNodes(r_)) {
    return Vectorization::kNone;
  }
  for (const Node* o : r_.outputs) {
    if (o->shape() != r_.space) return Vectorization::kNone;
  }
  bool flat = true;
  for (const Node* in : r_.inputs) {
    if (!BroadcastsTo(in->shape(), r_.space)) return Vectorization::kNone;
    flat &= in->num_elements() == 1 || in->num_elements() == NumElements(r_.space);
  }
  if (r_.space.back() % v == 0) return Vectorization::kRows;
  return flat ? Vectorization::kFlat : Vectorization::kNone;
}

// Body::Vector(i): the v elements [i, i + v) of every output, i a multiple of v.
absl::Status ElementwiseEmitter::EmitVectorBody(int v) {
  // Inputs: one V-wide load when the innermost axis is theirs, one scalar when it is broadcast.
  const bool flat = CanVectorize() == Vectorization::kFlat;
  for (const Node* in : r_.inputs) {
    const std::string& arg = in_names_.at(in);
    const std::string off = Index(BroadcastIndex(r_.space, in->shape(), "i"));
    const bool contiguous = flat ? in->num_elements() > 1
                                 : !in->shape().empty() && in->shape().back() == r_.space.back() && in->shape().back() != 1;
    const std::string name = w_.Fresh("x");
    if (contiguous) {
      w_.Line(absl::StrCat(CTypeName(ComputeType(in->dtype())), " ", name, "[", v, "];"));
      w_.Line(absl::StrCat("kiln::LoadVec<", StorageTypeName(in->dtype()), ", ", v, ">(", arg, " + ", off, ", ", name, ");"));
    } else {
      w_.Line(absl::StrCat("const ", CTypeName(ComputeType(in->dtype())), " ", name, " = kiln::ToCompute(", arg, "[", off,
                           "]);  // broadcast along the vector"));
    }
    vec_inputs_[in] = {name, contiguous};
  }
  std::map<const Node*, std::string> out_arrays;
  for (const Node* o : r_.outputs) {
    const std::string name = w_.Fresh("y");
    w_.Line(absl::StrCat(CTypeName(ComputeType(o->dtype())), " ", name, "[", v, "];"));
    out_arrays[o] = name;
  }
  for (int lane = 0; lane < v; ++lane) {
    lane_ = lane;
    const std::string li = absl::StrCat("(i + ", lane, "LL)");
    for (const Node* o : r_.outputs) {
      KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(StoredValue(o), li));
      w_.Line(absl::StrCat(out_arrays[o], "[", lane, "] = ", Coerce(e, ComputeType(o->dtype())).code, ";"));
    }
  }
  lane_ = -1;
  for (const Node* o : r_.outputs) {
    w_.Line(absl::StrCat("kiln::StoreVec<", StorageTypeName(o->dtype()), ", ", v, ">(", out_names_.at(o), " + i, ",
                         out_arrays[o], ");"));
  }
  return absl::OkStatus();
}

// Body::Scalar(i): element i of every output (an output smaller than the space only below its size).
absl::Status ElementwiseEmitter::EmitScalarBody() {
  int64_t count = 0;
  for (const Node* o : r_.outputs) count = std::max(count, o->num_elements());
  for (const Node* o : r_.outputs) {
    const bool full = o->num_elements() == count;
    if (!full) w_.Open(absl::StrCat("if (i < ", o->num_elements(), "LL)"));
    KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(StoredValue(o), "i"));
    w_.Line(absl::StrCat(out_names_.at(o), "[i] = kiln::FromCompute<", StorageTypeName(o->dtype()), ">(",
                         Coerce(e, ComputeType(o->dtype())).code, ");  // ", o->name()));
    if (!full) w_.Close();
  }
  return absl::OkStatus();
}

absl::StatusOr<KernelSource> ElementwiseEmitter::Emit() {
  members_.insert(r_.nodes.begin(), r_.nodes.end());
  KernelSource ks;
  ks.kind = r_.kind;
  ks.template_name = KindInfo(r_.kind).runs_as;
  std::vector<std::string> params, fields;
  if (r_.outputs.empty()) return absl::InvalidArgumentError("region has no outputs");
  ks.in_place = InPlacePairs(r_);
  std::set<const Node*> shared;
  for (const auto& [in, out] : ks.in_place) shared.insert({r_.inputs[in], r_.outputs[0]});
  PointerParams(r_, &ks.args, &params, &fields, &in_names_, &out_names_, shared);
  params.push_back("long long count");
  int64_t count = 0;
  for (const Node* o : r_.outputs) count = std::max(count, o->num_elements());
  ks.count = count;
  ks.count_meaning = "elements";

  const Vectorization vectorization = CanVectorize();
  std::string functions;
  bool tail = false;
  if (vectorization != Vectorization::kNone) {
    tail = vectorization == Vectorization::kFlat;
    KILN_RETURN_IF_ERROR(EmitVectorBody(p_.vector_width));
    absl::StrAppend(&functions, "  __device__ __forceinline__ void Vector(long long i) const {\n", w_.text(), "  }\n");
    w_ = CodeWriter(2);
    ks.notes.push_back(absl::StrCat("vectorised: ", p_.vector_width, " elements per thread per step",
                                    tail ? ", one at a time for the last count % vector width" : ""));
  } else {
    if (p_.vector_width > 1) {
      ks.notes.push_back("one element per thread per step (vector width 1): layout ops, a reduction, or an operand "
                         "broadcast along an innermost extent that is not a multiple of the vector width");
    }
    p_.vector_width = 1;
  }
  if (p_.vector_width == 1 || tail) {
    KILN_RETURN_IF_ERROR(EmitScalarBody());
    absl::StrAppend(&functions, "  __device__ __forceinline__ void Scalar(long long i) const {\n", w_.text(), "  }\n");
  }
  ks.params = p_;
  ks.launch.block = p_.block_size;
  ks.launch.items_per_block = static_cast<int64_t>(p_.block_size) * p_.vector_width;
  std::string body = absl::StrCat("  static constexpr int kV = ", p_.vector_width,
                                  ";\n  static constexpr bool kTail = ", tail ? "true" : "false", ";\n");
  for (const std::string& f : fields) absl::StrAppend(&body, "  ", f, ";\n");
  absl::StrAppend(&body, functions);
  std::vector<std::string> includes = {"kiln_types.cuh", "pointwise.cuh"};
  if (uses_layout_) includes.push_back("layout.cuh");
  if (uses_philox_) includes.push_back("kiln_philox.cuh");
  std::vector<std::string> comment = {
      absl::StrCat("kiln ", RegionKindName(r_.kind), " kernel (", ks.template_name, "), ", p_.ToString()),
      "Generated by codegen/emit_elementwise.cc from these nodes:"};
  for (const Node* n : r_.nodes) comment.push_back("  " + NodeComment(n));
  FinishKernel(KindInfo(r_.kind).tag, includes, comment, p_, params, body,
               "kiln::PointwiseKernel<Body>(body, count);", &ks);
  return ks;
}

}  // namespace

absl::StatusOr<KernelSource> EmitElementwiseKernel(const Region& region, const KernelParams& params) {
  // A region that stages a transposed read runs the tiled kernel when the params name a tile
  // (DefaultParams does; the plain kernel stays a tuning candidate).
  if (region.layout != nullptr && region.layout->tiled() && params.tile_m > 0) return EmitTiledKernel(region, params);
  // A region the broadcast-only form below does not vectorise may run the layout plan's vectors.
  if (region.layout != nullptr && params.vector_width > 1 && params.vector_width <= region.layout->plain_vector) {
    return EmitVectorKernel(region, params);
  }
  ElementwiseEmitter e(region, params);
  return e.Emit();
}

}  // namespace codegen_internal
}  // namespace kiln
