"""``funcgrad.scipy.stats.gumbel_l``: the left-skewed Gumbel distribution.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> round(float(sf(0.0)), 12)   # exp(-1)
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


def logpdf(x, loc=0, scale=1):
    """``z - exp(z) - log(scale)``.

    >>> float(logpdf(0.0))
    -1.0
    """
    x, loc, scale = promote_args_inexact("gumbel_l.logpdf", x, loc, scale)
    ok = lax.gt(scale, lax_const(scale, 0))
    z = lax.div(lax.sub(x, loc), scale)
    neg_log_scale = special.xlogy(-1, scale)
    t2 = lax.sub(z, lax.exp(z))
    return fnp.where(ok, lax.add(neg_log_scale, t2), np.nan)


def pdf(x, loc=0, scale=1):
    """The density.

    >>> round(float(pdf(0.0)), 12)
    0.367879441171
    """
    return lax.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """``log(1 - exp(-exp(z)))``.

    >>> round(float(logcdf(0.0)), 12)
    -0.458675145387
    """
    x, loc, scale = promote_args_inexact("gumbel_l.logcdf", x, loc, scale)
    ok = lax.gt(scale, lax_const(scale, 0))
    z = lax.div(lax.sub(x, loc), scale)
    neg_exp_z = lax.neg(lax.exp(z))
    return fnp.where(ok, lax.log(-lax.expm1(neg_exp_z)), np.nan)


def cdf(x, loc=0, scale=1):
    """``1 - exp(-exp(z))``.

    >>> round(float(cdf(0.0)), 12)
    0.632120558829
    """
    return lax.exp(logcdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """``-exp(z)``.

    >>> float(logsf(0.0))
    -1.0
    """
    x, loc, scale = promote_args_inexact("gumbel_l.logsf", x, loc, scale)
    ok = lax.gt(scale, lax_const(scale, 0))
    z = lax.div(lax.sub(x, loc), scale)
    return fnp.where(ok, lax.neg(lax.exp(z)), np.nan)


def sf(x, loc=0, scale=1):
    """``exp(-exp(z))``.

    >>> round(float(sf(1.0)), 12)
    0.065988035845
    """
    return fnp.exp(logsf(x, loc, scale))


def ppf(p, loc=0, scale=1):
    """``loc + scale log(-log(1 - p))``.

    >>> round(float(ppf(0.632120558829)), 9)
    0.0
    """
    p, loc, scale = promote_args_inexact("gumbel_l.ppf", p, loc, scale)
    ok = lax.bitwise_and(lax.gt(p, lax_const(p, 0)), lax.lt(p, lax_const(p, 1)))
    t1 = special.xlog1py(-1, lax.neg(p))
    t = lax.mul(scale, lax.log(t1))
    return fnp.where(ok, lax.add(loc, t), np.nan)
