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

CUDA graphs: with cuda_graph=True (kiln.compile, kiln.load, or the Executable.cuda_graph
property) a torch call runs as one CUDA graph launch (kiln_executable_set_cuda_graph in
api/kiln.h): the first call captures the steps and instantiates the graph, a call with the
same input and output pointers replays it, and a call with other pointers captures again and
updates the graph. Outputs from torch.empty may land at new addresses each call; pass
out=(tensors...) of the outputs' dtypes and shapes to keep them fixed. Inside the caller's own
torch.cuda.graph capture the steps are launched into that capture instead.
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

    def __init__(self, handle, device_ordinal=0, cuda_graph=False):
        self._handle = handle
        self.device_ordinal = device_ordinal
        self._cuda_graph = False
        self.cuda_graph = cuda_graph

    @property
    def cuda_graph(self):
        """Whether torch calls run through a CUDA graph (see the module docstring)."""
        return self._cuda_graph

    @cuda_graph.setter
    def cuda_graph(self, on):
        check(lib.kiln_executable_set_cuda_graph(self._handle, 1 if on else 0))
        self._cuda_graph = bool(on)

    @property
    def launches_per_run(self):
        """The host's launch calls per GPU run as set now: {"kernels", "library_calls" (cuBLASLt),
        "copies", "graph_launches", "total"}; with cuda_graph, one graph launch."""
        counts = [ctypes.c_int64() for _ in range(4)]
        check(lib.kiln_executable_launches(self._handle, *(ctypes.byref(c) for c in counts)))
        result = dict(zip(("kernels", "library_calls", "copies", "graph_launches"), (c.value for c in counts)))
        result["total"] = sum(result.values())
        return result

    @property
    def memory(self):
        """Device bytes: {"arena" (the intermediates' shared arena per run), "live_bound" (the
        most intermediate bytes live at once: no buffer plan needs fewer), "constants" (weights
        and other constants, uploaded once)}. Inputs and outputs are the caller's."""
        counts = [ctypes.c_int64() for _ in range(3)]
        check(lib.kiln_executable_memory(self._handle, *(ctypes.byref(c) for c in counts)))
        return dict(zip(("arena", "live_bound", "constants"), (c.value for c in counts)))

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

    def __call__(self, *tensors, out=None):
        """Runs on the inputs; out: (torch) a tuple of output tensors to write into instead of
        new ones (returned as the result)."""
        if tensors and all(_is_torch_tensor(t) for t in tensors):
            return self._run_torch(tensors, out)
        if any(_is_torch_tensor(t) for t in tensors):
            raise TypeError("kiln.Executable: give all inputs as torch tensors (GPU) or none (numpy, CPU reference)")
        if out is not None:
            raise TypeError("kiln.Executable: out= is for torch tensors")
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
            plan = self._plan = (graph, inputs, outputs, want_in, want_out, arrays)
        return plan

    @staticmethod
    def _fits(tensors, want, device, ptrs):
        """True if every tensor has the wanted dtype and shape, is on `device`, contiguous and
        16-byte aligned; fills `ptrs` with their addresses. The fast check of every call."""
        if len(tensors) != len(want):
            return False
        for i, (t, (dtype, shape)) in enumerate(zip(tensors, want)):
            ptr = t.data_ptr()
            if (t.dtype != dtype or t.shape != shape or t.device != device or not t.is_contiguous()
                    or (ptr & 15 and t.numel())):
                return False
            ptrs[i] = ptr
        return True

    @staticmethod
    def _check_tensor(torch, t, info, label, device):
        """Raises the ValueError that says why `t` does not fit `info` (the slow path)."""
        if t.device.type != "cuda":
            raise ValueError(f"{label}: expected a CUDA tensor, got one on {t.device}")
        if device is not None and t.device != device:
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

    def _run_torch(self, tensors, out=None):
        import torch

        graph, inputs, outputs, want_in, want_out, (in_ptrs, out_ptrs) = self._torch_plan()
        device = tensors[0].device
        if device.type != "cuda" or not self._fits(tensors, want_in, device, in_ptrs):
            if len(tensors) != len(inputs):
                names = ", ".join(i.name for i in inputs)
                raise ValueError(f"graph '{graph.name}' takes {len(inputs)} inputs ({names}), got {len(tensors)}")
            for i, (t, info) in enumerate(zip(tensors, inputs)):
                self._check_tensor(torch, t, info, f"input #{i} '{info.name}'", None if i == 0 else device)
            raise AssertionError("kiln.Executable: the fast input check refused inputs the full check accepts")
        index = device.index if device.index is not None else torch.cuda.current_device()
        if index != self.device_ordinal:
            raise ValueError(f"the inputs are on {device}, this executable runs on cuda:{self.device_ordinal} "
                             "(compile or load it with device_ordinal=)")
        if out is None:
            results = tuple(torch.empty(shape, dtype=dtype, device=device) for dtype, shape in want_out)
            for j, r in enumerate(results):
                out_ptrs[j] = r.data_ptr()
        else:
            results = tuple(out)
            if len(results) != len(outputs) or not all(_is_torch_tensor(r) for r in results):
                raise ValueError(f"out: graph '{graph.name}' has {len(outputs)} outputs; give as many torch tensors")
            if not self._fits(results, want_out, device, out_ptrs):
                for j, (r, info) in enumerate(zip(results, outputs)):
                    self._check_tensor(torch, r, info, f"output #{j} '{info.name}'", device)
                raise AssertionError("kiln.Executable: the fast output check refused outputs the full check accepts")
        stream = torch.cuda.current_stream(device).cuda_stream
        check(lib.kiln_executable_run(self._handle, in_ptrs, len(want_in), out_ptrs, len(want_out), stream))
        return results

    def __repr__(self):
        return f"<kiln.Executable '{self.graph.name}' for {self.arch}>"


def _options(device=None, tune=False, cache_dir=None, cost_device=None, device_ordinal=0, cuda_graph=False):
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
        check(lib.kiln_options_set_cuda_graph(handle, 1 if cuda_graph else 0))
    except BaseException:
        lib.kiln_options_free(handle)
        raise
    return handle.value


def compile(graph, *, device=None, tune=False, cache_dir=None, cost_device=None, device_ordinal=0, cuda_graph=False):
    """Compiles `graph` (a path to .json/.onnx, JSON text, a dict, or a kiln.Graph).

    device: the NVRTC target such as "sm_90a"; None: this GPU's, or sm_90a without a GPU (then
    the executable can be saved but not run on the GPU). tune: autotune launch parameters on
    this GPU. cache_dir: the CUBIN cache directory ("" memory only; None: $KILN_CACHE_DIR or
    kiln's default). cost_device: the cost model's device: None or "auto" (this GPU's query;
    the h100 spec without a GPU), "h100" or "h200".
    device_ordinal: the CUDA device it runs on. cuda_graph: run torch calls as one CUDA graph
    launch (see the module docstring; settable later as Executable.cuda_graph)."""
    g = as_graph(graph)
    options = _options(device, tune, cache_dir, cost_device, device_ordinal, cuda_graph)
    try:
        handle = ctypes.c_void_p()
        check(lib.kiln_compile(g._handle, options, ctypes.byref(handle)))
    finally:
        lib.kiln_options_free(options)
    return Executable(handle.value, device_ordinal, cuda_graph)


def load(path, *, device_ordinal=0, cuda_graph=False):
    """Loads an artifact (.kiln) written by Executable.save or `kiln compile`; cuda_graph as
    for kiln.compile."""
    options = _options(device_ordinal=device_ordinal, cuda_graph=cuda_graph)
    try:
        handle = ctypes.c_void_p()
        check(lib.kiln_artifact_load(encode(path), options, ctypes.byref(handle)))
    finally:
        lib.kiln_options_free(options)
    return Executable(handle.value, device_ordinal, cuda_graph)


def dump(graph, format="text", cost_device=None):
    """The fusion report of `graph` as `kiln dump` prints it (format: text, json, jsonl, dot)."""
    return as_graph(graph).dump(format, cost_device)
