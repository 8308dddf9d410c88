#!/usr/bin/env python3
"""kiln's tiled attention against torch's scaled_dot_product_attention, side by side.

For each configuration (issue 11's benchmark: 32k tokens, 32 heads, D = 128 and 64, S in
{1024, 4096, 8192, 16384}, causal and not; decoding S = 1 against T = 8192 and 65536, B = 32,
grouped-query heads 8 to 1; and f32 at 16k and 4k tokens, D 64 and 128, which kiln runs as
3xTF32 products and SDPA on its memory-efficient backend) this writes a kiln JSON graph (attention over bf16 q, k, v; for
GQA the K/V head expansion written as exporters do, reshape -> broadcast_to -> reshape, which
kiln folds into its indexing), times it with `kiln bench` (a separate process: CUDA events,
median, its own random inputs), and times F.scaled_dot_product_attention in this process with
the default backend (cuDNN on the H100), the flash backend and cuDNN explicitly (f32: the
default, memory-efficient and math backends): CUDA events
around each call, median of --reps after warm-up, random inputs. TFLOP/s count 4 B H S T D
(halved when causal, the FlashAttention convention). --check also runs one graph through
`kiln run --inputs/--outputs` on torch's inputs and compares with SDPA in float32.
--dropout P drops the probabilities on both sides (kiln: the attention's `dropout` attribute,
its Philox mask regenerated per tile; SDPA: dropout_p = P, its backends' own RNG), as a
training step's forward does; the masks differ, the work is the same.

  python3 bench/attention.py --kiln build/tools/kiln [--only NAME,...] [--json FILE] [--check]
  python3 bench/attention.py --list          (no torch needed)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CONFIGS = []  # name, B, Hq, Hkv, S, T, D, causal, dtype
for d in (128, 64):
    for s in (1024, 4096, 8192, 16384):
        for causal in (False, True):
            CONFIGS.append((f"S{s}_D{d}{'_causal' if causal else ''}", 32768 // s, 32, 32, s, s, d, causal, "bf16"))
for t in (8192, 65536):
    CONFIGS.append((f"decode_T{t}_gqa8", 32, 32, 4, 1, t, 128, False, "bf16"))
for d in (64, 128):
    for s in (1024, 4096):
        for causal in (False, True):
            CONFIGS.append((f"f32_S{s}_D{d}{'_causal' if causal else ''}", 16384 // s, 16, 16, s, s, d, causal, "f32"))
CONFIGS.append(("f32_decode_T8192_gqa4", 16, 16, 4, 1, 8192, 64, False, "f32"))
# Grouped-query prefill (Llama's 32 query heads on 8 K/V heads), and an odd shape no kernel was tuned on.
for causal in (False, True):
    CONFIGS.append((f"gqa8_S4096_D128{'_causal' if causal else ''}", 2, 32, 8, 4096, 4096, 128, causal, "bf16"))
CONFIGS.append(("gqa4_S2000_D96_causal", 2, 16, 4, 2000, 2000, 96, True, "bf16"))
TORCH_DTYPE = {"bf16": "bfloat16", "f32": "float32"}


def flops(b, hq, s, t, d, causal):
    f = 4.0 * b * hq * s * t * d
    return f / 2 if causal else f


def graph(name, b, hq, hkv, s, t, d, causal, dtype="bf16", dropout=0.0):
    """The kiln JSON graph of one configuration (docs/graph-format.md)."""
    inputs = [{"name": "q", "dtype": dtype, "shape": [b, hq, s, d]},
              {"name": "k", "dtype": dtype, "shape": [b, hkv, t, d]},
              {"name": "v", "dtype": dtype, "shape": [b, hkv, t, d]}]
    nodes, k, v = [], "k", "v"
    if hkv != hq:
        g = hq // hkv
        for x in ("k", "v"):
            nodes += [{"name": f"{x}5", "op": "reshape", "inputs": [x], "attrs": {"shape": [b, hkv, 1, t, d]}},
                      {"name": f"{x}e", "op": "broadcast_to", "inputs": [f"{x}5"], "attrs": {"shape": [b, hkv, g, t, d]}},
                      {"name": f"{x}x", "op": "reshape", "inputs": [f"{x}e"], "attrs": {"shape": [b, hq, t, d]}}]
        k, v = "kx", "vx"
    attrs = {"causal": causal}
    if dropout:
        attrs.update({"dropout": dropout, "seed": 1})
    nodes.append({"name": "y", "op": "attention", "inputs": ["q", k, v], "attrs": attrs})
    return {"kiln_graph": 1, "name": name, "inputs": inputs, "nodes": nodes, "outputs": ["y"]}


def run_kiln(kiln, path, reps):
    out = path + ".bench.json"
    r = subprocess.run([kiln, "bench", path, "--reps", str(reps), "--json", out], capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout)[-800:]}
    with open(out) as f:
        return json.load(f)


def time_torch(fn, reps, warmup=5):
    import torch
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(times)


def backends(dtype):
    from torch.nn.attention import SDPBackend
    if dtype == "f32":  # flash and cuDNN take 16-bit inputs only
        return (("default", None), ("efficient", SDPBackend.EFFICIENT_ATTENTION), ("math", SDPBackend.MATH))
    return (("default", None), ("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION))


def sdpa_times(b, hq, hkv, s, t, d, causal, dtype, reps, dropout=0.0):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel
    tdtype = getattr(torch, TORCH_DTYPE[dtype])
    q = torch.randn(b, hq, s, d, device="cuda", dtype=tdtype)
    k = torch.randn(b, hkv, t, d, device="cuda", dtype=tdtype)
    v = torch.randn(b, hkv, t, d, device="cuda", dtype=tdtype)
    gqa = hkv != hq
    call = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa, dropout_p=dropout)
    out = {}
    for label, backend in backends(dtype):
        try:
            if backend is None:
                out[label] = time_torch(call, reps)
            else:
                with sdpa_kernel([backend]):
                    out[label] = time_torch(call, reps)
        except Exception as e:  # a backend that refuses the shape (GQA, decode) is reported, not fatal
            out[label] = None
            out[label + "_error"] = str(e).split("\n")[0][:200]
    return out


def check(kiln, workdir):
    """One graph through `kiln run` on torch's inputs, against SDPA in float32."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    name, b, hq, hkv, s, t, d, causal, dtype = ("check_S1000_D128_causal", 2, 8, 8, 1000, 1000, 128, True, "bf16")
    path = os.path.join(workdir, name + ".json")
    with open(path, "w") as f:
        json.dump(graph(name, b, hq, hkv, s, t, d, causal), f)
    ins, outs = os.path.join(workdir, "in"), os.path.join(workdir, "out")
    os.makedirs(ins, exist_ok=True)
    tensors = {x: torch.randn(b, hq, s, d, device="cuda", dtype=torch.bfloat16) * (2.0 if x == "q" else 1.0)
               for x in ("q", "k", "v")}
    for x, tensor in tensors.items():
        np.save(os.path.join(ins, x + ".npy"), tensor.cpu().view(torch.uint16).numpy())
    r = subprocess.run([kiln, "run", path, "--inputs", ins, "--outputs", outs], capture_output=True, text=True)
    if r.returncode != 0:
        return {"ok": False, "error": r.stderr[-800:]}
    got = torch.from_numpy(np.load(os.path.join(outs, "y.npy"))).view(torch.bfloat16).float()
    want = F.scaled_dot_product_attention(*(tensors[x].float() for x in ("q", "k", "v")), is_causal=causal).cpu()
    rel = ((got - want).norm() / want.norm()).item()
    return {"ok": rel < 1e-2, "rel_l2": rel, "max_abs": (got - want).abs().max().item(), "graph": name}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kiln", default="build/tools/kiln")
    ap.add_argument("--only", default="")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json", default="")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--dropout", type=float, default=0.0, help="drop probability on the probabilities (both sides)")
    args = ap.parse_args()
    configs = [c for c in CONFIGS if not args.only or c[0] in args.only.split(",")]
    if args.list:
        for c in configs:
            print(f"{c[0]:<24} B {c[1]:>3} Hq {c[2]} Hkv {c[3]} S {c[4]:>6} T {c[5]:>6} D {c[6]} "
                  f"{'causal' if c[7] else 'full'} {c[8]}  {flops(c[1], c[2], c[4], c[5], c[6], c[7]) / 1e12:.2f} TFLOP")
        return 0
    rows, workdir = [], tempfile.mkdtemp(prefix="kiln-attn-")
    result = {"configs": rows}
    if args.check:
        result["check"] = check(args.kiln, workdir)
        print("check:", result["check"], flush=True)
    for name, b, hq, hkv, s, t, d, causal, dtype in configs:
        path = os.path.join(workdir, name + ".json")
        with open(path, "w") as f:
            json.dump(graph(name, b, hq, hkv, s, t, d, causal, dtype, args.dropout), f)
        row = {"name": name, "B": b, "Hq": hq, "Hkv": hkv, "S": s, "T": t, "D": d, "causal": causal, "dtype": dtype,
               "tflop": flops(b, hq, s, t, d, causal) / 1e12, "dropout": args.dropout}
        row["kiln"] = run_kiln(args.kiln, path, args.reps)
        if not args.no_torch:
            row["sdpa"] = sdpa_times(b, hq, hkv, s, t, d, causal, dtype, args.reps, args.dropout)
        rows.append(row)
        k = row["kiln"]
        kus = k.get("graph_us")
        line = f"{name:<22} kiln {kus if kus else float('nan'):9.1f} us {row['tflop'] / (kus or float('nan')) * 1e6:6.0f} TF/s"
        for label in ("default", "flash", "cudnn", "efficient", "math"):
            us = row.get("sdpa", {}).get(label)
            if us:
                line += f" | {label} {us:8.1f} us {row['tflop'] / us * 1e6:5.0f} TF/s x{us / kus if kus else 0:.2f}"
        if "error" in k:
            line += " | kiln error: " + k["error"].replace("\n", " ")[:300]
        print(line, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
