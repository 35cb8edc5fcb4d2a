"""``funcgrad.interpreters``: the rule registries of JAX's ``jax.interpreters`` over funcgrad's kernel.

Layer: surface. ``ad``, ``batching``, ``partial_eval`` and ``mlir`` expose the tables a library
author fills to give a primitive of its own a JVP, a transpose, a batching rule and a lowering;
writing to a table sets the rule on the funcgrad primitive itself. Submodules load on first use.

>>> import funcgrad.interpreters
>>> sorted(funcgrad.interpreters.__all__)
['ad', 'batching', 'mlir', 'partial_eval', 'pxla', 'xla']
"""

from __future__ import annotations

import importlib

_SUBMODULES = ("ad", "batching", "mlir", "partial_eval", "pxla", "xla")
__all__ = list(_SUBMODULES)


def __getattr__(name):
    if name in _SUBMODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
