"""Special-function primitives that XLA provides as kernels: the Hurwitz zeta function and the
exponentially scaled modified Bessel functions of order 0 and 1.

Layer: primitives. Imports the funcgrad kernel, numpy and (lazily, for import time) scipy.special.

``zeta`` and ``bessel_i1e`` lower to CHLO's ``chlo.zeta`` / ``chlo.bessel_i1e`` (XLA expands them
with the algorithms JAX gets); ``bessel_i0e`` lowers to Cephes' Chebyshev expansion, as JAX's does.
Eager mode calls SciPy's implementations of the same functions. The other special functions of
``jax.lax`` (``igamma``, ``betainc``, ...) have no XLA kernel: JAX writes them as loops of
elementwise operations, and so does funcgrad, in the surface (``funcgrad/lax/special.py``).

Derivatives follow JAX: ``d zeta(x, q)/dq = -x zeta(x + 1, q)``, and the derivative in ``x`` is
refused (JAX's ``lax.zeta`` has none; ``funcgrad.scipy.special.zeta`` has one, from a series).
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives._rules import (
    JET_OF_SPECIAL_FUNCTION,
    aval_of,
    naryop,
    no_derivative,
    scalar_like,
    unop,
)
from funcgrad.primitives.elementwise import abs_, add, div, gt_p, mul, select, sign, sub

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.hooks import hooks

__all__ = ["bessel_i0e_p", "bessel_i1e_p", "zeta_p"]


def _scipy(name, odd: bool = False):
    """A scipy.special function, imported on first use, returning the dtype of its first operand
    (``odd``: an odd function, -0 at -0 as XLA's; SciPy's i1e(-0.0) is +0)."""

    def impl(*args):
        import scipy.special  # noqa: PLC0415 - deferred for import time, not for a cycle

        out = np.asarray(getattr(scipy.special, name)(*args)).astype(np.result_type(*args))
        return np.where(np.equal(args[0], 0), args[0], out).astype(out.dtype, copy=False) if odd else out

    impl.__name__ = name
    return impl


def _zeta_impl(x, q):
    """SciPy's Hurwitz zeta with XLA's answers where q is a non-positive integer (the poles: inf
    where x is 1 or an even integer, NaN elsewhere; SciPy gives NaN, or inf for x > 1), q is inf,
    or x is inf with q <= 1 (NaN; x = 1 is inf), as jax.scipy.special.zeta (chlo.zeta) gives them; the
    compiled lowering is chlo.zeta itself."""
    out = _scipy("zeta")(x, q)
    x, q = np.broadcast_arrays(np.asarray(x), np.asarray(q))
    with np.errstate(invalid="ignore"):
        pole = (q <= 0) & (q == np.floor(q))
        even = np.isfinite(x) & (x == np.floor(x)) & (np.fmod(x, 2) == 0)
        at_pole = np.where((x == 1) | even, np.inf, np.nan)
        nan = (q == np.inf) | ((x == np.inf) & (q <= 1))
        out = np.where(x == 1, np.inf, np.where(pole, at_pole, np.where(nan, np.nan, out)))
    return np.asarray(out).astype(np.result_type(x, q))


zeta_p = naryop("zeta", _zeta_impl, accepted=_dt.is_float, taylor_from_jvp=JET_OF_SPECIAL_FUNCTION)
# JAX's zeta_p has no differentiation rule, in either argument (jax.scipy.special.zeta is a
# custom_jvp whose derivative comes from a series: funcgrad.scipy.special.zeta, the same)
no_derivative(zeta_p)
# (float32 eagerly as XLA computes it, JAX's answer: chlo.zeta's float32 series overflows where
# SciPy's float64 value rounds to a float32 -- zeta(1e10, 1) is NaN in jax, 1.0 in SciPy)
zeta_p.def_traits(compiled_eagerly=lambda args, params: any(a.dtype == np.float32 for a in args))


bessel_i0e_p = unop(
    "bessel_i0e",
    _scipy("i0e"),
    lambda t, ans, x: mul(t, sub(bessel_i1e_p.bind(x), mul(sign(x), ans))),
    uses_answer=True,
    accepted=_dt.is_float,
    taylor_from_jvp=JET_OF_SPECIAL_FUNCTION,
    may_produce_nan=True,
    sparse="densifying",  # (i0e(0) == 1)
)


def _bessel_i1e_jvp(t, ans, x):
    # i1e'(x) = i0e(x) - i1e(x) (sign(x) + 1/x), whose limit at 0 is 1/2 (JAX's rule, to its
    # comparison: |x| > eps picks the formula, so |x| = eps and NaN take 1/2)
    eps = _dt.finfo(aval_of(x).dtype).eps  # (NumPy's finfo refuses bfloat16)
    not_tiny = gt_p.bind(abs_(x), scalar_like(eps, x))
    safe_x = select(not_tiny, x, hooks.full_like(x, eps))
    d = sub(bessel_i0e_p.bind(safe_x), mul(ans, add(sign(safe_x), div(1.0, safe_x))))
    return mul(t, select(not_tiny, d, hooks.full_like(x, 0.5)))


bessel_i1e_p = unop(
    "bessel_i1e",
    _scipy("i1e", odd=True),
    _bessel_i1e_jvp,
    uses_answer=True,
    accepted=_dt.is_float,
    taylor_from_jvp=JET_OF_SPECIAL_FUNCTION,
    may_produce_nan=True,
    sparse="zero_preserving",
)
# (float16/bfloat16 eagerly as XLA computes them, JAX's bits: NumPy's float32 SciPy value rounded
# once differs; the lax-parameter fuzzer's half-precision sweep)
for _p in (bessel_i1e_p, zeta_p):
    _p.def_traits(half_floats_compiled=True)
