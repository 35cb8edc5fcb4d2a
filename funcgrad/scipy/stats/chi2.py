"""``funcgrad.scipy.stats.chi2``: the chi-squared distribution with ``df`` degrees of freedom.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> round(float(cdf(2.0, 2.0)), 12)
0.632120558829
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.scipy import special
from funcgrad.scipy.stats._util import promote

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

_LOG2 = float(np.log(2.0))


def __dir__():
    return list(__all__)


def logpdf(x, df, loc=0, scale=1):
    """``(df/2 - 1) log y - y/2 - lgamma(df/2) - (df/2) log 2 - log(scale)``.

    >>> round(float(logpdf(2.0, 2.0)), 12)
    -1.69314718056
    """
    x, df, loc, scale = promote("chi2.logpdf", x, df, loc, scale)
    y = (x - loc) / scale
    half = df / 2.0
    safe_y = fnp.where(x < loc, 1.0, y)
    log_probs = (
        (half - 1.0) * fnp.log(safe_y) - safe_y / 2.0 - (lax.lgamma(half) + _LOG2 * half) - fnp.log(scale)
    )
    return fnp.where(x < loc, -np.inf, log_probs)


def pdf(x, df, loc=0, scale=1):
    """The density.

    >>> round(float(pdf(2.0, 2.0)), 12)
    0.183939720586
    """
    return fnp.exp(logpdf(x, df, loc, scale))


def cdf(x, df, loc=0, scale=1):
    """``gammainc(df / 2, y / 2)``.

    >>> round(float(cdf(3.84145882069, 1.0)), 9)
    0.95
    """
    x, df, loc, scale = promote("chi2.cdf", x, df, loc, scale)
    return special.gammainc(df / 2.0, fnp.clip((x - loc) / (2.0 * scale), 0.0, np.inf))


def logcdf(x, df, loc=0, scale=1):
    """``log cdf``.

    >>> round(float(logcdf(2.0, 2.0)), 12)
    -0.458675145387
    """
    return fnp.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    """``gammaincc(df / 2, y / 2)``.

    >>> round(float(sf(2.0, 2.0)), 12)
    0.367879441171
    """
    x, df, loc, scale = promote("chi2.sf", x, df, loc, scale)
    return special.gammaincc(df / 2.0, fnp.clip((x - loc) / (2.0 * scale), 0.0, np.inf))


def logsf(x, df, loc=0, scale=1):
    """``log sf``.

    >>> round(float(logsf(2.0, 2.0)), 12)
    -1.0
    """
    return fnp.log(sf(x, df, loc, scale))
