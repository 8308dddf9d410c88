// The matmul kind: one cuBLASLt call (runtime/matmul.h), its analysis in matmul_epilogue.h.
#include "absl/strings/str_cat.h"
#include "passes/fusion/kinds.h"
#include "passes/fusion/matmul_epilogue.h"
#include "passes/fusion/region_kind.h"

namespace kiln::kinds {

void AnalyzeMatmulRegion(Region& region, const DeviceSpec& device) {
  absl::StatusOr<MatmulEpilogue> m = AnalyzeMatmul(region);
  if (m.ok()) {
    region.matmul = std::make_shared<const MatmulEpilogue>(*m);
  } else {
    region.placed = FusionDecision::Forbid("matmul-epilogue", std::string(m.status().message()));
  }
}

FusionDecision MatmulLegal(const Region& p, const Region& c, const Region& merged) {
  if (p.kind == RegionKind::kMatmul && c.kind == RegionKind::kMatmul) {
    return FusionDecision::Forbid("matmul-matmul", "two matmuls are two cuBLASLt calls");
  }
  if (c.kind == RegionKind::kMatmul) {
    if (p.nodes.size() == 1 && SwapsLastTwoAxes(p.nodes[0]) && p.outputs.size() == 1 &&
        p.outputs[0]->users().size() == 1 && merged.placed) {
      return FusionDecision::Allow("matmul-transpose", "transpose folded into cuBLASLt's operand op");
    }
    return FusionDecision::Forbid(
        "consumer-matmul", absl::StrCat("consumer is a matmul: cuBLASLt reads its operands from memory, so the ",
                                        RegionKindName(p.kind), " producer must be written anyway"));
  }
  if (!merged.placed) return merged.placed;
  const char* reason = !merged.matmul          ? "bias/residual add as a cuBLASLt epilogue"
                       : merged.matmul->gelu ? "bias/residual add and gelu_tanh as a cuBLASLt epilogue"
                       : merged.matmul->relu ? "bias/residual add and relu as a cuBLASLt epilogue"
                                             : "bias/residual add as a cuBLASLt epilogue";
  return FusionDecision::Allow("matmul-epilogue", reason);
}

// 2 M N K at the measured tensor-core rate (f32: the FFMA GEMM estimate), or the bytes.
RunTimeEstimate PriceMatmul(const Region& region, const DeviceSpec& device) {
  RunTimeEstimate e = TrafficAndWork(region);
  const Node* mm = region.matmul ? region.matmul->matmul : nullptr;
  const bool f32 = mm != nullptr && mm->dtype() == DType::kF32;
  e.transcendentals = 0;
  FinishEstimate(device, f32 ? device.matmul_f32_flops_per_us : device.matmul_bf16_flops_per_us,
                 device.dram_bytes_per_us, 1, e);
  return e;
}

}  // namespace kiln::kinds
