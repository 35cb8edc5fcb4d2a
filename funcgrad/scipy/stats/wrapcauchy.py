"""``funcgrad.scipy.stats.wrapcauchy``: the wrapped Cauchy distribution on ``[0, 2 pi]``, shape
``0 < c < 1``.

Layer: surface. Imports funcgrad.numpy.

>>> round(float(pdf(0.0, 0.5)), 12)
0.477464829276
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.numpy._core import lax_const
from funcgrad.scipy.stats._util import promote_args_inexact

__all__ = ["logpdf", "pdf"]

_LOG_2PI = float(np.log(2 * np.pi))


def __dir__():
    return list(__all__)


def logpdf(x, c):
    """``log(1 - c**2) - log(2 pi) - log(1 + c**2 - 2 c cos x)`` on ``[0, 2 pi]``.

    >>> round(float(logpdf(np.pi, 0.5)), 12)
    -2.936489355077
    """
    x, c = promote_args_inexact("wrapcauchy.logpdf", x, c)
    ok = lax.gt(c, lax_const(c, 0)) & lax.lt(c, lax_const(c, 1))
    inside = lax.ge(x, lax_const(x, 0)) & lax.le(x, lax_const(x, np.pi * 2))
    value = fnp.log(1 - c * c) - fnp.log(2 * np.pi) - fnp.log(1 + c * c - 2 * c * fnp.cos(x))
    return fnp.where(ok, fnp.where(inside, value, -np.inf), np.nan)


def pdf(x, c):
    """The density.

    >>> round(float(pdf(np.pi, 0.5)), 12)
    0.053051647697
    """
    return lax.exp(logpdf(x, c))
