"""``funcgrad.scipy.stats.norm``: the normal distribution (``jax.scipy.stats.norm``).

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> round(float(cdf(0.0)), 6)
0.5
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.numpy._core import lax_const
from funcgrad.scipy import special
from funcgrad.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def __dir__():
    return list(__all__)


def logpdf(x, loc=0, scale=1):
    """The log density ``-((x - loc) / scale)**2 / 2 - log(sqrt(2 pi) scale)``.

    >>> round(float(logpdf(0.0)), 12)
    -0.918938533205
    """
    x, loc, scale = promote_args_inexact("norm.logpdf", x, loc, scale)
    scale_sqrd = lax.square(scale)
    log_normalizer = lax.log(lax.mul(lax_const(x, 2 * np.pi), scale_sqrd))
    quadratic = lax.div(lax.square(lax.sub(x, loc)), scale_sqrd)
    return lax.div(lax.add(log_normalizer, quadratic), lax_const(x, -2))


def pdf(x, loc=0, scale=1):
    """The density.

    >>> round(float(pdf(0.0)), 12)
    0.398942280401
    """
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The distribution function ``ndtr((x - loc) / scale)``.

    >>> round(float(cdf(1.0)), 12)
    0.841344746069
    """
    x, loc, scale = promote_args_inexact("norm.cdf", x, loc, scale)
    return special.ndtr(lax.div(lax.sub(x, loc), scale))


def logcdf(x, loc=0, scale=1):
    """``log cdf``, accurate in the far left tail (``log_ndtr``).

    >>> round(float(logcdf(-30.0)), 6)
    -454.321244
    """
    x, loc, scale = promote_args_inexact("norm.logcdf", x, loc, scale)
    return special.log_ndtr(lax.div(lax.sub(x, loc), scale))


def sf(x, loc=0, scale=1):
    """The survival function ``1 - cdf``, accurate in the right tail.

    >>> round(float(sf(1.0)), 12)
    0.158655253931
    """
    x, loc, scale = promote_args_inexact("norm.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
    """``log sf``, accurate in the far right tail.

    >>> round(float(logsf(30.0)), 6)
    -454.321244
    """
    x, loc, scale = promote_args_inexact("norm.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def ppf(q, loc=0, scale=1):
    """The quantile function (inverse of ``cdf``).

    >>> round(float(ppf(0.975)), 12)
    1.95996398454
    """
    # (JAX's: no promotion of its own; in the default float dtype whatever the inputs' -- float32
    # arguments give float64 in 64-bit mode -- as its ``jnp.asarray(..., float)``)
    return fnp.asarray(special.ndtri(q) * scale + loc, float)


def isf(q, loc=0, scale=1):
    """The inverse survival function ``ppf(1 - q)``.

    >>> round(float(isf(0.025)), 12)
    1.95996398454
    """
    return ppf(lax.sub(lax_const(q, 1), q), loc, scale)
