"""FX graph (ATen ops) -> kiln JSON graph dict.

The converter walks an FX graph whose `call_function` targets are ATen `OpOverload`s (what
AOTAutograd hands a backend) and emits kiln ops (`ir/ops.def`, `docs/graph-format.md`). Every
handler maps one ATen overload exactly or raises `Unsupported` with a reason; the partitioner
asks `why_unsupported(node)` before putting a node into a kiln region, and the region falls back
to torch if conversion still fails.

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


class Converter:
    """Converts one FX graph (a kiln region) to a kiln JSON graph dict.

    input_specs: for each placeholder, in order, (kiln dtype, shape, perm): perm is None for a
    contiguous tensor, or the permutation p such that the caller passes x.permute(p) (dense,
    contiguous) and the graph restores x with a transpose.
    """

    def __init__(self, graph, input_specs=None, name="kiln_region", module=None, torch_outputs=()):
        self.graph = graph
        self.module = module
        self.torch_outputs = set(torch_outputs)
        self.out_map = []  # per FX output: its kiln output index, or None (computed in torch)
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
            if v is None:
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
        (self.torch_outputs) gets None in self.out_map, and a value returned twice (x and
        detach(x)) is one kiln output, so that lowering copies nothing."""
        outs = n.args[0]
        if not isinstance(outs, (list, tuple)):
            outs = [outs]
        index_of = {}
        for i, o in enumerate(outs):
            if i in self.torch_outputs:
                self.out_map.append(None)
                continue
            if not isinstance(o, torch.fx.Node):
                raise Unsupported("non-tensor graph output")
            v = self.value(o)
            if v.name not in index_of:
                name = f"out{i}"
                self.b._names.add(name)
                index_of[v.name] = len(self.b.outputs)
                self.b.outputs.append({"name": name, "node": v.name})
            self.out_map.append(index_of[v.name])


def convert(graph, input_specs=None, name="kiln_region", module=None, torch_outputs=()):
    """Converts an FX graph to (kiln JSON dict, info). Raises Unsupported. torch_outputs: the
    indices of FX outputs the caller computes itself (info["out_map"] has None for them)."""
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


# ---- handlers: identity / layout -------------------------------------------------------------

@handles(*_aten("clone"), *_aten("alias"), *_aten("detach"), *_aten("lift_fresh_copy"),
         *_aten("contiguous"))
def _identity(c, n, **a):
    return c.value(n.args[0])


@handles(operator.getitem)
def _getitem(c, n):
    parent = c.env[n.args[0]]
    if not isinstance(parent, tuple):
        raise Unsupported(f"getitem on a non-tuple {n.args[0].name}")
    v = parent[n.args[1]]
    if v is None:
        if not n.users:
            return None  # a dead getitem (make_fx keeps them)
        raise Unsupported(f"output {n.args[1]} of {n.args[0].target} is not provided")
    return v


@handles(*_aten("view"), *_aten("_unsafe_view"), *_aten("reshape"),
         *_aten("squeeze", "default", "dim", "dims"), *_aten("unsqueeze"),
         *_aten("flatten", "using_ints"), *_aten("unflatten", "int"))
def _reshape(c, n, **a):
    _, shape = c.out_meta(n)
    return c.b.reshape(c.value(n.args[0]), shape)


@handles(*_aten("permute"))
def _permute(c, n, self, dims):
    x = c.value(self)
    return c.b.transpose(x, [_norm_axis(d, len(x.shape)) for d in dims])


@handles(*_aten("transpose", "int"))
def _transpose(c, n, self, dim0, dim1):
    x = c.value(self)
    r = len(x.shape)
    perm = list(range(r))
    if r:
        d0, d1 = _norm_axis(dim0, r), _norm_axis(dim1, r)
        perm[d0], perm[d1] = perm[d1], perm[d0]
    return c.b.transpose(x, perm)


@handles(*_aten("t"), *_aten("numpy_T"))
def _t(c, n, self):
    x = c.value(self)
    return c.b.transpose(x, list(range(len(x.shape)))[::-1])


@handles(*_aten("expand"), *_aten("expand_copy"), *_aten("broadcast_to"))
def _expand(c, n, **a):
    _, shape = c.out_meta(n)
    return c.b.broadcast_to(c.value(n.args[0]), shape)


@handles(*_aten("slice", "Tensor"))
def _slice(c, n, self, dim, start, end, step):
    x = c.value(self)
    r = len(x.shape)
    d = _norm_axis(dim, r)
    size = x.shape[d]
    start = 0 if start is None else start
    end = size if end is None else end
    start = max(min(start + size if start < 0 else start, size), 0)
    end = max(min(end + size if end < 0 else end, size), 0)
    if step is None:
        step = 1
    if start == 0 and end == size and step == 1:
        return x
    starts = [0] * r
    ends = list(x.shape)
    steps = [1] * r
    starts[d], ends[d], steps[d] = start, end, step
    _, shape = c.out_meta(n)
    attrs = {"starts": starts, "ends": ends}
    if step != 1:
        attrs["steps"] = steps
    return c.b.op("slice", [x], x.dtype, shape, attrs)


@handles(*_aten("select", "int"))
def _select(c, n, self, dim, index):
    x = c.value(self)
    r = len(x.shape)
    d = _norm_axis(dim, r)
    idx = index + x.shape[d] if index < 0 else index
    starts = [0] * r
    ends = list(x.shape)
    starts[d], ends[d] = idx, idx + 1
    shape = list(x.shape)
    shape[d] = 1
    s = c.b.op("slice", [x], x.dtype, tuple(shape), {"starts": starts, "ends": ends})
    _, out_shape = c.out_meta(n)
    return c.b.reshape(s, out_shape)


def _split_values(c, n, x, d, sizes):
    outs = []
    off = 0
    r = len(x.shape)
    for s in sizes:
        starts = [0] * r
        ends = list(x.shape)
        starts[d], ends[d] = off, off + s
        shape = list(x.shape)
        shape[d] = s
        outs.append(c.b.op("slice", [x], x.dtype, tuple(shape), {"starts": starts, "ends": ends}))
        off += s
    return tuple(outs)


@handles(*_aten("split", "Tensor"))
def _split(c, n, self, split_size, dim):
    x = c.value(self)
    d = _norm_axis(dim, len(x.shape))
    total = x.shape[d]
    sizes = []
    while sum(sizes) < total:
        sizes.append(min(split_size, total - sum(sizes)))
    return _split_values(c, n, x, d, sizes or [0])


@handles(*_aten("split_with_sizes"))
def _split_ws(c, n, self, split_sizes, dim):
    x = c.value(self)
    return _split_values(c, n, x, _norm_axis(dim, len(x.shape)), list(split_sizes))


@handles(*_aten("unbind", "int"))
def _unbind(c, n, self, dim):
    x = c.value(self)
    d = _norm_axis(dim, len(x.shape))
    parts = _split_values(c, n, x, d, [1] * x.shape[d])
    shape = x.shape[:d] + x.shape[d + 1:]
    return tuple(c.b.reshape(p, shape) for p in parts)


@handles(*_aten("cat"))
def _cat(c, n, tensors, dim):
    dtype, shape = c.out_meta(n)
    vals = [c.value(t, dtype) for t in tensors]
    vals = [v for v in vals if not (len(v.shape) == 1 and v.shape[0] == 0)]  # legacy empty cat
    if len(vals) == 1:
        return vals[0]
    d = _norm_axis(dim, len(shape))
    return c.b.op("concat", vals, dtype, shape, {"axis": d})


@handles(*_aten("_to_copy"), *_aten("to", "dtype"), *_aten("type_as"))
def _to_copy(c, n, **a):
    dtype, _ = c.out_meta(n)
    return c.b.cast(c.value(n.args[0]), dtype)


@checks(*_aten("_to_copy"))
def _to_copy_check(n, self, **a):
    iv, ov = _val(self), _val(n)
    if iv is not None and ov is not None and iv.device != ov.device:
        raise Unsupported("device copy")


if prims is not None and hasattr(prims, "convert_element_type"):
    HANDLERS[prims.convert_element_type.default] = lambda c, n, **a: c.b.cast(c.value(n.args[0]), c.out_meta(n)[0])


@handles(*_aten("embedding"))
def _embedding(c, n, weight, indices, **a):
    w, i = c.value(weight), c.value(indices)
    dtype, shape = c.out_meta(n)
    return c.b.op("gather", [w, i], dtype, shape, {"axis": 0})


# ---- pointwise -------------------------------------------------------------------------------

def _operand(c, x, dtype):
    return c.value(x, dtype)


def _arith(op):
    def h(c, n, self, other, alpha=1, **a):
        dtype, shape = c.out_meta(n)
        x = _operand(c, self, dtype)
        y = _operand(c, other, dtype)
        if alpha not in (1, None):
            y = c.b.binary("mul", y, c.b.const(alpha, dtype))
        return c.b.binary(op, x, y)
    return h


for _name, _kop in (("add", "add"), ("sub", "sub")):
    for _o in _aten(_name, "Tensor", "Scalar"):
        HANDLERS[_o] = _arith(_kop)
for _o in _aten("mul", "Tensor", "Scalar"):
    HANDLERS[_o] = _arith("mul")


@handles(*_aten("div", "Tensor", "Scalar"))
def _div(c, n, self, other):
    dtype, _ = c.out_meta(n)
    return c.b.binary("div", _operand(c, self, dtype), _operand(c, other, dtype))


@checks(*_aten("div", "Tensor_mode", "Scalar_mode"))
def _div_mode_check(n, **a):
    raise Unsupported("div with rounding_mode")


@handles(*_aten("rsub", "Tensor", "Scalar"))
def _rsub(c, n, self, other, alpha=1):
    dtype, _ = c.out_meta(n)
    x = _operand(c, self, dtype)
    if alpha not in (1, None):
        x = c.b.binary("mul", x, c.b.const(alpha, dtype))
    return c.b.binary("sub", _operand(c, other, dtype), x)


def _unary(op, float_only=False):
    def h(c, n, self, **a):
        dtype, _ = c.out_meta(n)
        return c.b.unary(op, c.value(self, dtype))
    return h


for _name, _kop in (("neg", "neg"), ("abs", "abs"), ("exp", "exp"), ("log", "log"), ("sqrt", "sqrt"),
                    ("rsqrt", "rsqrt"), ("reciprocal", "reciprocal"), ("tanh", "tanh"),
                    ("sigmoid", "sigmoid"), ("erf", "erf"), ("relu", "relu"), ("silu", "silu")):
    for _o in _aten(_name):
        HANDLERS[_o] = _unary(_kop)


@handles(*_aten("gelu"))
def _gelu(c, n, self, approximate="none"):
    dtype, _ = c.out_meta(n)
    return c.b.unary("gelu_tanh" if approximate == "tanh" else "gelu", c.value(self, dtype))


@checks(*_aten("gelu"))
def _gelu_check(n, self, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise Unsupported(f"gelu approximate={approximate!r}")


@handles(*_aten("pow", "Tensor_Scalar", "Tensor_Tensor", "Scalar"))
def _pow(c, n, self, exponent):
    dtype, _ = c.out_meta(n)
    if dtype not in FLOAT_KILN:
        raise Unsupported("integer pow")
    if isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
        x = c.value(self, dtype)
        if exponent == 1:
            return x
        if exponent == 2:
            return c.b.binary("mul", x, x)
        if exponent == 0.5:
            return c.b.unary("sqrt", x)
        if exponent == -0.5:
            return c.b.unary("rsqrt", x)
        if exponent == -1:
            return c.b.unary("reciprocal", x)
        return c.b.binary("pow", x, c.b.const(exponent, dtype))
    return c.b.binary("pow", _operand(c, self, dtype), _operand(c, exponent, dtype))


@checks(*_aten("pow", "Tensor_Scalar", "Tensor_Tensor", "Scalar"))
def _pow_check(n, **a):
    v = _val(n)
    if isinstance(v, torch.Tensor) and not v.dtype.is_floating_point:
        raise Unsupported("integer pow")


def _promoted(self, other):
    """torch's promoted dtype of a binary op's operands (for comparisons)."""
    def probe(x):
        if isinstance(x, torch.fx.Node):
            v = _val(x)
            if not isinstance(v, torch.Tensor):
                raise Unsupported(f"no tensor metadata for {x.name}")
            return torch.empty((1,) if v.dim() > 0 else (), dtype=v.dtype, device="meta")
        return x
    a, b = probe(self), probe(other)
    if not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor):
        raise Unsupported("comparison of two scalars")
    return torch.result_type(a, b)


def _compare(op):
    def h(c, n, self, other):
        dtype = kiln_dtype(_promoted(self, other))
        return c.b.binary(op, _operand(c, self, dtype), _operand(c, other, dtype), "bool")
    return h


for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    for _o in _aten(_name, "Tensor", "Scalar"):
        HANDLERS[_o] = _compare(_name)


def _minmax(op):
    def h(c, n, self, other):
        dtype, _ = c.out_meta(n)
        return c.b.binary(op, _operand(c, self, dtype), _operand(c, other, dtype))
    return h


for _o in _aten("maximum"):
    HANDLERS[_o] = _minmax("maximum")
for _o in _aten("minimum"):
    HANDLERS[_o] = _minmax("minimum")


@handles(*_aten("clamp", "default", "Tensor"), *_aten("clamp_min", "default", "Tensor"),
         *_aten("clamp_max", "default", "Tensor"))
def _clamp(c, n, self, min=None, max=None, **a):
    dtype, _ = c.out_meta(n)
    x = c.value(self, dtype)
    if min is not None:
        x = c.b.binary("maximum", x, _operand(c, min, dtype))
    if max is not None:
        x = c.b.binary("minimum", x, _operand(c, max, dtype))
    return x


def _to_bool(c, x):
    v = c.value(x)
    if v.dtype == "bool":
        return v
    return c.b.binary("ne", v, c.b.const(0, v.dtype), "bool")


@handles(*_aten("logical_not"), *_aten("bitwise_not"))
def _lnot(c, n, self):
    return c.b.op("logical_not", [_to_bool(c, self)], "bool", c.value(self).shape)


@checks(*_aten("bitwise_not"), *_aten("bitwise_and", "Tensor"), *_aten("bitwise_or", "Tensor"))
def _bitwise_check(n, self, other=None):
    if _val(self) is None or _val(self).dtype != torch.bool:
        raise Unsupported("bitwise op on integers")


@handles(*_aten("logical_and"), *_aten("bitwise_and", "Tensor"))
def _land(c, n, self, other):
    return c.b.binary("logical_and", _to_bool(c, self), _to_bool(c, other), "bool")


@handles(*_aten("logical_or"), *_aten("bitwise_or", "Tensor"))
def _lor(c, n, self, other):
    return c.b.binary("logical_or", _to_bool(c, self), _to_bool(c, other), "bool")


@handles(*_aten("where", "self", "ScalarSelf", "ScalarOther", "Scalar"))
def _where(c, n, condition, self, other):
    dtype, shape = c.out_meta(n)
    cond = _to_bool(c, condition)
    a = _operand(c, self, dtype)
    b = _operand(c, other, dtype)
    return c.b.op("where", [cond, a, b], dtype, shape)


@handles(*_aten("masked_fill", "Scalar", "Tensor"))
def _masked_fill(c, n, self, mask, value):
    dtype, shape = c.out_meta(n)
    return c.b.op("where", [_to_bool(c, mask), _operand(c, value, dtype), c.value(self, dtype)], dtype, shape)


@handles(*_aten("full"), *_aten("scalar_tensor"), *_aten("zeros"), *_aten("ones"),
         *_aten("full_like"), *_aten("zeros_like"), *_aten("ones_like"))
def _full(c, n, **a):
    dtype, shape = c.out_meta(n)
    name = str(n.target)
    if "zeros" in name:
        value = 0
    elif "ones" in name:
        value = 1
    elif "scalar_tensor" in name:
        value = a["s"]
    else:
        value = a["fill_value"]
    return c.b.broadcast_to(c.b.const(value, dtype), shape)


@checks(*_aten("full"), *_aten("scalar_tensor"), *_aten("zeros"), *_aten("ones"),
        *_aten("full_like"), *_aten("zeros_like"), *_aten("ones_like"))
def _full_check(n, **a):
    for k in ("fill_value", "s"):
        if isinstance(a.get(k), torch.fx.Node):
            raise Unsupported("symbolic fill value")


# ---- matmul ----------------------------------------------------------------------------------

@handles(*_aten("mm"), *_aten("bmm"), *_aten("matmul"))
def _mm(c, n, **args):
    dtype, shape = c.out_meta(n)
    a, b = c.value(n.args[0], dtype), c.value(n.args[1], dtype)
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise Unsupported("matmul of a vector")
    return c.b.op("matmul", [a, b], dtype, shape)


def _same_dtype(*operands):
    """torch's matmuls refuse operands of different dtypes (a RuntimeError at run time, though
    fake tensors may let the trace through): such a node stays in torch, to raise there."""
    dtypes = {_val(o).dtype for o in operands if _val(o) is not None}
    if len(dtypes) > 1:
        raise Unsupported(f"matmul operands of different dtypes {sorted(str(d) for d in dtypes)}")


@checks(*_aten("matmul"))
def _matmul_check(n, self, other):  # noqa: D401 -- aten.matmul(self, other)
    _same_dtype(self, other)
    if _val(self) is not None and (_val(self).dim() < 2 or _val(other).dim() < 2):
        raise Unsupported("matmul of a vector")


@checks(*_aten("mm"), *_aten("bmm"))
def _mm_check(n, self, mat2):
    _same_dtype(self, mat2)


@checks(*_aten("addmm"), *_aten("baddbmm"))
def _addmm_check(n, self, beta=1, alpha=1, **mats):  # mat1/mat2, batch1/batch2
    _same_dtype(*mats.values())


@checks(*_aten("linear"))
def _linear_check(n, input, weight, bias=None):
    _same_dtype(input, weight)


@handles(*_aten("addmm"), *_aten("baddbmm"))
def _addmm(c, n, self, beta=1, alpha=1, **args):
    mat1, mat2 = n.args[1], n.args[2]
    dtype, shape = c.out_meta(n)
    a, b = c.value(mat1, dtype), c.value(mat2, dtype)
    mm = c.b.op("matmul", [a, b], dtype, tuple(_broadcast(a.shape[:-2], b.shape[:-2])) + (a.shape[-2], b.shape[-1]))
    if alpha != 1:
        mm = c.b.binary("mul", mm, c.b.const(alpha, dtype))
    if beta == 0:
        return mm
    bias = c.value(self, dtype)
    if beta != 1:
        bias = c.b.binary("mul", bias, c.b.const(beta, dtype))
    return c.b.binary("add", mm, bias)


@handles(*_aten("linear"))
def _linear(c, n, input, weight, bias=None):
    dtype, shape = c.out_meta(n)
    x, w = c.value(input, dtype), c.value(weight, dtype)
    wt = c.b.transpose(w, [1, 0])
    if len(x.shape) < 2:
        raise Unsupported("linear of a vector")
    y = c.b.op("matmul", [x, wt], dtype, x.shape[:-1] + (wt.shape[1],))
    if bias is not None:
        y = c.b.binary("add", y, c.value(bias, dtype))
    return y


# ---- reductions ------------------------------------------------------------------------------

def _reduce(kop):
    def h(c, n, self, dim=None, keepdim=False, dtype=None, **a):
        out_dtype, _ = c.out_meta(n)
        x = c.value(self, out_dtype)
        dims = [] if dim is None else ([dim] if isinstance(dim, int) else list(dim))
        if len(x.shape) == 0:
            return x
        return c.b.reduce(kop, x, dims, keepdim)
    return h


for _o in _aten("sum", "default", "dim_IntList"):
    HANDLERS[_o] = _reduce("reduce_sum")
for _o in _aten("mean", "default", "dim"):
    HANDLERS[_o] = _reduce("reduce_mean")
for _o in _aten("amax"):
    HANDLERS[_o] = _reduce("reduce_max")
for _o in _aten("amin"):
    HANDLERS[_o] = _reduce("reduce_min")


@checks(*_aten("mean", "default", "dim"))
def _mean_check(n, self, **a):
    v = _val(n)
    if isinstance(v, torch.Tensor) and not v.dtype.is_floating_point:
        raise Unsupported("integer mean")


@handles(*_aten("max", "dim"), *_aten("min", "dim"))
def _maxdim(c, n, self, dim, keepdim=False):
    x = c.value(self)
    kop = "reduce_max" if "max" in str(n.target) else "reduce_min"
    return (c.b.reduce(kop, x, [dim], keepdim), None)


@checks(*_aten("max", "dim"), *_aten("min", "dim"))
def _maxdim_check(n, **a):
    if 1 in _used_getitem_indices(n) or "whole" in _used_getitem_indices(n):
        raise Unsupported("argmax/argmin indices are used")


@handles(*_aten("var", "correction"), *_aten("var_mean", "correction"))
def _var(c, n, self, dim=None, correction=None, keepdim=False):
    x = c.value(self)
    if x.dtype not in FLOAT_KILN:
        raise Unsupported("integer var")
    rank = len(x.shape)
    dims = list(range(rank)) if not dim else [_norm_axis(d, rank) for d in dim]
    count = 1
    for d in dims:
        count *= x.shape[d]
    corr = 1 if correction is None else correction
    xf = c.b.cast(x, "f32")
    mean = c.b.reduce("reduce_mean", xf, dims, True)
    diff = c.b.binary("sub", xf, mean)
    ss = c.b.reduce("reduce_sum", c.b.binary("mul", diff, diff), dims, keepdim)
    denom = max(count - corr, 0)
    var = c.b.binary("div", ss, c.b.const(float(denom), "f32"))
    var = c.b.cast(var, x.dtype)
    if "var_mean" in str(n.target):
        m = mean if keepdim else c.b.reshape(mean, var.shape)
        return (var, c.b.cast(m, x.dtype))
    return var


# ---- composites ------------------------------------------------------------------------------

@handles(*_aten("_softmax"), *_aten("_log_softmax"))
def _softmax(c, n, self, dim, half_to_float):
    dtype, shape = c.out_meta(n)
    x = c.value(self, dtype)
    kop = "log_softmax" if "log" in str(n.target) else "softmax"
    return c.b.op(kop, [x], dtype, shape, {"axis": _norm_axis(dim, len(shape))})


@handles(*_aten("softmax", "int"), *_aten("log_softmax", "int"))
def _softmax_int(c, n, self, dim, dtype=None):
    out_dtype, shape = c.out_meta(n)
    x = c.value(self, out_dtype)
    kop = "log_softmax" if "log" in str(n.target) else "softmax"
    return c.b.op(kop, [x], out_dtype, shape, {"axis": _norm_axis(dim, len(shape))})


def _row_stats(c, x, axis, eps, rms=False):
    """f32 mean and rstd over axes [axis, rank), keep_dims (native_layer_norm's extra outputs)."""
    rank = len(x.shape)
    axes = list(range(axis, rank))
    xf = c.b.cast(x, "f32")
    if rms:
        ms = c.b.reduce("reduce_mean", c.b.binary("mul", xf, xf), axes, True)
        return None, c.b.unary("rsqrt", c.b.binary("add", ms, c.b.const(eps, "f32")))
    mean = c.b.reduce("reduce_mean", xf, axes, True)
    d = c.b.binary("sub", xf, mean)
    var = c.b.reduce("reduce_mean", c.b.binary("mul", d, d), axes, True)
    rstd = c.b.unary("rsqrt", c.b.binary("add", var, c.b.const(eps, "f32")))
    return mean, rstd


@handles(*_aten("native_layer_norm"))
def _native_layer_norm(c, n, input, normalized_shape, weight, bias, eps):
    dtype, shape = c.out_meta(n, 0)
    x = c.value(input, dtype)
    axis = len(shape) - len(normalized_shape)
    ops = [x]
    if weight is not None or bias is not None:
        w = c.value(weight, dtype) if weight is not None else c.b.broadcast_to(c.b.const(1, dtype), tuple(normalized_shape))
        ops.append(w)
        if bias is not None:
            ops.append(c.value(bias, dtype))
    y = c.b.op("layer_norm", ops, dtype, shape, {"axis": axis, "eps": float(eps)})
    used = _used_getitem_indices(n)
    mean = rstd = None
    if 1 in used or 2 in used:
        mean, rstd = _row_stats(c, x, axis, float(eps))
        mdt, _ = c.out_meta(n, 1)
        rdt, _ = c.out_meta(n, 2)
        mean, rstd = c.b.cast(mean, mdt), c.b.cast(rstd, rdt)
    return (y, mean, rstd)


@handles(*_aten("layer_norm"))
def _layer_norm(c, n, input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    dtype, shape = c.out_meta(n)
    x = c.value(input, dtype)
    ops = [x]
    if weight is not None or bias is not None:
        w = c.value(weight, dtype) if weight is not None else c.b.broadcast_to(c.b.const(1, dtype), tuple(normalized_shape))
        ops.append(w)
        if bias is not None:
            ops.append(c.value(bias, dtype))
    return c.b.op("layer_norm", ops, dtype, shape, {"axis": len(shape) - len(normalized_shape), "eps": float(eps)})


def _rms_eps(eps, dtype):
    if eps is None:
        return float(torch.finfo(KILN_TO_TORCH[dtype]).eps)
    return float(eps)


@handles(*_aten("_fused_rms_norm"))
def _fused_rms_norm(c, n, input, normalized_shape, weight=None, eps=None):
    dtype, shape = c.out_meta(n, 0)
    x = c.value(input, dtype)
    axis = len(shape) - len(normalized_shape)
    e = _rms_eps(eps, dtype)
    ops = [x] + ([c.value(weight, dtype)] if weight is not None else [])
    y = c.b.op("rms_norm", ops, dtype, shape, {"axis": axis, "eps": e})
    rstd = None
    if 1 in _used_getitem_indices(n):
        _, rstd = _row_stats(c, x, axis, e, rms=True)
        rstd = c.b.cast(rstd, c.out_meta(n, 1)[0])
    return (y, rstd)


@handles(*_aten("rms_norm"))
def _rms_norm(c, n, input, normalized_shape, weight=None, eps=None):
    dtype, shape = c.out_meta(n)
    x = c.value(input, dtype)
    ops = [x] + ([c.value(weight, dtype)] if weight is not None else [])
    return c.b.op("rms_norm", ops, dtype, shape,
                  {"axis": len(shape) - len(normalized_shape), "eps": _rms_eps(eps, dtype)})


@checks(*_aten("_fused_rms_norm"), *_aten("rms_norm"), *_aten("native_layer_norm"), *_aten("layer_norm"))
def _norm_check(n, input, **a):
    v = _val(input)
    if v is not None and not v.dtype.is_floating_point:
        raise Unsupported("norm of a non-float tensor")
    for k in ("weight", "bias"):
        w = a.get(k)
        if isinstance(w, torch.fx.Node) and _val(w) is not None and _val(w).dtype != v.dtype:
            # mixed-precision norm: torch computes in the wider type; kiln would round the
            # weight to x's dtype first
            raise Unsupported(f"norm {k} dtype {_val(w).dtype} differs from input {v.dtype}")


# ---- loss ------------------------------------------------------------------------------------

@handles(*_aten("nll_loss_forward"))
def _nll_loss_forward(c, n, self, target, weight, reduction, ignore_index):
    lp = c.value(self)
    t = c.value(target)
    dtype = lp.dtype
    if len(lp.shape) == 1:
        lp2 = c.b.reshape(lp, (1, lp.shape[0]))
        t2 = c.b.reshape(t, (1,))
    elif len(lp.shape) == 2:
        lp2, t2 = lp, t
    else:
        raise Unsupported("nll_loss over more than 2 dims")
    rows, classes = lp2.shape
    valid = c.b.binary("ne", t2, c.b.const(ignore_index, t2.dtype), "bool")
    validf = c.b.cast(valid, dtype)
    red = {0: "none", 1: "mean", 2: "sum"}[reduction]
    src = self.args[0] if (isinstance(self, torch.fx.Node) and self.target in _aten("_log_softmax")
                           and not self.args[2]) else None
    if src is not None and src in c.env and len(lp.shape) == 2 and _norm_axis(self.args[1], 2) == 1 \
            and c.value(src).dtype == dtype:
        # nll_loss(log_softmax(x)) is kiln's cross_entropy on x
        loss = c.b.op("cross_entropy", [c.value(src), t2], dtype, (rows,) if red == "none" else (),
                      {"reduction": red, "ignore_index": int(ignore_index)})
    else:
        # exact: -lp[r, t_r] gathered from the flat tensor (ignored rows read index 0)
        safe_t = c.b.op("where", [valid, t2, c.b.const(0, t2.dtype)], t2.dtype, (rows,))
        rowbase = c.b.op("iota", [], t2.dtype, (rows,), {"shape": [rows], "axis": 0, "dtype": t2.dtype})
        flat_idx = c.b.binary("add", c.b.binary("mul", rowbase, c.b.const(classes, t2.dtype)), safe_t)
        flat = c.b.reshape(lp2, (rows * classes,))
        picked = c.b.op("gather", [flat, flat_idx], dtype, (rows,), {"axis": 0})
        per_row = c.b.binary("mul", c.b.unary("neg", picked), validf)
        if red == "none":
            loss = per_row
        else:
            s = c.b.reduce("reduce_sum", per_row, [], False)
            if red == "sum":
                loss = s
            else:
                cnt = c.b.reduce("reduce_sum", validf, [], False)
                loss = c.b.binary("div", s, cnt)
    out_dtype, out_shape = c.out_meta(n, 0)
    loss = c.b.reshape(loss, out_shape)
    tw = None
    if 1 in _used_getitem_indices(n):
        tw_dtype, tw_shape = c.out_meta(n, 1)
        if red == "none":
            # torch returns an empty/zero total_weight for reduction none
            tw = c.b.broadcast_to(c.b.const(0, tw_dtype), tw_shape)
        else:
            tw = c.b.reshape(c.b.cast(c.b.reduce("reduce_sum", validf, [], False), tw_dtype), tw_shape)
    return (loss, tw)


@checks(*_aten("nll_loss_forward"))
def _nll_check(n, self, target, weight, reduction, ignore_index):
    if weight is not None:
        raise Unsupported("nll_loss with class weights")
    v = _val(self)
    if v is not None and v.dim() > 2:
        raise Unsupported("nll_loss over more than 2 dims")


# ---- dropout ---------------------------------------------------------------------------------

@handles(*_aten("native_dropout"))
def _native_dropout(c, n, input, p, train):
    dtype, shape = c.out_meta(n, 0)
    x = c.value(input, dtype)
    used = _used_getitem_indices(n)
    if not train or p == 0:
        mask = None
        if 1 in used:
            mask = c.b.broadcast_to(c.b.const(True, "bool"), shape)
        return (x, mask)
    if c.b.seed_input is None:
        c.b.seed_input = c.b.input("kiln_seed", "i64", ()).name
    seed = Value(c.b.seed_input, "i64", ())
    offset = c.b.const(c.dropout_count, "i64")
    c.dropout_count += 1
    y = c.b.op("dropout", [x, seed, offset], dtype, shape, {"p": float(p)})
    mask = None
    if 1 in used:
        # the same (p, seed, offset) over the same element count draws the same mask
        # (docs/dropout.md section 4): dropout of ones is nonzero exactly where x was kept
        ones = c.b.broadcast_to(c.b.const(1, dtype), shape)
        d1 = c.b.op("dropout", [ones, seed, offset], dtype, shape, {"p": float(p)})
        mask = c.b.binary("ne", d1, c.b.const(0, dtype), "bool")
    return (y, mask)


@checks(*_aten("native_dropout"))
def _dropout_check(n, input, p, train):
    if not (0.0 <= float(p) <= 1.0):
        raise Unsupported(f"dropout p={p}")


# ---- attention -------------------------------------------------------------------------------

_SDPA_TARGETS = (_aten("_scaled_dot_product_flash_attention")
                 + _aten("_scaled_dot_product_efficient_attention")
                 + _aten("_scaled_dot_product_cudnn_attention")
                 + _aten("_scaled_dot_product_flash_attention_for_cpu")
                 + _aten("scaled_dot_product_attention"))


def _sdpa_args(n, a):
    mask = a.get("attn_mask", a.get("attn_bias"))
    return mask, float(a.get("dropout_p") or 0.0), bool(a.get("is_causal")), a.get("scale")


@handles(*_SDPA_TARGETS)
def _sdpa(c, n, query, key, value, **a):
    mask, dropout_p, causal, scale = _sdpa_args(n, a)
    multi = n.target not in _aten("scaled_dot_product_attention")
    dtype, shape = c.out_meta(n, 0) if multi else c.out_meta(n)
    q, k, v = c.value(query, dtype), c.value(key, dtype), c.value(value, dtype)
    ops = [q, k, v]
    if mask is not None:
        m = c.value(mask)
        if m.dtype == "bool":
            m = c.b.op("where", [m, c.b.const(0, dtype), c.b.const(float("-inf"), dtype)], dtype, m.shape)
        else:
            m = c.b.cast(m, dtype)
        ops.append(m)
    attrs = {"causal": causal}
    if scale is not None:
        attrs["scale"] = float(scale)
    y = c.b.op("attention", ops, dtype, shape, attrs)
    if not multi:
        return y
    nout = len(_val(n))
    return (y,) + (None,) * (nout - 1)


@checks(*_SDPA_TARGETS)
def _sdpa_check(n, query, key, value, **a):
    mask, dropout_p, causal, scale = _sdpa_args(n, a)
    if dropout_p != 0.0:
        raise Unsupported("attention dropout (kiln's attention has none)")
    if a.get("enable_gqa"):
        qv, kv = _val(query), _val(key)
        if qv is not None and kv is not None and qv.shape[-3] != kv.shape[-3]:
            raise Unsupported("grouped-query SDPA (enable_gqa)")
    if scale is not None and scale <= 0:
        raise Unsupported(f"attention scale {scale}")
    if n.target not in _aten("scaled_dot_product_attention"):
        used = _used_getitem_indices(n) - {0}
        if used:
            raise Unsupported("attention's logsumexp/rng outputs are used (the backward needs them)")
    if mask is not None and causal:
        raise Unsupported("attention with both a mask and is_causal")
    qv, kv, vv = _val(query), _val(key), _val(value)
    if qv is not None and (qv.shape[:-2] != kv.shape[:-2] or qv.shape[:-2] != vv.shape[:-2]):
        raise Unsupported("q, k, v batch dims differ (broadcast or GQA)")
