"""``funcgrad.scipy.stats.poisson``: the Poisson distribution with mean ``mu``.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> round(float(pmf(0, 2.0)), 12)   # exp(-2)
0.135335283237
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.numpy._core import lax_const
from funcgrad.scipy import special
from funcgrad.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "entropy", "logpmf", "pmf"]


def __dir__():
    return list(__all__)


def logpmf(k, mu, loc=0):
    """``k log mu - gammaln(k + 1) - mu`` for non-negative integer ``k - loc``.

    >>> round(float(logpmf(2, 2.0)), 12)
    -1.30685281944
    """
    k, mu, loc = promote_args_inexact("poisson.logpmf", k, mu, loc)
    zero = lax_const(k, 0)
    x = lax.sub(k, loc)
    log_probs = special.xlogy(x, mu) - special.gammaln(x + 1) - mu
    return fnp.where(fnp.logical_or(lax.lt(x, zero), lax.ne(fnp.round(k), k)), -np.inf, log_probs)


def pmf(k, mu, loc=0):
    """The probability mass.

    >>> round(float(pmf(2, 2.0)), 12)
    0.270670566473
    """
    return fnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    """``gammaincc(floor(k - loc) + 1, mu)``, differentiable in ``mu``.

    >>> round(float(cdf(1, 2.0)), 12)
    0.40600584971
    """
    k, mu, loc = promote_args_inexact("poisson.logpmf", k, mu, loc)  # (JAX's name)
    zero = lax_const(k, 0)
    x = lax.sub(k, loc)
    # (gammaincc's order kept >= 1 below the support: JAX's values, no NaN derivative there)
    p = special.gammaincc(fnp.floor(1 + fnp.maximum(x, 0)), mu)
    return fnp.where(lax.lt(x, zero), zero, p)


def _entropy_sum(mu, max_k, upper):
    k = fnp.arange(max_k, dtype=mu.dtype)[:, None]
    mask = k < upper[None, :]
    # Terms past the bound are dropped outside entr (entr'(0) is infinite: no NaN derivatives).
    probs = fnp.where(mask, pmf(k, mu[None, :], 0), 0.5)
    return fnp.sum(fnp.where(mask, special.entr(probs), 0.0), axis=0)


def entropy(mu, loc=0):
    """The entropy ``-sum_k pmf(k) log pmf(k)``: summed directly up to ``mu + 10 sqrt(mu) + 20``
    for ``mu < 100`` (JAX's method), the asymptotic series ``log(2 pi e mu)/2 - 1/(12 mu) - ...``
    beyond.

    >>> round(float(entropy(1.0)), 12)
    1.304842242256
    """
    mu, loc = promote_args_inexact("poisson.entropy", mu, loc)
    shape = np.broadcast_shapes(mu.shape, loc.shape)
    flat = fnp.ravel(mu)
    # Each branch sees only the means it is selected for (others get a harmless stand-in), so a
    # large mean's vanishing probabilities cannot make the unselected sums' derivatives NaN.
    mu_s = fnp.where(flat < 10, flat, 1.0)
    mu_m = fnp.where((flat >= 10) & (flat < 100), flat, 50.0)
    small = _entropy_sum(mu_s, 35, fnp.ceil(mu_s + 20))
    medium = _entropy_sum(mu_m, 250, fnp.ceil(mu_m + 10 * fnp.sqrt(mu_m) + 20))
    safe = fnp.where(flat < 100, 100.0, flat)
    # The asymptotic expansion to third order (JAX keeps only 1/(12 mu): a 2e-6 error at mu = 100).
    large = (
        0.5 * fnp.log(2 * np.pi * np.e * safe)
        - 1.0 / (12 * safe)
        - 1.0 / (24 * safe**2)
        - 19.0 / (360 * safe**3)
    )
    out = fnp.where(flat == 0, 0.0, fnp.where(flat < 10, small, fnp.where(flat < 100, medium, large)))
    return fnp.broadcast_to(out.reshape(mu.shape), shape)
