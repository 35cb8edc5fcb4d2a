"""``funcgrad.test_util``: JAX's ``jax.test_util`` -- ``check_grads``, ``check_jvp`` and
``check_vjp`` -- with JAX's signatures and JAX's procedure, so a test written for JAX passes or
fails here as it does there.

Layer: surface. Imports the public API (``jvp``, ``vjp``, ``linearize``), the kernel's dtypes and
tree utilities, NumPy and ml_dtypes.

# NOTE: [jax.test_util's procedure]
# As ``jax._src.public_test_util`` (0.10.2): one random direction per check, drawn with
# ``numpy.random.RandomState(0).randn`` in each argument's dtype (a fresh generator per check;
# ``check_vjp`` draws the tangent, then the cotangent, from one); the finite difference
# ``(f(x + eps t) - f(x - eps t)) * (0.5 / eps)`` computed in the arguments' own dtypes (float32
# inputs: a float32 difference, not a float64 one), ``eps = 1e-4``; tolerances per dtype
# (``DEFAULT_GRADIENT_TOLERANCE``: float32 2e-3, float64 1e-5, ...; dtypes it lacks, integers,
# take ``DEFAULT_TOLERANCE``), the larger of the two compared leaves' dtypes (canonicalised: in
# the 32-bit mode a float64 leaf counts as float32), multiplied by the leaf's size, as JAX does;
# ``atol``/``rtol`` replace them (a number) or override some dtypes (a dict). Second-order
# forward checks use the primals themselves as the tangents, as JAX's; ``modes`` may also hold
# ``"lin"`` (the JVP through ``linearize``). ``funcgrad.testing.check_grads`` is funcgrad's own
# stricter helper (float64 differences), for funcgrad's tests.

>>> import funcgrad, funcgrad.numpy as fnp
>>> check_grads(fnp.tanh, (fnp.array([0.3, -1.0]),), order=2, modes=["fwd", "rev"])
>>> check_jvp(fnp.sin, functools.partial(funcgrad.jvp, fnp.sin), (0.5,))
>>> check_vjp(fnp.sin, functools.partial(funcgrad.vjp, fnp.sin), (0.5,))
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

from funcgrad import api
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu

__all__ = ["check_grads", "check_jvp", "check_vjp"]


def __dir__():  # the public names only
    return list(__all__)


EPS = 1e-4


def _table(pairs) -> dict:
    out = {}
    for name, tol in pairs:
        dtype = getattr(ml_dtypes, name, None) if isinstance(name, str) else name
        if dtype is not None:
            out[np.dtype(dtype)] = tol
    return out


_LOW_FLOATS = ["float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz"]
_LOW_FLOATS += ["float8_e5m2", "float8_e5m2fnuz"]
# JAX's default_tolerance(): exact for integers and bools, per float width otherwise.
DEFAULT_TOLERANCE = _table(
    [(np.bool_, 0), (_dt.float0, 0)]
    + [(t, 0) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)]
    + [(n, 0) for n in ("int2", "int4", "uint2", "uint4", "int1", "uint1")]
    + [("float4_e2m1fn", 1.0), ("float8_e8m0fnu", 1.0)]
    + [(n, 1e-1) for n in _LOW_FLOATS]
    + [("bfloat16", 1e-2), (np.float16, 1e-3), (np.float32, 1e-6), (np.float64, 1e-15)]
    + [(np.complex64, 1e-6), (np.complex128, 1e-15)]
)
# JAX's default_gradient_tolerance.
DEFAULT_GRADIENT_TOLERANCE = _table(
    [("float4_e2m1fn", 1.0), ("float8_e8m0fnu", 1.0)]
    + [(n, 1e-1) for n in _LOW_FLOATS]
    + [("bfloat16", 1e-1), (np.float16, 1e-2), (np.float32, 2e-3), (np.float64, 1e-5)]
    + [(np.complex64, 1e-3), (np.complex128, 1e-5)]
)


def _is_python_scalar(x) -> bool:
    return type(x) in _dt.python_scalar_types


def _dtype(x) -> np.dtype:
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    if _is_python_scalar(x):
        return np.dtype(_dt.python_scalar_dtype(x))
    return np.asarray(x).dtype


def _tolerance(dtype, tol) -> float:
    if tol is not None and not isinstance(tol, dict):
        return tol
    tol = {np.dtype(k): v for k, v in (tol or {}).items()}
    dtype = _dt.canonical(np.dtype(dtype))
    return tol.get(dtype, DEFAULT_TOLERANCE.get(dtype, 0))


def _merged(tol) -> dict | float:
    """``tol`` over the gradient defaults: a number replaces them, a dict overrides some dtypes."""
    if tol is None:
        return dict(DEFAULT_GRADIENT_TOLERANCE)
    if not isinstance(tol, dict):
        return tol
    return {**DEFAULT_GRADIENT_TOLERANCE, **{np.dtype(k): v for k, v in tol.items()}}


def _wide(x: np.ndarray) -> np.ndarray:
    # ml_dtypes' floats compare as float32, the 1/2/4-bit integers as 8-bit ones (as JAX).
    if _dt.is_narrow(x.dtype):
        if x.dtype.kind in "iu" or "int" in x.dtype.name:
            return x.astype(np.uint8 if x.dtype.name.startswith("u") else np.int8)
        return x.astype(np.float32)
    return x


def _close_leaf(a, b, atol, rtol, err_msg) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{err_msg}: shapes {a.shape} and {b.shape}"
    if a.dtype == b.dtype == _dt.float0:
        np.testing.assert_array_equal(a, b, err_msg=err_msg)
        return
    atol = max(_tolerance(a.dtype, atol), _tolerance(b.dtype, atol)) * a.size
    rtol = max(_tolerance(a.dtype, rtol), _tolerance(b.dtype, rtol)) * b.size
    kw = {}
    if atol:  # (a zero tolerance leaves NumPy's default, as JAX's check does)
        kw["atol"] = atol
    if rtol:
        kw["rtol"] = rtol
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(_wide(a), _wide(b), err_msg=err_msg, **kw)


def _check_close(xs, ys, atol, rtol, err_msg) -> None:
    tu.tree_map(lambda x, y: _close_leaf(x, y, atol, rtol, err_msg), xs, ys)


def _check_dtypes_match(xs, ys) -> None:
    def same(x, y):
        assert _dt.canonical(_dtype(x)) == _dt.canonical(_dtype(y)), f"dtypes {_dtype(x)} and {_dtype(y)}"

    tu.tree_map(same, xs, ys)


def _keeping_type(op):
    """``op`` on leaves, the result in the first operand's dtype (a Python scalar stays one)."""

    def leaf(*xs):
        out = np.array(op(*xs), dtype=_dtype(xs[0]))
        return out.item() if all(_is_python_scalar(x) for x in xs) else out

    return leaf


def _scale(xs, a):
    def leaf(x):
        dtype = _dtype(x)
        out = np.multiply(x, np.array(a, dtype=dtype), dtype=dtype)
        return out.item() if _is_python_scalar(x) else out

    return tu.tree_map(leaf, xs)


def _difference(x, y):
    # inf - inf counts as 0 (a function infinite at both points has no finite difference).
    dtype = _dtype(x)
    with np.errstate(invalid="ignore"):
        return np.where(np.equal(x, y), np.array(0, dtype), np.subtract(x, y, dtype=dtype))


def _random_like(rng: np.random.RandomState, x):
    shape, dtype = np.shape(x), _dtype(x)
    draw = lambda: np.asarray(rng.randn(*shape), dtype=dtype)  # noqa: E731
    out = draw() + dtype.type(1.0j) * draw() if np.issubdtype(dtype, np.complexfloating) else draw()
    return out.item() if _is_python_scalar(x) else out


def _inner(xs, ys):
    products = tu.tree_map(
        lambda x, y: np.real(np.dot(np.conj(x).reshape(-1), np.asarray(y).reshape(-1))), xs, ys
    )
    return functools.reduce(np.add, tu.tree_leaves(products))


def numerical_jvp(f, primals, tangents, eps=EPS):
    """``(f(x + eps t) - f(x - eps t)) * (0.5 / eps)``, in the arguments' own dtypes (JAX's).

    >>> float(numerical_jvp(np.exp, (0.0,), (1.0,)))  # doctest: +ELLIPSIS
    1.0000000016...
    """
    delta = _scale(tangents, eps)
    f_pos = f(*tu.tree_map(_keeping_type(np.add), primals, delta))
    f_neg = f(*tu.tree_map(_keeping_type(np.subtract), primals, delta))
    return _scale(tu.tree_map(_difference, f_pos, f_neg), 0.5 / eps)


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Check ``f_jvp(primals, tangents)`` (e.g. ``functools.partial(funcgrad.jvp, f)``) against
    ``f`` and a finite difference along one random tangent (NOTE: [jax.test_util's procedure]);
    raises ``AssertionError`` if they disagree.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> check_jvp(fnp.exp, functools.partial(funcgrad.jvp, fnp.exp), (np.array([0.0, 1.0]),))
    """
    atol, rtol = _merged(atol), _merged(rtol)
    rng = np.random.RandomState(0)
    tangent = tu.tree_map(functools.partial(_random_like, rng), args)
    v_out, t_out = f_jvp(args, tangent)
    _check_dtypes_match(v_out, t_out)
    v_expected = f(*args)
    _check_dtypes_match(v_out, v_expected)
    t_expected = numerical_jvp(f, args, tangent, eps=eps)
    _check_close(v_out, v_expected, atol, rtol, f"{err_msg} primal" if err_msg else "primal")
    _check_close(t_out, t_expected, atol, rtol, f"{err_msg} tangent" if err_msg else "tangent")


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Check ``f_vjp(*primals)`` (e.g. ``functools.partial(funcgrad.vjp, f)``) by the dot-product
    test ``<t, vjp(ct)> == <finite difference along t, ct>`` for one random ``t`` and ``ct``
    (NOTE: [jax.test_util's procedure]); raises ``AssertionError`` if they disagree.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> check_vjp(fnp.tanh, functools.partial(funcgrad.vjp, fnp.tanh), (np.array([0.0, 1.0]),))
    """
    atol, rtol = _merged(atol), _merged(rtol)
    draw = functools.partial(_random_like, np.random.RandomState(0))
    v_out, vjp_fn = f_vjp(*args)
    _check_close(v_out, f(*args), atol, rtol, f"{err_msg} primal" if err_msg else "primal")
    tangent = tu.tree_map(draw, args)
    tangent_out = numerical_jvp(f, args, tangent, eps=eps)
    cotangent = tu.tree_map(draw, v_out)
    conj = functools.partial(tu.tree_map, _keeping_type(np.conj))
    cotangent_out = conj(vjp_fn(conj(cotangent)))
    ip, ip_expected = _inner(tangent, cotangent_out), _inner(tangent_out, cotangent)
    _check_close(
        ip, ip_expected, atol, rtol, f"{err_msg} cotangent projection" if err_msg else "cotangent projection"
    )


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check ``f``'s derivatives up to ``order`` against finite differences, each along one
    random direction: forward (``"fwd"``: ``jvp``), reverse (``"rev"``: ``vjp``) and ``"lin"``
    (``linearize``), as ``jax.test_util.check_grads`` (NOTE: [jax.test_util's procedure]).
    Raises ``AssertionError`` naming the derivative that disagrees.

    >>> import funcgrad.numpy as fnp
    >>> check_grads(lambda x: fnp.sin(x) * x, (fnp.array([0.5, 1.0]),), order=2)
    """
    args = tuple(args)
    eps = eps or EPS
    jvp_check = functools.partial(check_jvp, atol=atol, rtol=rtol, eps=eps)
    vjp_check = functools.partial(check_vjp, atol=atol, rtol=rtol, eps=eps)

    def jvp_from_lin(f, primals, tangents):
        out, f_lin = api.linearize(f, *primals)
        return out, f_lin(*tangents)

    def check(f, args, order, err_msg=""):
        if "fwd" in modes:
            msg = f"JVP of {err_msg}" if err_msg else "JVP"
            jvp_check(f, functools.partial(api.jvp, f), args, err_msg=msg)
            if order > 1:
                check(functools.partial(api.jvp, f), (args, args), order - 1, msg)
        if "rev" in modes:
            msg = f"VJP of {err_msg}" if err_msg else "VJP"
            vjp_check(f, functools.partial(api.vjp, f), args, err_msg=msg)
            if order > 1:

                def f_vjp(*a):
                    out, vjp_fn = api.vjp(f, *a)
                    return vjp_fn(out)

                check(f_vjp, args, order - 1, msg)
        if "lin" in modes:
            msg = f"LIN of {err_msg}" if err_msg else "LIN"
            jvp_check(f, functools.partial(jvp_from_lin, f), args, err_msg=msg)
            if order > 1:
                check(functools.partial(jvp_from_lin, f), (args, args), order - 1, msg)

    check(f, args, order)
