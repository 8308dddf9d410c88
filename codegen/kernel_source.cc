#include "codegen/kernel_source.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "passes/fusion/region_kind.h"

namespace kiln {

int64_t LaunchRule::Grid(int64_t count) const {
  const int64_t per = std::max<int64_t>(items_per_block, 1);
  const int64_t group = std::max<int64_t>(blocks_per_item_group, 1);
  const int64_t groups = std::clamp<int64_t>((std::max<int64_t>(count, 0) + per - 1) / per, 1, max_grid / group);
  return groups * group;
}

std::string LaunchRule::ToString() const {
  std::string s = absl::StrCat("grid = min(ceil(count / ", items_per_block, ")",
                               blocks_per_item_group > 1 ? absl::StrCat(" x ", blocks_per_item_group) : "", ", ",
                               max_grid, ")");
  if (grid_y > 1 || grid_z > 1) absl::StrAppend(&s, " x ", grid_y, " x ", grid_z);
  absl::StrAppend(&s, ", block = ", block, ", dynamic smem = ", dynamic_smem_bytes);
  if (cluster_x > 1) absl::StrAppend(&s, ", cluster = ", cluster_x);
  if (cooperative) absl::StrAppend(&s, ", cooperative");
  return s;
}

std::string KernelSource::Signature() const {
  std::string s = absl::StrCat(name, " (", RegionKindName(kind), ", ", template_name, ", ", params.ToString(), ")\n");
  for (size_t k = 0; k < args.size(); ++k) {
    const KernelArg& a = args[k];
    absl::StrAppend(&s, "  ", a.is_output ? "out " : "in  ", a.tensor, ": ", DTypeName(a.dtype),
                    ShapeToString(a.shape));
    for (const auto& [in, out] : in_place) {
      if (out == static_cast<int>(k)) absl::StrAppend(&s, " (may be written over ", args[in].tensor, ")");
    }
    absl::StrAppend(&s, "\n");
  }
  if (has_scratch) {
    absl::StrAppend(&s, "  scratch: ", scratch_fixed_bytes, " + ", scratch_bytes_per_count, " * count bytes\n");
  }
  absl::StrAppend(&s, "  count = ", count, " ", count_meaning, "; ", launch.ToString(), "\n");
  for (const TensorMapSpec& m : launch.tensor_maps) absl::StrAppend(&s, "  tensor map: ", m.ToString(), "\n");
  return s;
}

}  // namespace kiln
