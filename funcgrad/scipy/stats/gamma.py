"""``funcgrad.scipy.stats.gamma``: the gamma distribution with shape ``a``.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> round(float(pdf(1.0, 1.0)), 12)
0.367879441171
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


def logpdf(x, a, loc=0, scale=1):
    """``(a - 1) log y - y - gammaln(a) - log(scale)``, ``y = (x - loc) / scale``.

    >>> round(float(logpdf(2.0, 3.0)), 12)
    -1.30685281944
    """
    x, a, loc, scale = promote_args_inexact("gamma.logpdf", x, a, loc, scale)
    ok = lax.ge(x, loc)
    one = lax_const(x, 1)
    y = fnp.where(ok, lax.div(lax.sub(x, loc), scale), one)
    log_linear_term = lax.sub(special.xlogy(lax.sub(a, one), y), y)
    shape_terms = lax.add(special.gammaln(a), lax.log(scale))
    log_probs = lax.sub(log_linear_term, shape_terms)
    return fnp.where(ok, log_probs, -np.inf)


def pdf(x, a, loc=0, scale=1):
    """The density.

    >>> round(float(pdf(2.0, 3.0)), 12)
    0.270670566473
    """
    return lax.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    """``gammainc(a, y)``, differentiable in ``x`` and ``a``.

    >>> round(float(cdf(2.0, 1.0)), 12)
    0.864664716763
    """
    x, a, loc, scale = promote_args_inexact("gamma.cdf", x, a, loc, scale)
    y = lax.clamp(lax_const(x, 0), lax.div(lax.sub(x, loc), scale), lax_const(x, np.inf))
    return special.gammainc(a, y)


def logcdf(x, a, loc=0, scale=1):
    """``log cdf``.

    >>> round(float(logcdf(2.0, 1.0)), 12)
    -0.145413457869
    """
    return lax.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    """``gammaincc(a, y)`` (1 below ``loc``).

    >>> round(float(sf(2.0, 1.0)), 12)
    0.135335283237
    """
    x, a, loc, scale = promote_args_inexact("gamma.sf", x, a, loc, scale)
    y = lax.div(lax.sub(x, loc), scale)
    # (JAX's: gammaincc of y as it is, so the derivative below loc is NaN, as jax's)
    return fnp.where(lax.lt(y, lax_const(y, 0)), 1, special.gammaincc(a, y))


def logsf(x, a, loc=0, scale=1):
    """``log sf``.

    >>> round(float(logsf(2.0, 1.0)), 12)
    -2.0
    """
    return lax.log(sf(x, a, loc, scale))
