#include "runtime/program.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runtime/buffer_plan.h"

namespace kiln {

const char* BufferKindName(BufferKind kind) {
  switch (kind) {
    case BufferKind::kInput: return "input";
    case BufferKind::kOutput: return "output";
    case BufferKind::kConstant: return "constant";
    case BufferKind::kArena: return "arena";
    case BufferKind::kPersistent: return "persistent";
    case BufferKind::kAlias: return "alias";
  }
  return "?";
}

namespace {

absl::Status Bad(const std::string& what) {
  return absl::DataLossError(absl::StrCat("invalid program: ", what));
}

// [offset, offset + bytes) inside [0, limit), without overflow.
bool Fits(int64_t offset, int64_t bytes, int64_t limit) { return bytes <= limit && offset <= limit - bytes; }

}  // namespace

absl::Status Program::Validate() const {
  const int n = static_cast<int>(buffers.size());
  auto in_range = [&](int id) { return id >= 0 && id < n; };
  for (int i = 0; i < n; ++i) {
    const Buffer& b = buffers[i];
    if (b.bytes < 0 || b.offset < 0) return Bad(absl::StrCat("buffer ", b.name, " has a negative size or offset"));
    if (b.kind != BufferKind::kPersistent) {  // scratch is raw bytes; everything else is its tensor
      absl::StatusOr<int64_t> elements = CheckedNumElements(b.shape);
      if (!elements.ok() || *elements * ByteSize(b.dtype) != b.bytes) {
        return Bad(absl::StrCat("buffer ", b.name, " has ", b.bytes, " bytes for ", DTypeName(b.dtype),
                                ShapeToString(b.shape)));
      }
    }
    switch (b.kind) {
      case BufferKind::kInput:
        if (b.index < 0 || b.index >= static_cast<int>(inputs.size()) || inputs[b.index] != i) {
          return Bad(absl::StrCat("input buffer ", b.name, " is not input #", b.index));
        }
        break;
      case BufferKind::kOutput:
        if (b.index < 0 || b.index >= static_cast<int>(outputs.size()) || outputs[b.index] != i) {
          return Bad(absl::StrCat("output buffer ", b.name, " is not output #", b.index));
        }
        break;
      case BufferKind::kConstant:
        if (!Fits(b.offset, b.bytes, static_cast<int64_t>(constants.size()))) {
          return Bad(absl::StrCat("constant ", b.name, " lies outside the constant block"));
        }
        break;
      case BufferKind::kArena:
        if (!Fits(b.offset, b.bytes, arena_bytes)) return Bad(absl::StrCat("buffer ", b.name, " lies outside the arena"));
        break;
      case BufferKind::kPersistent:
        if (!Fits(b.offset, b.bytes, persistent_bytes)) {
          return Bad(absl::StrCat("buffer ", b.name, " lies outside the persistent block"));
        }
        break;
      case BufferKind::kAlias: {
        // The chain must end at a buffer that owns bytes, within n links (no loops).
        int target = i, links = 0;
        while (in_range(target) && buffers[target].kind == BufferKind::kAlias && links <= n) {
          target = buffers[target].alias_of;
          ++links;
        }
        if (!in_range(target) || links > n) return Bad(absl::StrCat("alias ", b.name, " has a bad or looping target"));
        if (buffers[b.alias_of].bytes != b.bytes) return Bad(absl::StrCat("alias ", b.name, " changes the size"));
        break;
      }
    }
  }
  if (inputs.size() != 0 || outputs.size() != 0) {
    for (size_t j = 0; j < inputs.size(); ++j) {
      int id = inputs[j];
      if (!in_range(id) || buffers[id].kind != BufferKind::kInput || buffers[id].index != static_cast<int>(j)) {
        return Bad(absl::StrCat("input #", j, " is not an input buffer of that index"));
      }
    }
    for (size_t j = 0; j < outputs.size(); ++j) {
      int id = outputs[j];
      if (!in_range(id) || buffers[id].kind != BufferKind::kOutput || buffers[id].index != static_cast<int>(j)) {
        return Bad(absl::StrCat("output #", j, " is not an output buffer of that index"));
      }
    }
  }
  if (output_names.size() != outputs.size()) return Bad("output names and outputs differ in number");
  for (size_t s = 0; s < steps.size(); ++s) {
    const Step& step = steps[s];
    for (int id : StepBuffers(step)) {
      if (!in_range(id)) return Bad(absl::StrCat("step ", s, " uses buffer ", id, " of ", n));
    }
    if (step.kind == Step::Kind::kKernel) {
      const KernelStep& k = step.kernel;
      if (k.module < 0 || k.module >= static_cast<int>(modules.size())) {
        return Bad(absl::StrCat("step ", s, " names module ", k.module));
      }
      const LaunchShape& l = k.launch;
      if (l.grid < 1 || l.grid > 2147483647 || l.grid_y < 1 || l.grid_y > 65535 || l.grid_z < 1 || l.grid_z > 65535 ||
          l.block < 1 || l.block > 1024 || l.dynamic_smem_bytes < 0 || l.dynamic_smem_bytes > (256 << 10) ||
          l.cluster_x < 1 || l.cluster_x > 16 || l.grid % l.cluster_x != 0 || l.grid_multiple < 1 ||
          l.grid % l.grid_multiple != 0 || k.count < 0) {
        return Bad(absl::StrCat("step ", s, " has a bad launch shape"));
      }
      for (const TensorMapSpec& m : l.tensor_maps) {
        bool ok = m.arg >= 0 && m.arg < static_cast<int>(k.args.size()) && m.offset >= 0 && m.rank >= 2 &&
                  m.rank <= TensorMapSpec::kMaxRank && (m.swizzle_bytes == 0 || m.swizzle_bytes == 128);
        for (int d = 0; ok && d < m.rank; ++d) {
          ok = m.dims[d] >= 1 && m.dims[d] <= (int64_t{1} << 32) && m.box[d] >= 1 && m.box[d] <= 256 &&
               (d == 0 || (m.strides[d] > 0 && m.strides[d] % 16 == 0 && m.strides[d] < (int64_t{1} << 40)));
        }
        if (!ok) return Bad(absl::StrCat("step ", s, " has a bad tensor map: ", m.ToString()));
      }
      for (const auto& [in, out] : k.in_place) {
        const int args = static_cast<int>(k.args.size());
        if (in < 0 || in >= args || out < 0 || out >= args || in == out ||
            buffers[k.args[in]].bytes != buffers[k.args[out]].bytes) {
          return Bad(absl::StrCat("step ", s, " writes argument ", out, " over argument ", in,
                                  ": not two arguments of one size"));
        }
      }
    } else if (step.kind == Step::Kind::kMatmul) {
      const MatmulStep& m = step.matmul;
      absl::Status valid = m.spec.Validate();
      if (!valid.ok()) return Bad(absl::StrCat("step ", s, ": ", valid.message()));
      if (m.calls.empty()) return Bad(absl::StrCat("step ", s, " makes no cuBLASLt call"));
      if (m.spec.has_bias != (m.bias >= 0) || m.spec.has_residual != (m.residual >= 0)) {
        return Bad(absl::StrCat("step ", s, ": bias/residual buffers and the spec disagree"));
      }
      // Every call's matrices lie inside their buffers (elements; 128-bit to rule out overflow).
      auto inside = [&](int id, int64_t offset, int64_t stride, int64_t rows, int64_t cols) {
        const Buffer& b = buffers[id];
        __int128 last = static_cast<__int128>(offset) + static_cast<__int128>(m.spec.batch - 1) * stride +
                        static_cast<__int128>(rows) * cols;
        return b.dtype == m.spec.dtype && offset >= 0 && last * ByteSize(b.dtype) <= b.bytes;
      };
      for (const MatmulStep::Call& c : m.calls) {
        if (!inside(m.a, c.a, m.spec.stride_a, m.spec.m, m.spec.k) || !inside(m.b, c.b, m.spec.stride_b, m.spec.k, m.spec.n) ||
            !inside(m.d, c.d, m.spec.stride_d, m.spec.m, m.spec.n) ||
            (m.residual >= 0 && !inside(m.residual, c.d, m.spec.stride_d, m.spec.m, m.spec.n)) ||
            (m.bias >= 0 && !inside(m.bias, 0, 0, 1, m.spec.n))) {
          return Bad(absl::StrCat("step ", s, ": a cuBLASLt call reaches outside its buffers"));
        }
      }
    } else if (buffers[step.copy.src].bytes != buffers[step.copy.dst].bytes) {
      return Bad(absl::StrCat("step ", s, " copies between buffers of different sizes"));
    }
  }
  return absl::OkStatus();
}

int64_t Program::CompulsoryBytes() const {  // after Validate: sums of in-range sizes
  int64_t total = 0;
  for (int id : inputs) total += buffers[id].bytes;
  for (int id : outputs) total += buffers[id].bytes;
  return total;
}

std::string Program::ToString() const {
  std::string out = absl::StrFormat("program %s for %s: %d steps, %d modules, arena %d B, persistent %d B, constants %d B\n",
                                    graph_name, arch, steps.size(), modules.size(), arena_bytes, persistent_bytes,
                                    constants.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& b = buffers[i];
    absl::StrAppendFormat(&out, "  buffer %d %s %s%s %s", i, b.name, DTypeName(b.dtype), ShapeToString(b.shape),
                          BufferKindName(b.kind));
    if (b.kind == BufferKind::kInput || b.kind == BufferKind::kOutput) absl::StrAppend(&out, " #", b.index);
    if (b.kind == BufferKind::kAlias) absl::StrAppend(&out, " of ", b.alias_of);
    if (b.kind == BufferKind::kArena || b.kind == BufferKind::kConstant || b.kind == BufferKind::kPersistent) {
      absl::StrAppend(&out, " @", b.offset);
    }
    absl::StrAppend(&out, " ", b.bytes, " B\n");
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    switch (s.kind) {
      case Step::Kind::kKernel:
        absl::StrAppendFormat(&out, "  step %d launch %s grid %d block %d count %d args (%s)%s%s\n", i, s.kernel.name,
                              s.kernel.launch.grid, s.kernel.launch.block, s.kernel.count, absl::StrJoin(s.kernel.args, ","),
                              s.kernel.scratch >= 0 ? absl::StrCat(" scratch ", s.kernel.scratch) : "",
                              s.kernel.in_place.empty() ? "" : absl::StrCat(" in-place ", absl::StrJoin(s.kernel.in_place, ",",
                                  [](std::string* o, const std::pair<int, int>& p) {
                                    absl::StrAppend(o, p.first, ">", p.second);
                                  })));
        for (const TensorMapSpec& m : s.kernel.launch.tensor_maps) absl::StrAppend(&out, "    tensor map ", m.ToString(), "\n");
        break;
      case Step::Kind::kMatmul:
        absl::StrAppendFormat(&out, "  step %d cublasLt %s a %d b %d d %d%s%s x%d\n", i, s.matmul.spec.ToString(),
                              s.matmul.a, s.matmul.b, s.matmul.d,
                              s.matmul.bias >= 0 ? absl::StrCat(" bias ", s.matmul.bias) : "",
                              s.matmul.residual >= 0 ? absl::StrCat(" residual ", s.matmul.residual) : "",
                              s.matmul.calls.size());
        break;
      case Step::Kind::kCopy:
        absl::StrAppendFormat(&out, "  step %d copy %d -> %d\n", i, s.copy.src, s.copy.dst);
        break;
    }
  }
  return out;
}

}  // namespace kiln
