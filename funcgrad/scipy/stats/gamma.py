"""``funcgrad.scipy.stats.gamma``: the gamma distribution with shape ``a``.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> round(float(pdf(1.0, 1.0)), 12)
0.367879441171
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.scipy import special
from funcgrad.scipy.stats._util import promote

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def __dir__():
    return list(__all__)


def logpdf(x, a, loc=0, scale=1):
    """``(a - 1) log y - y - gammaln(a) - log(scale)``, ``y = (x - loc) / scale``.

    >>> round(float(logpdf(2.0, 3.0)), 12)
    -1.30685281944
    """
    x, a, loc, scale = promote("gamma.logpdf", x, a, loc, scale)
    ok = x >= loc
    y = fnp.where(ok, (x - loc) / scale, 1.0)
    log_probs = special.xlogy(a - 1.0, y) - y - special.gammaln(a) - fnp.log(scale)
    return fnp.where(ok, log_probs, -np.inf)


def pdf(x, a, loc=0, scale=1):
    """The density.

    >>> round(float(pdf(2.0, 3.0)), 12)
    0.270670566473
    """
    return fnp.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    """``gammainc(a, y)``, differentiable in ``x`` and ``a``.

    >>> round(float(cdf(2.0, 1.0)), 12)
    0.864664716763
    """
    x, a, loc, scale = promote("gamma.cdf", x, a, loc, scale)
    return special.gammainc(a, fnp.clip((x - loc) / scale, 0.0, np.inf))


def logcdf(x, a, loc=0, scale=1):
    """``log cdf``.

    >>> round(float(logcdf(2.0, 1.0)), 12)
    -0.145413457869
    """
    return fnp.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    """``gammaincc(a, y)`` (1 below ``loc``).

    >>> round(float(sf(2.0, 1.0)), 12)
    0.135335283237
    """
    x, a, loc, scale = promote("gamma.sf", x, a, loc, scale)
    y = (x - loc) / scale
    return fnp.where(y < 0, 1.0, special.gammaincc(a, fnp.maximum(y, 0.0)))


def logsf(x, a, loc=0, scale=1):
    """``log sf``.

    >>> round(float(logsf(2.0, 1.0)), 12)
    -2.0
    """
    return fnp.log(sf(x, a, loc, scale))
