#include "codegen/kernel_params.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/dtype.h"
#include "passes/cost/cost_model.h"
#include "passes/fusion/attention_plan.h"
#include "passes/fusion/layout_access.h"
#include "passes/fusion/norm_matmul_plan.h"
#include "passes/fusion/reduce_placement.h"

namespace kiln {

std::string KernelParams::ToString() const {
  std::string s = absl::StrCat("block=", block_size, " vec=", vector_width, " rows=", rows_per_block, " chunk=", chunk);
  if (split != 1) absl::StrAppend(&s, " split=", split);
  if (tile_m != 0 || tile_n != 0) absl::StrAppend(&s, " tile=", tile_m, "x", tile_n);
  if (stages != 0) absl::StrAppend(&s, " stages=", stages);
  if (warps != 0) absl::StrAppend(&s, " warps=", warps);
  if (warps_n != 0) absl::StrAppend(&s, " warps_n=", warps_n);
  if (min_blocks != 0) absl::StrAppend(&s, " min_blocks=", min_blocks);
  if (wgmma) absl::StrAppend(&s, " wgmma");
  if (tma) absl::StrAppend(&s, " tma");
  if (smem) absl::StrAppend(&s, " smem");
  if (cluster) absl::StrAppend(&s, " cluster");
  if (max_grid != 0) absl::StrAppend(&s, " max_grid=", max_grid);
  return s;
}

uint64_t KernelParams::Hash() const { return Fnv1a64(ToString()); }

absl::Status ValidateParams(const KernelParams& p) {
  if (p.block_size < 32 || p.block_size > 1024 || p.block_size % 32 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("KernelParams ", p.ToString(), ": block size must be a multiple of 32 in [32, 1024]"));
  }
  if (p.vector_width < 1 || p.vector_width > 16 || (p.vector_width & (p.vector_width - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("KernelParams ", p.ToString(), ": vector width must be a power of two in [1, 16]"));
  }
  const int threads_per_row = p.rows_per_block > 0 ? p.block_size / p.rows_per_block : 0;
  if (p.rows_per_block != 1 && (p.rows_per_block * threads_per_row != p.block_size ||
                                (threads_per_row != 1 && threads_per_row != 2 && threads_per_row != 4 &&
                                 threads_per_row != 8 && threads_per_row != 16 && threads_per_row != 32))) {
    return absl::InvalidArgumentError(absl::StrCat("KernelParams ", p.ToString(),
                                                   ": rows per block must be 1 (a block per row) or block / G with G "
                                                   "in {1, 2, 4, 8, 16, 32} threads per row (part of a warp, or a warp)"));
  }
  if (p.chunk < 0) {
    return absl::InvalidArgumentError(absl::StrCat("KernelParams ", p.ToString(), ": chunk must be >= 0"));
  }
  if (p.split < 1 || p.split > 1024 || (p.split > 1 && p.rows_per_block != 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("KernelParams ", p.ToString(), ": split must be in [1, 1024], and > 1 only with a block per row"));
  }
  if (p.tile_m < 0 || p.tile_n < 0 || p.stages < 0 || p.warps < 0 || p.warps > 32 || p.warps_n < 0 || p.min_blocks < 0 ||
      p.min_blocks * p.block_size > 2048) {
    return absl::InvalidArgumentError(
        absl::StrCat("KernelParams ", p.ToString(), ": tiles, stages and warps are >= 0 (warps at most 32)"));
  }
  if (p.cluster && (p.split < 2 || p.split > kMaxClusterBlocks)) {
    return absl::InvalidArgumentError(absl::StrCat("KernelParams ", p.ToString(), ": a cluster holds the 2 to ",
                                                   kMaxClusterBlocks, " blocks of a split row or column tile"));
  }
  if (p.max_grid < 0 || (p.max_grid > 0 && p.split != 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("KernelParams ", p.ToString(), ": max_grid is >= 0, and > 0 only for unsplit kernels"));
  }
  if (p.smem && p.tile_n == 0 && (p.chunk != 0 || p.rows_per_block != 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "KernelParams ", p.ToString(), ": a shared-memory cache needs a cached row (chunk=0) and a block per row"));
  }
  return absl::OkStatus();
}

namespace {

int VectorWidthFor(const Region& region, int64_t inner) { return VectorElements(region, inner); }

// The most threads per SM a __launch_bounds__ minimum asks for: 42 registers a thread, what
// the row kernels need unspilled (ptxas spills at 32 with 2048).
constexpr int kMaxBoundedThreadsPerSm = 1536;
// Column tiles per SM from which blocks of one or two warps are tuning candidates.
constexpr int64_t kSmallBlockTilesPerSm = 4;

// Whether the register cache holds a block-per-row candidate's row share: up to four times
// the budget (the tuner may try what the rule would not choose; more spills, not errors).
bool RegisterCacheMayHold(const Region& region, const KernelParams& p) {
  const int64_t tpr = ThreadsPerRow(p);
  const int64_t per_thread = (region.reduce->fit.share + tpr - 1) / tpr;
  return per_thread * region.reduce->fit.row_inputs <= 4 * kRowCacheFloatsPerThread;
}

// Every input and output is the whole space or one element: a vector may cross rows, so the
// width need not divide the innermost extent (the elementwise emitter's flat vectorisation).
bool IsFlat(const Region& region) {
  const int64_t space = NumElements(region.space);
  for (const auto* list : {&region.inputs, &region.outputs}) {
    for (const Node* n : *list) {
      if (n->num_elements() != 1 && n->num_elements() != space) return false;
    }
  }
  return true;
}

// The attention template's tiles as KernelParams: tile_m x tile_n, warps, stages.
KernelParams AttentionParams(const AttentionTiles& t) {
  KernelParams p;
  p.block_size = t.Threads();
  p.tile_m = t.block_m;
  p.tile_n = t.block_n;
  p.warps = t.warps;
  p.stages = t.stages;
  p.split = t.split;
  p.wgmma = t.wgmma;
  p.tma = t.tma;
  p.min_blocks = t.min_blocks;
  return p;
}

// The norm_matmul template's tiles as KernelParams: tile_m tokens x tile_n features, warps
// (warps_n of them along the features), split, chunk = the chunks each warp loads at once.
KernelParams NormMatmulParams(const NormMatmulTiles& t) {
  KernelParams p;
  p.block_size = 32 * t.warps;
  p.tile_m = t.tokens;
  p.tile_n = t.block_n;
  p.warps = t.warps;
  p.warps_n = t.warps_n;
  p.split = t.split;
  p.chunk = t.unroll;
  p.min_blocks = t.min_blocks;
  return p;
}

// The region runs the tiled transpose kernel (templates/layout.cuh).
const LayoutPlan* TiledPlan(const Region& region) {
  const bool elementwise = IsElementwiseKind(region.kind);
  return elementwise && region.layout != nullptr && region.layout->tiled() ? region.layout.get() : nullptr;
}

KernelParams TiledParams(const TileChoice& t) {
  KernelParams p;
  p.block_size = t.threads;
  p.vector_width = t.vector;
  p.tile_m = t.tb;
  p.tile_n = t.ta;
  return p;
}

// The tiled kernel's candidates: the default tile, the classic 32 x 32 scalar tile, the default
// with half the threads (more vectors in flight per thread), 64 x 64 tiles of 16-byte vectors
// (where a vector holds 4 elements or more), and the plain kernel (no tile: pointwise.cuh's loop).
void AddTiledCandidates(const LayoutPlan& plan, std::vector<KernelParams>& out) {
  const TileChoice d = DefaultTile(plan);
  std::vector<TileChoice> tiles = {TileChoice{32, 32, 1, 256}, TileChoice{d.tb, d.ta, d.vector, d.threads / 2}};
  if (plan.max_vector >= 4) tiles.push_back(TileChoice{64, 64, plan.max_vector, 256});
  for (const TileChoice& t : tiles) {
    KernelParams p = TiledParams(t);
    if (CheckTile(plan, t).ok() && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  out.push_back(KernelParams{});  // the plain loop runs layout ops one element per thread
}

// The column kernel's tiles with `p`'s tile (column_reduce.cuh): outer x ceil(inner / (lanes x vector)).
int64_t ColumnTiles(const Region& region, const KernelParams& p) {
  const ReduceSpace& s = region.reduce->space;
  const int64_t width = static_cast<int64_t>(std::max(p.tile_n, 1)) * p.vector_width;
  return s.outer * ((s.inner + width - 1) / width);
}

}  // namespace

KernelParams DefaultParams(const Region& region, const DeviceSpec& device) {
  if (region.kind == RegionKind::kAttention && region.attention) {
    return AttentionParams(DefaultAttentionTiles(*region.attention, device));
  }
  if (region.kind == RegionKind::kNormMatmul && region.norm_matmul) {
    return NormMatmulParams(DefaultNormMatmulTiles(*region.norm_matmul, device));
  }
  KernelParams p;
  if (const LayoutPlan* plan = TiledPlan(region)) return TiledParams(DefaultTile(*plan));
  if (region.kind == RegionKind::kColumnReduction) {
    // The column launch rule, shared with the cost model (passes/cost/row_fit.h).
    const RowFit& fit = region.reduce->fit;
    p.block_size = static_cast<int>(fit.threads * fit.lanes);
    p.vector_width = fit.vector;
    p.tile_n = fit.lanes;
    p.split = fit.split;
    p.cluster = fit.cluster;
    // Streamed: the vectors in flight per thread the fit chose (column_fit.cc's StreamedAhead).
    p.chunk = fit.on_chip ? 0 : fit.ahead >= 8 ? 8 : 1;
    p.smem = fit.shared;  // the share cached in shared memory (column_reduce.cuh's kSharedCache)
    // A streamed tile is built for the residency the model prices (__launch_bounds__'s minimum
    // blocks an SM): left to itself ptxas gives such kernels 32 to 128 registers where the
    // model counts 72 to 80 (session 35's census), so they ran at a residency nobody priced.
    // Bounded, ptxas unrolls to the budget: over eight streamed defaults (H200, kiln tune, L2
    // flushed; bench/results/2026-11-29-session36, run 2) the sum over axis 0 of [512, 50257]
    // bf16 went from 20.5 to 16.9 us (48 to 75 registers), of [8192, 1536] bf16 from 15.6 to
    // 13.7, four others gained 3-4% or lost 1-4% (the mean over axis 0 of [16384, 11008] f16,
    // 26.8 to 27.8); 0.96 in geometric mean. A tile cached in registers keeps ptxas's own
    // count: bounded, the cache gave up registers (softmax over axis 1 of [1, 81, 50000] bf16,
    // 128 to 96, 12.9 to 14.4 us). The tuner times both (CandidateParams).
    if (!fit.on_chip && fit.blocks_per_sm >= 2 && fit.blocks_per_sm * p.block_size <= 2048) {
      p.min_blocks = fit.blocks_per_sm;
    }
    return p;
  }
  if (region.kind != RegionKind::kRowReduction) {
    const Shape& s = region.space;
    p.block_size = 256;
    const bool flat = region.kind == RegionKind::kPointwise && IsFlat(region);
    p.vector_width = VectorWidthFor(region, flat ? 0 : s.empty() ? 1 : s.back());
    if (region.layout != nullptr && region.layout->plain_vector > 1) p.vector_width = region.layout->plain_vector;
    return p;
  }
  // Rows start anywhere (the row kernel takes a head and a tail one element at a time), so
  // the vector width need not divide N.
  const RowFit& fit = region.reduce->fit;
  p.vector_width = RowVector(region, *region.reduce);
  p.split = fit.split;
  p.cluster = fit.cluster;
  if (fit.shared) {  // the row share in the block's shared memory, over the threads the rule chose
    p.block_size = static_cast<int>(fit.threads);
    p.smem = true;
    // As many blocks as the shared memory lets reside: the registers the compiler may take
    // must not allow fewer (unbounded, it hoists shared loads into 100 registers per thread).
    p.min_blocks = std::min(fit.blocks_per_sm, kMaxBoundedThreadsPerSm / p.block_size);
    if (p.min_blocks <= 1) p.min_blocks = 0;
    return p;
  }
  if (fit.rows_per_block > 1) {  // several short rows a block, as the launch rule chose
    p.block_size = static_cast<int>(fit.block);
    p.rows_per_block = static_cast<int>(fit.rows_per_block);
  } else {
    // A block per row (or per share of a split row): the threads the launch rule chose.
    p.block_size = static_cast<int>(fit.threads);
    p.rows_per_block = 1;
  }
  // Streamed rows take kStreamedUnroll vectors per thread per loop step.
  p.chunk = fit.on_chip ? 0 : StreamedChunk(ThreadsPerRow(p), p.vector_width);
  return p;
}

std::vector<KernelParams> CandidateParams(const Region& region, const DeviceSpec& device) {
  if (region.kind == RegionKind::kAttention && region.attention) {
    std::vector<KernelParams> out;
    for (const AttentionTiles& t : CandidateAttentionTiles(*region.attention, device)) out.push_back(AttentionParams(t));
    return out;
  }
  if (region.kind == RegionKind::kNormMatmul && region.norm_matmul) {
    std::vector<KernelParams> out;
    for (const NormMatmulTiles& t : CandidateNormMatmulTiles(*region.norm_matmul, device)) {
      out.push_back(NormMatmulParams(t));
    }
    return out;
  }
  std::vector<KernelParams> out = {DefaultParams(region, device)};
  auto add = [&](KernelParams p) {
    if (!ValidateParams(p).ok()) return;
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  };
  if (const LayoutPlan* plan = TiledPlan(region)) {
    AddTiledCandidates(*plan, out);
    return out;
  }
  if (region.kind == RegionKind::kColumnReduction) {
    // The families below vary the default's shape, unbounded (ptxas's own registers; the
    // default's bound is the default's residency only), the default itself first; where the
    // default keeps its share in shared memory they vary the same shape streamed (what the
    // register rule gives it), and the shared-memory variants come last, so the tuner times both kinds.
    KernelParams d = out[0];
    d.min_blocks = 0;
    add(d);
    if (d.smem && d.chunk == 0) {
      const RowFit::Unshared& u = region.reduce->fit.unshared;
      KernelParams unshared = d;  // the model's choice without shared memory
      unshared.smem = false;
      unshared.tile_n = u.lanes;
      unshared.block_size = static_cast<int>(u.threads * u.lanes);
      unshared.vector_width = u.vector;
      unshared.split = u.split;
      unshared.chunk = u.on_chip ? 0 : 1;
      unshared.cluster = SplitInCluster(device, u.split, region.reduce->fit.split_waits, kMaxColumnClusterBlocks);
      if (u.lanes > 0) add(unshared);
      d.smem = false;
      d.chunk = 1;
      add(d);
    }
    // Fewer or more blocks per tile; where they do not wait for each other (row_fit.h's
    // SplitBlocksWait), also four times as many, and as many as fill every SM evenly.
    const bool waits = region.reduce->fit.split_waits;
    const int64_t tiles = ColumnTiles(region, d);
    std::vector<int> splits = {d.split / 2, d.split * 2};
    if (!waits) {
      splits.push_back(d.split * 4);
      for (int64_t per_sm : {2, 4}) {
        if (device.sm_count > 0 && (per_sm * device.sm_count) % tiles == 0) {
          splits.push_back(static_cast<int>(per_sm * device.sm_count / tiles));
        }
      }
    }
    // Waiting blocks must all be resident at once.
    const int64_t most_split = waits ? 2 * device.sm_count : 1024;
    for (int split : splits) {  // merging through global memory
      KernelParams p = d;
      p.split = split;
      p.cluster = false;
      if (split >= 1 && split <= most_split && region.reduce->space.reduced >= split) add(p);
    }
    if (d.tile_n > 1) {  // a narrower tile: more tiles, fewer threads along K each
      KernelParams p = d;
      p.tile_n = d.tile_n / 2;
      add(p);
    }
    const ReduceSpace& space = region.reduce->space;
    if (d.tile_n < 32 && d.tile_n * d.vector_width < space.inner) {
      // A wider tile (longer contiguous segments of a row), its K over twice the blocks.
      KernelParams p = d;
      p.tile_n = d.tile_n * 2;
      p.split = std::min<int64_t>({d.split * 2, std::max<int64_t>(space.reduced / 8, 1), most_split});
      p.cluster = d.cluster && p.split <= kMaxColumnClusterBlocks;
      if (p.block_size % p.tile_n == 0) add(p);
    }
    // Narrower tiles (4 lanes at the least: 64 bytes of a row), each with the block's threads,
    // with half of them, or with 1024; at the default split, a quarter of it, or none. Of 240 to
    // 516 launch shapes timed per column region on the H200 (session 26, run 1), the fastest were
    // of this family where they beat the default: the sum over [16384, 1024] f32, 4 lanes x 256
    // threads along K unsplit, 20.2 against 22.0 us; the max over [32768, 768] f32, 8 lanes,
    // split 16, 28.2 against 29.6; softmax over the middle axis of [8, 1024, 512] f32, 4 lanes
    // x 64, 13.4 against 15.9.
    for (int lanes : {d.tile_n / 2, d.tile_n / 4, 4}) {
      if (lanes < 4 || lanes >= d.tile_n) continue;
      for (int block : {d.block_size, d.block_size / 2, 1024}) {
        for (int split : {d.split, d.split / 4, 1}) {
          KernelParams p = d;
          p.tile_n = lanes;
          p.block_size = block;
          p.split = std::max(split, 1);
          p.cluster = d.cluster && p.split == d.split;
          if (block >= 128 && block % lanes == 0 && (p.split <= most_split || p.split == 1)) add(p);
        }
      }
    }
    for (int block : {d.block_size / 2, d.block_size * 2}) {  // fewer or more threads along K
      KernelParams p = d;
      p.block_size = block;
      if (block >= 128 && block <= 512 && block % d.tile_n == 0) add(p);
    }
    // Blocks of one or two warps, unsplit: a tile's merge over K is then a butterfly within a
    // warp (or one exchange between two), and up to 32 tiles per SM are in flight at once, each
    // in its own phase of load, merge and store. Only where the tiles fill the SMs several
    // times over: a few tiles with a long K, one or two warps each, ran 1.2-1300x slower than
    // the default (eight column graphs, H200: bench/results/2026-11-28-session28.md, run 1).
    for (int block : {32, 64}) {
      for (int lanes : {8, 16, 32}) {
        KernelParams p = d;
        p.block_size = block;
        p.tile_n = lanes;
        p.split = 1;
        p.cluster = false;
        p.min_blocks = 0;
        if (block % lanes != 0 || lanes * d.vector_width > std::max<int64_t>(space.inner, d.vector_width) * 2) continue;
        if (ColumnTiles(region, p) >= kSmallBlockTilesPerSm * std::max(device.sm_count, 1)) add(p);
      }
    }
    // The other vector where a ragged one is allowed (row_fit.h's RaggedColumnVector): the
    // model prices the ragged thread at a calibrated fraction, so the tuner measures both.
    if (const int ragged = RaggedColumnVector(region, *region.reduce); ragged > 0) {
      KernelParams other = d;
      other.vector_width = d.vector_width == ragged ? VectorElements(region, space.inner) : ragged;
      other.split = space.inner % other.vector_width != 0 ? 1 : d.split;  // ragged tiles are not split
      other.cluster = false;
      add(other);
      other.tile_n = std::max(d.tile_n / 2, 1);
      if (other.block_size % other.tile_n == 0) add(other);
    }
    KernelParams streamed = d;
    streamed.chunk = d.chunk == 0 ? 1 : 0;
    add(streamed);
    KernelParams deeper = streamed.chunk > 0 ? streamed : d;  // eight vectors in flight
    deeper.chunk = 8;
    add(deeper);
    KernelParams ring = deeper;  // streamed through a shared-memory ring eight deep (cp.async)
    ring.smem = true;
    if (space.inner % d.vector_width == 0) add(ring);  // a ragged vector is not copied raw
    // The tile's share kept in shared memory (column_reduce.cuh's kSharedCache), where the
    // region reads its inputs more than once: read once whatever the registers hold, at the
    // default's shape and with twice, a half and a quarter of its threads along K (more blocks
    // an SM), where a block's copy leaves room for two an SM.
    const RowFit& fit = region.reduce->fit;
    if (space.inner % d.vector_width == 0 && (fit.on_chip || fit.passes > 1)) {
      for (int block : {d.block_size, d.block_size * 2, d.block_size / 2, d.block_size / 4}) {
        KernelParams p = d;
        p.block_size = block;
        p.chunk = 0;
        p.smem = true;
        if (block < 32 || block > 1024 || block % std::max(d.tile_n, 1) != 0) continue;
        const int64_t bytes =
            ColumnSharedBytes(region, *region.reduce, p.vector_width, block / std::max(p.tile_n, 1), p.split, block);
        if (2 * (bytes + 1024) > device.smem_per_sm_bytes) continue;
        add(p);
      }
    }
    // Waiting blocks as one thread-block cluster (or, where the default is one, through global
    // memory): at the same split, half, and the largest column cluster.
    for (int split : {d.split, d.split / 2, kMaxColumnClusterBlocks}) {
      if (!SplitInCluster(device, split, waits, kMaxColumnClusterBlocks) || space.reduced < split) continue;
      KernelParams p = d;
      p.split = split;
      p.cluster = !d.cluster || split != d.split;
      add(p);
    }
    // The default and the four shapes the model prices lowest, each with __launch_bounds__'s
    // minimum at the residency the model gives it (BlocksPerSm of ColumnRegisters), as the
    // default streamed tile is built (DefaultParams says why); cached tiles too, which the
    // default leaves unbounded: log_softmax over axis 1 of [4, 500, 4096] f16, 16.4 us unbounded
    // at 72 registers, 15.6 bounded at 128 (session 36, run 2).
    std::vector<std::pair<double, KernelParams>> priced;
    for (size_t c = 0; c < out.size(); ++c) {
      if (out[c].smem || out[c].cluster) continue;
      priced.push_back({c == 0 ? -1.0 : CandidatePriceUs(region, out[c], device), out[c]});
    }
    std::stable_sort(priced.begin(), priced.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t c = 0; c < priced.size() && c < 5; ++c) {
      KernelParams p = priced[c].second;
      const std::optional<RowFit> fit = CandidateColumnFit(region, p, device);
      if (!fit || fit->blocks_per_sm < 2) continue;
      p.min_blocks = std::min(fit->blocks_per_sm, 2048 / p.block_size);
      if (p.min_blocks >= 2) add(p);
    }
    return out;
  }
  const KernelParams d = out[0];
  // A persistent launch (pointwise.cuh and row_reduce.cuh loop over the work): the grid at the
  // blocks an SM's threads hold (2048 / block) x SMs, where the default launches more. Timed by
  // the tuner on 12 row and pointwise zoo graphs (H200, L2 flushed; session 28 run 7) it was
  // never faster: level on layer_norm over rows of 1000 and 768, 1-6% slower elsewhere (half
  // the blocks: 1-13% slower, so not offered). It stays a candidate for the shapes not timed.
  auto persistent = [&](const KernelParams& base, int64_t blocks) {
    if (device.sm_count <= 0 || base.split != 1) return;
    KernelParams p = base;
    p.max_grid = std::max<int64_t>(2048 / base.block_size, 1) * device.sm_count;  // sm_80, sm_90: 2048 threads an SM
    if (blocks > p.max_grid) add(p);
  };
  if (region.kind != RegionKind::kRowReduction) {
    for (int block : {128, 512}) {
      KernelParams p = d;
      p.block_size = block;
      add(p);
    }
    if (d.vector_width > 1) {
      KernelParams p = d;
      p.vector_width = d.vector_width / 2;
      add(p);
    }
    if (region.kind == RegionKind::kPointwise) {
      persistent(d, NumElements(region.space) / (static_cast<int64_t>(d.block_size) * d.vector_width));
    }
    return out;
  }
  const int g = ThreadsPerRow(d);
  for (int block : {d.block_size / 2, d.block_size * 2}) {
    if (block < 32 || block > 1024) continue;
    KernelParams p = d;
    p.block_size = block;
    if (d.rows_per_block != 1) p.rows_per_block = block / g;
    if (p.chunk > 0) p.chunk = StreamedChunk(ThreadsPerRow(p), p.vector_width);
    // A shared cache takes the same bytes per block whatever its threads: the same residency.
    if (d.min_blocks > 0) p.min_blocks = std::min(d.min_blocks, kMaxBoundedThreadsPerSm / block);
    add(p);
  }
  // Lanes per row: more vectors each, or fewer; under four only where a thread would own at
  // most four vectors (no serial loop over a row).
  const int64_t row_vectors = (region.reduce->fit.share + d.vector_width - 1) / d.vector_width;
  for (int lanes : {g / 2, g * 2, g * 4, 32}) {
    if (d.rows_per_block == 1 || lanes < 1 || lanes > 32 || (lanes < 4 && row_vectors > 4 * lanes)) continue;
    KernelParams p = d;
    p.rows_per_block = p.block_size / lanes;
    if (p.chunk > 0) p.chunk = StreamedChunk(lanes, p.vector_width);
    add(p);
  }
  if (d.chunk > 0) {  // 2, 4 and 8 vectors in flight per thread in the streamed loop (its most: 8)
    for (int unroll : {2, 4, 8}) {
      KernelParams p = d;
      p.chunk = static_cast<int64_t>(g) * d.vector_width * unroll;
      add(p);
    }
  }
  {
    KernelParams p = d;  // the other caching choice
    const int64_t tpr = ThreadsPerRow(p);
    p.chunk = d.chunk == 0 ? StreamedChunk(tpr, p.vector_width) : 0;
    p.smem = false;
    p.min_blocks = 0;
    if (p.chunk > 0 || RegisterCacheMayHold(region, p)) add(p);
  }
  if (d.block_size <= 512 && !d.smem) {  // more resident blocks per SM (the compiler keeps fewer registers)
    KernelParams p = d;
    p.min_blocks = kMaxBoundedThreadsPerSm / d.block_size;
    add(p);
  }
  if (d.rows_per_block == 1 && d.chunk == 0) {  // the row share in shared memory or in registers
    KernelParams p = d;
    p.smem = !d.smem;
    p.min_blocks = 0;
    if (p.smem || RegisterCacheMayHold(region, p)) add(p);
  }
  if (d.split > 1) {  // fewer or more blocks per row
    for (int split : {d.split / 2, d.split * 2}) {  // merging through global memory
      KernelParams p = d;
      p.split = split;
      p.cluster = false;
      // Half the blocks per row: twice a shared cache per block, half as many resident.
      if (split < d.split && d.min_blocks > 0) p.min_blocks = d.min_blocks / 2 > 1 ? d.min_blocks / 2 : 0;
      if (split >= 1 && region.reduce->space.reduced / split >= 1024) add(p);
    }
    // The split blocks as one thread-block cluster (merging through distributed shared memory):
    // at the same split, half, twice, and the largest cluster.
    // (Where the default is a cluster, the same split merging through global memory instead.)
    for (int split : {d.split, d.split / 2, d.split * 2, kMaxClusterBlocks}) {
      if (!SplitInCluster(device, split, region.reduce->fit.split_waits)) continue;
      KernelParams p = d;
      p.split = split;
      p.cluster = !d.cluster || split != d.split;
      if (split != d.split) p.min_blocks = 0;  // another share per block: another residency
      if (region.reduce->space.reduced / split >= 1024) add(p);
    }
    // Streamed, with every block of every row resident at once (two 512-thread blocks an SM):
    // where the blocks wait for their row's merge before another pass, that pass re-reads a
    // tensor that may still be in L2, and no second wave waits behind the first. (Three an SM
    // measured faster where the registers let them all stay, 31.2 against 32.6 us for
    // layer_norm over 32 rows of 262144 f32, but a cooperative launch of 396 blocks failed on
    // a row of 1M bf16: 264 fit; H200, session 26 runs 6 and 7.)
    {
      const int64_t rows = std::max<int64_t>(region.reduce->space.outer, 1);
      KernelParams p = d;
      p.block_size = 512;
      p.rows_per_block = 1;
      p.smem = false;
      p.cluster = false;
      p.min_blocks = 0;
      p.split = static_cast<int>(std::min<int64_t>(2 * device.sm_count / rows, 1024));
      p.chunk = StreamedChunk(512, p.vector_width);
      if (region.reduce->fit.split_waits && p.split > 1 && region.reduce->space.reduced / p.split >= 1024) add(p);
    }
  }
  persistent(d, (region.reduce->space.outer + d.rows_per_block - 1) / std::max(d.rows_per_block, 1));
  return out;
}

std::optional<RowFit> CandidateColumnFit(const Region& region, const KernelParams& params, const DeviceSpec& device) {
  if (region.kind != RegionKind::kColumnReduction || !region.reduce) return std::nullopt;
  ColumnLaunch launch;
  launch.vector = params.vector_width;
  launch.lanes = std::max(params.tile_n, 1);
  launch.threads = std::max(params.block_size / launch.lanes, 1);
  launch.split = std::max(params.split, 1);
  launch.cache = params.chunk > 0 ? ColumnCache::kStreamed : params.smem ? ColumnCache::kShared : ColumnCache::kRegisters;
  launch.cluster = params.cluster;
  launch.ahead = params.chunk >= 8 ? 8 : 4;
  return FitColumnLaunch(region, *region.reduce, device, launch);
}

std::optional<RunTimeEstimate> CandidateEstimate(const Region& region, const KernelParams& params,
                                                 const DeviceSpec& device) {
  std::optional<RowFit> fit = CandidateColumnFit(region, params, device);
  if (!fit) return std::nullopt;
  auto placement = std::make_shared<ReducePlacement>(*region.reduce);
  placement->fit = *fit;
  Region priced = region;
  priced.reduce = placement;
  return EstimateRunTime(priced, device);
}

double CandidatePriceUs(const Region& region, const KernelParams& params, const DeviceSpec& device) {
  std::optional<RunTimeEstimate> e = CandidateEstimate(region, params, device);
  return e ? e->total_us : -1;
}

}  // namespace kiln
