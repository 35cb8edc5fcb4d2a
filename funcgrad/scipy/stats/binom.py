"""``funcgrad.scipy.stats.binom``: the binomial distribution.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> round(float(pmf(2, 4, 0.5)), 12)
0.375
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.scipy import special
from funcgrad.scipy.stats._util import promote

__all__ = ["logpmf", "pmf"]


def __dir__():
    return list(__all__)


def logpmf(k, n, p, loc=0):
    """``log C(n, y) + y log p + (n - y) log(1 - p)``, ``y = k - loc`` in ``[0, n]``.

    >>> round(float(logpmf(2, 4, 0.5)), 12)
    -0.980829253012
    """
    k, n, p, loc = promote("binom.logpmf", k, n, p, loc)
    y = k - loc
    comb = special.gammaln(n + 1.0) - (special.gammaln(y + 1.0) + special.gammaln(n - y + 1.0))
    linear = special.xlogy(y, p) + special.xlog1py(n - y, -p)
    log_probs = fnp.where(((y == 0) & (n == 0)) | (linear == 0), 0.0, comb + linear)
    return fnp.where((k >= loc) & (k < loc + n + 1), log_probs, -np.inf)


def pmf(k, n, p, loc=0):
    """The probability mass.

    >>> round(float(pmf(0, 3, 0.5)), 12)
    0.125
    """
    return fnp.exp(logpmf(k, n, p, loc))
