"""autograd.scipy.special is funcgrad.scipy.special (``psi`` is ``digamma``), plus the Bessel
functions, ``rgamma`` and ``erfcinv`` that autograd has and funcgrad (like JAX) does not: SciPy's
values on the host, autograd's derivative rules."""

import scipy.special as _sp

import funcgrad.numpy as _np
import funcgrad.scipy.special as _fs

from ..core import defvjp
from ..numpy._wrap import wrap_namespace as _wrap_namespace
from ._host import host_ufunc, unbroadcast

_wrap_namespace(_fs, globals())
psi = digamma  # noqa: F821 - bound by _wrap_namespace

j0, j1, y0, y1 = (host_ufunc(getattr(_sp, n)) for n in ("j0", "j1", "y0", "y1"))
jn, yn, iv, ive = (host_ufunc(getattr(_sp, n)) for n in ("jv", "yv", "iv", "ive"))
jn.__name__, yn.__name__ = "jn", "yn"
rgamma_value = host_ufunc(_sp.rgamma)
erfcinv = host_ufunc(_sp.erfcinv)

defvjp(j0, lambda ans, x: lambda g: -g * j1(x))
defvjp(y0, lambda ans, x: lambda g: -g * y1(x))
defvjp(j1, lambda ans, x: lambda g: g * (j0(x) - jn(2, x)) / 2.0)
defvjp(y1, lambda ans, x: lambda g: g * (y0(x) - yn(2, x)) / 2.0)
defvjp(jn, None, lambda ans, n, x: lambda g: g * (jn(n - 1, x) - jn(n + 1, x)) / 2.0)
defvjp(yn, None, lambda ans, n, x: lambda g: g * (yn(n - 1, x) - yn(n + 1, x)) / 2.0)
defvjp(iv, None, lambda ans, v, x: lambda g: unbroadcast(g * (iv(v - 1, x) + iv(v + 1, x)) / 2.0, x))
defvjp(
    ive,
    None,
    lambda ans, v, x: (
        lambda g: unbroadcast(g * ((ive(v - 1, x) + ive(v + 1, x)) / 2.0 - _np.sign(x) * ans), x)
    ),
)
defvjp(erfcinv, lambda ans, x: lambda g: -g * 0.5 * _np.sqrt(_np.pi) * _np.exp(ans**2))


def rgamma(x):
    """``1 / gamma(x)``; its derivative is ``-rgamma(x) * digamma(x)``."""
    return rgamma_value(x)


defvjp(rgamma_value, lambda ans, x: lambda g: -g * ans * _fs.digamma(x))


# erf and erfc of complex arguments (autograd has them, funcgrad like JAX only the real ones): SciPy's
# values, and the holomorphic derivative 2/sqrt(pi) exp(-z^2).
_real_erf, _real_erfc = erf, erfc  # noqa: F821 - bound by _wrap_namespace
_complex_erf = host_ufunc(_sp.erf, "erf", dtype=complex)
_complex_erfc = host_ufunc(_sp.erfc, "erfc", dtype=complex)
defvjp(_complex_erf, lambda ans, z: lambda g: g * 2.0 / _np.sqrt(_np.pi) * _np.exp(-(z**2)))
defvjp(_complex_erfc, lambda ans, z: lambda g: -g * 2.0 / _np.sqrt(_np.pi) * _np.exp(-(z**2)))


def erf(z):
    """The error function; complex ``z`` too."""
    return _complex_erf(z) if _np.iscomplexobj(z) else _real_erf(z)


def erfc(z):
    """``1 - erf(z)``; complex ``z`` too."""
    return _complex_erfc(z) if _np.iscomplexobj(z) else _real_erfc(z)
