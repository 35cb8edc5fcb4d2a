"""``funcgrad.experimental.sparse.bcsr``: the module JAX's ``jax.experimental.sparse.bcsr`` is, for
code that imports it (``from jax.experimental.sparse import bcsr``): ``BCSR`` and the ``bcsr_*``
functions of ``funcgrad.experimental.sparse`` (derived from its namespace, never listed twice).

Layer: surface. Imported by ``funcgrad.experimental.sparse`` after its own names.

>>> import funcgrad.numpy as fnp
>>> bcsr_todense(bcsr_fromdense(fnp.eye(2))).tolist()
[[1.0, 0.0], [0.0, 1.0]]
"""

from __future__ import annotations

import funcgrad.experimental.sparse as _sparse

__all__ = sorted(n for n in _sparse.__all__ if n == "BCSR" or n.startswith("bcsr_"))
globals().update({n: getattr(_sparse, n) for n in __all__})


def __dir__():
    return list(__all__)
