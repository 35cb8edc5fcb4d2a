"""``funcgrad.scipy.stats.gumbel_r``: the right-skewed Gumbel (extreme value) distribution.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> round(float(cdf(0.0)), 12)   # exp(-1)
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


def log1mexp(x):
    """``log(1 - exp(-x))`` for ``x > 0``, accurate for small and large ``x`` (Maechler's switch)."""
    small = x < float(np.log(2.0))
    return fnp.where(small, fnp.log(-fnp.expm1(-fnp.where(small, x, 1.0))), fnp.log1p(-fnp.exp(-x)))


def logpdf(x, loc=0, scale=1):
    """``-z - exp(-z) - log(scale)``.

    >>> float(logpdf(0.0))
    -1.0
    """
    z, ok, scale = standardize("gumbel_r.logpdf", x, loc, scale)
    return fnp.where(ok, -special.xlogy(1.0, scale) - (z + fnp.exp(-z)), np.nan)


def pdf(x, loc=0, scale=1):
    """The density.

    >>> round(float(pdf(0.0)), 12)
    0.367879441171
    """
    return fnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """``-exp(-z)``.

    >>> float(logcdf(0.0))
    -1.0
    """
    z, ok, _ = standardize("gumbel_r.logcdf", x, loc, scale)
    return fnp.where(ok, -fnp.exp(-z), np.nan)


def cdf(x, loc=0, scale=1):
    """``exp(-exp(-z))``.

    >>> round(float(cdf(1.0)), 12)
    0.692200627555
    """
    return fnp.exp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """``1 - exp(-exp(-z))``.

    >>> round(float(sf(0.0)), 12)
    0.632120558829
    """
    z, ok, _ = standardize("gumbel_r.sf", x, loc, scale)
    return fnp.where(ok, -fnp.expm1(-fnp.exp(-z)), np.nan)


def logsf(x, loc=0, scale=1):
    """``log(1 - exp(-exp(-z)))``, accurate in both tails.

    >>> round(float(logsf(0.0)), 12)
    -0.458675145387
    """
    z, ok, _ = standardize("gumbel_r.logsf", x, loc, scale)
    return fnp.where(ok, log1mexp(fnp.exp(-z)), np.nan)


def ppf(p, loc=0, scale=1):
    """``loc - scale log(-log p)``.

    >>> round(float(ppf(0.367879441171)), 9) + 0.0  # the quantile is -1.2e-12; + 0.0 folds -0.0
    0.0
    """
    p, loc, scale = promote("gumbel_r.ppf", p, loc, scale)
    ok = (p > 0) & (p < 1)
    return fnp.where(ok, loc - scale * fnp.log(-fnp.log(fnp.where(ok, p, 0.5))), np.nan)
