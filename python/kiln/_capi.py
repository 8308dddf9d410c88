"""Loading libkiln.so (kiln's C ABI, api/kiln.h) with ctypes, its function prototypes, and the
errors its status codes become.

The library is looked for, in order:
  1. the file named by the environment variable KILN_LIBRARY (when set, nothing else is tried);
  2. next to this package (kiln/libkiln.so, as a wheel or an install would put it);
  3. a build tree: $KILN_BUILD_DIR/api, then build/api/ of the source tree this package sits in
     (python/kiln/../../build/api/libkiln.so);
  4. the system loader (ctypes.util.find_library("kiln"), i.e. ld.so's search path).
The first file that loads wins; if none does, importing kiln raises an ImportError that lists
every place tried.
"""

import ctypes
import ctypes.util
import os
from pathlib import Path

KILN_OK = 0
KILN_ERROR_INVALID_ARGUMENT = 1
KILN_ERROR_UNSUPPORTED = 2
KILN_ERROR_CUDA = 3
KILN_ERROR_INTERNAL = 4
KILN_ERROR_IO = 5
KILN_ERROR_NO_DEVICE = 6

ABI_VERSION = 1


class KilnError(RuntimeError):
    """A failed libkiln call: `code` is the KILN_ERROR_* status, `status` its name, and the
    message is the library's (kiln_last_error)."""

    def __init__(self, message, code=KILN_ERROR_INTERNAL, status="KILN_ERROR_INTERNAL"):
        super().__init__(message)
        self.code = code
        self.status = status


class KilnInputError(KilnError, ValueError):
    """KILN_ERROR_INVALID_ARGUMENT: the graph, an argument or a tensor is not acceptable."""


class KilnUnsupportedError(KilnError):
    """KILN_ERROR_UNSUPPORTED: valid, but not something kiln does (an op, an architecture)."""


class KilnIOError(KilnError, OSError):
    """KILN_ERROR_IO: a file is missing, unreadable or cannot be written."""


class KilnNoDeviceError(KilnError):
    """KILN_ERROR_NO_DEVICE: GPU work was asked for and there is no CUDA driver or GPU."""


_ERRORS = {
    KILN_ERROR_INVALID_ARGUMENT: KilnInputError,
    KILN_ERROR_UNSUPPORTED: KilnUnsupportedError,
    KILN_ERROR_IO: KilnIOError,
    KILN_ERROR_NO_DEVICE: KilnNoDeviceError,
}


class TensorInfo(ctypes.Structure):
    """kiln_tensor_info (borrowed pointers; converted to kiln.TensorInfo at once)."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("dtype", ctypes.c_char_p),
        ("rank", ctypes.c_int64),
        ("dims", ctypes.POINTER(ctypes.c_int64)),
    ]


def _candidates():
    here = Path(__file__).resolve().parent
    names = ["libkiln.so"]
    places = []
    env = os.environ.get("KILN_LIBRARY")
    if env:
        places.append(("KILN_LIBRARY", Path(env)))
    for name in names:
        places.append(("next to the package", here / name))
    build = os.environ.get("KILN_BUILD_DIR")
    if build:
        places.append(("KILN_BUILD_DIR", Path(build) / "api" / "libkiln.so"))
    places.append(("the source tree's build", here.parent.parent / "build" / "api" / "libkiln.so"))
    return places


def _load():
    tried = []
    for where, path in _candidates():
        if not path.exists():
            tried.append(f"{path} ({where}): not there")
            if where == "KILN_LIBRARY":
                break  # an explicit choice that is missing is not silently replaced
            continue
        try:
            return ctypes.CDLL(str(path)), str(path)
        except OSError as e:
            tried.append(f"{path} ({where}): {e}")
            if where == "KILN_LIBRARY":
                break  # an explicit choice that fails is not silently replaced
    found = None if os.environ.get("KILN_LIBRARY") else ctypes.util.find_library("kiln")
    if found:
        try:
            return ctypes.CDLL(found), found
        except OSError as e:
            tried.append(f"{found} (system loader): {e}")
    elif not os.environ.get("KILN_LIBRARY"):
        tried.append("libkiln.so via the system loader: not found")
    raise ImportError(
        "kiln: cannot load libkiln.so, kiln's C library. Build it (cmake --build build --target kiln_c, "
        "giving build/api/libkiln.so) and set KILN_LIBRARY to its path, or install kiln. Tried:\n  "
        + "\n  ".join(tried))


lib, path = _load()

_c_int64_p = ctypes.POINTER(ctypes.c_int64)
_void_pp = ctypes.POINTER(ctypes.c_void_p)
_INT, _P, _S, _I64 = ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64

_PROTOTYPES = {
    # name: (restype, argtypes)
    "kiln_version": (_S, []),
    "kiln_abi_version": (_INT, []),
    "kiln_last_error": (_S, []),
    "kiln_status_name": (_S, [_INT]),
    "kiln_string_free": (None, [_P]),
    "kiln_have_gpu": (_INT, []),
    "kiln_graph_load": (_INT, [_S, _void_pp]),
    "kiln_graph_from_json": (_INT, [_S, _void_pp]),
    "kiln_graph_create": (_INT, [_S, _void_pp]),
    "kiln_graph_add_input": (_INT, [_P, _S, _S, _I64, _c_int64_p, _c_int64_p]),
    "kiln_graph_add_constant": (_INT, [_P, _S, _S, _I64, _c_int64_p, _P, ctypes.c_size_t, _c_int64_p]),
    "kiln_graph_add_node": (_INT, [_P, _S, _c_int64_p, _I64, _S, _S, _c_int64_p]),
    "kiln_graph_add_output": (_INT, [_P, _I64, _S]),
    "kiln_graph_value_info": (_INT, [_P, _I64, ctypes.POINTER(TensorInfo)]),
    "kiln_graph_verify": (_INT, [_P]),
    "kiln_graph_name": (_INT, [_P, ctypes.POINTER(_S)]),
    "kiln_graph_num_inputs": (_INT, [_P, _c_int64_p]),
    "kiln_graph_num_outputs": (_INT, [_P, _c_int64_p]),
    "kiln_graph_input_info": (_INT, [_P, _I64, ctypes.POINTER(TensorInfo)]),
    "kiln_graph_output_info": (_INT, [_P, _I64, ctypes.POINTER(TensorInfo)]),
    "kiln_graph_to_json": (_INT, [_P, _void_pp]),
    "kiln_graph_free": (_INT, [_P]),
    "kiln_graph_reference": (_INT, [_P, _void_pp, _I64, _void_pp, _I64]),
    "kiln_graph_dump": (_INT, [_P, _S, _S, _void_pp]),
    "kiln_options_create": (_INT, [_void_pp]),
    "kiln_options_free": (None, [_P]),
    "kiln_options_set_arch": (_INT, [_P, _S]),
    "kiln_options_set_cost_device": (_INT, [_P, _S]),
    "kiln_options_set_tune": (_INT, [_P, _INT]),
    "kiln_options_set_cache_dir": (_INT, [_P, _S]),
    "kiln_options_set_device_ordinal": (_INT, [_P, _INT]),
    "kiln_options_set_cuda_graph": (_INT, [_P, _INT]),
    "kiln_compile": (_INT, [_P, _P, _void_pp]),
    "kiln_artifact_save": (_INT, [_P, _S]),
    "kiln_artifact_load": (_INT, [_S, _P, _void_pp]),
    "kiln_executable_free": (None, [_P]),
    "kiln_executable_graph": (_INT, [_P, _void_pp]),
    "kiln_executable_arch": (_INT, [_P, ctypes.POINTER(_S)]),
    "kiln_executable_ledger": (_INT, [_P, _void_pp]),
    "kiln_executable_prepare": (_INT, [_P]),
    "kiln_executable_run": (_INT, [_P, _void_pp, _I64, _void_pp, _I64, ctypes.c_uint64]),
    "kiln_executable_set_cuda_graph": (_INT, [_P, _INT]),
    "kiln_executable_launches": (_INT, [_P, _c_int64_p, _c_int64_p, _c_int64_p, _c_int64_p]),
    "kiln_executable_memory": (_INT, [_P, _c_int64_p, _c_int64_p, _c_int64_p]),
}

for _name, (_restype, _argtypes) in _PROTOTYPES.items():
    _f = getattr(lib, _name)
    _f.restype = _restype
    _f.argtypes = _argtypes

if lib.kiln_abi_version() != ABI_VERSION:
    raise ImportError(f"kiln: {path} has C ABI version {lib.kiln_abi_version()}, this package needs {ABI_VERSION}")


def check(status):
    """Raises the KilnError for a nonzero status, with the library's message."""
    if status == KILN_OK:
        return
    message = (lib.kiln_last_error() or b"").decode("utf-8", "replace")
    name = lib.kiln_status_name(status).decode()
    raise _ERRORS.get(status, KilnError)(message, status, name)


def encode(text):
    """str or os.PathLike -> bytes for a char* argument (None stays None)."""
    if text is None:
        return None
    return os.fsencode(text) if isinstance(text, os.PathLike) else str(text).encode("utf-8")


def take_string(pointer):
    """A library-owned char* (from a char** result) as str, freed."""
    try:
        return ctypes.string_at(pointer).decode("utf-8", "replace")
    finally:
        lib.kiln_string_free(pointer)


def pointer_array(values):
    """A void*[] from ints (addresses) or None."""
    array = (ctypes.c_void_p * max(len(values), 1))()
    for i, v in enumerate(values):
        array[i] = v
    return array
