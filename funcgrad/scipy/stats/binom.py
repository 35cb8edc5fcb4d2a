"""``funcgrad.scipy.stats.binom``: the binomial distribution.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> round(float(pmf(2, 4, 0.5)), 12)
0.375
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.numpy._core import lax_const
from funcgrad.scipy import special
from funcgrad.scipy.stats._util import promote_args_inexact

__all__ = ["logpmf", "pmf"]


def __dir__():
    return list(__all__)


def logpmf(k, n, p, loc=0):
    """``log C(n, y) + y log p + (n - y) log(1 - p)``, ``y = k - loc`` in ``[0, n]``.

    >>> round(float(logpmf(2, 4, 0.5)), 12)
    -0.980829253012
    """
    k, n, p, loc = promote_args_inexact("binom.logpmf", k, n, p, loc)
    y = lax.sub(k, loc)
    zero = lax_const(y, 0)
    comb_term = lax.sub(special.gammaln(n + 1), lax.add(special.gammaln(y + 1), special.gammaln(n - y + 1)))
    log_linear_term = lax.add(special.xlogy(y, p), special.xlog1py(lax.sub(n, y), lax.neg(p)))
    log_probs = lax.add(comb_term, log_linear_term)
    y_n_cond = fnp.logical_or(
        fnp.logical_and(lax.eq(y, zero), lax.eq(n, zero)), lax.eq(log_linear_term, zero)
    )
    log_probs = fnp.where(y_n_cond, 0.0, log_probs)
    return fnp.where(lax.ge(k, loc) & lax.lt(k, loc + n + 1), log_probs, -np.inf)


def pmf(k, n, p, loc=0):
    """The probability mass.

    >>> round(float(pmf(0, 3, 0.5)), 12)
    0.125
    """
    return lax.exp(logpmf(k, n, p, loc))
