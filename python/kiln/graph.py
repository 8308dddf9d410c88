"""kiln.Graph: a graph loaded from a file, JSON text or a dict, or built node by node, over the
C ABI's kiln_graph handle; its inputs and outputs; JSON export; the CPU reference run on numpy
arrays (Graph.reference); the fusion report (Graph.dump)."""

import ctypes
import json
import os
from collections import namedtuple

from . import _capi
from ._capi import lib, check, encode

TensorInfo = namedtuple("TensorInfo", ["name", "dtype", "shape"])
TensorInfo.__doc__ = "A graph input or output: name, dtype (\"f32\", \"bf16\", ...) and shape (a tuple)."


def _info(raw):
    shape = tuple(raw.dims[i] for i in range(raw.rank))
    return TensorInfo(raw.name.decode(), raw.dtype.decode(), shape)


class Graph:
    """A kiln graph. Make one with Graph(source) where source is a path (.json or .onnx), JSON
    text, a dict in kiln's JSON format (docs/graph-format.md), or another Graph; or with
    Graph.create(name) and the add_* methods."""

    def __init__(self, source=None, *, _handle=None, _owner=None):
        self._owner = _owner  # an Executable that owns the handle (borrowed graph)
        if _handle is not None:
            self._handle = _handle
            return
        self._handle = None
        handle = ctypes.c_void_p()
        if isinstance(source, Graph):
            check(lib.kiln_graph_from_json(source.to_json().encode(), ctypes.byref(handle)))
        elif isinstance(source, dict):
            check(lib.kiln_graph_from_json(json.dumps(source).encode(), ctypes.byref(handle)))
        elif isinstance(source, str) and source.lstrip().startswith("{"):
            check(lib.kiln_graph_from_json(source.encode(), ctypes.byref(handle)))
        elif isinstance(source, (str, os.PathLike)):
            check(lib.kiln_graph_load(encode(source), ctypes.byref(handle)))
        else:
            raise TypeError(f"kiln.Graph: expected a path, JSON text, a dict or a Graph, got {type(source).__name__}")
        self._handle = handle.value

    @classmethod
    def create(cls, name="graph"):
        """An empty graph to build with add_input, add_constant, add_node and add_output."""
        handle = ctypes.c_void_p()
        check(lib.kiln_graph_create(encode(name), ctypes.byref(handle)))
        return cls(_handle=handle.value)

    def __del__(self):
        if getattr(self, "_handle", None) and self._owner is None:
            lib.kiln_graph_free(self._handle)
            self._handle = None

    # ---- building ----

    def add_input(self, name, dtype, shape):
        """Adds a graph input; returns its id (an operand for add_node)."""
        dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        out = ctypes.c_int64()
        check(lib.kiln_graph_add_input(self._handle, encode(name), encode(dtype), len(shape), dims, ctypes.byref(out)))
        return out.value

    def add_constant(self, name, array, dtype=None):
        """Adds a constant from a numpy array (dtype: the kiln dtype; default from the array's;
        for "bf16" give float32 or uint16 bits as for reference inputs); returns its id."""
        import numpy as np
        from ._arrays import NUMPY_DTYPES, to_host

        array = np.asarray(array)
        if dtype is None:
            names = {np.dtype(v): k for k, v in NUMPY_DTYPES.items()}
            if array.dtype not in names:
                raise ValueError(f"constant '{name}': no kiln dtype for {array.dtype}; pass dtype=")
            dtype = names[array.dtype]
        host = to_host(array, TensorInfo(name, dtype, tuple(array.shape)), f"constant '{name}'")
        dims = (ctypes.c_int64 * max(host.ndim, 1))(*host.shape)
        out = ctypes.c_int64()
        check(lib.kiln_graph_add_constant(self._handle, encode(name), encode(dtype), host.ndim, dims,
                                          host.ctypes.data, host.nbytes, ctypes.byref(out)))
        return out.value

    def add_node(self, op, operands, attrs=None, name=None):
        """Adds an op node (op: a name of the JSON format, e.g. "softmax"; attrs: a dict);
        returns its id."""
        ids = (ctypes.c_int64 * max(len(operands), 1))(*operands)
        text = json.dumps(attrs) if attrs else None
        out = ctypes.c_int64()
        check(lib.kiln_graph_add_node(self._handle, encode(op), ids, len(operands), encode(text), encode(name),
                                      ctypes.byref(out)))
        return out.value

    def add_output(self, value_id, name=None):
        check(lib.kiln_graph_add_output(self._handle, value_id, encode(name)))

    def value_info(self, value_id):
        """TensorInfo of a value the builder added."""
        raw = _capi.TensorInfo()
        check(lib.kiln_graph_value_info(self._handle, value_id, ctypes.byref(raw)))
        return _info(raw)

    # ---- queries ----

    @property
    def name(self):
        out = ctypes.c_char_p()
        check(lib.kiln_graph_name(self._handle, ctypes.byref(out)))
        return out.value.decode()

    @property
    def inputs(self):
        """[TensorInfo] in graph input order."""
        return self._infos(lib.kiln_graph_num_inputs, lib.kiln_graph_input_info)

    @property
    def outputs(self):
        """[TensorInfo] in graph output order."""
        return self._infos(lib.kiln_graph_num_outputs, lib.kiln_graph_output_info)

    def _infos(self, count_fn, info_fn):
        count = ctypes.c_int64()
        check(count_fn(self._handle, ctypes.byref(count)))
        infos = []
        for i in range(count.value):
            raw = _capi.TensorInfo()
            check(info_fn(self._handle, i, ctypes.byref(raw)))
            infos.append(_info(raw))
        return infos

    def verify(self):
        check(lib.kiln_graph_verify(self._handle))

    def to_json(self):
        """The graph in kiln's JSON format (constants inline), as text."""
        out = ctypes.c_void_p()
        check(lib.kiln_graph_to_json(self._handle, ctypes.byref(out)))
        return _capi.take_string(out.value)

    def dump(self, format="text", cost_device=None):
        """The fusion report as `kiln dump` prints it (format: text, json, jsonl, dot)."""
        out = ctypes.c_void_p()
        check(lib.kiln_graph_dump(self._handle, encode(format), encode(cost_device), ctypes.byref(out)))
        return _capi.take_string(out.value)

    # ---- the CPU reference interpreter ----

    def reference(self, *arrays):
        """Evaluates the graph on the CPU reference interpreter (slow; for checks and small
        shapes): one numpy array per input, in order; returns a tuple of numpy arrays, one per
        output. bf16: see kiln._arrays (float32 in and out, or uint16 bits in)."""
        from . import _arrays

        inputs, outputs = self.inputs, self.outputs
        if len(arrays) != len(inputs):
            names = ", ".join(i.name for i in inputs)
            raise ValueError(f"graph '{self.name}' takes {len(inputs)} inputs ({names}), got {len(arrays)}")
        host_in = [_arrays.to_host(a, info, f"input #{i} '{info.name}'")
                   for i, (a, info) in enumerate(zip(arrays, inputs))]
        host_out = [_arrays.empty_host(info) for info in outputs]
        check(lib.kiln_graph_reference(self._handle, _capi.pointer_array([a.ctypes.data for a in host_in]),
                                       len(host_in), _capi.pointer_array([a.ctypes.data for a in host_out]),
                                       len(host_out)))
        return tuple(_arrays.from_host(a, info) for a, info in zip(host_out, outputs))

    def __repr__(self):
        ins = ", ".join(f"{i.name}: {i.dtype}{list(i.shape)}" for i in self.inputs)
        outs = ", ".join(f"{o.name}: {o.dtype}{list(o.shape)}" for o in self.outputs)
        return f"<kiln.Graph '{self.name}' ({ins}) -> ({outs})>"


def as_graph(source):
    """A Graph from anything Graph() takes (a Graph is returned as it is)."""
    return source if isinstance(source, Graph) else Graph(source)
