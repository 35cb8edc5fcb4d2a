"""funcgrad.scipy.special: special functions (differentiable, batchable, compilable).

Layer: surface. Imports funcgrad.numpy, funcgrad.nn and funcgrad.lax.

>>> import funcgrad.numpy as fnp
>>> float(logsumexp(fnp.array([0.0, 0.0])))   # log 2
0.6931471805599453
"""

from __future__ import annotations

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.kernel.custom_derivatives import custom_jvp
from funcgrad.nn import log_softmax, logsumexp, softmax  # noqa: F401 - re-exported as in SciPy

__all__ = [
    "digamma",
    "erf",
    "erfc",
    "erfinv",
    "expit",
    "gammaln",
    "log_softmax",
    "logit",
    "logsumexp",
    "polygamma",
    "softmax",
    "xlog1py",
    "xlogy",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


def _float(x):
    x = fnp.asarray(x)
    return x if fnp.issubdtype(x.dtype, fnp.inexact) else x.astype(fnp.float64)


def erf(x):
    """The error function."""
    return lax.erf(_float(x))


def erfc(x):
    """The complementary error function ``1 - erf(x)`` (accurate for large x)."""
    return lax.erfc(_float(x))


def erfinv(x):
    """The inverse error function."""
    return lax.erf_inv(_float(x))


def gammaln(x):
    """``log |Gamma(x)|``."""
    return lax.lgamma(_float(x))


def digamma(x):
    """The logarithmic derivative of Gamma."""
    return lax.digamma(_float(x))


def polygamma(n, x):
    """The ``n``-th derivative of digamma."""
    x = _float(x)
    return lax.polygamma(fnp.asarray(n, x.dtype), x)


def expit(x):
    """The logistic sigmoid ``1 / (1 + exp(-x))``, stable for large |x|."""
    return lax.logistic(_float(x))


def logit(x):
    """``log(x / (1 - x))``, the inverse of expit."""
    x = _float(x)
    return fnp.log(x) - fnp.log1p(-x)


def _promote(x, y):
    x, y = fnp.asarray(x), fnp.asarray(y)
    dtype = fnp.result_type(x, y, 0.0)
    return x.astype(dtype), y.astype(dtype)


@custom_jvp
def xlogy(x, y):
    """``x * log(y)``, defined as 0 where ``x == 0`` (JAX's derivative: ``log(y)`` in x).

    >>> float(xlogy(0.0, 0.0))
    0.0
    """
    x, y = _promote(x, y)
    return fnp.where(x != 0, x * fnp.log(fnp.where(x != 0, y, 1.0)), 0.0)


@xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return xlogy(x, y), tx * fnp.log(y) + ty * x / y


@custom_jvp
def xlog1py(x, y):
    """``x * log1p(y)``, 0 where ``x == 0``."""
    x, y = _promote(x, y)
    return fnp.where(x != 0, x * fnp.log1p(fnp.where(x != 0, y, 0.0)), 0.0)


@xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return xlog1py(x, y), tx * fnp.log1p(y) + ty * x / (1.0 + y)
