"""torch.compile(m, backend="kiln") on the GPU against eager: the five modules of
bench/torch_modules.py in f32 and bf16, eval and train. Needs torch with CUDA and kiln's
library (kiln.compile); skipped otherwise.

    python3 -m unittest python/tests/test_dynamo_e2e.py
"""

import os
import sys
import unittest
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_dynamo_helpers import HAVE_TORCH, ROOT, have_kiln_lib

if HAVE_TORCH:
    import torch

    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import torch_modules as TM

HAVE_CUDA = HAVE_TORCH and torch.cuda.is_available()
needs_gpu = unittest.skipUnless(HAVE_CUDA and have_kiln_lib(), "needs torch with CUDA and kiln's library")

# output and gradient tolerances per dtype (a whole block, rounding at every kernel boundary)
TOL = {"f32": (2e-3, 2e-3), "bf16": (6e-2, 6e-2)}
DTYPES = {"f32": None, "bf16": None}
if HAVE_TORCH:
    DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def _compile(m):
    import torch._dynamo

    torch._dynamo.reset()
    return torch.compile(m, backend="kiln", dynamic=False)


@needs_gpu
class EndToEndTest(unittest.TestCase):
    def setUp(self):
        import kiln.dynamo as kd

        self.kd = kd

    def _module(self, name, dt, train, p=0.0):
        torch.manual_seed(0)
        m = TM.build(name, d=256, heads=4 if name != "llama_block" else 8, kv_heads=2, vocab=1000, p=p)
        m = m.to("cuda", DTYPES[dt]).train(train)
        inp = TM.make_inputs(name, m, batch=2, seq=128, device="cuda", dtype=DTYPES[dt])
        return m, inp

    def test_modules_match_eager(self):
        for name in TM.NAMES:
            for dt in ("f32", "bf16"):
                for train in (False, True):
                    with self.subTest(module=name, dtype=dt, train=train):
                        m, inp = self._module(name, dt, train)
                        rtol, atol = TOL[dt]
                        ref = m(*inp)
                        if train:
                            ref.float().sum().backward()
                            gref = [p.grad.clone() for p in m.parameters()]
                            m.zero_grad()
                        before = dict(self.kd.stats)
                        cm = _compile(m)
                        with warnings.catch_warnings(record=True) as w:
                            warnings.simplefilter("always")
                            out = cm(*inp)
                            if train:
                                out.float().sum().backward()
                        torch.testing.assert_close(out.float(), ref.float(), rtol=rtol, atol=atol)
                        if train:
                            for p, g in zip(m.parameters(), gref):
                                torch.testing.assert_close(p.grad.float(), g.float(), rtol=rtol, atol=atol * 4)
                            m.zero_grad()
                        self.assertGreater(self.kd.stats["runs"], before["runs"], "no kiln region ran")
                        self.assertEqual([str(x.message) for x in w if "kiln" in str(x.message)], [])
                        # same shapes again: nothing compiles
                        n = self.kd.stats["compiles"]
                        cm(*inp)
                        self.assertEqual(self.kd.stats["compiles"], n)

    def test_dropout_statistics_and_self_consistency(self):
        for name in ("gpt2_block", "bert_layer"):
            with self.subTest(module=name):
                m, inp = self._module(name, "f32", True, p=0.1)
                cm = _compile(m)
                torch.manual_seed(3)
                a = cm(*inp)
                torch.manual_seed(3)
                b = cm(*inp)
                c = cm(*inp)
                self.assertTrue(torch.equal(a, b), "torch.manual_seed does not make kiln's dropout repeatable")
                self.assertFalse(torch.equal(a, c))
                m.eval()
                ev = m(*inp)
                # the mean over many elements of train-mode outputs stays near eval mode's
                self.assertLess((a.float().mean() - ev.float().mean()).abs().item(), 0.05)
        x = torch.ones(1 << 20, device="cuda", requires_grad=True)
        f = _compile(lambda x: torch.nn.functional.dropout(x * 2.0, 0.25, True) + 0.0)
        y = f(x)
        kept = (y != 0).float().mean().item()
        self.assertLess(abs(kept - 0.75), 0.005)
        y.sum().backward()
        torch.testing.assert_close(x.grad, (y != 0).float() * 2.0 / 0.75)

    def test_bad_calls_raise_and_do_not_corrupt_later_calls(self):
        m, inp = self._module("swiglu_mlp", "f32", False)
        cm = _compile(m)
        with torch.no_grad():
            good = cm(*inp)
            # each unusual call behaves as torch's own trace of the module does (backend
            # "aot_eager": the same ATen graphs, run by torch): raises where it raises (a CPU
            # tensor, a wrong width), matches it where it accepts the call. (An f16 input to
            # this f32 module raises in eager, but the traced graph promotes it in rms_norm.)
            # (3 + 4 entries in the one code object's cache: under dynamo's recompile limit)
            ref = torch.compile(m, backend="aot_eager", dynamic=False)
            for bad in (inp[0].cpu(), inp[0].to(torch.float16), inp[0][..., :100]):
                with self.subTest(bad=(bad.device.type, bad.dtype, tuple(bad.shape))):
                    try:
                        want = ref(bad)
                    except Exception:  # noqa: BLE001
                        with self.assertRaises(Exception):
                            cm(bad)
                        continue
                    torch.testing.assert_close(cm(bad).float(), want.float(), rtol=1e-2, atol=1e-2)
            torch.testing.assert_close(cm(*inp), good)

    def test_explain(self):
        m, inp = self._module("gpt2_block", "bf16", False)
        with torch.no_grad():
            rep = self.kd.explain(m, *inp)
        self.assertTrue(rep.kiln_regions(), str(rep))
        ops = [o for r in rep.kiln_regions() for o in r["ops"]]
        self.assertTrue(any("attention" in o for o in ops), str(rep))
        self.assertTrue(any("layer_norm" in o for o in ops), str(rep))


    def test_train_forward_keeps_attention_in_kiln(self):
        # The backward reads attention's logsumexp (and rng seed/offset): kiln writes the
        # logsumexp beside the output (attention_lse), so the forward's attention, norms and
        # projections stay in kiln, f32 (efficient SDPA) and bf16 (cuDNN SDPA) alike.
        for dt in ("f32", "bf16"):
            with self.subTest(dtype=dt):
                m, inp = self._module("gpt2_block", dt, True)
                rep = self.kd.explain(m, *inp, backward=True)
                ops = [o for r in rep.kiln_regions() for o in r["ops"]]
                self.assertTrue(any("scaled_dot_product" in o for o in ops), str(rep))

    def test_forward_does_not_save_what_the_backward_recomputes(self):
        # The backward recomputes log_softmax from the saved logits (the LM head) and softmax
        # from the saved scores (BERT's attention written out), after a recompute hint to the
        # min-cut partitioner: the forward writes no such [tokens, vocab] or [B, H, S, S]
        # output, and the backward's graph holds the op it recomputes.
        import kiln

        graphs = []

        def capture(graph):
            graphs.append(graph)
            return kiln.compile(graph, **self.kd.config.compile_kwargs)

        for name, op in (("lm_head", "log_softmax"), ("bert_layer", "softmax")):
            for dt in ("f32", "bf16"):
                with self.subTest(module=name, dtype=dt):
                    m, inp = self._module(name, dt, True)
                    saved, self.kd.config.compile_fn = self.kd.config.compile_fn, capture
                    try:
                        graphs.clear()
                        f = _compile(m)
                        out = f(*inp)
                        forward = list(graphs)
                        out.float().sum().backward()
                        backward = graphs[len(forward):]
                    finally:
                        self.kd.config.compile_fn = saved
                    self.assertTrue(forward and backward, "no kiln graph was compiled")

                    def ops(g):
                        return {n["name"]: n["op"] for n in g["nodes"]}

                    for g in forward:
                        by_name = ops(g)
                        produced = [by_name.get(o["node"]) for o in g["outputs"]]
                        self.assertNotIn(op, produced, f"the forward saves the {op} output")
                    self.assertTrue(any(op in ops(g).values() for g in backward),
                                    f"the backward does not recompute {op}")


if __name__ == "__main__":
    unittest.main()
