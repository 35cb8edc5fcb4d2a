"""``funcgrad.stages``: the types of the ahead-of-time stages of ``jit`` (``jax.stages``), for
``isinstance`` checks and annotations: ``jit(f)`` is a ``Wrapped``, ``jit(f).trace(x)`` a
``Traced``, ``.lower(x)`` a ``Lowered`` and ``.lower(x).compile()`` a ``Compiled``.

Layer: surface. Re-exports the classes of funcgrad.jitting, where they are defined.

>>> import funcgrad, funcgrad.numpy as fnp
>>> f = funcgrad.jit(fnp.sin)
>>> isinstance(f, Wrapped), isinstance(f.lower(1.0), Lowered), isinstance(f.lower(1.0).compile(), Compiled)
(True, True, True)
"""

from __future__ import annotations

from funcgrad.jitting import CompiledCall as Compiled
from funcgrad.jitting import JittedFunction as Wrapped
from funcgrad.jitting import Lowered, Traced

__all__ = ["Compiled", "Lowered", "Traced", "Wrapped"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
