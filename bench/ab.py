#!/usr/bin/env python3
"""A/B of two kiln builds on the same GPU: `kiln bench --flush-l2` of every graph with each
binary, alternated round by round (A, B, A, B, ...) so that both see the same clock and thermal
state, then one line per graph with every graph time and the ratio of the medians, B / A.

    python3 bench/ab.py --a base=.carry/kiln-old --b new=build/tools/kiln --rounds 3 \
        --out /tmp/ab G1.json G2.json ...

Each binary gets its own KILN_CACHE_DIR (tuned choices and compiled kernels are not shared) and
compiles with its heuristic launch parameters (--no-tune) unless --tune is given. The raw
`kiln bench` text and JSON of every run stay under --out.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("graphs", nargs="+", help="graph files (.json, .onnx)")
    p.add_argument("--a", required=True, help="NAME=PATH of the first kiln binary (the baseline)")
    p.add_argument("--b", required=True, help="NAME=PATH of the second kiln binary")
    p.add_argument("--rounds", type=int, default=2, help="runs of each binary per graph (default 2)")
    p.add_argument("--reps", type=int, default=50, help="kiln bench --reps (default 50)")
    p.add_argument("--tune", action="store_true", help="let each binary autotune (default --no-tune)")
    p.add_argument("--timeout", type=int, default=120, help="seconds per kiln bench (default 120)")
    p.add_argument("--out", required=True, help="folder for every run's text and JSON")
    args = p.parse_args()
    sides = []
    for spec in (args.a, args.b):
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            sys.exit(f"ab.py: '{spec}' is not NAME=PATH")
        sides.append((name, path))
    if sides[0][0] == sides[1][0]:
        sys.exit("ab.py: the two binaries need different names")
    os.makedirs(args.out, exist_ok=True)
    times = collections.defaultdict(list)
    for r in range(1, args.rounds + 1):
        for name, path in sides:
            for graph in args.graphs:
                stem = os.path.splitext(os.path.basename(graph))[0]
                base = os.path.join(args.out, f"{stem}.{name}.{r}")
                cmd = [path, "bench", graph, "--flush-l2", "--reps", str(args.reps), "--json", base + ".json"]
                if not args.tune:
                    cmd.append("--no-tune")
                env = dict(os.environ, KILN_CACHE_DIR=os.path.join(args.out, f"cache-{name}"))
                try:
                    with open(base + ".txt", "w") as log:
                        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                            timeout=args.timeout).returncode
                except subprocess.TimeoutExpired:
                    rc = "timeout"
                if rc != 0:
                    print(f"ab.py: {name} on {graph}: exit {rc} (see {base}.txt)", file=sys.stderr)
                    continue
                with open(base + ".json") as f:
                    times[(stem, name)].append(json.load(f)["graph_us"])
    (a, _), (b, _) = sides
    for stem in dict.fromkeys(os.path.splitext(os.path.basename(g))[0] for g in args.graphs):
        ta, tb = times[(stem, a)], times[(stem, b)]
        if not ta or not tb:
            print(f"{stem:32} (missing runs)")
            continue
        ratio = statistics.median(tb) / statistics.median(ta)
        print(f"{stem:32} {a} {' '.join(f'{t:8.2f}' for t in ta)}  {b} {' '.join(f'{t:8.2f}' for t in tb)}"
              f"  {b}/{a} {ratio:.3f}")


if __name__ == "__main__":
    main()
