"""``funcgrad.scipy.sparse``: the Krylov solvers of ``jax.scipy.sparse`` (``linalg.cg``,
``linalg.gmres``, ``linalg.bicgstab``), for operators given as matrices or functions.

Layer: surface. Imports funcgrad.scipy.sparse.linalg.

>>> import funcgrad.numpy as fnp
>>> x, _ = linalg.cg(fnp.array([[4.0, 1.0], [1.0, 3.0]]), fnp.array([1.0, 2.0]))
>>> [round(v, 6) for v in x.tolist()]
[0.090909, 0.636364]
"""

from funcgrad.scipy.sparse import linalg

__all__ = ["linalg"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
