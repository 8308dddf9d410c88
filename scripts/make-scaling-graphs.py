#!/usr/bin/env python3
"""Writes the planning-time benchmark graphs (issue 15) in kiln's JSON format.

Two shapes of graph, N pointwise nodes each, on one [1024, 1024] input:

* chain:  x -> n0 -> n1 -> ... ; the ops cycle through add (a broadcast [1024] bias), mul (a
          scalar constant, inlined), exp and tanh. Every node has one user: fusion has one
          candidate per edge and the answer is one kernel.
* ladder: node i reads nodes i-1 and i-2 (add, mul, maximum, sub in turn), so every node has
          two users and fusion weighs merges against recomputes and has cycles to refuse.

The last node is the only output. tests/passes/plan_scaling_test.cc builds the same graphs
in memory; docs/architecture.md ("How planning scales") gives the times they measure.

    scripts/make-scaling-graphs.py chain 1000 -o /tmp/chain1000.json
    scripts/make-scaling-graphs.py ladder 3000 --dtype bf16 -o /tmp/ladder3000.json
    kiln dump /tmp/chain1000.json > /dev/null

Python 3.11, standard library only.
"""

import argparse
import json
import sys

CHAIN_OPS = ["add", "mul", "exp", "tanh"]
LADDER_OPS = ["add", "mul", "maximum", "sub"]
SIDE = 1024


def chain(n, dtype):
    nodes, prev = [], "x"
    for i in range(n):
        op = CHAIN_OPS[i % len(CHAIN_OPS)]
        inputs = [prev, "b"] if op == "add" else [prev, "half"] if op == "mul" else [prev]
        nodes.append({"name": f"n{i}", "op": op, "inputs": inputs})
        prev = f"n{i}"
    return nodes


def ladder(n, dtype):
    nodes, names = [], ["x", "x"]
    for i in range(n):
        op = LADDER_OPS[i % len(LADDER_OPS)]
        nodes.append({"name": f"n{i}", "op": op, "inputs": [names[-1], names[-2]]})
        names.append(f"n{i}")
    return nodes


def graph(kind, n, dtype):
    if n < 1:
        raise ValueError("N must be at least 1")
    nodes = chain(n, dtype) if kind == "chain" else ladder(n, dtype)
    doc = {
        "kiln_graph": 1,
        "name": f"{kind}{n}",
        "inputs": [{"name": "x", "dtype": dtype, "shape": [SIDE, SIDE]}],
        "nodes": nodes,
        "outputs": [nodes[-1]["name"]],
    }
    if kind == "chain":
        doc["inputs"].append({"name": "b", "dtype": dtype, "shape": [SIDE]})
        doc["initializers"] = [{"name": "half", "dtype": dtype, "shape": [], "data": [0.5]}]
    return doc


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["chain", "ladder"])
    parser.add_argument("n", type=int, help="number of pointwise nodes")
    parser.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    parser.add_argument("-o", "--output", help="file to write (default: stdout)")
    args = parser.parse_args()
    doc = graph(args.kind, args.n, args.dtype)
    text = json.dumps(doc, indent=None, separators=(",", ":")) + "\n"
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
