"""``funcgrad.scipy.stats.gennorm``: the generalized normal distribution with shape ``beta``.

Layer: surface. Imports funcgrad.numpy and funcgrad.lax.

>>> round(float(pdf(0.0, 2.0)), 12)   # normal with variance 1/2
0.564189583548
"""

from __future__ import annotations

from funcgrad import lax
from funcgrad.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "logpdf", "pdf"]


def __dir__():
    return list(__all__)


def logpdf(x, beta):
    """``log(beta / 2) - lgamma(1 / beta) - |x|**beta``.

    >>> round(float(logpdf(1.0, 1.0)), 12)   # Laplace
    -1.69314718056
    """
    x, beta = promote_args_inexact("gennorm.logpdf", x, beta)
    return lax.log(0.5 * beta) - lax.lgamma(1 / beta) - lax.abs(x) ** beta


def pdf(x, beta):
    """The density.

    >>> round(float(pdf(1.0, 1.0)), 12)
    0.183939720586
    """
    return lax.exp(logpdf(x, beta))


def cdf(x, beta):
    """``(1 + sign(x) gammainc(1 / beta, |x|**beta)) / 2``.

    >>> round(float(cdf(1.0, 1.0)), 12)
    0.816060279414
    """
    x, beta = promote_args_inexact("gennorm.cdf", x, beta)
    return 0.5 * (1 + lax.sign(x) * lax.igamma(1 / beta, lax.abs(x) ** beta))
