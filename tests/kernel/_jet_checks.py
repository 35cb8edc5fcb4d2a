"""The two references of tests/kernel/test_jet_conformance*.py: the Taylor expansion computed the
slow way (nested forward derivatives of ``f(x0 + sum_k t^k x_k / k!)`` in ``t`` at 0) and
``jax.experimental.jet`` itself (x64), with JAX's ``unary_check``/``binary_check`` drivers.
``FG`` and ``_jax_ns()`` are the two namespaces a case's ``build`` receives."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

import funcgrad
import funcgrad.nn
import funcgrad.numpy as fnp
from funcgrad import lax as flax
from funcgrad.experimental.jet import jet
from funcgrad.scipy import special as fsp

FG = SimpleNamespace(
    np=fnp, lax=flax, special=fsp, jit=funcgrad.jit, grad=funcgrad.grad, jacfwd=funcgrad.jacfwd,
    custom_jvp=funcgrad.custom_jvp, nn=funcgrad.nn, device_put=funcgrad.device_put, name="funcgrad",
)  # fmt: skip


def _jax_ns():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.nn  # noqa: PLC0415 - the oracle, only in tests
    import jax.scipy.special  # noqa: PLC0415
    from jax.experimental import jet as jax_jet  # noqa: PLC0415

    return SimpleNamespace(
        np=jax.numpy, lax=jax.lax, special=jax.scipy.special, jit=jax.jit, grad=jax.grad,
        jacfwd=jax.jacfwd, custom_jvp=jax.custom_jvp, nn=jax.nn, device_put=jax.device_put,
        jet=jax_jet.jet, name="jax",
    )  # fmt: skip


def _nested_jvp_expansion(fun, primals, series):
    """``(f(x0), [d^k/dt^k f(x(t)) at 0 for k = 1..K])`` with ``x(t) = x0 + sum t^k x_k / k!``,
    each derivative by ``k`` nested ``jacfwd`` in ``t``. The nudged argument is cast back to the
    primal's dtype, so integer and boolean arguments do not vary."""
    (order,) = {len(s) for s in series}
    primals = [fnp.asarray(p) for p in primals]

    def along_path(t):
        args = []
        for x, terms in zip(primals, series):
            shift = sum(t ** (k + 1) * fnp.asarray(terms[k]) / math.factorial(k + 1) for k in range(order))
            args.append((x + shift).astype(x.dtype))
        return fun(*args)

    terms_out = []
    for k in range(order):
        g = along_path
        for _ in range(k + 1):
            g = funcgrad.jacfwd(g)
        terms_out.append(g(0.0))
    return fun(*primals), terms_out


def _per_leaf(y, terms_by_order):
    """``[tree per order]`` -> the tree of ``y`` with a list of terms at each leaf (jet's layout)."""
    leaves, tree = funcgrad.tree_util.tree_flatten(y)
    per_order = [tree.flatten_up_to(t) for t in terms_by_order]
    return funcgrad.tree_util.tree_unflatten(tree, [[p[i] for p in per_order] for i in range(len(leaves))])


def _finite_or_nan(x):
    x = np.asarray(x)
    return np.where(np.isfinite(x), x, np.nan) if np.issubdtype(x.dtype, np.inexact) else x


def _assert_trees_close(got, want, rtol, atol, finite_only=False):
    g_leaves, g_tree = funcgrad.tree_util.tree_flatten(got)
    w_leaves, w_tree = funcgrad.tree_util.tree_flatten(want)
    assert g_tree == w_tree, (g_tree, w_tree)
    for a, b in zip(g_leaves, w_leaves):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, (a.shape, b.shape)
        if finite_only:
            a, b = _finite_or_nan(a), _finite_or_nan(b)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=finite_only)


def check_jet(build, primals, series, *, jax=True, rtol=1e-7, atol=1e-7, finite_only=False):
    """``build(ns)`` returns the function for a library namespace (funcgrad's or jax's)."""
    fun = build(FG)
    y, terms = jet(fun, tuple(primals), tuple(series))
    want_y, want_terms = _nested_jvp_expansion(fun, primals, series)
    _assert_trees_close(y, want_y, rtol, atol, finite_only)
    _assert_trees_close(terms, _per_leaf(want_y, want_terms), rtol, atol, finite_only)
    # The output dtypes are the function's, and the terms have those of the expansion's terms.
    for a, b in zip(funcgrad.tree_util.tree_leaves(y), funcgrad.tree_util.tree_leaves(want_y)):
        assert np.asarray(a).dtype == np.asarray(b).dtype
    want_leaves = funcgrad.tree_util.tree_leaves(_per_leaf(want_y, want_terms))
    for a, b in zip(funcgrad.tree_util.tree_leaves(terms), want_leaves):
        assert np.asarray(a).dtype == np.asarray(b).dtype, (np.asarray(a).dtype, np.asarray(b).dtype)
    if jax:
        J = _jax_ns()
        jy, jterms = _jax_jet(J, build, tuple(primals), tuple(series))
        _assert_trees_close(y, jy, rtol, atol, finite_only)
        _assert_trees_close(terms, jterms, rtol, atol, finite_only)
    return y, terms


def _jax_jet(J, build, primals, series):
    """jax's jet of ``build(J)`` as one compiled program: eagerly jax compiles a program per
    operation of the function and of each Taylor rule, which was most of these files' time. Where
    a function cannot be traced with abstract arguments (a Python branch on a value), the oracle
    runs eagerly, as before."""
    import jax.errors  # noqa: PLC0415 - the oracle, only in tests

    try:
        return J.jit(lambda p, s: J.jet(build(J), p, s))(primals, series)
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerBoolConversionError, TypeError):
        return J.jet(build(J), primals, series)


def _transform(lims, u):
    return u * (lims[1] - lims[0]) + lims[0]


def _uniform(rng, lims, shape, dtype):
    if np.issubdtype(dtype, np.complexfloating):
        return (_transform(lims, rng.rand(*shape)) + 1j * _transform(lims, rng.rand(*shape))).astype(dtype)
    return _transform(lims, rng.rand(*shape)).astype(dtype)


def unary_check(build, lims=(-2, 2), order=3, dtype=None, real=np.float64, **kw):
    """JAX's ``unary_check``: a (2, 3) primal uniform in ``lims``, ``order`` Gaussian terms (or,
    with a dtype, uniform ones). ``real`` is the dtype of the default (real) case."""
    rng = np.random.RandomState(0)
    dims = (2, 3)
    if dtype is None:
        x = _transform(lims, rng.rand(*dims)).astype(real)
        terms = [rng.randn(*dims).astype(real) for _ in range(order)]
    else:
        x = _uniform(rng, lims, dims, dtype)
        terms = [_uniform(rng, lims, dims, dtype) for _ in range(order)]
    return check_jet(build, (x,), (terms,), **kw)


def binary_check(build, lims=(-2, 2), order=3, finite=True, real=np.float64, **kw):
    """JAX's ``binary_check``; ``lims`` may be a pair of ranges, one per argument."""
    rng = np.random.RandomState(0)
    dims = (2, 3)
    x_lims, y_lims = lims if isinstance(lims[0], tuple | list) else (lims, lims)
    primals = (_transform(x_lims, rng.rand(*dims)), _transform(y_lims, rng.rand(*dims)))
    series = ([rng.randn(*dims) for _ in range(order)], [rng.randn(*dims) for _ in range(order)])
    primals = tuple(p.astype(real) for p in primals)
    series = tuple([t.astype(real) for t in terms] for terms in series)
    return check_jet(build, primals, series, finite_only=not finite, **kw)
