"""autograd.scipy.stats.multivariate_normal is funcgrad.scipy.stats.multivariate_normal."""

import funcgrad.scipy.stats.multivariate_normal as _m
from funcgrad.scipy.stats.multivariate_normal import *  # noqa: F403

for _name in dir(_m):
    if not _name.startswith("__") and _name not in globals():
        globals()[_name] = getattr(_m, _name)

# autograd's extras: allow_singular= (a singular covariance through its pseudo-inverse and
# pseudo-determinant, as SciPy's) and entropy.
import functools as _functools  # noqa: E402

import funcgrad.numpy as _np  # noqa: E402

_jax_logpdf = logpdf  # noqa: F405


def _singular_logpdf(x, mean, cov):
    w, v = _np.linalg.eigh(cov)
    keep = w > 1e-10 * _np.max(w)
    w_safe = _np.where(keep, w, 1.0)
    inv_w = _np.where(keep, 1.0 / w_safe, 0.0)
    rank = _np.sum(keep)
    d = _np.asarray(x) - mean
    proj = _np.einsum("...i,ij->...j", d, v)
    maha = _np.sum(proj**2 * inv_w, axis=-1)
    log_pdet = _np.sum(_np.where(keep, _np.log(w_safe), 0.0))
    return -0.5 * (rank * _np.log(2 * _np.pi) + log_pdet + maha)


def logpdf(x, mean, cov, allow_singular=False):  # noqa: F811
    if allow_singular:
        return _singular_logpdf(x, mean, cov)
    return _jax_logpdf(x, mean, cov)


def pdf(x, mean, cov, allow_singular=False):  # noqa: F811
    return _np.exp(logpdf(x, mean, cov, allow_singular=allow_singular))


def entropy(mean, cov):
    """The differential entropy ``(d/2) (1 + log 2 pi) + log det(cov) / 2``."""
    d = _np.shape(cov)[-1]
    return 0.5 * d * (1.0 + _np.log(2 * _np.pi)) + 0.5 * _np.linalg.slogdet(cov)[1]


del _functools
