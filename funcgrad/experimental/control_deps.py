"""``funcgrad.experimental.control_deps``: JAX's ``jax.experimental.control_deps`` -- ordering
between values that XLA's scheduler must respect.

Layer: surface. Imports funcgrad.ffi (XLA's ``control_dep`` custom call, which jaxlib's CPU and
GPU runtimes provide).

``control_dep(src, dst)`` makes the computation of ``src`` come before that of ``dst`` in the
compiled program (an XLA control dependency, for overlapping communication with computation:
JAX's FSDP examples); ``schedule([a, b, c])`` chains them. Values are unchanged.

>>> import numpy as np, funcgrad, funcgrad.numpy as fnp
>>> def f(x):
...     a, b = fnp.sin(x), fnp.cos(x)
...     schedule([b, a])
...     return a + b
>>> 'custom_call_target="control_dep"' in funcgrad.jit(f).lower(np.ones(3)).as_text(dialect="hlo")
True
"""

from __future__ import annotations

from funcgrad import ffi

__all__ = ["control_dep", "schedule"]


def control_dep(src, dst) -> None:
    """Add a control dependency from ``src`` to ``dst`` (JAX's ``control_dep``): under ``jit``,
    XLA schedules the computation of ``src`` before that of ``dst``.

    >>> import numpy as np, funcgrad
    >>> funcgrad.jit(lambda x, y: (control_dep(x, y), x + y)[1])(np.ones(2), np.ones(2)).tolist()
    [2.0, 2.0]
    """
    return ffi.ffi_call("control_dep", (), has_side_effect=True)(src, dst)


def schedule(ops) -> None:
    """Add control dependencies that schedule ``ops`` in the given order: ``schedule([a, b, c])``
    adds ``a -> b`` and ``b -> c`` (JAX's ``schedule``).

    >>> import numpy as np, funcgrad
    >>> funcgrad.jit(lambda x: (schedule([x, x * 2, x * 3]), x)[1])(np.ones(2)).tolist()
    [1.0, 1.0]
    """
    for src, dst in zip(ops[:-1], ops[1:]):
        control_dep(src, dst)
