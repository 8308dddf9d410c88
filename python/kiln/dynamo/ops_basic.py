"""ATen -> kiln handlers, part 1: identity and layout ops (views, permutes, slices, concat,
gathers, constants) and pointwise ops (arithmetic with torch's type promotion, comparisons,
casts, unary math). Each handler maps one ATen overload exactly or raises Unsupported; the
@handles/@checks decorators register them in convert.HANDLERS/CHECKS when convert imports this.
"""

import operator

import torch

from .convert import (FLOAT_KILN, HANDLERS, Unsupported, _aten, _norm_axis, _val, checks, handles, kiln_dtype,
                      prims)

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
