#include "passes/cost/cost_model.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace kiln {

std::string RunTimeEstimate::ToString() const {
  return absl::StrFormat(
      "read %d B, write %d B, %.3g flop, %.3g transc, mem %.2f us, compute %.2f us, launch %.1f us"
      "%s = %.2f us",
      bytes_read, bytes_written, flops, transcendentals, memory_us, compute_us, launch_us,
      row_on_chip ? "" : absl::StrFormat(", chunked row (%d passes)", passes), total_us);
}

NodeWork WorkOf(const Node* node) {
  double n = static_cast<double>(node->num_elements());
  switch (node->op()) {
    case OpKind::kExp: case OpKind::kLog: case OpKind::kSqrt: case OpKind::kRsqrt:
    case OpKind::kTanh: case OpKind::kSigmoid: case OpKind::kErf: case OpKind::kReciprocal:
      return {n, n};
    case OpKind::kPow: return {2 * n, 2 * n};  // exp(b * log(a))
    case OpKind::kGelu: case OpKind::kGeluTanh: case OpKind::kSilu: return {8 * n, n};
    case OpKind::kDropout: case OpKind::kDropoutGrad:
      // Philox4x32-10 serves 4 elements: 10 rounds x (2 mul-hi + 4 xor/add) / 4 + compare, scale.
      return {17 * n, 0};
    case OpKind::kReduceSum: case OpKind::kReduceMean: case OpKind::kReduceMax:
    case OpKind::kReduceMin:
      return {static_cast<double>(node->operand(0)->num_elements()), 0};
    case OpKind::kMatmul: {
      const Shape& a = node->operand(0)->shape();
      return {2.0 * n * static_cast<double>(a.back()), 0};
    }
    case OpKind::kAttention: {
      const Shape& q = node->operand(0)->shape();
      const Shape& k = node->operand(1)->shape();
      double batch_rows = static_cast<double>(NumElements(q)) / q.back();  // batch * S
      double keys = static_cast<double>(k[k.size() - 2]);
      double d = static_cast<double>(q.back()) + static_cast<double>(node->shape().back());
      double flops = 2.0 * batch_rows * keys * d;
      if (node->attrs().GetBool("causal")) flops *= 0.5;
      return {flops, batch_rows * keys};  // one exp per score
    }
    default:
      if (node->category() == OpCategory::kPointwise) return {n, 0};
      return {0, 0};  // leaves and layout: data movement only
  }
}

RunTimeEstimate EstimateRunTime(const Region& region, const DeviceSpec& device) {
  RunTimeEstimate e;
  if (region.kind == RegionKind::kView) return e;  // an alias: no kernel, no traffic
  for (const Node* in : region.inputs) e.bytes_read += in->num_bytes();
  for (const Node* out : region.outputs) e.bytes_written += out->num_bytes();
  for (const Node* n : region.nodes) {
    NodeWork w = WorkOf(n);
    e.flops += w.flops;
    e.transcendentals += w.transcendentals;
  }
  double rate = device.f32_flops_per_us;
  if (region.kind == RegionKind::kMatmul || region.kind == RegionKind::kAttention) {
    bool f32 = std::any_of(region.nodes.begin(), region.nodes.end(), [](const Node* n) {
      return (n->op() == OpKind::kMatmul || n->op() == OpKind::kAttention) && n->dtype() == DType::kF32;
    });
    rate = region.kind == RegionKind::kAttention ? device.attention_flops_per_us
           : f32                                 ? device.matmul_f32_flops_per_us
                                                 : device.matmul_bf16_flops_per_us;
    if (f32 && region.kind == RegionKind::kAttention) rate = device.matmul_f32_flops_per_us;
  }
  if (region.kind == RegionKind::kRowReduction && region.row_length > device.RowBudgetValues()) {
    e.row_on_chip = false;
    // Row-shaped outputs need the statistics of the whole row first: a second pass.
    bool row_outputs = std::any_of(region.outputs.begin(), region.outputs.end(), [&](const Node* n) {
      return n->num_elements() == region.rows * region.row_length;
    });
    e.passes = row_outputs ? 2 : 1;
    for (const Node* in : region.inputs) {
      if (in->num_elements() == region.rows * region.row_length) {
        e.bytes_read += (e.passes - 1) * in->num_bytes();
      }
    }
  }
  e.memory_us = static_cast<double>(e.bytes_read + e.bytes_written) / device.dram_bytes_per_us;
  e.compute_us = e.flops / rate;
  if (region.kind != RegionKind::kAttention) e.compute_us += e.transcendentals / device.sfu_ops_per_us;
  e.launch_us = device.launch_us;
  e.total_us = std::max(e.memory_us, e.compute_us) + e.launch_us;
  return e;
}

}  // namespace kiln
