#!/usr/bin/env python3
"""Writes the small hand-made ONNX models of tests/frontends/onnx_testdata/ (committed).

Run from the repository root with onnx==1.22.0 and numpy installed:
    python3 scripts/make-onnx-testdata.py
The output is deterministic (fixed seeds), so re-running it gives the same files.

Layout:
  errors/<name>.onnx        models each importer error rule is tested on (onnx_import_test.cc)
  external/model/*.onnx     external-data models; weights.bin sits next to them and
  external/secret.bin       lies outside the model's folder (escape attempts point at it)
  values/<case>/model.onnx  small models with input_N.pb / output_N.pb computed by
                            onnx.reference.ReferenceEvaluator, checked on kiln's interpreter
"""
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "frontends", "onnx_testdata")
F = TensorProto.FLOAT


def model(nodes, inputs, outputs, inits=(), opset=18, name="g", extra_opsets=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(graph, opset_imports=ops, producer_name="kiln-testdata")
    m.ir_version = 9
    return m


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def save(m, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def rand(rng, *shape):
    x = rng.uniform(-1, 1, size=shape).astype(np.float32)
    x[x == 0] = 0.5
    return x


# ---- error models -------------------------------------------------------------------------
def errors():
    d = os.path.join(ROOT, "errors")
    x = vi("x", F, [2, 3])
    y = vi("y", F, [2, 3])
    relu = helper.make_node("Relu", ["x"], ["y"], name="relu0")
    save(model([relu], [x], [y], opset=12), os.path.join(d, "opset12.onnx"))
    save(model([relu], [x], [y], opset=25), os.path.join(d, "opset25.onnx"))
    fused = helper.make_node("FusedGemm", ["x"], ["y"], name="fused0", domain="com.microsoft")
    save(model([fused], [x], [y], extra_opsets=[("com.microsoft", 1)]), os.path.join(d, "unknown_domain.onnx"))
    ln = helper.make_node("LayerNorm", ["x"], ["y"], name="my_norm")
    save(model([ln], [x], [y]), os.path.join(d, "unsupported_op.onnx"))
    # Symbolic batch dimension.
    sx = vi("x", F, ["batch", 4])
    sm = helper.make_node("Softmax", ["x"], ["y"], name="sm")
    save(model([sm], [sx], [vi("y", F, ["batch", 4])], opset=13), os.path.join(d, "symbolic.onnx"))
    # Reshape whose shape is a graph input.
    rs = helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape_dyn")
    save(model([rs], [x, vi("shape", TensorProto.INT64, [2])], [vi("y", F, [3, 2])]),
         os.path.join(d, "reshape_dynamic_shape.onnx"))
    # Dropout in training mode with a ratio given at run time.
    dr = helper.make_node("Dropout", ["x", "ratio", "training"], ["y"], name="drop", seed=7)
    training = numpy_helper.from_array(np.array(True), "training")
    save(model([dr], [x, vi("ratio", F, [])], [y], inits=[training], opset=13),
         os.path.join(d, "dropout_dynamic_ratio.onnx"))
    # Slice with a negative step.
    sl = helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="rev")
    inits = [numpy_helper.from_array(np.array(v, np.int64), n)
             for n, v in [("st", [-1]), ("en", [-100]), ("ax", [1]), ("sp", [-1])]]
    save(model([sl], [x], [y], inits=inits), os.path.join(d, "slice_negative_step.onnx"))
    # A DOUBLE graph input.
    save(model([relu], [vi("x", TensorProto.DOUBLE, [2, 3])], [vi("y", TensorProto.DOUBLE, [2, 3])]),
         os.path.join(d, "double_input.onnx"))
    # A node reading a value nobody defines.
    add = helper.make_node("Add", ["x", "nowhere"], ["y"], name="add_undefined")
    save(model([add], [x], [y]), os.path.join(d, "undefined_input.onnx"))
    # Attention with softcap (unsupported attribute value).
    q = vi("q", F, [1, 2, 4, 8])
    att = helper.make_node("Attention", ["q", "q", "q"], ["y"], name="att", softcap=30.0)
    save(model([att], [q], [vi("y", F, [1, 2, 4, 8])], opset=23), os.path.join(d, "attention_softcap.onnx"))
    # SoftmaxCrossEntropyLoss with an attribute kiln does not know.
    sce = helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t"], ["y"], name="sce", reduction="mean",
                           label_smoothing=0.1)
    save(model([sce], [x, vi("t", TensorProto.INT64, [2])], [vi("y", F, [])], opset=13),
         os.path.join(d, "unknown_attribute.onnx"))
    # Initializers whose data does not fill their dims: raw_data of 20 bytes for FLOAT[2,3]
    # (24 bytes), and 5 float_data values for 6 elements.
    short_raw = TensorProto(name="w", data_type=F, dims=[2, 3], raw_data=np.zeros(5, np.float32).tobytes())
    add_w = helper.make_node("Add", ["x", "w"], ["y"], name="add_w")
    save(model([add_w], [x], [y], inits=[short_raw]), os.path.join(d, "raw_data_size.onnx"))
    short_typed = TensorProto(name="w", data_type=F, dims=[2, 3], float_data=[1.0, 2.0, 3.0, 4.0, 5.0])
    save(model([add_w], [x], [y], inits=[short_typed]), os.path.join(d, "typed_field_count.onnx"))
    # A model whose only opset import is a foreign domain (no default-domain opset at all).
    foreign = model([fused], [x], [y])
    del foreign.opset_import[:]
    foreign.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    save(foreign, os.path.join(d, "foreign_domain_only.onnx"))


# ---- external data ------------------------------------------------------------------------
def external():
    d = os.path.join(ROOT, "external")
    if os.path.isdir(d):
        shutil.rmtree(d)
    md = os.path.join(d, "model")
    os.makedirs(md)
    w = np.arange(6, dtype=np.float32).reshape(2, 3) + 0.5
    with open(os.path.join(md, "weights.bin"), "wb") as f:
        f.write(b"\0" * 16 + w.tobytes())  # the tensor sits at offset 16
    with open(os.path.join(d, "secret.bin"), "wb") as f:
        f.write(w.tobytes())

    def ext_model(name, location, offset="16", length=str(w.nbytes)):
        t = TensorProto()
        t.name = "w"
        t.data_type = F
        t.dims.extend([2, 3])
        t.data_location = TensorProto.EXTERNAL
        for k, v in [("location", location), ("offset", offset), ("length", length)]:
            if v is not None:
                e = t.external_data.add()
                e.key, e.value = k, v
        add = helper.make_node("Add", ["x", "w"], ["y"], name="add_w")
        save(model([add], [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], inits=[t]), os.path.join(md, name))

    ext_model("ok.onnx", "weights.bin")
    ext_model("escape.onnx", "../secret.bin", offset="0")
    ext_model("escape_nested.onnx", "sub/../../secret.bin", offset="0")
    ext_model("absolute.onnx", "/etc/passwd", offset="0")
    ext_model("wrong_length.onnx", "weights.bin", length="20")
    ext_model("past_end.onnx", "weights.bin", offset="64")
    ext_model("missing_file.onnx", "nope.bin")
    ext_model("symlink.onnx", "link.bin", offset="0")  # the test creates link.bin -> ../secret.bin


# ---- value cases --------------------------------------------------------------------------
def case(name, m, feeds):
    d = os.path.join(ROOT, "values", name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    save(m, os.path.join(d, "model.onnx"))
    outs = ReferenceEvaluator(m).run(None, feeds)
    for i, inp in enumerate(m.graph.input):
        save_tensor(feeds[inp.name], os.path.join(d, f"input_{i}.pb"))
    for i, out in enumerate(outs):
        save_tensor(np.asarray(out), os.path.join(d, f"output_{i}.pb"))


def save_tensor(a, path):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(a).SerializeToString())


def values():
    rng = np.random.default_rng(6)
    # Gemm with both transposes, alpha, beta and a broadcast bias.
    a, b, c = rand(rng, 5, 3), rand(rng, 4, 5), rand(rng, 4)
    gemm = helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=1, transB=1, alpha=0.5, beta=2.0)
    case("gemm", model([gemm], [vi("a", F, [5, 3])], [vi("y", F, [3, 4])],
                       inits=[numpy_helper.from_array(b, "b"), numpy_helper.from_array(c, "c")]), {"a": a})
    # Initializers in the typed fields: float_data, int64_data, int32_data for FLOAT16 and BOOL.
    wf = helper.make_tensor("wf", F, [3], [0.5, -1.25, 2.0])
    idx = helper.make_tensor("idx", TensorProto.INT64, [2], [2, -3])
    h = helper.make_tensor("h", TensorProto.FLOAT16, [3],
                           np.array([1.5, -2.0, 0.25], np.float16).view(np.uint16).astype(np.int32).tolist())
    mask = helper.make_tensor("mask", TensorProto.BOOL, [3], [1, 0, 1])
    nodes = [helper.make_node("Add", ["x", "wf"], ["s"]),
             helper.make_node("Gather", ["s", "idx"], ["g"], axis=1),
             helper.make_node("Cast", ["h"], ["hf"], to=F),
             helper.make_node("Where", ["mask", "x", "hf"], ["w"])]
    case("typed_initializers", model(nodes, [vi("x", F, [2, 3])], [vi("g", F, [2, 2]), vi("w", F, [2, 3])],
                                     inits=[wf, idx, h, mask]), {"x": rand(rng, 2, 3)})
    # ONNX names that are not kiln names.
    nodes = [helper.make_node("Mul", ["in:0", "in:0"], ["/layer.0/Mul_output_0"]),
             helper.make_node("Sub", ["/layer.0/Mul_output_0", "in:0"], ["1"])]
    case("odd_names", model(nodes, [vi("in:0", F, [4])], [vi("1", F, [4])]), {"in:0": rand(rng, 4)})
    # Shape plumbing as exporters write it: Shape -> Gather -> Unsqueeze -> Concat -> Reshape,
    # Flatten, Squeeze, Split, Slice with negative indices, Expand, ReduceMean with axes
    # attribute (opset 13) and MatMul with a 1-D operand.
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
             helper.make_node("Unsqueeze", ["b", "zero1"], ["b1"]),
             helper.make_node("Concat", ["b1", "m1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["r"]),            # [2, 12]
             helper.make_node("Split", ["r"], ["p0", "p1"], axis=1),        # [2, 6] each
             helper.make_node("Slice", ["p1", "st", "en", "ax"], ["sl"]),   # [2, 4]
             helper.make_node("ReduceMean", ["sl"], ["mean"], axes=[1], keepdims=1),
             helper.make_node("Expand", ["mean", "eshape"], ["ex"]),       # [3, 2, 4]
             helper.make_node("Flatten", ["ex"], ["fl"], axis=2),          # [6, 4]
             helper.make_node("MatMul", ["fl", "v"], ["mv"]),               # [6]
             helper.make_node("Add", ["p0", "p0"], ["pp"])]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([0], np.int64), "zero1"),
             numpy_helper.from_array(np.array([-1], np.int64), "m1"),
             numpy_helper.from_array(np.array([-5], np.int64), "st"),
             numpy_helper.from_array(np.array([-1], np.int64), "en"),
             numpy_helper.from_array(np.array([1], np.int64), "ax"),
             numpy_helper.from_array(np.array([3, 1, 4], np.int64), "eshape"),
             numpy_helper.from_array(rand(rng, 4), "v")]
    case("shape_plumbing", model(nodes, [vi("x", F, [2, 3, 4])], [vi("mv", F, [6]), vi("pp", F, [2, 6])],
                                 inits=inits, opset=13), {"x": rand(rng, 2, 3, 4)})
    # A small pre-norm attention block at opset 23: LayerNormalization, 3-D Attention with GQA
    # and a bool mask, RMSNormalization, Gelu (tanh), Dropout in inference with its mask.
    B, S, H, HQ, HKV = 2, 5, 16, 4, 2
    D = H // HQ
    wq, wk, wv = rand(rng, H, H), rand(rng, H, HKV * D), rand(rng, H, HKV * D)
    mask = rng.uniform(size=(S, S)) > 0.3
    np.fill_diagonal(mask, True)
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "beta"], ["ln"], epsilon=1e-5),
             helper.make_node("MatMul", ["ln", "wq"], ["q"]),
             helper.make_node("MatMul", ["ln", "wk"], ["k"]),
             helper.make_node("MatMul", ["ln", "wv"], ["v"]),
             helper.make_node("Attention", ["q", "k", "v", "mask"], ["att"], q_num_heads=HQ, kv_num_heads=HKV),
             helper.make_node("Add", ["x", "att"], ["res"]),
             helper.make_node("RMSNormalization", ["res", "g"], ["rms"], epsilon=1e-6),
             helper.make_node("Gelu", ["rms"], ["act"], approximate="tanh"),
             helper.make_node("Dropout", ["act"], ["y", "keep"])]
    inits = [numpy_helper.from_array(rand(rng, H), "g"), numpy_helper.from_array(rand(rng, H), "beta"),
             numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(wk, "wk"),
             numpy_helper.from_array(wv, "wv"), numpy_helper.from_array(mask, "mask")]
    case("attention_block_opset23",
         model(nodes, [vi("x", F, [B, S, H])], [vi("y", F, [B, S, H]), vi("keep", TensorProto.BOOL, [B, S, H])],
               inits=inits, opset=23), {"x": rand(rng, B, S, H)})
    # Cross-entropy head with ignore_index and the log_prob output, opset 13.
    nodes = [helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "t"], ["loss", "logp"], ignore_index=1)]
    case("cross_entropy_head", model(nodes, [vi("logits", F, [3, 5, 2]), vi("t", TensorProto.INT64, [3, 2])],
                                     [vi("loss", F, []), vi("logp", F, [3, 5, 2])], opset=13),
         {"logits": rand(rng, 3, 5, 2), "t": np.array([[0, 1], [4, 2], [1, 3]], np.int64)})
    # ReduceMin with its axes as an attribute (opset 13; an input from 18), keepdims=0, and a
    # negative axis.
    nodes = [helper.make_node("ReduceMin", ["x"], ["y"], axes=[-1, 0], keepdims=0)]
    case("reduce_min_axes_attribute", model(nodes, [vi("x", F, [3, 2, 4])], [vi("y", F, [2])], opset=13),
         {"x": rand(rng, 3, 2, 4)})


def norms():
    """Channel normalisations: value cases and their error models."""
    rng = np.random.default_rng(23)
    # BatchNormalization in training mode (batch statistics over N, H, W: rows of 3 x 64 read
    # through a transpose), then GroupNormalization, InstanceNormalization, and a
    # MeanVarianceNormalization of x over its default axes, at opset 21.
    N, C, H, W = 3, 6, 8, 8
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["bn", "rm", "rv"],
                              epsilon=1e-3, momentum=0.8, training_mode=1),
             helper.make_node("GroupNormalization", ["bn", "gs", "gb"], ["gn"], num_groups=3, epsilon=1e-4),
             helper.make_node("InstanceNormalization", ["gn", "is", "ib"], ["y"]),
             helper.make_node("MeanVarianceNormalization", ["x"], ["mvn"])]
    inits = [numpy_helper.from_array(rand(rng, C), n) for n in ("s", "b", "m", "gs", "gb", "is", "ib")]
    inits.append(numpy_helper.from_array(rng.uniform(0.5, 2, size=C).astype(np.float32), "v"))
    case("channel_norms",
         model(nodes, [vi("x", F, [N, C, H, W])],
               [vi("y", F, [N, C, H, W]), vi("rm", F, [C]), vi("rv", F, [C]), vi("mvn", F, [N, C, H, W])],
               inits=inits, opset=21), {"x": rand(rng, N, C, H, W) * 3 + 1})
    # BatchNormalization in inference, rank 3.
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-5)]
    inits = [numpy_helper.from_array(rand(rng, 4), n) for n in ("s", "b", "m")]
    inits.append(numpy_helper.from_array(rng.uniform(0.5, 2, size=4).astype(np.float32), "v"))
    case("batchnorm_inference", model(nodes, [vi("x", F, [2, 4, 7])], [vi("y", F, [2, 4, 7])], inits=inits,
                                      opset=15), {"x": rand(rng, 2, 4, 7)})
    d = os.path.join(ROOT, "errors")
    x, y = vi("x", F, [2, 6, 5]), vi("y", F, [2, 6, 5])
    gn = helper.make_node("GroupNormalization", ["x", "p", "p"], ["y"], num_groups=4, name="gn0")
    save(model([gn], [x], [y], inits=[numpy_helper.from_array(rand(rng, 6), "p")], opset=21),
         os.path.join(d, "group_norm_groups.onnx"))
    bn = helper.make_node("BatchNormalization", ["x", "p", "p", "p", "p"], ["y", "rm", "rv"], name="bn0")
    save(model([bn], [x], [y, vi("rm", F, [6]), vi("rv", F, [6])], inits=[numpy_helper.from_array(rand(rng, 6), "p")],
               opset=15), os.path.join(d, "batchnorm_inference_running.onnx"))


if __name__ == "__main__":
    errors()
    external()
    values()
    norms()
    print("wrote", ROOT)
