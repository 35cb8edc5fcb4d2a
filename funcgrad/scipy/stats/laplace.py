"""``funcgrad.scipy.stats.laplace``: the Laplace (double exponential) distribution.

Layer: surface. Imports funcgrad.numpy.

>>> float(pdf(0.0))
0.5
"""

from __future__ import annotations

import funcgrad.numpy as fnp
from funcgrad.scipy.stats._util import promote

__all__ = ["cdf", "logpdf", "pdf"]


def __dir__():
    return list(__all__)


def logpdf(x, loc=0, scale=1):
    """``-|x - loc| / scale - log(2 scale)``.

    >>> round(float(logpdf(1.0)), 12)
    -1.69314718056
    """
    x, loc, scale = promote("laplace.logpdf", x, loc, scale)
    return -(fnp.abs(x - loc) / scale + fnp.log(2.0 * scale))


def pdf(x, loc=0, scale=1):
    """The density.

    >>> round(float(pdf(1.0)), 12)
    0.183939720586
    """
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The distribution function.

    >>> round(float(cdf(1.0)), 12)
    0.816060279414
    """
    x, loc, scale = promote("laplace.cdf", x, loc, scale)
    z = (x - loc) / scale
    return fnp.where(z <= 0, 0.5 * fnp.exp(fnp.minimum(z, 0.0)), 1.0 - 0.5 * fnp.exp(-fnp.maximum(z, 0.0)))
