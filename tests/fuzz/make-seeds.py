#!/usr/bin/env python3
"""Writes the generated part of the fuzz seed corpus, tests/fuzz/seeds/<target>/ (committed).

The JSON and ONNX targets are seeded straight from examples/ and the test fixtures (scripts/fuzz
gathers them); the other formats have no files in the repository, so this script makes them
with a built `kiln` (argument 1, default build/tools/kiln):
  ir_parser     `kiln check` of the small examples and ONNX test models, and `kiln dump
                --after constant_fold` of a few (primitive ops, constants)
  artifact      `kiln compile --arch sm_90a` of four examples (NVRTC, no GPU), every CUBIN,
                ledger and source graph cut to its first 64 bytes and the checksum recomputed, so seeds stay small
  kernel_cache  the disk cache entries of those compiles, cut the same way
  tensor_file   .npy files from numpy (every dtype, rank 0 to 3, an empty one, version 2.0,
                Fortran order) and raw files, with the mode and shape bytes fuzz_tensor_file.cc
                reads first
Run it from anywhere; it overwrites those four folders.
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


if __name__ == '__main__':
    ir_seeds()
    artifact_and_cache_seeds()
    tensor_seeds()
