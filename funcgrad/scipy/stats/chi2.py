"""``funcgrad.scipy.stats.chi2``: the chi-squared distribution with ``df`` degrees of freedom.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> round(float(cdf(2.0, 2.0)), 12)
0.632120558829
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.numpy._core import lax_const
from funcgrad.scipy import special
from funcgrad.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

_LOG2 = float(np.log(2.0))


def __dir__():
    return list(__all__)


def logpdf(x, df, loc=0, scale=1):
    """``(df/2 - 1) log y - y/2 - lgamma(df/2) - (df/2) log 2 - log(scale)``.

    >>> round(float(logpdf(2.0, 2.0)), 12)
    -1.69314718056
    """
    x, df, loc, scale = promote_args_inexact("chi2.logpdf", x, df, loc, scale)
    one = lax_const(x, 1)
    two = lax_const(x, 2)
    y = lax.div(lax.sub(x, loc), scale)
    df_on_two = lax.div(df, two)
    kernel = lax.sub(lax.mul(lax.sub(df_on_two, one), lax.log(y)), lax.div(y, two))
    nrml_cnst = lax.neg(lax.add(lax.lgamma(df_on_two), lax.div(lax.mul(lax.log(two), df), two)))
    log_probs = lax.add(lax.sub(nrml_cnst, lax.log(scale)), kernel)
    return fnp.where(lax.lt(x, loc), -np.inf, log_probs)


def pdf(x, df, loc=0, scale=1):
    """The density.

    >>> round(float(pdf(2.0, 2.0)), 12)
    0.183939720586
    """
    return lax.exp(logpdf(x, df, loc, scale))


def _gamma_arguments(name, x, df, loc, scale):
    """``(df / 2, y / 2)`` with ``y = (x - loc) / scale`` clamped at 0: the regularized incomplete
    gamma functions' arguments of the cdf and sf."""
    x, df, loc, scale = promote_args_inexact(name, x, df, loc, scale)
    two = lax_const(scale, 2)
    y = lax.clamp(lax_const(x, 0), lax.div(lax.sub(x, loc), lax.mul(scale, two)), lax_const(x, np.inf))
    return lax.div(df, two), y


def cdf(x, df, loc=0, scale=1):
    """``gammainc(df / 2, y / 2)``.

    >>> round(float(cdf(3.84145882069, 1.0)), 9)
    0.95
    """
    return special.gammainc(*_gamma_arguments("chi2.cdf", x, df, loc, scale))


def logcdf(x, df, loc=0, scale=1):
    """``log cdf``.

    >>> round(float(logcdf(2.0, 2.0)), 12)
    -0.458675145387
    """
    return lax.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    """``gammaincc(df / 2, y / 2)``.

    >>> round(float(sf(2.0, 2.0)), 12)
    0.367879441171
    """
    return special.gammaincc(*_gamma_arguments("chi2.sf", x, df, loc, scale))


def logsf(x, df, loc=0, scale=1):
    """``log sf``.

    >>> round(float(logsf(2.0, 2.0)), 12)
    -1.0
    """
    return lax.log(sf(x, df, loc, scale))
