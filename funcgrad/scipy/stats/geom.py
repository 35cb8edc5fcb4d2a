"""``funcgrad.scipy.stats.geom``: the geometric distribution (trials until the first success).

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> float(pmf(2, 0.5))
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


def logpmf(k, p, loc=0):
    """``(k - 1) log(1 - p) + log p`` for ``k - loc >= 1``.

    >>> round(float(logpmf(3, 0.5)), 12)
    -2.07944154168
    """
    k, p, loc = promote("geom.logpmf", k, p, loc)
    x = k - loc
    return fnp.where(x <= 0, -np.inf, special.xlog1py(x - 1.0, -p) + fnp.log(p))


def pmf(k, p, loc=0):
    """The probability mass.

    >>> float(pmf(1, 0.25))
    0.25
    """
    return fnp.exp(logpmf(k, p, loc))
