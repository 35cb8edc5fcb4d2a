"""``funcgrad.scipy.stats.bernoulli``: the Bernoulli distribution.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> float(pmf(1, 0.3))
0.3
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.scipy import special
from funcgrad.scipy.stats._util import promote

__all__ = ["cdf", "logpmf", "pmf", "ppf"]


def __dir__():
    return list(__all__)


def logpmf(k, p, loc=0):
    """``k log p + (1 - k) log(1 - p)`` for ``k - loc`` in ``{0, 1}`` (``-inf`` elsewhere).

    >>> round(float(logpmf(0, 0.25)), 12)
    -0.287682072452
    """
    k, p, loc = promote("bernoulli.logpmf", k, p, loc)
    x = k - loc
    log_probs = special.xlogy(x, p) + special.xlog1py(1.0 - x, -p)
    return fnp.where((x < 0) | (x > 1), -np.inf, log_probs)


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
    k, p = promote("bernoulli.cdf", k, p)
    bad = fnp.isnan(k) | fnp.isnan(p) | (p < 0) | (p > 1)
    one = fnp.ones_like(k)
    return fnp.where(bad, np.nan, fnp.where(k < 0, 0.0 * one, fnp.where(k < 1, 1.0 - p, one)))


def ppf(q, p):
    """The smallest ``k`` with ``cdf(k) >= q``.

    >>> float(ppf(0.8, 0.25))
    1.0
    """
    q, p = promote("bernoulli.ppf", q, p)
    bad = fnp.isnan(q) | fnp.isnan(p) | (p < 0) | (p > 1) | (q < 0) | (q > 1)
    one = fnp.ones_like(q)
    return fnp.where(bad, np.nan, fnp.where(q <= 1.0 - p, 0.0 * one, one))
