"""``funcgrad.scipy.stats.nbinom``: the negative binomial distribution (failures before the
``n``-th success).

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> float(pmf(0, 2, 0.5))
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


def logpmf(k, n, p, loc=0):
    """``gammaln(y + n) - gammaln(n) - gammaln(y + 1) + n log p + y log(1 - p)``.

    >>> round(float(logpmf(2, 2, 0.5)), 12)
    -1.673976433572
    """
    k, n, p, loc = promote_args_inexact("nbinom.logpmf", k, n, p, loc)
    one = lax_const(k, 1)
    y = lax.sub(k, loc)
    comb_term = lax.sub(
        lax.sub(special.gammaln(lax.add(y, n)), special.gammaln(n)), special.gammaln(lax.add(y, one))
    )
    log_linear_term = lax.add(special.xlogy(n, p), special.xlogy(y, lax.sub(one, p)))
    log_probs = lax.add(comb_term, log_linear_term)
    return fnp.where(lax.lt(k, loc), -np.inf, log_probs)


def pmf(k, n, p, loc=0):
    """The probability mass.

    >>> float(pmf(2, 2, 0.5))
    0.1875
    """
    return lax.exp(logpmf(k, n, p, loc))
