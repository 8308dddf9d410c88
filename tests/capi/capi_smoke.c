/* A C99 program using only libkiln.so's C ABI (api/kiln.h): built in the tree (test
 * capi_smoke_test) and, from an installed prefix, by tests/capi/consumer (find_package(kiln)),
 * so it also checks that the header is C and that the install is usable.
 *
 * usage: capi_smoke GRAPH.json   (examples/small/softmax.json: one bf16 input x, output y =
 * softmax(x, axis -1)). Loads and queries it, runs the reference interpreter on random data and
 * checks that every row sums to 1, builds an f32 softmax node by node, round-trips JSON, dumps
 * the fusion report, compiles for sm_90a (NVRTC, no GPU needed), saves and loads the artifact,
 * and checks the error paths: messages must name the place or the argument. Exit 0 on success. */
#include <kiln.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond, ...)                                 \
  do {                                                   \
    if (!(cond)) {                                       \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                      \
      fprintf(stderr, "\n");                             \
      ++failures;                                        \
    }                                                    \
  } while (0)

#define CHECK_OK(call)                                                                       \
  do {                                                                                       \
    int status_ = (call);                                                                    \
    if (status_ != KILN_OK) {                                                                \
      fprintf(stderr, "FAIL %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call,             \
              kiln_status_name(status_), kiln_last_error());                                 \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

/* Expects `status` == `code` and the last error to contain `needle`. */
static void expect_error(int status, int code, const char* needle, const char* what) {
  CHECK(status == code, "%s: expected %s, got %s (%s)", what, kiln_status_name(code), kiln_status_name(status),
        kiln_last_error());
  CHECK(strstr(kiln_last_error(), needle) != NULL, "%s: message \"%s\" lacks \"%s\"", what, kiln_last_error(),
        needle);
}

static float bf16_to_float(uint16_t bits) {
  uint32_t word = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &word, sizeof f);
  return f;
}

static uint16_t float_to_bf16(float f) { /* truncation is enough for test data */
  uint32_t word;
  memcpy(&word, &f, sizeof word);
  return (uint16_t)(word >> 16);
}

static int64_t elements(const kiln_tensor_info* info) {
  int64_t n = 1;
  for (int64_t i = 0; i < info->rank; ++i) n *= info->dims[i];
  return n;
}

static void check_loaded_softmax(const char* path) {
  kiln_graph* graph = NULL;
  CHECK_OK(kiln_graph_load(path, &graph));
  int64_t n_in = 0, n_out = 0;
  CHECK_OK(kiln_graph_num_inputs(graph, &n_in));
  CHECK_OK(kiln_graph_num_outputs(graph, &n_out));
  CHECK(n_in == 1 && n_out == 1, "expected 1 input and 1 output, got %lld and %lld", (long long)n_in,
        (long long)n_out);
  kiln_tensor_info in, out;
  CHECK_OK(kiln_graph_input_info(graph, 0, &in));
  CHECK_OK(kiln_graph_output_info(graph, 0, &out));
  CHECK(strcmp(in.dtype, "bf16") == 0 && in.rank == 2, "input: %s rank %lld", in.dtype, (long long)in.rank);
  printf("graph %s: input %s %s[%lld, %lld] -> output %s %s\n", path, in.name, in.dtype, (long long)in.dims[0],
         (long long)in.dims[1], out.name, out.dtype);

  /* The reference interpreter on random data: rows of a softmax sum to 1. */
  int64_t n = elements(&in), rows = in.dims[0], cols = in.dims[1];
  uint16_t* x = malloc(n * sizeof *x);
  uint16_t* y = malloc(n * sizeof *y);
  srand(7);
  for (int64_t i = 0; i < n; ++i) x[i] = float_to_bf16(4.0f * rand() / RAND_MAX - 2.0f);
  const void* inputs[1] = {x};
  void* outputs[1] = {y};
  CHECK_OK(kiln_graph_reference(graph, inputs, 1, outputs, 1));
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += bf16_to_float(y[r * cols + c]);
    CHECK(fabs(sum - 1.0) < 0.05, "row %lld sums to %f", (long long)r, sum);
  }

  /* Error paths: wrong counts and NULL pointers name the argument. */
  expect_error(kiln_graph_reference(graph, inputs, 2, outputs, 1), KILN_ERROR_INVALID_ARGUMENT, "takes 1 inputs (x)",
               "two inputs");
  expect_error(kiln_graph_reference(graph, inputs, 1, outputs, 0), KILN_ERROR_INVALID_ARGUMENT, "has 1 outputs",
               "no outputs");
  const void* null_inputs[1] = {NULL};
  expect_error(kiln_graph_reference(graph, null_inputs, 1, outputs, 1), KILN_ERROR_INVALID_ARGUMENT,
               "input #0 'x' is NULL", "NULL input");
  expect_error(kiln_graph_input_info(graph, 3, &in), KILN_ERROR_INVALID_ARGUMENT, "out of range", "input index");

  /* The fusion report. */
  char* report = NULL;
  CHECK_OK(kiln_graph_dump(graph, NULL, NULL, &report));
  CHECK(strstr(report, "region") != NULL, "the report names no region:\n%s", report);
  kiln_string_free(report);
  expect_error(kiln_graph_dump(graph, "yaml", NULL, &report), KILN_ERROR_INVALID_ARGUMENT, "unknown format",
               "dump format");

  /* JSON out and back in. */
  char* json = NULL;
  CHECK_OK(kiln_graph_to_json(graph, &json));
  kiln_graph* again = NULL;
  CHECK_OK(kiln_graph_from_json(json, &again));
  kiln_string_free(json);
  CHECK_OK(kiln_graph_free(again));

  /* Ahead of time for sm_90a (NVRTC only), then the artifact. */
  kiln_options* options = NULL;
  CHECK_OK(kiln_options_create(&options));
  CHECK_OK(kiln_options_set_arch(options, "sm_90a"));
  CHECK_OK(kiln_options_set_cache_dir(options, "")); /* memory only */
  kiln_executable* exe = NULL;
  CHECK_OK(kiln_compile(graph, options, &exe));
  CHECK_OK(kiln_artifact_save(exe, "capi_smoke.kiln"));
  kiln_executable_free(exe);
  exe = NULL;
  CHECK_OK(kiln_artifact_load("capi_smoke.kiln", NULL, &exe));
  const char* arch = NULL;
  CHECK_OK(kiln_executable_arch(exe, &arch));
  CHECK(strcmp(arch, "sm_90a") == 0, "artifact arch %s", arch);
  const kiln_graph* source = NULL;
  CHECK_OK(kiln_executable_graph(exe, &source));
  CHECK_OK(kiln_graph_num_inputs(source, &n_in));
  CHECK(n_in == 1, "the artifact's graph has %lld inputs", (long long)n_in);
  expect_error(kiln_graph_free((kiln_graph*)source), KILN_ERROR_INVALID_ARGUMENT, "belongs to an executable",
               "freeing a borrowed graph");
  char* ledger = NULL;
  CHECK_OK(kiln_executable_ledger(exe, &ledger));
  CHECK(strstr(ledger, "\"lowered\"") != NULL && strstr(ledger, "\"fusion\"") != NULL, "ledger: %.200s", ledger);
  kiln_string_free(ledger);
  /* Launch counts (no GPU needed): the kernels of a stream run, or one CUDA graph launch. */
  int64_t kernels = -1, library_calls = -1, copies = -1, graph_launches = -1;
  CHECK_OK(kiln_executable_launches(exe, &kernels, &library_calls, &copies, &graph_launches));
  CHECK(kernels >= 1 && library_calls == 0 && copies == 0 && graph_launches == 0,
        "stream launches: %lld kernels, %lld library calls, %lld copies, %lld graphs", (long long)kernels,
        (long long)library_calls, (long long)copies, (long long)graph_launches);
  /* Memory (no GPU needed): the arena is never below its liveness bound. */
  int64_t arena = -1, live_bound = -1, constant_bytes = -1;
  CHECK_OK(kiln_executable_memory(exe, &arena, &live_bound, &constant_bytes));
  CHECK(arena >= live_bound && live_bound >= 0 && constant_bytes >= 0, "memory: arena %lld, bound %lld, constants %lld",
        (long long)arena, (long long)live_bound, (long long)constant_bytes);
  CHECK_OK(kiln_executable_memory(exe, NULL, NULL, NULL));
  expect_error(kiln_executable_memory(NULL, &arena, NULL, NULL), KILN_ERROR_INVALID_ARGUMENT, "executable is NULL",
               "memory of NULL");
  CHECK_OK(kiln_executable_set_cuda_graph(exe, 1));
  CHECK_OK(kiln_executable_launches(exe, &kernels, NULL, NULL, &graph_launches));
  CHECK(kernels == 0 && graph_launches == 1, "graph launches: %lld kernels, %lld graphs", (long long)kernels,
        (long long)graph_launches);
  CHECK_OK(kiln_executable_set_cuda_graph(exe, 0));
  expect_error(kiln_executable_set_cuda_graph(NULL, 1), KILN_ERROR_INVALID_ARGUMENT, "executable is NULL",
               "set_cuda_graph on NULL");
  expect_error(kiln_options_set_cuda_graph(NULL, 1), KILN_ERROR_INVALID_ARGUMENT, "options is NULL",
               "options_set_cuda_graph on NULL");
  {
    kiln_options* graph_options = NULL;
    kiln_executable* graph_exe = NULL;
    CHECK_OK(kiln_options_create(&graph_options));
    CHECK_OK(kiln_options_set_cuda_graph(graph_options, 1));
    CHECK_OK(kiln_artifact_load("capi_smoke.kiln", graph_options, &graph_exe));
    CHECK_OK(kiln_executable_launches(graph_exe, NULL, NULL, NULL, &graph_launches));
    CHECK(graph_launches == 1, "an artifact loaded with cuda_graph: %lld graph launches", (long long)graph_launches);
    kiln_executable_free(graph_exe);
    kiln_options_free(graph_options);
  }
  if (!kiln_have_gpu()) {
    expect_error(kiln_executable_run(exe, inputs, 1, outputs, 1, 0), KILN_ERROR_NO_DEVICE, "no GPU", "run, no GPU");
  }
  expect_error(kiln_executable_run(exe, inputs, 0, outputs, 1, 0), KILN_ERROR_INVALID_ARGUMENT, "takes 1 inputs",
               "run, no inputs");
  kiln_executable_free(exe);
  remove("capi_smoke.kiln");
  expect_error(kiln_artifact_load("capi_smoke.kiln", NULL, &exe), KILN_ERROR_IO, "capi_smoke.kiln", "missing artifact");
  kiln_options_free(options);
  free(x);
  free(y);
  CHECK_OK(kiln_graph_free(graph));
}

static void check_builder(void) {
  kiln_graph* graph = NULL;
  CHECK_OK(kiln_graph_create("built", &graph));
  int64_t dims[2] = {2, 3}, x = -1, y = -1;
  CHECK_OK(kiln_graph_add_input(graph, "x", "f32", 2, dims, &x));
  expect_error(kiln_graph_add_node(graph, "softmax", &x, 1, "{\"axiz\": -1}", "y", &y), KILN_ERROR_INVALID_ARGUMENT,
               "unknown attribute", "bad attribute");
  expect_error(kiln_graph_add_node(graph, "softmaxx", &x, 1, NULL, "y", &y), KILN_ERROR_INVALID_ARGUMENT, "softmax",
               "unknown op");
  expect_error(kiln_graph_add_input(graph, "z", "f33", 2, dims, NULL), KILN_ERROR_INVALID_ARGUMENT, "input \"z\"",
               "bad dtype");
  CHECK_OK(kiln_graph_add_node(graph, "softmax", &x, 1, "{\"axis\": -1}", "y", &y));
  CHECK_OK(kiln_graph_add_output(graph, y, NULL));
  kiln_tensor_info info;
  CHECK_OK(kiln_graph_value_info(graph, y, &info));
  CHECK(strcmp(info.name, "y") == 0 && strcmp(info.dtype, "f32") == 0 && info.rank == 2 && info.dims[1] == 3,
        "value y: %s %s rank %lld", info.name, info.dtype, (long long)info.rank);
  float in[6] = {0, 0, 0, 1, 2, 3}, out[6];
  const void* inputs[1] = {in};
  void* outputs[1] = {out};
  CHECK_OK(kiln_graph_reference(graph, inputs, 1, outputs, 1));
  CHECK(fabs(out[0] - 1.0 / 3) < 1e-6, "softmax of zeros: %f", out[0]);
  double e = exp(1) + exp(2) + exp(3);
  CHECK(fabs(out[5] - exp(3) / e) < 1e-6, "softmax(1,2,3)[2] = %f, want %f", out[5], exp(3) / e);
  CHECK_OK(kiln_graph_free(graph));
}

static void check_json_errors(void) {
  kiln_graph* graph = NULL;
  expect_error(kiln_graph_from_json("{\"kiln_graph\": 1, \"name\": ", &graph), KILN_ERROR_INVALID_ARGUMENT, "<json>:1:",
               "truncated JSON");
  CHECK(graph == NULL, "a failed load wrote its out parameter");
  expect_error(kiln_graph_from_json(NULL, &graph), KILN_ERROR_INVALID_ARGUMENT, "json_text is NULL", "NULL JSON");
  expect_error(kiln_graph_from_json("{\"kiln_graph\": 1, \"name\": \"g\", \"inputs\": [], \"nodes\": "
                                    "[{\"name\": \"y\", \"op\": \"relu\", \"inputs\": [\"nope\"]}], \"outputs\": [\"y\"]}",
                                    &graph),
               KILN_ERROR_INVALID_ARGUMENT, "nodes[0]", "unknown operand");
  expect_error(kiln_graph_load("/nonexistent/graph.json", &graph), KILN_ERROR_IO, "/nonexistent/graph.json",
               "missing file");
  expect_error(kiln_graph_num_inputs(NULL, NULL), KILN_ERROR_INVALID_ARGUMENT, "graph is NULL", "NULL graph");
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s GRAPH.json (examples/small/softmax.json)\n", argv[0]);
    return 2;
  }
  printf("kiln %s, C ABI %d (header %d)\n", kiln_version(), kiln_abi_version(), KILN_C_ABI_VERSION);
  CHECK(kiln_abi_version() == KILN_C_ABI_VERSION, "ABI version mismatch");
  check_json_errors();
  check_builder();
  check_loaded_softmax(argv[1]);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("capi_smoke: all checks passed\n");
  return 0;
}
