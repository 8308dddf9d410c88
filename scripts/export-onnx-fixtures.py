#!/usr/bin/env python3
"""Exports small PyTorch modules to ONNX as fixtures for tests/frontends/onnx_fixture_test.cc.

Run on a machine with torch (2.11), onnx, onnxscript and (optionally) onnxruntime, from the
repository root; no network is needed:
    python3 scripts/export-onnx-fixtures.py [--out tests/frontends/onnx_fixtures] [--only NAME]

Modules (hidden 64, fixed seeds; about 41K-50K f32 parameters each, so a model.onnx with its
weights inline is 25-235 KB and the 27 fixtures with inputs and outputs take about 5.8 MB):
  gpt2_sdpa       LayerNorm, causal attention with F.scaled_dot_product_attention, GELU MLP
  gpt2_manual     the same block with attention written as matmul + masked_fill + softmax
  gpt2_tanh       gpt2_sdpa with GELU(approximate="tanh")
  gpt2_dropout    gpt2_sdpa in training mode with dropout (p = 0.1) on the MLP output; it
                  returns (y, h, m) with y = h + dropout(m), so the test can check that
                  y - h is 0 or m / (1 - p) elementwise (kiln's Philox mask cannot equal torch's)
  gpt2_attn_dropout  gpt2_manual in training mode with dropout (p = 0.1) on the attention
                  probabilities (nanoGPT's attn_dropout); torch's mask cannot equal kiln's, so
                  the test compares kiln's fused attention with kiln's unfused graph instead
  llama           RMSNorm + causal SDPA attention + SwiGLU MLP (Llama-style block)
  ce_head         a linear head and F.cross_entropy (ignore_index=-100), returning (loss, logits)
Exporters: the dynamo-based one (torch.onnx.export(dynamo=True)) at opsets 18, 20 and 23, and
the TorchScript-based one (dynamo=False, opset 18) where it works (it cannot export rms_norm).

Each export writes tests/frontends/onnx_fixtures/<module>_opset<N>[_ts]/ with model.onnx
(weights inline), input_<i>.pb and output_<j>.pb (onnx TensorProto, torch's outputs) and
fixture.txt (key = value lines: module, exporter, opset, torch version, onnxruntime max abs
difference if it ran, and for gpt2_dropout "dropout_p = 0.1"). A failed export is reported and
leaves no directory. A table of what exported and what failed is printed at the end.
"""
import argparse
import os
import shutil
import sys
import traceback

import numpy as np

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - the script needs torch; say so clearly
    print("export-onnx-fixtures: torch is not installed; run this on the GPU machine", file=sys.stderr)
    sys.exit(2)
import onnx
from onnx import numpy_helper

HIDDEN, HEADS, SEQ, BATCH, VOCAB = 64, 4, 8, 2, 96
OPSETS = (18, 20, 23)
TS_OPSET = 18


class CausalSelfAttention(nn.Module):
    def __init__(self, manual=False, attn_dropout=0.0, hidden=HIDDEN, heads=HEADS):
        super().__init__()
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.heads = heads
        self.manual = manual
        self.attn_dropout = nn.Dropout(attn_dropout)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=-1)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        if self.manual:
            scores = (q @ k.transpose(-2, -1)) * (1.0 / (h // self.heads) ** 0.5)
            mask = torch.triu(torch.ones(s, s, dtype=torch.bool, device=x.device), diagonal=1)
            scores = scores.masked_fill(mask, float("-inf"))
            y = self.attn_dropout(torch.softmax(scores, dim=-1)) @ v
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, s, h))


class Gpt2Block(nn.Module):
    def __init__(self, manual=False, approximate="none", dropout=0.0, attn_dropout=0.0, hidden=HIDDEN, heads=HEADS):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = CausalSelfAttention(manual, attn_dropout, hidden, heads)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, 4 * hidden)
        self.fc2 = nn.Linear(4 * hidden, hidden)
        self.approximate = approximate
        self.drop = nn.Dropout(dropout)
        self.return_parts = dropout > 0

    def forward(self, x):
        h = x + self.attn(self.ln1(x))
        m = self.fc2(F.gelu(self.fc1(self.ln2(h)), approximate=self.approximate))
        y = h + self.drop(m)
        return (y, h, m) if self.return_parts else y


class LlamaBlock(nn.Module):
    def __init__(self, hidden=HIDDEN, heads=HEADS):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.RMSNorm(hidden, eps=1e-6)
        self.wqkv = nn.Linear(hidden, 3 * hidden, bias=False)
        self.wo = nn.Linear(hidden, hidden, bias=False)
        self.norm2 = nn.RMSNorm(hidden, eps=1e-6)
        self.w1 = nn.Linear(hidden, 2 * hidden, bias=False)
        self.w3 = nn.Linear(hidden, 2 * hidden, bias=False)
        self.w2 = nn.Linear(2 * hidden, hidden, bias=False)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.wqkv(self.norm1(x)).split(h, dim=-1)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(a.transpose(1, 2).reshape(b, s, h))
        n = self.norm2(x)
        return x + self.w2(F.silu(self.w1(n)) * self.w3(n))


class CrossEntropyHead(nn.Module):
    def __init__(self, hidden=HIDDEN, vocab=VOCAB):
        super().__init__()
        self.vocab = vocab
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x, targets):
        logits = self.head(x)
        loss = F.cross_entropy(logits.reshape(-1, self.vocab), targets.reshape(-1), ignore_index=-100)
        return loss, logits


def make(name, hidden=HIDDEN, heads=HEADS, seq=SEQ, batch=BATCH, vocab=VOCAB):
    """(module, example inputs, training mode) for a fixture name; the sizes default to the
    fixtures' (bench/models.py makes the same modules at a user's size)."""
    torch.manual_seed(0)
    x = torch.randn(batch, seq, hidden)
    block = dict(hidden=hidden, heads=heads)
    if name == "gpt2_sdpa":
        return Gpt2Block(**block), (x,), False
    if name == "gpt2_manual":
        return Gpt2Block(manual=True, **block), (x,), False
    if name == "gpt2_tanh":
        return Gpt2Block(approximate="tanh", **block), (x,), False
    if name == "gpt2_dropout":
        return Gpt2Block(dropout=0.1, **block), (x,), True
    if name == "gpt2_attn_dropout":
        return Gpt2Block(manual=True, attn_dropout=0.1, **block), (x,), True
    if name == "llama":
        return LlamaBlock(**block), (x,), False
    if name == "ce_head":
        t = torch.randint(0, vocab, (batch, seq))
        t[0, min(1, seq - 1)] = -100  # one ignored position
        return CrossEntropyHead(hidden, vocab), (x, t), False
    raise ValueError(name)


NAMES = ("gpt2_sdpa", "gpt2_manual", "gpt2_tanh", "gpt2_dropout", "gpt2_attn_dropout", "llama", "ce_head")


def save_tensor(array, path):
    with open(path, "wb") as f:
        # np.asarray(order="C"), not np.ascontiguousarray: the latter makes 0-d arrays 1-d.
        f.write(numpy_helper.from_array(np.asarray(array, order="C")).SerializeToString())


def export_one(name, opset, dynamo, out_root):
    """Exports one (module, opset, exporter); returns a one-line note. Raises on failure."""
    module, inputs, training = make(name)
    module.train(training)
    tag = f"{name}_opset{opset}" + ("" if dynamo else "_ts")
    tmp = os.path.join(out_root, "." + tag + ".tmp")
    final = os.path.join(out_root, tag)
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        path = os.path.join(tmp, "model.onnx")
        kwargs = dict(opset_version=opset, dynamo=dynamo)
        if dynamo:
            kwargs["external_data"] = False
        elif training:
            kwargs["training"] = torch.onnx.TrainingMode.TRAINING
            kwargs["do_constant_folding"] = False
        torch.onnx.export(module, inputs, path, **kwargs)
        model = onnx.load(path)
        onnx.checker.check_model(model)
        with torch.no_grad():
            torch.manual_seed(1)
            outputs = module(*inputs)
        if not isinstance(outputs, tuple):
            outputs = (outputs,)
        graph_inputs = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
        if len(graph_inputs) != len(inputs):
            raise RuntimeError(f"the model has {len(graph_inputs)} inputs, expected {len(inputs)}")
        if len(model.graph.output) != len(outputs):
            raise RuntimeError(f"the model has {len(model.graph.output)} outputs, torch returns {len(outputs)}")
        feeds = {}
        for i, (gname, t) in enumerate(zip(graph_inputs, inputs)):
            save_tensor(t.numpy(), os.path.join(tmp, f"input_{i}.pb"))
            feeds[gname] = t.numpy()
        for j, t in enumerate(outputs):
            save_tensor(t.detach().numpy(), os.path.join(tmp, f"output_{j}.pb"))
        note = ""
        try:
            import onnxruntime as ort

            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            got = sess.run(None, feeds)
            if not training:
                diff = max(float(np.max(np.abs(g - t.detach().numpy()))) for g, t in zip(got, outputs))
                note = f"ort max abs diff {diff:.2e}"
        except Exception as e:  # onnxruntime is optional; record why it did not run
            note = f"ort: {type(e).__name__}: {str(e).splitlines()[0][:80]}"
        ops = sorted({n.op_type for n in model.graph.node})
        with open(os.path.join(tmp, "fixture.txt"), "w") as f:
            f.write(f"module = {name}\nexporter = {'dynamo' if dynamo else 'torchscript'}\n")
            f.write(f"opset = {opset}\ntorch = {torch.__version__}\nonnx = {onnx.__version__}\n")
            f.write(f"ops = {' '.join(ops)}\n")
            if note:
                f.write(f"onnxruntime = {note}\n")
            if training:
                f.write(f"{'attention_' if name == 'gpt2_attn_dropout' else ''}dropout_p = 0.1\n")
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        size = os.path.getsize(os.path.join(final, "model.onnx"))
        return f"{size // 1024} KiB, {len(model.graph.node)} nodes; {note}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join("tests", "frontends", "onnx_fixtures"))
    parser.add_argument("--only", action="append", choices=NAMES, help="export only these modules")
    parser.add_argument("-v", "--verbose", action="store_true", help="print full tracebacks of failures")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for name in args.only or NAMES:
        jobs = [(opset, True) for opset in OPSETS] + [(TS_OPSET, False)]
        for opset, dynamo in jobs:
            label = f"{name:14s} opset {opset:2d} {'dynamo' if dynamo else 'torchscript':11s}"
            try:
                rows.append((label, "ok", export_one(name, opset, dynamo, args.out)))
            except Exception as e:  # report every failure and go on
                first = (str(e).strip().splitlines() or [""])[0][:160]
                rows.append((label, "FAILED", f"{type(e).__name__}: {first}"))
                if args.verbose:
                    traceback.print_exc()
    print(f"\ntorch {torch.__version__}, onnx {onnx.__version__}; fixtures in {args.out}")
    for label, status, note in rows:
        print(f"  {label}  {status:6s}  {note}")
    failed = sum(1 for _, s, _ in rows if s != "ok")
    print(f"{len(rows) - failed} exported, {failed} failed")


if __name__ == "__main__":
    main()
