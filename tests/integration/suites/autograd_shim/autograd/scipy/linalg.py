"""autograd.scipy.linalg is funcgrad.scipy.linalg."""

import funcgrad.scipy.linalg as _fl
from funcgrad.scipy.linalg import *  # noqa: F403

for _name in dir(_fl):
    if not _name.startswith("__") and _name not in globals():
        globals()[_name] = getattr(_fl, _name)


def solve_banded(l_and_u, ab, b):
    """SciPy's banded solve (``ab[u + i - j, j] == a[i, j]``) through the dense matrix it stands for;
    differentiable in ``ab`` and ``b``."""
    import funcgrad.numpy as np

    lower, upper = l_and_u
    n = np.shape(ab)[-1]
    a = 0.0
    for k in range(-lower, upper + 1):
        row = ab[upper - k]
        a = a + np.diag(row[k:] if k >= 0 else row[: n + k], k)
    return np.linalg.solve(a, b)


# sqrtm and solve_sylvester, differentiable in both modes (funcgrad's, like JAX's, go through the
# Schur form, which is not differentiable): X = solve_sylvester(A, B, Q) is the solution of the
# linear equation A X + X B = Q, so funcgrad.lax.custom_linear_solve differentiates it implicitly
# (in A, B and Q) while SciPy solves it on the host; sqrtm's tangent is the Sylvester solve
# X dX + dX X = dA, linear in dA (so reverse mode transposes it).
import functools as _functools  # noqa: E402

import numpy as _onp  # noqa: E402
import scipy.linalg as _sla  # noqa: E402

import funcgrad as _funcgrad  # noqa: E402
import funcgrad.numpy as _np  # noqa: E402
from funcgrad import lax as _lax  # noqa: E402
from funcgrad.core import Tracer as _Tracer  # noqa: E402

from ..tracer import getval  # noqa: E402


def _host_sylvester(A, B, Q):
    dtype = _onp.dtype(_np.result_type(A, B, Q))
    out = _funcgrad.ShapeDtypeStruct(_np.shape(Q), dtype)
    return _funcgrad.pure_callback(
        lambda a, b, q: _onp.asarray(_sla.solve_sylvester(a, b, q), dtype=dtype),
        out,
        A,
        B,
        Q,
        vmap_method="sequential",
    )


def solve_sylvester(A, B, Q):
    """The ``X`` with ``A X + X B = Q`` (SciPy's value), differentiable in ``A``, ``B`` and ``Q``."""
    A, B, Q = (_np.asarray(x) for x in (A, B, Q))
    dtype = _np.result_type(A, B, Q, float)
    A, B, Q = (x.astype(dtype) for x in (A, B, Q))
    return _lax.custom_linear_solve(
        lambda X: _np.dot(A, X) + _np.dot(X, B),
        Q,
        lambda matvec, q: _host_sylvester(A, B, q),
        lambda vecmat, q: _host_sylvester(_np.transpose(A), _np.transpose(B), q),
    )


def sqrtm(A, disp=True, blocksize=64):
    """The principal square root, SciPy's value: real when ``A`` (if its value is known) has no
    eigenvalue on the closed negative real axis, else complex. ``dX`` solves ``X dX + dX X = dA``."""
    A = _np.asarray(A)
    value = getval(A)
    dtype = _np.result_type(A, float)
    if not isinstance(value, _Tracer):
        ev = _onp.linalg.eigvals(_onp.asarray(value))
        if _onp.any((_onp.abs(ev.imag) > 0) | (ev.real < 0)):
            dtype = _np.result_type(dtype, complex)
    return _sqrtm(_onp.dtype(dtype), A.astype(dtype))


@_functools.partial(_funcgrad.custom_jvp, nondiff_argnums=(0,))
def _sqrtm(dtype, A):
    out = _funcgrad.ShapeDtypeStruct(_np.shape(A), dtype)
    return _funcgrad.pure_callback(
        lambda a: _onp.asarray(_sla.sqrtm(a), dtype=dtype), out, A, vmap_method="sequential"
    )


@_sqrtm.defjvp
def _sqrtm_jvp(dtype, primals, tangents):
    (A,), (dA,) = primals, tangents
    X = _sqrtm(dtype, A)
    return X, solve_sylvester(X, X, dA)
