"""``funcgrad.scipy.cluster.vq``: ``vq``, the nearest code-book entry of each observation
(``jax.scipy.cluster.vq``'s one function).

Layer: surface. Imports funcgrad.numpy.

>>> import funcgrad.numpy as fnp
>>> code, dist = vq(fnp.array([[0.0, 0.1], [1.0, 0.9]]), fnp.array([[1.0, 1.0], [0.0, 0.0]]))
>>> code.tolist(), [round(d, 6) for d in dist.tolist()]
([1, 0], [0.1, 0.1])
"""

from __future__ import annotations

import funcgrad.numpy as fnp
from funcgrad.kernel import dtypes as _dt
from funcgrad.numpy._core import check_arraylike

__all__ = ["vq"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


def _inexact(x):
    x = fnp.asarray(x)
    return x.astype(_dt.inexact_of(x.dtype)) if x.dtype.kind in "biu" else x  # (JAX's table, its rules)


def vq(obs, code_book, check_finite: bool = True):
    """Assign each observation (a row of ``obs``, shape ``(M, N)``; or an entry of a 1-d ``obs``)
    to the nearest code (a row of ``code_book``, ``(K, N)``) in Euclidean distance. Returns
    ``(code, dist)``: the index of the nearest code (the first one on a tie) and the distance to
    it, both of shape ``(M,)``. ``check_finite`` is accepted for SciPy's signature and ignored,
    as in JAX. ``dist`` is differentiable in ``obs`` and ``code_book``.

    >>> import funcgrad.numpy as fnp
    >>> obs = fnp.array([[1.1, 2.1, 3.1], [5.9, 4.8, 6.2]])
    >>> book = fnp.array([[1.0, 2.0, 3.0], [2.0, 3.0, 4.0], [3.0, 4.0, 5.0], [4.0, 5.0, 6.0]])
    >>> code, dist = vq(obs, book)
    >>> code.tolist(), [round(d, 6) for d in dist.tolist()]
    ([0, 3], [0.173205, 1.920937])
    """
    check_arraylike("scipy.cluster.vq.vq", obs, code_book)
    del check_finite  # NaNs cannot be refused under a transformation; JAX ignores it too
    obs, code_book = _inexact(obs), _inexact(code_book)
    dtype = fnp.result_type(obs, code_book)
    obs, code_book = obs.astype(dtype), code_book.astype(dtype)
    if obs.ndim != code_book.ndim:
        raise ValueError(
            f"vq: obs and code_book must have the same rank, got shapes {obs.shape} and {code_book.shape}"
        )
    if obs.ndim == 1:
        obs, code_book = obs[:, None], code_book[:, None]
    if obs.ndim != 2:
        raise ValueError(f"vq: obs and code_book must be 1-d or 2-d, got {obs.ndim} dimensions")
    if obs.shape[1] != code_book.shape[1]:
        raise ValueError(
            f"vq: observations have {obs.shape[1]} features but codes have {code_book.shape[1]} "
            f"(shapes {obs.shape} and {code_book.shape})"
        )
    dist = fnp.linalg.norm(obs[:, None, :] - code_book[None, :, :], axis=-1)
    code = fnp.argmin(dist, axis=-1)
    return code, fnp.take_along_axis(dist, code[:, None], axis=1)[:, 0]
