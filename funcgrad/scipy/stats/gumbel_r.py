"""``funcgrad.scipy.stats.gumbel_r``: the right-skewed Gumbel (extreme value) distribution.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> round(float(cdf(0.0)), 12)   # exp(-1)
0.367879441171
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.numpy._core import lax_const
from funcgrad.scipy import special
from funcgrad.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def __dir__():
    return list(__all__)


def log1mexp(x):
    """``log(1 - exp(-x))`` for ``x > 0``, accurate for small and large ``x`` (Maechler's switch)."""
    small = x < float(np.log(2.0))
    return fnp.where(small, fnp.log(-fnp.expm1(-fnp.where(small, x, 1.0))), fnp.log1p(-fnp.exp(-x)))


def logpdf(x, loc=0, scale=1):
    """``-z - exp(-z) - log(scale)``.

    >>> float(logpdf(0.0))
    -1.0
    """
    x, loc, scale = promote_args_inexact("gumbel_r.logpdf", x, loc, scale)
    ok = lax.gt(scale, lax_const(scale, 0))
    z = lax.div(lax.sub(x, loc), scale)
    neg_log_scale = special.xlogy(-1, scale)
    t2 = lax.neg(lax.add(z, lax.exp(lax.neg(z))))
    return fnp.where(ok, lax.add(neg_log_scale, t2), np.nan)


def pdf(x, loc=0, scale=1):
    """The density.

    >>> round(float(pdf(0.0)), 12)
    0.367879441171
    """
    return lax.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """``-exp(-z)``.

    >>> float(logcdf(0.0))
    -1.0
    """
    x, loc, scale = promote_args_inexact("gumbel_r.logcdf", x, loc, scale)
    ok = lax.gt(scale, lax_const(scale, 0))
    z = lax.div(lax.sub(x, loc), scale)
    return fnp.where(ok, lax.neg(lax.exp(lax.neg(z))), np.nan)


def cdf(x, loc=0, scale=1):
    """``exp(-exp(-z))``.

    >>> round(float(cdf(1.0)), 12)
    0.692200627555
    """
    return lax.exp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """``1 - exp(-exp(-z))``.

    >>> round(float(sf(0.0)), 12)
    0.632120558829
    """
    x, loc, scale = promote_args_inexact("gumbel_r.sf", x, loc, scale)
    ok = lax.gt(scale, lax_const(scale, 0))
    neg_z = lax.div(lax.sub(loc, x), scale)
    t1 = lax.exp(lax.neg(lax.exp(neg_z)))
    return fnp.where(ok, lax.sub(lax_const(x, 1), t1), np.nan)


def logsf(x, loc=0, scale=1):
    """``log(1 - exp(-exp(-z)))``, accurate in both tails.

    >>> round(float(logsf(0.0)), 12)
    -0.458675145387
    """
    x, loc, scale = promote_args_inexact("gumbel_r.logsf", x, loc, scale)
    ok = lax.gt(scale, lax_const(scale, 0))
    neg_z = lax.div(lax.sub(loc, x), scale)
    return fnp.where(ok, log1mexp(lax.exp(neg_z)), np.nan)


def ppf(p, loc=0, scale=1):
    """``loc - scale log(-log p)``.

    >>> round(float(ppf(0.367879441171)), 9) + 0.0  # the quantile is -1.2e-12; + 0.0 folds -0.0
    0.0
    """
    p, loc, scale = promote_args_inexact("gumbel_r.ppf", p, loc, scale)
    ok = lax.bitwise_and(lax.gt(p, lax_const(p, 0)), lax.lt(p, lax_const(p, 1)))
    t1 = special.xlogy(-1, p)
    t = lax.mul(scale, lax.log(t1))
    return fnp.where(ok, lax.sub(loc, t), np.nan)
