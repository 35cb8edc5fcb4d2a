"""``funcgrad.scipy.stats.betabinom``: the beta-binomial distribution.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> round(float(pmf(1, 2, 1.0, 1.0)), 12)   # uniform on {0, 1, 2}
0.333333333333
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


def logpmf(k, n, a, b, loc=0):
    """``-log(n + 1) - betaln(n - y + 1, y + 1) + betaln(y + a, n - y + b) - betaln(a, b)``.

    >>> round(float(logpmf(1, 3, 2.0, 3.0)), 12)
    -1.070441411701
    """
    k, n, a, b, loc = promote_args_inexact("betabinom.logpmf", k, n, a, b, loc)
    y = lax.sub(lax.floor(k), loc)
    one = lax_const(y, 1)
    zero = lax_const(y, 0)
    combiln = lax.neg(lax.add(lax.log1p(n), special.betaln(lax.add(lax.sub(n, y), one), lax.add(y, one))))
    beta_lns = lax.sub(special.betaln(lax.add(y, a), lax.add(lax.sub(n, y), b)), special.betaln(a, b))
    log_probs = lax.add(combiln, beta_lns)
    log_probs = fnp.where(fnp.logical_and(lax.eq(y, zero), lax.eq(n, zero)), 0.0, log_probs)
    y_cond = fnp.logical_or(
        fnp.logical_or(lax.lt(y, lax.neg(loc)), lax.gt(y, n)), lax.le(lax.add(y, a), zero)
    )
    log_probs = fnp.where(y_cond, -np.inf, log_probs)
    n_a_b_cond = fnp.logical_or(fnp.logical_or(lax.lt(n, zero), lax.le(a, zero)), lax.le(b, zero))
    return fnp.where(n_a_b_cond, np.nan, log_probs)


def pmf(k, n, a, b, loc=0):
    """The probability mass.

    >>> round(float(pmf(1, 3, 2.0, 3.0)), 12)
    0.342857142857
    """
    return lax.exp(logpmf(k, n, a, b, loc))
