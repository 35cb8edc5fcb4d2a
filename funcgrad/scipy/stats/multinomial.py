"""``funcgrad.scipy.stats.multinomial``: the multinomial distribution (counts ``x`` on the last
axis).

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> import numpy as np
>>> float(pmf(np.array([1, 1]), 2, np.array([0.5, 0.5])))
0.5
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.numpy._core import check_arraylike
from funcgrad.scipy import special
from funcgrad.scipy.stats._util import promote_args_inexact

__all__ = ["logpmf", "pmf"]


def __dir__():
    return list(__all__)


def logpmf(x, n, p):
    """``gammaln(n + 1) + sum(x log p - gammaln(x + 1))`` where ``sum(x) == n`` (``x`` and ``n``
    integers, as in JAX).

    >>> round(float(logpmf(np.array([1, 2]), 3, np.array([0.5, 0.5]))), 12)
    -0.980829253012
    """
    (p,) = promote_args_inexact("multinomial.logpmf", p)
    check_arraylike("multinomial.logpmf", x, n)
    x, n = fnp.asarray(x), fnp.asarray(n)
    if not (fnp.issubdtype(x.dtype, fnp.integer) and fnp.issubdtype(n.dtype, fnp.integer)):
        raise ValueError(
            f"multinomial.logpmf: x and n must be integers, got x.dtype={x.dtype}, n.dtype={n.dtype}"
        )
    x, n = x.astype(p.dtype), n.astype(p.dtype)
    log_probs = special.gammaln(n + 1.0) + fnp.sum(special.xlogy(x, p) - special.gammaln(x + 1.0), axis=-1)
    return fnp.where(fnp.sum(x, axis=-1) == n, log_probs, -np.inf)


def pmf(x, n, p):
    """The probability mass.

    >>> round(float(pmf(np.array([2, 0]), 2, np.array([0.5, 0.5]))), 12)
    0.25
    """
    return fnp.exp(logpmf(x, n, p))
