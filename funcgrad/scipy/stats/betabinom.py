"""``funcgrad.scipy.stats.betabinom``: the beta-binomial distribution.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> round(float(pmf(1, 2, 1.0, 1.0)), 12)   # uniform on {0, 1, 2}
0.333333333333
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.scipy import special
from funcgrad.scipy.stats._util import promote

__all__ = ["logpmf", "pmf"]


def __dir__():
    return list(__all__)


def logpmf(k, n, a, b, loc=0):
    """``-log(n + 1) - betaln(n - y + 1, y + 1) + betaln(y + a, n - y + b) - betaln(a, b)``.

    >>> round(float(logpmf(1, 3, 2.0, 3.0)), 12)
    -1.070441411701
    """
    k, n, a, b, loc = promote("betabinom.logpmf", k, n, a, b, loc)
    y = fnp.floor(k) - loc
    combiln = -(fnp.log1p(n) + special.betaln(n - y + 1.0, y + 1.0))
    log_probs = combiln + special.betaln(y + a, n - y + b) - special.betaln(a, b)
    log_probs = fnp.where((y == 0) & (n == 0), 0.0, log_probs)
    log_probs = fnp.where((y < -loc) | (y > n) | (y + a <= 0), -np.inf, log_probs)
    return fnp.where((n < 0) | (a <= 0) | (b <= 0), np.nan, log_probs)


def pmf(k, n, a, b, loc=0):
    """The probability mass.

    >>> round(float(pmf(1, 3, 2.0, 3.0)), 12)
    0.342857142857
    """
    return fnp.exp(logpmf(k, n, a, b, loc))
