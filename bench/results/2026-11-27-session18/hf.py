# Session 18: joined (horizontal) vs separate matmuls, NN ([K,N] weights) and TN ([N,K]), interleaved rounds.
import torch, statistics
torch.manual_seed(0)
def t(fn, iters=10):
    s, e = torch.cuda.Event(True), torch.cuda.Event(True)
    s.record()
    for _ in range(iters): fn()
    e.record(); torch.cuda.synchronize(); return s.elapsed_time(e) * 1e3 / iters
cases = {"llama_gqa gate/up": (4096, 4096, [14336, 14336]), "llama_gqa qkv": (4096, 4096, [4096, 1024, 1024]),
         "llama user gate/up": (4096, 1024, [2816, 2816]), "gpt2 user qkv": (4096, 1024, [1024, 1024, 1024]),
         "M16 gate/up 4096": (16, 4096, [14336, 14336]), "M64 qkv 4096": (64, 4096, [4096, 1024, 1024])}
for name, (M, K, Ns) in cases.items():
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    ws = [torch.randn(K, n, device="cuda", dtype=torch.bfloat16) * 0.02 for n in Ns]
    wj = torch.cat(ws, 1).contiguous()
    wsT = [w.t().contiguous() for w in ws]; wjT = wj.t().contiguous()
    fns = {"joined NN": lambda: torch.mm(x, wj), "separate NN": lambda: [torch.mm(x, w) for w in ws],
           "joined TN": lambda: torch.mm(x, wjT.t()), "separate TN": lambda: [torch.mm(x, w.t()) for w in wsT]}
    for f in fns.values():
        for _ in range(3): f()
    r = {k: [] for k in fns}
    for _ in range(8):
        for k, f in fns.items(): r[k].append(t(f))
    flops = 2 * M * K * sum(Ns)
    print(f"{name:20} M{M} K{K} N{Ns}: " + ", ".join(f"{k} {statistics.median(v):.1f} us ({flops/statistics.median(v)/1e6:.0f} TF/s)" for k, v in r.items()), flush=True)
