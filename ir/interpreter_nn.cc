// The reference interpreter's heavy ops: matmul, softmax/log_softmax, layer_norm, rms_norm,
// cross_entropy, attention and dropout. All accumulate in double in a fixed order (so
// results do not depend on the thread count) and are row-parallel, because the oracle must
// evaluate whole GPT blocks and [4096, 128256] logits on a small CPU. Whole tensors are never
// converted to double; only a row, a matmul panel or one attention head's K and V are.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "ir/base/status.h"
#include "ir/interpreter_internal.h"
#include "ir/philox.h"

namespace kiln::interp {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The batch walk shared by matmul and attention: for batch index b of `batch` (a prefix
// shape), the element offsets of each operand's [rows, cols] matrix.
IndexWalker BatchWalker(const Shape& batch, const std::vector<const Tensor*>& operands) {
  std::vector<std::vector<int64_t>> strides;
  for (const Tensor* t : operands) {
    const Shape& s = t->shape();
    Shape own(s.begin(), s.end() - 2);
    std::vector<int64_t> st = BroadcastStrides(own, batch);
    for (int64_t& v : st) v *= s[s.size() - 2] * s.back();
    strides.push_back(std::move(st));
  }
  return IndexWalker(batch, strides);
}

int64_t RoundUp4(int64_t n) { return (n + 3) / 4 * 4; }

// y[0, n) += a * x[0, n) for n a multiple of 4, written four-wide so that -O2 vectorises it
// (mul then add, never a fused multiply-add, so results are the same on every x86-64).
inline void Axpy4(int64_t n, double a, const double* __restrict x, double* __restrict y) {
  for (int64_t j = 0; j < n; j += 4) {
    y[j] += a * x[j];
    y[j + 1] += a * x[j + 1];
    y[j + 2] += a * x[j + 2];
    y[j + 3] += a * x[j + 3];
  }
}

// ---- matmul ----------------------------------------------------------------------------

constexpr int64_t kPanel = 128;  // columns of B converted to double at a time
constexpr int64_t kRowBlock = 4;  // rows of A that share each load of a B panel row

// Float matmul: rows of all batches are split across workers; each worker converts a block
// of A rows and a zero-padded K x kPanel panel of B to double, then accumulates
// acc[j] += a[k] * b[k][j] over k = 0, 1, ... in order (so each output is one fixed-order
// double sum, whatever the blocking or thread count).
void MatmulFloat(const Tensor& a, const Tensor& b, Tensor& out, const Shape& batch, int64_t m,
                 int64_t k, int64_t n) {
  const int64_t batches = NumElements(batch);
  const int64_t a_block = std::clamp<int64_t>((int64_t{1} << 21) / std::max<int64_t>(k, 1), 1, 64);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(k * n, 1));
  ParallelFor(batches * m, grain, [&](int64_t begin, int64_t end) {
    IndexWalker walker = BatchWalker(batch, {&a, &b});
    std::vector<double> a_rows(a_block * k), panel(k * kPanel), acc(kRowBlock * kPanel);
    for (int64_t row = begin; row < end;) {
      const int64_t bi = row / m, i0 = row % m;
      const int64_t i1 = std::min({m, i0 + a_block, i0 + (end - row)});
      walker.Seek(bi);
      const int64_t a_base = walker.offset(0) + i0 * k, b_base = walker.offset(1);
      const int64_t rows = i1 - i0;
      for (int64_t r = 0; r < rows * k; ++r) a_rows[r] = a.GetF64(a_base + r);
      for (int64_t j0 = 0; j0 < n; j0 += kPanel) {
        const int64_t nb = std::min(kPanel, n - j0);
        for (int64_t kk = 0; kk < k; ++kk) {
          double* p = &panel[kk * kPanel];
          for (int64_t j = 0; j < nb; ++j) p[j] = b.GetF64(b_base + kk * n + j0 + j);
          for (int64_t j = nb; j < kPanel; ++j) p[j] = 0.0;
        }
        for (int64_t r0 = 0; r0 < rows; r0 += kRowBlock) {
          const int64_t rb = std::min(kRowBlock, rows - r0);
          std::fill(acc.begin(), acc.end(), 0.0);
          double* __restrict acc0 = &acc[0 * kPanel];
          double* __restrict acc1 = &acc[1 * kPanel];
          double* __restrict acc2 = &acc[2 * kPanel];
          double* __restrict acc3 = &acc[3 * kPanel];
          const double* ar = &a_rows[r0 * k];
          for (int64_t kk = 0; kk < k; ++kk) {
            const double* __restrict p = &panel[kk * kPanel];
            const double x0 = ar[kk];
            const double x1 = rb > 1 ? ar[k + kk] : 0.0;
            const double x2 = rb > 2 ? ar[2 * k + kk] : 0.0;
            const double x3 = rb > 3 ? ar[3 * k + kk] : 0.0;
            for (int64_t j = 0; j < kPanel; ++j) {
              const double v = p[j];
              acc0[j] += x0 * v;
              acc1[j] += x1 * v;
              acc2[j] += x2 * v;
              acc3[j] += x3 * v;
            }
          }
          for (int64_t r = 0; r < rb; ++r) {
            const int64_t o = (bi * m + i0 + r0 + r) * n + j0;
            for (int64_t j = 0; j < nb; ++j) out.SetF64(o + j, acc[r * kPanel + j]);
          }
        }
      }
      row += rows;
    }
  });
}

// Integer matmul: exact, wrapping int64 sums.
void MatmulInt(const Tensor& a, const Tensor& b, Tensor& out, const Shape& batch, int64_t m,
               int64_t k, int64_t n) {
  ParallelFor(NumElements(batch) * m, 16, [&](int64_t begin, int64_t end) {
    IndexWalker walker = BatchWalker(batch, {&a, &b});
    std::vector<uint64_t> acc(n);
    for (int64_t row = begin; row < end; ++row) {
      walker.Seek(row / m);
      const int64_t i = row % m, a_base = walker.offset(0) + i * k, b_base = walker.offset(1);
      std::fill(acc.begin(), acc.end(), 0);
      for (int64_t kk = 0; kk < k; ++kk) {
        uint64_t x = static_cast<uint64_t>(a.GetI64(a_base + kk));
        for (int64_t j = 0; j < n; ++j) acc[j] += x * static_cast<uint64_t>(b.GetI64(b_base + kk * n + j));
      }
      for (int64_t j = 0; j < n; ++j) out.SetI64(row * n + j, static_cast<int64_t>(acc[j]));
    }
  });
}

}  // namespace

absl::StatusOr<Tensor> EvalMatmul(const Node& node, const Tensor& a, const Tensor& b) {
  const Shape& os = node.shape();
  Shape batch(os.begin(), os.end() - 2);
  const int64_t m = os[os.size() - 2], n = os.back(), k = a.shape().back();
  Tensor out(node.dtype(), os);
  if (IsInteger(a.dtype())) MatmulInt(a, b, out, batch, m, k, n);
  else MatmulFloat(a, b, out, batch, m, k, n);
  return out;
}

// ---- softmax, log_softmax, layer_norm, rms_norm ----------------------------------------

namespace {

// Values of `param` (broadcasting to `trailing`) in the row-major order of `trailing`.
std::vector<double> TrailingValues(const Tensor& param, const Shape& trailing) {
  std::vector<double> values(NumElements(trailing));
  IndexWalker walker(trailing, {BroadcastStrides(param.shape(), trailing)});
  for (size_t j = 0; j < values.size(); ++j, walker.Next()) values[j] = param.GetF64(walker.offset(0));
  return values;
}

// Softmax and log_softmax along one axis. A row is (outer o, inner in): elements
// o * len * inner + in + t * inner for t < len. NaN and all -inf rows come out NaN naturally
// (x - max is NaN), as in torch.
Tensor SoftmaxAlongAxis(const Node& node, const Tensor& x) {
  const Shape& s = x.shape();
  const int64_t rank = s.size();
  int64_t axis = node.attrs().GetInt("axis");
  if (axis < 0) axis += rank;
  const int64_t len = s[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= s[d];
  const bool log = node.op() == OpKind::kLogSoftmax;
  Tensor out(node.dtype(), s);
  ParallelFor(outer * inner, std::max<int64_t>(1, 8192 / std::max<int64_t>(len, 1)),
              [&](int64_t begin, int64_t end) {
    std::vector<double> row(len);
    for (int64_t r = begin; r < end; ++r) {
      const int64_t base = (r / inner) * len * inner + r % inner;
      double mx = -kInf;
      for (int64_t t = 0; t < len; ++t) {
        row[t] = x.GetF64(base + t * inner);
        if (row[t] > mx) mx = row[t];
      }
      double sum = 0;
      for (int64_t t = 0; t < len; ++t) {
        const double e = std::exp(row[t] - mx);
        sum += e;
        if (!log) row[t] = e;
      }
      const double log_sum = std::log(sum);
      for (int64_t t = 0; t < len; ++t) {
        out.SetF64(base + t * inner, log ? row[t] - mx - log_sum : row[t] / sum);
      }
    }
  });
  return out;
}

// layer_norm and rms_norm over the trailing axes [axis, rank), which are contiguous rows.
// layer_norm's variance is biased and two-pass (mean first, then mean of (x - mean)^2), all
// in double. Values stored in f32/f16/bf16 sum exactly in double (rows below 2^29 elements),
// so a constant row has mean == x exactly, x - mean == 0 and the output is the bias (or 0).
Tensor Norm(const Node& node, const std::vector<const Tensor*>& args) {
  const Tensor& x = *args[0];
  const Shape& s = x.shape();
  const int64_t rank = s.size();
  int64_t axis = node.attrs().GetInt("axis");
  if (axis < 0) axis += rank;
  const Shape trailing(s.begin() + axis, s.end());
  const int64_t len = NumElements(trailing), rows = NumElements(Shape(s.begin(), s.begin() + axis));
  const double eps = node.attrs().GetFloat("eps");
  const bool layer = node.op() == OpKind::kLayerNorm;
  std::vector<double> w, b;
  if (args.size() > 1) w = TrailingValues(*args[1], trailing);
  if (args.size() > 2) b = TrailingValues(*args[2], trailing);
  Tensor out(node.dtype(), s);
  ParallelFor(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(len, 1)),
              [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t base = r * len;
      double mean = 0, denom;
      if (layer) {
        double sum = 0;
        for (int64_t j = 0; j < len; ++j) sum += x.GetF64(base + j);
        mean = sum / len;
        double sq = 0;
        for (int64_t j = 0; j < len; ++j) {
          double d = x.GetF64(base + j) - mean;
          sq += d * d;
        }
        denom = std::sqrt(sq / len + eps);
      } else {
        double sq = 0;
        for (int64_t j = 0; j < len; ++j) {
          double v = x.GetF64(base + j);
          sq += v * v;
        }
        denom = std::sqrt(sq / len + eps);
      }
      for (int64_t j = 0; j < len; ++j) {
        double y = (x.GetF64(base + j) - mean) / denom;
        if (!w.empty()) y *= w[j];
        if (!b.empty()) y += b[j];
        out.SetF64(base + j, y);
      }
    }
  });
  return out;
}

}  // namespace

absl::StatusOr<Tensor> EvalNormalization(const Node& node, const std::vector<const Tensor*>& args) {
  switch (node.op()) {
    case OpKind::kSoftmax: case OpKind::kLogSoftmax: return SoftmaxAlongAxis(node, *args[0]);
    case OpKind::kLayerNorm: case OpKind::kRmsNorm: return Norm(node, args);
    default:
      KILN_CHECK(false) << "not a normalisation: " << OpName(node.op());
      return absl::InternalError("unreachable");
  }
}

// ---- cross_entropy ----------------------------------------------------------------------

// l_r = logsumexp(x_r) - x_r[t_r] per row r of the last axis; 0 for rows whose target is
// ignore_index. reduction "mean" divides the sum by the number of non-ignored rows; when
// every row is ignored that is 0 / 0 = NaN, which is what torch returns, and we keep it
// rather than invent a value. Any other target outside [0, C) is an error naming the row.
absl::StatusOr<Tensor> EvalCrossEntropy(const Node& node, const Tensor& logits, const Tensor& targets) {
  const int64_t classes = logits.shape().back();
  const int64_t rows = targets.num_elements();
  const int64_t ignore = node.attrs().GetInt("ignore_index");
  for (int64_t r = 0; r < rows; ++r) {
    int64_t t = targets.GetI64(r);
    if (t != ignore && (t < 0 || t >= classes)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cross_entropy target ", t, " at row ", r, " is outside [0, ", classes,
          ") and is not ignore_index (", ignore, ")"));
    }
  }
  std::vector<double> loss(rows, 0.0);
  ParallelFor(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(classes, 1)),
              [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t t = targets.GetI64(r);
      if (t == ignore) continue;
      const int64_t base = r * classes;
      double mx = -kInf;
      for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, logits.GetF64(base + c));
      double sum = 0;
      for (int64_t c = 0; c < classes; ++c) sum += std::exp(logits.GetF64(base + c) - mx);
      loss[r] = mx + std::log(sum) - logits.GetF64(base + t);
    }
  });
  Tensor out(node.dtype(), node.shape());
  const std::string& reduction = node.attrs().GetString("reduction");
  if (reduction == "none") {
    for (int64_t r = 0; r < rows; ++r) out.SetF64(r, loss[r]);
    return out;
  }
  double sum = 0;
  int64_t counted = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (targets.GetI64(r) == ignore) continue;
    sum += loss[r];
    ++counted;
  }
  out.SetF64(0, reduction == "sum" ? sum : sum / static_cast<double>(counted));
  return out;
}

// ---- attention --------------------------------------------------------------------------

// For each batch and query row i: s_j = (q_i . k_j) * scale + mask[i, j], with s_j = -inf for
// j > i when causal (top-left aligned); p = softmax(s) in double; y_i = sum_j p_j v_j. A row
// whose scores are all -inf (fully masked) outputs zeros: FlashAttention's convention, which
// avoids NaN (plain softmax would give 0 / 0). With a dropout, y_i = sum_j keep_ij p_j s v_j:
// the sum normalising p counts every key, dropped or not (dropout after softmax).
// attention_lse (no v) gives each row's log-sum-exp, mx + ln(sum_j e^(s_j - mx)), and +inf for
// a fully masked row (so that a backward's e^(s - lse) is 0 there, as in FlashAttention). Rows
// are split across workers; each worker holds one head's K (transposed) and V in double.
absl::StatusOr<Tensor> EvalAttention(const Node& node, const std::vector<const Tensor*>& args) {
  const bool lse = node.op() == OpKind::kAttentionLse;
  const Tensor &q = *args[0], &k = *args[1];
  const Tensor* v = lse ? nullptr : args[2];
  const AttentionArgs which = AttentionArgsOf(node);
  const Tensor* mask = which.mask >= 0 ? args[which.mask] : nullptr;
  // Dropout on the probabilities (docs/dropout.md): element i = (bi S + i) T + j of the
  // [.., S, T] probabilities is kept iff DropoutKeep; kept ones scaled by the float DropoutScale.
  const double drop_p = lse ? 0.0 : node.attrs().GetFloat("dropout");
  const uint64_t seed = drop_p == 0 ? 0
                        : static_cast<uint64_t>(which.seed >= 0 ? args[which.seed]->GetI64(0) : node.attrs().GetInt("seed"));
  const uint64_t offset = drop_p == 0 ? 0
                          : static_cast<uint64_t>(which.offset >= 0 ? args[which.offset]->GetI64(0)
                                                                    : node.attrs().GetInt("offset"));
  const double drop_scale = static_cast<double>(DropoutScale(drop_p));
  const Shape& qs = q.shape();
  const size_t r = qs.size();
  const Shape batch(qs.begin(), qs.end() - 2);
  const int64_t S = qs[r - 2], D = qs[r - 1], T = k.shape()[r - 2], E = lse ? 0 : v->shape()[r - 1];
  double scale = node.attrs().GetFloat("scale");
  if (scale == 0) scale = 1.0 / std::sqrt(static_cast<double>(D));
  const bool causal = node.attrs().GetBool("causal");
  Shape score_shape = batch;
  score_shape.push_back(S);
  score_shape.push_back(T);
  std::vector<int64_t> mask_strides;
  if (mask) mask_strides = BroadcastStrides(mask->shape(), score_shape);
  Tensor out(node.dtype(), node.shape());
  const int64_t batches = NumElements(batch);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(T * (D + E), 1));
  // K^T and V rows are zero-padded to multiples of 4 so the inner loops run four-wide.
  const int64_t Tp = RoundUp4(T), Ep = RoundUp4(E);
  ParallelFor(batches * S, grain, [&](int64_t begin, int64_t end) {
    std::vector<double> kt(D * Tp, 0.0), vd(T * Ep, 0.0), qrow(D), s(Tp), acc(Ep);
    int64_t loaded = -1;
    for (int64_t row = begin; row < end; ++row) {
      const int64_t bi = row / S, i = row % S;
      const int64_t q_base = (bi * S + i) * D, k_base = bi * T * D, v_base = bi * T * E;
      if (bi != loaded) {
        for (int64_t j = 0; j < T; ++j) {
          for (int64_t d = 0; d < D; ++d) kt[d * Tp + j] = k.GetF64(k_base + j * D + d);
          for (int64_t e = 0; e < E; ++e) vd[j * Ep + e] = v->GetF64(v_base + j * E + e);
        }
        loaded = bi;
      }
      const int64_t visible = causal ? std::min(T, i + 1) : T;
      for (int64_t d = 0; d < D; ++d) qrow[d] = q.GetF64(q_base + d);
      // s[j] = sum_d q[d] * k[j][d], accumulated over d in order.
      const int64_t visible4 = RoundUp4(visible);
      std::fill(s.begin(), s.begin() + visible4, 0.0);
      for (int64_t d = 0; d < D; ++d) Axpy4(visible4, qrow[d], &kt[d * Tp], s.data());
      int64_t mask_base = 0;
      if (mask) {
        // Offset of mask[bi..., i, 0]: decompose bi over the batch dims.
        int64_t rest = bi;
        for (int d = static_cast<int>(batch.size()) - 1; d >= 0; --d) {
          mask_base += (rest % batch[d]) * mask_strides[d];
          rest /= batch[d];
        }
        mask_base += i * mask_strides[r - 2];
      }
      double mx = -kInf;
      for (int64_t j = 0; j < visible; ++j) {
        s[j] *= scale;
        if (mask) s[j] += mask->GetF64(mask_base + j * mask_strides[r - 1]);
        if (s[j] > mx) mx = s[j];
      }
      if (lse) {
        double sum = 0;
        for (int64_t j = 0; j < visible && mx != -kInf; ++j) sum += std::exp(s[j] - mx);
        out.SetF64(bi * S + i, mx == -kInf ? kInf : mx + std::log(sum));
        continue;
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      if (mx != -kInf) {  // else: fully masked row, zeros
        double sum = 0;
        for (int64_t j = 0; j < visible; ++j) {
          const double p = std::exp(s[j] - mx);
          sum += p;
          if (drop_p > 0 && !DropoutKeep(seed, offset, static_cast<uint64_t>((bi * S + i) * T + j), drop_p)) continue;
          Axpy4(Ep, drop_p > 0 ? p * drop_scale : p, &vd[j * Ep], acc.data());
        }
        for (int64_t e = 0; e < E; ++e) acc[e] /= sum;
      }
      for (int64_t e = 0; e < E; ++e) out.SetF64((bi * S + i) * E + e, acc[e]);
    }
  });
  return out;
}

// ---- dropout, dropout_grad ----------------------------------------------------------------

// docs/dropout.md: element i is kept iff DropoutKeep(seed, offset, i, p); kept values are
// (float)x * DropoutScale(p) computed in float, dropped ones are 0 (a select, so a dropped
// NaN gives 0). dropout_grad applies the same rule to dy. seed and offset come from operands
// 1 and 2 (integer scalars, reinterpreted as u64) when present, else from the attributes.
absl::StatusOr<Tensor> EvalDropout(const Node& node, const std::vector<const Tensor*>& args) {
  const Tensor& x = *args[0];
  const double p = node.attrs().GetFloat("p");
  const uint64_t seed = static_cast<uint64_t>(
      args.size() > 1 ? args[1]->GetI64(0) : node.attrs().GetInt("seed"));
  const uint64_t offset = static_cast<uint64_t>(
      args.size() > 2 ? args[2]->GetI64(0) : node.attrs().GetInt("offset"));
  const uint32_t threshold = DropoutThreshold(p);
  const bool drop_all = p >= 1.0;
  const float scale = DropoutScale(p);
  const int64_t n = x.num_elements();
  Tensor out(node.dtype(), node.shape());
  ParallelFor((n + 3) / 4, 1 << 14, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      const std::array<uint32_t, 4> words = DropoutRandomWords(seed, offset, g);
      for (int lane = 0; lane < 4; ++lane) {
        const int64_t i = 4 * g + lane;
        if (i >= n) break;
        const bool keep = !drop_all && words[lane] >= threshold;
        out.SetF64(i, keep ? static_cast<double>(static_cast<float>(x.GetF64(i)) * scale) : 0.0);
      }
    }
  });
  return out;
}

}  // namespace kiln::interp
