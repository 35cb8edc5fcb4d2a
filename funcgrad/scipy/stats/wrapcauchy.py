"""``funcgrad.scipy.stats.wrapcauchy``: the wrapped Cauchy distribution on ``[0, 2 pi]``, shape
``0 < c < 1``.

Layer: surface. Imports funcgrad.numpy.

>>> round(float(pdf(0.0, 0.5)), 12)
0.477464829276
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.scipy.stats._util import promote

__all__ = ["logpdf", "pdf"]

_LOG_2PI = float(np.log(2 * np.pi))


def __dir__():
    return list(__all__)


def logpdf(x, c):
    """``log(1 - c**2) - log(2 pi) - log(1 + c**2 - 2 c cos x)`` on ``[0, 2 pi]``.

    >>> round(float(logpdf(np.pi, 0.5)), 12)
    -2.936489355077
    """
    x, c = promote("wrapcauchy.logpdf", x, c)
    ok = (c > 0) & (c < 1)
    inside = (x >= 0) & (x <= 2 * np.pi)
    value = fnp.log(1.0 - c * c) - _LOG_2PI - fnp.log(1.0 + c * c - 2.0 * c * fnp.cos(x))
    return fnp.where(ok, fnp.where(inside, value, -np.inf), np.nan)


def pdf(x, c):
    """The density.

    >>> round(float(pdf(np.pi, 0.5)), 12)
    0.053051647697
    """
    return fnp.exp(logpdf(x, c))
