// The elementwise kinds: pointwise (templates/pointwise.cuh), layout (layout.cuh) and view
// (an alias, no kernel). One iteration space, the region's largest output; every member is
// evaluated at the positions its users need (broadcast, transposed, sliced, a concat's piece).
// A region that reads an input through a permutation moving the innermost axis runs the tiled
// transpose kernel of layout.cuh (the region's LayoutPlan, passes/fusion/layout_access.h).
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "passes/fusion/kinds.h"
#include "passes/cost/row_fit.h"
#include "passes/fusion/layout_access.h"
#include "passes/fusion/plain_vector.h"

namespace kiln::kinds {

void AnalyzeElementwise(Region& region, const DeviceSpec& device) { region.layout = PlanLayout(region); }

// Every member is evaluated where its users need it, so members of any shape fit (a slice of a
// larger producer, the pieces of a concat); an output is written at every point of the space,
// so a smaller one would be written from a broadcast loop.
FusionDecision ElementwiseLegal(const Region& p, const Region& c, const Region& merged) {
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

namespace {

// Resident blocks of the tiled kernel per SM: 2048 threads and the shared memory of one SM
// (DeviceSpec::smem_per_block_bytes, 227 KB on sm_90, stands for the SM's 228 KB), at most 32.
int64_t TiledBlocksPerSm(const DeviceSpec& device, int threads, int64_t smem) {
  int64_t per_sm = std::min<int64_t>(32, 2048 / threads);
  if (smem > 0 && device.smem_per_block_bytes > 0) per_sm = std::min(per_sm, device.smem_per_block_bytes / smem);
  return std::max<int64_t>(per_sm, 1);
}

}  // namespace

// The plain kernel: one sweep over the space, 256 threads x 8 elements per block
// (pointwise.cuh's default), its index arithmetic at DeviceSpec::index_ops_per_us (one element
// per thread pays every division per element: permute_bshd_bhsd_bf16 measured 198 us for a
// 90 us copy; vectors pay the outer ones once per vector), its reads at their sector cost: a transposed or strided read
// fetches plain_waste times the sectors it uses (32 bytes per element when the warp's elements
// are 32 bytes or more apart). The project measured a 4096 x 4096 transpose feeding an add at
// 0.25 of the copy floor on the H100; this model gives 0.30 for f32 (8x waste on one of three
// tensors) and 0.18 for bf16 (16x).
// The tiled kernel (layout.cuh): its tiles at the copy bandwidth (both sides coalesced), with the
// bandwidth its blocks draw, and the tail of its last wave of resident blocks (a memory-bound
// wave takes as long whether full or not: an estimate); reads of another permutation left
// direct keep their waste.
RunTimeEstimate PricePointwise(const Region& region, const DeviceSpec& device) {
  RunTimeEstimate e = TrafficAndWork(region);
  const LayoutPlan* plan = region.layout.get();
  const int64_t elements = NumElements(region.space);
  if (plan != nullptr) {
    e.wasted_bytes = plan->WastedReadBytes(elements, !plan->tiled() && plan->plain_vector > 1);
    e.layout = plan->Summary();
  }
  if (plan == nullptr || !plan->tiled()) {
    // The vector DefaultParams gives the kernel (codegen/kernel_params.cc): the plan's, the
    // broadcast-only form's, or none (one element per thread).
    int v = 1;
    if (plan != nullptr && plan->plain_vector > 1) {
      v = plan->plain_vector;
    } else if (BroadcastOnly(region)) {
      v = VectorElements(region, region.space.empty() ? 1 : region.space.back());
    }
    e.index_ops = IndexOpsPerElement(region, plan, v) * static_cast<double>(elements);
    constexpr int64_t kElementsPerBlock = 256 * 8;
    e.blocks = (elements + kElementsPerBlock - 1) / kElementsPerBlock;
    FinishEstimate(device, device.f32_flops_per_us, DrawnBandwidth(device, e.blocks, 256), 1, e);
    return e;
  }
  const TileChoice tile = DefaultTile(*plan);
  e.blocks = plan->Tiles(tile.tb, tile.ta);
  const int64_t resident = device.sm_count * TiledBlocksPerSm(device, tile.threads, StagedSmemBytes(*plan, tile));
  const double waves = static_cast<double>(e.blocks) / static_cast<double>(std::max<int64_t>(resident, 1));
  const double tail = waves > 1 ? std::ceil(waves) / waves : 1.0;
  FinishEstimate(device, device.f32_flops_per_us, DrawnBandwidth(device, e.blocks, tile.threads) / tail, 1, e);
  return e;
}

// A view aliases its input, except where its output is a graph output: the caller's buffer is
// filled by a device-to-device copy (runtime/jit/lower.cc LowerView), one launch at the copy
// bandwidth.
RunTimeEstimate PriceView(const Region& region, const DeviceSpec& device) {
  RunTimeEstimate e;
  if (region.returned_bytes == 0) return e;
  e.bytes_read = e.bytes_written = region.returned_bytes;
  FinishEstimate(device, device.f32_flops_per_us, device.dram_bytes_per_us, 1, e);
  return e;
}

}  // namespace kiln::kinds
