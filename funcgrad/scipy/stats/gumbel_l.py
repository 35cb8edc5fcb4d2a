"""``funcgrad.scipy.stats.gumbel_l``: the left-skewed Gumbel distribution.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> round(float(sf(0.0)), 12)   # exp(-1)
0.367879441171
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.scipy import special
from funcgrad.scipy.stats._util import promote, standardize

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def __dir__():
    return list(__all__)


def logpdf(x, loc=0, scale=1):
    """``z - exp(z) - log(scale)``.

    >>> float(logpdf(0.0))
    -1.0
    """
    z, ok, scale = standardize("gumbel_l.logpdf", x, loc, scale)
    return fnp.where(ok, -special.xlogy(1.0, scale) + z - fnp.exp(z), np.nan)


def pdf(x, loc=0, scale=1):
    """The density.

    >>> round(float(pdf(0.0)), 12)
    0.367879441171
    """
    return fnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """``log(1 - exp(-exp(z)))``.

    >>> round(float(logcdf(0.0)), 12)
    -0.458675145387
    """
    z, ok, _ = standardize("gumbel_l.logcdf", x, loc, scale)
    return fnp.where(ok, fnp.log(-fnp.expm1(-fnp.exp(z))), np.nan)


def cdf(x, loc=0, scale=1):
    """``1 - exp(-exp(z))``.

    >>> round(float(cdf(0.0)), 12)
    0.632120558829
    """
    return fnp.exp(logcdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """``-exp(z)``.

    >>> float(logsf(0.0))
    -1.0
    """
    z, ok, _ = standardize("gumbel_l.logsf", x, loc, scale)
    return fnp.where(ok, -fnp.exp(z), np.nan)


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
    p, loc, scale = promote("gumbel_l.ppf", p, loc, scale)
    ok = (p > 0) & (p < 1)
    return fnp.where(ok, loc + scale * fnp.log(-fnp.log1p(-fnp.where(ok, p, 0.5))), np.nan)
