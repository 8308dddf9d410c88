// The op table's CUDA emitter: one expression per pointwise op (and dropout/dropout_grad via
// kiln_philox.cuh), built from the operands' expressions. Arithmetic is in the node's compute
// type: f32 for f32/f16/bf16 (intermediates are NOT rounded to f16/bf16; only an explicit
// cast and the final store round), int64 for i32/i64 (wrapping; an i32 result is wrapped to
// 32 bits), bool for bool. tests/codegen/pointwise_expr_test.cc walks ops.def and fails if a
// pointwise or random op has no emitter.
#ifndef KILN_CODEGEN_POINTWISE_EXPR_H_
#define KILN_CODEGEN_POINTWISE_EXPR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace kiln {

enum class CType { kFloat, kInt, kBool };

// The type a value of `dtype` is computed in, and its C spelling ("float", "long long", "bool").
CType ComputeType(DType dtype);
const char* CTypeName(CType type);
// The C storage type of `dtype` ("__nv_bfloat16", "unsigned char", ...).
const char* StorageTypeName(DType dtype);

// A C expression and the type it has.
struct TypedExpr {
  std::string code;
  CType type = CType::kFloat;
};

// `e` converted to `to` (float <-> int as C does, bool from x != 0; float -> int here is a
// plain C conversion: only the cast op saturates).
TypedExpr Coerce(const TypedExpr& e, CType to);

// An exact f32 literal: hexfloat ("0x1.8p+0f") or kiln::kInfF() / kNegInfF() / kNaNF().
std::string FloatLiteral(float value);
// An exact int64 literal ("-9223372036854775807LL - 1" for the minimum).
std::string IntLiteral(int64_t value);
// The value of a one-element constant node as a literal in its compute type.
absl::StatusOr<TypedExpr> ConstantLiteral(const Node& constant);

// The CUDA expression of pointwise/random node `node` given its operands' expressions (already
// indexed for this element) and `index`, a C expression of the node's own row-major element
// index (used by iota and dropout). The result has type ComputeType(node.dtype()).
absl::StatusOr<TypedExpr> EmitPointwiseExpr(const Node& node, const std::vector<TypedExpr>& operands,
                                            const std::string& index);

// Dropout with one Philox call shared by 4 consecutive elements (docs/dropout.md: elements
// 4g..4g+3 take words 0..3 of group g). For a dropout node with 0 < p < 1 returns the
// expression of the words of group `group_index` (a C expression of the node's element index
// >> 2) in *words, and the element's value given the variable `words_var` holding them and
// its `lane` = index & 3. Returns nullopt-like empty words when p is 0 or 1 (no Philox call:
// use EmitPointwiseExpr).
struct DropoutPieces {
  std::string words;  // "kiln::DropoutWords(seed, offset, group)", empty if no call is needed
  TypedExpr value;    // uses `words_var`
};
absl::StatusOr<DropoutPieces> EmitDropoutShared(const Node& node, const std::vector<TypedExpr>& operands,
                                                const std::string& group_index, const std::string& words_var,
                                                int lane);

// True for ops EmitPointwiseExpr handles (the pointwise and random categories).
bool HasPointwiseEmitter(OpKind op);

}  // namespace kiln

#endif  // KILN_CODEGEN_POINTWISE_EXPR_H_
