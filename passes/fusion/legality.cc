#include "passes/fusion/legality.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace kiln {
namespace {

bool SwapsLastTwoAxes(const Node* n) {
  if (n->op() != OpKind::kTranspose) return false;
  const auto& perm = n->attrs().GetInts("perm");
  int64_t r = perm.size();
  for (int64_t i = 0; i + 2 < r; ++i) {
    if (perm[i] != i) return false;
  }
  return r >= 2 && perm[r - 2] == r - 1 && perm[r - 1] == r - 2;
}

const Node* FindMatmul(const Region& r) {
  for (const Node* n : r.nodes) {
    if (n->op() == OpKind::kMatmul) return n;
  }
  return nullptr;
}

}  // namespace

bool IsRowBias(const Shape& bias, const Shape& out) {
  if (bias.empty() || out.empty() || bias.size() > out.size() || bias.back() != out.back()) return false;
  for (size_t d = 0; d + 1 < bias.size(); ++d) {
    if (bias[d] != 1) return false;
  }
  return true;
}

namespace {

// A matmul region may carry, after its matmul, at most one bias add (operand broadcast over
// rows, shape [N]) and one residual add (same shape): cuBLASLt's EPILOGUE_BIAS and C with
// beta = 1. Nothing else.
FusionDecision MatmulEpilogue(const Region& merged) {
  const Node* mm = FindMatmul(merged);
  int bias = 0, residual = 0;
  for (const Node* n : merged.nodes) {
    if (n == mm) continue;
    if (n->op() == OpKind::kTranspose && SwapsLastTwoAxes(n)) continue;  // folded operand
    if (n->op() != OpKind::kAdd || n->shape() != mm->shape()) {
      return FusionDecision::Forbid(
          "matmul-epilogue", absl::StrCat("cuBLASLt epilogues cover a bias add and a residual add; ",
                                          OpName(n->op()), " ", n->name(), " is neither"));
    }
    const Node* other = merged.Contains(n->operand(0)) ? n->operand(1) : n->operand(0);
    if (merged.Contains(other)) {
      return FusionDecision::Forbid("matmul-epilogue", "an epilogue add must add a tensor read from memory");
    }
    if (other->shape() == n->shape()) {
      ++residual;
    } else if (IsRowBias(other->shape(), n->shape())) {
      ++bias;
    } else {
      return FusionDecision::Forbid("matmul-epilogue",
                                    absl::StrCat("operand ", other->name(), " ", ShapeToString(other->shape()),
                                                 " is neither a bias [N] nor a residual of the output shape"));
    }
  }
  if (bias > 1 || residual > 1) {
    return FusionDecision::Forbid("matmul-epilogue", "cuBLASLt takes one bias vector and one C matrix");
  }
  if (merged.outputs.size() != 1) {
    return FusionDecision::Forbid("matmul-epilogue",
                                  absl::StrCat("cuBLASLt writes one tensor; the merged region would write ",
                                               merged.outputs.size(), " (", merged.outputs[0]->name(), ", ",
                                               merged.outputs[1]->name(), ", ...: read elsewhere or graph outputs)"));
  }
  return FusionDecision::Allow("matmul-epilogue", "bias/residual add as a cuBLASLt epilogue");
}

// Every node of a row-reduction region must live in its row space [R x N]: row-shaped,
// per-row (R elements), broadcast into the row ([N], [1, N]), a reduction over that row
// space, or a final combine (a reduction of a per-row value to a scalar, and scalar work after it).
// (A matmul or attention never gets here: a region holding one has that kind.)
FusionDecision RowRegion(const Region& merged) {
  int64_t R = merged.rows, N = merged.row_length;
  for (const Node* n : merged.nodes) {
    if (n->op() == OpKind::kTranspose || n->op() == OpKind::kSlice || n->op() == OpKind::kConcat ||
        n->op() == OpKind::kGather) {
      return FusionDecision::Forbid("row-layout", absl::StrCat(OpName(n->op()), " ", n->name(),
                                                               " would reorder the row inside a row kernel"));
    }
    if (IsReduction(n)) {
      auto space = RowReductionSpace(n);
      bool combine = n->operand(0)->num_elements() == R && n->num_elements() == 1;
      if (combine) continue;
      if (!space || space->first != R || space->second != N) {
        return FusionDecision::Forbid(
            "row-space", absl::StrCat("reduction ", n->name(), " over ", ShapeToString(n->operand(0)->shape()),
                                      space ? "" : " (not innermost axes)", " does not share the row space [",
                                      R, " x ", N, "]"));
      }
      continue;
    }
    int64_t e = n->num_elements();
    if (e == R * N || e == R || e == 1 || BroadcastsTo(n->shape(), merged.space)) continue;
    return FusionDecision::Forbid(
        "row-space", absl::StrCat(n->name(), " ", ShapeToString(n->shape()), " is neither row-shaped, per-row nor",
                                  " broadcast into the row space [", R, " x ", N, "]"));
  }
  return FusionDecision::Allow("row-reduction", "prologue/epilogue in the row kernel's row space");
}

}  // namespace

FusionDecision CanMerge(const Region& p, const Region& c, const Region& merged) {
  // Library calls: matmul.
  if (p.kind == RegionKind::kMatmul && c.kind == RegionKind::kMatmul) {
    return FusionDecision::Forbid("matmul-matmul", "two matmuls are two cuBLASLt calls");
  }
  if (c.kind == RegionKind::kMatmul) {
    if (p.nodes.size() == 1 && SwapsLastTwoAxes(p.nodes[0]) && p.outputs.size() == 1 &&
        p.outputs[0]->users().size() == 1 && merged.outputs.size() == 1) {
      return FusionDecision::Allow("matmul-transpose", "transpose folded into cuBLASLt's operand op");
    }
    return FusionDecision::Forbid(
        "consumer-matmul", absl::StrCat("consumer is a matmul: cuBLASLt reads its operands from memory, so the ",
                                        RegionKindName(p.kind), " producer must be written anyway"));
  }
  if (p.kind == RegionKind::kMatmul) return MatmulEpilogue(merged);

  // Attention absorbs only data movement around it.
  if (p.kind == RegionKind::kAttention || c.kind == RegionKind::kAttention) {
    const Region& other = p.kind == RegionKind::kAttention ? c : p;
    bool layout_only = std::all_of(other.nodes.begin(), other.nodes.end(), [](const Node* n) {
      return n->op() == OpKind::kReshape || n->op() == OpKind::kTranspose || n->op() == OpKind::kSlice;
    });
    if (other.kind == RegionKind::kAttention) {
      return FusionDecision::Forbid("attention-attention", "two attentions are two kernels");
    }
    if (!layout_only) {
      return FusionDecision::Forbid(
          "attention-compute", absl::StrCat("attention absorbs only reshape/transpose/slice; the ",
                                            RegionKindName(other.kind), " region computes"));
    }
    return FusionDecision::Allow("attention-layout", p.kind == RegionKind::kAttention
                                                         ? "folded into attention's strided store"
                                                         : "folded into attention's strided loads");
  }

  switch (merged.kind) {
    case RegionKind::kRowReduction: return RowRegion(merged);
    case RegionKind::kOtherReduction: {
      int reductions = 0;
      for (const Node* n : merged.nodes) reductions += IsReduction(n);
      if (reductions > 1) {
        return FusionDecision::Forbid("other-reduction",
                                      "a non-innermost reduction fuses with pointwise work only, not another reduction");
      }
      return FusionDecision::Allow("other-reduction", "pointwise prologue/epilogue of a column reduction");
    }
    default: break;
  }
  // Pointwise, layout and views: one iteration space; everything broadcasts into it. A
  // producer of a smaller shape is recomputed per element, so it must not also be written.
  for (const Node* n : merged.nodes) {
    if (!BroadcastsTo(n->shape(), merged.space) && n->num_elements() != NumElements(merged.space)) {
      return FusionDecision::Forbid("pointwise-space",
                                    absl::StrCat(n->name(), " ", ShapeToString(n->shape()),
                                                 " does not fit the iteration space ", ShapeToString(merged.space)));
    }
  }
  for (const Node* out : merged.outputs) {
    if (out->num_elements() != NumElements(merged.space) && out->num_elements() != 1) {
      return FusionDecision::Forbid(
          "broadcast-output", absl::StrCat(out->name(), " ", ShapeToString(out->shape()),
                                           " is smaller than the iteration space ", ShapeToString(merged.space),
                                           " and is read elsewhere: it would be written from a broadcast loop"));
    }
  }
  return FusionDecision::Allow("pointwise", "one elementwise loop");
}

}  // namespace kiln
