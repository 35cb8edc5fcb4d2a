"""``funcgrad.scipy.stats.laplace``: the Laplace (double exponential) distribution.

Layer: surface. Imports funcgrad.numpy.

>>> float(pdf(0.0))
0.5
"""

from __future__ import annotations

from funcgrad import lax
from funcgrad.numpy._core import lax_const
from funcgrad.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "logpdf", "pdf"]


def __dir__():
    return list(__all__)


def logpdf(x, loc=0, scale=1):
    """``-|x - loc| / scale - log(2 scale)``.

    >>> round(float(logpdf(1.0)), 12)
    -1.69314718056
    """
    x, loc, scale = promote_args_inexact("laplace.logpdf", x, loc, scale)
    two = lax_const(x, 2)
    linear_term = lax.div(lax.abs(lax.sub(x, loc)), scale)
    return lax.neg(lax.add(linear_term, lax.log(lax.mul(two, scale))))


def pdf(x, loc=0, scale=1):
    """The density.

    >>> round(float(pdf(1.0)), 12)
    0.183939720586
    """
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The distribution function.

    >>> round(float(cdf(1.0)), 12)
    0.816060279414
    """
    x, loc, scale = promote_args_inexact("laplace.cdf", x, loc, scale)
    half = lax_const(x, 0.5)
    one = lax_const(x, 1)
    zero = lax_const(x, 0)
    diff = lax.div(lax.sub(x, loc), scale)
    # (JAX's select of the two branches as they are: the derivative at 0 is the lower branch's 1/2
    # (exponents clipped at 0 split it, 1/4), and NaN at +-inf where an unselected exp overflows)
    below = lax.mul(half, lax.exp(diff))
    above = lax.sub(one, lax.mul(half, lax.exp(lax.neg(diff))))
    return lax.select(lax.le(diff, zero), below, above)
