"""``funcgrad.scipy.stats.geom``: the geometric distribution (trials until the first success).

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> float(pmf(2, 0.5))
0.25
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


def logpmf(k, p, loc=0):
    """``(k - 1) log(1 - p) + log p`` for ``k - loc >= 1``.

    >>> round(float(logpmf(3, 0.5)), 12)
    -2.07944154168
    """
    k, p, loc = promote_args_inexact("geom.logpmf", k, p, loc)
    zero = lax_const(k, 0)
    one = lax_const(k, 1)
    x = lax.sub(k, loc)
    log_probs = special.xlog1py(lax.sub(x, one), -p) + lax.log(p)
    return fnp.where(lax.le(x, zero), -np.inf, log_probs)


def pmf(k, p, loc=0):
    """The probability mass.

    >>> float(pmf(1, 0.25))
    0.25
    """
    return fnp.exp(logpmf(k, p, loc))
