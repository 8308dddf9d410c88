import json, sys, torch
sys.path.insert(0, 'bench')
from attention import sdpa_times, flops
for name, b, hq, hkv, s, t, d, c in json.load(open('.carry/cfgs19.json')):
    r = sdpa_times(b, hq, hkv, s, t, d, c, "bf16", 20)
    f = flops(b, hq, s, t, d, c)
    print(name, {k: (round(v, 1) if isinstance(v, float) else v) for k, v in r.items()}, "TFLOP/s best", round(f / min(v for v in r.values() if isinstance(v, float)) / 1e6, 1))
