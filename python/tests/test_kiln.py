"""Tests of the Python package (python/kiln) on the CPU: loading, building, the reference
interpreter against independent numpy computations, compiling for sm_90a (NVRTC, no GPU),
artifacts, the ledger, the fusion report, and the error paths. Run by CTest (python_kiln_test)
with PYTHONPATH=python and KILN_LIBRARY=build/api/libkiln.so; skips without numpy.

    PYTHONPATH=python KILN_LIBRARY=build/api/libkiln.so python3 -m unittest discover -s python/tests -v
"""

import json
import os
import tempfile
import unittest
from pathlib import Path

try:
    import numpy as np
except ImportError:  # the numpy path is optional
    np = None

import kiln

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "examples" / "small"


def bf16_round(x):
    """float32 -> nearest bf16 value, as float32 (independent of kiln._arrays)."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32)


@unittest.skipIf(np is None, "numpy is not installed")
class GraphTest(unittest.TestCase):
    def test_load_and_query(self):
        g = kiln.Graph(SMALL / "softmax.json")
        self.assertEqual(g.name, "softmax")
        self.assertEqual(g.inputs, [kiln.TensorInfo("x", "bf16", (7, 40))])
        self.assertEqual([o.name for o in g.outputs], ["y"])
        self.assertIn("<kiln.Graph 'softmax'", repr(g))

    def test_sources_agree(self):
        text = (SMALL / "layernorm.json").read_text()
        for source in (str(SMALL / "layernorm.json"), text, json.loads(text), kiln.Graph(text)):
            self.assertEqual(kiln.Graph(source).inputs[0].shape, (7, 40))
        again = kiln.Graph(kiln.Graph(text).to_json())
        self.assertEqual(again.outputs, kiln.Graph(text).outputs)

    def test_softmax_reference_matches_numpy(self):
        g = kiln.Graph(SMALL / "softmax.json")
        x = np.random.default_rng(0).uniform(-3, 3, size=(7, 40)).astype(np.float32)
        (y,) = g.reference(x)
        self.assertEqual(y.dtype, np.float32)  # bf16 comes back widened
        xb = bf16_round(x).astype(np.float64)
        e = np.exp(xb - xb.max(axis=-1, keepdims=True))
        want = bf16_round((e / e.sum(axis=-1, keepdims=True)).astype(np.float32))
        np.testing.assert_allclose(y, want, rtol=1e-2, atol=1e-3)
        # bf16 bit patterns as uint16 give the same result
        (y_bits,) = g.reference(bf16_round(x).view(np.uint32).astype(np.uint64).__rshift__(16).astype(np.uint16))
        np.testing.assert_array_equal(y, y_bits)

    def test_layernorm_reference_matches_numpy(self):
        g = kiln.Graph(SMALL / "layernorm.json")
        eps = json.loads((SMALL / "layernorm.json").read_text())["nodes"][0]["attrs"]["eps"]
        rng = np.random.default_rng(1)
        x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((7, 40), (40,), (40,)))
        (y,) = g.reference(x, w, b)
        xb, wb, bb = (bf16_round(a).astype(np.float64) for a in (x, w, b))
        mean = xb.mean(-1, keepdims=True)
        var = ((xb - mean) ** 2).mean(-1, keepdims=True)
        want = bf16_round(((xb - mean) / np.sqrt(var + eps) * wb + bb).astype(np.float32))
        np.testing.assert_allclose(y, want, rtol=2e-2, atol=2e-2)

    def test_built_graph(self):
        g = kiln.Graph.create("built")
        x = g.add_input("x", "f32", (3, 4))
        c = g.add_constant("c", np.full((4,), 2.0, dtype=np.float32))
        y = g.add_node("mul", [x, c], name="y")
        z = g.add_node("softmax", [y], {"axis": -1}, name="z")
        g.add_output(z)
        self.assertEqual(g.value_info(z), kiln.TensorInfo("z", "f32", (3, 4)))
        a = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
        (out,) = g.reference(a)
        e = np.exp(2 * a.astype(np.float64))
        np.testing.assert_allclose(out, e / e.sum(-1, keepdims=True), rtol=1e-6)

    def test_dump(self):
        report = kiln.dump(SMALL / "layernorm.json")
        self.assertIn("region", report)
        ledger = json.loads(kiln.dump(SMALL / "layernorm.json", format="json"))
        self.assertIn("regions", ledger)


@unittest.skipIf(np is None, "numpy is not installed")
class ErrorTest(unittest.TestCase):
    def test_bad_json_names_the_place(self):
        with self.assertRaises(kiln.KilnInputError) as cm:
            kiln.Graph('{"kiln_graph": 1, "name": ')
        self.assertIn("<json>:1:", str(cm.exception))
        self.assertIsInstance(cm.exception, ValueError)
        self.assertEqual(cm.exception.status, "KILN_ERROR_INVALID_ARGUMENT")

    def test_missing_file(self):
        with self.assertRaises(kiln.KilnIOError) as cm:
            kiln.Graph("/nonexistent/graph.json")
        self.assertIn("/nonexistent/graph.json", str(cm.exception))

    def test_wrong_inputs(self):
        g = kiln.Graph(SMALL / "layernorm.json")
        x = np.zeros((7, 40), np.float32)
        with self.assertRaisesRegex(ValueError, r"takes 3 inputs \(x, w, b\), got 1"):
            g.reference(x)
        with self.assertRaisesRegex(ValueError, r"input #1 'w': expected shape \(40,\), got \(41,\)"):
            g.reference(x, np.zeros(41, np.float32), np.zeros(40, np.float32))
        with self.assertRaisesRegex(ValueError, r"input #0 'x': .*bf16.*float64"):
            g.reference(np.zeros((7, 40)), np.zeros(40, np.float32), np.zeros(40, np.float32))
        f32 = kiln.Graph.create("f")
        f32.add_output(f32.add_node("relu", [f32.add_input("x", "f32", (2,))], name="y"))
        with self.assertRaisesRegex(ValueError, r"input #0 'x': expected f32 \(float32\), got float16"):
            f32.reference(np.zeros(2, np.float16))

    def test_builder_errors(self):
        g = kiln.Graph.create()
        x = g.add_input("x", "f32", (2, 3))
        with self.assertRaisesRegex(kiln.KilnInputError, "unknown attribute"):
            g.add_node("softmax", [x], {"axiz": 0})
        with self.assertRaisesRegex(kiln.KilnInputError, "no value with id 7"):
            g.add_node("relu", [7])
        with self.assertRaises(TypeError):
            kiln.Graph(42)


@unittest.skipIf(np is None, "numpy is not installed")
class CompileTest(unittest.TestCase):
    def test_compile_save_load_for_sm90a(self):
        exe = kiln.compile(SMALL / "softmax.json", device="sm_90a", cache_dir="")
        self.assertEqual(exe.arch, "sm_90a")
        self.assertEqual(exe.inputs, kiln.Graph(SMALL / "softmax.json").inputs)
        ledger = exe.ledger()
        self.assertTrue(ledger["lowered"])
        self.assertEqual(ledger["lowered"][0]["record"], "lowered")
        x = np.random.default_rng(2).uniform(-1, 1, (7, 40)).astype(np.float32)
        (want,) = kiln.Graph(SMALL / "softmax.json").reference(x)
        (got,) = exe(x)  # numpy: the CPU reference
        np.testing.assert_array_equal(got, want)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "softmax.kiln")
            exe.save(path)
            loaded = kiln.load(path)
            self.assertEqual(loaded.arch, "sm_90a")
            self.assertEqual(loaded.outputs, exe.outputs)
        with self.assertRaises(kiln.KilnIOError):
            kiln.load("/nonexistent/x.kiln")

    def test_memory_reports_the_arena_and_its_liveness_bound(self):
        # The transformer block has intermediates (the arena); its weights are inputs here.
        exe = kiln.compile(SMALL / "transformer_block.json", device="sm_90a", cache_dir="")
        memory = exe.memory
        self.assertEqual(set(memory), {"arena", "live_bound", "constants"})
        self.assertGreater(memory["live_bound"], 0)
        self.assertGreaterEqual(memory["arena"], memory["live_bound"])
        self.assertGreaterEqual(memory["constants"], 0)

    def test_cuda_graph_option_and_launch_counts(self):
        exe = kiln.compile(SMALL / "softmax.json", device="sm_90a", cache_dir="")
        self.assertFalse(exe.cuda_graph)
        stream = exe.launches_per_run
        self.assertGreaterEqual(stream["kernels"], 1)
        self.assertEqual(stream["graph_launches"], 0)
        self.assertEqual(stream["total"], stream["kernels"] + stream["library_calls"] + stream["copies"])
        exe.cuda_graph = True
        self.assertEqual(exe.launches_per_run, {"kernels": 0, "library_calls": 0, "copies": 0, "graph_launches": 1,
                                                "total": 1})
        graphed = kiln.compile(SMALL / "softmax.json", device="sm_90a", cache_dir="", cuda_graph=True)
        self.assertTrue(graphed.cuda_graph)
        self.assertEqual(graphed.launches_per_run["total"], 1)
        x = np.zeros((7, 40), dtype=np.float32)
        with self.assertRaises(TypeError):
            graphed(x, out=(x,))  # out= is for torch tensors


if __name__ == "__main__":
    unittest.main()
