// TensorMapSpec: a TMA tensor map that a generated kernel takes as a parameter, described as
// plain data. Codegen writes one per operand a kernel copies with the tensor memory accelerator
// (templates/tma.cuh); the runtime encodes it at each launch from the operand's address
// (runtime/launch.h LaunchArgs, with cuTensorMapEncodeTiled) and an AOT artifact stores it, so
// a kernel's maps always describe the buffers it is launched on.
#ifndef KILN_IR_TENSOR_MAP_H_
#define KILN_IR_TENSOR_MAP_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/dtype.h"

namespace kiln {

struct TensorMapSpec {
  static constexpr int kMaxRank = 5;
  int arg = -1;                // the pointer parameter (index into the kernel's args) the map reads
  int64_t offset = 0;          // elements from that pointer to the map's element 0
  DType dtype = DType::kBF16;
  int rank = 0;                               // 2..5
  std::array<int64_t, kMaxRank> dims{};       // extents, innermost (contiguous) first
  std::array<int64_t, kMaxRank> strides{};    // bytes between consecutive indices of dims 1..rank-1
  std::array<int, kMaxRank> box{};            // the extents one copy moves
  int swizzle_bytes = 128;                    // the shared-memory swizzle: 0 (none) or 128

  bool operator==(const TensorMapSpec& o) const {
    return arg == o.arg && offset == o.offset && dtype == o.dtype && rank == o.rank && dims == o.dims &&
           strides == o.strides && box == o.box && swizzle_bytes == o.swizzle_bytes;
  }
  // "arg 1 +0 bf16 dims [128, 4096, 8] strides [256, 1048576] box [64, 128, 1] swizzle 128"
  std::string ToString() const {
    auto first = [&](const auto& a, int from) {
      return absl::StrJoin(a.begin() + from, a.begin() + (rank > from ? rank : from), ", ");
    };
    return absl::StrCat("arg ", arg, " +", offset, " ", DTypeName(dtype), " dims [", first(dims, 0), "] strides [",
                        first(strides, 1), "] box [", first(box, 0), "] swizzle ", swizzle_bytes);
  }
};

}  // namespace kiln

#endif  // KILN_IR_TENSOR_MAP_H_
