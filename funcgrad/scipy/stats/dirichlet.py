"""``funcgrad.scipy.stats.dirichlet``: the Dirichlet distribution on the simplex.

Layer: surface. Imports funcgrad.numpy and funcgrad.scipy.special.

``x`` has the categories on its first axis (SciPy's layout): ``x.shape[0]`` is ``len(alpha)``, or
one less (the last coordinate is then ``1 - sum``).

>>> import numpy as np
>>> round(float(pdf(np.array([0.2, 0.8]), np.array([1.0, 1.0]))), 12)
1.0
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.numpy._core import lax_const
from funcgrad.scipy import special
from funcgrad.scipy.stats._util import promote_dtypes_inexact

__all__ = ["logpdf", "pdf"]


def __dir__():
    return list(__all__)


def logpdf(x, alpha):
    """``sum((alpha - 1) log x) - (sum gammaln(alpha) - gammaln(sum alpha))`` on the simplex,
    ``-inf`` off it.

    >>> round(float(logpdf(np.array([0.2, 0.3, 0.5]), np.array([1.0, 2.0, 3.0]))), 12)
    1.504077396776
    """
    x, alpha = promote_dtypes_inexact("dirichlet.logpdf", x, alpha)
    if alpha.ndim != 1:
        raise ValueError(f"dirichlet.logpdf: alpha must be one-dimensional, got alpha.shape={alpha.shape}")
    if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        raise ValueError(
            "dirichlet.logpdf: x must have as many entries on its first axis as alpha, or one fewer; got "
            f"x.shape={x.shape}, alpha.shape={alpha.shape}"
        )
    one = lax_const(x, 1)  # (as JAX's: a boolean or integer x gives a strong result)
    if x.shape[0] != alpha.shape[0]:
        x = fnp.concatenate([x, one - x.sum(0, keepdims=True)], axis=0)
    normalize = fnp.sum(special.gammaln(alpha)) - special.gammaln(fnp.sum(alpha))
    a = alpha.reshape(alpha.shape + (1,) * (x.ndim - 1))
    log_probs = fnp.sum(special.xlogy(a - one, x), axis=0) - normalize
    simplex = fnp.all(x > 0, axis=0) & (fnp.abs(fnp.sum(x, axis=0) - 1.0) < 1e-6)
    return fnp.where(simplex, log_probs, -np.inf)


def pdf(x, alpha):
    """The density.

    >>> round(float(pdf(np.array([0.2, 0.3, 0.5]), np.array([1.0, 2.0, 3.0]))), 12)
    4.5
    """
    return fnp.exp(logpdf(x, alpha))
