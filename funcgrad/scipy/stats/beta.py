"""``funcgrad.scipy.stats.beta``: the beta distribution on ``[loc, loc + scale]``.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> round(float(cdf(0.5, 2.0, 2.0)), 12)
0.5
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.scipy import special
from funcgrad.scipy.stats._util import promote

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def __dir__():
    return list(__all__)


def logpdf(x, a, b, loc=0, scale=1):
    """``(a-1) log y + (b-1) log(1-y) - betaln(a, b) - log(scale)``, ``y = (x - loc) / scale``;
    ``-inf`` outside the support, NaN for non-positive ``a``, ``b`` or ``scale``.

    >>> round(float(logpdf(0.5, 2.0, 2.0)), 12)
    0.405465108108
    """
    x, a, b, loc, scale = promote("beta.logpdf", x, a, b, loc, scale)
    y = (x - loc) / scale
    log_probs = (
        special.xlogy(a - 1.0, y) + special.xlog1py(b - 1.0, -y) - special.betaln(a, b) - fnp.log(scale)
    )
    out = fnp.where((x > loc + scale) | (x < loc), -np.inf, log_probs)
    return fnp.where((a <= 0) | (b <= 0) | (scale <= 0), np.nan, out)


def pdf(x, a, b, loc=0, scale=1):
    """The density.

    >>> float(pdf(0.5, 2.0, 2.0))
    1.5
    """
    return fnp.exp(logpdf(x, a, b, loc, scale))


def cdf(x, a, b, loc=0, scale=1):
    """``betainc(a, b, y)`` (differentiable in ``x``, as JAX's).

    >>> round(float(cdf(0.4, 2.0, 3.0)), 12)
    0.5248
    """
    x, a, b, loc, scale = promote("beta.cdf", x, a, b, loc, scale)
    return special.betainc(a, b, fnp.clip((x - loc) / scale, 0.0, 1.0))


def logcdf(x, a, b, loc=0, scale=1):
    """``log cdf``.

    >>> round(float(logcdf(0.5, 2.0, 2.0)), 12)
    -0.69314718056
    """
    return fnp.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    """``betainc(b, a, 1 - y)``.

    >>> round(float(sf(0.4, 2.0, 3.0)), 12)
    0.4752
    """
    x, a, b, loc, scale = promote("beta.sf", x, a, b, loc, scale)
    return special.betainc(b, a, 1.0 - fnp.clip((x - loc) / scale, 0.0, 1.0))


def logsf(x, a, b, loc=0, scale=1):
    """``log sf``.

    >>> round(float(logsf(0.5, 2.0, 2.0)), 12)
    -0.69314718056
    """
    return fnp.log(sf(x, a, b, loc, scale))
