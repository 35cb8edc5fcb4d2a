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


# sqrtm and solve_sylvester with autograd's derivatives (funcgrad's, like JAX's, go through the
# Schur form, which is not differentiable): SciPy's values on the host, autograd's VJPs.
import numpy as _onp  # noqa: E402
import scipy.linalg as _sla  # noqa: E402

import funcgrad as _funcgrad  # noqa: E402
import funcgrad.numpy as _np  # noqa: E402

from ..core import defvjp as _defvjp  # noqa: E402
from ..core import defvjp_argnums as _defvjp_argnums  # noqa: E402
from ..tracer import primitive as _primitive  # noqa: E402


def _host_matrix(fun, name):
    def call(*args, **kwargs):
        args = [_np.asarray(a, dtype=float) for a in args]
        out = _funcgrad.ShapeDtypeStruct(_np.shape(args[-1]), _onp.float64)
        return _funcgrad.pure_callback(
            lambda *v: _onp.asarray(fun(*v, **kwargs), dtype=_onp.float64),
            out,
            *args,
            vmap_method="sequential",
        )

    call.__name__ = name
    return _primitive(call)


solve_sylvester = _host_matrix(_sla.solve_sylvester, "solve_sylvester")
sqrtm = _host_matrix(lambda a: _onp.real(_sla.sqrtm(a)), "sqrtm")
_defvjp(sqrtm, lambda ans, A, **kw: lambda g: solve_sylvester(_np.transpose(ans), _np.transpose(ans), g))


def _sylvester_vjp(argnums, ans, args, kwargs):
    A, B, _ = args

    def vjp(g):
        q = solve_sylvester(_np.transpose(A), _np.transpose(B), g)
        parts = {0: -_np.dot(q, _np.transpose(ans)), 1: -_np.dot(_np.transpose(ans), q), 2: q}
        return tuple(parts[n] for n in argnums)

    return vjp


_defvjp_argnums(solve_sylvester, _sylvester_vjp)
