"""``funcgrad.scipy.stats.pareto``: the Pareto distribution with shape ``b``.

Layer: surface. Imports funcgrad.numpy.

>>> float(cdf(2.0, 1.0))
0.5
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.numpy._core import lax_const
from funcgrad.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def __dir__():
    return list(__all__)


def logpdf(x, b, loc=0, scale=1):
    """``log(b / scale) - (b + 1) log y`` for ``y = (x - loc) / scale >= 1``.

    >>> round(float(logpdf(2.0, 1.0)), 12)
    -1.38629436112
    """
    x, b, loc, scale = promote_args_inexact("pareto.logpdf", x, b, loc, scale)
    one = lax_const(x, 1)
    below = lax.lt(x, lax.add(loc, scale))
    # (JAX's: the scaled x as it is, so the derivative below the support is NaN, as jax's)
    scaled_x = lax.div(lax.sub(x, loc), scale)
    normalize_term = lax.log(lax.div(scale, b))
    log_probs = lax.neg(lax.add(normalize_term, lax.mul(lax.add(b, one), lax.log(scaled_x))))
    return fnp.where(below, -np.inf, log_probs)


def pdf(x, b, loc=0, scale=1):
    """The density.

    >>> float(pdf(2.0, 1.0))
    0.25
    """
    return lax.exp(logpdf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
    """``1 - y**-b``.

    >>> float(cdf(4.0, 2.0))
    0.9375
    """
    x, b, loc, scale = promote_args_inexact("pareto.cdf", x, b, loc, scale)
    one = lax_const(x, 1)
    zero = lax_const(x, 0)
    below = lax.lt(x, lax.add(loc, scale))
    scaled_x = lax.div(lax.sub(x, loc), scale)
    return fnp.where(below, zero, lax.sub(one, lax.pow(scaled_x, lax.neg(b))))


def logcdf(x, b, loc=0, scale=1):
    """``log1p(-y**-b)``.

    >>> round(float(logcdf(2.0, 1.0)), 12)
    -0.69314718056
    """
    x, b, loc, scale = promote_args_inexact("pareto.logcdf", x, b, loc, scale)
    below = lax.lt(x, lax.add(loc, scale))
    scaled_x = lax.div(lax.sub(x, loc), scale)
    logcdf_val = lax.log1p(lax.neg(lax.pow(scaled_x, lax.neg(b))))
    return fnp.where(below, -np.inf, logcdf_val)


def logsf(x, b, loc=0, scale=1):
    """``-b log y``.

    >>> round(float(logsf(2.0, 1.0)), 12)
    -0.69314718056
    """
    x, b, loc, scale = promote_args_inexact("pareto.logsf", x, b, loc, scale)
    zero = lax_const(x, 0)
    below = lax.lt(x, lax.add(loc, scale))
    scaled_x = lax.div(lax.sub(x, loc), scale)
    logsf_val = lax.neg(lax.mul(b, lax.log(scaled_x)))
    return fnp.where(below, zero, logsf_val)


def sf(x, b, loc=0, scale=1):
    """The survival function ``y**-b``.

    >>> float(sf(4.0, 2.0))
    0.0625
    """
    return lax.exp(logsf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
    """``loc + scale (1 - q) ** (-1 / b)``.

    >>> float(ppf(0.5, 1.0))
    2.0
    """
    q, b, loc, scale = promote_args_inexact("pareto.ppf", q, b, loc, scale)
    one = lax_const(q, 1)
    ppf_val = lax.add(loc, lax.mul(scale, lax.pow(lax.sub(one, q), lax.neg(lax.div(one, b)))))
    return fnp.where(fnp.isnan(q) | (q < 0) | (q > 1), np.nan, ppf_val)
