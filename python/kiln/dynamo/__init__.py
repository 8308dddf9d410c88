"""kiln as a torch.compile backend: `torch.compile(model, backend="kiln")`.

Importing this package registers the backend name "kiln" with torch._dynamo (idempotently); the
package's `torch_dynamo_backends` entry point names `kiln.dynamo:kiln_backend` as well. See
docs/torch.md.
"""

from .backend import Report, config, explain, kiln_backend, stats  # noqa: F401
from . import convert  # noqa: F401  (the module: kiln.dynamo.convert.convert converts)
from .convert import Unsupported  # noqa: F401

__all__ = ["kiln_backend", "explain", "config", "stats", "Report", "convert", "Unsupported", "register"]


def register():
    """Registers kiln_backend under the name "kiln" unless a backend of that name exists."""
    try:
        from torch._dynamo.backends.registry import _BACKENDS, _COMPILER_FNS, register_backend
    except Exception:  # noqa: BLE001 -- a torch without this registry layout
        try:
            import torch._dynamo

            torch._dynamo.register_backend(compiler_fn=kiln_backend, name="kiln")
            return True
        except Exception:  # noqa: BLE001
            return False
    if "kiln" in _COMPILER_FNS:
        return True  # registered already
    if _BACKENDS.get("kiln") is not None:
        # the entry point was discovered: torch's lookup_backend loads it and registers it itself
        # (registering here too would trip its "duplicate name" assertion)
        return True
    register_backend(compiler_fn=kiln_backend, name="kiln")
    return True


register()
