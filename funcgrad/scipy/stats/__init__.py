"""funcgrad.scipy.stats: statistical distributions as modules of functions (``norm.logpdf``,
``poisson.pmf``, ...), ``mode``, ``rankdata``, ``sem`` and ``gaussian_kde``, like
``jax.scipy.stats``. Everything is differentiable (where JAX's is), batchable and compilable.

Layer: surface. Imports funcgrad.numpy, funcgrad.lax, funcgrad.random and funcgrad.scipy.special.

Each distribution is a module (``from funcgrad.scipy.stats import norm``; ``import
funcgrad.scipy.stats.norm``) with SciPy's function names and signatures, ``loc``/``scale`` included.

>>> round(float(norm.cdf(0.0)), 6)
0.5
>>> round(float(poisson.pmf(0, 2.0)), 6)
0.135335
"""

from __future__ import annotations

from funcgrad.scipy.stats import (
    bernoulli,
    beta,
    betabinom,
    binom,
    cauchy,
    chi2,
    dirichlet,
    expon,
    gamma,
    gennorm,
    geom,
    gumbel_l,
    gumbel_r,
    laplace,
    logistic,
    multinomial,
    multivariate_normal,
    nbinom,
    norm,
    pareto,
    poisson,
    t,
    truncnorm,
    uniform,
    vonmises,
    wrapcauchy,
)
from funcgrad.scipy.stats._core import gaussian_kde, mode, rankdata, sem

# The 26 distribution modules of jax.scipy.stats, and its four functions.
__all__ = [
    "bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "dirichlet", "expon", "gamma",
    "gaussian_kde", "gennorm", "geom", "gumbel_l", "gumbel_r", "laplace", "logistic", "mode", "multinomial",
    "multivariate_normal", "nbinom", "norm", "pareto", "poisson", "rankdata", "sem", "t", "truncnorm",
    "uniform", "vonmises", "wrapcauchy",
]  # fmt: skip


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
