# Session 18: where the Python call of a CUDA-graphed kiln executable spends its host time.
import sys, types, pathlib, time, cProfile, pstats, torch
sys.path.insert(0, "bench"); import models, kiln
wd = pathlib.Path("/tmp/pp"); wd.mkdir(exist_ok=True)
for name in ["ce_head", "gpt2_tanh"]:
    case = models.module_case(name, "fixture", "bf16", wd, models._fixtures(), types.SimpleNamespace(export_device="cpu"))
    g = kiln.compile(str(case.source), tune=False, cost_device="auto", cuda_graph=True)
    first = g(*case.inputs)
    outs = tuple(torch.empty_like(t) for t in (first if isinstance(first, (tuple, list)) else (first,)))
    for _ in range(20): g(*case.inputs, out=outs)
    torch.cuda.synchronize()
    for label, fn in [("graph out=", lambda: g(*case.inputs, out=outs)), ("graph new outs", lambda: g(*case.inputs))]:
        t0 = time.perf_counter()
        for _ in range(200): fn()
        torch.cuda.synchronize()
        print(f"{name} {label}: {(time.perf_counter() - t0) / 200 * 1e6:.1f} us per call (host loop + sync)", flush=True)
    pr = cProfile.Profile(); pr.enable()
    for _ in range(200): g(*case.inputs, out=outs)
    torch.cuda.synchronize(); pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(12)
    print("inputs:", [(t.dtype, tuple(t.shape)) for t in case.inputs], "outputs:", [(t.dtype, tuple(t.shape)) for t in outs])
    print("launches per run", g.launches_per_run, flush=True)
