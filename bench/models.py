#!/usr/bin/env python3
"""Whole models: kiln against torch eager and every torch.compile mode, in one process, with the
same weights and inputs (issue 13's table).

The models:
  transformer_block   examples/transformer_block.json (bf16) at 2048 tokens and, rewritten by
                      bench/scale_tokens.py, at 16; kiln from the JSON, torch from
                      bench/peers.py's node-for-node builder of the same graph.
  gpt2_sdpa, gpt2_manual, gpt2_tanh, gpt2_dropout, gpt2_attn_dropout, llama, ce_head
                      the ONNX fixtures' modules (scripts/export-onnx-fixtures.py), at their
                      fixture size (hidden 64, 2 x 8 tokens) and at a user's (hidden 1024, 16
                      heads, 4 x 1024 tokens; ce_head's vocabulary 32000), bf16 and f32; the
                      dropout ones in training mode. kiln runs the ONNX export
                      (torch.onnx.export(dynamo=True), opset 18) of the very module torch runs.
  bert                bench/torch_modules.py's BERT encoder layer (post-LN, separate q/k/v
                      Linears, erf GELU, eval mode) with a key-padding mask built from a bool
                      input (each sequence's length drawn from [seq / 2, seq]), at the fixture
                      size (hidden 64, 4 heads, 2 x 8 tokens) and a user's (hidden 1024, 16
                      heads, 4 x 1024 tokens), bf16 and f32; a model no kernel was tuned on.
  llama_gqa           bench/torch_modules.py's Llama block with grouped-query attention (32
                      heads, 8 kv heads) and rotary embeddings, hidden 4096, SwiGLU 14336, at
                      4096 tokens, bf16.

Per model it prints kiln's time on the stream and as one CUDA graph, each torch mode's time
(eager, compile "default", "max-autotune-no-cudagraphs", "reduce-overhead"), the best torch
mode over kiln's best, kiln's kernels and launches per run, its predicted time (the fusion
plan's, with the cost model's spec of this GPU: cost_device "auto"), its arena and the arena's liveness bound against torch's peak memory for one call,
and the error against a float32 torch reference (TF32 off). All run under torch.no_grad().

Timing: every backend is built and warmed first; then rounds of one block of --iters calls per
backend (CUDA events around the block, calls queued back to back, as a model's steps are), the
median block over --reps rounds. kiln's stream calls are exe(*inputs) (outputs allocated by
torch's caching allocator, as torch's are); its CUDA-graph calls write preallocated outputs
(out=), which a graph replay needs.

Memory: torch's peak for one call is max_memory_allocated() after the call less the allocated
bytes before it (outputs and intermediates; weights and inputs excluded). kiln's is its arena
(outside torch's allocator) plus the bytes torch's allocator gave its outputs in the same call.

    PYTHONPATH=python KILN_LIBRARY=build/api/libkiln.so python3 bench/models.py \
        [--models transformer_block,gpt2_sdpa,...] [--sizes fixture,user] [--dtypes bf16,f32] \
        [--modes eager,default,max-autotune-no-cudagraphs,reduce-overhead] [--json FILE]
"""

import argparse
import copy
import importlib.util
import json
import math
import os
import pathlib
import statistics
import sys
import tempfile
import time
import traceback

import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "python"))
import kiln  # noqa: E402
import peers  # noqa: E402
import scale_tokens  # noqa: E402
import torch_modules  # noqa: E402

MODES = ["eager", "default", "max-autotune-no-cudagraphs", "reduce-overhead"]
FIXTURE_MODELS = ["gpt2_sdpa", "gpt2_manual", "gpt2_tanh", "gpt2_dropout", "gpt2_attn_dropout", "llama", "ce_head"]
MODELS = ["transformer_block"] + FIXTURE_MODELS + ["bert", "llama_gqa"]
DTYPES = {"bf16": torch.bfloat16, "f32": torch.float32}
# Relative L2 error against the f32 reference: bf16 chains of a block land near 1e-2.
TOLERANCE = {"bf16": 3e-2, "f32": 1e-4}
USER = dict(hidden=1024, heads=16, seq=1024, batch=4, vocab=32000)


def _fixtures():
    spec = importlib.util.spec_from_file_location("export_onnx_fixtures", ROOT / "scripts" / "export-onnx-fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Case:
    """One row: a torch callable, its inputs, a kiln source (a JSON or ONNX path) and the f32
    reference's callable and inputs."""

    def __init__(self, name, size, dtype, fn, inputs, source, ref_fn, ref_inputs, training=False):
        self.name, self.size, self.dtype = name, size, dtype
        self.fn, self.inputs, self.source = fn, inputs, source
        self.ref_fn, self.ref_inputs, self.training = ref_fn, ref_inputs, training
        self.tokens = None


def phase(what):
    """A timestamped line on stderr: where a row spends its time (a 4096-hidden block takes
    minutes to export, and a call that runs out of time should say where it was)."""
    print(f"[{time.strftime('%H:%M:%S')}] {what}", file=sys.stderr, flush=True)


def _export(module, inputs, path, device="cpu"):
    """The dynamo exporter, opset 18, weights inline, from a copy of the module on `device`. On
    the CPU by default: on CUDA, torch 2.11 keeps nn.RMSNorm as aten._fused_rms_norm, which the
    exporter cannot translate (the fixtures were exported on the CPU too). An export already in
    the work directory is reused (the module and its seed are fixed, so it is the same file)."""
    if path.exists():
        phase(f"reusing {path}")
        return
    phase(f"exporting {path.name}")
    module = copy.deepcopy(module).to(device)
    inputs = tuple(t.to(device) for t in inputs)
    partial = path.with_suffix(".partial.onnx")
    torch.onnx.export(module, inputs, str(partial), dynamo=True, opset_version=18, external_data=False)
    partial.rename(path)  # only a finished export is reused
    phase(f"exported {path.name} ({path.stat().st_size / 2**20:.0f} MiB)")


def block_case(tokens, workdir):
    path = ROOT / "examples" / "transformer_block.json"
    if tokens != 2048:
        doc = scale_tokens.scale(json.loads(path.read_text()), tokens)
        path = workdir / f"transformer_block_{tokens}.json"
        path.write_text(json.dumps(doc))
    g = peers.Graph(path)
    gen = torch.Generator(device="cuda").manual_seed(0)
    inputs = peers.make_inputs(g, gen, "cuda")
    fn = peers.BUILDERS["transformer_block"](g, peers.make_constants(g, "cuda"))
    ref_inputs = [t.float() for t in inputs]
    case = Case("transformer_block", str(tokens), "bf16", lambda *a: fn(*a)[0], inputs, path,
                lambda *a: fn(*a)[0], ref_inputs)
    case.tokens = tokens
    return case


def module_case(name, size, dtype, workdir, fixtures, args):
    if name == "llama_gqa":
        torch.manual_seed(0)
        module = torch_modules.build("llama_block", d=4096, heads=32, kv_heads=8, ffn=14336, max_seq=4096)
        x = torch.randn(1, 4096, 4096)
        inputs, training, tokens = (x,), False, 4096
    elif name == "bert":
        d, heads, batch, seq = (64, 4, 2, 8) if size == "fixture" else \
            (USER["hidden"], USER["heads"], USER["batch"], USER["seq"])
        torch.manual_seed(0)
        module = torch_modules.build("bert_layer", d=d, heads=heads)
        inputs = torch_modules.make_inputs("bert_layer", module, batch=batch, seq=seq, device="cpu")
        training, tokens = False, batch * seq
    else:
        dims = {} if size == "fixture" else USER
        module, inputs, training = fixtures.make(name, **dims)
        tokens = inputs[0].shape[0] * inputs[0].shape[1]
    module.train(training)
    ref = copy.deepcopy(module).cuda().float()
    module = module.cuda().to(DTYPES[dtype])
    cast = [t.cuda().to(DTYPES[dtype]) if t.is_floating_point() else t.cuda() for t in inputs]
    ref_inputs = [t.cuda().float() if t.is_floating_point() else t.cuda() for t in inputs]
    path = workdir / f"{name}_{size}_{dtype}.onnx"
    with torch.no_grad():
        _export(module, cast, path, args.export_device)
    case = Case(name, size, dtype, module, cast, path, ref, ref_inputs, training)
    case.tokens = tokens
    return case


def first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def rel_err(got, want):
    got, want = got.double(), want.double()
    return (torch.linalg.vector_norm(got - want) / torch.linalg.vector_norm(want).clamp_min(1e-30)).item()


def check(case, kiln_out):
    """(error text, ok) of kiln's outputs against the f32 reference. Dropout draws differ from
    torch's, so gpt2_dropout is checked by its parts (y - h is 0 or m / (1 - p) elementwise, with
    kiln's own h and m) and gpt2_attn_dropout, whose mask sits inside attention, is not compared."""
    if case.name == "gpt2_attn_dropout":
        return "not compared (dropout inside attention: kiln's mask is not torch's)", True
    if case.name == "gpt2_dropout":
        y, h, m = (t.double() for t in kiln_out[:3])
        kept = m / 0.9
        # Each element's rounding: y and h are stored in the dtype, so y - h carries about one
        # rounding of |y| (bf16: 2^-8 relative) besides the one of kept.
        ulp = 2.0 ** -7 if case.dtype == "bf16" else 2.0 ** -22
        tol = ulp * (y.abs() + h.abs() + kept.abs()) + 1e-30
        d = y - h
        ok_elem = torch.minimum(d.abs(), (d - kept).abs()) <= tol
        # The dropped fraction, over the elements where 0 and m / (1 - p) are told apart.
        clear = kept.abs() > 4 * tol
        dropped = ((d.abs() <= tol) & clear).double().sum().item() / max(clear.double().sum().item(), 1.0)
        ok = bool(ok_elem.all().item()) and 0.08 < dropped < 0.12
        return f"y - h in {{0, m/(1-p)}}: {ok_elem.double().mean().item():.4f} of elements, {dropped:.4f} dropped", ok
    with torch.no_grad():
        want = as_tuple(case.ref_fn(*case.ref_inputs))
    errs = [rel_err(g, w) for g, w in zip(kiln_out, want) if w.is_floating_point()]
    worst = max(errs) if errs else 0.0
    return f"rel err {worst:.2e}", worst <= TOLERANCE[case.dtype]


def torch_fn(case, mode):
    if mode == "eager":
        return case.fn
    target = copy.deepcopy(case.fn) if isinstance(case.fn, torch.nn.Module) else case.fn
    return torch.compile(target, mode=mode)


def peak_bytes(call):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    out = call()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del out
    return peak


def block_us(call, iters):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        call()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / iters


def run_case(case, args):
    row = {"model": case.name, "size": case.size, "dtype": case.dtype, "tokens": case.tokens,
           "training": case.training}
    torch.manual_seed(1)
    phase(f"kiln compile {case.source}")
    t0 = time.perf_counter()
    exe = kiln.compile(str(case.source), tune=args.tune, cost_device="auto")
    row["kiln_compile_s"] = round(time.perf_counter() - t0, 2)
    ledger = exe.ledger()["fusion"]["summary"]
    row["predicted_us"] = ledger["predicted_fused_us"]
    row["kernels"] = ledger["kernels"]
    row["launches"] = exe.launches_per_run
    row["memory"] = exe.memory
    kiln_out = as_tuple(exe(*case.inputs))
    row["check"], row["ok"] = check(case, kiln_out)
    graphed = kiln.compile(str(case.source), tune=args.tune, cost_device="auto", cuda_graph=True)
    outs = tuple(torch.empty_like(t) for t in kiln_out)

    calls = {"kiln": lambda: exe(*case.inputs), "kiln_graph": lambda: graphed(*case.inputs, out=outs)}
    compile_s = {}
    with torch.no_grad():
        for mode in args.modes:
            phase(f"torch {mode}: first call")
            fn = torch_fn(case, mode)
            t0 = time.perf_counter()
            fn(*case.inputs)
            torch.cuda.synchronize()
            compile_s[mode] = round(time.perf_counter() - t0, 2)
            calls[mode] = (lambda f: lambda: f(*case.inputs))(fn)
        row["torch_first_call_s"] = compile_s
        for call in calls.values():
            for _ in range(args.warmup):
                call()
        phase("timing")
        blocks = {b: [] for b in calls}
        for _ in range(args.reps):
            for b, call in calls.items():
                blocks[b].append(block_us(call, args.iters))
        row["us"] = {b: statistics.median(v) for b, v in blocks.items()}
        row["blocks_us"] = blocks
        row["peak_bytes"] = {"kiln": peak_bytes(calls["kiln"]) + row["memory"]["arena"]}
        for mode in args.modes:
            if mode != "reduce-overhead":  # its pool is allocated once, outside the call
                row["peak_bytes"][mode] = peak_bytes(calls[mode])
    torch_best = min((row["us"][m], m) for m in args.modes) if args.modes else (math.nan, "-")
    kiln_best = min(row["us"]["kiln"], row["us"]["kiln_graph"])
    row["best_torch"] = torch_best[1]
    row["speedup"] = torch_best[0] / kiln_best
    return row


def fmt_mb(b):
    return f"{b / 2**20:.1f}" if b is not None else "-"


def print_row(row, modes):
    us = row["us"]
    cells = " ".join(f"{us.get(m, math.nan):9.1f}" for m in modes)
    launches = row["launches"]["total"]
    mem = row["memory"]
    torch_peak = min(v for k, v in row["peak_bytes"].items() if k != "kiln") if len(row["peak_bytes"]) > 1 else None
    print(f"{row['model']:18s} {row['size']:7s} {row['dtype']:4s} {us['kiln']:9.1f} {us['kiln_graph']:9.1f} {cells} "
          f"{row['speedup']:6.2f}x {row['kernels']:4d} {launches:4d} {row['predicted_us']:9.1f} "
          f"{fmt_mb(mem['arena']):>8s} {fmt_mb(mem['live_bound']):>8s} {fmt_mb(torch_peak):>8s}  "
          f"{'ok ' if row['ok'] else 'BAD'} {row['check']}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--sizes", default="fixture,user", help="for the fixture modules: fixture, user")
    ap.add_argument("--dtypes", default="bf16,f32", help="for the fixture modules")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--tune", action="store_true", help="kiln autotunes its launches")
    ap.add_argument("--json", help="write every row here (rewritten after each row)")
    ap.add_argument("--export-device", default="cpu", help="where the module is exported from (cpu, cuda)")
    ap.add_argument("--export-only", action="store_true", help="write the ONNX exports to --workdir and stop")
    ap.add_argument("--workdir", help="where the exports go (default: a temporary directory)")
    args = ap.parse_args()
    args.modes = [m for m in args.modes.split(",") if m]
    for m in args.modes:
        if m not in MODES:
            ap.error(f"unknown mode {m}; modes: {', '.join(MODES)}")
    models = args.models.split(",")
    for m in models:
        if m not in MODELS:
            ap.error(f"unknown model {m}; models: {', '.join(MODELS)}")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    workdir = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="kiln_models_"))
    workdir.mkdir(parents=True, exist_ok=True)
    fixtures = _fixtures()
    props = torch.cuda.get_device_properties(0)
    print(f"device {props.name}; torch {torch.__version__}; kiln {kiln.__version__}; "
          f"{args.reps} rounds of {args.iters} calls per backend, median round", flush=True)
    head = " ".join(f"{m[:9]:>9s}" for m in args.modes)
    print(f"{'model':18s} {'size':7s} {'type':4s} {'kiln us':>9s} {'kiln grf':>9s} {head} {'best/k':>7s} "
          f"{'kern':>4s} {'lnch':>4s} {'pred us':>9s} {'arena MB':>8s} {'live MB':>8s} {'torch MB':>8s}  check")
    jobs = []
    for m in models:
        if m == "transformer_block":
            jobs += [(m, 2048, "bf16"), (m, 16, "bf16")]
        elif m == "llama_gqa":
            jobs.append((m, "4096tok", "bf16"))
        else:
            jobs += [(m, s, d) for s in args.sizes.split(",") for d in args.dtypes.split(",")]
    rows, failures = [], 0
    for name, size, dtype in jobs:
        try:
            case = block_case(size, workdir) if name == "transformer_block" else \
                module_case(name, size, dtype, workdir, fixtures, args)
            if args.export_only:
                print(f"{name:18s} {str(size):7s} {dtype:4s} exported to {case.source}", flush=True)
                continue
            row = run_case(case, args)
            print_row(row, args.modes)
            failures += not row["ok"]
        except Exception as e:  # report and go on: one model's failure must not hide the rest
            traceback.print_exc()
            failures += 1
            first_line = (str(e).strip().splitlines() or [""])[0][:300]
            row = {"model": name, "size": str(size), "dtype": dtype, "error": f"{type(e).__name__}: {first_line}"}
            print(f"{name:18s} {str(size):7s} {dtype:4s} FAILED {row['error']}", flush=True)
        rows.append(row)
        torch._dynamo.reset()
        torch.cuda.empty_cache()
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps({"device": props.name, "torch": torch.__version__,
                                                           "rows": rows}, indent=1))
    print(f"{len(rows)} rows, {failures} failed or off tolerance")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
