#include "codegen/emitter_util.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace kiln::codegen_internal {

void CodeWriter::Line(const std::string& text) {
  absl::StrAppend(&text_, std::string(2 * indent_, ' '), text, "\n");
}

void CodeWriter::Open(const std::string& header) {
  Line(header + " {");
  ++indent_;
  memo_.emplace_back();
}

void CodeWriter::Close() {
  --indent_;
  memo_.pop_back();
  Line("}");
}

std::string CodeWriter::Fresh(const std::string& prefix) {
  return absl::StrCat(prefix, counters_[prefix]++);
}

const std::string* CodeWriter::Lookup(const std::string& key) const {
  for (auto it = memo_.rbegin(); it != memo_.rend(); ++it) {
    auto found = it->find(key);
    if (found != it->end()) return &found->second;
  }
  return nullptr;
}

void CodeWriter::Remember(const std::string& key, const std::string& value) { memo_.back()[key] = value; }

std::string Coord(const std::string& idx, int64_t stride, int64_t extent, bool outermost, const char* suffix) {
  std::string e = idx;
  if (stride != 1) e = absl::StrCat("(", e, " / ", stride, suffix, ")");
  if (!outermost) e = absl::StrCat("(", e, " % ", extent, suffix, ")");
  return e;
}

std::string Scale(const std::string& x, int64_t k) {
  if (k == 0 || x == "0") return "0";
  if (k == 1) return x;
  return absl::StrCat(x, " * ", k, "LL");
}

std::string SumTerms(const std::vector<std::string>& terms) {
  std::vector<std::string> kept;
  for (const std::string& t : terms) {
    if (!t.empty() && t != "0") kept.push_back(t);
  }
  if (kept.empty()) return "0";
  if (kept.size() == 1) return kept[0];
  return absl::StrCat("(", absl::StrJoin(kept, " + "), ")");
}

std::string BroadcastIndex(const Shape& from, const Shape& to, const std::string& idx) {
  if (from == to) return idx;
  if (NumElements(to) == 1) return "0";
  const int r = from.size(), ro = to.size(), lead = r - ro;
  const std::vector<int64_t> fs = RowMajorStrides(from), ts = RowMajorStrides(to);
  int k = r;  // dims [k, r) match exactly: their contribution is idx % prod(from[k..])
  while (k > lead && to[k - 1 - lead] == from[k - 1]) --k;
  std::vector<std::string> terms;
  for (int d = lead; d < k; ++d) {
    if (to[d - lead] == 1) continue;
    terms.push_back(Scale(Coord(idx, fs[d], from[d], d == 0), ts[d - lead]));
  }
  if (k < r) {
    int64_t inner = 1;
    for (int d = k; d < r; ++d) inner *= from[d];
    terms.push_back(k == 0 ? idx : absl::StrCat("(", idx, " % ", inner, "LL)"));
  }
  return SumTerms(terms);
}

void PointerParams(const Region& region, std::vector<KernelArg>* args, std::vector<std::string>* params,
                   std::vector<std::string>* body_fields, std::map<const Node*, std::string>* input_names,
                   std::map<const Node*, std::string>* output_names, const std::set<const Node*>& shared) {
  auto restrict_of = [&](const Node* n) { return shared.count(n) ? "* " : "* __restrict__ "; };
  int k = 0;
  for (const Node* n : region.inputs) {
    std::string name = absl::StrCat("in", k++);
    (*input_names)[n] = name;
    args->push_back({n->name(), n->dtype(), n->shape(), false});
    params->push_back(absl::StrCat("const ", StorageTypeName(n->dtype()), restrict_of(n), name));
    body_fields->push_back(params->back());
  }
  k = 0;
  for (const Node* n : region.outputs) {
    std::string name = absl::StrCat("out", k++);
    (*output_names)[n] = name;
    args->push_back({n->name(), n->dtype(), n->shape(), true});
    params->push_back(absl::StrCat(StorageTypeName(n->dtype()), restrict_of(n), name));
    body_fields->push_back(params->back());
  }
}

std::string NodeComment(const Node* n) {
  std::vector<std::string> ops;
  for (const Node* o : n->operands()) ops.push_back(o->name());
  std::string attrs = n->op() == OpKind::kConstant ? "" : n->attrs().ToString();
  // Shape-valued attributes (reshape/iota/broadcast_to) carry the batch extent: leave them out.
  if (n->op() == OpKind::kReshape || n->op() == OpKind::kBroadcastTo || n->op() == OpKind::kIota) attrs = "";
  return absl::StrCat(n->name(), " = ", OpName(n->op()), "(", absl::StrJoin(ops, ", "), ")",
                      attrs.empty() ? "" : " ", attrs, " : ", DTypeName(n->dtype()));
}

const Node* StoredValue(const Node* o) {
  if (o->op() != OpKind::kCast || (o->dtype() != DType::kF16 && o->dtype() != DType::kBF16)) return o;
  const Node* x = o->operand(0);
  return ComputeType(x->dtype()) == CType::kFloat ? x : o;
}

bool IsIndexRemapping(const Node* n) {
  switch (n->op()) {
    case OpKind::kReshape: case OpKind::kTranspose: case OpKind::kSlice: case OpKind::kConcat:
    case OpKind::kGather: case OpKind::kBroadcastTo: return true;
    default: return false;
  }
}

void FinishKernel(const std::string& kind_tag, const std::vector<std::string>& includes,
                  const std::vector<std::string>& comment, const KernelParams& launch,
                  const std::vector<std::string>& params, const std::string& body, const std::string& call,
                  KernelSource* out) {
  std::string text;
  for (const std::string& c : comment) absl::StrAppend(&text, "// ", c, "\n");
  for (const std::string& inc : includes) absl::StrAppend(&text, "#include \"", inc, "\"\n");
  // The pointer parameters are the Body's first members, in order.
  std::vector<std::string> pointers;
  for (const std::string& p : params) {
    if (p.find('*') == std::string::npos || p.find("scratch") != std::string::npos) continue;
    pointers.push_back(p.substr(p.rfind(' ') + 1));
  }
  const std::string bounds = launch.min_blocks > 0 ? absl::StrCat(launch.block_size, ", ", launch.min_blocks)
                                                  : absl::StrCat(launch.block_size);
  absl::StrAppend(&text, "\nstruct Body {\n", body, "};\n\nextern \"C\" __global__ void __launch_bounds__(",
                  bounds, ") KILN_KERNEL_NAME(\n    ", absl::StrJoin(params, ",\n    "),
                  ") {\n  const Body body{", absl::StrJoin(pointers, ", "), "};\n  ", call, "\n}\n");
  out->name = absl::StrCat("kiln_", kind_tag, "_", Hex64(Fnv1a64(text)));
  out->source = absl::StrReplaceAll(text, {{"KILN_KERNEL_NAME", out->name}});
}

}  // namespace kiln::codegen_internal
