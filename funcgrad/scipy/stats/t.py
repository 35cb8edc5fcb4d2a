"""``funcgrad.scipy.stats.t``: Student's t distribution with ``df`` degrees of freedom.

Layer: surface. Imports funcgrad.numpy and funcgrad.lax.

>>> round(float(pdf(0.0, 1.0)), 12)   # Cauchy at 0
0.318309886184
"""

from __future__ import annotations

import numpy as np

from funcgrad import lax
from funcgrad.numpy._core import lax_const
from funcgrad.scipy.stats._util import promote_args_inexact

__all__ = ["logpdf", "pdf"]


def __dir__():
    return list(__all__)


def logpdf(x, df, loc=0, scale=1):
    """``lgamma((df+1)/2) - lgamma(df/2) - log(pi df scale**2)/2 - (df+1)/2 log1p(z**2 / df)``.

    >>> round(float(logpdf(1.0, 3.0)), 12)
    -1.576252994527
    """
    x, df, loc, scale = promote_args_inexact("t.logpdf", x, df, loc, scale)
    two = lax_const(x, 2)
    scaled_x = lax.div(lax.sub(x, loc), scale)
    df_over_two = lax.div(df, two)
    df_plus_one_over_two = lax.add(df_over_two, lax_const(x, 0.5))
    normalize_term_const = lax.mul(lax.mul(scale, scale), lax_const(x, np.pi))
    normalize_term_tmp = lax.div(lax.log(lax.mul(normalize_term_const, df)), two)
    normalize_term = lax.sub(
        lax.add(lax.lgamma(df_over_two), normalize_term_tmp), lax.lgamma(df_plus_one_over_two)
    )
    quadratic = lax.div(lax.mul(scaled_x, scaled_x), df)
    return lax.neg(lax.add(normalize_term, lax.mul(df_plus_one_over_two, lax.log1p(quadratic))))


def pdf(x, df, loc=0, scale=1):
    """The density.

    >>> round(float(pdf(1.0, 3.0)), 12)
    0.206748335783
    """
    return lax.exp(logpdf(x, df, loc, scale))
