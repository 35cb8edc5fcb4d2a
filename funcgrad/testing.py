"""Testing derivatives: ``check_grads`` (finite differences, ``jax.test_util.check_grads``
semantics), hypothesis strategies for arrays, and ``check_rule`` for custom_jvp/custom_vjp rules.

Layer: surface. Imports the kernel (core, dtypes, tree_util, custom_derivatives) and funcgrad.api;
``hypothesis`` is an optional dependency (only the strategies and ``check_rule`` with a strategy
need it).

Finite differences are central differences evaluated in float64 whatever the arguments' dtype, so
they are a reference the derivative under test cannot agree with by accident; the tolerance is
that of the least precise dtype compared (float32: 2e-3, float64: 1e-5, as in JAX).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from funcgrad import api
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.custom_derivatives import custom_jvp, custom_vjp

try:  # optional: only strategies and check_rule(strategy) need it
    import hypothesis
    import hypothesis.extra.numpy as hnp
    import hypothesis.strategies as st
except ImportError:  # pragma: no cover - exercised only without the test extras
    hypothesis = hnp = st = None

__all__ = [
    "check_grads",
    "check_jvp",
    "check_vjp",
    "numerical_jvp",
    "check_close",
    "check_rule",
    "arrays",
    "shapes",
    "float_dtypes",
    "DOMAINS",
]
# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = ("check_grads",)


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


EPS = 1e-4

_GRAD_TOL = {
    np.dtype(np.float16): 1e-2,
    np.dtype(np.float32): 2e-3,
    np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3,
    np.dtype(np.complex128): 1e-5,
}


def _tol(dtype) -> float:
    dtype = np.dtype(dtype)
    if dtype in _GRAD_TOL:
        return _GRAD_TOL[dtype]
    return 1e-1 if dtype.kind == "V" or "bfloat16" in dtype.name else 1e-5


def _np(x) -> np.ndarray:
    return np.asarray(x)


def _inexact(x) -> bool:
    return _dt.is_inexact(core.get_aval(x).dtype)


def check_close(actual, expected, atol=None, rtol=None, err_msg: str = "") -> None:
    """``assert_allclose`` over pytrees; default tolerances are those of the less precise dtype.

    >>> check_close({"a": np.float32(1.0)}, {"a": 1.0005})  # within float32's 2e-3
    """
    a_leaves, e_leaves = tu.tree_leaves(actual), tu.tree_leaves(expected)
    if len(a_leaves) != len(e_leaves):
        raise AssertionError(f"{err_msg}: {len(a_leaves)} leaves, expected {len(e_leaves)}")
    for a, e in zip(a_leaves, e_leaves):
        a, e = _np(a), _np(e)
        if a.dtype == _dt.float0 or e.dtype == _dt.float0:
            continue
        tol = max(_tol(a.dtype) if a.dtype.kind in "fc" else 0, _tol(e.dtype) if e.dtype.kind in "fc" else 0)
        tol = tol or 1e-5
        np.testing.assert_allclose(
            a.astype(np.result_type(a.dtype, e.dtype)) if a.dtype.kind != "V" else a.astype(np.float64),
            e,
            atol=tol if atol is None else atol,
            rtol=tol if rtol is None else rtol,
            err_msg=err_msg,
        )


def _rand_like(rng: np.random.Generator, tree):
    def leaf(x):
        aval = core.get_aval(x)
        if not _dt.is_inexact(aval.dtype):
            return np.zeros(aval.shape, _dt.float0)
        v = rng.standard_normal(aval.shape)
        if aval.dtype.kind == "c":
            v = v + 1j * rng.standard_normal(aval.shape)
        return np.asarray(v).astype(aval.dtype)

    return tu.tree_map(leaf, tree)


def _upcast(x):
    """Inexact leaves in float64/complex128 (the precision of the finite differences)."""
    if not core.is_array_like(x) or not _inexact(x):
        return x
    return _np(x).astype(np.complex128 if _np(x).dtype.kind == "c" else np.float64)


def _shift(args, tangents, scale: float):
    def leaf(x, t):
        t = _np(t)
        if t.dtype == _dt.float0 or not core.is_array_like(x) or not _inexact(x):
            return x
        return _upcast(x) + scale * t.astype(_upcast(x).dtype)

    return tu.tree_map(leaf, args, tangents)


def numerical_jvp(f: Callable, primals: Sequence, tangents: Sequence, eps: float = EPS):
    """Central difference ``(f(x + eps t) - f(x - eps t)) / 2 eps`` in float64.

    >>> import funcgrad.numpy as fnp
    >>> round(float(numerical_jvp(fnp.sin, (0.0,), (1.0,))), 6)
    1.0
    """
    f_pos = f(*_shift(tuple(primals), tuple(tangents), eps))
    f_neg = f(*_shift(tuple(primals), tuple(tangents), -eps))
    # float0 outputs (the tangents of integer outputs, in higher-order checks) have no difference.
    return tu.tree_map(
        lambda p, n: p if _np(p).dtype == _dt.float0 else (_upcast(p) - _upcast(n)) / (2 * eps), f_pos, f_neg
    )


def _conj(x):
    x = _np(x)
    return np.conj(x) if x.dtype.kind == "c" else x


def _inner(xs, ys) -> float:
    total = 0.0
    for x, y in zip(tu.tree_leaves(xs), tu.tree_leaves(ys)):
        x, y = _np(x), _np(y)
        if x.dtype == _dt.float0 or y.dtype == _dt.float0:
            continue
        total += float(np.real(np.vdot(x.astype(np.complex128).ravel(), y.astype(np.complex128).ravel())))
    return total


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg: str = "") -> None:
    """``f_jvp(primals, tangents)`` against ``f`` and a central difference along a random tangent
    (``jax.test_util.check_jvp``'s signature; ``err_msg`` prefixes the failure message).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> check_jvp(fnp.exp, lambda p, t: funcgrad.jvp(fnp.exp, p, t), (np.array([0.0, 1.0]),))
    """
    err_msg = err_msg or "JVP"
    rng = np.random.default_rng(0)
    tangent = _rand_like(rng, args)
    v_out, t_out = f_jvp(args, tangent)
    check_close(v_out, f(*args), atol, rtol, f"{err_msg} primal")
    check_close(t_out, numerical_jvp(f, args, tangent, eps), atol, rtol, f"{err_msg} tangent")


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg: str = "") -> None:
    """The dot-product test: ``<t, vjp(ct)> == <jvp_numerical(t), ct>`` for random ``t``, ``ct``
    (``jax.test_util.check_vjp``'s signature; ``err_msg`` prefixes the failure message).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> check_vjp(fnp.tanh, lambda *a: funcgrad.vjp(fnp.tanh, *a), (np.array([0.0, 1.0]),))
    """
    err_msg = err_msg or "VJP"
    rng = np.random.default_rng(0)
    v_out, vjp_fn = f_vjp(*args)
    check_close(v_out, f(*args), atol, rtol, f"{err_msg} primal")
    tangent = _rand_like(rng, args)
    tangent_out = numerical_jvp(f, args, tangent, eps)
    cotangent = _rand_like(rng, v_out)
    cotangent_out = tu.tree_map(_conj, vjp_fn(tu.tree_map(_conj, cotangent)))
    ip = _inner(tangent, cotangent_out)
    ip_expected = _inner(tangent_out, cotangent)
    dtypes = [_np(x).dtype for x in tu.tree_leaves((v_out, args)) if _np(x).dtype.kind in "fc"]
    tol = max([_tol(d) for d in dtypes] or [1e-5])
    np.testing.assert_allclose(
        ip, ip_expected, atol=tol if atol is None else atol, rtol=tol if rtol is None else rtol,
        err_msg=f"{err_msg}: <t, vjp(ct)> != <(f(x+eps t) - f(x-eps t)) / 2eps, ct>",
    )  # fmt: skip


def check_grads(f: Callable, args, order: int, modes=("fwd", "rev"), atol=None, rtol=None, eps=None) -> None:
    """Check ``f``'s forward (``"fwd"``) and reverse (``"rev"``) derivatives against central
    finite differences in float64, recursively up to ``order`` (``order=2`` checks the JVP of the
    JVP and the VJP of the VJP). ``args`` is a tuple of (pytrees of) arrays. Raises
    ``AssertionError`` naming the derivative that disagrees. Same semantics as
    ``jax.test_util.check_grads``.

    >>> import funcgrad.numpy as fnp
    >>> check_grads(lambda x: fnp.sin(x) * x, (fnp.array([0.5, 1.0]),), order=2)
    """
    args = tuple(args)
    eps = eps or EPS

    def _check(f, args, order, err_msg):
        if "fwd" in modes:
            msg = f"JVP of {err_msg}" if err_msg else "JVP"
            check_jvp(f, lambda p, t: api.jvp(f, p, t), args, atol, rtol, eps, msg)
            if order > 1:
                _check(
                    lambda p, t: api.jvp(f, p, t),
                    (args, _rand_like(np.random.default_rng(1), args)),
                    order - 1,
                    msg,
                )
        if "rev" in modes:
            msg = f"VJP of {err_msg}" if err_msg else "VJP"
            check_vjp(f, lambda *a: api.vjp(f, *a), args, atol, rtol, eps, msg)
            if order > 1:

                def f_vjp(*a):
                    out, vjp_fn = api.vjp(f, *a)
                    return vjp_fn(out)

                _check(f_vjp, args, order - 1, msg)

    unknown = set(modes) - {"fwd", "rev"}
    if unknown:
        raise ValueError(f"check_grads: modes must be 'fwd' and/or 'rev', got {sorted(unknown)}")
    _check(f, args, order, "")


# ----------------------------------------------------------------------------------------------
# Hypothesis strategies

DOMAINS = {
    "real": (-3.0, 3.0),
    "positive": (0.1, 3.0),  # log, sqrt, 1/x: away from the singularity at 0
    "unit": (-0.9, 0.9),  # arcsin, arctanh: inside (-1, 1)
    "above_one": (1.1, 3.0),  # arccosh
}


def _need_hypothesis():
    if hypothesis is None:
        raise ImportError("funcgrad.testing strategies need hypothesis: pip install hypothesis")


def float_dtypes(include_float16: bool = False):
    """A strategy of real floating dtypes (float32, float64, optionally float16).

    >>> from hypothesis import given
    >>> @given(float_dtypes())
    ... def test(dtype):
    ...     assert dtype in (np.float32, np.float64)
    >>> test()
    """
    _need_hypothesis()
    return st.sampled_from(
        [np.dtype(np.float32), np.dtype(np.float64)] + ([np.dtype(np.float16)] if include_float16 else [])
    )


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 4):
    """A strategy of array shapes (``hypothesis.extra.numpy.array_shapes`` with small sides).

    >>> from hypothesis import given
    >>> @given(shapes(min_dims=2, max_dims=2))
    ... def test(shape):
    ...     assert len(shape) == 2 and all(1 <= n <= 4 for n in shape)
    >>> test()
    """
    _need_hypothesis()
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def arrays(dtype=np.float64, shape=None, domain="real"):
    """A strategy of NumPy arrays of ``dtype`` (a dtype or a strategy of dtypes) and ``shape`` (a
    shape, or a strategy; default ``shapes()``), elements in ``domain``: a name from ``DOMAINS``
    or a ``(low, high)`` pair. Elements are finite and well inside the domain, so finite
    differences are meaningful.

    >>> from hypothesis import given
    >>> @given(arrays(np.float32, (2, 3), domain="positive"))
    ... def test(x):
    ...     assert x.shape == (2, 3) and x.dtype == np.float32 and (x > 0).all()
    >>> test()
    """
    _need_hypothesis()
    lo, hi = DOMAINS[domain] if isinstance(domain, str) else domain
    dtypes = dtype if isinstance(dtype, st.SearchStrategy) else st.just(np.dtype(dtype))
    shape_st = (
        shapes()
        if shape is None
        else shape
        if isinstance(shape, st.SearchStrategy)
        else st.just(tuple(shape))
    )

    @st.composite
    def draw(data):
        dt, shp = data(dtypes), data(shape_st)
        width = 8 * np.dtype(dt).itemsize if np.dtype(dt).kind == "f" else 64
        lo_, hi_ = (float(np.asarray(v, dt)) for v in (lo, hi))
        elements = st.floats(lo_, hi_, width=width, allow_nan=False, allow_infinity=False)
        return data(hnp.arrays(dt, shp, elements=elements))

    return draw()


# ----------------------------------------------------------------------------------------------
# check_rule


def _stack_twice(args):
    return tu.tree_map(lambda x: np.stack([_np(x), _np(x)]) if core.is_array_like(x) else x, args)


def _check_rule_once(fun, args, modes, order, atol, rtol, eps, name):
    def run(what, thunk):
        try:
            thunk()
        except AssertionError as e:
            raise AssertionError(
                f"check_rule({name}): {what} disagrees with finite differences\n{e}"
            ) from None

    run(
        "the derivative (grad of grad for order 2)",
        lambda: check_grads(fun, args, order, modes, atol, rtol, eps),
    )
    jitted = api.jit(fun)
    run("the derivative under jit", lambda: check_grads(jitted, args, 1, modes, atol, rtol, eps))
    batched_args = _stack_twice(args)
    vmapped = api.vmap(fun)

    def vmap_matches_loop():
        one = fun(*args)
        check_close(
            vmapped(*batched_args), tu.tree_map(lambda o: np.stack([_np(o), _np(o)]), one), atol, rtol, "vmap"
        )
        check_grads(vmapped, batched_args, 1, modes, atol, rtol, eps)

    run("the derivative under vmap", vmap_matches_loop)


def check_rule(fun: Callable, *example_args, strategy=None, order: int = 2, modes=None, atol=None, rtol=None,
               eps=None, max_examples: int | None = None) -> None:  # fmt: skip
    """Property-test a function with a custom derivative (``custom_jvp``/``custom_vjp``, or any
    function) against central finite differences: its derivatives to ``order`` (grad of grad),
    under ``jit``, and under ``vmap``. Give example arguments, or a hypothesis strategy of argument
    tuples (``strategy=`` or as the only positional argument). Modes default to reverse only for a
    ``custom_vjp`` function (it has no forward-mode rule) and to both otherwise. Raises
    ``AssertionError`` naming the transformation whose derivative is wrong.

    >>> import funcgrad.numpy as fnp
    >>> @custom_vjp
    ... def log1pexp(x):
    ...     return fnp.log1p(fnp.exp(x))
    >>> log1pexp.defvjp(lambda x: (log1pexp(x), x), lambda x, g: (g / (1 + fnp.exp(-x)),))
    >>> check_rule(log1pexp, np.array([-1.0, 0.5]))
    """
    if (
        strategy is None
        and len(example_args) == 1
        and st is not None
        and isinstance(example_args[0], st.SearchStrategy)
    ):
        strategy, example_args = example_args[0], ()
    if modes is None:
        modes = ("rev",) if isinstance(fun, custom_vjp) else ("fwd", "rev")
    name = getattr(fun, "__name__", type(fun).__name__)
    kind = (
        "custom_vjp"
        if isinstance(fun, custom_vjp)
        else "custom_jvp"
        if isinstance(fun, custom_jvp)
        else "function"
    )
    name = f"{kind} {name}"
    if example_args:
        _check_rule_once(fun, tuple(example_args), modes, order, atol, rtol, eps, name)
    if strategy is not None:
        _need_hypothesis()

        def prop(args):
            _check_rule_once(
                fun,
                tuple(args) if isinstance(args, tuple | list) else (args,),
                modes,
                order,
                atol,
                rtol,
                eps,
                name,
            )

        test = hypothesis.given(strategy)(prop)
        if max_examples is not None:
            test = hypothesis.settings(max_examples=max_examples)(test)
        test()
    if not example_args and strategy is None:
        raise TypeError("check_rule needs example arguments or a hypothesis strategy of argument tuples")
