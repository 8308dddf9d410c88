// Private to the reference interpreter (ir/interpreter*.cc): the one indexing helper that
// every op uses (a row-major walk over an output shape that keeps each operand's element
// offset current through per-dimension strides, 0 where an operand is broadcast), the
// row-parallel loop, and the per-family evaluators that Interpret() dispatches to.
#ifndef KILN_IR_INTERPRETER_INTERNAL_H_
#define KILN_IR_INTERPRETER_INTERNAL_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln::interp {

// Strides (in elements) of `operand` viewed as a tensor of shape `out` under numpy
// broadcasting: one entry per dimension of `out`, 0 where the operand has extent 1 or lacks
// the dimension. `operand` must broadcast to `out`.
std::vector<int64_t> BroadcastStrides(const Shape& operand, const Shape& out);

// Walks the row-major indices of `shape` and keeps, for each of several operands, the element
// offset base_k + sum_d index[d] * strides_k[d]. Broadcasting, transposes, slices, reductions
// (the output viewed from the input with stride 0 on reduced axes) and batch dimensions are
// all expressed as strides for this one walker.
class IndexWalker {
 public:
  IndexWalker(const Shape& shape, std::vector<std::vector<int64_t>> strides,
              std::vector<int64_t> bases = {});
  // Positions the walker at row-major index `linear` of `shape`.
  void Seek(int64_t linear);
  // Advances to the next row-major index.
  void Next();
  int64_t offset(int k) const { return offsets_[k]; }

 private:
  Shape shape_;
  std::vector<std::vector<int64_t>> strides_;
  std::vector<int64_t> bases_;
  std::vector<int64_t> index_;
  std::vector<int64_t> offsets_;
};

// Runs fn(begin, end) over [0, n) split into contiguous chunks, one per worker
// (std::thread::hardware_concurrency()), using threads only when n >= 2 * grain. Chunks are
// disjoint, so writes to distinct output elements need no locking; results never depend on
// the number of workers.
void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Evaluators. `args` are the operand values in operand order; the result has node.dtype()
// and node.shape(). Errors are about the data (an index out of range) and do not name the
// node; Interpret() adds that.
absl::StatusOr<Tensor> EvalPointwise(const Node& node, const std::vector<const Tensor*>& args);
absl::StatusOr<Tensor> EvalReduction(const Node& node, const Tensor& x);
absl::StatusOr<Tensor> EvalLayout(const Node& node, const std::vector<const Tensor*>& args);
absl::StatusOr<Tensor> EvalMatmul(const Node& node, const Tensor& a, const Tensor& b);
absl::StatusOr<Tensor> EvalNormalization(const Node& node, const std::vector<const Tensor*>& args);
absl::StatusOr<Tensor> EvalCrossEntropy(const Node& node, const Tensor& logits,
                                        const Tensor& targets);
// attention, and attention_lse (no v; the log-sum-exp of each row's scores).
absl::StatusOr<Tensor> EvalAttention(const Node& node, const std::vector<const Tensor*>& args);
absl::StatusOr<Tensor> EvalDropout(const Node& node, const std::vector<const Tensor*>& args);

}  // namespace kiln::interp

#endif  // KILN_IR_INTERPRETER_INTERNAL_H_
