#!/usr/bin/env python3
"""kiln's own compile time on a model-sized graph, no GPU needed.

Writes an ONNX Llama-style MLP-and-projections block with random bf16 weights at a chosen
width (the default, hidden 4096, KV 1024, FFN 14336, is 218M parameters: a 436 MB file, the
size of bench/models.py's llama_gqa export), runs `kiln compile` on it and reports the
compile's own time (what `kiln compile` prints), the wall time, and the artifact's size
against the weights'. What it catches is host-side work that grows with the constants: the
imported graph printed with its data (140 s and a 2.35 GB artifact for the default size before
large constants printed as base64), weights copied more often than needed.

  python3 bench/compile_time.py                      # the default size
  python3 bench/compile_time.py --hidden 2048 --ffn 7168 --kv 512 --tokens 2048
Needs numpy and onnx (scripts/setup installs both) and a built `kiln` (--kiln, default
build/tools/kiln).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper


def bf16(rng, name, shape):
    a = rng.standard_normal(shape, dtype=np.float32) * 0.02
    t = TensorProto(name=name, data_type=TensorProto.BFLOAT16, dims=shape)
    t.raw_data = (a.view(np.uint32) >> 16).astype(np.uint16).tobytes()
    return t


def block(hidden, kv, ffn, tokens):
    """q, k, v projections (k and v concatenated as an output), the output projection with its
    residual, and a SwiGLU MLP with its residual: 7 weight matrices."""
    rng = np.random.default_rng(0)
    weights = [bf16(rng, "Wq", [hidden, hidden]), bf16(rng, "Wk", [hidden, kv]), bf16(rng, "Wv", [hidden, kv]),
               bf16(rng, "Wo", [hidden, hidden]), bf16(rng, "Wg", [hidden, ffn]), bf16(rng, "Wu", [hidden, ffn]),
               bf16(rng, "Wd", [ffn, hidden])]
    n = helper.make_node
    nodes = [n("MatMul", ["x", "Wq"], ["q"]), n("MatMul", ["x", "Wk"], ["k"]), n("MatMul", ["x", "Wv"], ["v"]),
             n("Concat", ["k", "v"], ["kv"], axis=-1), n("MatMul", ["q", "Wo"], ["o0"]), n("Add", ["o0", "x"], ["o"]),
             n("MatMul", ["o", "Wg"], ["g"]), n("MatMul", ["o", "Wu"], ["u"]), n("Sigmoid", ["g"], ["sg"]),
             n("Mul", ["g", "sg"], ["silu"]), n("Mul", ["silu", "u"], ["h"]), n("MatMul", ["h", "Wd"], ["d"]),
             n("Add", ["d", "o"], ["y"])]
    graph = helper.make_graph(
        nodes, "compile_time_block", [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [1, tokens, hidden])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [1, tokens, hidden]),
         helper.make_tensor_value_info("kv", TensorProto.BFLOAT16, [1, tokens, 2 * kv])], initializer=weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), sum(len(w.raw_data) for w in weights)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--kv", type=int, default=1024)
    ap.add_argument("--ffn", type=int, default=14336)
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--kiln", default=os.path.join(os.path.dirname(__file__), "..", "build", "tools", "kiln"))
    ap.add_argument("--workdir", help="where the model and artifact go (default: a temporary directory, removed)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or tmp
        os.makedirs(work, exist_ok=True)
        model, weight_bytes = block(args.hidden, args.kv, args.ffn, args.tokens)
        path, artifact = os.path.join(work, "block.onnx"), os.path.join(work, "block.kiln")
        onnx.save(model, path)
        start = time.monotonic()
        run = subprocess.run([args.kiln, "compile", path, "-o", artifact], capture_output=True, text=True)
        wall = time.monotonic() - start
        if run.returncode != 0:
            sys.exit(f"kiln compile failed ({run.returncode}): {run.stderr.strip()[-2000:]}")
        own = re.search(r" in (\d+) ms", run.stdout + run.stderr)
        size = os.path.getsize(artifact)
        print(f"hidden {args.hidden}, kv {args.kv}, ffn {args.ffn}, {args.tokens} tokens: weights {weight_bytes / 1e6:.0f} MB "
              f"(onnx {os.path.getsize(path) / 1e6:.0f} MB); kiln compile {own.group(1) if own else '?'} ms "
              f"(wall {wall:.1f} s with loading and writing); artifact {size / 1e6:.0f} MB = "
              f"{size / weight_bytes:.2f} x the weights")


if __name__ == "__main__":
    main()
