"""``funcgrad.scipy.stats.bernoulli``: the Bernoulli distribution.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> float(pmf(1, 0.3))
0.3
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.numpy._core import lax_const
from funcgrad.scipy import special
from funcgrad.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "logpmf", "pmf", "ppf"]


def __dir__():
    return list(__all__)


def logpmf(k, p, loc=0):
    """``k log p + (1 - k) log(1 - p)`` for ``k - loc`` in ``{0, 1}`` (``-inf`` elsewhere).

    >>> round(float(logpmf(0, 0.25)), 12)
    -0.287682072452
    """
    k, p, loc = promote_args_inexact("bernoulli.logpmf", k, p, loc)
    zero = lax_const(k, 0)
    one = lax_const(k, 1)
    x = lax.sub(k, loc)
    log_probs = special.xlogy(x, p) + special.xlog1py(lax.sub(one, x), -p)
    return fnp.where(fnp.logical_or(lax.lt(x, zero), lax.gt(x, one)), -np.inf, log_probs)


def pmf(k, p, loc=0):
    """The probability mass.

    >>> float(pmf(0, 0.25))
    0.75
    """
    return fnp.exp(logpmf(k, p, loc))


def cdf(k, p):
    """``0`` below 0, ``1 - p`` on ``[0, 1)``, ``1`` from 1 (NaN for ``p`` outside ``[0, 1]``).

    >>> float(cdf(0.5, 0.25))
    0.75
    """
    k, p = promote_args_inexact("bernoulli.cdf", k, p)
    zero, one = lax_const(k, 0), lax_const(k, 1)
    conds = [
        fnp.isnan(k) | fnp.isnan(p) | (p < zero) | (p > one),
        lax.lt(k, zero),
        fnp.logical_and(lax.ge(k, zero), lax.lt(k, one)),
        lax.ge(k, one),
    ]
    vals = [np.nan, zero, one - p, one]
    return fnp.select(conds, vals)


def ppf(q, p):
    """The smallest ``k`` with ``cdf(k) >= q``.

    >>> float(ppf(0.8, 0.25))
    1.0
    """
    q, p = promote_args_inexact("bernoulli.ppf", q, p)
    zero, one = lax_const(q, 0), lax_const(q, 1)
    bad = fnp.isnan(q) | fnp.isnan(p) | (p < zero) | (p > one) | (q < zero) | (q > one)
    return fnp.where(bad, np.nan, fnp.where(lax.le(q, one - p), zero, one))
