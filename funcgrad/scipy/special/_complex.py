"""Complex-valued special functions: the Faddeeva function ``wofz`` and the spherical harmonics
``sph_harm_y``.

Layer: surface. Imports funcgrad.numpy, funcgrad.numpy._core and the kernel's ``custom_jvp``.

- ``wofz(z) = exp(-z**2) erfc(-i z)``: Weideman's rational approximation (SIAM J. Numer. Anal.
  31, 1994) with 32 terms in the upper half plane -- its coefficients are computed here once, by
  his FFT recipe -- and the reflection ``w(z) = 2 exp(-z**2) - w(-z)`` below the real axis, as JAX
  does. It is holomorphic: its JVP is ``w'(z) = -2 z w(z) + 2i / sqrt(pi)`` (JAX's rule), so
  ``grad(..., holomorphic=True)`` works.
- ``sph_harm_y(n, m, theta, phi)``: SciPy's ``Y_n^m`` (polar angle ``theta``, azimuth ``phi``,
  Condon-Shortley phase, orthonormal), from the normalised associated Legendre functions by the
  stable three-term recurrence in the degree, vectorised over all elements (``n_max`` rounds);
  ``Y_n^{-m} = (-1)^m conj(Y_n^m)`` and ``|m| > n`` gives 0, as in SciPy. Arguments broadcast.
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.kernel import core
from funcgrad.numpy._core import asarray, check_arraylike, promote_args_inexact
from funcgrad.scipy.special._elementary import custom_jvp

__all__ = ["sph_harm_y", "wofz"]


def _weideman(n: int) -> tuple[float, np.ndarray]:
    """Weideman's ``L`` and polynomial coefficients (highest degree first) for ``n`` terms."""
    m = 2 * n
    k = np.arange(-m + 1, m)
    length = np.sqrt(n / np.sqrt(2))
    t = length * np.tan(k * np.pi / (2 * m))
    f = np.concatenate([[0.0], np.exp(-(t**2)) * (length**2 + t**2)])
    a = np.real(np.fft.fft(np.fft.fftshift(f))) / (2 * m)
    return float(length), a[1 : n + 1][::-1].copy()


_L, _COEFFS = _weideman(32)
_INV_SQRT_PI = float(1.0 / np.sqrt(np.pi))  # a Python float: weak, keeps complex64 complex64


def _wofz_upper(z):
    iz = 1j * z
    denom = _L - iz
    p = fnp.polyval(_COEFFS.astype(z.dtype), (_L + iz) / denom)
    return 2 * p / (denom * denom) + _INV_SQRT_PI / denom


@custom_jvp
def _wofz(z):
    upper = fnp.imag(z) >= 0
    w = _wofz_upper(fnp.where(upper, z, -z))
    return fnp.where(upper, w, 2 * fnp.exp(-z * z) - w)


_wofz.defjvps(lambda t, ans, z: t * (-2 * z * ans + 2j * _INV_SQRT_PI))


def wofz(z):
    """The Faddeeva function ``w(z) = exp(-z**2) erfc(-i z)`` (``scipy.special.wofz``), complex
    (real inputs are promoted), holomorphic.

    >>> import numpy as np
    >>> w = wofz(np.array([0.0, 1.0 + 1.0j]))
    >>> [complex(round(v.real, 8), round(v.imag, 8)) for v in w.tolist()]
    [(1+0j), (0.30474421+0.20821894j)]
    """
    check_arraylike("wofz", z)
    z = asarray(z)
    (z,) = promote_args_inexact(z)
    if z.dtype.kind != "c":
        z = z.astype(np.result_type(z.dtype, np.complex64))
    return _wofz(z)


def sph_harm_y(n, m, theta, phi, diff_n=0, n_max=None):
    """The spherical harmonic ``Y_n^m(theta, phi)`` (``scipy.special.sph_harm_y``): degree
    ``n``, order ``m`` (integers, ``|m| > n`` gives 0), polar angle ``theta`` and azimuth ``phi``;
    arguments broadcast. ``n_max`` (a static bound on ``n``) is needed when ``n`` is traced (under
    ``jit`` or ``vmap``); differentiable in ``theta`` and ``phi``. Only ``diff_n=0`` (the values)
    is provided, as in JAX.

    >>> import numpy as np
    >>> y = sph_harm_y(np.array([0, 1]), np.array([0, 1]), 0.5, 0.0)
    >>> [round(v.real, 10) for v in y.tolist()]
    [0.2820947918, -0.1656387187]
    """
    if diff_n not in (0, None):
        raise NotImplementedError(
            f"sph_harm_y: diff_n={diff_n} (derivatives stacked with the values) is not provided, as in JAX; "
            "differentiate with funcgrad.grad/jacfwd of the real and imaginary parts instead"
        )
    # (a list m, theta or phi: the TypeError JAX's formula meets first -- Python's abs(m), jnp.cos's
    # check of theta, then abs(m) * phi with abs(m) a tracer of JAX's jit; a list n it converts)
    if isinstance(m, list | tuple):
        abs(m)  # (Python's own TypeError, as JAX's formula meets it)
    check_arraylike("cos", theta)
    if isinstance(phi, list | tuple):
        raise TypeError(f"unsupported operand type(s) for *: 'DynamicJaxprTracer' and '{type(phi).__name__}'")
    n, m = asarray(n), asarray(m)
    if n.dtype.kind not in "iu" or m.dtype.kind not in "iu":
        raise TypeError(f"sph_harm_y: n and m must be integers, got {n.dtype} and {m.dtype}")
    theta, phi = promote_args_inexact(asarray(theta), asarray(phi))
    if n_max is None:
        if isinstance(n, core.Tracer):
            raise TypeError(
                "sph_harm_y: n is traced, so its largest value is unknown; pass n_max (a Python int "
                "bounding n)"
            )
        n_max = int(np.max(np.asarray(n))) if np.size(n) else 0
    n_max = int(n_max)
    if n_max < 0:  # (JAX's type and words: its table of n_max + 1 degrees is empty)
        raise IndexError(f"index is out of bounds for axis 0 with size 0 (sph_harm_y: n_max={n_max} < 0)")
    if not isinstance(n, core.Tracer) and np.asarray(n).size and int(np.max(np.asarray(n))) > n_max:
        raise ValueError(
            f"sph_harm_y: n_max={n_max} is smaller than the largest degree {int(np.max(np.asarray(n)))}"
        )
    shape = np.broadcast_shapes(n.shape, m.shape, theta.shape, phi.shape)
    dtype = theta.dtype
    n, m = fnp.broadcast_to(n, shape), fnp.broadcast_to(m, shape)
    am = fnp.abs(m).astype(dtype)
    nf = n.astype(dtype)
    # sin(theta) >= 0 as sqrt(1 - cos(theta)^2), SciPy's and JAX's: Y is even in theta (a signed
    # sin(theta) flipped odd orders at negative or beyond-pi angles)
    x, s = fnp.cos(theta), fnp.abs(fnp.sin(theta))
    # The diagonal P_{|m|}^{|m|}: one factor -sqrt((2k+1)/(2k)) sin(theta) per k <= |m|.
    pmm = fnp.full(shape, float(0.5 / np.sqrt(np.pi)), dtype)
    for k in range(1, n_max + 1):
        pmm = fnp.where(k <= am, pmm * -float(np.sqrt((2 * k + 1) / (2 * k))) * s, pmm)
    prev, cur = pmm, x * fnp.sqrt(2 * am + 3) * pmm
    legendre = fnp.where(nf == am, pmm, fnp.where(nf == am + 1, cur, 0))
    for degree in range(2, n_max + 1):
        step = degree >= am + 2
        # Guarded coefficients: elements not yet recurring must not see 0/0 (nor its derivative).
        a = fnp.sqrt((4 * degree**2 - 1) / fnp.where(step, degree**2 - am * am, 1))
        b = fnp.sqrt(fnp.where(step, ((degree - 1) ** 2 - am * am) / (4 * (degree - 1) ** 2 - 1), 0))
        new = a * (x * cur - b * prev)
        prev, cur = fnp.where(step, cur, prev), fnp.where(step, new, cur)
        legendre = fnp.where(step & (nf == degree), new, legendre)
    y = legendre * fnp.exp(1j * am * phi)
    y = fnp.where(m < 0, fnp.where(am % 2 == 1, -1, 1) * fnp.conj(y), y)
    return fnp.where(am <= nf, y, 0).astype(np.result_type(dtype, np.complex64))
