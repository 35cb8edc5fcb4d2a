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
  ``runtime_tokens``: the runtime tokens of programs with host callbacks (``effects_barrier``);
  ``distributed``: several processes

A submodule exports a name here by listing it in its ``_REEXPORTED`` (NOTE: [derived namespaces]
in funcgrad/__init__.py: read from the source text on first use, so nothing is imported for it);
the submodules are the folder's public modules. Example:

    >>> from funcgrad import xla_bridge
    >>> xla_bridge.get_backend("cpu").platform
    'cpu'
"""

from __future__ import annotations

import importlib
import os
import sys

# The submodules whose ``_REEXPORTED`` names the package exports, and the folder's public modules
# that are not listed in ``__all__`` (they are imported by name where needed).
_SOURCES = ("runtime", "dtypes", "compile_cache")
_UNLISTED = frozenset({"dlpack", "fastpath", "profiling"})


def _declared(module: str) -> tuple[str, ...]:
    """``module``'s ``_REEXPORTED``, read from its source without importing it (which would import
    jaxlib)."""
    import ast  # (only here: importing the package stays cheap)
    import re

    with open(os.path.join(os.path.dirname(__file__), f"{module}.py"), encoding="utf-8") as f:
        found = re.search(r"^_REEXPORTED = (\(.*?\))$", f.read(), re.M | re.S)
    return tuple(ast.literal_eval(found.group(1)))


def _tables() -> dict:
    """``_LAZY`` (public name -> submodule) and ``_SUBMODULES``, derived on first use."""
    tables = globals()
    if "_LAZY" not in tables:
        folder = os.path.dirname(__file__)
        public = {
            n.removesuffix(".py") for n in os.listdir(folder) if n.endswith(".py") and not n.startswith("_")
        }
        tables["_SUBMODULES"] = tuple(sorted(public - _UNLISTED))
        tables["_LAZY"] = {name: module for module in _SOURCES for name in _declared(module)}
        tables["__all__"] = sorted({*tables["_LAZY"], *tables["_SUBMODULES"]})
    return tables


# NOTE: [dispatch registration]
# ``xla_bridge.dispatch`` (through ``execute``) registers the compiled impl of the ``jit``
# primitive and the device read-back of ``funcgrad.Array`` with the kernel when imported.
# ``funcgrad.jit`` imports it; here
# it is imported only if the catalog is already loaded, because ``import funcgrad.xla_bridge`` alone must
# not pull in numpy or the funcgrad kernel (tests/bridge/test_xla_runtime.py checks that it stays cheap).
if "funcgrad.primitives.call" in sys.modules:
    importlib.import_module(f"{__name__}.dispatch")


def __getattr__(name: str):
    if name in ("_LAZY", "_SUBMODULES", "__all__"):
        return _tables()[name]
    mod = _tables()["_LAZY"].get(name)
    if mod is not None:
        value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
        globals()[name] = value  # later lookups skip __getattr__
        return value
    if name in _tables()["_SUBMODULES"]:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_tables()["__all__"]))
