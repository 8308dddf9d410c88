#!/usr/bin/env python3
"""Times the PyTorch peers of kiln's example workloads against the memory/compute floor.

For each example graph (examples/NAME.json, docs/graph-format.md) this script builds the
equivalent PyTorch function by hand, node for node, with the graph's shapes, dtypes and
attributes, and measures in one process, side by side:

  * the device-to-device copy bandwidth (a torch copy of a >= 1 GiB buffer; bytes read plus
    bytes written) and, where a selected workload does matrix products, the bf16 matmul rate
    (torch.matmul of 8192 x 8192 x 8192 on random data);
  * per workload: the compulsory bytes (graph inputs + graph outputs in their dtypes, the same
    count as kiln's Program::CompulsoryBytes), the FLOPs of its matrix products and attention,
    the floor  floor_us = max(bytes / copy bandwidth, FLOPs / matmul rate)  and, for torch
    eager, torch.compile (default mode) and optionally torch.compile(mode=
    "max-autotune-no-cudagraphs"), the median time in µs and the ratio floor_us / time.

    python3 bench/peers.py                      # all workloads; table on stdout
    python3 bench/peers.py --json peers.json    # the same, plus every figure as JSON
    python3 bench/peers.py --only softmax,swiglu --reps 200 --max-autotune
    python3 bench/peers.py --list               # compulsory bytes from the JSON; no torch needed

Timing: CUDA events around every call, after a warm-up, two rounds of --reps calls each; the
median of all of them is reported, and the two rounds' medians give the spread. As in kiln bench,
the host waits for each call to finish before the next (--back-to-back queues them instead).
The L2 cache is not flushed between calls unless --flush-l2 is given; workloads whose compulsory
bytes are under 4 x L2 rotate among several copies of their inputs instead (bench/README.md).

Each peer's outputs are first checked against the same torch function run in float64 on the
upcast inputs (relative error ||out - ref|| / ||ref||); a failed check is reported and makes the
exit status 1. Random inputs (uniform in (-1, 1), like `kiln run --random`, with the right
operand of a matmul divided by sqrt(K)), never zeros.

Needs python3 and, for timing, torch with CUDA (torch.compile also needs triton). --list needs
only the standard library.
"""

import argparse
import datetime
import json
import math
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_EXAMPLES = ROOT / "examples"

WORKLOAD_NAMES = ["bias_gelu", "swiglu", "add_rmsnorm", "layernorm", "layernorm_decomposed", "softmax",
                  "dropout_add_layernorm", "softmax_xent", "transformer_block", "dropout_add", "dropout_add_p0",
                  "dropout_add_layernorm_p0"]

DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "bool": 1}
FLOAT_DTYPES = ("f32", "f16", "bf16")
INT_DTYPES = ("i32", "i64")

# bf16 outputs computed with bf16 operands land between 1e-3 and 1e-2 of a float64 reference;
# the bound leaves room for chains of bf16 roundings (layernorm_decomposed, transformer_block).
CHECK_TOLERANCE = {"bf16": 2e-2, "f16": 5e-3, "f32": 1e-4}

DEVICE = "cuda"  # every tensor the measurement makes lives here

PEERS = [("eager", None), ("compile", "default"), ("max_autotune", "max-autotune-no-cudagraphs"),
         ("reduce_overhead", "reduce-overhead")]


def peer_selected(peer, args):
    """Whether this run times `peer` (eager always; the compiled modes as the flags say)."""
    if peer == "eager":
        return True
    if args.no_compile:
        return False
    if peer == "max_autotune":
        return args.max_autotune
    if peer == "reduce_overhead":
        return args.reduce_overhead
    return True


# ----------------------------------------------------------------------------------------------
# The graph: reading the JSON and inferring every tensor's dtype and shape (standard library only).

class GraphError(Exception):
    pass


# Attribute defaults, as in docs/graph-format.md's op table (required attributes have none).
ATTR_DEFAULTS = {
    "iota": {"axis": -1, "dtype": "i64"},
    "reduce_sum": {"axes": [], "keep_dims": False},
    "reduce_mean": {"axes": [], "keep_dims": False},
    "reduce_max": {"axes": [], "keep_dims": False},
    "reduce_min": {"axes": [], "keep_dims": False},
    "softmax": {"axis": -1},
    "log_softmax": {"axis": -1},
    "layer_norm": {"axis": -1, "eps": 1e-5},
    "rms_norm": {"axis": -1, "eps": 1e-6},
    "cross_entropy": {"reduction": "mean", "ignore_index": -100},
    "dropout": {"seed": 0, "offset": 0},
    "dropout_grad": {"seed": 0, "offset": 0},
    "attention": {"scale": 0.0, "causal": False},
    "slice": {"steps": []},
    "concat": {"axis": 0},
    "gather": {"axis": 0},
}

UNARY_LIKE_X = {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid", "erf", "relu",
                "gelu", "gelu_tanh", "silu", "logical_not", "softmax", "log_softmax", "layer_norm", "rms_norm",
                "dropout", "dropout_grad"}
BINARY_ARITH = {"add", "sub", "mul", "div", "pow", "maximum", "minimum"}
BINARY_BOOL = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"}
REDUCTIONS = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"}


def num_elements(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def broadcast_shapes(*shapes):
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise GraphError(f"shapes {list(map(list, shapes))} do not broadcast")
        out.append(dims.pop() if dims else 1)
    return out


def norm_axis(axis, rank):
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < max(rank, 1):
        raise GraphError(f"axis {axis} out of range for rank {rank}")
    return a


def infer(op, ins, attrs):
    """(dtype, shape) of op's result from its operands' (dtype, shape) and its attributes."""
    x_dtype, x_shape = ins[0] if ins else (None, None)
    if op in UNARY_LIKE_X:
        return x_dtype, list(x_shape)
    if op == "cast":
        return attrs["dtype"], list(x_shape)
    if op in BINARY_ARITH:
        return x_dtype, broadcast_shapes(ins[0][1], ins[1][1])
    if op in BINARY_BOOL:
        return "bool", broadcast_shapes(ins[0][1], ins[1][1])
    if op == "where":
        return ins[1][0], broadcast_shapes(*(s for _, s in ins))
    if op == "iota":
        return attrs["dtype"], list(attrs["shape"])
    if op in REDUCTIONS:
        rank = len(x_shape)
        axes = {norm_axis(a, rank) for a in attrs["axes"]} or set(range(rank))
        if attrs["keep_dims"]:
            return x_dtype, [1 if i in axes else d for i, d in enumerate(x_shape)]
        return x_dtype, [d for i, d in enumerate(x_shape) if i not in axes]
    if op == "cross_entropy":
        return x_dtype, (list(x_shape[:-1]) if attrs["reduction"] == "none" else [])
    if op == "attention":
        q, k, v = (s for _, s in ins[:3])
        batch = broadcast_shapes(q[:-2], k[:-2], v[:-2])
        return x_dtype, batch + [q[-2], v[-1]]
    if op == "reshape":
        shape = list(attrs["shape"])
        if -1 in shape:
            known = num_elements([d for d in shape if d != -1])
            shape[shape.index(-1)] = num_elements(x_shape) // known if known else 0
        if num_elements(shape) != num_elements(x_shape):
            raise GraphError(f"reshape of {x_shape} to {attrs['shape']}")
        return x_dtype, shape
    if op == "transpose":
        return x_dtype, [x_shape[p] for p in attrs["perm"]]
    if op == "slice":
        steps = attrs["steps"] or [1] * len(x_shape)
        return x_dtype, [len(range(*slice(s, e, st).indices(d)))
                         for d, s, e, st in zip(x_shape, attrs["starts"], attrs["ends"], steps)]
    if op == "concat":
        axis = norm_axis(attrs["axis"], len(x_shape))
        shape = list(x_shape)
        shape[axis] = sum(s[axis] for _, s in ins)
        return x_dtype, shape
    if op == "gather":
        axis = norm_axis(attrs["axis"], len(x_shape))
        return x_dtype, list(x_shape[:axis]) + list(ins[1][1]) + list(x_shape[axis + 1:])
    if op == "broadcast_to":
        return x_dtype, list(attrs["shape"])
    if op == "matmul":
        a, b = ins[0][1], ins[1][1]
        if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
            raise GraphError(f"matmul of {a} and {b}")
        return x_dtype, broadcast_shapes(a[:-2], b[:-2]) + [a[-2], b[-1]]
    raise GraphError(f"op {op!r}: bench/peers.py does not know its result shape")


def node_flops(op, ins, out_shape, attrs):
    """(matmul FLOPs, attention FLOPs, attention FLOPs without the causal halving) of one node.
    Matmul 2·M·N·K per batch; attention 2·(batch·S)·T·(D + E), the FlashAttention convention
    4·B·H·S·T·D for D = E, halved when causal as kiln's cost model does
    (passes/cost/cost_model.cc)."""
    if op == "matmul":
        return 2.0 * num_elements(out_shape) * ins[0][1][-1], 0.0, 0.0
    if op == "attention":
        q, k = ins[0][1], ins[1][1]
        full = 2.0 * (num_elements(q) // q[-1]) * k[-2] * (q[-1] + out_shape[-1])
        return 0.0, full * 0.5 if attrs["causal"] else full, full
    return 0.0, 0.0, 0.0


# How attention FLOPs enter the floor (--attention-flops): "causal" halves them for a causal
# mask (the FlashAttention convention, kiln's cost model); "full" counts QK^T and PV whole, as
# `kiln bench` does today by summing its Program's matmul steps, where attention is lowered to
# two batched matmuls (passes/lower_attention.cc).
ATTENTION_FLOPS = ("causal", "full")


class Graph:
    """One kiln JSON graph: inputs, initializers, nodes (with defaulted attributes), outputs and
    the dtype and shape of every name. Read from `path`, or given as the parsed document `doc`
    (then `path` only names it in messages)."""

    def __init__(self, path, doc=None):
        self.path = pathlib.Path(path)
        if doc is None:
            try:
                doc = json.loads(self.path.read_text())
            except (OSError, ValueError) as e:
                raise GraphError(f"{path}: {e}") from e
        if doc.get("kiln_graph") != 1:
            raise GraphError(f"{path}: not a kiln_graph version 1 document")
        self.name = doc.get("name", "graph")
        self.inputs = [(i["name"], i["dtype"], list(i["shape"])) for i in doc.get("inputs", [])]
        self.initializers = {c["name"]: c for c in doc.get("initializers", [])}
        self.nodes = {}
        for n in doc.get("nodes", []):
            attrs = dict(ATTR_DEFAULTS.get(n["op"], {}))
            attrs.update(n.get("attrs", {}))
            self.nodes[n["name"]] = {"op": n["op"], "inputs": list(n.get("inputs", [])), "attrs": attrs}
        self.outputs = []
        for o in doc["outputs"]:
            self.outputs.append((o, o) if isinstance(o, str) else (o["name"], o["node"]))
        self.types = {name: (dtype, shape) for name, dtype, shape in self.inputs}
        for name, c in self.initializers.items():
            self.types[name] = (c["dtype"], list(c["shape"]))
        self.matmul_flops = self.attention_flops = self.attention_flops_full = 0.0
        for name in self.nodes:
            self._infer(name)
        for out_name, node in self.outputs:
            if node not in self.types:
                raise GraphError(f"{path}: output {out_name} names unknown {node}")

    def _infer(self, root):
        # Iterative post-order: nodes may be listed in any order.
        stack, visiting = [(root, False)], set()
        while stack:
            name, ready = stack.pop()
            if name in self.types:
                continue
            if name not in self.nodes:
                raise GraphError(f"{self.path}: unknown name {name}")
            node = self.nodes[name]
            if not ready:
                if name in visiting:
                    raise GraphError(f"{self.path}: cycle through {name}")
                visiting.add(name)
                stack.append((name, True))
                stack.extend((i, False) for i in node["inputs"] if i not in self.types)
                continue
            ins = [self.types[i] for i in node["inputs"]]
            try:
                self.types[name] = infer(node["op"], ins, node["attrs"])
            except (GraphError, KeyError, IndexError) as e:
                raise GraphError(f"{self.path}: node {name} ({node['op']}): {e}") from e
            mm, att, att_full = node_flops(node["op"], ins, self.types[name][1], node["attrs"])
            self.matmul_flops += mm
            self.attention_flops += att
            self.attention_flops_full += att_full

    def flops(self, attention="causal"):
        """FLOPs of the matrix units: matmuls plus attention counted as `attention` says."""
        return self.matmul_flops + (self.attention_flops if attention == "causal" else self.attention_flops_full)

    def attrs(self, node):
        return self.nodes[node]["attrs"]

    def tensor_bytes(self, name):
        dtype, shape = self.types[name]
        return num_elements(shape) * DTYPE_BYTES[dtype]

    def input_bytes(self):
        return sum(self.tensor_bytes(n) for n, _, _ in self.inputs)

    def output_bytes(self):
        return sum(self.tensor_bytes(node) for _, node in self.outputs)

    def compulsory_bytes(self):
        """Graph inputs read once plus graph outputs written once, in their dtypes (kiln's
        Program::CompulsoryBytes; initializers are constants, as in kiln not counted)."""
        return self.input_bytes() + self.output_bytes()

    def check_structure(self, expected_ops, expected_outputs):
        ops = {name: n["op"] for name, n in self.nodes.items()}
        outs = [node for _, node in self.outputs]
        if ops != expected_ops or outs != expected_outputs:
            raise GraphError(
                f"{self.path} no longer has the nodes and outputs bench/peers.py mirrors in PyTorch "
                f"(expected nodes {expected_ops} and outputs {expected_outputs}, found {ops} and {outs}): "
                f"update the workload's torch function in bench/peers.py")

    def summary(self):
        return {
            "graph": str(self.path),
            "inputs": [{"name": n, "dtype": d, "shape": s} for n, d, s in self.inputs],
            "outputs": [{"name": o, "dtype": self.types[n][0], "shape": self.types[n][1]} for o, n in self.outputs],
            "input_bytes": self.input_bytes(),
            "output_bytes": self.output_bytes(),
            "compulsory_bytes": self.compulsory_bytes(),
            "matmul_flops": self.matmul_flops,
            "attention_flops_causal": self.attention_flops,
            "attention_flops_full": self.attention_flops_full,
        }


# ----------------------------------------------------------------------------------------------
# The workloads in PyTorch, one function each, written node for node from the graph. Every
# builder takes the graph and its initializers as torch tensors and returns fn(*graph inputs)
# -> tuple of graph outputs, in the graph's order. The expected node -> op map is checked
# against the JSON first, so a changed example cannot silently time a different function.

def _slice(x, attrs):
    steps = attrs["steps"] or [1] * x.dim()
    return x[tuple(slice(s, e, st) for s, e, st in zip(attrs["starts"], attrs["ends"], steps))]


def _normalized_shape(x, axis):
    return tuple(x.shape[norm_axis(axis, x.dim()):])


def build_bias_gelu(g, consts):
    import torch.nn.functional as F
    g.check_structure({"t": "add", "y": "gelu_tanh"}, ["y"])

    def bias_gelu(x, b):
        t = x + b
        y = F.gelu(t, approximate="tanh")
        return (y,)
    return bias_gelu


def build_swiglu(g, consts):
    import torch.nn.functional as F
    g.check_structure({"s": "silu", "y": "mul"}, ["y"])

    def swiglu(a, gate):
        s = F.silu(a)
        y = s * gate
        return (y,)
    return swiglu


def build_add_rmsnorm(g, consts):
    import torch.nn.functional as F
    g.check_structure({"h": "add", "y": "rms_norm"}, ["y", "h"])
    ya = g.attrs("y")

    def add_rmsnorm(x, r, w):
        h = x + r
        y = F.rms_norm(h, _normalized_shape(h, ya["axis"]), w, ya["eps"])
        return (y, h)
    return add_rmsnorm


def build_layernorm(g, consts):
    import torch.nn.functional as F
    g.check_structure({"y": "layer_norm"}, ["y"])
    ya = g.attrs("y")

    def layernorm(x, w, b):
        y = F.layer_norm(x, _normalized_shape(x, ya["axis"]), w, b, ya["eps"])
        return (y,)
    return layernorm


def build_layernorm_decomposed(g, consts):
    import torch
    g.check_structure({"mean": "reduce_mean", "d": "sub", "d2": "mul", "var": "reduce_mean", "var_eps": "add",
                       "inv_std": "rsqrt", "n": "mul", "nw": "mul", "y": "add"}, ["y"])
    ma, va = g.attrs("mean"), g.attrs("var")
    eps = consts["eps"]  # a bf16 scalar tensor, as in the graph

    def layernorm_decomposed(x, w, b):
        mean = x.mean(dim=tuple(ma["axes"]), keepdim=ma["keep_dims"])
        d = x - mean
        d2 = d * d
        var = d2.mean(dim=tuple(va["axes"]), keepdim=va["keep_dims"])
        var_eps = var + eps
        inv_std = torch.rsqrt(var_eps)
        n = d * inv_std
        nw = n * w
        y = nw + b
        return (y,)
    return layernorm_decomposed


def build_softmax(g, consts):
    import torch
    g.check_structure({"y": "softmax"}, ["y"])
    axis = g.attrs("y")["axis"]

    def softmax(x):
        return (torch.softmax(x, dim=axis),)
    return softmax


def build_dropout_add_layernorm(g, consts):
    import torch.nn.functional as F
    g.check_structure({"xd": "dropout", "h": "add", "y": "layer_norm"}, ["y", "h"])
    p = g.attrs("xd")["p"]  # kiln's seed/offset pick a Philox stream torch cannot reproduce
    ya = g.attrs("y")

    def dropout_add_layernorm(x, r, w, b):
        xd = F.dropout(x, p=p, training=True)
        h = xd + r
        y = F.layer_norm(h, _normalized_shape(h, ya["axis"]), w, b, ya["eps"])
        return (y, h)
    return dropout_add_layernorm


def build_dropout_add(g, consts):
    import torch.nn.functional as F
    g.check_structure({"xd": "dropout", "h": "add"}, ["h"])
    p = g.attrs("xd")["p"]

    def dropout_add(x, r):
        return (F.dropout(x, p=p, training=True) + r,)
    return dropout_add


build_dropout_add_p0 = build_dropout_add
build_dropout_add_layernorm_p0 = build_dropout_add_layernorm


def build_softmax_xent(g, consts):
    import torch.nn.functional as F
    g.check_structure({"loss": "cross_entropy"}, ["loss"])
    la = g.attrs("loss")

    def softmax_xent(logits, targets):
        loss = F.cross_entropy(logits, targets, reduction=la["reduction"], ignore_index=la["ignore_index"])
        return (loss,)
    return softmax_xent


def build_transformer_block(g, consts):
    import torch.nn.functional as F
    expected = {"ln1": "layer_norm", "qkv_mm": "matmul", "qkv": "add", "attn": "attention", "attn_t": "transpose",
                "attn_2d": "reshape", "proj_mm": "matmul", "proj": "add", "h1": "add", "ln2": "layer_norm",
                "fc1_mm": "matmul", "fc1": "add", "act": "gelu_tanh", "fc2_mm": "matmul", "fc2": "add", "y": "add"}
    for part in "qkv":
        expected.update({f"{part}_2d": "slice", f"{part}_4d": "reshape", part: "transpose"})
    g.check_structure(expected, ["y"])
    a = {name: g.attrs(name) for name in expected}
    scale = a["attn"]["scale"] or None  # 0 means 1/sqrt(head dim), SDPA's default

    def split_heads(qkv, part):
        t2d = _slice(qkv, a[f"{part}_2d"])
        t4d = t2d.reshape(a[f"{part}_4d"]["shape"])
        return t4d.permute(a[part]["perm"])

    def transformer_block(x, ln1_w, ln1_b, w_qkv, b_qkv, w_o, b_o, ln2_w, ln2_b, w_1, b_1, w_2, b_2):
        ln1 = F.layer_norm(x, _normalized_shape(x, a["ln1"]["axis"]), ln1_w, ln1_b, a["ln1"]["eps"])
        qkv_mm = ln1 @ w_qkv
        qkv = qkv_mm + b_qkv
        q, k, v = (split_heads(qkv, part) for part in "qkv")
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=a["attn"]["causal"], scale=scale)
        attn_t = attn.permute(a["attn_t"]["perm"])
        attn_2d = attn_t.reshape(a["attn_2d"]["shape"])
        proj_mm = attn_2d @ w_o
        proj = proj_mm + b_o
        h1 = x + proj
        ln2 = F.layer_norm(h1, _normalized_shape(h1, a["ln2"]["axis"]), ln2_w, ln2_b, a["ln2"]["eps"])
        fc1_mm = ln2 @ w_1
        fc1 = fc1_mm + b_1
        act = F.gelu(fc1, approximate="tanh")
        fc2_mm = act @ w_2
        fc2 = fc2_mm + b_2
        y = h1 + fc2
        return (y,)
    return transformer_block


BUILDERS = {name: globals()[f"build_{name}"] for name in WORKLOAD_NAMES}


# ----------------------------------------------------------------------------------------------
# Device facts (nvidia-smi and the driver are optional: every probe skips gracefully).

def nvidia_smi(fields):
    """{field: value} from nvidia-smi --query-gpu for GPU 0; fields it refuses are left out."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return {}

    def query(names):
        out = subprocess.run([exe, f"--query-gpu={','.join(names)}", "--format=csv,noheader", "-i", "0"],
                             capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            return None
        values = [v.strip() for v in out.stdout.strip().splitlines()[0].split(",")]
        return dict(zip(names, values)) if len(values) == len(names) else None

    try:
        got = query(fields)
        if got is not None:
            return got
        result = {}
        for f in fields:  # one refused field must not lose the others
            one = query([f])
            if one:
                result.update(one)
        return result
    except (OSError, subprocess.SubprocessError, IndexError):
        return {}


def cuda_driver_api_version():
    try:
        import ctypes
        lib = ctypes.CDLL("libcuda.so.1")
        v = ctypes.c_int()
        if lib.cuDriverGetVersion(ctypes.byref(v)) == 0:
            return f"{v.value // 1000}.{(v.value % 1000) // 10}"
    except OSError:
        pass
    return None


CLOCK_FIELDS = ["clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem", "power.draw", "temperature.gpu",
                "pstate", "clocks_event_reasons.active"]


# ----------------------------------------------------------------------------------------------
# Measurement (everything below imports torch lazily).

TORCH_DTYPE_NAMES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i32": "int32", "i64": "int64",
                     "bool": "bool"}


def torch_dtype(name):
    import torch
    return getattr(torch, TORCH_DTYPE_NAMES[name])


def make_inputs(g, gen, device):
    """Random graph inputs: floats uniform in (-1, 1), divided by sqrt(K) where the input is the
    right operand of a matmul (so activations stay O(1) and attention scores are not one-hot);
    integer class targets uniform over the classes of the cross_entropy that reads them."""
    import torch
    high, scale = {}, {}
    for node in g.nodes.values():
        if node["op"] == "matmul":
            scale[node["inputs"][1]] = 1.0 / math.sqrt(g.types[node["inputs"][1]][1][-2])
        if node["op"] == "cross_entropy":
            high[node["inputs"][1]] = g.types[node["inputs"][0]][1][-1]
        if node["op"] == "gather":
            high[node["inputs"][1]] = g.types[node["inputs"][0]][1][node["attrs"]["axis"]]
    tensors = []
    for name, dtype, shape in g.inputs:
        if dtype in FLOAT_DTYPES:
            s = scale.get(name, 1.0)
            t = torch.empty(shape, dtype=torch.float32, device=device).uniform_(-s, s, generator=gen)
            t = t.to(torch_dtype(dtype))
        elif dtype in INT_DTYPES:
            if name not in high:
                raise GraphError(f"{g.path}: no rule for random values of integer input {name}")
            t = torch.randint(0, high[name], shape, dtype=torch_dtype(dtype), device=device, generator=gen)
        else:
            t = torch.rand(shape, device=device, generator=gen) < 0.5
        tensors.append(t)
    return tensors


def make_constants(g, device):
    import torch
    consts = {}
    for name, c in g.initializers.items():
        if "data" not in c:
            raise GraphError(f"{g.path}: initializer {name} from a side file is not supported here")
        consts[name] = torch.tensor(c["data"], dtype=torch_dtype(c["dtype"]), device=device).reshape(c["shape"])
    return consts


def rel_err(out, ref):
    import torch
    o, r = out.double(), ref.double()
    if not torch.isfinite(o).all():
        return math.inf
    denom = torch.linalg.vector_norm(r).item()
    num = torch.linalg.vector_norm(o - r).item()
    return num / denom if denom > 0 else num


def check_against_reference(g, fn, inputs, outputs):
    """{output: ||out - ref|| / ||ref||}, ref = fn on float64 upcasts of the inputs."""
    import torch
    up = [t.double() if t.is_floating_point() else t for t in inputs]
    refs = fn(*up)
    errs = {}
    for (out_name, _), o, r in zip(g.outputs, outputs, refs):
        errs[out_name] = rel_err(o, r)
    del up, refs
    return errs


def check_dropout_add_layernorm(g, fn, inputs, outputs):
    """Dropout masks come from torch's RNG, not kiln's Philox stream, so the check classifies
    each element of h: kept (h = x / (1 - p) + r, to bf16 roundings) or dropped (h = r exactly),
    requires every element to be one of them, the dropped fraction to be p (within 0.005), and y
    (when the workload has the layer norm) to be layer_norm(h) against a float64 reference."""
    import torch
    import torch.nn.functional as F
    has_norm = len(inputs) == 4
    x, r = (t.double() for t in inputs[:2])
    h = outputs[-1].double()
    p = g.attrs("xd")["p"]
    ya = g.attrs("y") if has_norm else None
    kept_val = x / (1 - p) + r
    # Up to three bf16 roundings (the scale, x * scale, the sum) of relative 2^-8 each.
    tol = 2.0 ** -6 * (x.abs() / (1 - p) + r.abs()) + 1e-6
    kept = (h - kept_val).abs() <= tol
    dropped = h == r
    unexplained = (~(kept | dropped)).sum().item()
    sure = kept ^ dropped
    drop_frac = (dropped & sure).sum().item() / max(sure.sum().item(), 1)
    errs = {"h_unexplained_elements": float(unexplained), "h_dropped_fraction": drop_frac}
    if has_norm:
        w, b = (t.double() for t in inputs[2:])
        y_ref = F.layer_norm(h, _normalized_shape(h, ya["axis"]), w, b, ya["eps"])
        errs["y"] = rel_err(outputs[0].double(), y_ref)
    ok_h = unexplained == 0 and abs(drop_frac - p) <= 0.005
    errs["h"] = 0.0 if ok_h else math.inf
    return errs


CHECKS = {name: check_dropout_add_layernorm
          for name in ("dropout_add_layernorm", "dropout_add_layernorm_p0", "dropout_add", "dropout_add_p0")}


def check_passes(g, errs):
    for out_name, node in g.outputs:
        tol = CHECK_TOLERANCE.get(g.types[node][0], 0.0)
        e = errs.get(out_name, math.inf)
        if not (e <= tol):
            return False
    return True


class Timer:
    """Median of per-call CUDA event times over two rounds of `reps` calls, after `warmup` calls;
    calls cycle through `arg_sets`; with `flush`, a buffer larger than L2 is read (an amax
    reduction) before each call, outside the timed region: a read leaves L2 cold and clean,
    where zeroing would leave up to an L2 of dirty lines for the timed call to write back; with `sync_each`, the host waits for each call's end event
    before the next call (as kiln bench does), so a call starts on an idle GPU and its launch
    latency is part of its time; without, calls queue back to back."""

    def __init__(self, reps, warmup, flush=None, sync_each=True):
        self.reps, self.warmup, self.flush, self.sync_each = reps, warmup, flush, sync_each

    def __call__(self, fn, arg_sets):
        import torch
        n = len(arg_sets)
        for i in range(self.warmup):
            fn(*arg_sets[i % n])
        torch.cuda.synchronize()
        rounds = []
        for _ in range(2):
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
            for i in range(self.reps):
                args = arg_sets[i % n]
                if self.flush is not None:
                    torch.amax(self.flush)
                starts[i].record()
                fn(*args)
                ends[i].record()
                if self.sync_each:
                    ends[i].synchronize()
            torch.cuda.synchronize()
            rounds.append([s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)])  # ms -> µs
        every = sorted(rounds[0] + rounds[1])
        m0, m1 = statistics.median(rounds[0]), statistics.median(rounds[1])
        return {
            "median_us": statistics.median(every),
            "p10_us": every[int(0.1 * (len(every) - 1))],
            "p90_us": every[int(0.9 * (len(every) - 1))],
            "min_us": every[0],
            "round_medians_us": [m0, m1],
            "spread_pct": 100.0 * abs(m0 - m1) / min(m0, m1) if min(m0, m1) > 0 else 0.0,
            "calls": len(every),
        }


def measure_copy(timer, gib):
    import torch
    n = int(gib * (1 << 30))
    src = torch.randint(0, 256, (n,), dtype=torch.uint8, device=DEVICE)
    dst = torch.empty_like(src)
    t = timer(lambda: dst.copy_(src), [()])
    bytes_moved = 2 * n
    result = {"buffer_bytes": n, "bytes_moved": bytes_moved, **t,
              "GBps": bytes_moved / t["median_us"] / 1e3}
    del src, dst
    torch.cuda.empty_cache()
    return result


def measure_matmul(timer, size=8192):
    import torch
    gen = torch.Generator(device=DEVICE).manual_seed(1)
    a = torch.randn(size, size, device=DEVICE, generator=gen).to(torch.bfloat16)
    b = torch.randn(size, size, device=DEVICE, generator=gen).to(torch.bfloat16)
    t = timer(torch.matmul, [(a, b)])
    flops = 2.0 * size ** 3
    result = {"m": size, "n": size, "k": size, "dtype": "bf16", "flops": flops, **t,
              "TFLOPs": flops / t["median_us"] / 1e6}
    del a, b
    torch.cuda.empty_cache()
    return result


def sdpa_choice(g, inputs):
    """Which SDPA backend torch picks for the block's q, k, v (best effort: a private API)."""
    import torch
    try:
        from torch.nn.attention import SDPBackend
        node = g.nodes["attn"]
        # q, k, v as the block makes them: views of one qkv tensor, sliced, reshaped, permuted.
        qkv = torch.empty(g.types["qkv"][1], dtype=inputs[0].dtype, device=DEVICE)
        q, k, v = (_slice(qkv, g.attrs(f"{p}_2d")).reshape(g.attrs(f"{p}_4d")["shape"]).permute(g.attrs(p)["perm"])
                   for p in "qkv")
        choice = torch._fused_sdp_choice(q, k, v, None, 0.0, bool(node["attrs"]["causal"]))
        try:
            return SDPBackend(choice).name
        except ValueError:
            return str(choice)
    except Exception as e:  # noqa: BLE001 - informational only
        return f"unknown ({type(e).__name__})"


def run_peer(g, fn, eager, arg_sets, timer, check):
    """Correctness check on the first input set, then timing; errors are recorded, not raised."""
    import torch
    rec = {}
    try:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            outs = fn(*arg_sets[0])
        torch.cuda.synchronize()
        rec["first_call_s"] = time.perf_counter() - t0  # includes compilation for torch.compile
        with torch.no_grad():
            errs = check(g, eager, arg_sets[0], outs)
        rec["check"] = errs
        rec["check_ok"] = check_passes(g, errs)
        del outs
        torch.cuda.empty_cache()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        with torch.no_grad():
            rec.update(timer(fn, arg_sets))
        rec["peak_extra_bytes"] = torch.cuda.max_memory_allocated() - base
    except Exception as e:  # noqa: BLE001 - a peer that fails is a result, not a crash
        rec["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:500]
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    return rec


def bench_workload(name, g, args, timer, copy, mm, l2_bytes):
    import torch
    info = g.summary()
    bytes_ = info["compulsory_bytes"]
    bytes_per_us = copy["GBps"] * 1e3
    mem_us = bytes_ / bytes_per_us
    flops = g.flops(args.attention_flops)
    flop_us = flops / (mm["TFLOPs"] * 1e6) if flops else 0.0
    floor_us = max(mem_us, flop_us)
    info.update({"flops": flops, "attention_flops_convention": args.attention_flops,
                 "memory_floor_us": mem_us, "compute_floor_us": flop_us, "floor_us": floor_us,
                 "bound": "compute" if flop_us > mem_us else "memory"})

    # Working sets under 4 x L2 rotate among copies of their inputs, so that repeated calls do
    # not measure the cache.
    sets = args.input_sets or (1 if bytes_ >= 4 * l2_bytes
                               else min(16, math.ceil(4 * l2_bytes / max(g.input_bytes(), 1))))
    info["input_sets"] = sets
    gen = torch.Generator(device=DEVICE).manual_seed(args.seed)
    arg_sets = [make_inputs(g, gen, DEVICE) for _ in range(sets)]
    consts = make_constants(g, DEVICE)
    eager = BUILDERS[name](g, consts)
    check = CHECKS.get(name, check_against_reference)
    if name == "transformer_block":
        info["sdpa_backend"] = sdpa_choice(g, arg_sets[0])

    peers = {}
    for peer, mode in PEERS:
        if not peer_selected(peer, args):
            continue
        print(f"  {name}: {peer}{' (compiling)' if mode else ''} ...", flush=True)
        if mode is None:
            fn = eager
        else:
            torch._dynamo.reset()
            fn = torch.compile(eager, mode=None if mode == "default" else mode, dynamic=False)
        rec = run_peer(g, fn, eager, arg_sets, timer, check)
        if mode:
            rec["mode"] = mode
        if "median_us" in rec:
            rec["ratio"] = floor_us / rec["median_us"]
            rec["GBps"] = bytes_ / rec["median_us"] / 1e3
            if flops:
                rec["TFLOPs"] = flops / rec["median_us"] / 1e6
        peers[peer] = rec
        del fn
    info["peers"] = peers
    del arg_sets, consts, eager
    torch._dynamo.reset()
    torch.cuda.empty_cache()
    return info


def _optional(fn):
    """fn(), or None where that fact cannot be read here."""
    try:
        return fn()
    except Exception:  # noqa: BLE001 - facts for the record only
        return None


def device_facts():
    import torch
    props = torch.cuda.get_device_properties(0)
    facts = {
        "name": torch.cuda.get_device_name(0),
        "capability": ".".join(map(str, torch.cuda.get_device_capability(0))),
        "sm_count": props.multi_processor_count,
        "memory_bytes": props.total_memory,
        "l2_bytes": getattr(props, "L2_cache_size", None),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cudnn": _optional(torch.backends.cudnn.version),
        "cuda_driver_api": cuda_driver_api_version(),
        "python": sys.version.split()[0],
    }
    try:
        import triton
        facts["triton"] = triton.__version__
    except ImportError:
        facts["triton"] = None
    smi = nvidia_smi(["name", "driver_version", "memory.total", "power.limit", "compute_mode", "persistence_mode"])
    facts["nvidia_smi"] = smi or None
    facts["driver_version"] = smi.get("driver_version")
    facts["sdpa_enabled"] = {b: _optional(getattr(torch.backends.cuda, f"{b}_sdp_enabled"))
                             for b in ("flash", "mem_efficient", "cudnn", "math")
                             if hasattr(torch.backends.cuda, f"{b}_sdp_enabled")}
    return facts


# ----------------------------------------------------------------------------------------------
# Output.

def json_safe(x):
    """Strict JSON: non-finite floats become the strings "inf", "-inf", "nan"."""
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


def print_list(graphs, attention):
    print(f"{'workload':<22} {'compulsory bytes':>16} {'MB':>9} {'GFLOP':>8}  inputs -> outputs"
          f"   (GFLOP: matmuls + attention, {attention})")
    for name, g in graphs.items():
        ins = ", ".join(f"{n} {d}{s}" for n, d, s in g.inputs)
        outs = ", ".join(f"{o} {g.types[n][0]}{g.types[n][1]}" for o, n in g.outputs)
        print(f"{name:<22} {g.compulsory_bytes():>16,d} {g.compulsory_bytes() / 1e6:>9.1f} "
              f"{g.flops(attention) / 1e9:>8.1f}  {ins} -> {outs}")


def print_table(result, peers_run):
    dev = result["device"]
    copy, mm = result["copy"], result.get("matmul")
    print()
    print(f"device {dev['name']} (sm {dev['capability']}, {dev['sm_count']} SMs), driver {dev.get('driver_version')}, "
          f"torch {dev['torch']} (CUDA {dev['torch_cuda']}), triton {dev.get('triton')}")
    clocks = result.get("clocks_after") or {}
    if clocks:
        print("clocks after: " + ", ".join(f"{k} {v}" for k, v in clocks.items()))
    print(f"copy {copy['GBps']:.0f} GB/s (read+write, {copy['buffer_bytes'] / (1 << 30):.1f} GiB buffer, "
          f"spread {copy['spread_pct']:.1f}%)" +
          (f"; bf16 matmul 8192^3 {mm['TFLOPs']:.0f} TFLOP/s (spread {mm['spread_pct']:.1f}%)" if mm else ""))
    print("ratio = floor_us / median_us (1.00 = at the floor); floor = max(bytes / copy BW, FLOPs / matmul rate)")
    print()
    head = f"{'workload':<22} {'MB':>8} {'floor us':>9}"
    for peer in peers_run:
        head += f" | {peer + ' us':>16} {'ratio':>5}"
    print(head + " | check")
    for w in result["workloads"]:
        line = f"{w['name']:<22} {w['compulsory_bytes'] / 1e6:>8.1f} {w['floor_us']:>9.1f}"
        bad = []
        for peer in peers_run:
            rec = w["peers"].get(peer, {})
            if "median_us" in rec:
                line += f" | {rec['median_us']:>16.1f} {rec['ratio']:>5.2f}"
            else:
                line += f" | {'error' if 'error' in rec else '-':>16} {'':>5}"
            if "error" in rec:
                bad.append(f"{peer}: {rec['error'][:60]}")
            elif rec and not rec.get("check_ok", True):
                bad.append(f"{peer}: check failed {rec.get('check')}")
        if "error" in w:
            bad.append(w["error"][:80])
        line += " | " + ("ok" if not bad else "; ".join(bad))
        if w["bound"] == "compute":
            line += f"  [compute-bound: {w['flops'] / 1e9:.1f} GFLOP]"
        print(line)
    compiled = [p for p in peers_run if p != "eager"]
    if compiled:
        print("first call (compile + run), s: " + "; ".join(
            f"{w['name']} " + "/".join(f"{w['peers'][p]['first_call_s']:.1f}" if "first_call_s" in w["peers"].get(p, {})
                                       else "-" for p in compiled)
            for w in result["workloads"]) + f"  ({'/'.join(compiled)})")


# ----------------------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--list", action="store_true", help="print the workloads and their compulsory bytes and exit "
                   "(reads only the JSON; needs no torch)")
    p.add_argument("--only", default="", help="comma-separated workloads (default: all)")
    p.add_argument("--examples", type=pathlib.Path, default=DEFAULT_EXAMPLES,
                   help="folder of the example graphs (default: examples/; examples/small for a quick smoke run)")
    p.add_argument("--reps", type=int, default=100, help="timed calls per round, two rounds (default 100; >= 50)")
    p.add_argument("--warmup", type=int, default=10, help="untimed calls before timing (default 10)")
    p.add_argument("--no-compile", action="store_true", help="time torch eager only")
    p.add_argument("--max-autotune", action="store_true",
                   help='also torch.compile(mode="max-autotune-no-cudagraphs") (slow to compile: minutes)')
    p.add_argument("--reduce-overhead", action="store_true",
                   help='also torch.compile(mode="reduce-overhead") (CUDA graphs: what a launch-bound graph '
                        'such as a 16-token block gets at best)')
    p.add_argument("--flush-l2", action="store_true",
                   help="zero a buffer of 4 x L2 before every timed call (outside the timed region)")
    p.add_argument("--copy-gib", type=float, default=1.0,
                   help="copy-bandwidth buffer size in GiB (default 1, as kiln bench; >= 1)")
    p.add_argument("--attention-flops", choices=ATTENTION_FLOPS, default="causal",
                   help="causal: halve causal attention's FLOPs (FlashAttention convention, the default); "
                        "full: count QK^T and PV whole, as kiln bench's matmul steps do today")
    p.add_argument("--back-to-back", action="store_true",
                   help="queue the timed calls without synchronizing after each (default: synchronize after "
                        "every call, as kiln bench does, so each call's launch latency is in its time)")
    p.add_argument("--input-sets", type=int, default=0,
                   help="copies of the inputs to cycle through (default 0: enough to cover 4 x L2 for "
                        "workloads under that; 1: one set, as kiln bench)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--json", type=pathlib.Path, help="write every figure to this JSON file")
    args = p.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(WORKLOAD_NAMES)
    unknown = [n for n in names if n not in WORKLOAD_NAMES]
    if unknown:
        p.error(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(WORKLOAD_NAMES)}")
    args.names = names
    if args.reps < 1 or args.warmup < 0:
        p.error("--reps must be >= 1 and --warmup >= 0")
    if args.copy_gib <= 0:
        p.error("--copy-gib must be positive")
    if args.input_sets < 0:
        p.error("--input-sets must be >= 0")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        graphs = {n: Graph(args.examples / f"{n}.json") for n in args.names}
    except GraphError as e:
        print(f"peers.py: error: {e}", file=sys.stderr)
        return 2

    if args.list:
        print_list(graphs, args.attention_flops)
        if args.json:
            args.json.write_text(json.dumps(
                {"workloads": [{"name": n, **g.summary(), "flops": g.flops(args.attention_flops),
                                "attention_flops_convention": args.attention_flops}
                               for n, g in graphs.items()]}, indent=2) + "\n")
        return 0

    try:
        import torch
    except ImportError:
        print("peers.py: error: timing needs torch (with CUDA); --list works without it", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("peers.py: error: no CUDA device visible to torch", file=sys.stderr)
        return 2
    if args.reps < 50:
        print(f"peers.py: warning: --reps {args.reps} is under 50", file=sys.stderr)
    if args.copy_gib < 1:
        print(f"peers.py: warning: --copy-gib {args.copy_gib} is under 1 GiB", file=sys.stderr)

    result = {
        "tool": "bench/peers.py",
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "argv": sys.argv[1:] if argv is None else list(argv),
        "device": device_facts(),
        "clocks_before": nvidia_smi(CLOCK_FIELDS) or None,
        "method": {
            "timing": "CUDA events around each call; median over two rounds of reps calls after warmup calls",
            "sync_each_call": not args.back_to_back,
            "attention_flops": args.attention_flops,
            "input_sets": args.input_sets or "auto",
            "reps_per_round": args.reps, "warmup": args.warmup,
            "l2_flush": bool(args.flush_l2),
            "input_rotation": "auto: workloads with compulsory bytes < 4 x L2 cycle through several input sets",
            "floor": "max(compulsory bytes / copy bandwidth, FLOPs / bf16 matmul rate), both measured in this run",
            "ratio": "floor_us / median_us",
            "inputs": "random: floats uniform(-1, 1) (a matmul's right operand divided by sqrt(K)), "
                      "class targets uniform over the classes",
            "grad": "torch.no_grad(); torch.compile(dynamic=False), torch._dynamo.reset() before each compile",
        },
    }
    l2 = result["device"]["l2_bytes"] or (50 << 20)
    flush = torch.empty(4 * l2, dtype=torch.uint8, device=DEVICE) if args.flush_l2 else None
    timer = Timer(args.reps, args.warmup, flush, sync_each=not args.back_to_back)

    print(f"peers.py: {result['device']['name']}: copy bandwidth ...", flush=True)
    result["copy"] = measure_copy(timer, args.copy_gib)
    mm = None
    if any(g.flops() for g in graphs.values()):
        print("peers.py: bf16 matmul 8192^3 ...", flush=True)
        mm = measure_matmul(timer)
    result["matmul"] = mm
    no_mm = {"TFLOPs": math.inf}

    result["workloads"] = []
    for name, g in graphs.items():
        print(f"peers.py: {name} ({g.compulsory_bytes() / 1e6:.1f} MB compulsory)", flush=True)
        try:
            w = bench_workload(name, g, args, timer, result["copy"], mm or no_mm, l2)
        except Exception as e:  # noqa: BLE001 - report it and go on with the next workload
            w = {**g.summary(), "floor_us": math.nan, "bound": "memory", "peers": {},
                 "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:500]}
            torch.cuda.empty_cache()
        result["workloads"].append({"name": name, **w})
    result["clocks_after"] = nvidia_smi(CLOCK_FIELDS) or None

    peers_run = [p for p, _ in PEERS if peer_selected(p, args)]
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(json_safe(result), indent=2, default=str) + "\n")
        print(f"peers.py: wrote {args.json}")
    print_table(result, peers_run)

    failed = [f"{w['name']}/{p}" for w in result["workloads"] for p, rec in w["peers"].items()
              if rec.get("check_ok") is False]
    errors = [w["name"] for w in result["workloads"] if "error" in w] + \
             [f"{w['name']}/{p}" for w in result["workloads"] for p, rec in w["peers"].items() if "error" in rec]
    if failed:
        print(f"peers.py: CHECK FAILED for {', '.join(failed)}: these peers compute something else; "
              f"their times are not comparable", file=sys.stderr)
    if errors:
        print(f"peers.py: errors in {', '.join(errors)} (see the table and the JSON)", file=sys.stderr)
    return 1 if failed or errors else 0


if __name__ == "__main__":
    sys.exit(main())
