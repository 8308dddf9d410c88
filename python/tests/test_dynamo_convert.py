"""kiln.dynamo on the CPU: the ATen -> kiln converter and the backend, checked against torch eager
through the `kiln` CLI's reference interpreter. Needs torch; the interpreter tests need the CLI
($KILN_BIN or build/tools/kiln). Neither kiln's shared library nor a GPU is needed.

    python3 -m unittest discover -s python/tests -p 'test_dynamo_*.py'
"""

import inspect
import io
import operator
import os
import sys
import unittest
import warnings
from contextlib import redirect_stderr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_dynamo_helpers import HAVE_TORCH, ROOT, TOL, cli_compile, have_kiln_lib, kiln_bin

if HAVE_TORCH:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.fx.experimental.proxy_tensor import make_fx

    import kiln.dynamo as kd
    from kiln.dynamo import convert as cv

    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import torch_modules as TM

needs_torch = unittest.skipUnless(HAVE_TORCH, "torch is not importable")
needs_cli = unittest.skipUnless(HAVE_TORCH and kiln_bin() is not None,
                                "torch or the kiln CLI (KILN_BIN / build/tools/kiln) is missing")


def trace(fn, *args):
    return make_fx(fn, tracing_mode="fake")(*args)


def op_graph(target, *args, **kwargs):
    """An FX graph calling one ATen overload on placeholders (the tensor args), with fake
    metadata, and a function running the overload eagerly; for ops make_fx would decompose."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    g = torch.fx.Graph()
    mode = FakeTensorMode()
    fargs, nargs = [], []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            ph = g.placeholder(f"a{i}")
            ph.meta["val"] = mode.from_tensor(a)
            nargs.append(ph)
            fargs.append(ph.meta["val"])
        else:
            nargs.append(a)
            fargs.append(a)
    node = g.call_function(target, tuple(nargs), kwargs)
    with mode:
        node.meta["val"] = target(*fargs, **kwargs)
    outs = node.meta["val"]
    if isinstance(outs, (tuple, list)):
        items = []
        for i, v in enumerate(outs):
            gi = g.call_function(operator.getitem, (node, i))
            gi.meta["val"] = v
            items.append(gi)
        g.output(tuple(items))
    else:
        g.output(node)
    return g


def ops_of(graph):
    return [n["op"] for n in graph["nodes"]]


def run_cli(fn, *args):
    """Traces fn to ATen, converts, runs on the interpreter; returns (kiln outputs, graph)."""
    gm = trace(fn, *args)
    graph, _ = cv.convert(gm.graph, module=gm)
    exe = cli_compile(graph)
    return exe(*[a for a in args if isinstance(a, torch.Tensor)]), graph


def assert_close(tc, got, want):
    rtol, atol = TOL.get(want.dtype, (0, 0))
    tc.assertEqual(got.dtype, want.dtype)
    tc.assertEqual(tuple(got.shape), tuple(want.shape))
    if want.dtype.is_floating_point:
        torch.testing.assert_close(got.float(), want.float(), rtol=rtol, atol=atol, equal_nan=True)
    else:
        tc.assertTrue(torch.equal(got, want), f"{got} != {want}")


@needs_torch
class HandlerTableTest(unittest.TestCase):
    def test_handler_parameters_match_the_aten_schemas(self):
        # bind_args passes arguments by schema name: a handler that names them wrong would fail
        # at conversion time (and fall back); this catches it early
        bad = []
        for t, fn in list(cv.HANDLERS.items()) + [(t, f) for t, f in cv.CHECKS.items()]:
            if t is operator.getitem or not hasattr(t, "_schema"):
                continue
            names = [a.name for a in t._schema.arguments]
            sig = inspect.signature(fn)
            skip = 2 if fn in cv.HANDLERS.values() else 1
            params = list(sig.parameters.values())[skip:]
            has_kw = any(p.kind == p.VAR_KEYWORD for p in params)
            pnames = [p.name for p in params if p.kind != p.VAR_KEYWORD]
            missing = [x for x in names if x not in pnames and not has_kw]
            extra = [p.name for p in params if p.kind != p.VAR_KEYWORD and p.name not in names
                     and p.default is inspect.Parameter.empty]
            if missing or extra:
                bad.append((str(t), missing, extra))
        self.assertEqual(bad, [])

    def test_backend_is_registered_once(self):
        import torch._dynamo

        self.assertTrue(kd.register())
        self.assertTrue(kd.register())
        self.assertIn("kiln", torch._dynamo.list_backends())


@needs_torch
class ConvertOpsTest(unittest.TestCase):
    """The JSON has the expected kiln ops (no interpreter needed)."""

    def graph(self, fn, *args):
        gm = trace(fn, *args)
        return cv.convert(gm.graph, module=gm)[0]

    def test_composites_stay_composite(self):
        x, w, b = torch.randn(4, 32), torch.randn(32), torch.randn(32)
        g = self.graph(lambda x, w, b: torch.softmax(F.gelu(F.layer_norm(x, [32], w, b), approximate="tanh"), -1),
                       x, w, b)
        self.assertEqual([o for o in ops_of(g) if o in ("layer_norm", "gelu_tanh", "softmax")],
                         ["layer_norm", "gelu_tanh", "softmax"])

    def test_attention_and_matmul(self):
        q = torch.randn(2, 4, 8, 16)
        g = self.graph(lambda q: torch.ops.aten._scaled_dot_product_efficient_attention(q, q, q, None, False,
                                                                                         is_causal=True)[0], q)
        self.assertIn("attention", ops_of(g))
        self.assertTrue([n for n in g["nodes"] if n["op"] == "attention"][0]["attrs"]["causal"])
        a, b = torch.randn(3, 4), torch.randn(4, 5)
        self.assertIn("matmul", ops_of(self.graph(lambda a, b: a @ b, a, b)))

    def test_attention_logsumexp_and_rng_outputs(self):
        # a training forward returns attention's logsumexp and rng seed/offset for the backward:
        # the logsumexp is attention_lse of the same operands, the seed and offset torch-side
        # constants (no dropout)
        q = torch.randn(2, 4, 8, 16)
        gm = trace(lambda q: torch.ops.aten._scaled_dot_product_efficient_attention(q, q, q, None, True,
                                                                                     is_causal=True), q)
        g, info = cv.convert(gm.graph, module=gm)
        self.assertIn("attention_lse", ops_of(g))
        lse = [n for n in g["nodes"] if n["op"] == "attention_lse"][0]
        att = [n for n in g["nodes"] if n["op"] == "attention"][0]
        self.assertEqual(lse["inputs"], att["inputs"][:2])
        self.assertEqual(lse["attrs"], att["attrs"])
        self.assertEqual(sum(isinstance(j, cv.TorchSide) for j in info["out_map"]), 2)
        # the output in the layout the trace gives it ([B,H,S,D] stored as [B,S,H,D]): computed
        # transposed, returned as the permuted view
        out = [n for n in gm.graph.nodes if n.op == "output"][0].args[0][0].meta["val"]
        if not out.is_contiguous():
            self.assertIsInstance(info["out_map"][0], tuple)
            self.assertIn("transpose", ops_of(g))
            self.assertEqual(info["out_map"][0][1], (0, 2, 1, 3))

    def test_scalar_constants_take_the_tensor_dtype(self):
        x = torch.randn(4, 4, dtype=torch.bfloat16)
        g = self.graph(lambda x: x * 0.5 + 1, x)
        self.assertTrue(all(i["dtype"] == "bf16" for i in g["initializers"]))
        self.assertNotIn("cast", ops_of(g))

    def test_unsupported_op_is_reported(self):
        x = torch.randn(4, 4)
        gm = trace(lambda x: torch.cos(x), x)
        node = [n for n in gm.graph.nodes if n.op == "call_function"][0]
        cv._ALLOW_CPU[0] = True
        try:
            self.assertIn("no kiln mapping", cv.why_unsupported(node))
        finally:
            cv._ALLOW_CPU[0] = False
        self.assertRaises(cv.Unsupported, cv.convert, gm.graph)

    def test_mixed_dtype_matmul_stays_in_torch(self):
        # torch raises on f16 @ f32 at run time; kiln must not quietly cast and compute it
        gm = trace(lambda a, b: a @ b, torch.randn(3, 4), torch.randn(4, 5))
        a = [n for n in gm.graph.nodes if n.op == "placeholder"][0]
        a.meta["val"] = a.meta["val"].to(torch.float16)
        node = [n for n in gm.graph.nodes if n.op == "call_function"][0]
        cv._ALLOW_CPU[0] = True
        try:
            self.assertIn("different dtypes", cv.why_unsupported(node))
        finally:
            cv._ALLOW_CPU[0] = False

    def test_view_outputs_stay_views_and_duplicates_are_one_output(self):
        # a region returning w.t() (saved for the backward) and x.exp() twice (as itself and
        # detached): kiln computes exp once, and w.t() is a torch view, not a kiln transpose
        from kiln.dynamo import backend as kb

        def f(x, w):
            e = torch.exp(x)
            return w.t(), e, e.detach()

        gm = trace(f, torch.randn(3, 4), torch.randn(5, 4))
        chains = kb._view_chains(gm)
        self.assertEqual(list(chains), [0])
        g, info = cv.convert(gm.graph, module=gm, torch_outputs=kb.torch_outputs(chains))
        self.assertEqual(info["out_map"], [None, 0, 0])
        self.assertEqual(len(g["outputs"]), 1)
        # the transpose is left dead in the JSON (kiln's dead-node pass drops it)
        out = [n for n in g["nodes"] if n["name"] == g["outputs"][0]["node"]][0]
        self.assertEqual(out["op"], "exp")
        x, w = torch.randn(3, 4), torch.randn(5, 4)
        self.assertTrue(torch.equal(kb._replay_view(chains[0], w), w.t()))

    def test_strided_views_of_computed_values_are_torch_views_of_kiln_outputs(self):
        # q, k, v saved for an attention backward: [B,H,S,D] views (through split and getitem)
        # of one [B,S,3*H*D] projection. kiln returns the projection once and torch takes the
        # three views of it, where kiln would write a strided copy of each; a contiguous view
        # (the reshape) stays a kiln output.
        from kiln.dynamo import backend as kb

        def f(x, w):
            qkv = torch.matmul(x, w)
            q, k, v = qkv.split(8, dim=-1)
            heads = [t.view(2, 5, 2, 4).transpose(1, 2) for t in (q, k, v)]
            return (*heads, torch.exp(qkv).reshape(10, 24))

        x, w = torch.randn(2, 5, 6), torch.randn(6, 24)
        gm = trace(f, x, w)
        chains = kb._view_chains(gm)
        self.assertEqual(sorted(chains), [0, 1, 2])
        for base, nodes in chains.values():
            self.assertEqual(base[0], "node")
        g, info = cv.convert(gm.graph, module=gm, torch_outputs=kb.torch_outputs(chains))
        self.assertEqual(info["out_map"][:3], [cv.ViewOf(0)] * 3)
        self.assertEqual(info["out_map"][3], 1)
        self.assertEqual(len(g["outputs"]), 2)
        qkv = torch.matmul(x, w)
        for i, want in enumerate(f(x, w)[:3]):
            got = kb._replay_view(chains[i], qkv)
            self.assertTrue(torch.equal(got, want))
            self.assertEqual(got.stride(), want.stride())
        # a small strided slice of a computed value (a column of exp(x)) stays a kiln output:
        # returning the whole base for it would write and keep far more
        gm = trace(lambda x: torch.exp(x)[:, 0], torch.randn(4, 8))
        self.assertEqual(kb._view_chains(gm), {})

    def test_cpu_nodes_are_declined_by_default(self):
        gm = trace(lambda x: torch.exp(x), torch.randn(3))
        node = [n for n in gm.graph.nodes if n.op == "call_function"][0]
        self.assertIn("kiln runs on CUDA", cv.why_unsupported(node))


@needs_cli
class InterpreterTest(unittest.TestCase):
    """Converted graphs evaluated by `kiln run --reference` match torch eager on the CPU."""

    DTYPES = (torch.float32, torch.float16, torch.bfloat16)

    def check(self, fn, *args):
        want = fn(*args)
        want = want if isinstance(want, tuple) else (want,)
        got, graph = run_cli(fn, *args)
        self.assertEqual(len(got), len(want))
        for g, w in zip(got, want):
            assert_close(self, g, w)
        return graph

    def test_pointwise_and_promotion(self):
        for dt in self.DTYPES:
            with self.subTest(dtype=dt):
                x = torch.randn(5, 7).to(dt)
                y = torch.randn(7).to(dt)
                self.check(lambda x, y: (torch.sigmoid(x) * 3 - y / 2 + torch.relu(-x)).exp() ** 2, x, y)
                self.check(lambda x, y: torch.where(x > y, torch.rsqrt(x.abs() + 1), torch.tanh(y)), x, y)
                self.check(lambda x, y: torch.clamp(x, -0.5, 0.5) + torch.maximum(x, y) + torch.erf(x), x, y)
                self.check(lambda x: F.silu(x) + F.gelu(x) - x.sub(1, alpha=2), x)

    def test_int_and_bool(self):
        i = torch.randint(-5, 5, (4, 6))
        self.check(lambda i: (i * 2 + 1, i > 0, (i > 0) & (i < 3), i.float() / 3), i)

    def test_reductions(self):
        for dt in self.DTYPES:
            with self.subTest(dtype=dt):
                x = torch.randn(3, 5, 8).to(dt)
                self.check(lambda x: (x.sum(-1), x.mean((0, 2), keepdim=True), x.amax(1), x.amin(-1, keepdim=True)), x)
        x = torch.randn(3, 5, 8)
        self.check(lambda x: (torch.var(x, -1), torch.var(x, (0, 1), correction=0, keepdim=True)), x)

    def test_layout(self):
        x = torch.randn(2, 3, 4, 6)
        self.check(lambda x: (x.permute(0, 2, 1, 3).reshape(2, 4, 18), x.transpose(1, 3)[:, 1:5:2],
                              x.unsqueeze(1).expand(2, 5, 3, 4, 6), torch.cat([x, x * 2], 2), x.select(1, 2),
                              x.chunk(2, -1)[1], x.float().to(torch.float16)), x)

    def test_norms_softmax_and_their_statistics(self):
        for dt in self.DTYPES:
            with self.subTest(dtype=dt):
                x, w, b = torch.randn(6, 32).to(dt), torch.randn(32).to(dt), torch.randn(32).to(dt)
                self.check(lambda x, w, b: torch.ops.aten.native_layer_norm(x, [32], w, b, 1e-5), x, w, b)
                self.check(lambda x: (torch._softmax(x, -1, False), torch._log_softmax(x, 0, False)), x)
                g = op_graph(torch.ops.aten._fused_rms_norm.default, x, [32], w, 1e-6)
                graph, _ = cv.convert(g)
                self.assertIn("rms_norm", ops_of(graph))
                got = cli_compile(graph)(x, w)
                want = (F.rms_norm(x.float(), [32], w.float(), 1e-6).to(dt),
                        torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6))
                for a, b in zip(got, want):
                    assert_close(self, a, b.to(a.dtype) if a.dtype != b.dtype else b)

    def test_nll_loss_and_cross_entropy(self):
        logits = torch.randn(9, 11)
        t = torch.randint(0, 11, (9,))
        t[2] = -100
        for red in (0, 1, 2):
            g = self.check(lambda x, t: torch.ops.aten.nll_loss_forward(torch._log_softmax(x, 1, False), t, None, red, -100),
                           logits, t)
            self.assertIn("cross_entropy", ops_of(g))
            # not from a log_softmax: the gather form
            lp = torch.log_softmax(logits, -1)
            g = self.check(lambda lp, t: torch.ops.aten.nll_loss_forward(lp, t, None, red, -100), lp, t)
            self.assertIn("gather", ops_of(g))

    def test_nll_loss_backward(self):
        # the gradient as a where over an iota of the classes, no scatter: mean, sum and none,
        # an ignored row
        lp = torch.log_softmax(torch.randn(9, 11), -1)
        t = torch.randint(0, 11, (9,))
        t[2] = -100
        for red in (0, 1, 2):
            with self.subTest(reduction=red):
                gout = torch.randn(9) if red == 0 else torch.randn(())
                tw = torch.tensor(8.0)
                g = op_graph(torch.ops.aten.nll_loss_backward.default, gout, lp, t, None, red, -100, tw)
                graph, _ = cv.convert(g)
                self.assertIn("iota", ops_of(graph))
                self.assertNotIn("scatter", ops_of(graph))
                got = cli_compile(graph)(gout, lp, t, tw)
                want = torch.ops.aten.nll_loss_backward(gout, lp, t, None, red, -100, tw)
                assert_close(self, got[0] if isinstance(got, (tuple, list)) else got, want)

    def test_attention(self):
        for dt in self.DTYPES:
            with self.subTest(dtype=dt):
                q, k, v = (torch.randn(2, 3, 8, 16).to(dt) for _ in range(3))
                mask = torch.rand(2, 1, 8, 8) > 0.3
                mask[..., 0] = True
                self.check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v)
                self.check(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3),
                           q, k, v, mask)

    def test_permuted_input_becomes_a_transpose(self):
        x = torch.randn(4, 6)
        gm = trace(lambda x: x * 2 + 1, x)
        graph, _ = cv.convert(gm.graph, [("f32", (4, 6), (1, 0))])
        self.assertEqual(graph["inputs"][0]["shape"], [6, 4])
        self.assertIn("transpose", ops_of(graph))
        (got,) = cli_compile(graph)(x.t().contiguous())
        assert_close(self, got, x * 2 + 1)


class _Backend:
    """Runs kiln.dynamo regions on the CLI interpreter with CPU tensors."""

    def setUp(self):
        import torch._dynamo

        torch._dynamo.reset()
        self._saved = (kd.config.allow_cpu, kd.config.compile_fn)
        kd.config.allow_cpu = True
        kd.config.compile_fn = cli_compile

    def tearDown(self):
        kd.config.allow_cpu, kd.config.compile_fn = self._saved
        cv._ALLOW_CPU[0] = False
        torch._dynamo.reset()


@needs_cli
class BackendTest(_Backend, unittest.TestCase):
    def test_five_modules_eval_and_train_match_eager(self):
        for name in TM.NAMES:
            for train in (False, True):
                with self.subTest(module=name, train=train):
                    torch.manual_seed(0)
                    m = TM.build(name, d=32, heads=4, kv_heads=2, vocab=50, p=0.0).train(train)
                    inp = TM.make_inputs(name, m, batch=2, seq=8, device="cpu")
                    ref = m(*inp)
                    ref.float().sum().backward()
                    gref = [p.grad.clone() for p in m.parameters()]
                    m.zero_grad()
                    torch._dynamo.reset()
                    before = dict(kd.stats)
                    cm = torch.compile(m, backend="kiln", dynamic=False)
                    out = cm(*inp)
                    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
                    out.float().sum().backward()
                    for p, g in zip(m.parameters(), gref):
                        torch.testing.assert_close(p.grad, g, rtol=1e-4, atol=1e-4)
                    m.zero_grad()
                    self.assertGreater(kd.stats["runs"], before["runs"])
                    self.assertEqual(kd.stats["fallbacks"], before["fallbacks"])

    def test_second_call_compiles_nothing_and_a_new_batch_is_a_miss(self):
        m = TM.build("swiglu_mlp", d=32).eval()
        cm = torch.compile(m, backend="kiln", dynamic=False)
        with torch.no_grad():
            x = torch.randn(2, 8, 32)
            cm(x)
            n = kd.stats["compiles"]
            hits = kd.stats["cache_hits"]
            cm(x)
            self.assertEqual(kd.stats["compiles"], n)
            self.assertEqual(kd.stats["cache_hits"], hits + 1)
            y = cm(torch.randn(3, 8, 32))
            self.assertGreater(kd.stats["compiles"], n)
            torch.testing.assert_close(y.shape, torch.Size([3, 8, 32]))

    def test_failures_fall_back_with_one_warning(self):
        calls = []

        def broken(graph):
            calls.append(graph)
            raise RuntimeError("kiln.compile exploded")

        kd.config.compile_fn = broken
        m = TM.build("swiglu_mlp", d=32).eval()
        x = torch.randn(2, 8, 32)
        cm = torch.compile(m, backend="kiln", dynamic=False)
        with torch.no_grad(), warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            torch.testing.assert_close(cm(x), m(x))
            torch.testing.assert_close(cm(x), m(x))
        mine = [x for x in w if "kiln" in str(x.message)]
        self.assertEqual(len(mine), 1, [str(x.message) for x in w])
        self.assertIn("exploded", str(mine[0].message))
        self.assertEqual(len(calls), 1)  # the fallback is remembered

    def test_explain_and_log(self):
        m = TM.build("gpt2_block", d=32, p=0.0).eval()
        x = TM.make_inputs("gpt2_block", m, batch=1, seq=8, device="cpu")
        err = io.StringIO()
        os.environ["KILN_TORCH_LOG"] = "1"
        try:
            with redirect_stderr(err), torch.no_grad():
                rep = kd.explain(m, *x)
        finally:
            del os.environ["KILN_TORCH_LOG"]
        self.assertTrue(rep.kiln_regions())
        self.assertTrue(all({"graph", "region", "ops", "target", "reason"} <= set(r) for r in rep))
        self.assertIn("native_layer_norm.default", [o for r in rep.kiln_regions() for o in r["ops"]])
        self.assertIn("-> kiln", err.getvalue())
        self.assertIn("kiln", str(rep))
        if have_kiln_lib():  # the same report from the package's top level
            import kiln

            with torch.no_grad():
                self.assertEqual(len(kiln.explain(m, *x).kiln_regions()), len(rep.kiln_regions()))

    def test_dropout_is_seeded_and_its_mask_feeds_the_backward(self):
        lin = nn.Linear(64, 64)

        def f(x):
            return F.dropout(lin(x), 0.3, True) * 2.0 + 1.0

        x = torch.randn(32, 64, requires_grad=True)
        cf = torch.compile(f, backend="kiln", dynamic=False)
        torch.manual_seed(1)
        y1 = cf(x)
        torch.manual_seed(1)
        y2 = cf(x)
        y3 = cf(x)
        self.assertTrue(torch.equal(y1, y2))
        self.assertFalse(torch.equal(y1, y3))
        kept = y1 != 1.0
        self.assertLess(abs(kept.float().mean().item() - 0.7), 0.05)
        base = lin(x)
        torch.testing.assert_close((y1 - 1)[kept], (base * 2)[kept] / 0.7, rtol=1e-5, atol=1e-5)
        g = torch.randn_like(y1)
        y1.backward(g)
        torch.testing.assert_close(x.grad, ((g * 2) * kept / 0.7) @ lin.weight, rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    unittest.main()
