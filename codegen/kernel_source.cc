#include "codegen/kernel_source.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace kiln {

int64_t LaunchRule::Grid(int64_t count) const {
  int64_t per = std::max<int64_t>(items_per_block, 1);
  int64_t grid = (std::max<int64_t>(count, 0) + per - 1) / per;
  return std::clamp<int64_t>(grid, 1, max_grid);
}

std::string LaunchRule::ToString() const {
  return absl::StrCat("grid = min(ceil(count / ", items_per_block, "), ", max_grid, "), block = ", block,
                      ", dynamic smem = ", dynamic_smem_bytes);
}

std::string KernelSource::Signature() const {
  std::string s = absl::StrCat(name, " (", RegionKindName(kind), ", ", template_name, ", ", params.ToString(), ")\n");
  for (const KernelArg& a : args) {
    absl::StrAppend(&s, "  ", a.is_output ? "out " : "in  ", a.tensor, ": ", DTypeName(a.dtype),
                    ShapeToString(a.shape), "\n");
  }
  if (has_scratch) {
    absl::StrAppend(&s, "  scratch: ", scratch_fixed_bytes, " + ", scratch_bytes_per_count, " * count bytes\n");
  }
  absl::StrAppend(&s, "  count = ", count, " ", count_meaning, "; ", launch.ToString(), "\n");
  return s;
}

}  // namespace kiln
