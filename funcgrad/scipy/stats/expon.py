"""``funcgrad.scipy.stats.expon``: the exponential distribution.

Layer: surface. Imports funcgrad.numpy.

>>> float(pdf(0.0))
1.0
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.scipy.stats._util import promote

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def __dir__():
    return list(__all__)


def logpdf(x, loc=0, scale=1):
    """``-(x - loc) / scale - log(scale)`` for ``x >= loc``.

    >>> float(logpdf(2.0))
    -2.0
    """
    x, loc, scale = promote("expon.logpdf", x, loc, scale)
    return fnp.where(x < loc, -np.inf, -((x - loc) / scale + fnp.log(scale)))


def pdf(x, loc=0, scale=1):
    """The density.

    >>> round(float(pdf(1.0)), 12)
    0.367879441171
    """
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """``1 - exp(-(x - loc) / scale)`` (``-expm1``, accurate near ``loc``).

    >>> round(float(cdf(1.0)), 12)
    0.632120558829
    """
    x, loc, scale = promote("expon.cdf", x, loc, scale)
    return fnp.where(x < loc, 0.0, -fnp.expm1((loc - x) / scale))


def logsf(x, loc=0, scale=1):
    """``-(x - loc) / scale``.

    >>> float(logsf(3.0))
    -3.0
    """
    x, loc, scale = promote("expon.logsf", x, loc, scale)
    return fnp.where(x < loc, 0.0, (loc - x) / scale)


def sf(x, loc=0, scale=1):
    """The survival function.

    >>> round(float(sf(1.0)), 12)
    0.367879441171
    """
    return fnp.exp(logsf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """``log(-expm1(-(x - loc) / scale))``: the log of ``cdf``, accurate near ``loc`` (where
    ``log1p(-sf)`` loses the digits ``1 - exp(-y)`` cancels: 2e-6 relative in float32 at y = 0.007).

    >>> round(float(logcdf(1.0)), 12)
    -0.458675145387
    """
    return fnp.log(cdf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """The quantile function ``loc - scale log(1 - q)``.

    >>> round(float(ppf(0.5)), 12)
    0.69314718056
    """
    q, loc, scale = promote("expon.ppf", q, loc, scale)
    return fnp.where(fnp.isnan(q) | (q < 0) | (q > 1), np.nan, loc - scale * fnp.log1p(-q))
