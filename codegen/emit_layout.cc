// The tiled emitter: elementwise regions (pointwise, layout) whose LayoutPlan stages transposed
// reads through shared memory (passes/fusion/layout_access.h) -> templates/layout.cuh
// TiledTransposeKernel. It generates only the Body the kernel's contract names:
//   Tile, kA, kB    the TileShape of the KernelParams (tile_m x tile_n = tb x ta, vector, block)
//                   and the canonical extents of the tile axes
//   Smem            one StagedTile per staged read
//   Base, Begin     per tile: the part of every affine address that the rest axes give
//   Stage           the staged reads' vectors along b, raw into shared memory
//   Store           kV output elements along a: the region's nodes as straight-line code per
//                   lane, walking back from each output as the plain emitter does, but with
//                   affine indices (layout_access.h's step functions) instead of a linear index:
//                   an input element is read at base + b * stride_b + (a + lane) * stride_a,
//                   a staged one from its tile; inputs coalesced along a come in as one vector
//                   (or one scalar when broadcast along a)
// Everything a tile needs from the rest coordinates is computed once per tile (64-bit), so an
// element costs a multiply-add per address, not the plain kernel's divisions.
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/affine_member.h"
#include "codegen/emit_kernel.h"
#include "codegen/emitter_util.h"
#include "ir/base/status.h"
#include "passes/fusion/layout_access.h"
#include "passes/fusion/region_kind.h"

namespace kiln {
namespace codegen_internal {
namespace {

class TiledEmitter {
 public:
  TiledEmitter(const Region& region, const KernelParams& params)
      : r_(region), plan_(*region.layout), p_(params), v_(params.vector_width) {}

  absl::StatusOr<KernelSource> Emit();

 private:
  bool Member(const Node* n) const { return members_.count(n) > 0; }
  // "base.f<k>": the field of Base holding the rest part of canonical form `f` (added on first
  // use), or "0" when the rest axes and the offset add nothing.
  std::string BaseOf(const AffineForm& f);
  // The address of canonical form `f` at (b, a + lane).
  std::string Address(const AffineForm& f, int lane);
  const LayoutRead* ReadOf(const Node* input, const AffineForm& f) const;
  bool Vectorized(const LayoutRead& read) const;
  absl::StatusOr<TypedExpr> Value(const Node* n, const AffineIndex& at);
  absl::StatusOr<TypedExpr> Load(const Node* n, const AffineForm& f);
  std::string BeginFunction() const;
  std::string StageFunction();
  absl::StatusOr<std::string> StoreFunction();

  const Region& r_;
  const LayoutPlan& plan_;
  KernelParams p_;
  const int v_;
  std::set<const Node*> members_;
  std::map<const Node*, std::string> in_names_, out_names_;
  CodeWriter w_{2};     // the lanes of Store
  CodeWriter pre_{2};   // Store's vector and broadcast loads, before the lanes
  int lane_ = 0;
  std::map<std::string, std::string> base_names_;  // rest part key -> field
  std::vector<std::string> base_values_;           // field initialisers, in field order
  std::map<std::string, int> staged_;               // read key -> tile index
  std::map<std::string, std::string> loaded_;       // read key -> preloaded array or scalar
  bool uses_philox_ = false;
};

std::string ReadKey(const Node* input, const AffineForm& f) { return absl::StrCat(input->name(), "@", f.Key()); }

std::string TiledEmitter::BaseOf(const AffineForm& f) {
  std::vector<std::string> terms;
  const std::vector<int> rest = plan_.RestAxes();
  int64_t stride = 1;
  std::vector<int64_t> strides(rest.size());
  for (int k = static_cast<int>(rest.size()) - 1; k >= 0; --k) {
    strides[k] = stride;
    stride *= plan_.extents[rest[k]];
  }
  std::string key = absl::StrCat(f.offset);
  for (size_t k = 0; k < rest.size(); ++k) {
    absl::StrAppend(&key, ",", f.coeff[rest[k]]);
    terms.push_back(Scale(absl::StrCat("r", k), f.coeff[rest[k]]));
  }
  if (f.offset != 0) terms.push_back(absl::StrCat(f.offset, "LL"));
  const std::string value = SumTerms(terms);
  if (value == "0") return "0";
  auto it = base_names_.find(key);
  if (it == base_names_.end()) {
    it = base_names_.emplace(key, absl::StrCat("base.f", base_values_.size())).first;
    base_values_.push_back(value);
  }
  return it->second;
}

std::string TiledEmitter::Address(const AffineForm& f, int lane) {
  const std::string a = lane == 0 ? "a" : absl::StrCat("(a + ", lane, "LL)");
  return SumTerms({BaseOf(f), Scale("b", f.coeff[plan_.b]), Scale(a, f.coeff[plan_.a])});
}

const LayoutRead* TiledEmitter::ReadOf(const Node* input, const AffineForm& f) const {
  for (const LayoutRead& r : plan_.reads) {
    if (r.input == input && r.form == f) return &r;
  }
  return nullptr;
}

// A read along a whose vectors start on vector boundaries: every stride but a's and the offset
// are multiples of the vector (the tensor itself is 16-byte aligned).
bool TiledEmitter::Vectorized(const LayoutRead& read) const {
  if (v_ == 1 || read.kind != ReadKind::kAlong || read.form.offset % v_ != 0) return false;
  for (int g = 0; g < static_cast<int>(plan_.extents.size()); ++g) {
    if (g != plan_.a && read.form.coeff[g] % v_ != 0) return false;
  }
  return true;
}

absl::StatusOr<TypedExpr> TiledEmitter::Value(const Node* n, const AffineIndex& at) {
  if (IsInlinedConstant(n)) return ConstantLiteral(*n);
  const AffineForm linear = plan_.Canonical(LinearForm(at, n->shape(), plan_.space));
  const std::string key = absl::StrCat(n->name(), "@", lane_, ":", linear.Key());
  if (const std::string* v = w_.Lookup(key)) return TypedExpr{*v, ComputeType(n->dtype())};
  TypedExpr e;
  if (!Member(n)) {
    KILN_ASSIGN_OR_RETURN(e, Load(n, linear));
  } else {
    KILN_ASSIGN_OR_RETURN(
        e, AffineMemberValue(
               *n, at, plan_.space, [&](const Node* o, const AffineIndex& i) { return Value(o, i); },
               [&] { return Address(linear, lane_); }, &uses_philox_));
  }
  const std::string var = w_.Fresh("v");
  w_.Line(absl::StrCat("const ", CTypeName(e.type), " ", var, " = ", e.code, ";",
                       Member(n) ? absl::StrCat("  // ", n->name()) : ""));
  w_.Remember(key, var);
  return TypedExpr{var, e.type};
}

absl::StatusOr<TypedExpr> TiledEmitter::Load(const Node* n, const AffineForm& f) {
  const LayoutRead* read = ReadOf(n, f);
  if (read == nullptr) return absl::InternalError(absl::StrCat("the layout plan has no read of ", n->name()));
  const std::string key = ReadKey(n, f);
  const CType type = ComputeType(n->dtype());
  const std::string ta = lane_ == 0 ? "ta" : absl::StrCat("ta + ", lane_);
  if (read->kind == ReadKind::kStaged) {
    return TypedExpr{absl::StrCat("kiln::ToCompute(smem.s", staged_.at(key), ".Get(tb, ", ta, "))"), type};
  }
  const std::string& in = in_names_.at(n);
  if (read->kind == ReadKind::kBroadcast || Vectorized(*read)) {
    auto it = loaded_.find(key);
    if (it == loaded_.end()) {
      const std::string name = w_.Fresh("x");
      if (read->kind == ReadKind::kBroadcast) {
        pre_.Line(absl::StrCat("const ", CTypeName(type), " ", name, " = kiln::ToCompute(", in, "[", Address(f, 0),
                               "]);  // ", n->name(), ", broadcast along a"));
      } else {
        pre_.Line(absl::StrCat(CTypeName(type), " ", name, "[", v_, "];"));
        pre_.Line(absl::StrCat("kiln::LoadVec<", StorageTypeName(n->dtype()), ", ", v_, ">(", in, " + ", Address(f, 0),
                               ", ", name, ");  // ", n->name()));
      }
      it = loaded_.emplace(key, name).first;
    }
    return TypedExpr{read->kind == ReadKind::kBroadcast ? it->second : absl::StrCat(it->second, "[", lane_, "]"), type};
  }
  return TypedExpr{absl::StrCat("kiln::ToCompute(", in, "[", Address(f, lane_), "])"), type};
}

std::string TiledEmitter::BeginFunction() const {
  CodeWriter w(2);
  const std::vector<int> rest = plan_.RestAxes();
  int64_t stride = 1;
  std::vector<std::string> lines;
  for (int k = static_cast<int>(rest.size()) - 1; k >= 0; --k) {
    const int64_t extent = plan_.extents[rest[k]];
    lines.push_back(absl::StrCat("const long long r", k, " = ", Coord("rest", stride, extent, k == 0), ";"));
    stride *= extent;
  }
  std::reverse(lines.begin(), lines.end());
  for (const std::string& l : lines) w.Line(l);
  w.Line(absl::StrCat("return Base{", absl::StrJoin(base_values_, ", "), "};"));
  return absl::StrCat("  __device__ __forceinline__ Base Begin(long long rest) const {\n", w.text(), "  }\n");
}

std::string TiledEmitter::StageFunction() {
  CodeWriter w(2);
  for (const LayoutRead& r : plan_.reads) {
    if (r.kind != ReadKind::kStaged) continue;
    w.Line(absl::StrCat("kiln::StageVec<kV>(", in_names_.at(r.input), " + ", Address(r.form, 0), ", smem.s",
                        staged_.at(ReadKey(r.input, r.form)), ", tb, ta);  // ", r.input->name()));
  }
  return absl::StrCat(
      "  __device__ __forceinline__ void Stage(const Base& base, long long b, long long a, int tb, int ta, Smem& smem) "
      "const {\n",
      w.text(), "  }\n");
}

absl::StatusOr<std::string> TiledEmitter::StoreFunction() {
  std::map<const Node*, std::string> results;
  std::map<const Node*, AffineForm> out_forms;
  for (const Node* o : r_.outputs) {
    std::optional<AffineIndex> at = OutputIndex(*o, plan_.space);
    if (!at) return absl::InternalError(absl::StrCat("output ", o->name(), " is not laid out as the space"));
    out_forms[o] = plan_.Canonical(LinearForm(*at, o->shape(), plan_.space));
    const std::string name = w_.Fresh("y");
    results[o] = name;
    for (lane_ = 0; lane_ < v_; ++lane_) {
      KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(StoredValue(o), *at));
      w_.Line(absl::StrCat(name, "[", lane_, "] = ", Coerce(e, ComputeType(o->dtype())).code, ";"));
    }
  }
  lane_ = 0;
  std::string decls;
  for (const Node* o : r_.outputs) {
    absl::StrAppend(&decls, "    ", CTypeName(ComputeType(o->dtype())), " ", results[o], "[kV];\n");
  }
  CodeWriter stores(2);
  for (const Node* o : r_.outputs) {
    stores.Line(absl::StrCat("kiln::StoreVec<", StorageTypeName(o->dtype()), ", kV>(", out_names_.at(o), " + ",
                             Address(out_forms[o], 0), ", ", results[o], ");  // ", o->name()));
  }
  return absl::StrCat(
      "  __device__ __forceinline__ void Store(const Base& base, long long b, long long a, int tb, int ta, "
      "const Smem& smem) const {\n",
      pre_.text(), decls, w_.text(), stores.text(), "  }\n");
}

absl::StatusOr<KernelSource> TiledEmitter::Emit() {
  const TileChoice tile{p_.tile_m, p_.tile_n, p_.vector_width, p_.block_size};
  KILN_RETURN_IF_ERROR(CheckTile(plan_, tile));
  members_.insert(r_.nodes.begin(), r_.nodes.end());
  KernelSource ks;
  ks.kind = r_.kind;
  ks.template_name = "layout.cuh";
  std::vector<std::string> params, fields;
  PointerParams(r_, &ks.args, &params, &fields, &in_names_, &out_names_);
  params.push_back("long long count");
  ks.count = plan_.Tiles(tile.tb, tile.ta);
  ks.count_meaning = "tiles";

  std::string smem;
  for (const LayoutRead& r : plan_.reads) {
    if (r.kind != ReadKind::kStaged) continue;
    const int k = static_cast<int>(staged_.size());
    staged_[ReadKey(r.input, r.form)] = k;
    absl::StrAppend(&smem, "    kiln::StagedTile<", StorageTypeName(r.input->dtype()), ", Tile> s", k, ";  // ",
                    r.input->name(), "\n");
  }
  KILN_ASSIGN_OR_RETURN(const std::string store, StoreFunction());
  const std::string stage = StageFunction();
  const std::string begin = BeginFunction();  // last: Store and Stage add the Base fields

  std::string body = absl::StrCat("  using Tile = kiln::TileShape<", tile.tb, ", ", tile.ta, ", ", tile.vector, ", ",
                                  tile.threads, ", ", plan_.staged_bytes, ">;\n",
                                  "  static constexpr int kV = Tile::kV;\n",
                                  "  static constexpr long long kA = ", plan_.extents[plan_.a], "LL;  // axis ",
                                  plan_.a, " of [", absl::StrJoin(plan_.extents, ","), "]\n",
                                  "  static constexpr long long kB = ", plan_.extents[plan_.b], "LL;  // axis ",
                                  plan_.b, "\n");
  absl::StrAppend(&body, "  struct Smem {\n", smem, "  };\n  struct Base {\n");
  for (size_t k = 0; k < base_values_.size(); ++k) absl::StrAppend(&body, "    long long f", k, ";\n");
  absl::StrAppend(&body, "  };\n");
  for (const std::string& f : fields) absl::StrAppend(&body, "  ", f, ";\n");
  absl::StrAppend(&body, begin, stage, store);

  ks.params = p_;
  ks.launch.block = tile.threads;
  ks.launch.items_per_block = 1;  // one tile per block; the kernel loops when the grid is capped
  const std::string summary = plan_.Summary();
  ks.notes.push_back(absl::StrCat(summary, "; tile ", tile.tb, "x", tile.ta, " of (b, a), ", tile.vector,
                                  tile.vector == 1 ? " element" : " elements", " per access, ",
                                  StagedSmemBytes(plan_, tile), " bytes of shared memory"));
  std::vector<std::string> includes = {"kiln_types.cuh", "pointwise.cuh", "layout.cuh"};
  if (uses_philox_) includes.push_back("kiln_philox.cuh");
  std::vector<std::string> comment = {
      absl::StrCat("kiln ", RegionKindName(r_.kind), " kernel (layout.cuh, tiled), ", p_.ToString()),
      "Generated by codegen/emit_layout.cc from these nodes:"};
  for (const Node* n : r_.nodes) comment.push_back("  " + NodeComment(n));
  comment.push_back(absl::StrCat("Layout: ", summary, "."));
  FinishKernel(KindInfo(r_.kind).tag, includes, comment, p_, params, body,
               "kiln::TiledTransposeKernel<Body, Body::Tile>(body, count);", &ks);
  return ks;
}

}  // namespace

absl::StatusOr<KernelSource> EmitTiledKernel(const Region& region, const KernelParams& params) {
  if (region.layout == nullptr || !region.layout->tiled()) {
    return absl::InvalidArgumentError(absl::StrCat("region ", region.id, " stages no read: it runs the plain kernel"));
  }
  TiledEmitter e(region, params);
  return e.Emit();
}

}  // namespace codegen_internal
}  // namespace kiln
