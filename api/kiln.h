/* kiln's C ABI (libkiln.so): load or build a graph, compile it, save and load artifacts, run
 * it on the GPU on the caller's stream or on the CPU reference interpreter, and read the
 * fusion report and ledgers. Pure C (C99), so that any language with a C FFI can use it; the
 * Python package (python/kiln, ctypes) is built on it. The C++ API (api/compiler.h,
 * api/runtime.h) is what it wraps; no C++ exception and no Abseil type crosses it.
 *
 * Conventions:
 *  - Every function that can fail returns an int status: KILN_OK (0) or one of the
 *    KILN_ERROR_* codes below. After a failure, kiln_last_error() returns its message (per
 *    thread, kept until the thread's next failure). Results come back through out
 *    parameters, which are left untouched on failure.
 *  - Handles are opaque and owned by the caller, who frees them with the matching *_free
 *    (freeing NULL is a no-op). A handle is not safe to use from two threads at once.
 *  - Shapes are int64_t dims, row-major; data is void*; dtypes are the strings "f32", "f16",
 *    "bf16", "i32", "i64", "bool" (bool: one byte, 0 or 1; bf16 and f16: 2-byte bit patterns).
 *  - Strings returned as `char**` are owned by the caller and freed with kiln_string_free.
 *    Strings returned as `const char*` (names, dtypes) are borrowed from the handle and live
 *    as long as it does.
 *  - The CUDA stream is a CUstream / cudaStream_t passed as uint64_t (0: the legacy default
 *    stream). GPU work runs in the device's primary context (cuDevicePrimaryCtxRetain), the
 *    one the CUDA runtime and PyTorch use, so their device pointers are valid here.
 */
#ifndef KILN_API_KILN_H_
#define KILN_API_KILN_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define KILN_C_API
#elif defined(KILN_C_BUILDING)
#define KILN_C_API __attribute__((visibility("default")))
#else
#define KILN_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a function's signature or meaning changes. */
#define KILN_C_ABI_VERSION 1

/* Status codes. */
#define KILN_OK 0
#define KILN_ERROR_INVALID_ARGUMENT 1 /* bad input: malformed graph, wrong count, NULL, dtype... */
#define KILN_ERROR_UNSUPPORTED 2      /* valid, but kiln does not do it (an op, an arch, ...) */
#define KILN_ERROR_CUDA 3             /* a CUDA driver, NVRTC or cuBLASLt call failed */
#define KILN_ERROR_INTERNAL 4         /* a kiln bug */
#define KILN_ERROR_IO 5               /* a file is missing, unreadable or cannot be written */
#define KILN_ERROR_NO_DEVICE 6        /* GPU work asked for, and no driver or no GPU */

typedef struct kiln_graph kiln_graph;
typedef struct kiln_executable kiln_executable;
typedef struct kiln_options kiln_options;

/* One graph input or output. `name` and `dtype` are borrowed; `dims` has `rank` entries
 * (rank 0: a scalar, `dims` may be NULL) and is borrowed too. */
typedef struct kiln_tensor_info {
  const char* name;
  const char* dtype;
  int64_t rank;
  const int64_t* dims;
} kiln_tensor_info;

/* ---- Library ---- */

/* "0.1.0": the project version. */
KILN_C_API const char* kiln_version(void);
/* KILN_C_ABI_VERSION of the library (compare with the header's). */
KILN_C_API int kiln_abi_version(void);
/* The message of this thread's last failed call ("" when none). */
KILN_C_API const char* kiln_last_error(void);
/* "KILN_OK", "KILN_ERROR_INVALID_ARGUMENT", ...; "KILN_ERROR_UNKNOWN" for another value. */
KILN_C_API const char* kiln_status_name(int status);
KILN_C_API void kiln_string_free(char* text);
/* Whether the CUDA driver loads and reports at least one GPU (1) or not (0). */
KILN_C_API int kiln_have_gpu(void);

/* ---- Graphs ---- */

/* Imports a graph file by extension (.json: kiln's format; .onnx: an ONNX model with static
 * shapes), then verifies it. */
KILN_C_API int kiln_graph_load(const char* path, kiln_graph** out);
/* Imports kiln's JSON format from text (docs/graph-format.md); side data files are refused.
 * Errors say where: "<json>:3:7: malformed JSON: ..." or "<json>: nodes[2].op: ...". */
KILN_C_API int kiln_graph_from_json(const char* json_text, kiln_graph** out);
/* An empty graph to build node by node. */
KILN_C_API int kiln_graph_create(const char* name, kiln_graph** out);
/* Building: each call checks what it adds (names, arity, attributes, shapes, dtypes) and
 * returns the new value's id through `out_id` (may be NULL), for later operands. */
KILN_C_API int kiln_graph_add_input(kiln_graph* graph, const char* name, const char* dtype, int64_t rank,
                                    const int64_t* dims, int64_t* out_id);
/* `data`: `nbytes` row-major bytes, exactly the tensor's size. */
KILN_C_API int kiln_graph_add_constant(kiln_graph* graph, const char* name, const char* dtype, int64_t rank,
                                       const int64_t* dims, const void* data, size_t nbytes, int64_t* out_id);
/* `op`: an op name of the JSON format ("add", "softmax", "matmul", ...); `attrs_json`: the
 * attributes as a JSON object ("{\"axis\": -1}"), or NULL / "" for none; `name` may be NULL
 * or "" for a fresh one. */
KILN_C_API int kiln_graph_add_node(kiln_graph* graph, const char* op, const int64_t* operand_ids,
                                   int64_t num_operands, const char* attrs_json, const char* name,
                                   int64_t* out_id);
/* Marks value `id` as an output called `name` (NULL or "": the value's name). */
KILN_C_API int kiln_graph_add_output(kiln_graph* graph, int64_t id, const char* name);
/* The name, dtype and shape of value `id` (an id the add_* functions returned). */
KILN_C_API int kiln_graph_value_info(const kiln_graph* graph, int64_t id, kiln_tensor_info* info);
/* Verifies the whole graph (kiln_compile and kiln_graph_reference do it too). */
KILN_C_API int kiln_graph_verify(const kiln_graph* graph);

KILN_C_API int kiln_graph_name(const kiln_graph* graph, const char** name);
KILN_C_API int kiln_graph_num_inputs(const kiln_graph* graph, int64_t* count);
KILN_C_API int kiln_graph_num_outputs(const kiln_graph* graph, int64_t* count);
KILN_C_API int kiln_graph_input_info(const kiln_graph* graph, int64_t index, kiln_tensor_info* info);
KILN_C_API int kiln_graph_output_info(const kiln_graph* graph, int64_t index, kiln_tensor_info* info);
/* The graph in kiln's JSON format, every constant inline. */
KILN_C_API int kiln_graph_to_json(const kiln_graph* graph, char** out);
/* Refuses (KILN_ERROR_INVALID_ARGUMENT) a graph borrowed from an executable. */
KILN_C_API int kiln_graph_free(kiln_graph* graph);

/* Evaluates the graph on the CPU reference interpreter (the whole graph as written, as
 * `kiln run --reference` does): `inputs[i]` is host memory holding graph input i (its dtype
 * and shape, row-major), `outputs[j]` host memory with room for output j. Slow for big
 * graphs; meant for checks and small shapes. */
KILN_C_API int kiln_graph_reference(const kiln_graph* graph, const void* const* inputs, int64_t num_inputs,
                                    void* const* outputs, int64_t num_outputs);

/* The fusion report as `kiln dump` prints it. `format`: NULL or "text" (the report), "json"
 * (the fusion ledger as one document), "jsonl" (JSON lines), "dot" (Graphviz). `cost_device`:
 * the cost model's device, NULL or "" for "auto" (this GPU's query; the h100 spec without a
 * GPU), or a named spec, "h100" or "h200". */
KILN_C_API int kiln_graph_dump(const kiln_graph* graph, const char* format, const char* cost_device, char** out);

/* ---- Compile options ---- */

KILN_C_API int kiln_options_create(kiln_options** out);
KILN_C_API void kiln_options_free(kiln_options* options);
/* The NVRTC target, e.g. "sm_90a"; NULL or "" (the default): this GPU's, or sm_90a without a
 * GPU (as `kiln compile` does; such an executable can be saved, not run). */
KILN_C_API int kiln_options_set_arch(kiln_options* options, const char* arch);
/* The cost model's device: "auto" (default: this GPU's query, the h100 spec without a GPU),
 * "h100" or "h200". */
KILN_C_API int kiln_options_set_cost_device(kiln_options* options, const char* cost_device);
/* 1: autotune every kernel's launch parameters on this GPU (needs a GPU of the target arch);
 * 0 (default): the heuristic parameters. */
KILN_C_API int kiln_options_set_tune(kiln_options* options, int tune);
/* The on-disk CUBIN cache directory; NULL (default): $KILN_CACHE_DIR or kiln's default;
 * "": memory only. */
KILN_C_API int kiln_options_set_cache_dir(kiln_options* options, const char* cache_dir);
/* The CUDA device ordinal to run on (default 0). */
KILN_C_API int kiln_options_set_device_ordinal(kiln_options* options, int ordinal);
/* 1: executables compiled or loaded with these options run through a CUDA graph (as
 * kiln_executable_set_cuda_graph(executable, 1)); 0 (default): they launch every step. */
KILN_C_API int kiln_options_set_cuda_graph(kiln_options* options, int cuda_graph);

/* ---- Executables ---- */

/* Passes, fusion, code generation and NVRTC (`kiln compile`). `options` may be NULL. Needs no
 * GPU when an arch is given (or there is none to ask). The GPU side (modules, arena) is set up
 * by the first run. `graph` is left as it was. */
KILN_C_API int kiln_compile(const kiln_graph* graph, const kiln_options* options, kiln_executable** out);
/* Writes the executable as an artifact file (.kiln), loadable without NVRTC. */
KILN_C_API int kiln_artifact_save(const kiln_executable* executable, const char* path);
/* Reads an artifact; `options` (may be NULL) gives the device ordinal. */
KILN_C_API int kiln_artifact_load(const char* path, const kiln_options* options, kiln_executable** out);
KILN_C_API void kiln_executable_free(kiln_executable* executable);

/* The source graph, borrowed (valid while the executable lives; do not free it): its inputs
 * and outputs are the executable's, and kiln_graph_reference runs it on the CPU. */
KILN_C_API int kiln_executable_graph(const kiln_executable* executable, const kiln_graph** graph);
/* The CUBINs' architecture, e.g. "sm_90a" (borrowed). */
KILN_C_API int kiln_executable_arch(const kiln_executable* executable, const char** arch);
/* The ledgers as one JSON object: {"fusion": the fusion ledger (regions and decisions, as
 * `kiln dump --format json` prints it, or null), "lowered": [a "lowered" record per region:
 * kernels, launch parameters, registers, spills, the tuner's timings]}. */
KILN_C_API int kiln_executable_ledger(const kiln_executable* executable, char** out);
/* Loads the executable onto its GPU now (the first run does it otherwise). */
KILN_C_API int kiln_executable_prepare(kiln_executable* executable);
/* Runs on the GPU: `inputs[i]` is device memory holding graph input i, `outputs[j]` device
 * memory the caller allocated with room for output j (query the shapes first), both in this
 * device's primary context (or allocated with the CUDA runtime, or by PyTorch), 16-byte
 * aligned, outputs not overlapping anything. Launches asynchronously on `stream` and returns;
 * synchronize the stream before reading outputs. One executable runs on one stream at a time. */
KILN_C_API int kiln_executable_run(kiln_executable* executable, const void* const* inputs, int64_t num_inputs,
                                   void* const* outputs, int64_t num_outputs, uint64_t stream);
/* 1: kiln_executable_run replays the run as one CUDA graph launch on `stream`. The first run
 * runs the steps once, then captures them (on a private stream: the legacy stream 0 works
 * too) and instantiates the graph; a later run with the same input and output pointers
 * replays it; one with other pointers captures again and updates the graph in place (or
 * instantiates it afresh when the driver refuses the update), so keep the pointers fixed to
 * get the saving. Values in the buffers (dropout seeds given as inputs included) are read at
 * each replay. When `stream` is being captured by the caller (torch.cuda.graph), the steps
 * are launched into that capture instead. 0 (default): every step is launched. */
KILN_C_API int kiln_executable_set_cuda_graph(kiln_executable* executable, int cuda_graph);
/* The host's launch calls per kiln_executable_run as the executable is set now: kernel
 * launches, cuBLASLt calls (each launches kernels of its own) and device-to-device copies, or
 * with the CUDA graph on, 1 graph launch. Needs no GPU. Each out pointer may be NULL. */
KILN_C_API int kiln_executable_launches(const kiln_executable* executable, int64_t* kernels,
                                        int64_t* library_calls, int64_t* copies, int64_t* graph_launches);

/* The device memory of the executable, in bytes: the arena its intermediates share per run
 * (the buffer plan), the liveness bound of that arena (the most intermediate bytes live at
 * once: no plan needs fewer), and the constant block (weights and other constants, uploaded
 * once). Outputs and inputs are the caller's and not counted. Needs no GPU. Each out pointer
 * may be NULL. */
KILN_C_API int kiln_executable_memory(const kiln_executable* executable, int64_t* arena_bytes,
                                      int64_t* live_bound_bytes, int64_t* constant_bytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_API_KILN_H_ */
