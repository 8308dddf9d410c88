"""Session 29 run 9: where kiln's norm + Linear pair loses 0.4-0.6 us to torch.compile's on
1024-wide weights. The norm alone (rms_norm and layer_norm of 1 and 16 rows of 1024 bf16):
kiln's executable, torch eager and torch.compile, each 20 calls in one CUDA graph (median replay
of 50 per call), and kiln's executable of a graph that only copies its input (the cost of an
executable's call in the caller's graph)."""
import json, os, statistics, sys
import torch
import torch.nn.functional as F
import kiln


def per_call(fn, per_graph=20, reps=50):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(per_graph):
            fn()
    ts = []
    for r in range(reps + 5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); b.synchronize()
        if r >= 5:
            ts.append(a.elapsed_time(b) * 1000 / per_graph)
    return statistics.median(ts)


def graph(norm, m, k):
    inputs = [{"name": "x", "dtype": "bf16", "shape": [m, k]}, {"name": "w", "dtype": "bf16", "shape": [k]}]
    ni = ["x", "w"]
    if norm == "layer":
        inputs.append({"name": "b", "dtype": "bf16", "shape": [k]}); ni.append("b")
    op = "rms_norm" if norm == "rms" else "layer_norm"
    return {"kiln_graph": 1, "name": f"{norm}_only", "inputs": inputs,
            "nodes": [{"name": "y", "op": op, "inputs": ni, "attrs": {"axis": -1, "eps": 1e-5}}], "outputs": ["y"]}


k = 1024
for norm in ["rms", "layer"]:
    for m in [1, 16]:
        x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        w = torch.randn(k, device="cuda").to(torch.bfloat16)
        b = torch.randn(k, device="cuda").to(torch.bfloat16)
        ins = (x, w, b) if norm == "layer" else (x, w)
        exe = kiln.compile(graph(norm, m, k), tune=False)
        y = torch.empty(m, k, device="cuda", dtype=torch.bfloat16)
        eager = (lambda: F.layer_norm(x, (k,), w, b, 1e-5)) if norm == "layer" else (lambda: F.rms_norm(x, (k,), w, 1e-5))
        comp = torch.compile(eager)
        t_kiln = per_call(lambda: exe(*ins, out=(y,)))
        t_eager = per_call(eager)
        t_comp = per_call(comp)
        print(f"{norm} {m:2d} x {k}: kiln {t_kiln:5.2f} us, eager {t_eager:5.2f}, compile {t_comp:5.2f}", flush=True)
copy = {"kiln_graph": 1, "name": "copy_only", "inputs": [{"name": "x", "dtype": "bf16", "shape": [1, k]}],
        "nodes": [{"name": "y", "op": "mul", "inputs": ["x", "x"]}], "outputs": ["y"]}
x = torch.randn(1, k, device="cuda").to(torch.bfloat16)
y = torch.empty_like(x)
exe = kiln.compile(copy, tune=False)
print(f"kiln one-kernel executable (y = x * x, 1 x {k}): {per_call(lambda: exe(x, out=(y,))):5.2f} us; "
      f"torch.mul into out: {per_call(lambda: torch.mul(x, x, out=y)):5.2f} us")
