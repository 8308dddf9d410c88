import itertools
K = 4096
shapes = [(m, n) for n in (4096, 14336) for m in (1, 16)]
cfgs = []
for (m, n) in shapes:
    tokens = min(64, (m + 7) // 8 * 8)
    for wt in (False, True):
        if wt and m != 16: continue
        for bn, warps, wn, split, u in itertools.product((32, 64, 128, 256), (4, 8), (1, 2, 4, 8), (4, 8, 16), (1, 2, 4)):
            if warps % wn or bn % (16 * wn): continue
            ft = bn // (16 * wn)
            if ft not in (1, 2, 4): continue
            if u * ft != 4: continue
            if (tokens // 8) * ft * 4 > 64: continue
            if wt: continue
            chunks = (K + 31) // 32
            slice_cols = 32 * ((chunks + split - 1) // split)
            smem = tokens * (slice_cols + 32) * 2 + tokens * slice_cols // 2 + tokens * 8
            if smem > 64 * 1024: continue
            blocks = ((n + bn - 1) // bn) * split
            if blocks < 256 or blocks > 4000: continue
            cfgs.append((m, n, tokens, bn, warps, wn, split, u, 0, wt))
print(len(cfgs))
