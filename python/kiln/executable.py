"""kiln.Executable (a compiled graph, over the C ABI's kiln_executable) and the module-level
entry points kiln.compile, kiln.load and kiln.dump.

Calling an Executable:
  - with torch CUDA tensors: runs on the GPU on torch.cuda.current_stream(device).cuda_stream,
    zero-copy (tensor.data_ptr()); the outputs are new tensors from torch.empty on the inputs'
    device. Inputs must have the graph's dtype and shape, be contiguous, 16-byte aligned and
    on the executable's device, or a ValueError names the input. Launches are asynchronous on
    that stream, as torch's own kernels are.
  - with numpy arrays: evaluates the graph on the CPU reference interpreter (Graph.reference).
The result is always a tuple, one entry per graph output, even for one output.
torch is imported only when the arguments are torch tensors (it is never required).
"""

import ctypes
import json
import sys

from . import _capi
from ._capi import lib, check, encode
from .graph import Graph, as_graph

_TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i32": "int32", "i64": "int64",
                 "bool": "bool"}


def _is_torch_tensor(value):
    torch = sys.modules.get("torch")  # a torch tensor exists only if torch was imported
    return torch is not None and isinstance(value, torch.Tensor)


class Executable:
    """A compiled graph: kiln.compile(graph) or kiln.load(path.kiln)."""

    def __init__(self, handle, device_ordinal=0):
        self._handle = handle
        self.device_ordinal = device_ordinal

    @property
    def graph(self):
        """The source graph (a kiln.Graph borrowed from this executable, which it keeps alive)."""
        graph = ctypes.c_void_p()
        check(lib.kiln_executable_graph(self._handle, ctypes.byref(graph)))
        return Graph(_handle=graph.value, _owner=self)

    def __del__(self):
        if getattr(self, "_handle", None):
            lib.kiln_executable_free(self._handle)
            self._handle = None

    @property
    def inputs(self):
        return self.graph.inputs

    @property
    def outputs(self):
        return self.graph.outputs

    @property
    def arch(self):
        """The CUBINs' architecture, e.g. "sm_90a"."""
        out = ctypes.c_char_p()
        check(lib.kiln_executable_arch(self._handle, ctypes.byref(out)))
        return out.value.decode()

    def save(self, path):
        """Writes an artifact (.kiln) that kiln.load (or `kiln run FILE.kiln`) runs without NVRTC."""
        check(lib.kiln_artifact_save(self._handle, encode(path)))

    def ledger(self):
        """{"fusion": the fusion ledger (regions, decisions), "lowered": [a record per region]}."""
        out = ctypes.c_void_p()
        check(lib.kiln_executable_ledger(self._handle, ctypes.byref(out)))
        return json.loads(_capi.take_string(out.value))

    def __call__(self, *tensors):
        if tensors and all(_is_torch_tensor(t) for t in tensors):
            return self._run_torch(tensors)
        if any(_is_torch_tensor(t) for t in tensors):
            raise TypeError("kiln.Executable: give all inputs as torch tensors (GPU) or none (numpy, CPU reference)")
        return self.graph.reference(*tensors)

    def _torch_plan(self):
        """What every torch call checks against and allocates, read from the C ABI once: the
        graph's inputs and outputs as (torch dtype, torch.Size), and reusable pointer arrays."""
        plan = getattr(self, "_plan", None)
        if plan is None:
            import torch

            graph = self.graph
            inputs, outputs = graph.inputs, graph.outputs
            want_in = tuple((getattr(torch, _TORCH_DTYPES[i.dtype]), torch.Size(i.shape)) for i in inputs)
            want_out = tuple((getattr(torch, _TORCH_DTYPES[o.dtype]), torch.Size(o.shape)) for o in outputs)
            arrays = ((ctypes.c_void_p * max(len(inputs), 1))(), (ctypes.c_void_p * max(len(outputs), 1))())
            plan = self._plan = (graph, inputs, want_in, want_out, arrays)
        return plan

    def _run_torch(self, tensors):
        import torch

        graph, inputs, want_in, want_out, (in_ptrs, out_ptrs) = self._torch_plan()
        device = tensors[0].device if tensors else None
        # the fast check; any miss goes to _explain_bad_inputs for the message
        ok = len(tensors) == len(want_in) and device is not None and device.type == "cuda"
        if ok:
            for i, (t, (dtype, shape)) in enumerate(zip(tensors, want_in)):
                ptr = t.data_ptr()
                if (t.dtype != dtype or t.shape != shape or t.device != device or not t.is_contiguous()
                        or (ptr & 15 and t.numel())):
                    ok = False
                    break
                in_ptrs[i] = ptr
        if not ok:
            self._explain_bad_inputs(graph, inputs, tensors)
        index = device.index if device.index is not None else torch.cuda.current_device()
        if index != self.device_ordinal:
            raise ValueError(f"the inputs are on {device}, this executable runs on cuda:{self.device_ordinal} "
                             "(compile or load it with device_ordinal=)")
        results = tuple(torch.empty(shape, dtype=dtype, device=device) for dtype, shape in want_out)
        for i, r in enumerate(results):
            out_ptrs[i] = r.data_ptr()
        stream = torch.cuda.current_stream(device).cuda_stream
        check(lib.kiln_executable_run(self._handle, in_ptrs, len(want_in), out_ptrs, len(want_out), stream))
        return results

    def _explain_bad_inputs(self, graph, inputs, tensors):
        """Raises the ValueError that names the first input the fast check refused."""
        import torch

        if len(tensors) != len(inputs):
            names = ", ".join(i.name for i in inputs)
            raise ValueError(f"graph '{graph.name}' takes {len(inputs)} inputs ({names}), got {len(tensors)}")
        device = None
        for i, (t, info) in enumerate(zip(tensors, inputs)):
            label = f"input #{i} '{info.name}'"
            if t.device.type != "cuda":
                raise ValueError(f"{label}: expected a CUDA tensor, got one on {t.device}")
            if device is None:
                device = t.device
            elif t.device != device:
                raise ValueError(f"{label}: on {t.device}, but input #0 is on {device}")
            want = getattr(torch, _TORCH_DTYPES[info.dtype])
            if t.dtype != want:
                raise ValueError(f"{label}: expected {want} ({info.dtype}), got {t.dtype}")
            if tuple(t.shape) != tuple(info.shape):
                raise ValueError(f"{label}: expected shape {tuple(info.shape)}, got {tuple(t.shape)}")
            if not t.is_contiguous():
                raise ValueError(f"{label}: not contiguous (call .contiguous())")
            if t.numel() and t.data_ptr() % 16:
                raise ValueError(f"{label}: data is not 16-byte aligned (a view at an offset? call .clone())")
        raise AssertionError("kiln.Executable: the fast input check refused inputs the full check accepts")

    def __repr__(self):
        return f"<kiln.Executable '{self.graph.name}' for {self.arch}>"


def _options(device=None, tune=False, cache_dir=None, cost_device=None, device_ordinal=0):
    handle = ctypes.c_void_p()
    check(lib.kiln_options_create(ctypes.byref(handle)))
    try:
        check(lib.kiln_options_set_arch(handle, encode(device)))
        check(lib.kiln_options_set_tune(handle, 1 if tune else 0))
        if cache_dir is not None:
            check(lib.kiln_options_set_cache_dir(handle, encode(cache_dir)))
        if cost_device is not None:
            check(lib.kiln_options_set_cost_device(handle, encode(cost_device)))
        check(lib.kiln_options_set_device_ordinal(handle, device_ordinal))
    except BaseException:
        lib.kiln_options_free(handle)
        raise
    return handle.value


def compile(graph, *, device=None, tune=False, cache_dir=None, cost_device=None, device_ordinal=0):
    """Compiles `graph` (a path to .json/.onnx, JSON text, a dict, or a kiln.Graph).

    device: the NVRTC target such as "sm_90a"; None: this GPU's, or sm_90a without a GPU (then
    the executable can be saved but not run on the GPU). tune: autotune launch parameters on
    this GPU. cache_dir: the CUBIN cache directory ("" memory only; None: $KILN_CACHE_DIR or
    kiln's default). cost_device: the cost model's device ("h100", "h200", "auto").
    device_ordinal: the CUDA device it runs on."""
    g = as_graph(graph)
    options = _options(device, tune, cache_dir, cost_device, device_ordinal)
    try:
        handle = ctypes.c_void_p()
        check(lib.kiln_compile(g._handle, options, ctypes.byref(handle)))
    finally:
        lib.kiln_options_free(options)
    return Executable(handle.value, device_ordinal)


def load(path, *, device_ordinal=0):
    """Loads an artifact (.kiln) written by Executable.save or `kiln compile`."""
    options = _options(device_ordinal=device_ordinal)
    try:
        handle = ctypes.c_void_p()
        check(lib.kiln_artifact_load(encode(path), options, ctypes.byref(handle)))
    finally:
        lib.kiln_options_free(options)
    return Executable(handle.value, device_ordinal)


def dump(graph, format="text", cost_device=None):
    """The fusion report of `graph` as `kiln dump` prints it (format: text, json, jsonl, dot)."""
    return as_graph(graph).dump(format, cost_device)
