#!/usr/bin/env python3
"""Writes the generated part of the fuzz seed corpus, tests/fuzz/seeds/<target>/ (committed).

The JSON and ONNX targets are also seeded straight from examples/ and the test models
(tests/fuzz/CMakeLists.txt lists those folders); the other formats have no files in the
repository, so this script makes them with a built `kiln` (argument 1, default
build/tools/kiln), numpy and onnx:
  ir_parser     `kiln check` of the small examples and ONNX test models, and `kiln dump
                --after constant_fold` of a few (primitive ops, constants), and a constant past
                the printer's list limit (its data as base64)
  artifact      `kiln compile --arch sm_90a` of four examples (NVRTC, no GPU), every CUBIN,
                ledger and source graph cut to 64 bytes and the checksum recomputed (small seeds)
  kernel_cache  the disk cache entries of those compiles, cut the same way
  onnx_import   small models with extreme constant operands (huge, negative, INT64_MIN/MAX
                sizes, axes, steps; folding corner cases) for the shape and folding converters
  tensor_file   .npy files from numpy (every dtype, rank 0 to 3, an empty one, version 2.0,
                Fortran order) and raw files, with the mode and shape bytes fuzz_tensor_file.cc
                reads first
Run it from anywhere; it overwrites those five folders.
"""
import io, os, shutil, struct, subprocess, sys, tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEEDS = os.path.join(ROOT, 'tests/fuzz/seeds')
KILN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, 'build/tools/kiln'))
SMALL = os.path.join(ROOT, 'examples/small')


def fnv1a64(data):
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xffffffffffffffff
    return h


class Reader:
    """Walks ByteWriter fields (runtime/binary_io.h), remembering where each string starts."""

    def __init__(self, data):
        self.data, self.pos = data, 0

    def u64(self):
        v = struct.unpack_from('<Q', self.data, self.pos)[0]
        self.pos += 8
        return v

    def str(self):
        n = self.u64()
        start = self.pos
        self.pos += n
        return start, n

    def ints(self):
        for _ in range(self.u64()):
            self.u64()


def cut(payload, spans, keep=64):
    """payload with every (start, length) string field cut to its first `keep` bytes."""
    out, last = bytearray(), 0
    for start, n in sorted(spans):
        m = min(n, keep)
        out += payload[last:start - 8] + struct.pack('<Q', m) + payload[start:start + m]
        last = start + n
    return bytes(out + payload[last:])


def shrink_artifact(data):
    payload = data[20:-8]
    r = Reader(payload)
    for _ in range(4):
        r.str()  # graph name, hash, arch, device
    for _ in range(r.u64()):  # buffers
        r.str(); r.str(); r.ints(); r.u64(); r.u64(); r.u64(); r.u64(); r.u64()
    r.ints(); r.ints()  # inputs, outputs
    for _ in range(r.u64()):
        r.str()
    cubins = []
    for _ in range(r.u64()):  # modules: name, cubin, registers, spills, compile ms, params
        r.str(); cubins.append(r.str()); r.u64(); r.u64(); r.u64(); r.str()
    # The fusion ledger, the lowering ledger and the source graph are the last three strings;
    # the ledger is the JSON document that starts {"graph".
    r.pos = payload.index(b'{"graph"') - 8
    payload = cut(payload, cubins + [r.str(), r.str(), r.str()])
    return data[:12] + struct.pack('<Q', len(payload)) + payload + struct.pack('<Q', fnv1a64(payload))


def shrink_cache_entry(data):
    payload = data[48:]
    r = Reader(payload)
    r.str(); r.str()
    payload = cut(payload, [r.str(), r.str(), r.str()])  # cubin, ptx, log
    return data[:32] + struct.pack('<QQ', len(payload), fnv1a64(payload)) + payload


def fresh(name):
    path = os.path.join(SEEDS, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def kiln(*args, **kw):
    return subprocess.run([KILN, *args], check=True, capture_output=True, **kw).stdout


def ir_seeds():
    out = fresh('ir_parser')
    for name in sorted(os.listdir(SMALL)):
        stem = name[:-5]
        open(os.path.join(out, stem + '.kir'), 'wb').write(kiln('check', os.path.join(SMALL, name)))
    values = os.path.join(ROOT, 'tests/frontends/onnx_testdata/values')
    for name in sorted(os.listdir(values)):
        open(os.path.join(out, 'onnx_' + name + '.kir'), 'wb').write(
            kiln('check', os.path.join(values, name, 'model.onnx')))
    for stem in ('transformer_block', 'layernorm_decomposed', 'softmax_xent', 'dropout_add_layernorm'):
        open(os.path.join(out, stem + '_lowered.kir'), 'wb').write(
            kiln('dump', '--after', 'constant_fold', os.path.join(SMALL, stem + '.json')))
    # A constant past the printer's list limit: its data as base64 (ir/printer.h).
    ramp = np.arange(1100, dtype=np.float32) * np.float32(0.25) - np.float32(7)
    text = ('graph large_constant(x: f32[1100]) {\n'
            f'  c: f32[1100] = constant() {{data = "{__import__("base64").b64encode(ramp.tobytes()).decode()}"}}\n'
            '  y: f32[1100] = add(x, c)\n  return y\n}\n')
    open(os.path.join(out, 'large_constant.kir'), 'w').write(text)


def artifact_and_cache_seeds():
    art, cache = fresh('artifact'), fresh('kernel_cache')
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, KILN_CACHE_DIR=os.path.join(tmp, 'cache'))
        for stem in ('softmax', 'bias_gelu', 'layernorm', 'transformer_block'):
            path = os.path.join(tmp, stem + '.kiln')
            kiln('compile', '--arch', 'sm_90a', os.path.join(SMALL, stem + '.json'), '-o', path, env=env)
            open(os.path.join(art, stem + '.kiln'), 'wb').write(shrink_artifact(open(path, 'rb').read()))
        for name in sorted(os.listdir(env['KILN_CACHE_DIR']))[:6]:
            data = open(os.path.join(env['KILN_CACHE_DIR'], name), 'rb').read()
            open(os.path.join(cache, name), 'wb').write(shrink_cache_entry(data))


def tensor_seeds():
    out = fresh('tensor_file')

    def npy(a, version=None):
        b = io.BytesIO()
        np.lib.format.write_array(b, a, version=version)
        return b.getvalue()

    arrays = {
        'f32_2x3': np.arange(6, dtype='<f4').reshape(2, 3), 'f16_4': np.ones(4, '<f2'),
        'u2_3x1': np.array([[1], [2], [3]], '<u2'), 'i32_scalar': np.array(7, '<i4'),
        'i64_0x5': np.zeros((0, 5), '<i8'), 'bool_2x2x2': np.array([True, False] * 4).reshape(2, 2, 2),
        'f32_fortran_1d': np.asfortranarray(np.arange(3, dtype='<f4')),
    }
    # Mode byte 0: ParseNpy on the rest.
    for name, a in arrays.items():
        open(os.path.join(out, 'npy_' + name), 'wb').write(b'\x00' + npy(a))
    open(os.path.join(out, 'npy_v2_f32_4'), 'wb').write(b'\x00' + npy(np.arange(4, dtype='<f4'), (2, 0)))
    # Mode 3: ReadTensorFile on an .npy file, mode 1: on a raw file; then the dtype index
    # (f32 f16 bf16 i32 i64 bool), the rank and the dims.
    files = {
        'file_npy_f32_2x3': bytes([3, 0, 2, 2, 3]) + npy(np.arange(6, dtype='<f4').reshape(2, 3)),
        'file_bin_i32_4': bytes([1, 3, 1, 4]) + np.arange(4, dtype='<i4').tobytes(),
        'file_bin_bool_3': bytes([1, 5, 1, 3, 0, 1, 1]),
        'file_bin_bf16_2x2': bytes([1, 2, 2, 2, 2]) + np.arange(4, dtype='<u2').tobytes(),
    }
    for name, data in files.items():
        open(os.path.join(out, name), 'wb').write(data)


def onnx_seeds():
    """Small models with extreme constant operands for the shape and folding converters."""
    from onnx import helper, TensorProto as T, numpy_helper as nh
    out = fresh('onnx_import')
    F, I64, I32 = T.FLOAT, T.INT64, T.INT32

    def vi(n, e, s):
        return helper.make_tensor_value_info(n, e, s)

    def save(name, nodes, inits=(), inputs=None, outputs=None, opset=18):
        inputs = inputs if inputs is not None else [vi('x', F, [2, 3])]
        outputs = outputs or [vi('y', F, None)]
        inits = [nh.from_array(v[1] if isinstance(v[1], np.ndarray) else np.array(v[1], dtype=v[2]), v[0])
                 for v in inits]
        g = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)])
        open(os.path.join(out, name + '.onnx'), 'wb').write(m.SerializeToString())

    big=2**40; M=2**63-1; m=-2**63
    save('cos_huge',[helper.make_node('ConstantOfShape',['s'],['y'])],[('s',[big],np.int64)],inputs=[])
    save('cos_overflow',[helper.make_node('ConstantOfShape',['s'],['y'])],[('s',[2**31,2**31,2**31],np.int64)],inputs=[])
    save('range_huge',[helper.make_node('Range',['a','b','c'],['y'])],[('a',0,np.int64),('b',10**15,np.int64),('c',1,np.int64)],inputs=[])
    save('range_zero_step',[helper.make_node('Range',['a','b','c'],['y'])],[('a',0,np.int64),('b',10,np.int64),('c',0,np.int64)],inputs=[])
    save('range_minmax',[helper.make_node('Range',['a','b','c'],['y'])],[('a',m,np.int64),('b',M,np.int64),('c',1,np.int64)],inputs=[])
    save('range_float_nan',[helper.make_node('Range',['a','b','c'],['y'])],[('a',0,np.float32),('b',np.inf,np.float32),('c',1e-30,np.float32)],inputs=[])
    save('tile_huge',[helper.make_node('Tile',['x','r'],['y'])],[('r',[big,1],np.int64)])
    save('tile_neg',[helper.make_node('Tile',['x','r'],['y'])],[('r',[-1,1],np.int64)])
    save('expand_overflow',[helper.make_node('Expand',['x','s'],['y'])],[('s',[2**31,2**31,2**31,1,3],np.int64)])
    save('reshape_zero_infer',[helper.make_node('Reshape',['e','s'],['y'])],[('e',np.zeros((0,3),np.float32),None),('s',[0,-1],np.int64)],inputs=[])
    save('reshape_neg_infer_empty',[helper.make_node('Reshape',['e','s'],['y'])],[('e',np.zeros((0,3),np.float32),None),('s',[-1,0],np.int64)],inputs=[])
    save('reshape_two_neg',[helper.make_node('Reshape',['x','s'],['y'])],[('s',[-1,-1],np.int64)])
    save('reshape_huge',[helper.make_node('Reshape',['x','s'],['y'])],[('s',[big,big,-1],np.int64)])
    save('slice_extreme',[helper.make_node('Slice',['x','a','b','c','d'],['y'])],[('a',[M],np.int64),('b',[m],np.int64),('c',[1],np.int64),('d',[m],np.int64)])
    save('slice_extreme2',[helper.make_node('Slice',['x','a','b','c','d'],['y'])],[('a',[m],np.int64),('b',[M],np.int64),('c',[-1],np.int64),('d',[M],np.int64)])
    save('slice_axis_min',[helper.make_node('Slice',['x','a','b','c'],['y'])],[('a',[0],np.int64),('b',[1],np.int64),('c',[m],np.int64)])
    save('gather_oob_const',[helper.make_node('Gather',['d','i'],['y'],axis=0)],[('d',np.arange(3,dtype=np.float32),None),('i',[5,-7,M,m],np.int64)],inputs=[])
    save('gather_axis_min',[helper.make_node('Gather',['x','i'],['y'],axis=m)],[('i',[0],np.int64)])
    save('transpose_bad',[helper.make_node('Transpose',['x'],['y'],perm=[1,1])])
    save('transpose_oob',[helper.make_node('Transpose',['x'],['y'],perm=[0,M])])
    save('transpose_neg',[helper.make_node('Transpose',['x'],['y'],perm=[-1,0])])
    save('squeeze_oob',[helper.make_node('Squeeze',['x','a'],['y'])],[('a',[m],np.int64)])
    save('unsqueeze_oob',[helper.make_node('Unsqueeze',['x','a'],['y'])],[('a',[M],np.int64)])
    save('unsqueeze_dup',[helper.make_node('Unsqueeze',['x','a'],['y'])],[('a',[0,0],np.int64)])
    save('split_neg',[helper.make_node('Split',['x','s'],['y','z'],axis=1)],[('s',[-1,4],np.int64)])
    save('split_huge',[helper.make_node('Split',['x','s'],['y','z'],axis=1)],[('s',[M,4],np.int64)])
    save('split_num_outputs0',[helper.make_node('Split',['x'],['y'],axis=1,num_outputs=0)])
    save('concat_axis',[helper.make_node('Concat',['x','x'],['y'],axis=m)])
    save('trilu_k',[helper.make_node('Trilu',['x','k'],['y'])],[('k',m,np.int64)])
    save('trilu_kmax',[helper.make_node('Trilu',['x','k'],['y'],upper=0)],[('k',M,np.int64)])
    save('mod_zero',[helper.make_node('Mod',['a','b'],['y'])],[('a',[5,7],np.int64),('b',[0,0],np.int64)],inputs=[])
    save('mod_min',[helper.make_node('Mod',['a','b'],['y'])],[('a',[m],np.int64),('b',[-1],np.int64)],inputs=[])
    save('div_zero_int',[helper.make_node('Div',['a','b'],['y'])],[('a',[5,m],np.int64),('b',[0,-1],np.int64)],inputs=[])
    save('div_zero_i32',[helper.make_node('Div',['a','b'],['y'])],[('a',[5,-2**31],np.int32),('b',[0,-1],np.int32)],inputs=[])
    save('pow_int',[helper.make_node('Pow',['a','b'],['y'])],[('a',[2,3],np.int64),('b',[-1,100],np.int64)],inputs=[])
    save('cast_nan',[helper.make_node('Cast',['a'],['y'],to=I64)],[('a',[np.nan,np.inf,-np.inf,1e30],np.float32)],inputs=[])
    save('cast_nan_i32',[helper.make_node('Cast',['a'],['y'],to=I32)],[('a',[np.nan,np.inf,-np.inf,1e30],np.float32)],inputs=[])
    save('neg_min',[helper.make_node('Neg',['a'],['y'])],[('a',[m],np.int64)],inputs=[])
    save('abs_min',[helper.make_node('Abs',['a'],['y'])],[('a',[m],np.int64)],inputs=[])
    save('add_overflow',[helper.make_node('Add',['a','a'],['y'])],[('a',[M],np.int64)],inputs=[])
    save('mul_overflow',[helper.make_node('Mul',['a','a'],['y'])],[('a',[M],np.int64)],inputs=[])
    save('sum_reduce_overflow',[helper.make_node('ReduceSum',['a'],['y'],keepdims=0)],[('a',[M,M],np.int64)],inputs=[])
    save('softmax_axis',[helper.make_node('Softmax',['x'],['y'],axis=m)])
    save('flatten_axis',[helper.make_node('Flatten',['x'],['y'],axis=m)])
    save('reduce_dup',[helper.make_node('ReduceSum',['x','a'],['y'])],[('a',[1,1,-1],np.int64)])
    save('reduce_axes_min',[helper.make_node('ReduceMax',['x','a'],['y'])],[('a',[m],np.int64)])
    save('shape_slice',[helper.make_node('Shape',['x'],['y'],start=m,end=M)],outputs=[vi('y',I64,None)])
    save('layernorm_axis',[helper.make_node('LayerNormalization',['x','w'],['y'],axis=m)],[('w',[1,1,1],np.float32)])
    save('cast_int_to_bool',[helper.make_node('Cast',['a'],['y'],to=T.BOOL)],[('a',[2,0],np.int64)],inputs=[])
    save('expand_neg',[helper.make_node('Expand',['x','s'],['y'])],[('s',[-2,3],np.int64)])
    save('cos_neg',[helper.make_node('ConstantOfShape',['s'],['y'])],[('s',[-5],np.int64)],inputs=[])
    save('size_big',[helper.make_node('Size',['x'],['y'])],outputs=[vi('y',I64,None)])
    save('range_i32_overflow',[helper.make_node('Range',['a','b','c'],['y'])],[('a',np.int32(-2**31),np.int32),('b',np.int32(2**31-1),np.int32),('c',np.int32(2**30),np.int32)],inputs=[])
    save('clip_int',[helper.make_node('Clip',['a','lo','hi'],['y'])],[('a',[1,2],np.int64),('lo',5,np.int64),('hi',1,np.int64)],inputs=[])
    save('reduce_mean_int',[helper.make_node('ReduceMean',['a'],['y'],keepdims=0)],[('a',np.zeros((0,),np.int64),None)],inputs=[])
    save('reduce_max_empty',[helper.make_node('ReduceMax',['a'],['y'],keepdims=0)],[('a',np.zeros((0,),np.float32),None)],inputs=[])
    save('gather_empty',[helper.make_node('Gather',['d','i'],['y'],axis=0)],[('d',np.zeros((0,),np.float32),None),('i',[0],np.int64)],inputs=[])

if __name__ == '__main__':
    ir_seeds()
    artifact_and_cache_seeds()
    tensor_seeds()
    onnx_seeds()
