"""GPU tests of the Python package (CTest python_kiln_gpu_test, label gpu): torch CUDA tensors
through kiln.compile, zero-copy on torch's current stream, against the CPU reference, and the
ValueErrors for wrong dtype, shape, device and layout; cuda_graph=True (with out= and without)
bitwise equal to the stream path. Skips without torch, CUDA or numpy."""

import unittest
from pathlib import Path

try:
    import numpy as np
    import torch
    HAVE = torch.cuda.is_available()
except ImportError:
    HAVE = False

import kiln

SMALL = Path(__file__).resolve().parents[2] / "examples" / "small"


@unittest.skipUnless(HAVE and kiln.have_gpu(), "needs torch with CUDA, numpy and a GPU")
class TorchTest(unittest.TestCase):
    def test_softmax_on_torch_tensors(self):
        exe = kiln.compile(SMALL / "softmax.json")
        x = torch.randn(7, 40, device="cuda", dtype=torch.bfloat16)
        (y,) = exe(x)
        self.assertEqual((y.dtype, tuple(y.shape), y.device), (torch.bfloat16, (7, 40), x.device))
        (want,) = exe.graph.reference(x.float().cpu().numpy())
        np.testing.assert_allclose(y.float().cpu().numpy(), want, atol=1e-2)
        # on a side stream
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            (y2,) = exe(x)
        s.synchronize()
        torch.testing.assert_close(y2, y)

    def test_layernorm_against_torch(self):
        exe = kiln.compile(SMALL / "layernorm.json")
        x, w, b = (torch.randn(s, device="cuda", dtype=torch.bfloat16) for s in ((7, 40), (40,), (40,)))
        (y,) = exe(x, w, b)
        want = torch.nn.functional.layer_norm(x.float(), (40,), w.float(), b.float(), 1e-5)
        torch.testing.assert_close(y.float(), want, atol=3e-2, rtol=3e-2)

    def test_cuda_graph_matches_the_stream_path(self):
        exe = kiln.compile(SMALL / "transformer_block.json")
        graphed = kiln.compile(SMALL / "transformer_block.json", cuda_graph=True)
        self.assertEqual(graphed.launches_per_run["total"], 1)
        dtypes = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
        inputs = [torch.randn(tuple(i.shape), device="cuda").to(dtypes[i.dtype]) for i in exe.inputs]
        want = exe(*inputs)
        out = tuple(torch.empty_like(w) for w in want)
        for _ in range(3):  # capture, then replays on the same pointers
            for o in out:
                o.fill_(float("nan"))
            got = graphed(*inputs, out=out)
            self.assertIs(got[0], out[0])
            for g, w in zip(got, want):
                self.assertTrue(torch.equal(g, w))
        got = graphed(*inputs)  # new output tensors: captured again, graph updated
        for g, w in zip(got, want):
            self.assertTrue(torch.equal(g, w))
        with self.assertRaisesRegex(ValueError, "output #0"):
            graphed(*inputs, out=tuple(o.float() if o.dtype != torch.float32 else o.half() for o in out))

    def test_errors(self):
        exe = kiln.compile(SMALL / "softmax.json")
        x = torch.randn(7, 40, device="cuda", dtype=torch.bfloat16)
        with self.assertRaisesRegex(ValueError, "input #0 'x': expected torch.bfloat16"):
            exe(x.float())
        with self.assertRaisesRegex(ValueError, "expected shape"):
            exe(x[:6])
        with self.assertRaisesRegex(ValueError, "not contiguous"):
            exe(torch.randn(40, 7, device="cuda", dtype=torch.bfloat16).t())
        with self.assertRaisesRegex(ValueError, "takes 1 inputs"):
            exe(x, x)


if __name__ == "__main__":
    unittest.main()
