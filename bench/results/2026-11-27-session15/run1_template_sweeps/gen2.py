exec(open('gen.py').read().split("print(len(cfgs))")[0])
import sys
parts = int(sys.argv[1]) if len(sys.argv) > 1 else 8
limit = int(sys.argv[2]) if len(sys.argv) > 2 else len(cfgs)
cfgs = cfgs[:limit]
chunk = (len(cfgs) + parts - 1) // parts
reg = ['#include "bench_main.cuh"']
for p in range(parts):
    sub = cfgs[p * chunk:(p + 1) * chunk]
    out = ['#include "bench_main.cuh"', f'void AddPart{p}(std::vector<Config>& v) {{']
    for c in sub:
        m, n, tokens, bn, warps, wn, split, u, tk, wt = c
        out.append(f'  v.push_back(MakeConfig<{m}, {n}, {tokens}, {bn}, {warps}, {wn}, {split}, {u}, {"true" if wt else "false"}>());')
    out.append('}')
    open(f'part{p}.cu', 'w').write('\n'.join(out) + '\n')
    reg.append(f'void AddPart{p}(std::vector<Config>& v);')
reg.append('std::vector<Config> AllConfigs() { std::vector<Config> v;')
for p in range(parts): reg.append(f'  AddPart{p}(v);')
reg.append('  return v; }')
open('registry.cu', 'w').write('\n'.join(reg) + '\n')
print(len(cfgs), 'configs in', parts, 'parts')
