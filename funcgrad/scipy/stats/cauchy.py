"""``funcgrad.scipy.stats.cauchy``: the Cauchy distribution.

Layer: surface. Imports funcgrad.numpy.

>>> float(cdf(0.0))
0.5
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.numpy._core import lax_const
from funcgrad.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def __dir__():
    return list(__all__)


def logpdf(x, loc=0, scale=1):
    """``-log(pi scale (1 + z**2))``.

    >>> round(float(logpdf(0.0)), 12)
    -1.144729885849
    """
    x, loc, scale = promote_args_inexact("cauchy.logpdf", x, loc, scale)
    pi = lax_const(x, np.pi)
    scaled_x = lax.div(lax.sub(x, loc), scale)
    normalize_term = lax.log(lax.mul(pi, scale))
    return lax.neg(lax.add(normalize_term, lax.log1p(lax.mul(scaled_x, scaled_x))))


def pdf(x, loc=0, scale=1):
    """The density.

    >>> round(float(pdf(1.0)), 12)
    0.159154943092
    """
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """``1/2 + arctan(z) / pi``.

    >>> float(cdf(1.0))
    0.75
    """
    x, loc, scale = promote_args_inexact("cauchy.cdf", x, loc, scale)
    pi = lax_const(x, np.pi)
    scaled_x = lax.div(lax.sub(x, loc), scale)
    return lax.add(lax_const(x, 0.5), lax.mul(lax.div(lax_const(x, 1.0), pi), fnp.arctan(scaled_x)))


def logcdf(x, loc=0, scale=1):
    """``log cdf``.

    >>> round(float(logcdf(1.0)), 12)
    -0.287682072452
    """
    return lax.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """The survival function ``cdf(-x)`` (by symmetry).

    >>> float(sf(1.0))
    0.25
    """
    x, loc, scale = promote_args_inexact("cauchy.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
    """``log sf``.

    >>> round(float(logsf(1.0)), 12)
    -1.38629436112
    """
    x, loc, scale = promote_args_inexact("cauchy.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def ppf(q, loc=0, scale=1):
    """``loc + scale tan(pi (q - 1/2))``.

    >>> round(float(ppf(0.75)), 12)
    1.0
    """
    q, loc, scale = promote_args_inexact("cauchy.ppf", q, loc, scale)
    pi = lax_const(q, np.pi)
    half_pi = lax_const(q, np.pi / 2)
    unscaled = lax.tan(lax.sub(lax.mul(pi, q), half_pi))
    return lax.add(lax.mul(unscaled, scale), loc)


def isf(q, loc=0, scale=1):
    """``loc + scale tan(pi (1/2 - q))``.

    >>> round(float(isf(0.25)), 12)
    1.0
    """
    q, loc, scale = promote_args_inexact("cauchy.isf", q, loc, scale)
    pi = lax_const(q, np.pi)
    half_pi = lax_const(q, np.pi / 2)
    unscaled = lax.tan(lax.sub(half_pi, lax.mul(pi, q)))
    return lax.add(lax.mul(unscaled, scale), loc)
