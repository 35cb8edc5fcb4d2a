"""``funcgrad.scipy.stats.expon``: the exponential distribution.

Layer: surface. Imports funcgrad.numpy.

>>> float(pdf(0.0))
1.0
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def __dir__():
    return list(__all__)


def logpdf(x, loc=0, scale=1):
    """``-(x - loc) / scale - log(scale)`` for ``x >= loc``.

    >>> float(logpdf(2.0))
    -2.0
    """
    x, loc, scale = promote_args_inexact("expon.logpdf", x, loc, scale)
    log_scale = lax.log(scale)
    linear_term = lax.div(lax.sub(x, loc), scale)
    log_probs = lax.neg(lax.add(linear_term, log_scale))
    return fnp.where(lax.lt(x, loc), -np.inf, log_probs)


def pdf(x, loc=0, scale=1):
    """The density.

    >>> round(float(pdf(1.0)), 12)
    0.367879441171
    """
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """``1 - exp(-(x - loc) / scale)`` (``-expm1``, accurate near ``loc``).

    >>> round(float(cdf(1.0)), 12)
    0.632120558829
    """
    x, loc, scale = promote_args_inexact("expon.cdf", x, loc, scale)
    neg_scaled_x = lax.div(lax.sub(loc, x), scale)
    return fnp.where(lax.lt(x, loc), fnp.zeros_like(neg_scaled_x), lax.neg(lax.expm1(neg_scaled_x)))


def logsf(x, loc=0, scale=1):
    """``-(x - loc) / scale``.

    >>> float(logsf(3.0))
    -3.0
    """
    x, loc, scale = promote_args_inexact("expon.sf", x, loc, scale)
    neg_scaled_x = lax.div(lax.sub(loc, x), scale)
    return fnp.where(lax.lt(x, loc), fnp.zeros_like(neg_scaled_x), neg_scaled_x)


def sf(x, loc=0, scale=1):
    """The survival function.

    >>> round(float(sf(1.0)), 12)
    0.367879441171
    """
    return lax.exp(logsf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """``log(-expm1(-(x - loc) / scale))``: the log of ``cdf``, accurate near ``loc`` (where
    ``log1p(-sf)`` loses the digits ``1 - exp(-y)`` cancels: 2e-6 relative in float32 at y = 0.007).

    >>> round(float(logcdf(1.0)), 12)
    -0.458675145387
    """
    # (log(cdf), where JAX writes log1p(-sf): float32 digits kept just above loc, as JAX's
    # scipy_stats_test checks; the same dtype and weak type)
    return lax.log(cdf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """The quantile function ``loc - scale log(1 - q)``.

    >>> round(float(ppf(0.5)), 12)
    0.69314718056
    """
    q, loc, scale = promote_args_inexact("expon.ppf", q, loc, scale)
    bad = fnp.isnan(q) | (q < 0) | (q > 1)
    return fnp.where(bad, np.nan, lax.sub(loc, lax.mul(scale, lax.log1p(lax.neg(q)))))
