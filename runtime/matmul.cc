// MatmulRunner: kiln's row-major batched matmul on cuBLASLt (see matmul.h for the mapping).
// Prepare builds one plan per distinct spec (matmul descriptor, four matrix layouts and the
// algorithm cublasLtMatmulAlgoGetHeuristic ranks first within the runner's workspace) and
// caches it; Run only sets the bias pointer and calls cublasLtMatmul on the caller's stream.
// Every cuBLASLt call is checked by KILN_CUBLAS_RETURN_IF_ERROR, which names the call and the
// cublasStatus_t. The workspace is allocated with the run-time-loaded driver (cuda_driver.h).
//
// Alignment: the heuristic is asked for algorithms that accept 16-byte aligned A, B, C and D
// (its default assumes 256), and it is shown a 16-byte aligned placeholder bias pointer, since
// it infers the bias alignment from the pointer's value; Run rejects pointers that are not
// 16-byte aligned. The runtime's arena is 256-byte aligned and user pointers are checked at 16.
#include "runtime/matmul.h"

#include <cublasLt.h>

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/base/status.h"
#include "runtime/cuda_driver.h"

namespace kiln {
namespace {

// Pointers and batch strides must be aligned to this many bytes (see the header comment).
constexpr uint32_t kMinAlignmentBytes = 16;
// Heuristic candidates asked for; the first one whose state is success is used.
constexpr int kHeuristicCandidates = 8;

// "cublasLtMatmul(...) failed: CUBLAS_STATUS_NOT_SUPPORTED (15, the functionality requested is
// not supported) at runtime/matmul.cc:123".
absl::Status CublasStatusToStatus(cublasStatus_t status, const char* call, const char* file,
                                  int line) {
  const char* name = cublasLtGetStatusName(status);
  const char* description = cublasLtGetStatusString(status);
  std::string message = absl::StrCat(
      call, " failed: ", name ? name : "unknown cublasStatus_t", " (", static_cast<int>(status),
      ", ", description ? description : "no description", ") at ", file, ":", line);
  switch (status) {
    case CUBLAS_STATUS_NOT_INITIALIZED:
    case CUBLAS_STATUS_ARCH_MISMATCH: return absl::FailedPreconditionError(message);
    case CUBLAS_STATUS_ALLOC_FAILED: return absl::ResourceExhaustedError(message);
    case CUBLAS_STATUS_INVALID_VALUE: return absl::InvalidArgumentError(message);
    case CUBLAS_STATUS_NOT_SUPPORTED: return absl::UnimplementedError(message);
    default: return absl::InternalError(message);
  }
}

#define KILN_CUBLAS_RETURN_IF_ERROR(call)                                          \
  do {                                                                             \
    cublasStatus_t kiln_cublas_status_ = (call);                                   \
    if (kiln_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                            \
      return CublasStatusToStatus(kiln_cublas_status_, #call, __FILE__, __LINE__); \
    }                                                                              \
  } while (0)

// a * b, or -1 when it overflows int64 (arguments are non-negative).
int64_t MulOrMinusOne(int64_t a, int64_t b) {
  int64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? -1 : product;
}

cudaDataType_t CudaDataType(DType dtype) {
  switch (dtype) {
    case DType::kF32: return CUDA_R_32F;
    case DType::kF16: return CUDA_R_16F;
    case DType::kBF16: return CUDA_R_16BF;
    default: break;
  }
  KILN_CHECK(false) << "matmul dtype " << DTypeName(dtype) << " passed Validate";
  return CUDA_R_32F;
}

// The cache key: every field of MatmulSpec.
using SpecKey = std::tuple<DType, int64_t, int64_t, int64_t, int64_t, bool, bool, int64_t, int64_t,
                           int64_t, bool, bool, bool, bool, int>;

SpecKey KeyOf(const MatmulSpec& s) {
  return {s.dtype,   s.m,        s.n,        s.k,        s.batch,    s.trans_a,      s.trans_b,
          s.stride_a, s.stride_b, s.stride_d, s.has_bias, s.has_residual, s.gelu, s.relu, s.alignment};
}

// One prepared matmul: cuBLASLt's A is our B, its B is our A; C and D share one layout.
struct Plan {
  MatmulSpec spec;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layout_a = nullptr;  // cuBLASLt's A (our B)
  cublasLtMatrixLayout_t layout_b = nullptr;  // cuBLASLt's B (our A)
  cublasLtMatrixLayout_t layout_d = nullptr;  // C and D
  cublasLtMatmulAlgo_t algo = {};

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (layout_d != nullptr) cublasLtMatrixLayoutDestroy(layout_d);
    if (layout_b != nullptr) cublasLtMatrixLayoutDestroy(layout_b);
    if (layout_a != nullptr) cublasLtMatrixLayoutDestroy(layout_a);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  }
};

// A column-major rows x cols layout with leading dimension ld, `batch` matrices `stride`
// elements apart.
absl::Status CreateLayout(cublasLtMatrixLayout_t* layout, cudaDataType_t type, int64_t rows,
                          int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(layout, type, static_cast<uint64_t>(rows),
                                                         static_cast<uint64_t>(cols), ld));
  if (batch > 1) {
    int32_t count = static_cast<int32_t>(batch);
    KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(
        *layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(
        *layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return absl::OkStatus();
}

absl::Status CheckAligned(CUdeviceptr pointer, const char* name, uint32_t alignment = kMinAlignmentBytes) {
  if (pointer % alignment != 0) {
    return absl::InvalidArgumentError(absl::StrCat("matmul pointer ", name, " = 0x",
                                                   absl::Hex(pointer), " is not ",
                                                   alignment, "-byte aligned"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string MatmulSpec::ToString() const {
  std::string a = trans_a ? absl::StrCat(k, "x", m, "^T") : absl::StrCat(m, "x", k);
  std::string b = trans_b ? absl::StrCat(n, "x", k, "^T") : absl::StrCat(k, "x", n);
  std::string out = absl::StrCat(DTypeName(dtype), " [");
  if (batch != 1) absl::StrAppend(&out, batch, " x ");
  absl::StrAppend(&out, a, " @ ", b);
  // Strides matter only for batches; the dense ones go unsaid.
  if (batch != 1 && (stride_a != MulOrMinusOne(m, k) || stride_b != MulOrMinusOne(k, n) ||
                     stride_d != MulOrMinusOne(m, n))) {
    absl::StrAppend(&out, ", strides a=", stride_a, " b=", stride_b, " d=", stride_d);
  }
  absl::StrAppend(&out, "]");
  if (has_bias) absl::StrAppend(&out, " +bias");
  if (has_residual) absl::StrAppend(&out, " +residual");
  if (gelu) absl::StrAppend(&out, " gelu_tanh");
  if (relu) absl::StrAppend(&out, " relu");
  return out;
}

absl::Status MatmulSpec::Validate() const {
  auto invalid = [this](auto&&... problem) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid matmul ", ToString(), ": ", problem...));
  };
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16) {
    return invalid("dtype must be f32, f16 or bf16, got ", DTypeName(dtype));
  }
  if (m <= 0) return invalid("m must be positive, got ", m);
  if (n <= 0) return invalid("n must be positive, got ", n);
  if (k <= 0) return invalid("k must be positive, got ", k);
  if (batch < 1) return invalid("batch must be at least 1, got ", batch);
  if (gelu && relu) return invalid("one activation epilogue at most (gelu and relu both set)");
  if (alignment < ByteSize(dtype) || alignment > 16 || (alignment & (alignment - 1)) != 0) {
    return invalid("alignment ", alignment, " is not a power of two between the element size and 16");
  }
  if (batch > std::numeric_limits<int32_t>::max()) {
    return invalid("batch ", batch, " exceeds cuBLASLt's int32 batch count");
  }
  struct Operand {
    const char* name;
    int64_t rows, cols, stride;
    bool written;
  };
  for (const Operand& x : {Operand{"a", m, k, stride_a, false}, Operand{"b", k, n, stride_b, false},
                           Operand{"d", m, n, stride_d, true}}) {
    int64_t size = MulOrMinusOne(x.rows, x.cols);
    if (size < 0) return invalid("matrix ", x.name, " has more than 2^63 elements");
    if (x.stride < 0) return invalid("stride_", x.name, " must be non-negative, got ", x.stride);
    if (batch == 1) continue;  // the stride is never used
    if (x.stride == 0 && x.written) {
      return invalid("stride_d must not be 0 when batch > 1 (every batch would write the same D",
                     has_residual ? " and read the same residual)" : ")");
    }
    if (x.stride != 0 && x.stride < size) {
      return invalid("stride_", x.name, " = ", x.stride, " is neither 0 (broadcast) nor at least ",
                     x.name, "'s ", size, " elements (batches would overlap)");
    }
    int64_t last = MulOrMinusOne(batch - 1, x.stride);
    if (last < 0 || last > std::numeric_limits<int64_t>::max() - size) {
      return invalid("batches of ", x.name, " span more than 2^63 elements");
    }
  }
  return absl::OkStatus();
}

class MatmulRunner::Impl {
 public:
  explicit Impl(const CudaDriver* cu) : cu_(cu) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    plans_.clear();  // descriptors before the handle
    if (handle_ != nullptr) cublasLtDestroy(handle_);
    if (workspace_ != 0) cu_->cuMemFree(workspace_);  // an error here has no one to go to
  }

  absl::Status Init(int64_t workspace_bytes) {
    CUcontext context = nullptr;
    KILN_CU_RETURN_IF_ERROR(cu_->cuCtxGetCurrent(&context));
    if (context == nullptr) {
      return absl::FailedPreconditionError(
          "MatmulRunner::Create needs a current CUDA context (none is current on this thread)");
    }
    KILN_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&handle_));
    if (workspace_bytes > 0) {
      KILN_CU_RETURN_IF_ERROR(cu_->cuMemAlloc(&workspace_, static_cast<size_t>(workspace_bytes)));
    }
    workspace_bytes_ = workspace_bytes;
    return absl::OkStatus();
  }

  absl::StatusOr<int> Prepare(const MatmulSpec& spec) {
    KILN_RETURN_IF_ERROR(spec.Validate());
    SpecKey key = KeyOf(spec);
    if (auto it = ids_.find(key); it != ids_.end()) return it->second;
    auto plan = std::make_unique<Plan>();
    plan->spec = spec;
    absl::Status built = Build(spec, *plan);
    if (!built.ok()) {
      return absl::Status(built.code(),
                          absl::StrCat("matmul ", spec.ToString(), ": ", built.message()));
    }
    int id = static_cast<int>(plans_.size());
    plans_.push_back(std::move(plan));
    ids_.emplace(key, id);
    return id;
  }

  absl::Status Run(int id, const MatmulPointers& p, CUstream stream) {
    if (id < 0 || id >= static_cast<int>(plans_.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("matmul plan id ", id, " was not prepared (", plans_.size(), " plans)"));
    }
    Plan& plan = *plans_[id];
    const MatmulSpec& spec = plan.spec;
    auto invalid = [&spec](auto&&... problem) {
      return absl::InvalidArgumentError(absl::StrCat("matmul ", spec.ToString(), ": ", problem...));
    };
    if (p.a == 0 || p.b == 0 || p.d == 0) return invalid("null A, B or D pointer");
    if (spec.has_bias != (p.bias != 0)) {
      return invalid(spec.has_bias ? "the spec has a bias but its pointer is null"
                                   : "a bias pointer was given but the spec has no bias");
    }
    if (spec.has_residual != (p.residual != 0)) {
      return invalid(spec.has_residual ? "the spec has a residual but its pointer is null"
                                       : "a residual pointer was given but the spec has none");
    }
    KILN_RETURN_IF_ERROR(CheckAligned(p.a, "a", spec.alignment));
    KILN_RETURN_IF_ERROR(CheckAligned(p.b, "b", spec.alignment));
    KILN_RETURN_IF_ERROR(CheckAligned(p.d, "d", spec.alignment));
    if (spec.has_bias) {
      KILN_RETURN_IF_ERROR(CheckAligned(p.bias, "bias"));
      const void* bias = reinterpret_cast<const void*>(p.bias);
      KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
          plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    }
    if (spec.has_residual) KILN_RETURN_IF_ERROR(CheckAligned(p.residual, "residual", spec.alignment));
    const float alpha = 1.0f;
    const float beta = spec.has_residual ? 1.0f : 0.0f;
    // C is the residual (beta 1) or, unread with beta 0, D itself.
    CUdeviceptr c = spec.has_residual ? p.residual : p.d;
    KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(
        handle_, plan.desc, &alpha, reinterpret_cast<const void*>(p.b), plan.layout_a,
        reinterpret_cast<const void*>(p.a), plan.layout_b, &beta, reinterpret_cast<const void*>(c),
        plan.layout_d, reinterpret_cast<void*>(p.d), plan.layout_d, &plan.algo,
        reinterpret_cast<void*>(workspace_), static_cast<size_t>(workspace_bytes_),
        reinterpret_cast<cudaStream_t>(stream)));
    return absl::OkStatus();
  }

 private:
  // Fills `plan`'s descriptors and algorithm (row-major to column-major as in matmul.h).
  absl::Status Build(const MatmulSpec& spec, Plan& plan) {
    const cudaDataType_t type = CudaDataType(spec.dtype);
    KILN_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescCreate(&plan.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t transa = spec.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t transb = spec.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)));
    KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb)));
    if (spec.has_bias || spec.gelu || spec.relu) {
      cublasLtEpilogue_t epilogue = spec.gelu   ? (spec.has_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU)
                                    : spec.relu ? (spec.has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU)
                                                : CUBLASLT_EPILOGUE_BIAS;
      KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
          plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    }
    if (spec.has_bias) {
      // D's type, which is also cuBLASLt's default for these types; said explicitly.
      int32_t bias_type = type;
      KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
          plan.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
      // The heuristic reads the bias alignment from the pointer's value; Run sets the real one.
      const void* placeholder = reinterpret_cast<const void*>(uintptr_t{kMinAlignmentBytes});
      KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
          plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &placeholder, sizeof(placeholder)));
    }
    // cuBLASLt's A = our B: stored col-major [N, K] (ld N), or [K, N] (ld K) when trans_b.
    KILN_RETURN_IF_ERROR(spec.trans_b ? CreateLayout(&plan.layout_a, type, spec.k, spec.n, spec.k,
                                                     spec.batch, spec.stride_b)
                                      : CreateLayout(&plan.layout_a, type, spec.n, spec.k, spec.n,
                                                     spec.batch, spec.stride_b));
    // cuBLASLt's B = our A: stored col-major [K, M] (ld K), or [M, K] (ld M) when trans_a.
    KILN_RETURN_IF_ERROR(spec.trans_a ? CreateLayout(&plan.layout_b, type, spec.m, spec.k, spec.m,
                                                     spec.batch, spec.stride_a)
                                      : CreateLayout(&plan.layout_b, type, spec.k, spec.m, spec.k,
                                                     spec.batch, spec.stride_a));
    // C and D: col-major [N, M] (ld N), i.e. row-major [M, N].
    KILN_RETURN_IF_ERROR(
        CreateLayout(&plan.layout_d, type, spec.n, spec.m, spec.n, spec.batch, spec.stride_d));

    cublasLtMatmulPreference_t preference = nullptr;
    KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&preference));
    absl::Status status = PickAlgorithm(plan, preference);
    cublasLtMatmulPreferenceDestroy(preference);
    return status;
  }

  absl::Status PickAlgorithm(Plan& plan, cublasLtMatmulPreference_t preference) {
    uint64_t max_workspace = static_cast<uint64_t>(workspace_bytes_);
    KILN_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &max_workspace, sizeof(max_workspace)));
    for (cublasLtMatmulPreferenceAttributes_t attribute :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
      uint32_t alignment = static_cast<uint32_t>(plan.spec.alignment);
      KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(
          preference, attribute, &alignment, sizeof(alignment)));
    }
    cublasLtMatmulHeuristicResult_t results[kHeuristicCandidates] = {};
    int count = 0;
    cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        handle_, plan.desc, plan.layout_a, plan.layout_b, plan.layout_d, plan.layout_d, preference,
        kHeuristicCandidates, results, &count);
    // NOT_SUPPORTED means no heuristic covers this case: the same answer as zero results.
    if (status != CUBLAS_STATUS_SUCCESS && status != CUBLAS_STATUS_NOT_SUPPORTED) {
      return CublasStatusToStatus(status, "cublasLtMatmulAlgoGetHeuristic(...)", __FILE__,
                                  __LINE__);
    }
    for (int i = 0; status == CUBLAS_STATUS_SUCCESS && i < count; ++i) {
      if (results[i].state == CUBLAS_STATUS_SUCCESS &&
          results[i].workspaceSize <= static_cast<size_t>(workspace_bytes_)) {
        plan.algo = results[i].algo;
        return absl::OkStatus();
      }
    }
    return absl::NotFoundError(
        absl::StrCat("cuBLASLt has no algorithm for it (cublasLtMatmulAlgoGetHeuristic: ",
                     cublasLtGetStatusName(status), ", ", count, " candidates, workspace limit ",
                     workspace_bytes_, " bytes, ", plan.spec.alignment, "-byte alignment)"));
  }

  const CudaDriver* cu_;
  cublasLtHandle_t handle_ = nullptr;
  CUdeviceptr workspace_ = 0;
  int64_t workspace_bytes_ = 0;
  std::vector<std::unique_ptr<Plan>> plans_;  // indexed by id
  std::map<SpecKey, int> ids_;
};

absl::StatusOr<std::unique_ptr<MatmulRunner>> MatmulRunner::Create(int64_t workspace_bytes) {
  if (workspace_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("matmul workspace must be non-negative, got ", workspace_bytes, " bytes"));
  }
  KILN_ASSIGN_OR_RETURN(const CudaDriver* cu, LoadCudaDriver());
  auto impl = std::make_unique<Impl>(cu);
  KILN_RETURN_IF_ERROR(impl->Init(workspace_bytes));
  return std::unique_ptr<MatmulRunner>(new MatmulRunner(std::move(impl)));
}

MatmulRunner::MatmulRunner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MatmulRunner::~MatmulRunner() = default;

absl::StatusOr<int> MatmulRunner::Prepare(const MatmulSpec& spec) { return impl_->Prepare(spec); }

absl::Status MatmulRunner::Run(int id, const MatmulPointers& pointers, CUstream stream) {
  return impl_->Run(id, pointers, stream);
}

}  // namespace kiln
