"""``funcgrad.scipy.stats.multivariate_normal``: the multivariate normal distribution.

Layer: surface. Imports funcgrad.numpy (and its ``linalg``).

``cov`` may be a scalar (isotropic), or a ``(..., n, n)`` positive-definite matrix; ``x`` and
``mean`` broadcast over leading batch dimensions, the last one being the event dimension.

>>> import numpy as np
>>> round(float(logpdf(np.zeros(2), np.zeros(2), np.eye(2))), 12)   # -log(2 pi)
-1.837877066409
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.scipy.stats._util import promote_dtypes_inexact

__all__ = ["logpdf", "pdf"]

_LOG_2PI = float(np.log(2 * np.pi))


def __dir__():
    return list(__all__)


def logpdf(x, mean, cov, allow_singular=None):
    """``-(x - mean)^T cov^-1 (x - mean) / 2 - log det(2 pi cov) / 2``.

    ``allow_singular`` (SciPy's pseudo-inverse of singular covariances) is refused if set, as in
    JAX (NotImplementedError).

    >>> round(float(logpdf(np.ones(2), np.zeros(2), 2.0 * np.eye(2))), 12)
    -3.031024246969
    """
    if allow_singular is not None:
        # (JAX's NotImplementedError and words)
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = promote_dtypes_inexact("multivariate_normal.logpdf", x, mean, cov)
    if not mean.shape:
        return -0.5 * fnp.square(x - mean) / cov - 0.5 * (_LOG_2PI + fnp.log(cov))
    n = mean.shape[-1]
    y = x - mean
    if not cov.shape:
        return -0.5 * fnp.sum(y * y, axis=-1) / cov - n / 2 * (_LOG_2PI + fnp.log(cov))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError(
            f"multivariate_normal.logpdf: cov of shape {cov.shape} does not match mean of shape "
            f"{mean.shape}; expected a scalar or (..., {n}, {n})"
        )
    batch = np.broadcast_shapes(y.shape[:-1], cov.shape[:-2])
    y = fnp.broadcast_to(y, (*batch, n))
    cov = fnp.broadcast_to(cov, (*batch, n, n))
    solved = fnp.linalg.solve(cov, y[..., None])[..., 0]
    _, logdet = fnp.linalg.slogdet(cov)
    return -0.5 * fnp.sum(y * solved, axis=-1) - n / 2 * _LOG_2PI - 0.5 * logdet


def pdf(x, mean, cov):
    """The density.

    >>> round(float(pdf(np.zeros(2), np.zeros(2), np.eye(2))), 12)
    0.159154943092
    """
    return fnp.exp(logpdf(x, mean, cov))
