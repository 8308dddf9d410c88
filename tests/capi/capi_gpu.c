/* The C ABI on the GPU (test capi_gpu_test, label gpu): compiles GRAPH for this GPU, runs it
 * through kiln_executable_run on device memory allocated with the driver API in the primary
 * context (as the CUDA runtime and PyTorch allocate), on the default stream and on a created
 * stream, directly and through a CUDA graph (kiln_executable_set_cuda_graph), and compares with
 * kiln_graph_reference; then the same from a saved artifact, and the
 * errors for a host pointer and a wrong count. Exits 77 (CTest: skipped) without a CUDA driver
 * or a GPU. The driver is dlopen()ed so that the binary starts on machines without one.
 *
 * usage: capi_gpu GRAPH.json   (examples/small/softmax.json) */
#include <kiln.h>

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SKIP 77

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_count_fn)(int*);
typedef int (*cu_device_get_fn)(int*, int);
typedef int (*cu_retain_fn)(void**, int);
typedef int (*cu_set_current_fn)(void*);
typedef int (*cu_alloc_fn)(uint64_t*, size_t);
typedef int (*cu_free_fn)(uint64_t);
typedef int (*cu_htod_fn)(uint64_t, const void*, size_t);
typedef int (*cu_dtoh_fn)(void*, uint64_t, size_t);
typedef int (*cu_sync_fn)(void);
typedef int (*cu_stream_create_fn)(void**, unsigned);
typedef int (*cu_stream_sync_fn)(void*);

static struct {
  cu_alloc_fn alloc;
  cu_free_fn free;
  cu_htod_fn htod;
  cu_dtoh_fn dtoh;
  cu_sync_fn sync;
  cu_stream_create_fn stream_create;
  cu_stream_sync_fn stream_sync;
} cu;

#define CHECK_OK(call)                                                                                     \
  do {                                                                                                     \
    int status_ = (call);                                                                                  \
    if (status_ != KILN_OK) {                                                                              \
      fprintf(stderr, "FAIL %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, kiln_status_name(status_), \
              kiln_last_error());                                                                          \
      exit(1);                                                                                             \
    }                                                                                                      \
  } while (0)
#define CHECK_CU(call)                                                                           \
  do {                                                                                           \
    int r_ = (call);                                                                             \
    if (r_ != 0) {                                                                               \
      fprintf(stderr, "FAIL %s:%d: %s -> CUresult %d\n", __FILE__, __LINE__, #call, r_);       \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)

static float bf16_to_float(uint16_t bits) {
  uint32_t word = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &word, sizeof f);
  return f;
}

/* Runs `exe` on device copies of `x` (bytes) on `stream`, returns the output in `y`. */
static void run_on_gpu(kiln_executable* exe, const void* x, size_t in_bytes, void* y, size_t out_bytes, void* stream) {
  uint64_t dx = 0, dy = 0;
  CHECK_CU(cu.alloc(&dx, in_bytes));
  CHECK_CU(cu.alloc(&dy, out_bytes));
  CHECK_CU(cu.htod(dx, x, in_bytes));
  const void* inputs[1] = {(const void*)(uintptr_t)dx};
  void* outputs[1] = {(void*)(uintptr_t)dy};
  CHECK_OK(kiln_executable_run(exe, inputs, 1, outputs, 1, (uint64_t)(uintptr_t)stream));
  if (stream) CHECK_CU(cu.stream_sync(stream));
  CHECK_CU(cu.sync());
  CHECK_CU(cu.dtoh(y, dy, out_bytes));
  /* Errors: the wrong count, and a host pointer where device memory belongs. */
  int status = kiln_executable_run(exe, inputs, 0, outputs, 1, 0);
  if (status != KILN_ERROR_INVALID_ARGUMENT) {
    fprintf(stderr, "FAIL: no inputs gave %s\n", kiln_status_name(status));
    exit(1);
  }
  const void* host_inputs[1] = {x};
  status = kiln_executable_run(exe, host_inputs, 1, outputs, 1, 0);
  if (status == KILN_OK) {
    fprintf(stderr, "FAIL: a host pointer as input was accepted\n");
    exit(1);
  }
  printf("host pointer refused: %s: %s\n", kiln_status_name(status), kiln_last_error());
  CHECK_CU(cu.free(dx));
  CHECK_CU(cu.free(dy));
}

static int compare(const uint16_t* got, const uint16_t* want, int64_t n, const char* what) {
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = fabs((double)bf16_to_float(got[i]) - bf16_to_float(want[i]));
    if (d > worst) worst = d;
  }
  printf("%s: max |gpu - reference| = %g\n", what, worst);
  return worst <= 1e-2;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s GRAPH.json\n", argv[0]);
    return 2;
  }
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    printf("SKIPPED: no CUDA driver (%s)\n", dlerror());
    return SKIP;
  }
  cu_init_fn init = (cu_init_fn)dlsym(lib, "cuInit");
  cu_count_fn count_fn = (cu_count_fn)dlsym(lib, "cuDeviceGetCount");
  int count = 0;
  if (!init || init(0) != 0 || !count_fn || count_fn(&count) != 0 || count == 0 || !kiln_have_gpu()) {
    printf("SKIPPED: no GPU\n");
    return SKIP;
  }
  cu_device_get_fn device_get = (cu_device_get_fn)dlsym(lib, "cuDeviceGet");
  cu_retain_fn retain = (cu_retain_fn)dlsym(lib, "cuDevicePrimaryCtxRetain");
  cu_set_current_fn set_current = (cu_set_current_fn)dlsym(lib, "cuCtxSetCurrent");
  cu.alloc = (cu_alloc_fn)dlsym(lib, "cuMemAlloc_v2");
  cu.free = (cu_free_fn)dlsym(lib, "cuMemFree_v2");
  cu.htod = (cu_htod_fn)dlsym(lib, "cuMemcpyHtoD_v2");
  cu.dtoh = (cu_dtoh_fn)dlsym(lib, "cuMemcpyDtoH_v2");
  cu.sync = (cu_sync_fn)dlsym(lib, "cuCtxSynchronize");
  cu.stream_create = (cu_stream_create_fn)dlsym(lib, "cuStreamCreate");
  cu.stream_sync = (cu_stream_sync_fn)dlsym(lib, "cuStreamSynchronize");
  /* The primary context, as the CUDA runtime would make it. */
  int device = 0;
  void* context = NULL;
  CHECK_CU(device_get(&device, 0));
  CHECK_CU(retain(&context, device));
  CHECK_CU(set_current(context));

  kiln_graph* graph = NULL;
  CHECK_OK(kiln_graph_load(argv[1], &graph));
  kiln_tensor_info in, out;
  CHECK_OK(kiln_graph_input_info(graph, 0, &in));
  CHECK_OK(kiln_graph_output_info(graph, 0, &out));
  int64_t n = 1, m = 1;
  for (int64_t i = 0; i < in.rank; ++i) n *= in.dims[i];
  for (int64_t i = 0; i < out.rank; ++i) m *= out.dims[i];
  if (strcmp(in.dtype, "bf16") != 0 || strcmp(out.dtype, "bf16") != 0) {
    fprintf(stderr, "expected a bf16 -> bf16 graph\n");
    return 2;
  }
  uint16_t* x = malloc(n * 2);
  uint16_t* want = malloc(m * 2);
  uint16_t* got = malloc(m * 2);
  srand(11);
  for (int64_t i = 0; i < n; ++i) {
    float f = 4.0f * rand() / RAND_MAX - 2.0f;
    uint32_t word;
    memcpy(&word, &f, 4);
    x[i] = (uint16_t)(word >> 16);
  }
  const void* host_in[1] = {x};
  void* host_out[1] = {want};
  CHECK_OK(kiln_graph_reference(graph, host_in, 1, host_out, 1));

  kiln_executable* exe = NULL;
  CHECK_OK(kiln_compile(graph, NULL, &exe)); /* this GPU's arch */
  const char* arch = NULL;
  CHECK_OK(kiln_executable_arch(exe, &arch));
  printf("compiled for %s\n", arch);
  int ok = 1;
  run_on_gpu(exe, x, n * 2, got, m * 2, NULL);
  ok &= compare(got, want, m, "default stream");
  void* stream = NULL;
  CHECK_CU(cu.stream_create(&stream, 0));
  memset(got, 0, m * 2);
  run_on_gpu(exe, x, n * 2, got, m * 2, stream);
  ok &= compare(got, want, m, "created stream");
  /* Through a CUDA graph: captured on the first run, then run on new buffers each time (the
   * update path), on the legacy stream and on the created one. */
  CHECK_OK(kiln_executable_set_cuda_graph(exe, 1));
  for (int i = 0; i < 3; ++i) {
    memset(got, 0, m * 2);
    run_on_gpu(exe, x, n * 2, got, m * 2, i == 1 ? stream : NULL);
    ok &= compare(got, want, m, i == 1 ? "cuda graph, created stream" : "cuda graph, default stream");
  }
  CHECK_OK(kiln_executable_set_cuda_graph(exe, 0));

  CHECK_OK(kiln_artifact_save(exe, "capi_gpu.kiln"));
  kiln_executable_free(exe);
  CHECK_OK(kiln_artifact_load("capi_gpu.kiln", NULL, &exe));
  CHECK_OK(kiln_executable_prepare(exe));
  memset(got, 0, m * 2);
  run_on_gpu(exe, x, n * 2, got, m * 2, NULL);
  ok &= compare(got, want, m, "from the artifact");
  kiln_executable_free(exe);
  remove("capi_gpu.kiln");
  CHECK_OK(kiln_graph_free(graph));
  free(x);
  free(want);
  free(got);
  printf(ok ? "capi_gpu: all checks passed\n" : "capi_gpu: outputs differ\n");
  return ok ? 0 : 1;
}
