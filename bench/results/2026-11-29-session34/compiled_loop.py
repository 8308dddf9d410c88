#!/usr/bin/env python3
"""Runs one zoo workload's torch.compile function REPS times (for ncu to profile its kernels).
    python3 compiled_loop.py WORKLOAD [REPS]"""
import sys
import torch
import zoo
import peers

w = next(x for x in zoo.WORKLOADS if x.name == sys.argv[1])
g = zoo.graph_of(w)
gen = torch.Generator(device=peers.DEVICE).manual_seed(0)
inputs = peers.make_inputs(g, gen, peers.DEVICE)
consts = peers.make_constants(g, peers.DEVICE)
fn = torch.compile(w.torch_op(g, consts) if w.torch_op else zoo.torch_function(g, consts), dynamic=False)
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 5):
    fn(*inputs)
torch.cuda.synchronize()
