#!/usr/bin/env python3
"""The shape zoo: memory-bound workloads in the shapes users' models bring, timed for kiln, torch
eager and torch.compile with one harness and one L2 policy, against the copy-bandwidth floor.

Every workload is one kiln JSON graph built here (docs/graph-format.md), from row reductions of
widths 1 to 1M and rows 1 to 1M to column, middle-axis and multi-axis reductions, softmax and
norms over inner and outer axes, transposes and permutes, and broadcasts along each axis, in
f32, f16 and bf16. Its torch function is the graph run node by node in torch (so the two compute
the same thing by construction), or, where users call one torch op for what the graph spells out
(batch norm), that op.

    python3 bench/zoo.py --list                    # the workloads, their shapes and compulsory bytes
    python3 bench/zoo.py --write-graphs DIR        # each workload's graph as DIR/NAME.json
    python3 bench/zoo.py --kiln build/tools/kiln --json zoo.json          # GPU, torch, triton
    python3 bench/zoo.py --kiln KILN --shard 1/3 --json zoo-1.json       # a third of them
    python3 bench/zoo.py --report zoo-1.json zoo-2.json zoo-3.json       # one table from shards

Timing (bench/README.md): every repetition starts with a cold L2, for kiln and torch alike: a
256 MiB buffer (the size triton's do_bench uses) is read on the timed stream before each
call, outside the CUDA events around it (a read leaves L2 clean; zeroing would leave dirty lines
for the timed call to write back); the host waits for each call; the median is reported.
torch runs in this process (peers.py's Timer); kiln runs as `kiln bench GRAPH --flush-l2`, whose
JSON gives its time, its floor (compulsory bytes over the copy bandwidth it measured in its own
process), its predicted time and every step's prediction and measurement.

--list, --write-graphs and --report need only the standard library; --kiln-only needs no torch.
"""

import argparse
import dataclasses
import datetime
import json
import math
import pathlib
import subprocess
import sys
import tempfile
import time
from typing import Callable, Optional

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peers  # noqa: E402  the graph reader, random inputs, the timer, the reference check, device facts

L2_FLUSH_BYTES = 256 << 20  # triton's do_bench size; `kiln bench --flush-l2` reads the same
SLOW_REGION_FACTOR = 2.0  # regions measured above this many times their prediction are listed
KILN_TIMEOUT_S = 300
CLASSES = ("row", "column", "middle", "multi-axis", "softmax", "norm", "permute", "broadcast")


# ----------------------------------------------------------------------------------------------
# Building kiln graphs.

class GraphDoc:
    """A kiln JSON graph built node by node. An operand must be defined before it is used, so the
    nodes are in an order they can be run in."""

    def __init__(self, name):
        self.doc = {"kiln_graph": 1, "name": name, "inputs": [], "initializers": [], "nodes": [], "outputs": []}
        self.defined = set()

    def _define(self, name):
        if name in self.defined:
            raise ValueError(f"{self.doc['name']}: {name} defined twice")
        self.defined.add(name)
        return name

    def input(self, name, dtype, shape):
        self.doc["inputs"].append({"name": name, "dtype": dtype, "shape": list(shape)})
        return self._define(name)

    def scalar(self, name, dtype, value):
        self.doc["initializers"].append({"name": name, "dtype": dtype, "shape": [], "data": [value]})
        return self._define(name)

    def op(self, name, op, *operands, **attrs):
        undefined = [o for o in operands if o not in self.defined]
        if undefined:
            raise ValueError(f"{self.doc['name']}: {name} uses {undefined} before they are defined")
        node = {"name": name, "op": op, "inputs": list(operands)}
        if attrs:
            node["attrs"] = attrs
        self.doc["nodes"].append(node)
        return self._define(name)

    def returning(self, *outputs):
        self.doc["outputs"] = list(outputs)
        return self.doc


def one_op(name, op, dtype, shape, params=(), **attrs):
    """y = op(x, *params): x of `shape`, each param (name, shape) an input of x's dtype."""
    g = GraphDoc(name)
    operands = [g.input("x", dtype, shape)] + [g.input(p, dtype, s) for p, s in params]
    return g.returning(g.op("y", op, *operands, **attrs))


def reduction(name, op, dtype, shape, axes):
    return one_op(name, op, dtype, shape, axes=list(axes))


def norm(name, op, dtype, shape, axis=-1):
    """layer_norm (weight and bias) or rms_norm (weight) over shape[axis:]."""
    params = [("w", shape[axis:])] + ([("b", shape[axis:])] if op == "layer_norm" else [])
    return one_op(name, op, dtype, shape, params, axis=axis)


def binary(name, op, dtype, shape, other_shape):
    return one_op(name, op, dtype, shape, [("b", other_shape)])


def permute(name, dtype, shape, perm):
    return one_op(name, "transpose", dtype, shape, perm=list(perm))


def transpose_add(name, dtype, n):
    """x.T + y, both [n, n]."""
    g = GraphDoc(name)
    x, y = g.input("x", dtype, [n, n]), g.input("y", dtype, [n, n])
    xt = g.op("xt", "transpose", x, perm=[1, 0])
    return g.returning(g.op("out", "add", xt, y))


def abs_max(name, dtype, shape):
    """max |x| over every element (the amax of fp8 scaling)."""
    g = GraphDoc(name)
    a = g.op("a", "abs", g.input("x", dtype, shape))
    return g.returning(g.op("amax", "reduce_max", a))


def patchify(name, dtype, batch, channels, image, patch):
    """ViT patch embedding's input: [B, C, H, W] -> [B, (H/p)(W/p), p*p*C]."""
    g = GraphDoc(name)
    n = image // patch
    x6 = g.op("x6", "reshape", g.input("x", dtype, [batch, channels, image, image]),
              shape=[batch, channels, n, patch, n, patch])
    t = g.op("t", "transpose", x6, perm=[0, 2, 4, 3, 5, 1])
    return g.returning(g.op("patches", "reshape", t, shape=[batch, n * n, patch * patch * channels]))


def channel_norm(name, dtype, shape, axes, eps):
    """Normalizes x over `axes` (statistics kept with keep_dims), then a per-channel (axis 1)
    weight and bias, spelled out as ConvNeXt's channels-first LayerNorm and a training-mode
    batch norm are: mean, x - mean, mean of its square, rsqrt(var + eps), scale, shift."""
    g = GraphDoc(name)
    x = g.input("x", dtype, shape)
    channels = [shape[1]] + [1] * (len(shape) - 2)
    w, b = g.input("w", dtype, [shape[1]]), g.input("b", dtype, [shape[1]])
    mean = g.op("mean", "reduce_mean", x, axes=list(axes), keep_dims=True)
    d = g.op("d", "sub", x, mean)
    var = g.op("var", "reduce_mean", g.op("d2", "mul", d, d), axes=list(axes), keep_dims=True)
    inv = g.op("inv_std", "rsqrt", g.op("var_eps", "add", var, g.scalar("eps", dtype, eps)))
    n = g.op("n", "mul", d, inv)
    nw = g.op("nw", "mul", n, g.op("w_c", "reshape", w, shape=channels))
    return g.returning(g.op("y", "add", nw, g.op("b_c", "reshape", b, shape=channels)))


def group_norm(name, dtype, shape, groups, eps):
    """GroupNormalization as kiln's ONNX importer writes it: x viewed as [N, G, C / G, H * W],
    layer_norm over the last two axes, a per-channel weight and bias viewed as [G, C / G, 1],
    then viewed back."""
    g = GraphDoc(name)
    x = g.input("x", dtype, shape)
    n, c = shape[0], shape[1]
    w, b = g.input("w", dtype, [c]), g.input("b", dtype, [c])
    rest = math.prod(shape[2:])
    param = [groups, c // groups, 1]
    v = g.op("v", "reshape", x, shape=[n, groups, c // groups, rest])
    y = g.op("yw", "mul", g.op("ln", "layer_norm", v, axis=2, eps=eps), g.op("w_g", "reshape", w, shape=param))
    y = g.op("yb", "add", y, g.op("b_g", "reshape", b, shape=param))
    return g.returning(g.op("y", "reshape", y, shape=list(shape)))


def group_norm_op(groups, eps):
    def make(g, consts):
        import torch.nn.functional as F

        def group_norm(x, w, b):
            return (F.group_norm(x, groups, w, b, eps=eps),)
        return group_norm
    return make


def cross_entropy(name, dtype, rows, classes):
    g = GraphDoc(name)
    logits, targets = g.input("logits", dtype, [rows, classes]), g.input("targets", "i64", [rows])
    return g.returning(g.op("loss", "cross_entropy", logits, targets))


# ----------------------------------------------------------------------------------------------
# The zoo.

@dataclasses.dataclass(frozen=True)
class Workload:
    cls: str
    doc: dict
    source: str  # where users meet this shape
    cliff: bool = False  # one of issue 12's known cliffs
    # builder(graph, constants) -> torch fn, where users call one torch op for what the graph
    # spells out; None: the graph run node by node in torch (torch_function).
    torch_op: Optional[Callable] = None

    @property
    def name(self):
        return self.doc["name"]


def batch_norm_op(g, consts):
    import torch.nn.functional as F
    eps = g.initializers["eps"]["data"][0]

    def batch_norm(x, w, b):
        return (F.batch_norm(x, None, None, w, b, training=True, eps=eps),)
    return batch_norm


def zoo():
    W = Workload
    return [
        # Row reductions: the reduced axis is the innermost.
        W("row", reduction("row_sum_1x1M_f32", "reduce_sum", "f32", [1, 1 << 20], [-1]), "one row of 1M (rows = 1)"),
        W("row", reduction("row_sum_1Mx1_f32", "reduce_sum", "f32", [1 << 20, 1], [-1]), "1M rows of width 1"),
        W("row", reduction("row_sum_1Mx16_f32", "reduce_sum", "f32", [1 << 20, 16], [-1]),
          "1M tokens x 16 expert scores"),
        W("row", reduction("row_max_vocab32000_bf16", "reduce_max", "bf16", [2048, 32000], [-1]),
          "greedy decoding's max logit, Llama-2 vocab"),
        W("row", reduction("row_mean_1024_f16", "reduce_mean", "f16", [65536, 1024], [-1]),
          "per-token mean, hidden 1024"),
        W("row", reduction("row_sum_odd4095_bf16", "reduce_sum", "bf16", [8192, 4095], [-1]), "odd width"),
        W("row", reduction("row_min_1001_f32", "reduce_min", "f32", [32768, 1001], [-1]),
          "1001 classes (ImageNet + background)"),
        W("row", cross_entropy("xent_gpt2_vocab_bf16", "bf16", 2048, 50257), "GPT-2 loss, 2048 tokens"),
        # Column reductions: the reduced axis is the outermost.
        W("column", reduction("col_sum_bias_grad_bf16", "reduce_sum", "bf16", [16384, 4096], [0]),
          "bias gradient: 128 MiB over 16384 tokens", cliff=True),
        W("column", reduction("col_sum_1Mx16_f32", "reduce_sum", "f32", [1 << 20, 16], [0]),
          "per-expert load over 1M tokens"),
        W("column", reduction("col_mean_11008_f16", "reduce_mean", "f16", [4096, 11008], [0]),
          "Llama MLP width, 4096 tokens"),
        W("column", reduction("col_max_768_f32", "reduce_max", "f32", [32768, 768], [0]),
          "per-feature max of embeddings"),
        W("column", reduction("col_sum_odd50257_bf16", "reduce_sum", "bf16", [512, 50257], [0]),
          "GPT-2 lm-head bias gradient"),
        W("column", reduction("col_sum_tokens_3d_f32", "reduce_sum", "f32", [8, 2048, 1024], [0, 1]),
          "LayerNorm weight gradient over [batch, seq]"),
        # Middle-axis reductions.
        W("middle", reduction("mid_mean_seq_pool_bf16", "reduce_mean", "bf16", [64, 512, 768], [1]),
          "BERT-base mean pooling over the sequence", cliff=True),
        W("middle", reduction("mid_sum_heads_bf16", "reduce_sum", "bf16", [8, 32, 2048, 128], [1]),
          "sum over 32 heads of [B, H, S, D]"),
        W("middle", reduction("mid_max_points_f32", "reduce_max", "f32", [32, 1024, 1024], [1]),
          "PointNet max-pool over 1024 points"),
        W("middle", reduction("mid_mean_frames_f32", "reduce_mean", "f32", [16, 3000, 80], [1]),
          "mean over 3000 frames of 80 mel bins"),
        # Several axes, or all of them.
        W("multi-axis", reduction("hw_mean_nchw_bf16", "reduce_mean", "bf16", [32, 256, 56, 56], [2, 3]),
          "global average pool, ResNet stage 2, NCHW"),
        W("multi-axis", reduction("nhw_mean_nchw_bf16", "reduce_mean", "bf16", [32, 256, 56, 56], [0, 2, 3]),
          "batch-norm statistics per channel, NCHW"),
        W("multi-axis", reduction("nhw_sum_nhwc_f16", "reduce_sum", "f16", [32, 56, 56, 256], [0, 1, 2]),
          "batch-norm statistics per channel, channels-last"),
        W("multi-axis", reduction("hw_mean_nhwc_f16", "reduce_mean", "f16", [256, 7, 7, 2048], [1, 2]),
          "ResNet-50's final pool, channels-last"),
        W("multi-axis", abs_max("amax_all_bf16", "bf16", [16384, 4096]), "amax for fp8 scaling"),
        # Softmax over the last axis and over others.
        W("softmax", one_op("softmax_vocab32000_bf16", "softmax", "bf16", [1024, 32000]), "Llama-2 logits"),
        W("softmax", one_op("softmax_router_65536x8_f32", "softmax", "f32", [65536, 8]),
          "MoE router: 65536 tokens over 8 experts"),
        W("softmax", one_op("log_softmax_vocab128256_bf16", "log_softmax", "bf16", [512, 128256]), "Llama-3 logits"),
        W("softmax", one_op("softmax_vocab151936_bf16", "softmax", "bf16", [256, 151936]), "Qwen logits"),
        W("softmax", one_op("softmax_vocab50257_f16", "softmax", "f16", [1024, 50257]), "GPT-2 logits, odd width"),
        W("softmax", one_op("softmax_12x32000_f32", "softmax", "f32", [12, 32000]),
          "decoding 12 sequences, Llama-2 vocab", cliff=True),
        W("softmax", one_op("log_softmax_9x50257_f32", "log_softmax", "f32", [9, 50257]),
          "decoding 9 sequences, GPT-2 vocab", cliff=True),
        W("softmax", one_op("softmax_4x1M_f32", "softmax", "f32", [4, 1000000]), "a few rows of 1M", cliff=True),
        W("softmax", one_op("softmax_scores_1024_bf16", "softmax", "bf16", [4, 16, 1024, 1024]), "attention scores"),
        W("softmax", one_op("softmax_scores_vit197_f16", "softmax", "f16", [64, 12, 197, 197]),
          "ViT-B attention scores, 197 tokens"),
        W("softmax", one_op("softmax_axis1_16MiB_f32", "softmax", "f32", [8, 1024, 512], axis=1),
          "attention pooling over the sequence axis, 16 MiB", cliff=True),
        W("softmax", one_op("softmax_classes_nchw_f16", "softmax", "f16", [8, 21, 512, 512], axis=1),
          "segmentation over 21 classes (axis 1 of NCHW)"),
        W("softmax", one_op("softmax_axis1_frames_f32", "softmax", "f32", [32, 3000, 96], axis=1),
          "over 3000 frames of 96 features: a column tile split over blocks", cliff=True),
        # Norms over the last axis and over others.
        W("norm", norm("layer_norm_5120_bf16", "layer_norm", "bf16", [8192, 5120]), "hidden 5120 (Llama-13B)"),
        W("norm", norm("rms_norm_8192_bf16", "rms_norm", "bf16", [4096, 8192]), "hidden 8192 (Llama-70B)"),
        W("norm", norm("rms_norm_odd4095_bf16", "rms_norm", "bf16", [8192, 4095]), "odd width", cliff=True),
        W("norm", norm("rms_norm_qk_head128_bf16", "rms_norm", "bf16", [8, 2048, 32, 128]),
          "QK-norm over head_dim: 524288 rows of 128"),
        W("norm", norm("layer_norm_chw_256k_f32", "layer_norm", "f32", [32, 64, 64, 64], axis=1),
          "LayerNorm([C, H, W]): rows of 256k", cliff=True),
        W("norm", norm("layer_norm_16x12288_f32", "layer_norm", "f32", [16, 12288]),
          "decoding 16 sequences, hidden 12288", cliff=True),
        W("norm", norm("layer_norm_gpt2_768_bf16", "layer_norm", "bf16", [16384, 768]),
          "GPT-2's hidden 768 over 16384 tokens"),
        W("norm", norm("layer_norm_4x1M_f32", "layer_norm", "f32", [4, 1048576]),
          "four rows of 1M: a row split over blocks, statistics in one pass", cliff=True),
        W("norm", norm("layer_norm_odd1000_f16", "layer_norm", "f16", [8192, 1000]), "odd width 1000"),
        W("norm", channel_norm("layer_norm_channels_first_f32", "f32", [32, 96, 56, 56], [1], 1e-6),
          "ConvNeXt-T's channels-first LayerNorm (axis 1 of NCHW)"),
        W("norm", channel_norm("batch_norm_train_f16", "f16", [16, 64, 112, 112], [0, 2, 3], 1e-5),
          "training-mode batch norm after ResNet's stem", torch_op=batch_norm_op),
        W("norm", group_norm("group_norm_sd_f16", "f16", [2, 320, 64, 64], 32, 1e-5),
          "GroupNorm(32, 320) in Stable Diffusion's UNet", torch_op=group_norm_op(32, 1e-5)),
        W("norm", channel_norm("batch_norm_train_rn50_bf16", "bf16", [32, 256, 56, 56], [0, 2, 3], 1e-5),
          "training-mode batch norm in ResNet-50's first stage", torch_op=batch_norm_op),
        W("norm", channel_norm("batch_norm_train_rn50_last_bf16", "bf16", [32, 2048, 7, 7], [0, 2, 3], 1e-5),
          "training-mode batch norm in ResNet-50's last stage (runs of 7 x 7)", torch_op=batch_norm_op),
        # Transposes and permutes (outputs are materialized).
        W("permute", transpose_add("transpose_add_4096_f32", "f32", 4096), "x.T + y", cliff=True),
        W("permute", permute("permute_bshd_bhsd_bf16", "bf16", [8, 2048, 32, 128], [0, 2, 1, 3]),
          "split heads: [B, S, H, D] -> [B, H, S, D]"),
        W("permute", permute("permute_bhsd_bshd_f16", "f16", [4, 40, 1024, 128], [0, 2, 1, 3]),
          "merge 40 heads (Llama-13B)"),
        W("permute", permute("permute_nchw_nhwc_bf16", "bf16", [32, 256, 56, 56], [0, 2, 3, 1]), "NCHW -> NHWC"),
        W("permute", permute("permute_nhwc_nchw_f32", "f32", [64, 28, 28, 512], [0, 3, 1, 2]), "NHWC -> NCHW"),
        W("permute", permute("transpose_weight_bf16", "bf16", [11008, 4096], [1, 0]), "a Llama MLP weight transposed"),
        W("permute", permute("transpose_mel_f32", "f32", [16, 80, 3000], [0, 2, 1]), "Whisper's 80 x 3000 log-mel"),
        W("permute", patchify("patchify_vit_f16", "f16", 64, 3, 224, 16), "ViT-B/16 patches, a 6-D permute"),
        # Broadcasts along each axis.
        W("broadcast", binary("bias_last_bf16", "add", "bf16", [8192, 5120], [5120]), "bias on the last axis"),
        W("broadcast", binary("scale_rows_f16", "mul", "f16", [8192, 4096], [8192, 1]), "per-token scale"),
        W("broadcast", binary("bias_channels_nchw_f32", "add", "f32", [32, 256, 56, 56], [256, 1, 1]),
          "per-channel bias on axis 1 of NCHW"),
        W("broadcast", binary("pos_embed_f32", "add", "f32", [32, 512, 768], [512, 768]),
          "position embeddings along the batch axis"),
        W("broadcast", binary("se_scale_nchw_f16", "mul", "f16", [32, 256, 56, 56], [32, 256, 1, 1]),
          "squeeze-and-excitation scale"),
        W("broadcast", binary("mask_add_bf16", "add", "bf16", [4, 16, 1024, 1024], [4, 1, 1, 1024]),
          "attention padding mask along heads and queries"),
    ]


WORKLOADS = zoo()


# ----------------------------------------------------------------------------------------------
# Selecting and describing workloads (standard library only).

def graph_of(w):
    return peers.Graph(f"{w.name}.json", doc=w.doc)


def select(args):
    """The workloads --only and --classes name, then every N-th of them from the I-th (--shard)."""
    chosen = [w for w in WORKLOADS if (not args.only or w.name in args.only)
              and (not args.classes or w.cls in args.classes)]
    index, count = args.shard
    return chosen[index - 1::count]


def shapes_text(g):
    ins = ", ".join(f"{n}{s}" for n, _, s in g.inputs)
    outs = ", ".join(f"{o}{g.types[n][1]}" for o, n in g.outputs)
    return f"{ins} -> {outs}"


def dtypes_text(g):
    return "/".join(sorted({d for _, d, _ in g.inputs if d in peers.FLOAT_DTYPES}))


def print_list(workloads):
    print(f"{'workload':<31} {'class':<11} {'dtype':<5} {'compulsory bytes':>16} {'MB':>7}  "
          f"{'inputs -> outputs':<52} where users meet it")
    total = 0
    for w in workloads:
        g = graph_of(w)
        total += g.compulsory_bytes()
        print(f"{w.name + (' *' if w.cliff else ''):<31} {w.cls:<11} {dtypes_text(g):<5} {g.compulsory_bytes():>16,d} "
              f"{g.compulsory_bytes() / 1e6:>7.1f}  {shapes_text(g):<52} {w.source}")
    print(f"{len(workloads)} workloads, {sum(w.cliff for w in workloads)} of them issue 12's known cliffs (*); "
          f"{total / 1e6:,.0f} MB compulsory in all")


def write_graphs(workloads, folder):
    folder.mkdir(parents=True, exist_ok=True)
    for w in workloads:
        (folder / f"{w.name}.json").write_text(json.dumps(w.doc, indent=1) + "\n")
    print(f"wrote {len(workloads)} graphs to {folder}")


# ----------------------------------------------------------------------------------------------
# kiln, as a subprocess.

def region_times(bench):
    """Per region of a `kiln bench --json` record: its steps' measured and predicted µs summed."""
    regions = {}
    for s in bench["steps"]:
        r = regions.setdefault(s["region"], {"region": s["region"], "measured_us": 0.0, "predicted_us": 0.0,
                                             "steps": []})
        r["measured_us"] += s["measured_us"]
        r["predicted_us"] += s["predicted_us"]
        r["steps"].append(f"{s['kind']}: {s['label']}")
    return list(regions.values())


def over_prediction(bench):
    """The regions of a `kiln bench --json` record measured above SLOW_REGION_FACTOR x their
    prediction (scripts/gpu-check flags them too)."""
    return [r for r in region_times(bench) if r["measured_us"] > SLOW_REGION_FACTOR * r["predicted_us"]]


def run_kiln(kiln, graph_path, args):
    """`kiln bench --flush-l2` on the graph: its JSON record, or {"error": ...}."""
    out = graph_path.with_suffix(".bench.json")
    command = [kiln, "bench", str(graph_path), "--flush-l2", "--reps", str(args.reps), "--json", str(out),
               "--device", args.cost_device]
    if args.no_tune:
        command.append("--no-tune")
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=KILN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"kiln bench ran over {KILN_TIMEOUT_S} s"}
    if proc.returncode != 0:
        last = (proc.stderr.strip() or proc.stdout.strip() or "(no output)").splitlines()[-1]
        return {"error": f"kiln bench exited {proc.returncode}: {last}"[:500]}
    bench = json.loads(out.read_text())
    bench["wall_s"] = time.perf_counter() - start
    bench["compiled"] = (proc.stdout.splitlines() or [""])[0]  # "GRAPH compiled for ARCH in N ms (...)"
    return bench


def check_kiln(kiln, graph_path):
    """`kiln run GRAPH --check` (outputs against kiln's interpreter): passed, and its last line."""
    try:
        proc = subprocess.run([kiln, "run", str(graph_path), "--check"], capture_output=True, text=True,
                              timeout=KILN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"passed": False, "output": f"ran over {KILN_TIMEOUT_S} s"}
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    return {"passed": proc.returncode == 0, "output": "\n".join(lines[-6:])}


# ----------------------------------------------------------------------------------------------
# torch, in this process.

def torch_ops():
    """kiln op -> torch call, for the ops the zoo's graphs use; attributes come as keywords."""
    import torch
    import torch.nn.functional as F

    def dims(x, axes):
        return tuple(axes) if axes else tuple(range(x.dim()))

    return {
        "add": lambda a, b: a + b,
        "sub": lambda a, b: a - b,
        "mul": lambda a, b: a * b,
        "abs": torch.abs,
        "rsqrt": torch.rsqrt,
        "reduce_sum": lambda x, axes, keep_dims: x.sum(dims(x, axes), keepdim=keep_dims),
        "reduce_mean": lambda x, axes, keep_dims: x.mean(dims(x, axes), keepdim=keep_dims),
        "reduce_max": lambda x, axes, keep_dims: x.amax(dims(x, axes), keepdim=keep_dims),
        "reduce_min": lambda x, axes, keep_dims: x.amin(dims(x, axes), keepdim=keep_dims),
        "softmax": lambda x, axis: torch.softmax(x, axis),
        "log_softmax": lambda x, axis: torch.log_softmax(x, axis),
        "layer_norm": lambda x, *wb, axis, eps: F.layer_norm(x, x.shape[axis:], *wb, eps=eps),
        "rms_norm": lambda x, *w, axis, eps: F.rms_norm(x, x.shape[axis:], *w, eps=eps),
        "cross_entropy": lambda logits, targets, reduction, ignore_index: F.cross_entropy(
            logits, targets, reduction=reduction, ignore_index=ignore_index),
        "transpose": lambda x, perm: x.permute(perm),
        "reshape": lambda x, shape: x.reshape(shape),
    }


def torch_function(g, consts):
    """The graph run node by node in torch, its initializers being `consts`; the outputs are made
    contiguous, so that a permute is materialized as kiln's output is."""
    ops = torch_ops()
    missing = sorted({n["op"] for n in g.nodes.values()} - ops.keys())
    if missing:
        raise peers.GraphError(f"{g.path}: zoo.py's torch_ops has no torch call for {', '.join(missing)}")
    steps = [(name, ops[n["op"]], n["inputs"], n["attrs"]) for name, n in g.nodes.items()]
    input_names = [name for name, _, _ in g.inputs]
    output_nodes = [node for _, node in g.outputs]

    def graph_in_torch(*args):
        env = {**consts, **dict(zip(input_names, args))}
        for name, op, operands, attrs in steps:
            env[name] = op(*(env[o] for o in operands), **attrs)
        return tuple(env[o].contiguous() for o in output_nodes)
    return graph_in_torch


def run_torch(w, g, timer, args):
    """Eager and (unless --no-compile) torch.compile, each checked against the graph run in
    float64 and timed by `timer`: {peer: peers.run_peer's record}."""
    import torch
    gen = torch.Generator(device=peers.DEVICE).manual_seed(args.seed)
    inputs = peers.make_inputs(g, gen, peers.DEVICE)
    consts = peers.make_constants(g, peers.DEVICE)
    reference = torch_function(g, {k: v.double() if v.is_floating_point() else v for k, v in consts.items()})
    eager = w.torch_op(g, consts) if w.torch_op else torch_function(g, consts)
    records = {"eager": peers.run_peer(g, eager, reference, [inputs], timer, peers.check_against_reference)}
    if not args.no_compile:
        torch._dynamo.reset()
        compiled = torch.compile(eager, dynamic=False)
        records["compile"] = peers.run_peer(g, compiled, reference, [inputs], timer, peers.check_against_reference)
        del compiled
        torch._dynamo.reset()
    del inputs, consts, eager, reference
    torch.cuda.empty_cache()
    return records


def bench_workload(w, args, timer, folder):
    g = graph_of(w)
    rec = {"name": w.name, "class": w.cls, "source": w.source, "cliff": w.cliff, "dtypes": dtypes_text(g),
           "shapes": shapes_text(g), "compulsory_bytes": g.compulsory_bytes()}
    start = time.perf_counter()
    if timer is not None:
        try:
            rec["torch"] = run_torch(w, g, timer, args)
        except Exception as e:  # noqa: BLE001 - a workload torch cannot set up is a result, not a crash
            rec["torch"] = {"setup": {"error": f"{type(e).__name__}: {e}"[:500]}}
    if args.kiln:
        path = folder / f"{w.name}.json"
        path.write_text(json.dumps(w.doc) + "\n")
        rec["kiln"] = run_kiln(args.kiln, path, args)
        if rec["kiln"].get("compulsory_bytes", rec["compulsory_bytes"]) != rec["compulsory_bytes"]:
            rec["kiln"]["error"] = (f"kiln counts {rec['kiln']['compulsory_bytes']} compulsory bytes, "
                                    f"zoo.py {rec['compulsory_bytes']}")
        if args.check:
            rec["kiln_check"] = check_kiln(args.kiln, path)
    rec["seconds"] = time.perf_counter() - start
    return rec


def device_facts(with_torch):
    if with_torch:
        return peers.device_facts()
    smi = peers.nvidia_smi(["name", "driver_version", "memory.total", "power.limit"])
    return {"name": smi.get("name"), "nvidia_smi": smi or None, "driver_version": smi.get("driver_version")}


def method(args):
    """How the figures of a run were taken, for its JSON."""
    return {
        "l2": "flushed",
        "l2_flush_bytes": L2_FLUSH_BYTES,
        "timing": "CUDA events around each call, the host waiting for each; before each call, outside the events, "
                  "a 256 MiB buffer is read on the same stream, leaving L2 cold and clean (kiln: kiln bench "
                  "--flush-l2; torch: peers.py's Timer, an amax over it); the median",
        "torch_reps": f"{args.warmup} warm-ups, then two rounds of {math.ceil(args.reps / 2)} calls",
        "kiln_reps": f"kiln bench --reps {args.reps} --device {args.cost_device} (5 warm-ups)"
                     f"{' --no-tune' if args.no_tune else ''}",
        "floor_over_kiln": "kiln floor_us / kiln graph_us, both from kiln bench (its own copy bandwidth): 1.00 is the floor",
        "speedup_over_compile": "torch.compile median_us / kiln graph_us",
        "prediction_error": "kiln graph_us / predicted_us - 1",
        "check": "eager and torch.compile against the graph run in float64 in torch, ||out - ref|| / ||ref|| "
                 "within peers.CHECK_TOLERANCE of the output's dtype; a peer that fails it has no time in the table",
        "torch_compile": "torch.compile(dynamic=False), torch._dynamo.reset() before each",
    }


class SetupError(Exception):
    """What this machine lacks for a run (exit status 2)."""


def run(args, workloads):
    """Times every workload; the results document (--json writes it, --report reads it)."""
    with_torch = not args.kiln_only
    if with_torch:
        try:
            import torch
        except ImportError:
            raise SetupError("timing torch needs torch with CUDA (--kiln-only times kiln alone)")
        if not torch.cuda.is_available():
            raise SetupError("no CUDA device visible to torch")
    if args.kiln and not pathlib.Path(args.kiln).is_file():
        raise SetupError(f"--kiln {args.kiln}: no such file")
    result = {
        "tool": "bench/zoo.py",
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "argv": sys.argv[1:],
        "device": device_facts(with_torch),
        "clocks_before": peers.nvidia_smi(peers.CLOCK_FIELDS) or None,
        "method": method(args),
    }
    timer = None
    if with_torch:
        flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device=peers.DEVICE)
        timer = peers.Timer(math.ceil(args.reps / 2), args.warmup, flush=flush)
        log("copy bandwidth (torch, 1 GiB) ...")
        result["torch_copy"] = peers.measure_copy(timer, 1.0)
    result["workloads"] = []
    with tempfile.TemporaryDirectory(prefix="kiln-zoo-") as folder:
        for i, w in enumerate(workloads, 1):
            log(f"[{i}/{len(workloads)}] {w.name} ...")
            rec = bench_workload(w, args, timer, pathlib.Path(folder))
            log(f"[{i}/{len(workloads)}] {w.name}: {rec['seconds']:.1f} s")
            result["workloads"].append(rec)
    result["clocks_after"] = peers.nvidia_smi(peers.CLOCK_FIELDS) or None
    return result


# ----------------------------------------------------------------------------------------------
# The report: figures derived from the results, the table, the summary line.

def timed(rec, peer):
    """A peer's median µs, or None where it did not run, failed or computed something else."""
    if peer == "kiln":
        kiln, checked = rec.get("kiln", {}), rec.get("kiln_check", {"passed": True})
        return kiln.get("graph_us") if "error" not in kiln and checked["passed"] else None
    r = rec.get("torch", {}).get(peer, {})
    return r.get("median_us") if r.get("check_ok", True) else None


def derived(rec):
    """floor / kiln time (1.00 is the floor), the speed-up over torch.compile, kiln's time over its prediction."""
    kiln, compiled = timed(rec, "kiln"), timed(rec, "compile")
    bench = rec.get("kiln", {})
    return {
        "floor_us": bench.get("floor_us") if kiln else None,
        "floor_over_kiln": bench["floor_us"] / kiln if kiln and bench.get("floor_us") else None,
        # One copy of the same bytes, timed as kiln is (kiln bench's same_size_copy_us): what a
        # single launch moving them costs, latency and ramp included.
        "copy_us": bench.get("same_size_copy_us") or None if kiln else None,
        "copy_over_kiln": bench["same_size_copy_us"] / kiln if kiln and bench.get("same_size_copy_us") else None,
        "speedup_over_compile": compiled / kiln if kiln and compiled else None,
        "measured_over_predicted": kiln / bench["predicted_us"] if kiln and bench.get("predicted_us") else None,
    }


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def summary_line(records):
    figures = [(rec["name"], derived(rec)) for rec in records]

    def series(key):
        return [(d[key], name) for name, d in figures if d[key]]

    def min_and_geomean(key):
        s = series(key)
        if not s:
            return "-"
        low = min(s)
        return f"min {low[0]:.2f} ({low[1]}), geomean {geomean([v for v, _ in s]):.2f} over {len(s)}"

    errors = series("measured_over_predicted")
    worst = "-"
    if errors:
        ratio, name = max(errors, key=lambda e: abs(math.log(e[0])))
        worst = f"{100 * (ratio - 1):+.0f}% ({name}: measured {ratio:.2f} x predicted)"
    return (f"zoo: {len(records)} workloads, L2 flushed: floor/kiln {min_and_geomean('floor_over_kiln')}; "
            f"same-size copy/kiln {min_and_geomean('copy_over_kiln')}; "
            f"speed-up over torch.compile {min_and_geomean('speedup_over_compile')}; "
            f"worst prediction error {worst}")


def slow_regions(records):
    return [{"workload": rec["name"], **r}
            for rec in records if timed(rec, "kiln") for r in over_prediction(rec["kiln"])]


def problems(rec):
    """What went wrong for one workload: errors and failed checks."""
    found = [f"kiln: {rec['kiln']['error']}"] if "error" in rec.get("kiln", {}) else []
    for peer, r in rec.get("torch", {}).items():
        if "error" in r:
            found.append(f"{peer}: {r['error']}")
        elif not r.get("check_ok", True):
            found.append(f"{peer}: check FAILED {r.get('check')}")
    if rec.get("kiln_check") and not rec["kiln_check"]["passed"]:
        found.append("kiln run --check FAILED: " + (rec["kiln_check"]["output"].splitlines() or [""])[-1])
    return found


def cell(value, width, fmt):
    return (format(value, fmt) if value is not None else "-").rjust(width)


TABLE_HEADER = (f"{'workload':<31} {'class':<11} {'MB':>7} {'floor us':>9} {'kiln us':>9} {'floor/k':>7} "
                f"{'copy us':>8} {'copy/k':>6} "
                f"{'eager us':>9} {'compile us':>10} {'x compile':>9} {'pred us':>9} {'pred err':>8}  problems")


def table_row(rec):
    d = derived(rec)
    err = 100 * (d["measured_over_predicted"] - 1) if d["measured_over_predicted"] else None
    predicted = rec["kiln"]["predicted_us"] if timed(rec, "kiln") else None
    return (f"{rec['name']:<31} {rec['class']:<11} {rec['compulsory_bytes'] / 1e6:>7.1f} "
            f"{cell(d['floor_us'], 9, '.1f')} {cell(timed(rec, 'kiln'), 9, '.1f')} "
            f"{cell(d['floor_over_kiln'], 7, '.2f')} {cell(d['copy_us'], 8, '.1f')} {cell(d['copy_over_kiln'], 6, '.2f')} "
            f"{cell(timed(rec, 'eager'), 9, '.1f')} "
            f"{cell(timed(rec, 'compile'), 10, '.1f')} {cell(d['speedup_over_compile'], 9, '.2f')} "
            f"{cell(predicted, 9, '.1f')} {cell(err, 7, '+.0f')}{'%' if err is not None else ' '}  "
            + "; ".join(problems(rec))[:200])


def print_header(result):
    device = result.get("device") or {}
    print(f"device {device.get('name')}, driver {device.get('driver_version')}, torch {device.get('torch', '-')}, "
          f"triton {device.get('triton', '-')}; L2 flushed before every call ({L2_FLUSH_BYTES >> 20} MiB read)")
    copies = [r["kiln"]["copy_gbps"] for r in result["workloads"] if "copy_gbps" in r.get("kiln", {})]
    torch_copy = (result.get("torch_copy") or {}).get("GBps")
    print(f"copy bandwidth: torch copy_ {cell(torch_copy, 0, '.0f')} GB/s in this process; kiln bench "
          + (f"{min(copies):.0f} to {max(copies):.0f} GB/s in its processes" if copies else "-"))


def print_slow_regions(records):
    slow = slow_regions(records)
    print(f"regions measured above {SLOW_REGION_FACTOR:g} x their prediction: {len(slow) or 'none'}")
    for r in slow:
        ratio = r["measured_us"] / r["predicted_us"] if r["predicted_us"] else math.inf
        print(f"  {r['workload']} region {r['region']}: {r['measured_us']:.1f} us measured, "
              f"{r['predicted_us']:.1f} us predicted ({ratio:.1f} x): {' | '.join(r['steps'])[:150]}")


def print_report(result):
    print()
    print_header(result)
    print()
    print(TABLE_HEADER)
    for rec in result["workloads"]:
        print(table_row(rec))
    print()
    print_slow_regions(result["workloads"])
    print()
    print(summary_line(result["workloads"]))


def merge(paths):
    """The results of several runs (shards) as one document."""
    docs = [json.loads(pathlib.Path(p).read_text()) for p in paths]
    devices = {(d.get("device") or {}).get("name") for d in docs}
    if len(devices) > 1:
        log(f"warning: the results come from different devices: {', '.join(map(str, devices))}")
    merged = dict(docs[0])
    merged["workloads"] = [w for d in docs for w in d["workloads"]]
    merged["merged_from"] = [str(p) for p in paths]
    return merged


# ----------------------------------------------------------------------------------------------

def log(message):
    print(f"zoo.py: {message}", file=sys.stderr, flush=True)


def shard(text):
    try:
        index, count = (int(v) for v in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard takes I/N, e.g. 1/3, not {text!r}")
    if not 1 <= index <= count:
        raise argparse.ArgumentTypeError(f"--shard {text}: I must be in 1..N")
    return index, count


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--list", action="store_true", help="print the workloads and their compulsory bytes (no torch)")
    p.add_argument("--write-graphs", type=pathlib.Path, metavar="DIR",
                   help="write each workload's graph as DIR/NAME.json")
    p.add_argument("--report", nargs="+", type=pathlib.Path, metavar="RESULTS",
                   help="print the table and summary of results written by --json (several: shards, merged)")
    p.add_argument("--kiln", metavar="PATH", help="the kiln binary (kiln bench --flush-l2 per workload); "
                   "without it only torch is timed")
    p.add_argument("--only", default="", help="comma-separated workloads")
    p.add_argument("--classes", default="", help=f"comma-separated classes of {', '.join(CLASSES)}")
    p.add_argument("--shard", type=shard, default=(1, 1), metavar="I/N",
                   help="every N-th selected workload from the I-th (a full run in N commands)")
    p.add_argument("--reps", type=int, default=100, help="timed calls per peer (default 100)")
    p.add_argument("--warmup", type=int, default=10, help="torch's untimed calls before timing (default 10)")
    p.add_argument("--no-compile", action="store_true", help="time torch eager, not torch.compile")
    p.add_argument("--kiln-only", action="store_true", help="time kiln alone (needs no torch)")
    p.add_argument("--no-tune", action="store_true", help="kiln bench --no-tune: heuristic launch parameters")
    p.add_argument("--cost-device", default="auto",
                   help="kiln bench --device: the cost model's spec for plans and predictions (default auto: this "
                        "GPU's queried SMs, L2 and bandwidth; h100 or h200 name a fixed spec)")
    p.add_argument("--check", action="store_true", help="also `kiln run GRAPH --check` per workload")
    p.add_argument("--seed", type=int, default=0, help="seed of torch's random inputs")
    p.add_argument("--json", type=pathlib.Path, help="write every figure, the device and the versions here")
    args = p.parse_args(argv)
    args.only = [n for n in args.only.split(",") if n]
    args.classes = [c for c in args.classes.split(",") if c]
    unknown = [n for n in args.only if n not in {w.name for w in WORKLOADS}]
    if unknown:
        p.error(f"unknown workload(s) {', '.join(unknown)} (--list shows them)")
    unknown = [c for c in args.classes if c not in CLASSES]
    if unknown:
        p.error(f"unknown class(es) {', '.join(unknown)}; the classes are {', '.join(CLASSES)}")
    if args.reps < 1 or args.warmup < 0:
        p.error("--reps must be >= 1 and --warmup >= 0")
    if args.kiln_only and not args.kiln:
        p.error("--kiln-only needs --kiln PATH")
    if args.check and not args.kiln:
        p.error("--check needs --kiln PATH")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.report:
        print_report(merge(args.report))
        return 0
    workloads = select(args)
    if args.list or args.write_graphs:
        if args.list:
            print_list(workloads)
        if args.write_graphs:
            write_graphs(workloads, args.write_graphs)
        return 0
    try:
        result = run(args, workloads)
    except SetupError as e:
        log(f"error: {e}")
        return 2
    result["summary"] = summary_line(result["workloads"])
    result["slow_regions"] = slow_regions(result["workloads"])
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(peers.json_safe(result), indent=1, default=str) + "\n")
        log(f"wrote {args.json}")
    print_report(result)
    return 1 if any(problems(rec) for rec in result["workloads"]) else 0


if __name__ == "__main__":
    sys.exit(main())
