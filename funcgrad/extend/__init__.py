"""``funcgrad.extend``: JAX's extension API for library authors, over funcgrad's own kernel.

Layer: surface. Each submodule (``core``, ``linear_util``, ``backend``, ``mlir``, ``ffi``,
``ifrt_programs``, ``random``, ``sharding``, ``source_info_util``) names objects that the kernel, the
primitive catalog or the XLA bridge define; nothing here is a second kernel. Submodules load on first use.

>>> import funcgrad.extend
>>> funcgrad.extend.core.Primitive("my_op").name
'my_op'
"""

from __future__ import annotations

import importlib

_SUBMODULES = (
    "backend",
    "core",
    "ffi",
    "ifrt_programs",
    "linear_util",
    "mlir",
    "random",
    "sharding",
    "source_info_util",
)
__all__ = list(_SUBMODULES)


def __getattr__(name):
    if name in _SUBMODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
