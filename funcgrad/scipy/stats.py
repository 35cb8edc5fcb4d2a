"""funcgrad.scipy.stats: distributions as functions (``norm.pdf`` etc.), like jax.scipy.stats.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

>>> round(float(norm.cdf(0.0)), 6)
0.5
"""

from __future__ import annotations

import types

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.scipy import special

__all__ = ["norm"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


_LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)
_SQRT2 = np.sqrt(2.0)


def _std(x, loc, scale):
    x = fnp.asarray(x)
    if not fnp.issubdtype(x.dtype, fnp.inexact):
        x = x.astype(fnp.float64)
    return (x - loc) / scale


def _norm_logpdf(x, loc=0.0, scale=1.0):
    z = _std(x, loc, scale)
    return -0.5 * z * z - _LOG_SQRT_2PI - fnp.log(fnp.asarray(scale, z.dtype))


def _norm_pdf(x, loc=0.0, scale=1.0):
    return fnp.exp(_norm_logpdf(x, loc, scale))


def _norm_cdf(x, loc=0.0, scale=1.0):
    return 0.5 * special.erfc(-_std(x, loc, scale) / _SQRT2)


def _norm_logcdf(x, loc=0.0, scale=1.0):
    return fnp.log(_norm_cdf(x, loc, scale))


def _norm_ppf(q, loc=0.0, scale=1.0):
    q = fnp.asarray(q)
    if not fnp.issubdtype(q.dtype, fnp.inexact):
        q = q.astype(fnp.float64)
    return loc + scale * _SQRT2 * special.erfinv(2 * q - 1)


def _norm_sf(x, loc=0.0, scale=1.0):
    return 0.5 * special.erfc(_std(x, loc, scale) / _SQRT2)


norm = types.SimpleNamespace(
    pdf=_norm_pdf, logpdf=_norm_logpdf, cdf=_norm_cdf, logcdf=_norm_logcdf, ppf=_norm_ppf, sf=_norm_sf
)
"""The normal distribution: ``norm.pdf(x, loc=0, scale=1)``, ``logpdf``, ``cdf``, ``logcdf``,
``ppf``, ``sf``."""
