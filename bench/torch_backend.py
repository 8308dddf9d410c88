#!/usr/bin/env python3
"""Eager vs torch.compile (inductor) vs torch.compile(backend="kiln") on the modules of
bench/torch_modules.py, in one process, on one GPU.

For each module, dtype and mode (eval forward; train forward + backward) it measures:
  cold: wall time of the first call of a freshly compiled module (dynamo + backend compile +
        first run), torch.cuda.synchronize() before and after;
  step: steady-state time per call, CUDA events around `--iters` calls after `--warmup`
        calls, divided by the count; the median of `--reps` such blocks. Each backend runs its
        own copy of the module, all compiled first; the blocks are then interleaved (one block
        of each backend per round), so that the host's speed, which bounds the small bf16 steps,
        drifts under all of them alike.
and prints a table (and --json FILE writes the rows).

    PYTHONPATH=python python3 bench/torch_backend.py [--modules gpt2_block,...] [--dtypes bf16,f32]
        [--modes eval,train] [--d 1024] [--batch 8] [--seq 512] [--iters 50]
"""

import argparse
import copy
import json
import os
import sys
import time

import torch
import torch._dynamo

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import torch_modules as TM  # noqa: E402

DT = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def _step(fn, inp, train, params):
    out = fn(*inp)
    if train:
        out.float().sum().backward()
        for p in params:
            p.grad = None
    return out


def cold_call(fn, inp, train, params):
    """Wall time of the first call (dynamo, the backend's compile, the first run), in s."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    _step(fn, inp, train, params)
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def block_ms(fn, inp, train, params, iters):
    """ms per call over one block of `iters` calls, CUDA events around the block."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        _step(fn, inp, train, params)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters


def measure_row(fns, inp, train, warmup, iters, reps):
    """{backend: (cold s, median step ms, every block's ms)}. Every backend is compiled (its
    cold call) before any is timed, then the blocks are interleaved: round r times one block of
    each backend in turn, so that a drift of the host's speed (these steps are often bound by
    the host's launches) falls on all of them alike; the median block is reported."""
    cold, blocks = {}, {b: [] for b in fns}
    for b, (fn, params) in fns.items():
        cold[b] = cold_call(fn, inp, train, params)
        for _ in range(warmup):
            _step(fn, inp, train, params)
    for _ in range(reps):
        for b, (fn, params) in fns.items():
            blocks[b].append(block_ms(fn, inp, train, params, iters))
    return {b: (cold[b], sorted(v)[len(v) // 2], v) for b, v in blocks.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modules", default=",".join(TM.NAMES))
    ap.add_argument("--dtypes", default="bf16,f32")
    ap.add_argument("--modes", default="eval,train")
    ap.add_argument("--backends", default="eager,inductor,kiln")
    ap.add_argument("--d", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--reps", type=int, default=5, help="timed blocks of --iters calls; the median is reported")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU")

    backends = args.backends.split(",")
    if "kiln" in backends:
        import kiln.dynamo  # noqa: F401 -- registers backend="kiln"
    rows = []
    print(f"# {torch.cuda.get_device_name()}  torch {torch.__version__}  d={args.d} batch={args.batch} "
          f"seq={args.seq}; cold = first call incl. compile (s), step = ms per call (CUDA events, median of "
          f"{args.reps} blocks of {args.iters}, the backends' blocks interleaved)")
    hdr = f"{'module':<12} {'dtype':<5} {'mode':<5} " + " ".join(f"{b + ' cold':>12} {b + ' step':>12}" for b in backends)
    print(hdr)
    for name in args.modules.split(","):
        for dt in args.dtypes.split(","):
            for mode in args.modes.split(","):
                train = mode == "train"
                torch.manual_seed(0)
                heads = max(1, args.d // 64)
                m = TM.build(name, d=args.d, heads=heads, kv_heads=max(1, heads // 4), vocab=args.vocab,
                             p=0.1 if train else 0.0).to("cuda", DT[dt]).train(train)
                inp = TM.make_inputs(name, m, batch=args.batch, seq=args.seq, device="cuda", dtype=DT[dt])
                row = {"module": name, "dtype": dt, "mode": mode}
                # one copy of the module per backend, all compiled and alive at once (interleaved
                # timing); dynamo guards each compiled frame on its module instance
                torch._dynamo.reset()
                fns = {}
                for b in backends:
                    mb = m if b == "eager" else copy.deepcopy(m)
                    fns[b] = (mb if b == "eager" else torch.compile(mb, backend=b, dynamic=False), list(mb.parameters()))
                ctx = torch.no_grad() if not train else torch.enable_grad()
                try:
                    with ctx:
                        measured = measure_row(fns, inp, train, args.warmup, args.iters, args.reps)
                    for b, (cold, step, blocks) in measured.items():
                        row[b] = {"cold_s": cold, "step_ms": step, "blocks_ms": blocks}
                except Exception as e:  # noqa: BLE001 -- a failing backend should not end the table
                    for b in backends:
                        row.setdefault(b, {"error": f"{type(e).__name__}: {e}"})
                rows.append(row)
                cells = []
                for b in backends:
                    r = row[b]
                    if "error" in r:
                        cells.append(f"{'error':>12} {'':>12}")
                    else:
                        cells.append(f"{r['cold_s']:>12.2f} {r['step_ms']:>12.3f}")
                print(f"{name:<12} {dt:<5} {mode:<5} " + " ".join(cells), flush=True)
    if "kiln" in backends:
        import kiln.dynamo as kd

        print(f"# kiln.dynamo stats: {kd.stats}")
    for r in rows:
        for b in backends:
            if "error" in r[b]:
                print(f"# {r['module']} {r['dtype']} {r['mode']} {b}: {r[b]['error']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
