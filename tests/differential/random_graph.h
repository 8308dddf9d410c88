// RandomGraph: valid random kiln graphs over the whole op table, for differential testing
// (tests/differential/graph_diff_main.cc, docs/testing.md): pointwise chains with numpy
// broadcasting, reductions over random axes, softmax and the norms over any axis,
// cross_entropy, dropout, layouts (reshape, transpose, slice, concat, gather, broadcast_to),
// matmul and attention, in f32, f16 and bf16, on shapes with 1s, odd and long extents.
//
// Every op is proposed with random operands and attributes and then built through
// Graph::AddNode, whose checks are the only judge of validity. The generator keeps each
// value's magnitude small and its domain legal, so that a difference between kiln and the
// interpreter is a bug and not the conditioning of the graph:
//   * every value carries a bound on |x|; one over 2 is scaled by a power of two (exact);
//   * log, sqrt, rsqrt, reciprocal, div and pow see abs(x) + 0.5, exp sees |x| <= 2;
//   * comparisons, and float -> int casts, read only "exact" values (inputs and what
//     layouts, neg, abs, max/min and casts make of them), which the GPU and the interpreter
//     compute bit for bit, so a branch never flips on a rounding difference.
// The graph is a pure function of (seed, options): the same seed with fewer `ops` gives the
// first `ops` ops of the same graph, which is how a failure is minimised (bisection on ops).
// The graph's outputs are every value no op reads, plus some that are read.
#ifndef KILN_TESTS_DIFFERENTIAL_RANDOM_GRAPH_H_
#define KILN_TESTS_DIFFERENTIAL_RANDOM_GRAPH_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace kiln {

struct RandomGraphOptions {
  int ops = 8;                     // ops drawn (the fuel; leaves and taming ops are not counted)
  int64_t max_elements = 1 << 16;  // per tensor; a few "long row" shapes go up to 4x this
  bool matmul = true;              // false: no matmul and no attention (which may lower to
                                   // matmuls): compute-sanitizer initcheck does not see
                                   // cuBLASLt's stores, so it flags every read of their output
};

// The number of ops a seed's graph gets when the driver does not say: 1 to 12.
int DefaultOpsForSeed(uint64_t seed);

absl::StatusOr<std::unique_ptr<Graph>> RandomGraph(uint64_t seed, const RandomGraphOptions& options);

}  // namespace kiln

#endif  // KILN_TESTS_DIFFERENTIAL_RANDOM_GRAPH_H_
