# Session 18: where llama_gqa's time goes, in kiln (per step) and torch (per kernel).
import sys, os, types, subprocess, pathlib, torch
sys.path.insert(0, "bench")
import models
out = pathlib.Path(os.environ["OUT"]); wd = pathlib.Path("/tmp/g"); wd.mkdir(exist_ok=True)
dtype = os.environ.get("DT", "bf16"); name = os.environ.get("MODEL", "llama_gqa"); size = os.environ.get("SIZE", "user")
args = types.SimpleNamespace(export_device="cpu")
case = models.module_case(name, size, dtype, wd, models._fixtures(), args)
src = str(case.source)
kiln = ".carry/ab/kiln-new"
tag = f"{name}_{size}_{dtype}"
with open(out / f"{tag}_dump.txt", "w") as f:
    subprocess.run([kiln, "dump", src, "--device", "h200"], stdout=f, stderr=subprocess.STDOUT)
with open(out / f"{tag}_bench.txt", "w") as f:
    subprocess.run([kiln, "bench", src, "--no-tune", "--reps", "20", "--cuda-graph", "--device", "h200",
                    "--json", str(out / f"{tag}_bench.json")], stdout=f, stderr=subprocess.STDOUT)
print(open(out / f"{tag}_bench.txt").read()[-6000:])
from torch.profiler import profile, ProfilerActivity
with torch.no_grad():
    for mode in os.environ.get("MODES", "eager,default").split(","):
        fn = models.torch_fn(case, mode)
        for _ in range(3): fn(*case.inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            for _ in range(5): fn(*case.inputs)
            torch.cuda.synchronize()
        t = p.key_averages().table(sort_by="cuda_time_total", row_limit=25, max_name_column_width=90)
        (out / f"{tag}_torch_{mode}.txt").write_text(t)
        print(f"== torch {mode} (5 calls)"); print(t[:5000])
