"""``funcgrad.scipy.stats.nbinom``: the negative binomial distribution (failures before the
``n``-th success).

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> float(pmf(0, 2, 0.5))
0.25
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
    """``gammaln(y + n) - gammaln(n) - gammaln(y + 1) + n log p + y log(1 - p)``.

    >>> round(float(logpmf(2, 2, 0.5)), 12)
    -1.673976433572
    """
    k, n, p, loc = promote("nbinom.logpmf", k, n, p, loc)
    y = k - loc
    comb = special.gammaln(y + n) - special.gammaln(n) - special.gammaln(y + 1.0)
    return fnp.where(k < loc, -np.inf, comb + special.xlogy(n, p) + special.xlogy(y, 1.0 - p))


def pmf(k, n, p, loc=0):
    """The probability mass.

    >>> float(pmf(2, 2, 0.5))
    0.1875
    """
    return fnp.exp(logpmf(k, n, p, loc))
