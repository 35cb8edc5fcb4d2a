"""``funcgrad.scipy.stats.logistic``: the logistic distribution.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> float(cdf(0.0))
0.5
"""

from __future__ import annotations

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.numpy._core import lax_const
from funcgrad.scipy import special
from funcgrad.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "isf", "logpdf", "pdf", "ppf", "sf"]


def __dir__():
    return list(__all__)


def logpdf(x, loc=0, scale=1):
    """``-2 logaddexp(z/2, -z/2) - log(scale)`` with ``z = (x - loc) / scale`` (no overflow).

    >>> round(float(logpdf(0.0)), 12)
    -1.38629436112
    """
    x, loc, scale = promote_args_inexact("logistic.logpdf", x, loc, scale)
    x = lax.div(lax.sub(x, loc), scale)
    two = lax_const(x, 2)
    half_x = lax.div(x, two)
    return lax.sub(lax.mul(lax.neg(two), fnp.logaddexp(half_x, lax.neg(half_x))), lax.log(scale))


def pdf(x, loc=0, scale=1):
    """The density.

    >>> float(pdf(0.0))
    0.25
    """
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """``expit((x - loc) / scale)``.

    >>> round(float(cdf(1.0)), 12)
    0.73105857863
    """
    x, loc, scale = promote_args_inexact("logistic.cdf", x, loc, scale)
    return special.expit(lax.div(lax.sub(x, loc), scale))


def sf(x, loc=0, scale=1):
    """``expit(-(x - loc) / scale)``.

    >>> round(float(sf(1.0)), 12)
    0.26894142137
    """
    x, loc, scale = promote_args_inexact("logistic.sf", x, loc, scale)
    return special.expit(lax.neg(lax.div(lax.sub(x, loc), scale)))


def ppf(x, loc=0, scale=1):
    """``loc + scale logit(q)``.

    >>> float(ppf(0.5))
    0.0
    """
    x, loc, scale = promote_args_inexact("logistic.ppf", x, loc, scale)
    return lax.add(lax.mul(special.logit(x), scale), loc)


def isf(x, loc=0, scale=1):
    """``loc - scale logit(q)``.

    >>> round(float(isf(0.26894142137)), 9)
    1.0
    """
    x, loc, scale = promote_args_inexact("logistic.isf", x, loc, scale)
    return lax.add(lax.mul(lax.neg(special.logit(x)), scale), loc)
