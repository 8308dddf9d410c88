"""Shared helpers for the kiln.dynamo tests (no tests here).

CliExecutable runs a kiln JSON graph on the `kiln` CLI's CPU reference interpreter
(`kiln run --reference`), so the converter and the backend can be checked without kiln's
shared library or a GPU. The binary is $KILN_BIN, else build/tools/kiln of this checkout.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, ROOT)

try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except Exception:  # noqa: BLE001
    HAVE_TORCH = False


def kiln_bin():
    b = os.environ.get("KILN_BIN") or os.path.join(ROOT, "build", "tools", "kiln")
    return b if os.path.isfile(b) and os.access(b, os.X_OK) else None


def have_kiln_lib():
    try:
        import kiln

        return hasattr(kiln, "compile")
    except Exception:  # noqa: BLE001
        return False


# per-dtype tolerances (torch.testing.assert_close defaults, widened for whole-graph rounding)
TOL = {}
if HAVE_TORCH:
    import torch

    TOL = {torch.float32: (1e-4, 1e-4), torch.float16: (1e-2, 1e-2), torch.bfloat16: (5e-2, 5e-2)}


class CliExecutable:
    """kiln.compile's Executable, CPU flavour: calls the CLI's reference interpreter."""

    takes_torch_cpu = True
    runs = 0

    def __init__(self, graph):
        self.graph = graph
        self.dir = tempfile.mkdtemp(prefix="kiln_dyn_")
        self.path = os.path.join(self.dir, "g.json")
        with open(self.path, "w") as f:
            json.dump(graph, f)
        b = kiln_bin()
        r = subprocess.run([b, "check", self.path], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"kiln check failed: {r.stdout}{r.stderr}")

    def __call__(self, *tensors):
        import numpy as np
        import torch

        CliExecutable.runs += 1
        ind = os.path.join(self.dir, "in")
        outd = os.path.join(self.dir, "out")
        os.makedirs(ind, exist_ok=True)
        for spec, t in zip(self.graph["inputs"], tensors):
            t = t.detach().contiguous()
            if t.dtype == torch.bfloat16:
                a = t.view(torch.int16).numpy().view(np.uint16)
            else:
                a = t.numpy()
            np.save(os.path.join(ind, spec["name"] + ".npy"), a)
        r = subprocess.run([kiln_bin(), "run", "--reference", self.path, "--inputs", ind, "--outputs", outd],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"kiln run failed: {r.stdout}{r.stderr}")
        outs = []
        for o in self.graph["outputs"]:
            name = o["name"] if isinstance(o, dict) else o
            a = np.load(os.path.join(outd, name + ".npy"))
            if a.dtype == np.uint16:  # the CLI stores bf16 as its bit patterns
                outs.append(torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16))
            else:
                outs.append(torch.from_numpy(a.copy()))
        return tuple(outs)


def cli_compile(graph):
    return CliExecutable(graph)
