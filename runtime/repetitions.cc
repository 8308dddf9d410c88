#include "runtime/repetitions.h"

#include <algorithm>

namespace kiln {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}


const char* BenchKernelsPtx() {
  return R"(.version 7.0
.target sm_70
.address_size 64

.visible .entry kiln_l2_flush_read(.param .u64 param_p, .param .u64 param_n, .param .u64 param_sink)
{
    .reg .pred %done, %hit;
    .reg .b32 %a<4>, %x, %rtid, %rntid, %rctaid, %rnctaid;
    .reg .b64 %i, %step, %base, %addr, %sink, %n, %t;

    ld.param.u64 %base, [param_p];
    ld.param.u64 %n, [param_n];
    ld.param.u64 %sink, [param_sink];
    mov.u32 %rtid, %tid.x;
    mov.u32 %rntid, %ntid.x;
    mov.u32 %rctaid, %ctaid.x;
    mov.u32 %rnctaid, %nctaid.x;
    mul.wide.u32 %i, %rctaid, %rntid;
    cvt.u64.u32 %t, %rtid;
    add.u64 %i, %i, %t;
    mul.wide.u32 %step, %rnctaid, %rntid;
    mov.u32 %x, 0;
LOOP:
    setp.ge.u64 %done, %i, %n;
    @%done bra END;
    shl.b64 %addr, %i, 4;
    add.u64 %addr, %base, %addr;
    ld.global.cg.v4.u32 {%a0, %a1, %a2, %a3}, [%addr];
    xor.b32 %x, %x, %a0;
    xor.b32 %x, %x, %a1;
    xor.b32 %x, %x, %a2;
    xor.b32 %x, %x, %a3;
    add.u64 %i, %i, %step;
    bra LOOP;
END:
    setp.ne.u32 %hit, %x, 1802071150;
    @%hit bra DONE;
    st.global.u32 [%sink], %x;
DONE:
    ret;
}

.visible .entry kiln_spin(.param .u64 param_ns)
{
    .reg .pred %wait;
    .reg .b64 %t0, %t, %d, %ns;

    ld.param.u64 %ns, [param_ns];
    mov.u64 %t0, %globaltimer;
SPIN:
    mov.u64 %t, %globaltimer;
    sub.u64 %d, %t, %t0;
    setp.lt.u64 %wait, %d, %ns;
    @%wait bra SPIN;
    ret;
}
)";
}

absl::StatusOr<Repetitions> Repetitions::Create(bool flush_l2) {
  Repetitions r;
  KILN_ASSIGN_OR_RETURN(r.cu_, LoadCudaDriver());
  CUmodule module;
  KILN_CU_RETURN_IF_ERROR(r.cu_->cuModuleLoadData(&module, BenchKernelsPtx()));
  r.module_ = std::shared_ptr<CUmod_st>(module, [cu = r.cu_](CUmodule m) { cu->cuModuleUnload(m); });
  KILN_CU_RETURN_IF_ERROR(r.cu_->cuModuleGetFunction(&r.spin_kernel_, module, "kiln_spin"));
  if (flush_l2) {
    KILN_ASSIGN_OR_RETURN(r.flush_, DeviceBuffer::Allocate(kL2FlushBytes + 16));
    KILN_CU_RETURN_IF_ERROR(r.cu_->cuMemsetD8(r.flush_.get(), 0, r.flush_.bytes()));
    KILN_CU_RETURN_IF_ERROR(r.cu_->cuModuleGetFunction(&r.flush_kernel_, module, "kiln_l2_flush_read"));
  }
  return r;
}

absl::Status Repetitions::Flush() const {
  CUdeviceptr p = flush_.get(), sink = flush_.get() + kL2FlushBytes;
  unsigned long long words = kL2FlushBytes / 16;
  void* args[] = {&p, &words, &sink};
  KILN_CU_RETURN_IF_ERROR(cu_->cuLaunchKernel(flush_kernel_, 1024, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  return absl::OkStatus();
}

absl::Status Repetitions::Spin() const {
  unsigned long long ns = kLeadNs;
  void* args[] = {&ns};
  KILN_CU_RETURN_IF_ERROR(cu_->cuLaunchKernel(spin_kernel_, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  return absl::OkStatus();
}

}  // namespace kiln
