# Same-size copies: what a torch copy_ of the zoo's byte counts costs with the zoo's L2 policy
# (a 256 MiB read before every call), timed with CUDA events, median of 100.
import torch, statistics
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda").random_()
def t(fn, reps=100):
    s = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]; e = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for _ in range(10): fn()
    for i in range(reps):
        flush.sum(dtype=torch.int32)
        s[i].record(); fn(); e[i].record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in zip(s, e)) * 1e3
big = 1 << 30
src = torch.empty(big // 2, dtype=torch.uint8, device="cuda").random_(); dst = torch.empty_like(src)
bw = big / t(lambda: dst.copy_(src), 20) / 1e3
print(f"copy bandwidth (1 GiB moved): {bw:.0f} GB/s")
print("MB_moved  copy_us  floor_us  floor/copy")
for mb in [4, 8, 16, 32, 51.4, 67.1, 100.7, 134.2, 205.9, 268.4]:
    n = int(mb * 1e6) // 2
    a = src[:n]; b = dst[:n]
    us = t(lambda: b.copy_(a))
    floor = mb * 1e6 / (bw * 1e3)
    print(f"{mb:8.1f} {us:8.2f} {floor:8.2f} {floor/us:10.2f}")
