#!/usr/bin/env python3
"""Writes the example graphs in kiln's JSON format (docs/graph-format.md).

Every example is written twice: examples/NAME.json at the size later issues are measured
on, and examples/small/NAME.json, the same graph with 7 rows and small hidden sizes, which
the unit tests evaluate on the reference interpreter. Weights are graph inputs, so the files
stay small; the only initializer is the eps scalar of layernorm_decomposed.

    scripts/make-examples.py           # (re)write examples/*.json and examples/small/*.json
    scripts/make-examples.py --check   # exit 1 if the committed files differ from this script

Python 3.11, standard library only.
"""

import argparse
import difflib
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


class GraphBuilder:
    """Collects inputs, initializers, nodes and outputs; names are checked for uniqueness."""

    def __init__(self, name):
        self.name = name
        self.inputs, self.initializers, self.nodes, self.outputs = [], [], [], []
        self._names = set()

    def _claim(self, name):
        if name in self._names:
            raise ValueError(f"{self.name}: duplicate name {name}")
        self._names.add(name)
        return name

    def input(self, name, dtype, shape):
        self.inputs.append({"name": self._claim(name), "dtype": dtype, "shape": list(shape)})
        return name

    def initializer(self, name, dtype, shape, data):
        self.initializers.append(
            {"name": self._claim(name), "dtype": dtype, "shape": list(shape), "data": list(data)})
        return name

    def node(self, name, op, inputs, **attrs):
        for i in inputs:
            if i not in self._names:
                raise ValueError(f"{self.name}: node {name} uses unknown {i}")
        entry = {"name": self._claim(name), "op": op, "inputs": list(inputs)}
        if attrs:
            entry["attrs"] = attrs
        self.nodes.append(entry)
        return name

    def output(self, node, name=None):
        self.outputs.append(node if name is None or name == node else {"name": name, "node": node})

    def to_json(self):
        """One entry per line: diffs stay readable and the files short."""
        def block(key, items):
            if not items:
                return f'  "{key}": []'
            rows = ",\n".join("    " + json.dumps(item, separators=(", ", ": ")) for item in items)
            return f'  "{key}": [\n{rows}\n  ]'
        parts = ['  "kiln_graph": 1', f'  "name": {json.dumps(self.name)}',
                 block("inputs", self.inputs)]
        if self.initializers:
            parts.append(block("initializers", self.initializers))
        parts += [block("nodes", self.nodes), block("outputs", self.outputs)]
        return "{\n" + ",\n".join(parts) + "\n}\n"


# Sizes: (full, small). Small keeps 7 rows (fewer than a warp, odd) and widths near 40.
SIZES = {
    "rows": (16384, 7),
    "width_8k": (8192, 40),
    "width_4k": (4096, 40),
    "swiglu_rows": (8192, 7),
    "swiglu_width": (14336, 40),
    "xent_rows": (4096, 7),
    "vocab": (128256, 40),
    # transformer_block: tokens, hidden, heads, head dim, MLP width
    "tokens": (2048, 7),
    "hidden": (1024, 40),
    "heads": (16, 4),
    "head_dim": (64, 10),
    "mlp": (4096, 160),
}


def size(key, small):
    return SIZES[key][1 if small else 0]


def bias_gelu(small):
    g = GraphBuilder("bias_gelu")
    r, c = size("rows", small), size("width_8k", small)
    g.input("x", "bf16", [r, c])
    g.input("b", "bf16", [c])
    g.node("t", "add", ["x", "b"])
    g.node("y", "gelu_tanh", ["t"])
    g.output("y")
    return g


def swiglu(small):
    g = GraphBuilder("swiglu")
    shape = [size("swiglu_rows", small), size("swiglu_width", small)]
    g.input("a", "bf16", shape)
    g.input("g", "bf16", shape)
    g.node("s", "silu", ["a"])
    g.node("y", "mul", ["s", "g"])
    g.output("y")
    return g


def add_rmsnorm(small):
    g = GraphBuilder("add_rmsnorm")
    r, c = size("rows", small), size("width_4k", small)
    g.input("x", "bf16", [r, c])
    g.input("r", "bf16", [r, c])
    g.input("w", "bf16", [c])
    g.node("h", "add", ["x", "r"])
    g.node("y", "rms_norm", ["h", "w"], axis=-1, eps=1e-6)
    g.output("y")
    g.output("h")
    return g


def layernorm(small):
    g = GraphBuilder("layernorm")
    r, c = size("rows", small), size("width_4k", small)
    g.input("x", "bf16", [r, c])
    g.input("w", "bf16", [c])
    g.input("b", "bf16", [c])
    g.node("y", "layer_norm", ["x", "w", "b"], axis=-1, eps=1e-5)
    g.output("y")
    return g


def layernorm_decomposed(small):
    """layernorm as ONNX exporters write it when they do not emit LayerNormalization."""
    g = GraphBuilder("layernorm_decomposed")
    r, c = size("rows", small), size("width_4k", small)
    g.input("x", "bf16", [r, c])
    g.input("w", "bf16", [c])
    g.input("b", "bf16", [c])
    g.initializer("eps", "bf16", [], [1e-5])
    g.node("mean", "reduce_mean", ["x"], axes=[-1], keep_dims=True)
    g.node("d", "sub", ["x", "mean"])
    g.node("d2", "mul", ["d", "d"])
    g.node("var", "reduce_mean", ["d2"], axes=[-1], keep_dims=True)
    g.node("var_eps", "add", ["var", "eps"])
    g.node("inv_std", "rsqrt", ["var_eps"])
    g.node("n", "mul", ["d", "inv_std"])
    g.node("nw", "mul", ["n", "w"])
    g.node("y", "add", ["nw", "b"])
    g.output("y")
    return g


def softmax(small):
    g = GraphBuilder("softmax")
    g.input("x", "bf16", [size("rows", small), size("width_8k", small)])
    g.node("y", "softmax", ["x"], axis=-1)
    g.output("y")
    return g


def dropout_add_layernorm(small, p=0.1, name="dropout_add_layernorm"):
    g = GraphBuilder(name)
    r, c = size("rows", small), size("width_4k", small)
    g.input("x", "bf16", [r, c])
    g.input("r", "bf16", [r, c])
    g.input("w", "bf16", [c])
    g.input("b", "bf16", [c])
    g.node("xd", "dropout", ["x"], p=p, seed=1234, offset=0)
    g.node("h", "add", ["xd", "r"])
    g.node("y", "layer_norm", ["h", "w", "b"], axis=-1, eps=1e-5)
    g.output("y")
    g.output("h")
    return g


def dropout_add_layernorm_p0(small):
    """dropout_add_layernorm with p = 0: the dropout is the identity (the floor without RNG)."""
    return dropout_add_layernorm(small, p=0.0, name="dropout_add_layernorm_p0")


def dropout_add(small, p=0.1, name="dropout_add"):
    """h = dropout(x) + r: the plain pointwise dropout of issue 5's measurements."""
    g = GraphBuilder(name)
    shape = [size("rows", small), size("width_4k", small)]
    g.input("x", "bf16", shape)
    g.input("r", "bf16", shape)
    g.node("xd", "dropout", ["x"], p=p, seed=1234, offset=0)
    g.node("h", "add", ["xd", "r"])
    g.output("h")
    return g


def dropout_add_p0(small):
    """dropout_add with p = 0."""
    return dropout_add(small, p=0.0, name="dropout_add_p0")


def softmax_xent(small):
    g = GraphBuilder("softmax_xent")
    r, v = size("xent_rows", small), size("vocab", small)
    g.input("logits", "bf16", [r, v])
    g.input("targets", "i64", [r])
    g.node("loss", "cross_entropy", ["logits", "targets"], reduction="mean", ignore_index=-100)
    g.output("loss")
    return g


def transformer_block(small):
    """GPT-style pre-LN block: x + attn(LN1(x)), then h + MLP(LN2(h)); causal, no dropout."""
    g = GraphBuilder("transformer_block")
    t, h = size("tokens", small), size("hidden", small)
    nh, d, f = size("heads", small), size("head_dim", small), size("mlp", small)
    assert nh * d == h
    g.input("x", "bf16", [t, h])
    for name, shape in [("ln1_w", [h]), ("ln1_b", [h]), ("w_qkv", [h, 3 * h]), ("b_qkv", [3 * h]),
                        ("w_o", [h, h]), ("b_o", [h]), ("ln2_w", [h]), ("ln2_b", [h]),
                        ("w_1", [h, f]), ("b_1", [f]), ("w_2", [f, h]), ("b_2", [h])]:
        g.input(name, "bf16", shape)
    # Attention.
    g.node("ln1", "layer_norm", ["x", "ln1_w", "ln1_b"], axis=-1, eps=1e-5)
    g.node("qkv_mm", "matmul", ["ln1", "w_qkv"])
    g.node("qkv", "add", ["qkv_mm", "b_qkv"])
    for i, part in enumerate("qkv"):
        g.node(f"{part}_2d", "slice", ["qkv"], starts=[0, i * h], ends=[t, (i + 1) * h])
        g.node(f"{part}_4d", "reshape", [f"{part}_2d"], shape=[1, t, nh, d])
        g.node(part, "transpose", [f"{part}_4d"], perm=[0, 2, 1, 3])  # [1, heads, tokens, dim]
    g.node("attn", "attention", ["q", "k", "v"], causal=True)  # scale 1/sqrt(head dim)
    g.node("attn_t", "transpose", ["attn"], perm=[0, 2, 1, 3])
    g.node("attn_2d", "reshape", ["attn_t"], shape=[t, h])
    g.node("proj_mm", "matmul", ["attn_2d", "w_o"])
    g.node("proj", "add", ["proj_mm", "b_o"])
    g.node("h1", "add", ["x", "proj"])
    # MLP.
    g.node("ln2", "layer_norm", ["h1", "ln2_w", "ln2_b"], axis=-1, eps=1e-5)
    g.node("fc1_mm", "matmul", ["ln2", "w_1"])
    g.node("fc1", "add", ["fc1_mm", "b_1"])
    g.node("act", "gelu_tanh", ["fc1"])
    g.node("fc2_mm", "matmul", ["act", "w_2"])
    g.node("fc2", "add", ["fc2_mm", "b_2"])
    g.node("y", "add", ["h1", "fc2"])
    g.output("y")
    return g


EXAMPLES = [bias_gelu, swiglu, add_rmsnorm, layernorm, layernorm_decomposed, softmax,
            dropout_add_layernorm, dropout_add_layernorm_p0, dropout_add, dropout_add_p0, softmax_xent,
            transformer_block]


def render():
    """{relative path: text} for every file this script owns."""
    files = {}
    for make in EXAMPLES:
        files[f"examples/{make.__name__}.json"] = make(small=False).to_json()
        files[f"examples/small/{make.__name__}.json"] = make(small=True).to_json()
    return files


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the files on disk instead of writing them")
    parser.add_argument("--root", type=pathlib.Path, default=ROOT,
                        help="repository root (default: the one holding this script)")
    args = parser.parse_args()
    stale = 0
    for rel, text in render().items():
        path = args.root / rel
        if args.check:
            old = path.read_text() if path.exists() else ""
            if old != text:
                stale += 1
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), text.splitlines(True), f"{rel} (on disk)",
                    f"{rel} (scripts/make-examples.py)"))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if args.check and stale:
        print(f"{stale} example file(s) out of date: run scripts/make-examples.py", file=sys.stderr)
        return 1
    if not args.check:
        print(f"wrote {len(EXAMPLES)} examples and their small versions under {args.root / 'examples'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
