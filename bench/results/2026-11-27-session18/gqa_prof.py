# Session 18: kiln and torch.compile kernels of llama_gqa in one profiler window, calls alternated.
import sys, os, types, pathlib, torch
sys.path.insert(0, "bench"); import models, kiln
wd = pathlib.Path("/tmp/models_gqa"); wd.mkdir(exist_ok=True)
case = models.module_case("llama_gqa", "user", "bf16", wd, models._fixtures(), types.SimpleNamespace(export_device="cpu"))
exe = kiln.compile(str(case.source), tune=False, cost_device="auto")
from torch.profiler import profile, ProfilerActivity
with torch.no_grad():
    tc = models.torch_fn(case, "default")
    for _ in range(3): exe(*case.inputs); tc(*case.inputs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(6):
            exe(*case.inputs); tc(*case.inputs)
        torch.cuda.synchronize()
ev = [e for e in p.events() if e.device_type.name == "CUDA"]
import collections
agg = collections.defaultdict(lambda: [0.0, 0])
for e in ev:
    agg[e.name][0] += e.device_time; agg[e.name][1] += 1
tot = {"kiln": 0.0, "torch": 0.0}
for n, (us, c) in sorted(agg.items(), key=lambda kv: -kv[1][0]):
    side = "kiln" if n.startswith("kiln_") else ("torch" if n.startswith("triton") or "sdpa" in n else "?")
    print(f"{us/6:9.1f} us/call  x{c/6:.0f}  {side:5} {n[:110]}")
