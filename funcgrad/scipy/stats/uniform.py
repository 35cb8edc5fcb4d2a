"""``funcgrad.scipy.stats.uniform``: the uniform distribution on ``[loc, loc + scale]``.

Layer: surface. Imports funcgrad.numpy.

>>> float(pdf(0.5))
1.0
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "logpdf", "pdf", "ppf"]


def __dir__():
    return list(__all__)


def logpdf(x, loc=0, scale=1):
    """``-log(scale)`` inside the support, ``-inf`` outside.

    >>> float(logpdf(0.5, 0.0, 2.0)) == -float(np.log(2.0))
    True
    """
    x, loc, scale = promote_args_inexact("uniform.logpdf", x, loc, scale)
    log_probs = lax.neg(lax.log(scale))
    return fnp.where(fnp.logical_or(lax.gt(x, lax.add(loc, scale)), lax.lt(x, loc)), -np.inf, log_probs)


def pdf(x, loc=0, scale=1):
    """The density.

    >>> float(pdf(3.0))
    0.0
    """
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The distribution function, clipped to ``[0, 1]``.

    >>> float(cdf(0.25))
    0.25
    """
    x, loc, scale = promote_args_inexact("uniform.cdf", x, loc, scale)
    zero, one = fnp.array(0, x.dtype), fnp.array(1, x.dtype)
    conds = [lax.lt(x, loc), lax.gt(x, lax.add(loc, scale)), lax.ge(x, loc) & lax.le(x, lax.add(loc, scale))]
    vals = [zero, one, lax.div(lax.sub(x, loc), scale)]
    return fnp.select(conds, vals)


def ppf(q, loc=0, scale=1):
    """The quantile function ``loc + scale q`` (NaN outside ``[0, 1]``).

    >>> float(ppf(0.5, 1.0, 2.0))
    2.0
    """
    q, loc, scale = promote_args_inexact("uniform.ppf", q, loc, scale)
    return fnp.where(fnp.isnan(q) | (q < 0) | (q > 1), np.nan, lax.add(loc, lax.mul(scale, q)))
