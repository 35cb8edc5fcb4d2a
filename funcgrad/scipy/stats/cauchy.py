"""``funcgrad.scipy.stats.cauchy``: the Cauchy distribution.

Layer: surface. Imports funcgrad.numpy.

>>> float(cdf(0.0))
0.5
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.scipy.stats._util import promote

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def __dir__():
    return list(__all__)


def logpdf(x, loc=0, scale=1):
    """``-log(pi scale (1 + z**2))``.

    >>> round(float(logpdf(0.0)), 12)
    -1.144729885849
    """
    x, loc, scale = promote("cauchy.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return -(fnp.log(np.pi * scale) + fnp.log1p(z * z))


def pdf(x, loc=0, scale=1):
    """The density.

    >>> round(float(pdf(1.0)), 12)
    0.159154943092
    """
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """``1/2 + arctan(z) / pi``.

    >>> float(cdf(1.0))
    0.75
    """
    x, loc, scale = promote("cauchy.cdf", x, loc, scale)
    return 0.5 + fnp.arctan((x - loc) / scale) / np.pi


def logcdf(x, loc=0, scale=1):
    """``log cdf``.

    >>> round(float(logcdf(1.0)), 12)
    -0.287682072452
    """
    return fnp.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """The survival function ``cdf(-x)`` (by symmetry).

    >>> float(sf(1.0))
    0.25
    """
    x, loc, scale = promote("cauchy.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
    """``log sf``.

    >>> round(float(logsf(1.0)), 12)
    -1.38629436112
    """
    x, loc, scale = promote("cauchy.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def ppf(q, loc=0, scale=1):
    """``loc + scale tan(pi (q - 1/2))``.

    >>> round(float(ppf(0.75)), 12)
    1.0
    """
    q, loc, scale = promote("cauchy.ppf", q, loc, scale)
    return fnp.tan(np.pi * q - np.pi / 2) * scale + loc


def isf(q, loc=0, scale=1):
    """``loc + scale tan(pi (1/2 - q))``.

    >>> round(float(isf(0.25)), 12)
    1.0
    """
    q, loc, scale = promote("cauchy.isf", q, loc, scale)
    return fnp.tan(np.pi / 2 - np.pi * q) * scale + loc
