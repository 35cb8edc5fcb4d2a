"""``funcgrad.scipy.stats.pareto``: the Pareto distribution with shape ``b``.

Layer: surface. Imports funcgrad.numpy.

>>> float(cdf(2.0, 1.0))
0.5
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.scipy.stats._util import promote

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def __dir__():
    return list(__all__)


def _scaled(name, x, b, loc, scale):
    x, b, loc, scale = promote(name, x, b, loc, scale)
    below = x < loc + scale
    return fnp.where(below, 1.0, (x - loc) / scale), below, b, scale


def logpdf(x, b, loc=0, scale=1):
    """``log(b / scale) - (b + 1) log y`` for ``y = (x - loc) / scale >= 1``.

    >>> round(float(logpdf(2.0, 1.0)), 12)
    -1.38629436112
    """
    y, below, b, scale = _scaled("pareto.logpdf", x, b, loc, scale)
    return fnp.where(below, -np.inf, -(fnp.log(scale / b) + (b + 1.0) * fnp.log(y)))


def pdf(x, b, loc=0, scale=1):
    """The density.

    >>> float(pdf(2.0, 1.0))
    0.25
    """
    return fnp.exp(logpdf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
    """``1 - y**-b``.

    >>> float(cdf(4.0, 2.0))
    0.9375
    """
    y, below, b, _ = _scaled("pareto.cdf", x, b, loc, scale)
    return fnp.where(below, 0.0, 1.0 - y ** (-b))


def logcdf(x, b, loc=0, scale=1):
    """``log1p(-y**-b)``.

    >>> round(float(logcdf(2.0, 1.0)), 12)
    -0.69314718056
    """
    y, below, b, _ = _scaled("pareto.logcdf", x, b, loc, scale)
    return fnp.where(below, -np.inf, fnp.log1p(-(y ** (-b))))


def logsf(x, b, loc=0, scale=1):
    """``-b log y``.

    >>> round(float(logsf(2.0, 1.0)), 12)
    -0.69314718056
    """
    y, below, b, _ = _scaled("pareto.logsf", x, b, loc, scale)
    return fnp.where(below, 0.0, -b * fnp.log(y))


def sf(x, b, loc=0, scale=1):
    """The survival function ``y**-b``.

    >>> float(sf(4.0, 2.0))
    0.0625
    """
    return fnp.exp(logsf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
    """``loc + scale (1 - q) ** (-1 / b)``.

    >>> float(ppf(0.5, 1.0))
    2.0
    """
    q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
    return fnp.where(fnp.isnan(q) | (q < 0) | (q > 1), np.nan, loc + scale * (1.0 - q) ** (-1.0 / b))
