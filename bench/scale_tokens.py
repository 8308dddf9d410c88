#!/usr/bin/env python3
"""Writes examples/transformer_block.json at another token count, for the launch-bound end of
issue 13's model table (16 tokens: a decoding step's block).

    python3 bench/scale_tokens.py --tokens 16 --out /tmp/t16     # /tmp/t16/transformer_block.json
    python3 bench/peers.py --examples /tmp/t16 --only transformer_block --max-autotune --reduce-overhead
    build/tools/kiln bench /tmp/t16/transformer_block.json --cuda-graph

The token count appears in the input x ([T, hidden]), in the q/k/v slices' first end and in the
head split and merge reshapes; every other extent (hidden, heads, the weights) stays. The
result is checked: each rewritten place held the old count, and the graph's other numbers did
not change.
"""

import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def scale(graph, tokens):
    x = next(i for i in graph["inputs"] if i["name"] == "x")
    old = x["shape"][0]
    if old == tokens:
        return graph
    x["shape"][0] = tokens
    for node in graph["nodes"]:
        attrs = node.get("attrs", {})
        if node["op"] == "slice":
            if attrs["ends"][0] != old:
                sys.exit(f"scale_tokens.py: slice {node['name']} does not end at the {old} tokens")
            attrs["ends"][0] = tokens
        elif node["op"] == "reshape":
            shape = attrs["shape"]
            hits = [i for i, d in enumerate(shape) if d == old]
            if len(hits) != 1:
                sys.exit(f"scale_tokens.py: reshape {node['name']} {shape} has no single token extent {old}")
            shape[hits[0]] = tokens
    graph["name"] = f"{graph.get('name', 'transformer_block')}_{tokens}tok"
    return graph


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, required=True)
    ap.add_argument("--out", type=pathlib.Path, required=True, help="directory for transformer_block.json")
    ap.add_argument("--graph", type=pathlib.Path, default=ROOT / "examples" / "transformer_block.json")
    args = ap.parse_args()
    graph = scale(json.loads(args.graph.read_text()), args.tokens)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "transformer_block.json").write_text(json.dumps(graph, indent=1) + "\n")
    print(f"scale_tokens.py: wrote {args.out / 'transformer_block.json'} ({args.tokens} tokens)")


if __name__ == "__main__":
    main()
