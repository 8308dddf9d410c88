// The attention kind: the tiled template (templates/attention.cuh) with the layout ops around
// it folded into its loads and store (attention_plan.h). Attention the template does not
// cover never reaches fusion: lower_attention rewrites it into matmul, softmax and matmul
// first, keyed on AttentionTemplateCovers.
#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/base/status.h"
#include "passes/fusion/attention_plan.h"
#include "passes/fusion/kinds.h"
#include "passes/fusion/region_kind.h"

namespace kiln {

// The template's limits: f16 and bf16 on the tensor cores (mma.sync m16n8k16, f32
// accumulation), f32 as three TF32 products (3xTF32: f32-grade accuracy); head dims in
// multiples of 8 up to 256 (16-byte rows; the register budget).
FusionDecision AttentionTemplateCovers(const Node& attention) {
  const DType t = attention.dtype();
  if (t != DType::kBF16 && t != DType::kF16 && t != DType::kF32) {
    return FusionDecision::Forbid("attention-dtype", absl::StrCat("the tiled template takes f16, bf16 and f32; ",
                                                                  DTypeName(t), " attention runs as matmul, softmax, matmul"));
  }
  const Shape& q = attention.operand(0)->shape();
  const Shape& v = attention.operand(2)->shape();
  const int64_t D = q.back(), E = v.back();
  for (int64_t d : {D, E}) {
    if (d % 8 != 0 || d > 256 || d == 0) {
      return FusionDecision::Forbid("attention-head-dim",
                                    absl::StrCat("head dim ", d, ": the tiled template takes multiples of 8 up to 256"));
    }
  }
  return FusionDecision::Allow("attention-template", "tiled attention, scores never stored");
}

const Node* AttentionTwin(const Node& lse) {
  KILN_CHECK(lse.op() == OpKind::kAttentionLse) << lse.ToString();
  const AttentionArgs lse_args = AttentionArgsOf(lse);
  const Node* mask = lse_args.mask >= 0 ? lse.operand(lse_args.mask) : nullptr;
  for (const Node* user : lse.operand(0)->users()) {
    if (user->op() != OpKind::kAttention || user->operand(0) != lse.operand(0) || user->operand(1) != lse.operand(1)) {
      continue;
    }
    const AttentionArgs user_args = AttentionArgsOf(*user);
    const Node* user_mask = user_args.mask >= 0 ? user->operand(user_args.mask) : nullptr;
    if (user_mask != mask || user->attrs().GetBool("causal") != lse.attrs().GetBool("causal") ||
        user->attrs().GetFloat("scale") != lse.attrs().GetFloat("scale")) {
      continue;
    }
    // One kernel cannot write both if the log-sum-exp reaches the attention (through v).
    std::vector<const Node*> stack(lse.users().begin(), lse.users().end());
    std::set<const Node*> seen;
    bool reaches = false;
    while (!stack.empty() && !reaches) {
      const Node* x = stack.back();
      stack.pop_back();
      if (!seen.insert(x).second) continue;
      reaches = x == user;
      stack.insert(stack.end(), x->users().begin(), x->users().end());
    }
    if (!reaches) return user;
  }
  return nullptr;
}

namespace kinds {

FusionDecision AttentionLegal(const Region& p, const Region& c, const Region& merged) {
  if (p.kind == RegionKind::kAttention && c.kind == RegionKind::kAttention) {
    return FusionDecision::Forbid("attention-attention", "two attentions are two kernels");
  }
  const Region& other = p.kind == RegionKind::kAttention ? c : p;
  const bool layout_only = std::all_of(other.nodes.begin(), other.nodes.end(), [](const Node* n) {
    return n->op() == OpKind::kReshape || n->op() == OpKind::kTranspose || n->op() == OpKind::kSlice ||
           n->op() == OpKind::kBroadcastTo;
  });
  if (!layout_only) {
    return FusionDecision::Forbid("attention-compute",
                                  absl::StrCat("attention absorbs only reshape/transpose/slice/broadcast; the ",
                                               RegionKindName(other.kind), " region computes"));
  }
  if (!merged.placed) return merged.placed;
  return FusionDecision::Allow("attention-layout", p.kind == RegionKind::kAttention
                                                       ? "folded into attention's strided store"
                                                       : "folded into attention's strided loads");
}

// The tiled template (codegen's default tiles, kernel_params.cc): the products' FLOPs as the
// kernel computes them (whole key tiles up to the diagonal when causal) at the template's
// tensor-core rate (the mma.sync or the sm_90a wgmma kernel's); q, k, v, the mask and the
// output each moved once. With few blocks the
// longest one sets the time (causal: the last query block computes every key tile): it gets
// the rate of one SM shared by its resident blocks.
//
// The wgmma kernel (sm_90a) is priced as what bounds it: its products at
// attention_wgmma_flops_per_us plus one exponential per score on the special-function units
// (sfu_ops_per_us; the intra-warpgroup overlap hides only part of them), causal tiles at 0.95
// of that rate (the masked diagonal tiles, blocks of unequal length), and kWgmmaBlockUs per
// block wave (its Q tile and first key tiles loaded before anything overlaps them). Fitted on
// 16 shapes of bench/attention.py (S 1024-16384, D 64 and 128, causal or not, bf16) on the
// lent H200 (bench/results/2026-11-26-h200-session12): every one within 7%. Its TMA form
// (AttentionTiles::tma) is priced the same way at attention_tma_flops_per_us (within 6% on four
// shapes, bench/results/2026-11-28-session27).
constexpr double kF32ProductCost = 6;
// Dropout on the probabilities: a Philox4x32-10 call (10 rounds of about 8 integer
// instructions) per four scores, plus the compares and selects, at a quarter of the f32 FLOP
// rate (IMAD issues at half FFMA's rate; FLOPs count an FMA as 2), added to the products (the
// ALU work overlaps them little). Fitted on the lent H100 (bench/results/2026-11-27-session13):
// p = 0.1 added 1.30-1.42 us per million scores to S 4096, D 64 causal and D 128 full, 20 ops a
// score at this rate.
constexpr double kDropoutOpsPerScore = 20;
constexpr double kWgmmaCausalRate = 0.95;
constexpr double kWgmmaBlockUs = 3.0;

// The time to move e's bytes, the blocks streaming them in waves of the resident slots (sm_count
// x blocks_per_sm): a block keeps about one key tile in flight, so it draws at most its share of
// what an SM's blocks draw (sm_bytes_per_us / blocks_per_sm), and a wave moves its blocks'
// share of the bytes at the smaller of that sum and the copy rate. A last wave of a few blocks
// is slow: measured on the H200 (decoding, 537 MB of K and V), 384 blocks on 264 slots 183.0
// us (this model: 186), 256 blocks 143.5 us (140); one K/V head of 8 query heads over 20000 keys
// is 16 blocks, not the copy rate.
double StreamUs(const DeviceSpec& device, const RunTimeEstimate& e, int blocks_per_sm) {
  const double bytes = static_cast<double>(e.bytes_read + e.bytes_written + e.wasted_bytes);
  const int64_t slots = static_cast<int64_t>(device.sm_count) * std::max(1, blocks_per_sm);
  const double per_block = device.sm_bytes_per_us / std::max(1, blocks_per_sm);
  const int64_t blocks = std::max<int64_t>(e.blocks, 1), full = blocks / slots, rest = blocks % slots;
  double us = 0;
  if (full > 0) {
    us += bytes * static_cast<double>(full * slots) / static_cast<double>(blocks) /
          std::min(device.dram_bytes_per_us, per_block * static_cast<double>(slots));
  }
  if (rest > 0) {
    us += bytes * static_cast<double>(rest) / static_cast<double>(blocks) /
          std::min(device.dram_bytes_per_us, per_block * static_cast<double>(rest));
  }
  return us;
}

RunTimeEstimate PriceAttention(const Region& region, const DeviceSpec& device) {
  RunTimeEstimate e = TrafficAndWork(region);
  e.transcendentals = 0;
  if (!region.attention) {
    FinishEstimate(device, device.attention_flops_per_us, device.dram_bytes_per_us, 1, e);
    return e;
  }
  const AttentionPlan& plan = *region.attention;
  const AttentionTiles tiles = DefaultAttentionTiles(plan, device);
  e.flops = plan.Flops(tiles.block_m, tiles.block_n);
  e.blocks = plan.batch / plan.group * AttentionQueryBlocks(plan, tiles) * tiles.split;
  const double scores = e.flops / (2.0 * static_cast<double>(plan.D + plan.E));  // as the tiles compute them
  // f32 runs three TF32 products per product, each at half the 16-bit rate (m16n8k8 against
  // m16n8k16 in the same issue slots).
  double rate = ByteSize(plan.attention->dtype()) == 4 ? device.attention_flops_per_us / kF32ProductCost
                                                       : device.attention_flops_per_us;
  const int64_t per_sm = std::min<int64_t>(AttentionBlocksPerSm(plan, tiles, device),
                                          (e.blocks + device.sm_count - 1) / device.sm_count);
  if (tiles.wgmma) {
    e.transcendentals = scores;  // one exponential per score
    rate = (tiles.tma ? device.attention_tma_flops_per_us : device.attention_wgmma_flops_per_us) *
           (plan.causal ? kWgmmaCausalRate : 1.0);
  }
  FinishEstimate(device, rate, device.dram_bytes_per_us, 1, e);
  e.memory_us = StreamUs(device, e, AttentionBlocksPerSm(plan, tiles, device));
  // The longest block alone, at its SM's share of the whole kernel's rate (products and
  // exponentials): one block does not fill an SM, so a block sharing it with per_sm - 1 others
  // runs at 1 / sqrt(per_sm) of the SM's rate, not 1 / per_sm (fitted: transformer_block's
  // causal attention, 16 x 2048 rows of D 64, wgmma 128 x 64 at two blocks an SM, measured
  // 42.4 us on the lent H100 where the plain share predicted 56.4 and this 41.3).
  const double block_rate = e.flops / std::max(e.compute_us, 1e-9) / device.sm_count / std::sqrt(static_cast<double>(per_sm));
  const double longest = 2.0 * std::min<int64_t>(tiles.block_m, (plan.group * plan.S + 15) / 16 * 16) *
                         ((plan.T + tiles.block_n - 1) / tiles.block_n * tiles.block_n) * (plan.D + plan.E) /
                         tiles.split;
  if (tiles.wgmma) {
    e.compute_us += static_cast<double>(e.blocks) / static_cast<double>(device.sm_count * per_sm) * kWgmmaBlockUs;
  }
  e.compute_us = std::max(e.compute_us, longest / block_rate);
  if (plan.dropout > 0 && device.f32_flops_per_us > 0) {
    e.compute_us += scores * kDropoutOpsPerScore / (device.f32_flops_per_us / 4);
  }
  e.total_us = std::max(e.memory_us, e.compute_us) + e.launch_us;
  return e;
}

}  // namespace kinds
}  // namespace kiln
