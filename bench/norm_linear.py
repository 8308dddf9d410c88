#!/usr/bin/env python3
"""Norm + linear (issue 16): kiln's norm_matmul fold against kiln unfused, torch eager and
torch.compile, side by side in one process.

For RMSNorm -> Linear and LayerNorm -> Linear, bf16, K = 4096 -> N in {4096, 14336}, at
M in {1, 16, 64} (decoding) and 4096 (prefill), it times:
  * kiln:          the graph norm(x, w) @ W through kiln.compile (tuned): the cost model
                   decides whether the norm folds into the matmul (the ledger's region kinds
                   are printed: norm_matmul, or row_reduction + matmul and why);
  * kiln folded:   the same graph compiled with KILN_FORCE_FUSE=norm-matmul, so the fold runs
                   wherever it is legal (the time the cost model weighs where it declines it);
  * kiln unfused:  the same as two kiln executables, norm(x, w) -> y then y @ W (kiln's norm
                   kernel, then cuBLASLt), y written and read back;
  * torch eager and torch.compile of F.rms_norm / F.layer_norm then x @ W.
Time: 20 calls captured in one CUDA graph, CUDA events around its replay, median of --reps
replays after warm-up (time_cuda says why), random inputs (x with a
per-row offset, so LayerNorm's mean is large). floor_us = max(compulsory bytes / the copy
bandwidth, 2 M N K / the bf16 matmul rate), both measured in this run. Check: every output
against a float64 reference of the same bf16 inputs, max |error| / max |reference|.

  python3 bench/norm_linear.py [--only rms,layer] [--m 1,16,64,4096] [--reps 100] [--json FILE]
"""
import argparse
import json
import os
import statistics
import sys


def graph(norm, m, k, n):
    inputs = [{"name": "x", "dtype": "bf16", "shape": [m, k]}, {"name": "w", "dtype": "bf16", "shape": [k]}]
    norm_inputs = ["x", "w"]
    if norm == "layer":
        inputs.append({"name": "b", "dtype": "bf16", "shape": [k]})
        norm_inputs.append("b")
    op = "rms_norm" if norm == "rms" else "layer_norm"
    node = {"name": "y", "op": op, "inputs": norm_inputs, "attrs": {"axis": -1, "eps": 1e-5}}
    fused = {"kiln_graph": 1, "name": f"{norm}_linear", "inputs": inputs + [{"name": "W", "dtype": "bf16", "shape": [k, n]}],
             "nodes": [node, {"name": "z", "op": "matmul", "inputs": ["y", "W"]}], "outputs": ["z"]}
    first = {"kiln_graph": 1, "name": f"{norm}_only", "inputs": inputs, "nodes": [node], "outputs": ["y"]}
    second = {"kiln_graph": 1, "name": "linear_only",
              "inputs": [{"name": "y", "dtype": "bf16", "shape": [m, k]}, {"name": "W", "dtype": "bf16", "shape": [k, n]}],
              "nodes": [{"name": "z", "op": "matmul", "inputs": ["y", "W"]}], "outputs": ["z"]}
    return fused, first, second


def time_cuda(torch, fn, reps, warmup=10, per_graph=20):
    """Median us per call. The calls are captured in a CUDA graph of `per_graph` calls and the
    graph is timed (a decoding step's kernels take less than the Python call that launches
    them: timed one call at a time, every peer would measure its host overhead); where capture
    fails, back-to-back calls between two events."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    run = None
    try:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(per_graph):
                fn()
        run = g.replay
    except Exception as e:  # noqa: BLE001 - any capture failure falls back
        print(f"  (no CUDA graph capture: {type(e).__name__}: {str(e)[:80]}; timing back-to-back calls)")
        torch.cuda.synchronize()

        def run():
            for _ in range(per_graph):
                fn()
    run()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0 / per_graph)
    return statistics.median(times)


def kinds(exe):
    regions = exe.ledger().get("fusion", {}).get("regions", [])
    return "+".join(r.get("kind", "?") for r in regions)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="rms,layer")
    ap.add_argument("--m", default="1,16,64,4096")
    ap.add_argument("--n", default="4096,14336")
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--no-tune", action="store_true")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    import kiln

    dev = "cuda"
    torch.manual_seed(0)
    src = torch.randn(256 << 20, device=dev)
    dst = torch.empty_like(src)
    copy_us = time_cuda(torch, lambda: dst.copy_(src), 10, per_graph=2)
    copy_bw = 2 * src.numel() * 4 / copy_us  # bytes per us
    a8 = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    c8 = torch.empty_like(a8)
    mm_us = time_cuda(torch, lambda: torch.matmul(a8, a8, out=c8), 10, per_graph=2)
    mm_rate = 2 * 8192 ** 3 / mm_us
    del src, dst, a8
    print(f"copy {copy_bw / 1e3:.0f} GB/s, bf16 matmul {mm_rate / 1e6:.0f} TFLOP/s ({torch.cuda.get_device_name()})")
    print(f"{'case':<26} {'kiln regions':<26} {'floor':>7} {'kiln':>8} {'folded':>8} {'unfused':>8} {'eager':>8}"
          f" {'compile':>8} {'kiln/floor':>10} {'vs unf':>7} {'vs comp':>7} {'err':>8} {'err fold':>8}")
    rows = []
    k = args.k
    for norm in args.only.split(","):
        for n in [int(v) for v in args.n.split(",")]:
            for m in [int(v) for v in args.m.split(",")]:
                fused, first, second = graph(norm, m, k, n)
                x = (torch.randn(m, k, device=dev) + 4 * torch.randn(m, 1, device=dev)).to(torch.bfloat16)
                w = (1 + 0.1 * torch.randn(k, device=dev)).to(torch.bfloat16)
                b = (0.1 * torch.randn(k, device=dev)).to(torch.bfloat16)
                W = (torch.randn(k, n, device=dev) / k ** 0.5).to(torch.bfloat16)
                ins = (x, w, b) if norm == "layer" else (x, w)
                exe = kiln.compile(fused, tune=not args.no_tune)
                os.environ["KILN_FORCE_FUSE"] = "norm-matmul"
                try:
                    forced = kiln.compile(fused, tune=not args.no_tune)
                finally:
                    del os.environ["KILN_FORCE_FUSE"]
                exe1 = kiln.compile(first, tune=not args.no_tune)
                exe2 = kiln.compile(second, tune=not args.no_tune)
                z = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
                y = torch.empty(m, k, device=dev, dtype=torch.bfloat16)
                z2 = torch.empty_like(z)
                z3 = torch.empty_like(z)

                def run_fused():
                    exe(*ins, W, out=(z,))

                def run_forced():
                    forced(*ins, W, out=(z3,))

                def run_unfused():
                    exe1(*ins, out=(y,))
                    exe2(y, W, out=(z2,))

                if norm == "rms":
                    def eager():
                        return F.rms_norm(x, (k,), w, 1e-5) @ W
                else:
                    def eager():
                        return F.layer_norm(x, (k,), w, b, 1e-5) @ W
                t_kiln = time_cuda(torch, run_fused, args.reps)
                t_forced = time_cuda(torch, run_forced, args.reps)
                t_unf = time_cuda(torch, run_unfused, args.reps)
                t_eager = time_cuda(torch, eager, args.reps)
                t_comp = float("nan")
                if not args.no_compile:
                    comp = torch.compile(eager)
                    t_comp = time_cuda(torch, comp, args.reps)
                # float64 reference of the same bf16 inputs
                xd = x.double()
                if norm == "rms":
                    yd = xd * torch.rsqrt((xd * xd).mean(-1, keepdim=True) + 1e-5) * w.double()
                else:
                    yd = F.layer_norm(xd, (k,), w.double(), b.double(), 1e-5)
                ref = yd @ W.double()
                run_fused()
                run_forced()
                run_unfused()
                torch.cuda.synchronize()
                scale = ref.abs().max().item()
                err = (z.double() - ref).abs().max().item() / scale
                err_forced = (z3.double() - ref).abs().max().item() / scale
                err_unf = (z2.double() - ref).abs().max().item() / scale
                err_eager = (eager().double() - ref).abs().max().item() / scale
                nbytes = 2 * (m * k + k + k * n + m * n) + (2 * k if norm == "layer" else 0)
                floor = max(nbytes / copy_bw, 2 * m * n * k / mm_rate)
                case = f"{norm} M{m} {k}->{n}"
                kd = kinds(exe)
                fold_kinds = kinds(forced)
                print(f"{case:<26} {kd:<26} {floor:7.1f} {t_kiln:8.1f} {t_forced:8.1f} {t_unf:8.1f} {t_eager:8.1f}"
                      f" {t_comp:8.1f} {floor / t_kiln:10.2f} {t_unf / t_kiln:7.2f} {t_comp / t_kiln:7.2f} {err:8.1e}"
                      f" {err_forced:8.1e}" + ("" if "norm_matmul" in fold_kinds else f" (not foldable: {fold_kinds})"),
                      flush=True)
                rows.append(dict(case=case, norm=norm, m=m, k=k, n=n, kiln_regions=kd, floor_us=floor, kiln_us=t_kiln,
                                 kiln_folded_us=t_forced, folded_regions=fold_kinds,
                                 folded_predicted_us=forced.ledger()["fusion"]["summary"]["predicted_fused_us"],
                                 predicted_us=exe.ledger()["fusion"]["summary"]["predicted_fused_us"],
                                 kiln_unfused_us=t_unf, eager_us=t_eager, compile_us=t_comp, err=err,
                                 err_folded=err_forced, err_unfused=err_unf, err_eager=err_eager,
                                 ledger_summary=exe.ledger()["fusion"]["summary"],
                                 norm_matmul_records=[r for r in exe.ledger()["fusion"].get("decisions", [])
                                                      if r.get("rule", "").startswith("norm-matmul")][-2:]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(copy_gbs=copy_bw / 1e3, matmul_tflops=mm_rate / 1e6, rows=rows), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
