// Graphs of Linear layers with constant (random) weights, for the compile and GPU tests of
// horizontal_matmul and of the matmul relu epilogue: every weight is an initializer, as in an
// exported model, so the pass may join them.
#ifndef KILN_TESTS_RUNTIME_LINEAR_GRAPHS_H_
#define KILN_TESTS_RUNTIME_LINEAR_GRAPHS_H_

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/base/status.h"

namespace kiln::testing {

class LinearGraphBuilder {
 public:
  LinearGraphBuilder(const std::string& name, DType dtype) : g_(std::make_unique<Graph>(name)), dtype_(dtype) {}
  Node* Input(const std::string& name, Shape shape) { return Check(g_->AddInput(name, dtype_, std::move(shape))); }
  // Uniform in (-1, 1) / sqrt(rows): outputs of order one for inputs of order one.
  Node* Weight(const std::string& name, Shape shape) {
    Tensor t(dtype_, shape);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    const double scale = 1.0 / std::sqrt(static_cast<double>(shape.front()));
    for (int64_t i = 0; i < t.num_elements(); ++i) t.SetF64(i, u(rng_) * scale);
    return Check(g_->AddConstant(name, std::move(t)));
  }
  Node* Zero(const std::string& name) { return Check(g_->AddConstant(name, Tensor(dtype_, {}))); }
  Node* Op(const std::string& name, OpKind op, std::vector<Node*> operands, Attributes attrs = {}) {
    return Check(g_->AddNode(op, std::move(operands), std::move(attrs), name));
  }
  // y = x @ W + b, W [K, N] (b when `bias`).
  Node* Linear(const std::string& name, Node* x, int64_t n, bool bias = true) {
    const int64_t k = x->shape().back();
    Node* mm = Op(bias ? name + "_mm" : name, OpKind::kMatmul, {x, Weight("w_" + name, {k, n})});
    return bias ? Op(name, OpKind::kAdd, {mm, Weight("b_" + name, {n})}) : mm;
  }
  std::unique_ptr<Graph> Return(const std::vector<Node*>& outputs) {
    for (Node* n : outputs) KILN_CHECK_OK(g_->AddOutput(n));
    return std::move(g_);
  }

 private:
  static Node* Check(absl::StatusOr<Node*> n) {
    KILN_CHECK(n.ok()) << n.status();
    return *n;
  }
  std::unique_ptr<Graph> g_;
  DType dtype_;
  std::mt19937 rng_{1234};
};

// out = q * k + v with q, k, v three Linear layers of one tanh'd input [rows, k] (N each).
inline std::unique_ptr<Graph> QkvPointwise(DType dtype, int64_t rows, int64_t k, int64_t n) {
  LinearGraphBuilder b("qkv_pointwise", dtype);
  Node* h = b.Op("h", OpKind::kTanh, {b.Input("x", {rows, k})});
  Node* q = b.Linear("q", h, n);
  Node* kk = b.Linear("k", h, n);
  Node* v = b.Linear("v", h, n);
  return b.Return({b.Op("out", OpKind::kAdd, {b.Op("qk", OpKind::kMul, {q, kk}), v})});
}

// Causal self-attention whose q, k, v are three Linear layers of x [1, seq, heads * 64], then
// the output projection: the attention reads slices of the joined projection.
inline std::unique_ptr<Graph> QkvAttention(DType dtype, int64_t seq, int64_t heads) {
  LinearGraphBuilder b("qkv_attention", dtype);
  const int64_t d = heads * 64;
  Node* x = b.Input("x", {1, seq, d});
  std::vector<Node*> qkv;
  for (const char* p : {"q", "k", "v"}) {
    Node* y = b.Linear(p, x, d);
    Node* r = b.Op(std::string(p) + "_4d", OpKind::kReshape, {y}, {{"shape", std::vector<int64_t>{1, seq, heads, 64}}});
    qkv.push_back(b.Op(std::string(p) + "_h", OpKind::kTranspose, {r}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}));
  }
  Node* a = b.Op("attn", OpKind::kAttention, qkv, {{"causal", true}});
  Node* t = b.Op("attn_t", OpKind::kTranspose, {a}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  Node* flat = b.Op("attn_2d", OpKind::kReshape, {t}, {{"shape", std::vector<int64_t>{1, seq, d}}});
  return b.Return({b.Linear("o", flat, d)});
}

// SwiGLU: down(silu(gate(x)) * up(x)), no biases; n = the hidden width.
inline std::unique_ptr<Graph> SwigluMlp(DType dtype, int64_t rows, int64_t k, int64_t n) {
  LinearGraphBuilder b("swiglu_mlp", dtype);
  Node* x = b.Input("x", {rows, k});
  Node* gate = b.Linear("gate", x, n, false);
  Node* up = b.Linear("up", x, n, false);
  Node* act = b.Op("act", OpKind::kMul, {b.Op("s", OpKind::kSilu, {gate}), up});
  return b.Return({b.Linear("down", act, k, false)});
}

// relu(x @ W + b), written as relu or (relu = false) as maximum(t, 0).
inline std::unique_ptr<Graph> BiasRelu(DType dtype, int64_t rows, int64_t k, int64_t n, bool relu_op) {
  LinearGraphBuilder b("bias_relu", dtype);
  Node* t = b.Linear("fc", b.Input("x", {rows, k}), n);
  if (relu_op) return b.Return({b.Op("y", OpKind::kRelu, {t})});
  return b.Return({b.Op("y", OpKind::kMaximum, {t, b.Zero("zero")})});
}

// rms_norm(x, w) @ W over x [batch.., rows, k] (every tensor a graph input), W [k, n] or, when
// `transposed`, [n, k] read through a transpose; then + bias [n], + residual and gelu_tanh as
// asked: the norm_matmul kind's graphs.
struct NormLinearOptions {
  std::vector<int64_t> batch;
  bool transposed = false, bias = false, residual = false, gelu = false;
  bool layer = false;  // layer_norm(x, w, b) instead of rms_norm(x, w)
};
inline std::unique_ptr<Graph> NormLinear(int64_t rows, int64_t k, int64_t n, const NormLinearOptions& o = {}) {
  LinearGraphBuilder b("norm_linear", DType::kBF16);
  Shape xs = o.batch;
  xs.push_back(rows);
  xs.push_back(k);
  Node* y = o.layer ? b.Op("y", OpKind::kLayerNorm, {b.Input("x", xs), b.Input("w", {k}), b.Input("b", {k})},
                           {{"axis", int64_t{-1}}, {"eps", 1e-5}})
                    : b.Op("y", OpKind::kRmsNorm, {b.Input("x", xs), b.Input("w", {k})}, {{"axis", int64_t{-1}}, {"eps", 1e-6}});
  Node* w = o.transposed ? b.Op("wt", OpKind::kTranspose, {b.Input("W", {n, k})}, {{"perm", std::vector<int64_t>{1, 0}}})
                         : b.Input("W", {k, n});
  Node* z = b.Op("z", OpKind::kMatmul, {y, w});
  Shape zs = z->shape();
  if (o.bias) z = b.Op("zb", OpKind::kAdd, {z, b.Input("bias", {n})});
  if (o.residual) z = b.Op("zr", OpKind::kAdd, {z, b.Input("res", zs)});
  if (o.gelu) z = b.Op("zg", OpKind::kGeluTanh, {z});
  return b.Return({z});
}

}  // namespace kiln::testing

#endif  // KILN_TESTS_RUNTIME_LINEAR_GRAPHS_H_
