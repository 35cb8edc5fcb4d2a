"""xla_bridge: the only package that talks to XLA (through jaxlib, never jax).

Layer: xla_bridge, above the funcgrad kernel and ``primitives``. Importing the package is cheap
on purpose: nothing here imports numpy or jaxlib, and no PJRT client is created. Public names
resolve lazily (module ``__getattr__``) from their submodules on first access:

- ``runtime``: backends/devices (``resolve_device``), ``device_put``/``to_numpy``, ``compile`` ->
  ``Executable``, ``hlo_text``; re-exported from its subjects ``backends``, ``transfers`` and
  ``executables``
- ``dtypes``: NumPy dtype <-> MLIR type strings, interned ``Aval``s, dense constants
- ``compile_cache``: the opt-in persistent compilation cache
- ``plugins``: CUDA PJRT plugin discovery
- ``lapack``: registering jaxlib's CPU LAPACK kernels, once, when a module first calls one
- ``emitter``: StableHLO text builders and the lowering-rule registry
- ``lowering``: jaxpr -> StableHLO module text (rules in ``xla_bridge.rules``)
- ``dispatch``: the route table of a jitted call and its one argument split (the C hot path's
  Python twin); ``execute``: the compiled-program cache, argument and output buffers, the
  compiled ``jit`` primitive impl (see NOTE: [dispatch registration]); ``native``: jaxlib's C++
  dispatcher
- ``meshes`` (text), ``sharded`` (jaxlib shardings, sharded puts/reads, SPMD executables),
  ``spmd_route`` (which calls need several devices) and ``spmd`` (their route);
  ``distributed``: several processes

To export a new name, add it to ``_LAZY`` (name -> submodule) and ``__all__``. Example:

    >>> from funcgrad import xla_bridge
    >>> xla_bridge.get_backend("cpu").platform
    'cpu'
"""

from __future__ import annotations

import importlib
import sys

# Public name -> submodule that defines it.
_LAZY = {
    # runtime
    "XlaBridgeError": "runtime",
    "Device": "runtime",
    "Backend": "runtime",
    "get_backend": "runtime",
    "resolve_device": "runtime",
    "hlo_text": "runtime",
    "default_platform": "runtime",
    "normalize_platform": "runtime",
    "devices": "runtime",
    "default_device": "runtime",
    "device_put": "runtime",
    "to_numpy": "runtime",
    "Executable": "runtime",
    "compile": "runtime",
    "clear_compile_cache": "runtime",
    "compile_cache_info": "runtime",
    # dtypes
    "Aval": "dtypes",
    "aval": "dtypes",
    "mlir_element_type": "dtypes",
    "mlir_tensor_type": "dtypes",
    "dtype_from_mlir": "dtypes",
    "dense_attr": "dtypes",
    # compile_cache
    "set_cache_dir": "compile_cache",
    "get_cache_dir": "compile_cache",
}

_SUBMODULES = (
    "runtime",
    "backends",
    "transfers",
    "executables",
    "dtypes",
    "compile_cache",
    "plugins",
    "lapack",
    "emitter",
    "lowering",
    "dispatch",
    "execute",
    "native",
    "meshes",
    "sharded",
    "spmd",
    "spmd_route",
    "distributed",
)

# Kept equal to _LAZY + _SUBMODULES (tests/test_xla_runtime.py checks it).
__all__ = [
    "Aval",
    "Device",
    "Backend",
    "Executable",
    "XlaBridgeError",
    "aval",
    "backends",
    "clear_compile_cache",
    "compile",
    "compile_cache",
    "compile_cache_info",
    "default_device",
    "default_platform",
    "dense_attr",
    "device_put",
    "devices",
    "dispatch",
    "distributed",
    "dtype_from_mlir",
    "dtypes",
    "emitter",
    "executables",
    "execute",
    "get_backend",
    "get_cache_dir",
    "hlo_text",
    "lapack",
    "lowering",
    "meshes",
    "mlir_element_type",
    "mlir_tensor_type",
    "native",
    "normalize_platform",
    "plugins",
    "resolve_device",
    "runtime",
    "set_cache_dir",
    "sharded",
    "spmd",
    "spmd_route",
    "to_numpy",
    "transfers",
]


# NOTE: [dispatch registration]
# ``xla_bridge.dispatch`` registers the compiled impl of the ``jit`` primitive and the device
# read-back of ``funcgrad.Array`` with the kernel when imported. ``funcgrad.jit`` imports it; here
# it is imported only if the catalog is already loaded, because ``import funcgrad.xla_bridge`` alone must
# not pull in numpy or the funcgrad kernel (tests/test_xla_runtime.py checks that it stays cheap).
if "funcgrad.primitives.call" in sys.modules:
    importlib.import_module(f"{__name__}.dispatch")


def __getattr__(name: str):
    mod = _LAZY.get(name)
    if mod is not None:
        value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
        globals()[name] = value  # later lookups skip __getattr__
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
