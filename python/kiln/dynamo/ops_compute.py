"""ATen -> kiln handlers, part 2: matmuls, reductions, the composites kiln has ops for (layer
and RMS norm, softmax, log-softmax), the NLL loss, seeded dropout and attention. Each handler
maps one ATen overload exactly or raises Unsupported; the @handles/@checks decorators register
them in convert.HANDLERS/CHECKS when convert imports this.
"""

import torch

from .convert import (FLOAT_KILN, HANDLERS, KILN_TO_TORCH, TorchSide, Unsupported, Value, _aten, _broadcast, _norm_axis,
                      _used_getitem_indices, _val, checks, handles)

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


def _layer_norm_op(c, x, dtype, shape, normalized_shape, weight, bias, eps):
    """kiln's layer_norm over the trailing len(normalized_shape) axes (a missing weight is ones)."""
    ops = [x]
    if weight is not None or bias is not None:
        w = c.value(weight, dtype) if weight is not None else c.b.broadcast_to(c.b.const(1, dtype), tuple(normalized_shape))
        ops.append(w)
        if bias is not None:
            ops.append(c.value(bias, dtype))
    return c.b.op("layer_norm", ops, dtype, shape, {"axis": len(shape) - len(normalized_shape), "eps": float(eps)})


@handles(*_aten("native_layer_norm"))
def _native_layer_norm(c, n, input, normalized_shape, weight, bias, eps):
    dtype, shape = c.out_meta(n, 0)
    x = c.value(input, dtype)
    axis = len(shape) - len(normalized_shape)
    y = _layer_norm_op(c, x, dtype, shape, normalized_shape, weight, bias, eps)
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
    return _layer_norm_op(c, c.value(input, dtype), dtype, shape, normalized_shape, weight, bias, eps)


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


@handles(*_aten("nll_loss_backward"))
def _nll_loss_backward(c, n, grad_output, self, target, weight, reduction, ignore_index, total_weight):
    # d loss / d lp[r, j] = -g_r [j == t_r and t_r != ignore_index], g_r = g / total_weight
    # (mean), g (sum), g[r] (none): one pointwise expression over an iota of the classes, which
    # fuses with the log_softmax backward that reads it (no dense scatter into zeros)
    dtype, shape = c.out_meta(n)
    t = c.value(target)
    rows, classes = (1, shape[0]) if len(shape) == 1 else shape
    t2 = c.b.reshape(t, (rows, 1))
    cls = c.b.op("iota", [], t.dtype, (classes,), {"shape": [classes], "axis": 0, "dtype": t.dtype})
    hit = c.b.op("logical_and", [c.b.binary("eq", t2, cls, "bool"),
                                 c.b.binary("ne", t2, c.b.const(ignore_index, t.dtype), "bool")],
                 "bool", (rows, classes))
    g = c.value(grad_output, dtype)
    if reduction == 0:
        g = c.b.reshape(g, (rows, 1))
    else:
        g = c.b.reshape(g, ())
        if reduction == 1:
            g = c.b.binary("div", g, c.b.reshape(c.value(total_weight, dtype), ()))
    grad = c.b.op("where", [hit, c.b.unary("neg", g), c.b.const(0, dtype)], dtype, (rows, classes))
    return c.b.reshape(grad, shape) if len(shape) == 1 else grad


@checks(*_aten("nll_loss_backward"))
def _nll_backward_check(n, grad_output, self, target, weight, reduction, ignore_index, total_weight):
    if weight is not None:
        raise Unsupported("nll_loss with class weights")
    v = _val(self)
    if v is not None and v.dim() > 2:
        raise Unsupported("nll_loss over more than 2 dims")


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
    outs = [y] + [None] * (len(_val(n)) - 1)
    used = _used_getitem_indices(n)
    if 1 in used:
        # the rows' log-sum-exp (the backward reads it): attention_lse of the same operands,
        # which the attention kernel writes beside y, in torch's shape: [B, H, S] (flash),
        # [B, H, S, 1] (cuDNN) or [B, H, S padded to 32] (efficient; the padding unread)
        _, lse_shape = c.out_meta(n, 1)
        rows = tuple(shape[:-1])
        lse = c.b.op("attention_lse", [q, k] + ops[3:], "f32", rows, attrs)
        if tuple(lse_shape) == rows + (1,):
            lse = c.b.reshape(lse, lse_shape)
        elif tuple(lse_shape) != rows:
            pad = c.b.broadcast_to(c.b.const(float("inf"), "f32"), rows[:-1] + (lse_shape[-1] - rows[-1],))
            lse = c.b.op("concat", [lse, pad], "f32", tuple(lse_shape), {"axis": len(rows) - 1})
        outs[1] = lse
    for i in used - {0, 1, "whole"}:
        v = _val(n)[i]  # checked: an int64 rng seed or offset, unread without dropout
        outs[i] = TorchSide(v.shape, v.dtype)
    return tuple(outs)


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
        used, vals = _used_getitem_indices(n) - {0}, _val(n)
        if "whole" in used:
            raise Unsupported("attention's output tuple is used whole")
        if 1 in used:
            lse, rows = vals[1], tuple(vals[0].shape[:-1])
            padded = tuple(lse.shape[:-1]) == rows[:-1] and lse.shape[-1] >= rows[-1]
            if lse.dtype != torch.float32 or not (tuple(lse.shape) == rows + (1,) or padded):
                raise Unsupported(f"attention's logsumexp {tuple(lse.shape)} is not one f32 per query row")
        for i in used - {1}:
            v = vals[i]
            if not (isinstance(v, torch.Tensor) and v.dtype == torch.int64 and v.numel() <= 2):
                raise Unsupported(f"attention's output {i} is used (not the logsumexp or an rng seed/offset)")
    if mask is not None and causal:
        raise Unsupported("attention with both a mask and is_causal")
    qv, kv, vv = _val(query), _val(key), _val(value)
    if qv is not None and (qv.shape[:-2] != kv.shape[:-2] or qv.shape[:-2] != vv.shape[:-2]):
        raise Unsupported("q, k, v batch dims differ (broadcast or GQA)")
