"""funcgrad.scipy.special: SciPy's special functions (``jax.scipy.special``'s names), differentiable,
batchable and compilable, with JAX's derivative rules.

Layer: surface. Imports funcgrad.numpy, funcgrad.nn, funcgrad.lax, funcgrad.api and the kernel's
``custom_jvp``.

Modules: ``_elementary`` (logistic, entropies, Box-Cox, softmax family), ``_gamma`` (gamma and beta
families, incomplete gamma/beta, polygamma, zeta, Bernoulli numbers), ``_error`` (erf family,
``ndtr``/``ndtri``/``log_ndtr``, Dawson, Fresnel, Owen's T), ``_expint`` (exponential, sine and
cosine integrals, Spence), ``_bessel`` (``i0``/``i1`` and scaled, ``bessel_jn``), ``_hyper``
(``hyp1f1``, ``hyp2f1``), ``_complex`` (``wofz``, ``sph_harm_y``). ``__all__`` is the union of
their ``__all__``.

Algorithms are JAX's (Cephes and XLA's where JAX takes them from there); where JAX and SciPy
disagree on a value at the edge of the domain, SciPy's is taken (``expn(n, 0)``, ``expi(0)``).

>>> import funcgrad.numpy as fnp
>>> float(logsumexp(fnp.array([0.0, 0.0])))   # log 2
0.6931471805599453
"""

from __future__ import annotations

from funcgrad.scipy.special import _bessel, _complex, _elementary, _error, _expint, _gamma, _hyper
from funcgrad.scipy.special._bessel import *  # noqa: F403 - each module's public names are its __all__
from funcgrad.scipy.special._complex import *  # noqa: F403
from funcgrad.scipy.special._elementary import *  # noqa: F403
from funcgrad.scipy.special._error import *  # noqa: F403
from funcgrad.scipy.special._expint import *  # noqa: F403
from funcgrad.scipy.special._gamma import *  # noqa: F403
from funcgrad.scipy.special._hyper import *  # noqa: F403

# NOTE: [special functions JAX jits]
# JAX jits gammasgn, bessel_jn (v and n_iter static), expi, sici, expn/exp1, hyp1f1 and hyp2f1 (and
# the derivative series of the last two); so do we, at the same places: gammasgn and bessel_jn whole,
# the others' primal inside their custom_jvp (custom_jvp(jit(f)), so a nondiff ``n`` stays
# concrete and an outer grad sees the custom rule with symbolic zeros, as before). Eagerly each is
# then one compiled program per shape and dtype: new values compile nothing, where hyp2f1's dozen
# loops each compiled and ran op by op (41 ms -> 0.1 ms CPU per call of 3-vectors). Under jit a
# list argument is a list of tracers, so those functions treat lists as JAX's do
# (``real_inexact(lists=)``: refused in its words, or made one array where JAX vectorizes).
__all__ = sorted(
    {
        name
        for module in (_bessel, _complex, _elementary, _error, _expint, _gamma, _hyper)
        for name in module.__all__
    }
)


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
