"""``funcgrad.scipy.stats.beta``: the beta distribution on ``[loc, loc + scale]``.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> round(float(cdf(0.5, 2.0, 2.0)), 12)
0.5
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.numpy._core import lax_const
from funcgrad.scipy import special
from funcgrad.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def __dir__():
    return list(__all__)


def logpdf(x, a, b, loc=0, scale=1):
    """``(a-1) log y + (b-1) log(1-y) - betaln(a, b) - log(scale)``, ``y = (x - loc) / scale``;
    ``-inf`` outside the support, NaN for non-positive ``a``, ``b`` or ``scale``.

    >>> round(float(logpdf(0.5, 2.0, 2.0)), 12)
    0.405465108108
    """
    x, a, b, loc, scale = promote_args_inexact("beta.logpdf", x, a, b, loc, scale)
    one = lax_const(x, 1)
    zero = lax_const(a, 0)
    shape_term = lax.neg(special.betaln(a, b))
    y = lax.div(lax.sub(x, loc), scale)
    log_linear_term = lax.add(special.xlogy(lax.sub(a, one), y), special.xlog1py(lax.sub(b, one), lax.neg(y)))
    log_probs = lax.sub(lax.add(shape_term, log_linear_term), lax.log(scale))
    result = fnp.where(fnp.logical_or(lax.gt(x, lax.add(loc, scale)), lax.lt(x, loc)), -np.inf, log_probs)
    invalid = fnp.logical_or(fnp.logical_or(lax.le(a, zero), lax.le(b, zero)), lax.le(scale, zero))
    return fnp.where(invalid, np.nan, result)


def pdf(x, a, b, loc=0, scale=1):
    """The density.

    >>> float(pdf(0.5, 2.0, 2.0))
    1.5
    """
    return lax.exp(logpdf(x, a, b, loc, scale))


def cdf(x, a, b, loc=0, scale=1):
    """``betainc(a, b, y)`` (differentiable in ``x``, as JAX's).

    >>> round(float(cdf(0.4, 2.0, 3.0)), 12)
    0.5248
    """
    x, a, b, loc, scale = promote_args_inexact("beta.cdf", x, a, b, loc, scale)
    y = lax.clamp(lax_const(x, 0), lax.div(lax.sub(x, loc), scale), lax_const(x, 1))
    return special.betainc(a, b, y)


def logcdf(x, a, b, loc=0, scale=1):
    """``log cdf``.

    >>> round(float(logcdf(0.5, 2.0, 2.0)), 12)
    -0.69314718056
    """
    return lax.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    """``betainc(b, a, 1 - y)``.

    >>> round(float(sf(0.4, 2.0, 3.0)), 12)
    0.4752
    """
    x, a, b, loc, scale = promote_args_inexact("beta.sf", x, a, b, loc, scale)
    y = lax.clamp(lax_const(x, 0), lax.div(lax.sub(x, loc), scale), lax_const(x, 1))
    return special.betainc(b, a, 1 - y)


def logsf(x, a, b, loc=0, scale=1):
    """``log sf``.

    >>> round(float(logsf(0.5, 2.0, 2.0)), 12)
    -0.69314718056
    """
    return lax.log(sf(x, a, b, loc, scale))
