#include "passes/cost/cost_model.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/fusion/region_kind.h"

namespace kiln {

void RunTimeEstimate::Add(const RunTimeEstimate& other) {
  bytes_read += other.bytes_read;
  bytes_written += other.bytes_written;
  flops += other.flops;
  transcendentals += other.transcendentals;
  index_ops += other.index_ops;
  passes = std::max(passes, other.passes);
  row_on_chip = row_on_chip && other.row_on_chip;
  blocks += other.blocks;
  if (!other.row_fit.empty()) row_fit = row_fit.empty() ? other.row_fit : absl::StrCat(row_fit, "; ", other.row_fit);
  wasted_bytes += other.wasted_bytes;
  if (!other.layout.empty()) layout = layout.empty() ? other.layout : absl::StrCat(layout, "; ", other.layout);
  memory_us += other.memory_us;
  compute_us += other.compute_us;
  launch_us += other.launch_us;
  total_us += other.total_us;
}

std::string RunTimeEstimate::ToString() const {
  return absl::StrFormat(
      "read %d B, write %d B%s, %.3g flop, %.3g transc%s, mem %.2f us%s, compute %.2f us, launch %.1f us"
      "%s = %.2f us",
      bytes_read, bytes_written, wasted_bytes > 0 ? absl::StrFormat(", %d B of sectors wasted", wasted_bytes) : "",
      flops, transcendentals, index_ops > 0 ? absl::StrFormat(", %.3g index ops", index_ops) : "", memory_us,
      blocks > 0 ? absl::StrFormat(" (%d blocks)", blocks) : "", compute_us, launch_us,
      row_on_chip ? "" : absl::StrFormat(", streamed row, %d pass%s", passes, passes == 1 ? "" : "es"), total_us);
}

const char* WorkClassName(WorkClass work) {
  switch (work) {
    case WorkClass::kDataMovement: return "data_movement";
    case WorkClass::kArithmetic: return "arithmetic";
    case WorkClass::kTranscendental: return "transcendental";
    case WorkClass::kRandom: return "random";
    case WorkClass::kReduction: return "reduction";
    case WorkClass::kComposite: return "composite";
    case WorkClass::kMatmul: return "matmul";
    case WorkClass::kAttention: return "attention";
    case WorkClass::kUnclassified: return "unclassified";
  }
  return "?";
}

// No default case: a new op in ir/ops.def is a -Wswitch warning here, and
// tests/passes/cost_model_test.cc walks the table for the rest.
OpWork OpWorkOf(OpKind op) {
  using W = WorkClass;
  switch (op) {
    case OpKind::kInput: case OpKind::kConstant:
    case OpKind::kReshape: case OpKind::kTranspose: case OpKind::kSlice: case OpKind::kConcat:
    case OpKind::kGather: case OpKind::kBroadcastTo:
      return {W::kDataMovement, 0, 0};
    case OpKind::kNeg: case OpKind::kAbs: case OpKind::kRelu: case OpKind::kCast: case OpKind::kLogicalNot:
    case OpKind::kAdd: case OpKind::kSub: case OpKind::kMul: case OpKind::kDiv: case OpKind::kMaximum:
    case OpKind::kMinimum: case OpKind::kEq: case OpKind::kNe: case OpKind::kLt: case OpKind::kLe:
    case OpKind::kGt: case OpKind::kGe: case OpKind::kLogicalAnd: case OpKind::kLogicalOr:
    case OpKind::kWhere: case OpKind::kIota:
      return {W::kArithmetic, 1, 0};
    case OpKind::kExp: case OpKind::kLog: case OpKind::kSqrt: case OpKind::kRsqrt:
    case OpKind::kTanh: case OpKind::kSigmoid: case OpKind::kErf: case OpKind::kReciprocal:
      return {W::kTranscendental, 1, 1};
    case OpKind::kPow: return {W::kTranscendental, 2, 2};  // exp(b * log(a))
    // The decomposed forms (passes/decompose.h): about 8 ALU ops around one erf/tanh/sigmoid.
    case OpKind::kGelu: case OpKind::kGeluTanh: case OpKind::kSilu: return {W::kTranscendental, 8, 1};
    // Philox4x32-10 serves 4 elements: 10 rounds x (2 mul-hi + 4 xor/add) / 4 + compare, scale.
    case OpKind::kDropout: case OpKind::kDropoutGrad: return {W::kRandom, 17, 0};
    case OpKind::kReduceSum: case OpKind::kReduceMean: case OpKind::kReduceMax: case OpKind::kReduceMin:
      return {W::kReduction, 1, 0};
    // Per input element, counting the ops of the decomposition (passes/decompose.h).
    case OpKind::kSoftmax: case OpKind::kLogSoftmax: return {W::kComposite, 5, 1};  // max sub exp sum div
    case OpKind::kLayerNorm: return {W::kComposite, 7, 0};     // mean sub mul mean mul, * w, + b
    case OpKind::kRmsNorm: return {W::kComposite, 4, 0};       // mul mean mul, * w
    case OpKind::kCrossEntropy: return {W::kComposite, 7, 1};  // max sub exp sum, eq where sum
    case OpKind::kMatmul: return {W::kMatmul, 0, 0};
    case OpKind::kAttention: case OpKind::kAttentionLse: return {W::kAttention, 0, 0};
  }
  return {};
}

NodeWork WorkOf(const Node* node) {
  const OpWork w = OpWorkOf(node->op());
  double n = static_cast<double>(node->num_elements());
  switch (w.work) {
    case WorkClass::kMatmul: {
      const Shape& a = node->operand(0)->shape();
      return {2.0 * n * static_cast<double>(a.back()), 0};
    }
    case WorkClass::kAttention: {
      const Shape& q = node->operand(0)->shape();
      const Shape& k = node->operand(1)->shape();
      double batch_rows = static_cast<double>(NumElements(q)) / q.back();  // batch * S
      double keys = static_cast<double>(k[k.size() - 2]);
      // attention_lse: q k^T only.
      double d = static_cast<double>(q.back()) +
                 (node->op() == OpKind::kAttentionLse ? 0.0 : static_cast<double>(node->shape().back()));
      double flops = 2.0 * batch_rows * keys * d;
      if (node->attrs().GetBool("causal")) flops *= 0.5;
      return {flops, batch_rows * keys};  // one exp per score
    }
    case WorkClass::kReduction:
    case WorkClass::kComposite:
      n = static_cast<double>(node->operand(0)->num_elements());
      break;
    default: break;
  }
  return {w.flops * n, w.transcendentals * n};
}

RunTimeEstimate TrafficAndWork(const Region& region) {
  RunTimeEstimate e;
  for (const Node* in : region.inputs) e.bytes_read += in->num_bytes();
  for (const Node* out : region.outputs) e.bytes_written += out->num_bytes();
  for (const Node* n : region.nodes) {
    NodeWork w = WorkOf(n);
    e.flops += w.flops;
    e.transcendentals += w.transcendentals;
  }
  return e;
}

double DrawnBandwidth(const DeviceSpec& device, int64_t blocks, int64_t threads, int64_t resident_per_sm,
                      double thread_worth) {
  if (device.sm_bytes_per_us <= 0 || device.sm_count <= 0) return device.dram_bytes_per_us;
  blocks = std::max<int64_t>(blocks, 1);
  const int64_t sms = std::min<int64_t>(blocks, device.sm_count);
  // Threads on a busy SM: its share of the blocks, as many as are resident at half occupancy.
  int64_t cap = std::max<int64_t>(1, 1024 / threads);
  if (resident_per_sm > 0) cap = std::min(cap, resident_per_sm);
  const int64_t per_sm = std::min<int64_t>((blocks + sms - 1) / sms, cap);
  const double fill = std::min(1.0, thread_worth * static_cast<double>(per_sm * threads) / kSaturatingThreadsPerSm);
  // The busiest SM runs ceil(blocks / sms) of the blocks, over all waves; the others finish
  // early. 192 tiles of a column reduction on 132 SMs leave 72 of them half idle: measured
  // 15.3 us, and 12.2 with 384 narrower tiles (H200, bench/results/2026-11-27-session19.md).
  const double balance = static_cast<double>(blocks) / static_cast<double>(sms * ((blocks + sms - 1) / sms));
  return std::min(device.dram_bytes_per_us, static_cast<double>(sms) * device.sm_bytes_per_us * fill * balance);
}

void FinishEstimate(const DeviceSpec& device, double flop_rate, double bandwidth, int launches, RunTimeEstimate& e) {
  e.memory_us = static_cast<double>(e.bytes_read + e.bytes_written + e.wasted_bytes) / bandwidth;
  e.compute_us = flop_rate > 0 ? e.flops / flop_rate : 0;
  e.compute_us += device.sfu_ops_per_us > 0 ? e.transcendentals / device.sfu_ops_per_us : 0;
  e.compute_us += device.index_ops_per_us > 0 ? e.index_ops / device.index_ops_per_us : 0;
  e.launch_us = device.launch_us * launches;
  e.total_us = std::max(e.memory_us, e.compute_us) + e.launch_us;
}

RunTimeEstimate EstimateRunTime(const Region& region, const DeviceSpec& device) {
  return KindInfo(region.kind).price(region, device);
}

}  // namespace kiln
