"""FX graph (ATen ops) -> kiln JSON graph dict.

The converter walks an FX graph whose `call_function` targets are ATen `OpOverload`s (what
AOTAutograd hands a backend) and emits kiln ops (`ir/ops.def`, `docs/graph-format.md`). Every
handler maps one ATen overload exactly or raises `Unsupported` with a reason; the partitioner
asks `why_unsupported(node)` before putting a node into a kiln region, and the region falls back
to torch if conversion still fails.

This module holds the builder, the converter and the support check; the handlers are in
ops_basic.py (layout, pointwise) and ops_compute.py (matmul, reductions, composites, loss,
dropout, attention).

Shapes and dtypes come from `node.meta["val"]` (FakeTensors under AOTAutograd); placeholders take
the concrete (dtype, shape) the caller gives, so one FX graph converts once per input signature.
"""

import math
import operator

import torch

aten = torch.ops.aten
prims = getattr(torch.ops, "prims", None)


class Unsupported(Exception):
    """A node (or a use of one of its outputs) that kiln cannot express exactly."""


TORCH_TO_KILN = {
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.bool: "bool",
}
KILN_TO_TORCH = {v: k for k, v in TORCH_TO_KILN.items()}
FLOAT_KILN = ("f32", "f16", "bf16")


def kiln_dtype(dtype):
    try:
        return TORCH_TO_KILN[dtype]
    except KeyError:
        raise Unsupported(f"dtype {dtype} (kiln has f32, f16, bf16, i32, i64, bool)") from None


def _val(node):
    v = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return v


def _static_shape(shape):
    out = []
    for d in shape:
        if isinstance(d, int):
            out.append(d)
        else:
            try:
                out.append(int(d))  # a SymInt with a hint is still a symbol: refuse
            except Exception:
                pass
            raise Unsupported("dynamic (symbolic) shape; compile with dynamic=False")
    return tuple(out)


def tensor_meta(node):
    """(kiln dtype, shape) of an FX node's tensor value, from meta['val']."""
    v = _val(node)
    if isinstance(v, torch.Tensor):
        return kiln_dtype(v.dtype), _static_shape(v.shape)
    raise Unsupported(f"no tensor metadata for {node.name}")


def bind_args(node):
    """Positional and keyword arguments of an ATen call by schema name, defaults filled in."""
    schema = node.target._schema
    out = {}
    for i, arg in enumerate(schema.arguments):
        if i < len(node.args) and not arg.kwarg_only:
            out[arg.name] = node.args[i]
        elif arg.name in node.kwargs:
            out[arg.name] = node.kwargs[arg.name]
        elif arg.has_default_value():
            out[arg.name] = arg.default_value
        else:
            out[arg.name] = None
    return out


class Value:
    """A kiln tensor: its name in the graph, dtype, shape."""

    __slots__ = ("name", "dtype", "shape")

    def __init__(self, name, dtype, shape):
        self.name, self.dtype, self.shape = name, dtype, tuple(shape)

    def __repr__(self):
        return f"Value({self.name}, {self.dtype}, {list(self.shape)})"


def _norm_axis(d, rank):
    if rank == 0 and d in (0, -1):
        return 0
    if not -rank <= d < rank:
        raise Unsupported(f"axis {d} out of range for rank {rank}")
    return d % rank


def _broadcast(a, b):
    a, b = list(a), list(b)
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + a
    b = [1] * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise Unsupported(f"shapes {a} and {b} do not broadcast")
        out.append(y if x == 1 else x)
    return tuple(out)


def _scalar_data(value, dtype):
    if dtype == "bool":
        return [bool(value)]
    if dtype in ("i32", "i64"):
        if isinstance(value, float) and not value.is_integer():
            raise Unsupported(f"non-integer scalar {value} for {dtype}")
        return [int(value)]
    value = float(value)
    if math.isnan(value):
        return ["nan"]
    if math.isinf(value):
        return ["inf" if value > 0 else "-inf"]
    if dtype == "f16" and abs(value) > 65504:
        return ["inf" if value > 0 else "-inf"]
    if dtype == "bf16" and abs(value) > 3.3895313892515355e38:
        return ["inf" if value > 0 else "-inf"]
    if dtype == "f32" and abs(value) > 3.4028234663852886e38:
        return ["inf" if value > 0 else "-inf"]
    return [value]


class GraphBuilder:
    """Accumulates a kiln JSON graph."""

    def __init__(self, name="graph"):
        self.name = name
        self.inputs = []
        self.initializers = []
        self.nodes = []
        self.outputs = []
        self._names = set()
        self._consts = {}
        self.seed_input = None  # name of the i64 seed input, when the graph has dropout

    def fresh(self, base):
        base = "".join(c if (c.isalnum() or c in "_.") else "_" for c in str(base)) or "t"
        if not (base[0].isalpha() or base[0] == "_"):
            base = "t_" + base
        name, i = base, 1
        while name in self._names:
            name = f"{base}_{i}"
            i += 1
        self._names.add(name)
        return name

    def input(self, base, dtype, shape):
        name = self.fresh(base)
        self.inputs.append({"name": name, "dtype": dtype, "shape": list(shape)})
        return Value(name, dtype, shape)

    def const(self, value, dtype, shape=()):
        """A constant: a scalar (broadcast by the consumer) or a flat list for `shape`."""
        if shape == ():
            key = (repr(value), dtype)
            if key in self._consts:
                return self._consts[key]
            data = _scalar_data(value, dtype)
        else:
            key = None
            data = [_scalar_data(v, dtype)[0] for v in value]
        name = self.fresh("c")
        self.initializers.append({"name": name, "dtype": dtype, "shape": list(shape), "data": data})
        v = Value(name, dtype, shape)
        if key is not None:
            self._consts[key] = v
        return v

    def op(self, op, inputs, dtype, shape, attrs=None, base=None):
        name = self.fresh(base or op)
        node = {"name": name, "op": op, "inputs": [v.name for v in inputs]}
        if attrs:
            node["attrs"] = attrs
        self.nodes.append(node)
        return Value(name, dtype, shape)

    def to_dict(self):
        return {
            "kiln_graph": 1,
            "name": self.name,
            "inputs": self.inputs,
            "initializers": self.initializers,
            "nodes": self.nodes,
            "outputs": self.outputs,
        }

    # ---- helpers over Values -------------------------------------------------------------

    def cast(self, v, dtype):
        if v.dtype == dtype:
            return v
        return self.op("cast", [v], dtype, v.shape, {"dtype": dtype})

    def reshape(self, v, shape):
        shape = tuple(shape)
        if v.shape == shape:
            return v
        return self.op("reshape", [v], v.dtype, shape, {"shape": list(shape)})

    def transpose(self, v, perm):
        perm = list(perm)
        if perm == list(range(len(perm))):
            return v
        return self.op("transpose", [v], v.dtype, tuple(v.shape[p] for p in perm), {"perm": perm})

    def broadcast_to(self, v, shape):
        shape = tuple(shape)
        if v.shape == shape:
            return v
        return self.op("broadcast_to", [v], v.dtype, shape, {"shape": list(shape)})

    def binary(self, op, a, b, dtype=None):
        shape = _broadcast(a.shape, b.shape)
        if dtype is None:
            dtype = "bool" if op in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or") else a.dtype
        return self.op(op, [a, b], dtype, shape)

    def unary(self, op, a):
        return self.op(op, [a], a.dtype, a.shape)

    def reduce(self, op, v, axes, keep):
        rank = len(v.shape)
        axes = sorted({_norm_axis(a, rank) for a in axes}) if axes else list(range(rank))
        shape = []
        for d in range(rank):
            if d not in axes:
                shape.append(v.shape[d])
            elif keep:
                shape.append(1)
        return self.op(op, [v], v.dtype, tuple(shape), {"axes": axes, "keep_dims": bool(keep)})


# ---- the converter --------------------------------------------------------------------------

HANDLERS = {}

# ops whose presence makes a region worth launching on its own (see backend policy)
HEAVY_KILN_OPS = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "softmax", "log_softmax",
                  "layer_norm", "rms_norm", "cross_entropy", "dropout", "attention"}
LAYOUT_KILN_OPS = {"reshape", "transpose", "slice", "concat", "broadcast_to", "cast"}


def handles(*targets):
    def deco(fn):
        for t in targets:
            if t is not None:
                HANDLERS[t] = fn
        return fn
    return deco


def _ov(packet, *names):
    """OpOverloads of an aten packet that exist in this torch version."""
    out = []
    for n in names:
        o = getattr(packet, n, None)
        if o is not None:
            out.append(o)
    return out


def _aten(name, *overloads):
    packet = getattr(aten, name, None)
    if packet is None:
        return []
    return _ov(packet, *(overloads or ("default",)))


class ViewOf:
    """An out_map entry: this FX output is a view, computed in torch by replaying its view chain
    on kiln output `index` (the chain's base, a value the region computes)."""

    def __init__(self, index):
        self.index = index

    def __eq__(self, other):
        return isinstance(other, ViewOf) and other.index == self.index

    def __repr__(self):
        return f"ViewOf({self.index})"


class TorchSide:
    """An output of an op that kiln does not compute but torch can give without work: a
    constant tensor (the rng seed and offset of an attention without dropout, which its backward
    does not read). Made once per device and returned as is by every call."""

    def __init__(self, shape, dtype, value=0):
        self.shape, self.dtype, self.value = tuple(shape), dtype, value
        self._made = {}

    def get(self, device):
        t = self._made.get(device)
        if t is None:
            t = self._made[device] = torch.full(self.shape, self.value, dtype=self.dtype, device=device)
        return t


class Converter:
    """Converts one FX graph (a kiln region) to a kiln JSON graph dict.

    input_specs: for each placeholder, in order, (kiln dtype, shape, perm): perm is None for a
    contiguous tensor, or the permutation p such that the caller passes x.permute(p) (dense,
    contiguous) and the graph restores x with a transpose.
    """

    def __init__(self, graph, input_specs=None, name="kiln_region", module=None, torch_outputs=()):
        self.graph = graph
        self.module = module
        # {FX output index: None (a view of an input, computed in torch) or the FX node whose
        # kiln output it is a view of}
        self.torch_outputs = dict(torch_outputs) if isinstance(torch_outputs, dict) else \
            {i: None for i in torch_outputs}
        # per FX output: its kiln output index, (index, permutation), None (a view of an input,
        # computed in torch), a ViewOf(index) or a TorchSide
        self.out_map = []
        self.b = GraphBuilder(name)
        self.env = {}
        self.input_specs = input_specs
        self.dropout_count = 0
        self.ops_used = []

    # --- operand access
    def value(self, arg, dtype=None, shape_hint=None):
        """A kiln Value for an FX argument: a node's value, or a Python scalar as a constant of
        `dtype` (which must then be given)."""
        if isinstance(arg, torch.fx.Node):
            v = self.env[arg]
            if isinstance(v, tuple):
                raise Unsupported(f"{arg.name} is a tuple, used as a tensor")
            if v is None or isinstance(v, TorchSide):
                raise Unsupported(f"{arg.name} has no kiln value")
            if dtype is not None:
                v = self.b.cast(v, dtype)
            return v
        if isinstance(arg, (bool, int, float)):
            if dtype is None:
                raise Unsupported("scalar operand without a dtype")
            return self.b.const(arg, dtype)
        raise Unsupported(f"operand of type {type(arg).__name__}")

    def out_meta(self, node, index=None):
        v = _val(node)
        if index is not None:
            v = v[index]
        if not isinstance(v, torch.Tensor):
            raise Unsupported(f"{node.name}: output {index} is not a tensor")
        return kiln_dtype(v.dtype), _static_shape(v.shape)

    def run(self):
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        if self.input_specs is None:
            self.input_specs = [tensor_meta(n) + (None,) for n in placeholders]
        if len(self.input_specs) != len(placeholders):
            raise Unsupported("input count does not match the graph")
        for n, spec in zip(placeholders, self.input_specs):
            dtype, shape, perm = spec
            if perm is None:
                self.env[n] = self.b.input(n.name, dtype, shape)
            else:
                base_shape = tuple(shape[p] for p in perm)
                base = self.b.input(n.name, dtype, base_shape)
                inv = [0] * len(perm)
                for i, p in enumerate(perm):
                    inv[p] = i
                self.env[n] = self.b.transpose(base, inv)
        for n in self.graph.nodes:
            if n.op == "placeholder":
                continue
            if n.op == "output":
                self._outputs(n)
                continue
            if n.op == "get_attr":
                self.env[n] = self._get_attr(n)
                continue
            if n.op != "call_function":
                raise Unsupported(f"{n.op} node {n.name}")
            fn = HANDLERS.get(n.target)
            if fn is None:
                raise Unsupported(f"op {n.target} has no kiln mapping")
            self.env[n] = fn(self, n, **bind_args(n)) if n.target is not operator.getitem else fn(self, n)
            self.ops_used.append(str(n.target))
        return self.b.to_dict()

    def _get_attr(self, n):
        t = getattr(self.module, n.target, None) if self.module is not None else None
        if not isinstance(t, torch.Tensor) or t.numel() > 4096:
            raise Unsupported(f"constant {n.target} (only small tensors inline)")
        dt = kiln_dtype(t.dtype)
        flat = t.detach().cpu().reshape(-1).tolist()
        if t.dim() == 0:
            return self.b.const(flat[0], dt)
        return self.b.const(flat, dt, tuple(t.shape))

    def _outputs(self, n):
        """One kiln output per distinct value: an FX output the caller computes in torch
        (self.torch_outputs) gets None in self.out_map, or ViewOf(k) when it is a view of a
        value the region computes (kiln output k, replayed on it), and a value returned twice (x and
        detach(x)) is one kiln output, so that lowering copies nothing. An output the trace
        gives permuted strides (SDPA's output, [B,H,S,D] laid out as [B,S,H,D]) is computed in
        that layout (a transpose kiln folds into the producer's store, and often shares with
        the consumer that reads it so) and returned as the permuted view: out_map holds
        (index, the permutation that gives the traced shape)."""
        outs = n.args[0]
        if not isinstance(outs, (list, tuple)):
            outs = [outs]
        index_of = {}

        def output(i, v):
            if v.name not in index_of:
                name = f"out{i}"
                self.b._names.add(name)
                index_of[v.name] = len(self.b.outputs)
                self.b.outputs.append({"name": name, "node": v.name})
            return index_of[v.name]

        for i, o in enumerate(outs):
            if i in self.torch_outputs:
                base = self.torch_outputs[i]
                self.out_map.append(None if base is None else ViewOf(output(i, self.value(base))))
                continue
            if not isinstance(o, torch.fx.Node):
                raise Unsupported("non-tensor graph output")
            if isinstance(self.env.get(o), TorchSide):  # made in torch (TorchSide)
                self.out_map.append(self.env[o])
                continue
            v = self.value(o)
            perm = _dense_permutation(_val(o))
            if perm is not None:
                v = self.b.op("transpose", [v], v.dtype, tuple(v.shape[d] for d in perm), {"perm": list(perm)})
            output(i, v)
            if perm is None:
                self.out_map.append(index_of[v.name])
            else:
                self.out_map.append((index_of[v.name], tuple(sorted(range(len(perm)), key=lambda d: perm[d]))))


def _dense_permutation(t):
    """p with t.permute(p) contiguous, for a tensor whose strides are a non-identity permutation
    of a dense layout; None for a contiguous tensor or any other layout."""
    if not isinstance(t, torch.Tensor) or t.dim() < 2 or t.is_contiguous():
        return None
    dims = sorted(range(t.dim()), key=lambda d: (-t.stride(d), -t.shape[d]))
    return tuple(dims) if t.permute(dims).is_contiguous() and dims != sorted(dims) else None


def convert(graph, input_specs=None, name="kiln_region", module=None, torch_outputs=()):
    """Converts an FX graph to (kiln JSON dict, info). Raises Unsupported. torch_outputs: the FX
    outputs the caller computes itself, as views: {index: None (of an input; out_map has None)
    or the FX node whose value they view (kiln returns it; out_map has a ViewOf)}, or just
    the indices."""
    c = Converter(graph, input_specs, name, module, torch_outputs)
    d = c.run()
    info = {"ops": c.ops_used, "dropout": c.dropout_count, "seed_input": c.b.seed_input, "out_map": c.out_map}
    return d, info


# ---- support check used by the partitioner ---------------------------------------------------

def _used_getitem_indices(node):
    out = set()
    for u in node.users:
        if u.op == "call_function" and u.target is operator.getitem:
            if len(u.users) > 0:
                out.add(u.args[1])
        else:
            out.add("whole")
    return out


def why_unsupported(node):
    """None if `node` can go into a kiln region, else the reason (a short string)."""
    if node.op != "call_function":
        return f"{node.op} node"
    if node.target is operator.getitem:
        parent = node.args[0]
        if isinstance(parent, torch.fx.Node):
            return why_unsupported(parent)
        return "getitem of a non-node"
    fn = HANDLERS.get(node.target)
    if fn is None:
        return f"no kiln mapping for {node.target}"
    # dtypes and static shapes of every tensor in and out
    vals = []
    v = _val(node)
    if isinstance(v, (list, tuple)):
        vals.extend(x for x in v if isinstance(x, torch.Tensor))
    elif isinstance(v, torch.Tensor):
        vals.append(v)
    elif v is None:
        return "no shape metadata"
    for a in node.all_input_nodes:
        av = _val(a)
        if isinstance(av, torch.Tensor):
            vals.append(av)
    for t in vals:
        if t.dtype not in TORCH_TO_KILN:
            return f"dtype {t.dtype}"
        try:
            _static_shape(t.shape)
        except Unsupported as e:
            return str(e)
        if t.device.type not in ("cuda", "meta") and not _ALLOW_CPU[0]:
            return f"{t.device.type} tensor (kiln runs on CUDA)"
    check = CHECKS.get(node.target)
    if check is not None:
        try:
            check(node, **bind_args(node))
        except Unsupported as e:
            return str(e)
    return None


# Converter tests flip this to convert CPU-traced graphs.
_ALLOW_CPU = [False]

CHECKS = {}


def checks(*targets):
    def deco(fn):
        for t in targets:
            CHECKS[t] = fn
        return fn
    return deco


# The handlers live in two modules that register themselves in HANDLERS/CHECKS on import (they
# import the names above, so they are imported last).
from . import ops_basic, ops_compute  # noqa: E402,F401

