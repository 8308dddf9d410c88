"""Host arrays for the CPU reference path: numpy dtypes for kiln's dtypes, and bf16.

NumPy has no bfloat16. For a bf16 graph input, `to_host` takes either a float32 array
(rounded to bf16, round-to-nearest-even, as the GPU rounds) or a uint16 array (taken as the
bf16 bit patterns, the convention of `kiln run --inputs` .npy files); a bf16 output comes back
as float32 (exact: every bf16 value is a float32). Every other dtype must match exactly
(f32: float32, f16: float16, i32: int32, i64: int64, bool: bool); Python lists and scalars
are converted to the graph's dtype.
"""

import numpy as np

NUMPY_DTYPES = {
    "f32": np.float32,
    "f16": np.float16,
    "i32": np.int32,
    "i64": np.int64,
    "bool": np.bool_,
}


def float32_to_bf16_bits(values):
    """float32 array -> uint16 bf16 bit patterns, round to nearest even (NaN stays NaN)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(values)
    if np.any(nan):
        rounded = np.where(nan, np.uint16(0x7FC0), rounded)
    return rounded


def bf16_bits_to_float32(bits):
    return (np.ascontiguousarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def to_host(value, info, label):
    """A C-contiguous numpy array holding `value` in `info`'s storage dtype (bf16: uint16
    bits). Raises ValueError naming `label` ("input #0 'x'") when dtype or shape do not fit."""
    want_shape = tuple(info.shape)
    if not isinstance(value, np.ndarray):
        value = np.asarray(value, dtype=np.float32 if info.dtype == "bf16" else NUMPY_DTYPES[info.dtype])
    if tuple(value.shape) != want_shape:
        raise ValueError(f"{label}: expected shape {want_shape}, got {tuple(value.shape)}")
    if info.dtype == "bf16":
        if value.dtype == np.uint16:
            return np.ascontiguousarray(value)
        if value.dtype == np.float32:
            return float32_to_bf16_bits(value)
        raise ValueError(f"{label}: the graph takes bf16, which NumPy lacks: give float32 (rounded to bf16) "
                         f"or uint16 (bf16 bit patterns), not {value.dtype}")
    want = np.dtype(NUMPY_DTYPES[info.dtype])
    if value.dtype != want:
        raise ValueError(f"{label}: expected {info.dtype} ({want}), got {value.dtype}")
    return np.ascontiguousarray(value)


def empty_host(info):
    """An uninitialised array for output `info` in its storage dtype."""
    dtype = np.uint16 if info.dtype == "bf16" else NUMPY_DTYPES[info.dtype]
    return np.empty(tuple(info.shape), dtype=dtype)


def from_host(array, info):
    """The user-facing value of an output buffer (bf16 -> float32)."""
    return bf16_bits_to_float32(array).reshape(array.shape) if info.dtype == "bf16" else array
