"""The torch.compile backend: AOTAutograd graphs -> kiln regions + torch, never failing.

kiln_backend(gm, example_inputs) wraps a compiler in AOTAutograd, so the forward and the backward
ATen graphs of a training step each come here (fw_compiler / bw_compiler). Each graph is split with
torch's CapabilityBasedPartitioner: nodes that `convert.why_unsupported` accepts form regions; a
region worth launching (policy below) becomes a KilnRegion module that converts its FX graph to a
kiln JSON graph, compiles it with kiln.compile once per input signature and runs it on torch's
current stream. Anything that goes wrong in a region (conversion, compile, first run) makes that
region run its original FX code in torch from then on, with one warning.
"""

import functools
import logging
import os
import sys
import threading
import warnings

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport

from . import convert as _cv

logger = logging.getLogger("kiln.dynamo")


class _Config:
    """Knobs. `compile_fn(graph_dict) -> executable` defaults to kiln.compile with
    `compile_kwargs`: cuda_graph=True unless KILN_TORCH_CUDA_GRAPH=0, so a region's kernels and
    cuBLASLt calls are one graph launch (replayed while torch's allocator hands the same
    addresses, updated in place when it does not: runtime/cuda_graph.h); `allow_cpu` lets
    regions take CPU tensors and run the executable with NumPy arrays (kiln's CPU reference
    interpreter; tests only: slow, and bf16 is refused). `min_ops` and `heavy_alone` are the
    region policy."""

    def __init__(self):
        self.compile_fn = None
        self.compile_kwargs = {"cuda_graph": os.environ.get("KILN_TORCH_CUDA_GRAPH", "1") != "0"}
        self.allow_cpu = False
        self.min_ops = 2


config = _Config()

stats = {"compiles": 0, "cache_hits": 0, "fallbacks": 0, "copies": 0, "runs": 0}
_lock = threading.Lock()


def _log_enabled():
    return os.environ.get("KILN_TORCH_LOG", "") not in ("", "0")


def _log(msg):
    logger.info(msg)
    if _log_enabled():
        print(f"[kiln] {msg}", file=sys.stderr, flush=True)


def _default_compile(graph):
    import kiln  # the core package (kiln.compile); imported late so the converter works without it

    return kiln.compile(graph, **config.compile_kwargs)


# ---- op classes for the region policy ---------------------------------------------------------

def _targets(*names):
    out = set()
    for n in names:
        packet = getattr(torch.ops.aten, n, None)
        if packet is None:
            continue
        for o in packet.overloads():
            out.add(getattr(packet, o))
    return out


VIEW_TARGETS = _targets("view", "_unsafe_view", "reshape", "permute", "transpose", "t", "expand",
                        "slice", "select", "squeeze", "unsqueeze", "clone", "alias", "detach",
                        "split", "split_with_sizes", "unbind", "lift_fresh_copy", "contiguous",
                        "flatten", "unflatten", "numpy_T", "broadcast_to", "expand_copy")
import operator as _operator  # noqa: E402

VIEW_TARGETS.add(_operator.getitem)
HEAVY_TARGETS = _targets("sum", "mean", "amax", "amin", "max", "min", "var", "var_mean", "_softmax",
                         "_log_softmax", "softmax", "log_softmax", "native_layer_norm", "layer_norm",
                         "_fused_rms_norm", "rms_norm", "nll_loss_forward", "native_dropout",
                         "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                         "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu",
                         "scaled_dot_product_attention")
# a lone matmul is cuBLAS either way: not worth a launch through kiln by itself
MATMUL_TARGETS = _targets("mm", "bmm", "matmul", "addmm", "baddbmm", "linear")


def region_policy(nodes):
    """(to_kiln, reason) for a proposed partition (its call_function nodes)."""
    compute = [n for n in nodes if n.op == "call_function" and n.target not in VIEW_TARGETS]
    if not compute:
        return False, "only views/copies, no compute: stays in torch"
    if any(n.target in HEAVY_TARGETS for n in compute):
        return True, "contains a reduction/norm/softmax/loss/dropout/attention"
    if len(compute) >= config.min_ops:
        return True, f"{len(compute)} compute ops to fuse"
    only = compute[0].target
    if only in MATMUL_TARGETS:
        return False, "a lone matmul (cuBLAS in torch as well): stays in torch"
    return False, f"a lone pointwise op ({only}): stays in torch"


# ---- report (explain) ------------------------------------------------------------------------

class Report(list):
    """A list of dicts, one per region or unsupported op group:
    {"graph": "forward"/"backward"/"inference", "region": name, "ops": [...],
     "target": "kiln"/"torch", "reason": str, "copies": [...], "compiles": n}."""

    def __str__(self):
        lines = []
        for r in self:
            ops = ", ".join(r["ops"][:12]) + (" ..." if len(r["ops"]) > 12 else "")
            lines.append(f"{r['graph']:<9} {r['region']:<12} {r['target']:<5} [{ops}] -- {r['reason']}")
            for c in r.get("copies", []):
                lines.append(f"{'':<28} copy: {c}")
        return "\n".join(lines)

    def kiln_regions(self):
        return [r for r in self if r["target"] == "kiln" and r["region"] != "-"]


_REPORTS = []  # active Report sinks (explain)


def _record(entry):
    for r in _REPORTS:
        r.append(entry)


def _op_name(target):
    s = str(target)
    return s.replace("aten.", "") if s.startswith("aten.") else getattr(target, "__name__", s)


# ---- the region ------------------------------------------------------------------------------

def _perm_of(t):
    """None if contiguous; a permutation p with t.permute(p) contiguous; or 'copy'."""
    if t.is_contiguous():
        return None
    perm = _cv._dense_permutation(t)
    return "copy" if perm is None else perm


# Ops whose result is a view of their operand: an output made of these alone over a region
# input is computed in torch (a view costs nothing there; kiln would materialise it).
# VIEW_TARGETS less the ones that copy or have several outputs.
PURE_VIEW_TARGETS = VIEW_TARGETS - _targets("clone", "contiguous", "lift_fresh_copy", "expand_copy", "split",
                                            "split_with_sizes", "unbind", "broadcast_to") - {_operator.getitem}


_RESHAPE_VIEWS = _targets("view", "_unsafe_view")
# ops with several outputs that are views of their operand: a chain steps through
# getitem(split(x), i) as the slice it is
_TUPLE_VIEWS = _targets("split", "split_with_sizes", "unbind")


def _chain_step(n):
    """The operand of `n` if `n` is one step of a view chain (a pure view, a getitem of a split or
    unbind, or the split itself), else None."""
    if not isinstance(n, torch.fx.Node) or n.op != "call_function":
        return None
    if n.target is _operator.getitem:
        src = n.args[0]
        return src if isinstance(src, torch.fx.Node) and src.target in _TUPLE_VIEWS else None
    if n.target in PURE_VIEW_TARGETS or n.target in _TUPLE_VIEWS:
        tensor_args = n.all_input_nodes
        return tensor_args[0] if len(tensor_args) == 1 else None
    return None


def _view_chains(gm):
    """{output index: (base, nodes)} for the FX outputs whose value torch can give as a view
    instead of kiln writing it: a chain of views (nodes, in order from the base's first view to
    the output) over
      - a graph input (base: ("input", index)): a view costs nothing in torch, kiln would
        materialise it;
      - a value the region computes (base: ("node", node)), when the traced output is strided
        so that kiln would write a copy (neither contiguous nor a permutation of a dense layout:
        q, k and v saved for an attention backward are [B,H,S,D] views into the fused QKV
        projection's output), and the base is returned anyway or its views cover at least
        half of it. kiln then returns the base and torch takes the views of it: one output
        instead of a layout kernel per view.
    """
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    out = [n for n in gm.graph.nodes if n.op == "output"][0]
    outs = out.args[0] if isinstance(out.args[0], (tuple, list)) else [out.args[0]]
    chains = {}
    for i, o in enumerate(outs):
        chain, n = [], o
        while (src := _chain_step(n)) is not None:
            chain.append(n)
            n = src
        if not chain or not isinstance(n, torch.fx.Node):
            continue
        if n.op == "placeholder":
            chains[i] = (("input", placeholders.index(n)), chain[::-1])
        elif n.op == "call_function" and _strided_copy(o) and _contiguous(n):
            chains[i] = (("node", n), chain[::-1])
    # A base kiln would not write otherwise is worth returning only where its views cover much
    # of it (q, k and v: all of it); a small slice of a large value (its last token) is
    # cheaper written as the copy it is.
    covered = {}
    for i, (base, _) in chains.items():
        if base[0] == "node":
            covered[base[1]] = covered.get(base[1], 0) + _numel(outs[i])
    for i in [i for i, (base, _) in chains.items() if base[0] == "node"]:
        b = chains[i][0][1]
        if b not in outs and 2 * covered[b] < _numel(b):
            del chains[i]
    return chains


def _numel(n):
    t = n.meta.get("val") if isinstance(n, torch.fx.Node) else None
    return t.numel() if isinstance(t, torch.Tensor) else 0


def torch_outputs(chains):
    """convert()'s torch_outputs for _view_chains(gm): per output, the FX node kiln returns for
    torch to view (None: a view of an input)."""
    return {i: base[1] if base[0] == "node" else None for i, (base, _) in chains.items()}


def _strided_copy(n):
    t = n.meta.get("val")
    return isinstance(t, torch.Tensor) and not t.is_contiguous() and _cv._dense_permutation(t) is None


def _contiguous(n):
    t = n.meta.get("val")
    return isinstance(t, torch.Tensor) and t.is_contiguous()


def _replay_view(chain, base):
    """Evaluates a _view_chains entry on its base tensor (a region input or kiln's output)."""
    _, nodes = chain
    first = nodes[0]
    env = {(_chain_step(first)): base}
    for n in nodes:
        a = torch.fx.node.map_arg(n.args, lambda x: env[x])
        k = torch.fx.node.map_arg(n.kwargs, lambda x: env[x])
        # view as reshape: an input that came from a kiln region is contiguous where the trace
        # may have had other strides, and a view of it can then be impossible (reshape copies)
        reshape = n.target in _RESHAPE_VIEWS and isinstance(a[1], (list, tuple))
        env[n] = torch.reshape(a[0], a[1]) if reshape else n.target(*a, **k)
    return env[nodes[-1]]


class KilnRegion(torch.nn.Module):
    """Runs one partition through kiln, falling back to its FX code in torch."""

    def __init__(self, gm, name, graph_kind, entry):
        super().__init__()
        self.fallback_module = gm
        self.region_name = name
        self.graph_kind = graph_kind
        self.entry = entry  # the report dict, updated in place
        self._cache = {}
        self._disabled = None
        out = [n for n in gm.graph.nodes if n.op == "output"][0]
        self._single = not isinstance(out.args[0], (tuple, list))
        self._views = _view_chains(gm)  # outputs computed in torch, as views of inputs or of kiln's outputs
        self._signatures = {}  # (dtype, shape, strides, device) per input -> _signature's result

    def _fallback(self, reason, args):
        if self._disabled is None:
            self._disabled = reason
            stats["fallbacks"] += 1
            self.entry["target"] = "torch"
            self.entry["reason"] = f"fallback: {reason}"
            warnings.warn(f"kiln: region {self.region_name} ({self.graph_kind}) runs in torch: {reason}",
                          RuntimeWarning, stacklevel=3)
            _log(f"{self.graph_kind} {self.region_name}: fallback to torch: {reason}")
        return self.fallback_module(*args)

    def _signature(self, args):
        sig = []
        for a in args:
            if not isinstance(a, torch.Tensor):
                return None, "a non-tensor input"
            if a.device.type != "cuda" and not (config.allow_cpu and a.device.type == "cpu"):
                return None, f"a {a.device.type} tensor input (kiln runs on CUDA)"
            if a.dtype not in _cv.TORCH_TO_KILN:
                return None, f"input dtype {a.dtype}"
            sig.append((a.dtype, tuple(a.shape), _perm_of(a), a.device))
        return tuple(sig), None

    def _compile(self, sig):
        specs = []
        copies = []
        for i, (dtype, shape, perm, _) in enumerate(sig):
            if perm == "copy":
                copies.append(f"input {i} {list(shape)}: not a dense permutation, .contiguous() copy")
                perm = None
            elif perm is not None:
                copies.append(f"input {i} {list(shape)}: permuted layout {list(perm)}, passed as a "
                              f"view with a transpose in the graph (no copy)")
            specs.append((_cv.kiln_dtype(dtype), shape, perm))
        graph, info = _cv.convert(self.fallback_module.graph, specs, name=self.region_name,
                                  module=self.fallback_module, torch_outputs=torch_outputs(self._views))
        fn = config.compile_fn or _default_compile
        exe = fn(graph)
        with _lock:
            stats["compiles"] += 1
        self.entry["compiles"] = self.entry.get("compiles", 0) + 1
        for c in copies:
            if c not in self.entry["copies"]:
                self.entry["copies"].append(c)
        _log(f"{self.graph_kind} {self.region_name}: compiled {len(graph['nodes'])} kiln nodes "
             f"for {[(str(s[0]).replace('torch.', ''), list(s[1])) for s in sig]}")
        return exe, info, graph

    def forward(self, *args):
        if self._disabled is not None:
            return self.fallback_module(*args)
        # The signature (dtype, shape, layout class, device per input) from the tensors' own
        # metadata, remembered per (dtype, shape, strides, device): a call costs host time in a
        # launch-bound step, and working out a layout class per input is the slow part.
        try:
            fast = (config.allow_cpu,) + tuple((a.dtype, a.shape, a.stride(), a.device) for a in args)
        except AttributeError:  # a non-tensor argument: the full check says why
            fast = None
        known = self._signatures.get(fast) if fast is not None else None
        sig, why = known if known is not None else self._signature(args)
        if known is None and fast is not None:
            self._signatures[fast] = (sig, why)
        if sig is None:
            # not a kiln failure: this call's inputs (e.g. CPU tensors) run in torch
            _log(f"{self.graph_kind} {self.region_name}: this call runs in torch: {why}")
            return self.fallback_module(*args)
        hit = self._cache.get(sig)
        first = hit is None
        if first:
            try:
                hit = self._compile(sig)
            except Exception as e:  # noqa: BLE001 -- never fail the user's torch.compile
                return self._fallback(f"{type(e).__name__}: {e}", args)
            self._cache[sig] = hit
        else:
            stats["cache_hits"] += 1
        exe, info, _ = hit
        tensors = []
        for a, (_, _, perm, _) in zip(args, sig):
            if perm == "copy":
                a = a.contiguous()
                stats["copies"] += 1
            elif perm is not None:
                a = a.permute(perm)
            if a.data_ptr() % 16:  # a view at an offset: kiln's kernels load 16-byte vectors
                a = a.clone()
                stats["copies"] += 1
            tensors.append(a)
        if info["seed_input"] is not None:
            dev = args[0].device if args else "cpu"
            # drawn from torch's generator of that device: torch.manual_seed makes runs repeatable
            tensors.append(torch.randint(-(2 ** 63), 2 ** 63 - 1, (), dtype=torch.int64, device=dev))
        try:
            outs = self._run(exe, tensors)
        except Exception as e:  # noqa: BLE001
            self._cache.pop(sig, None)
            return self._fallback(f"run failed: {type(e).__name__}: {e}", args)
        stats["runs"] += 1
        dev = args[0].device if args else "cpu"
        outs = tuple(self._output(i, j, outs, args, dev) for i, j in enumerate(info["out_map"]))
        if self._single:
            return outs[0]
        return outs

    def _output(self, i, j, outs, args, dev):
        """FX output i from its out_map entry j (convert.Converter._outputs)."""
        if isinstance(j, int):
            return outs[j]
        if isinstance(j, tuple):
            return outs[j[0]].permute(j[1])
        if isinstance(j, _cv.TorchSide):
            return j.get(dev)
        if isinstance(j, _cv.ViewOf):
            return _replay_view(self._views[i], outs[j.index])
        return _replay_view(self._views[i], args[self._views[i][0][1]])

    @staticmethod
    def _run(exe, tensors):
        if tensors and tensors[0].device.type == "cpu":
            if getattr(exe, "takes_torch_cpu", False):  # test executables (the kiln CLI)
                return tuple(exe(*tensors))
            import numpy as np

            arrays = []
            for t in tensors:
                if t.dtype == torch.bfloat16:
                    raise TypeError("bf16 on the CPU path")
                arrays.append(np.ascontiguousarray(t.detach().numpy()))
            return tuple(torch.from_numpy(np.array(o)) for o in exe(*arrays))
        return tuple(exe(*tensors))


# ---- the partitioning compiler ---------------------------------------------------------------

class KilnSupport(OperatorSupport):
    def __init__(self, reasons):
        super().__init__()
        self.reasons = reasons

    def is_node_supported(self, submodules, node):
        if config.allow_cpu:
            _cv._ALLOW_CPU[0] = True
        why = _cv.why_unsupported(node)
        if why is not None:
            self.reasons[node] = why
        return why is None


_counter = [0]


def _compile_graph(gm, example_inputs, graph_kind):
    """Partitions one ATen graph and swaps kiln regions in. Returns a boxed callable."""
    from functorch.compile import make_boxed_func

    try:
        gm = _partition(gm, graph_kind)
    except Exception as e:  # noqa: BLE001
        warnings.warn(f"kiln: partitioning the {graph_kind} graph failed, it runs in torch: "
                      f"{type(e).__name__}: {e}", RuntimeWarning)
        _log(f"{graph_kind}: partitioning failed ({e}); the graph runs in torch")
    return make_boxed_func(gm.forward)


def _partition(gm, graph_kind):
    reasons = {}
    support = KilnSupport(reasons)
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    partitions = partitioner.propose_partitions()
    keep = []
    for p in partitions:
        nodes = sorted(p.nodes, key=lambda n: list(gm.graph.nodes).index(n)) if len(p.nodes) < 200 else list(p.nodes)
        ok, why = region_policy(nodes)
        ops = [_op_name(n.target) for n in nodes if n.op == "call_function" and n.target is not _operator.getitem]
        if ok:
            keep.append(p)
        else:
            entry = {"graph": graph_kind, "region": "-", "ops": ops, "target": "torch", "reason": why,
                     "copies": []}
            _record(entry)
            _log(f"{graph_kind}: [{', '.join(ops)}] -> torch: {why}")
    # unsupported ops, grouped by reason
    by_reason = {}
    for n, why in reasons.items():
        if n.op == "call_function" and n.target is not _operator.getitem:
            by_reason.setdefault(why, []).append(_op_name(n.target))
    for why, ops in by_reason.items():
        entry = {"graph": graph_kind, "region": "-", "ops": ops, "target": "torch", "reason": why,
                 "copies": []}
        _record(entry)
        _log(f"{graph_kind}: [{', '.join(ops)}] -> torch: {why}")
    if not keep:
        return gm
    fused = partitioner.fuse_partitions(keep)
    for name, sub in list(fused.named_children()):
        if not isinstance(sub, torch.fx.GraphModule) or not name.startswith("fused_"):
            continue
        _counter[0] += 1
        rname = f"kiln_{_counter[0]}"
        calls = [n for n in sub.graph.nodes if n.op == "call_function"]
        _, why = region_policy(calls)
        ops = [_op_name(n.target) for n in calls if n.target is not _operator.getitem]
        entry = {"graph": graph_kind, "region": rname, "ops": ops, "target": "kiln", "reason": why,
                 "copies": [], "compiles": 0}
        _record(entry)
        _log(f"{graph_kind} {rname}: [{', '.join(ops)}] -> kiln: {why}")
        setattr(fused, name, KilnRegion(sub, rname, graph_kind, entry))
    fused.recompile()
    return fused


def _decompositions():
    """ATen decompositions for AOTAutograd: the backward ops of the composites kiln keeps become
    pointwise ops and reductions kiln runs; the composites themselves (native_layer_norm,
    _fused_rms_norm, _softmax, _log_softmax, gelu, silu, native_dropout, SDPA, nll_loss_forward)
    are NOT decomposed."""
    from torch._decomp import get_decompositions

    aten = torch.ops.aten
    wanted = []
    for name in ("gelu_backward", "silu_backward", "sigmoid_backward", "tanh_backward", "threshold_backward",
                 "_softmax_backward_data", "_log_softmax_backward_data", "native_layer_norm_backward",
                 "native_dropout_backward", "rsub", "addcmul", "addcdiv", "_fused_rms_norm_backward",
                 "hardtanh_backward", "silu_backward", "mse_loss_backward"):
        if hasattr(aten, name):
            wanted.append(getattr(aten, name))
    return get_decompositions(wanted)


def _make_backend():
    from torch._dynamo.backends.common import aot_autograd

    def fw(gm, example_inputs):
        return _compile_graph(gm, example_inputs, "forward")

    def bw(gm, example_inputs):
        return _compile_graph(gm, example_inputs, "backward")

    def inference(gm, example_inputs):
        return _compile_graph(gm, example_inputs, "inference")

    return aot_autograd(fw_compiler=fw, bw_compiler=bw, inference_compiler=inference,
                        decompositions=_decompositions(), partition_fn=_min_cut_partition)


def _min_cut_partition(joint_module, joint_inputs, **kwargs):
    """inductor's min-cut partitioner: the forward saves what is expensive to recompute (matmul
    outputs, small statistics) and the backward recomputes cheap pointwise ops from them, which
    kiln fuses into the kernels that read them (the default partitioner saves every intermediate
    the backward reads).

    The composites kiln keeps whole need a hint. The min-cut never recomputes an op outside its
    allowlist, so it saves the output of `_log_softmax` and `_softmax` for the backward: for an
    LM head a second [tokens, vocab] tensor written by the forward and read by the backward,
    although the forward's cross-entropy needs only its row statistics; for attention written
    out (BERT's matmul, softmax, dropout, matmul) a second [B, H, S, S] tensor beside the scores
    the matmul wrote anyway. Tagged for recomputation (the tag activation checkpointing uses),
    the backward recomputes them from their input inside its row kernel (a row read either
    way), and the forward writes nothing that size for them."""
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    try:
        from torch.utils.checkpoint import CheckpointPolicy

        recompute = set(_cv._aten("_log_softmax")) | set(_cv._aten("_softmax"))
        for n in joint_module.graph.nodes:
            if n.op == "call_function" and n.target in recompute and "recompute" not in n.meta:
                n.meta["recompute"] = CheckpointPolicy.PREFER_RECOMPUTE
                n.meta["ac_graph_id"] = 0
    except (ImportError, AttributeError) as e:  # an older torch: plain min-cut
        _log(f"no recompute hint for the softmaxes ({e})")
    return min_cut_rematerialization_partition(joint_module, joint_inputs, **kwargs)


def kiln_backend(gm, example_inputs, **kwargs):
    """torch.compile(model, backend="kiln"): forward and backward ATen graphs, partitioned between
    kiln and torch. kwargs (options=...) are accepted and ignored."""
    try:
        backend = _make_backend()
        return backend(gm, example_inputs)
    except Exception as e:  # noqa: BLE001 -- never fail the user's torch.compile
        warnings.warn(f"kiln: the backend failed ({type(e).__name__}: {e}); this graph runs in torch eager",
                      RuntimeWarning)
        _log(f"backend failed: {e}; eager")
        return gm.forward


def explain(model, *inputs, backward=False, **kwargs):
    """Compiles `model` with the kiln backend, runs it once on `inputs` (and a backward of the sum
    of its floating outputs if `backward`), and returns a Report: one dict per region or group of
    torch ops (graph, region, ops, target kiln/torch, reason, copies made)."""
    import torch._dynamo

    report = Report()
    _REPORTS.append(report)
    try:
        torch._dynamo.reset()
        compiled = torch.compile(model, backend=kiln_backend, dynamic=False, **kwargs)
        out = compiled(*inputs)
        if backward:
            outs = out if isinstance(out, (tuple, list)) else [out]
            total = sum(o.float().sum() for o in outs
                        if isinstance(o, torch.Tensor) and o.requires_grad)
            if isinstance(total, torch.Tensor):
                total.backward()
    finally:
        _REPORTS.remove(report)
        torch._dynamo.reset()
    return report
