"""``funcgrad.scipy.stats.t``: Student's t distribution with ``df`` degrees of freedom.

Layer: surface. Imports funcgrad.numpy and funcgrad.lax.

>>> round(float(pdf(0.0, 1.0)), 12)   # Cauchy at 0
0.318309886184
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.scipy.stats._util import promote

__all__ = ["logpdf", "pdf"]


def __dir__():
    return list(__all__)


def logpdf(x, df, loc=0, scale=1):
    """``lgamma((df+1)/2) - lgamma(df/2) - log(pi df scale**2)/2 - (df+1)/2 log1p(z**2 / df)``.

    >>> round(float(logpdf(1.0, 3.0)), 12)
    -1.576252994527
    """
    x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)
    z = (x - loc) / scale
    half = df / 2.0
    normalize = lax.lgamma(half) + fnp.log(scale * scale * np.pi * df) / 2.0 - lax.lgamma(half + 0.5)
    return -(normalize + (half + 0.5) * fnp.log1p(z * z / df))


def pdf(x, df, loc=0, scale=1):
    """The density.

    >>> round(float(pdf(1.0, 3.0)), 12)
    0.206748335783
    """
    return fnp.exp(logpdf(x, df, loc, scale))
