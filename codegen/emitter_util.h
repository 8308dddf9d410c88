// Internal helpers shared by the emitters (codegen/emit_*.cc): a code writer with nested
// scopes and a per-scope memo (a value computed in an outer scope is reused inside, a value
// computed inside is forgotten when its scope closes), and row-major index arithmetic
// emitted as C expressions over 64-bit linear indices.
#ifndef KILN_CODEGEN_EMITTER_UTIL_H_
#define KILN_CODEGEN_EMITTER_UTIL_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/kernel_source.h"
#include "codegen/pointwise_expr.h"
#include "ir/graph.h"
#include "passes/fusion/region.h"

namespace kiln::codegen_internal {

class CodeWriter {
 public:
  explicit CodeWriter(int indent = 1) : indent_(indent) { memo_.emplace_back(); }
  void Line(const std::string& text);
  // Writes "header {" and opens a scope; Close() writes "}" and forgets the scope's memo.
  void Open(const std::string& header);
  void Close();
  // A fresh identifier "prefix<N>".
  std::string Fresh(const std::string& prefix);
  const std::string* Lookup(const std::string& key) const;
  void Remember(const std::string& key, const std::string& value);
  const std::string& text() const { return text_; }
  int depth() const { return static_cast<int>(memo_.size()); }

 private:
  int indent_;
  std::string text_;
  std::vector<std::map<std::string, std::string>> memo_;
  std::map<std::string, int> counters_;
};

// "((idx / stride) % extent)" with the trivial parts left out; `suffix` types the constants
// ("u" where idx is an unsigned 32-bit index).
std::string Coord(const std::string& idx, int64_t stride, int64_t extent, bool outermost, const char* suffix = "LL");
// The linear index in `to` (which numpy-broadcasts to `from`) of element `idx` of `from`.
std::string BroadcastIndex(const Shape& from, const Shape& to, const std::string& idx);
// "a + b + c" of the non-empty, non-"0" terms ("0" if none).
std::string SumTerms(const std::vector<std::string>& terms);
// "x * k" with k == 1 and k == 0 simplified.
std::string Scale(const std::string& x, int64_t k);

// The kernel's pointer parameters and args for `region` (inputs then outputs), named
// "in<k>" / "out<k>" (recorded in the name maps), and the same pointers as members of the
// generated Body ("const __nv_bfloat16* __restrict__ in0"). The tensors in `shared` (an
// input and the output that may be written over it, KernelSource::in_place) are declared
// without __restrict__: their pointers may be equal.
void PointerParams(const Region& region, std::vector<KernelArg>* args, std::vector<std::string>* params,
                   std::vector<std::string>* body_fields, std::map<const Node*, std::string>* input_names,
                   std::map<const Node*, std::string>* output_names, const std::set<const Node*>& shared = {});

// Joins the pieces of a kernel's translation unit: a header comment, #includes, `struct Body
// { body }` (the generated fused expressions; its first members are the pointer fields, in
// parameter order, so it is built by aggregate initialisation), and the extern "C" entry
//   extern "C" __global__ void __launch_bounds__(B[, min blocks per SM]) kiln_<tag>_<hash>(params) {
//     const Body body{<the pointer parameters>};
//     <call>                       e.g. kiln::RowKernel<Body, kiln::RowShape<...>>(body, count, scratch);
//   }
// named by the hash of everything else.
void FinishKernel(const std::string& kind_tag, const std::vector<std::string>& includes,
                  const std::vector<std::string>& comment, const KernelParams& launch,
                  const std::vector<std::string>& params, const std::string& body, const std::string& call,
                  KernelSource* out);

// The node's line for the header comment: "name = op(a, b)" (no shapes: the batch extent must
// not change the source).
std::string NodeComment(const Node* n);

// The node whose value a store of output `o` narrows: the operand of `o` where `o` is a cast to
// f16 or bf16 of a value computed in float (FromCompute rounds that operand exactly as the cast
// does, so the store skips the cast's round trip: two conversions per element), else `o`.
const Node* StoredValue(const Node* o);

// Whether `n` (a region member) is an op the elementwise emitters handle.
bool IsIndexRemapping(const Node* n);

}  // namespace kiln::codegen_internal

#endif  // KILN_CODEGEN_EMITTER_UTIL_H_
