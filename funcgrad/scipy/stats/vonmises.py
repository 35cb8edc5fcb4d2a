"""``funcgrad.scipy.stats.vonmises``: the von Mises distribution on the circle, concentration
``kappa``.

Layer: surface. Imports funcgrad.numpy and funcgrad.lax.

>>> round(float(pdf(0.0, 1.0)), 12)
0.341710488623
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.numpy._core import lax_const
from funcgrad.scipy.stats._util import promote_args_inexact

__all__ = ["logpdf", "pdf"]


def __dir__():
    return list(__all__)


def logpdf(x, kappa):
    """``kappa (cos x - 1) - log(2 pi i0e(kappa))`` (NaN for ``kappa <= 0``).

    >>> round(float(logpdf(0.0, 1.0)), 12)
    -1.073791424917
    """
    x, kappa = promote_args_inexact("vonmises.logpdf", x, kappa)
    zero = lax_const(kappa, 0)
    # (JAX's: the unselected branch on kappa as it is, so derivatives there are jax's)
    ok = lax.gt(kappa, zero)
    return fnp.where(ok, kappa * (fnp.cos(x) - 1) - fnp.log(2 * np.pi * lax.bessel_i0e(kappa)), np.nan)


def pdf(x, kappa):
    """The density.

    >>> round(float(pdf(np.pi, 1.0)), 12)
    0.046245485763
    """
    return lax.exp(logpdf(x, kappa))
