"""``funcgrad.scipy.special``: modified Bessel functions of order 0 and 1 (plain and exponentially
scaled) and Bessel functions of the first kind ``J_0 ... J_v``.

Layer: surface. Imports funcgrad.numpy and funcgrad.lax.
"""

from __future__ import annotations

import functools

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.jitting import library_jit
from funcgrad.numpy._core import concrete_int
from funcgrad.scipy._promotion import internal_promotion
from funcgrad.scipy.special._elementary import real_inexact

__all__ = ["bessel_jn", "i0", "i0e", "i1", "i1e"]


def i0e(x):
    """The exponentially scaled modified Bessel function of order 0, ``exp(-|x|) I0(x)``.

    >>> round(float(i0e(1.0)), 12)
    0.465759607594
    """
    (x,) = real_inexact("i0e", x)
    return lax.bessel_i0e(x)


def i0(x):
    """The modified Bessel function of order 0, ``I0(x)``.

    >>> round(float(i0(1.0)), 12)
    1.266065877752
    """
    (x,) = real_inexact("i0", x)
    return fnp.exp(fnp.abs(x)) * lax.bessel_i0e(x)


def i1e(x):
    """The exponentially scaled modified Bessel function of order 1, ``exp(-|x|) I1(x)``.

    >>> round(float(i1e(1.0)), 12)
    0.20791041535
    """
    (x,) = real_inexact("i1e", x)
    return lax.bessel_i1e(x)


def i1(x):
    """The modified Bessel function of order 1, ``I1(x)``.

    >>> round(float(i1(1.0)), 12)
    0.565159103992
    """
    (x,) = real_inexact("i1", x)
    return fnp.exp(fnp.abs(x)) * lax.bessel_i1e(x)


@internal_promotion
@functools.partial(library_jit, static_argnames=("v", "n_iter"))  # (NOTE: [special functions JAX jits])
def bessel_jn(z, *, v: int, n_iter: int = 50):
    """Bessel functions of the first kind of orders ``0 ... v`` at ``z``: an array of shape
    ``(v + 1, *z.shape)``, by Miller's backward recurrence from order ``n_iter`` normalised with
    ``J_0 + 2 sum_k J_2k = 1`` (as JAX; accurate for ``|z|`` well below ``n_iter``).

    >>> [round(j, 10) for j in bessel_jn(1.0, v=2).tolist()]
    [0.7651976866, 0.4400505857, 0.1149034849]
    """
    v = concrete_int(v, "scipy.special.bessel_jn: v")
    n_iter = concrete_int(n_iter, "scipy.special.bessel_jn: n_iter")
    if v < 0 or n_iter <= v:
        raise ValueError(f"scipy.special.bessel_jn: need 0 <= v < n_iter, got v={v}, n_iter={n_iter}")
    (z,) = real_inexact("bessel_jn", z, lists="stack")

    def step(carry, k):
        f0, f1, bs = carry
        f = 2.0 * (k + 1.0) * f1 / z - f0
        bs = fnp.where(fnp.fmod(k, 2.0) == 0, bs + 2.0 * f, bs)
        return (f1, f, bs), f

    zeros = fnp.zeros_like(z)
    init = (zeros, fnp.full_like(z, 1e-16), zeros)
    ks = fnp.arange(n_iter + 1, dtype=z.dtype)
    (_, _, bs), j_vals = lax.scan(step, init, ks, reverse=True)
    return j_vals[: v + 1] / (bs - j_vals[0])
