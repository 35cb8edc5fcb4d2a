"""``funcgrad.stages``: the types of the ahead-of-time stages of ``jit`` (``jax.stages``), for
``isinstance`` checks and annotations: ``jit(f)`` is a ``Wrapped``, ``jit(f).trace(x)`` a
``Traced``, ``.lower(x)`` a ``Lowered`` and ``.lower(x).compile()`` a ``Compiled``; each has
``args_info``, the ``(args, kwargs)`` tree of ``ArgInfo`` (shape, dtype, donated) of its array
arguments. ``CompilerOptions`` is JAX's type alias of XLA options by name.

Layer: surface. Re-exports the classes of funcgrad.jitting, where they are defined.

>>> import funcgrad, funcgrad.numpy as fnp
>>> f = funcgrad.jit(fnp.sin)
>>> isinstance(f, Wrapped), isinstance(f.lower(1.0), Lowered), isinstance(f.lower(1.0).compile(), Compiled)
(True, True, True)
"""

from __future__ import annotations

from typing import Union

from funcgrad.jitting import ArgInfo, Lowered, Traced
from funcgrad.jitting import CompiledCall as Compiled
from funcgrad.jitting import JittedFunction as Wrapped

# XLA compiler options by name, as JAX's type alias (``{"xla_cpu_enable_fast_math": False}``).
CompilerOptions = dict[str, Union[str, bool]]  # noqa: UP007 - JAX's spelling of the alias

__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
