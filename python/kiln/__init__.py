"""kiln: a graph-level fusion compiler for NVIDIA GPUs, from Python.

A pure-Python package over libkiln.so, kiln's C ABI (api/kiln.h), through ctypes: no compiled
extension, so it imports on any CPython 3 that can load the library (see kiln._capi for where
it is looked for; KILN_LIBRARY names it explicitly).

    import kiln
    exe = kiln.compile("examples/small/softmax.json")     # or JSON text, a dict, a kiln.Graph
    (y,) = exe(x)                  # torch CUDA tensors: on the GPU, on torch's current stream
    (y,) = exe(x_numpy)            # numpy arrays: on the CPU reference interpreter
    exe.save("softmax.kiln"); exe = kiln.load("softmax.kiln")
    print(kiln.dump("examples/small/softmax.json"))      # the fusion report

If torch is importable and the kiln.dynamo subpackage is present, it is imported so that it
registers the torch.compile backend "kiln"; a failure there warns and never breaks `import kiln`.
"""

from ._capi import (KilnError, KilnInputError, KilnIOError, KilnNoDeviceError, KilnUnsupportedError,
                    lib as _lib)
from .executable import Executable, compile, dump, load
from .graph import Graph, TensorInfo

__version__ = _lib.kiln_version().decode()

__all__ = ["Executable", "Graph", "TensorInfo", "KilnError", "KilnInputError", "KilnIOError",
           "KilnNoDeviceError", "KilnUnsupportedError", "compile", "dump", "explain", "load", "have_gpu",
           "__version__"]


def explain(model, *inputs, **kwargs):
    """What torch.compile(model, backend="kiln") sends to kiln and what stays in torch, and why,
    for these inputs (kiln.dynamo.explain; needs torch)."""
    from .dynamo import explain as _explain

    return _explain(model, *inputs, **kwargs)


def have_gpu():
    """Whether the CUDA driver loads and reports a GPU."""
    return bool(_lib.kiln_have_gpu())


def _register_dynamo_backend():
    import importlib.util
    import warnings

    try:
        if importlib.util.find_spec("torch") is None or importlib.util.find_spec("kiln.dynamo") is None:
            return
        import kiln.dynamo  # noqa: F401  (registers the backend)
    except Exception as e:  # never fail `import kiln` because of the optional backend
        warnings.warn(f"kiln: the torch.compile backend (kiln.dynamo) did not load: {e!r}", RuntimeWarning)


_register_dynamo_backend()
