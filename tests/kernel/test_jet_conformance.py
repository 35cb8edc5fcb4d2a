"""``funcgrad.jet`` checked the way JAX checks ``jax.experimental.jet`` (its ``tests/jet_test.py``
and the module's docstring), case by case: the same functions, primal ranges, series shapes and
orders, at JAX's tolerances or tighter (float64 here; the unary and binary tables and conv run in
float32 too).

Each case is checked two ways:

- against the Taylor expansion computed the slow way, by nested forward derivatives of
  ``f(x0 + sum_k t^k x_k / k!)`` in ``t`` at 0 (``_nested_jvp_expansion``, funcgrad's own
  ``jacfwd``, as JAX's tests use jax's), values and dtypes;
- against ``jax.experimental.jet`` itself (x64), where it can run the case. Where it cannot (no
  rule for a primitive, a rule that fails, custom_jvp functions) or is wrong (nan at a point
  where the expansion is finite), the case says ``jax=False`` / ``False`` with the reason beside
  it, and funcgrad is held to the nested-jvp expansion alone.

Beyond JAX's file: primitives it does not reach (``cumlogsumexp``, ``sort``, ``lgamma``,
``digamma``, ``scatter``, ``top_k``, scipy.special functions, ...), ties, singular points, complex
primals, ``custom_jvp``/``custom_vjp`` functions, nested ``jet``, ``jit`` of ``jet``, pytree
arguments, ``factorial_scaled=False``, symbolic zeros, integer and boolean inputs and outputs,
scalar terms and arrays of terms, and the error cases.
"""

from __future__ import annotations

import math
from functools import partial
from types import SimpleNamespace

import numpy as np
import pytest

import funcgrad
import funcgrad.nn
import funcgrad.numpy as fnp
from funcgrad import lax as flax
from funcgrad.experimental.jet import fact, jet, jet2, zero_series, zero_term
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


# ----------------------------------------------------------------------------------------------
# The two references


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
        jy, jterms = J.jet(build(J), tuple(primals), tuple(series))
        _assert_trees_close(y, jy, rtol, atol, finite_only)
        _assert_trees_close(terms, jterms, rtol, atol, finite_only)
    return y, terms


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


# ----------------------------------------------------------------------------------------------
# Bilinear: dot and conv


def test_dot():
    rng = np.random.RandomState(0)
    x1, x2 = rng.randn(2, 3), rng.randn(3, 4)
    series = ([rng.randn(2, 3) for _ in range(3)], [rng.randn(3, 4) for _ in range(3)])
    check_jet(lambda m: m.np.dot, (x1, x2), series)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_conv(dtype):
    # stax.Conv(3, (2, 2), padding='VALID') on a (1, 5, 5, 1) NHWC input: HWIO kernel, bias (1,1,1,3).
    rng = np.random.RandomState(0)
    W, b = rng.randn(2, 2, 1, 3) * 0.5, rng.randn(1, 1, 1, 3) * 1e-6
    x = rng.randn(1, 5, 5, 1)
    series = tuple([rng.randn(*a.shape).astype(dtype) for _ in range(3)] for a in (W, b, x))
    W, b, x = W.astype(dtype), b.astype(dtype), x.astype(dtype)
    tol = 1e-7 if dtype == np.float64 else 1e-4

    def build(m):
        dn = ("NHWC", "HWIO", "NHWC")
        return lambda W, b, x: m.lax.conv_general_dilated(x, W, (1, 1), "VALID", dimension_numbers=dn) + b

    check_jet(build, (W, b, x), series, rtol=tol, atol=tol)


# ----------------------------------------------------------------------------------------------
# Unary functions (JAX's unary_check table)


_UNARY = {
    # name: (build, keyword arguments of unary_check)
    "exp": (lambda m: m.np.exp, {}),
    "neg": (lambda m: m.np.negative, {}),
    "floor": (lambda m: m.np.floor, {}),
    "ceil": (lambda m: m.np.ceil, {}),
    "trunc": (lambda m: m.np.trunc, {}),
    "round": (lambda m: m.lax.round, {}),
    "sign": (lambda m: m.lax.sign, {}),
    "real": (lambda m: m.lax.real, {"dtype": np.complex128}),
    "conj": (lambda m: m.lax.conj, {"dtype": np.complex128}),
    "imag": (lambda m: m.lax.imag, {"dtype": np.complex128}),
    "log": (lambda m: m.np.log, {"lims": (0.8, 4.0)}),
    "gather": (lambda m: lambda x: x[1:], {}),
    "reduce_max": (lambda m: lambda x: x.max(axis=1), {}),
    "reduce_min": (lambda m: lambda x: x.min(axis=1), {}),
    "all_max": (lambda m: m.np.max, {}),
    "all_min": (lambda m: m.np.min, {}),
    "stopgrad": (lambda m: m.lax.stop_gradient, {}),
    "abs": (lambda m: m.np.abs, {}),
    "fft": (lambda m: m.np.fft.fft, {}),
    "log1p": (lambda m: m.np.log1p, {"lims": (0, 4.0)}),
    "expm1": (lambda m: m.np.expm1, {}),
    "sin": (lambda m: m.np.sin, {}),
    "cos": (lambda m: m.np.cos, {}),
    "sinh": (lambda m: m.np.sinh, {}),
    "cosh": (lambda m: m.np.cosh, {}),
    "tanh": (lambda m: m.np.tanh, {"lims": (-500, 500), "order": 5}),
    "logistic": (lambda m: m.lax.logistic, {"lims": (-100, 100), "order": 5}),
    # JAX's expit_check calls its logistic rule directly on [-500, 500] to order 5.
    "expit": (lambda m: m.special.expit, {"lims": (-500, 500), "order": 5}),
    # The two above are mostly saturated at +-500 (terms ~ 0); the same where they are not.
    "tanh_moderate": (lambda m: m.np.tanh, {"lims": (-3, 3), "order": 6}),
    "expit_moderate": (lambda m: m.special.expit, {"lims": (-4, 4), "order": 6}),
    "sqrt": (lambda m: m.np.sqrt, {"lims": (0, 5.0)}),
    "rsqrt": (lambda m: m.lax.rsqrt, {"lims": (0, 5000.0)}),
    "asinh": (lambda m: m.lax.asinh, {"lims": (-100, 100)}),
    # acosh on [-100, 100]: NaN below 1 in every reference alike.
    "acosh": (lambda m: m.lax.acosh, {"lims": (-100, 100), "finite_only": True}),
    "atanh": (lambda m: m.lax.atanh, {"lims": (-1, 1)}),
    "erf": (lambda m: m.lax.erf, {}),
    "erfc": (lambda m: m.lax.erfc, {}),
    "erf_inv": (lambda m: m.lax.erf_inv, {"lims": (-1, 1)}),
    "cumsum": (lambda m: m.np.cumsum, {}),
    "cumprod": (lambda m: m.np.cumprod, {}),
    "cummax": (lambda m: partial(m.lax.cummax, axis=0), {}),
    "cummin": (lambda m: partial(m.lax.cummin, axis=0), {}),
    "dynamic_slice": (
        lambda m: partial(m.lax.dynamic_slice, start_indices=(1, 2), slice_sizes=(1, 1)),
        {},
    ),
    "dynamic_update_slice": (
        lambda m: partial(
            m.lax.dynamic_update_slice, start_indices=(1, 2), update=np.arange(6.0).reshape(2, 3)
        ),
        {},
    ),
    "copy": (lambda m: m.np.array, {}),
    "square": (lambda m: m.lax.square, {}),
    "integer_pow_3": (lambda m: lambda x: m.lax.integer_pow(x, 3), {}),
    "integer_pow_neg2": (lambda m: lambda x: m.lax.integer_pow(x, -2), {"lims": (0.5, 2.0)}),
    "reverse_cumsum": (lambda m: partial(m.lax.cumsum, axis=1, reverse=True), {}),
    "reverse_cummax": (lambda m: partial(m.lax.cummax, axis=1, reverse=True), {}),
    "reverse_cumprod": (lambda m: partial(m.lax.cumprod, axis=1, reverse=True), {}),
    "sum": (lambda m: lambda x: x.sum(axis=0), {}),
    "erfinv_scipy": (lambda m: m.special.erfinv, {"lims": (-0.9, 0.9), "order": 4}),
    "ndtr": (lambda m: m.special.ndtr, {"order": 4}),
    "transpose_reshape": (lambda m: lambda x: x.T.reshape(-1), {}),
    "process_call": (lambda m: lambda x: m.jit(lambda y: y * y)(x), {}),
    "post_process_call": (lambda m: lambda x: m.jit(lambda y: x * y)(2.0), {}),
    "unstack": (lambda m: lambda x: m.lax.unstack(x, axis=0), {}),
    "stack_self": (lambda m: lambda x: m.np.stack([x, 2 * x], axis=-1), {}),
}


@pytest.mark.parametrize("name", sorted(_UNARY))
def test_unary(name):
    # Every case of this table runs under jax's jet too (in float64).
    build, kw = _UNARY[name]
    unary_check(build, **kw)


@pytest.mark.parametrize("p", range(6))
def test_int_pow(p):
    unary_check(lambda m: lambda x: x**p, lims=(-2, 2))


def test_int_pow_10_at_zero():
    unary_check(lambda m: lambda x: x**10, lims=(0, 0))


# ----------------------------------------------------------------------------------------------
# Binary functions (JAX's binary_check table)


_BINARY = {
    "div": (lambda m: lambda x, y: x / y, {"lims": (0.8, 4.0)}),
    "rem": (lambda m: m.lax.rem, {"lims": (0.8, 4.0)}),
    "complex": (lambda m: m.lax.complex, {}),
    "sub": (lambda m: lambda x, y: x - y, {}),
    "add": (lambda m: lambda x, y: x + y, {}),
    "mul": (lambda m: lambda x, y: x * y, {}),
    "max": (lambda m: m.lax.max, {}),
    "min": (lambda m: m.lax.min, {}),
    "pow": (lambda m: lambda x, y: x**y, {"lims": ((0.2, 500), (-500, 500)), "finite": False}),
    "atan2": (lambda m: m.lax.atan2, {"lims": (-40, 40)}),
    "stack0": (lambda m: lambda *xs: m.np.stack(xs, axis=0), {}),
    "stack1": (lambda m: lambda *xs: m.np.stack(xs, axis=1), {}),
    "stack_last": (lambda m: lambda *xs: m.np.stack(xs, axis=-1), {}),
    "concatenate": (lambda m: lambda *xs: m.np.concatenate(xs, axis=1), {}),
    "pow_moderate": (lambda m: lambda x, y: x**y, {"lims": ((0.5, 2.0), (-2.0, 2.0))}),
}


@pytest.mark.parametrize("name", sorted(_BINARY))
def test_binary(name):
    build, kw = _BINARY[name]
    binary_check(build, **kw)


@pytest.mark.parametrize("name", sorted(_BINARY))
def test_binary_float32(name):
    build, kw = _BINARY[name]
    binary_check(build, real=np.float32, rtol=2e-3, atol=2e-3, **kw)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unstack(axis):
    rng = np.random.RandomState(0)
    x = rng.randn(4, 2, 3)
    check_jet(
        lambda m: lambda x: m.lax.unstack(x, axis=axis), (x,), ([rng.randn(4, 2, 3) for _ in range(3)],)
    )


def test_clamp():
    rng = np.random.RandomState(0)
    lims, dims = (-1, 1), (2, 3)
    primals = tuple(_transform(lims, rng.rand(*dims)) for _ in range(3))
    series = tuple([rng.randn(*dims) for _ in range(3)] for _ in range(3))
    check_jet(lambda m: m.lax.clamp, primals, series)


def test_select_with_a_boolean_argument():
    # The boolean condition gets (ignored) float terms, as in JAX's test: it does not vary.
    rng = np.random.RandomState(0)
    b = rng.rand(2, 3) < 0.5
    x, y = rng.randn(2, 3), rng.randn(2, 3)
    series = tuple([rng.randn(2, 3) for _ in range(3)] for _ in range(3))
    check_jet(lambda m: m.np.where, (b, x, y), series)


# ----------------------------------------------------------------------------------------------
# Symbolic zeros, derivatives inside jet


def test_inst_zero():
    # A constant output (full_like) and one that depends on x with a zero coefficient give the same
    # primal and the same (materialised, all-zero) series; the series is never `zero_series`.
    x = fnp.ones(1)
    seeds = ([fnp.ones_like(x) for _ in range(3)],)
    f_y, f_s = jet(lambda x: fnp.full_like(x, 2.0), (x,), seeds)
    g_y, g_s = jet(lambda x: 2.0 + 0 * x, (x,), seeds)
    assert f_s is not zero_series
    assert isinstance(f_s, list) and len(f_s) == 3
    np.testing.assert_array_equal(np.asarray(f_y), np.asarray(g_y))
    for a, b in zip(f_s, g_s):
        assert np.asarray(a).shape == (1,)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        np.testing.assert_array_equal(np.asarray(a), np.zeros(1))
    # The older form of JAX's test: a function returning a Python constant.
    y, s = jet(lambda x: 2.0, (x,), seeds)
    assert float(y) == 2.0 and s is not zero_series
    assert [float(t) for t in s] == [0.0, 0.0, 0.0]


def test_add_any_of_a_gradient():
    # jax-ml/jax#5217: the gradient sums two cotangents (add_any) under jet.
    f = lambda x, eps: x * eps + eps + x  # noqa: E731

    def build(m):
        return lambda eps: m.grad(f)(m.np.array(1.0), eps)

    y, s = jet(build(FG), (1.0,), ([1.0],))
    assert float(y) == 2.0 and float(s[0]) == 1.0
    check_jet(build, (1.0,), ([1.0, 2.0, 3.0],))


def test_scatter_add_from_grad_of_jacfwd():
    # jax-ml/jax#5365: the gradient of an indexing program scatters (scatter-add) under jet.
    def build(m):
        def f(x):
            return (x[0] ** 5 + x[1] ** 5).sum()

        def h(eps):
            x = m.np.array([1.0, 1.0])
            mu = eps * x
            return m.grad(m.jacfwd(lambda t: f(x + t * mu)))(0.0)

        return h

    check_jet(build, (0.0,), ([1.0, 2.0, 3.0],))
    # h(eps) = F''(0) = 20 * sum(mu_i^2) = 40 eps^2 exactly: along eps(t) = t, (0, 0, 80, 0).
    y, s = jet(build(FG), (0.0,), ([1.0, 0.0, 0.0],))
    np.testing.assert_allclose([float(y), *map(float, s)], [0.0, 0.0, 80.0, 0.0], atol=1e-12)


def test_scatter_add_direct():
    rng = np.random.RandomState(1)
    idx = np.array([0, 2, 2, 1])

    def build(m):
        return lambda x, u: m.np.zeros(3).at[idx].add(u * x[idx])

    x, u = rng.randn(3), rng.randn(4)
    series = ([rng.randn(3) for _ in range(4)], [rng.randn(4) for _ in range(4)])
    check_jet(build, (x, u), series)


# ----------------------------------------------------------------------------------------------
# Primitives the brief lists that JAX's tests do not reach


_EXTRA = {
    # jax has no jet rules for these (NotImplementedError there): nested-jvp expansion only.
    "cumlogsumexp": (lambda m: partial(m.lax.cumlogsumexp, axis=1), {"order": 4}),
    "reverse_cumlogsumexp": (lambda m: partial(m.lax.cumlogsumexp, axis=0, reverse=True), {"order": 4}),
    "sort": (lambda m: partial(m.np.sort, axis=1), {"order": 4}),
    "lgamma": (lambda m: m.lax.lgamma, {"lims": (0.5, 4.0), "order": 4}),
    "digamma": (lambda m: m.lax.digamma, {"lims": (0.5, 4.0), "order": 4}),
    "gammaln": (lambda m: m.special.gammaln, {"lims": (0.5, 4.0), "order": 4}),
    "tan": (lambda m: m.np.tan, {"lims": (-1.2, 1.2), "order": 5}),
    "asin": (lambda m: m.np.arcsin, {"lims": (-0.9, 0.9), "order": 4}),
    "atan": (lambda m: m.np.arctan, {"order": 4}),
    "logsumexp": (lambda m: partial(m.special.logsumexp, axis=1), {"order": 4}),
    "softplus": (lambda m: lambda x: m.np.logaddexp(x, 0.0), {"order": 4}),
    "cbrt": (lambda m: m.np.cbrt, {"lims": (0.5, 3.0), "order": 4}),
    "log_softmax": (lambda m: lambda x: x - m.special.logsumexp(x, axis=1, keepdims=True), {"order": 4}),
    # scipy.special: jax's jet has no rule for polygamma, bessel_i0e/i1e or the scan inside ndtri,
    # and fails (UnexpectedTracerError) on the custom_jvp functions log_ndtr, logit, xlog1py, entr
    # and erfcx.
    "ndtri": (lambda m: m.special.ndtri, {"lims": (0.05, 0.95), "order": 4}),
    "log_ndtr": (lambda m: m.special.log_ndtr, {"lims": (-3, 3), "order": 4}),
    "logit": (lambda m: m.special.logit, {"lims": (0.1, 0.9), "order": 4}),
    "polygamma_1": (lambda m: lambda x: m.special.polygamma(1, x), {"lims": (0.5, 3), "order": 4}),
    "xlog1py": (lambda m: lambda x: m.special.xlog1py(x, x * x), {"order": 4}),
    "entr": (lambda m: m.special.entr, {"lims": (0.1, 2), "order": 4}),
    "i0e": (lambda m: m.special.i0e, {"order": 4}),
    "i1e": (lambda m: m.special.i1e, {"order": 4}),
    "erfcx": (lambda m: m.special.erfcx, {"lims": (-1, 2), "order": 4}),
}


@pytest.mark.parametrize("name", sorted(_EXTRA))
def test_beyond_jax_rules(name):
    build, kw = _EXTRA[name]
    unary_check(build, jax=False, **kw)


# float32, JAX's default precision, at JAX's tolerances: the terms keep the primal's dtype (as the
# nested-jvp expansion's do). dynamic_update_slice's constant update is float64 (no float32 case).
_NO_JAX_F32 = {
    # jax's erf_inv jet rule multiplies by an np.float64 constant: with x64 on, float32 input
    # fails there ("lax.mul requires arguments to have the same dtypes").
    "erf_inv": "jax's rule mixes float64 into float32",
    "erfinv_scipy": "jax's rule mixes float64 into float32",
}
_F32_UNARY = sorted(n for n in {**_UNARY, **_EXTRA} if n != "dynamic_update_slice")


@pytest.mark.parametrize("name", _F32_UNARY)
def test_unary_float32(name):
    build, kw = {**_UNARY, **_EXTRA}[name]
    kw = dict(kw)
    if "dtype" in kw:
        kw["dtype"] = np.complex64
    kw.setdefault("jax", name in _UNARY and name not in _NO_JAX_F32)
    unary_check(build, real=np.float32, rtol=2e-3, atol=2e-3, **kw)


def test_compositions_at_orders_5_and_6():
    # Higher orders than JAX's tests use, on compositions of primitives JAX has rules for.
    unary_check(lambda m: lambda x: m.np.sin(x) * m.np.exp(-x * x) / (2.0 + m.np.cos(x)), order=6)
    unary_check(lambda m: lambda x: m.lax.erf_inv(m.np.tanh(x) * 0.9), order=6)
    unary_check(lambda m: lambda x: m.lax.cummax(x * x, axis=1), order=5)


def test_sort_with_ties_is_the_jvp_of_sort():
    # At a tie sort's JVP follows the permutation the sort chose; the expansion agrees.
    x = np.array([[1.0, 0.5, 1.0], [2.0, -1.0, 0.0]])
    rng = np.random.RandomState(3)
    check_jet(lambda m: partial(m.np.sort, axis=1), (x,), ([rng.randn(2, 3) for _ in range(3)],), jax=False)


# ----------------------------------------------------------------------------------------------
# custom_jvp, jit, nested jet


def _custom_logaddexp(m):
    @m.custom_jvp
    def f(x, y):
        big = m.np.maximum(x, y)
        return big + m.np.log(m.np.exp(x - big) + m.np.exp(y - big))

    @f.defjvp
    def f_jvp(primals, tangents):
        (x, y), (dx, dy) = primals, tangents
        out = f(x, y)
        return out, dx * m.np.exp(x - out) + dy * m.np.exp(y - out)

    return f


def test_custom_jvp_function():
    # funcgrad's jet uses the custom JVP rule (exact here), checked against the nested-jvp
    # expansion. jax.experimental.jet is no oracle: it means to trace the primal function
    # instead (process_custom_jvp_call), but with jax 0.10.2 that raises UnexpectedTracerError
    # (the primal body runs outside the jet trace and sees a JetTracer).
    binary_check(_custom_logaddexp, order=4, jax=False)


def test_custom_jvp_rule_is_used():
    # A rule that differs from its primal function: funcgrad's jet follows the rule (as jvp does),
    # so its series is the series of the rule's function. jax's jet would trace the primal body
    # instead (documented TODO in jax.experimental.jet), so it is no oracle here.
    @funcgrad.custom_jvp
    def f(x):
        return fnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (dx,) = primals, tangents
        return f(x), 2.0 * fnp.cos(x) * dx  # as if f were 2 sin(x) - sin(x0)

    y, s = jet(f, (0.3,), ((1.0, 0.0, 0.0),))
    np.testing.assert_allclose(float(y), math.sin(0.3))
    np.testing.assert_allclose(
        [float(t) for t in s], [2 * math.cos(0.3), -2 * math.sin(0.3), -2 * math.cos(0.3)]
    )
    _, want = _nested_jvp_expansion(f, (0.3,), ((1.0, 0.0, 0.0),))
    np.testing.assert_allclose([float(t) for t in s], [float(t) for t in want], rtol=1e-12)


def test_jit_wrapped_relu_like_composition():
    # A hand-written relu (a where on a comparison) times tanh, inside jit (process call).
    unary_check(lambda m: m.jit(lambda x: m.np.where(x > 0, x, 0.0) * m.np.tanh(x)), order=4)


def test_nested_jet():
    # jet of a function that runs jet: the outer series of the inner first derivative.
    def build(m):
        j = FG if m is FG else m

        def inner(x):
            return (jet if j is FG else j.jet)(lambda z: j.np.sin(z) * z, (x,), ((1.0, 0.0),))[1][0]

        return inner

    y, s = check_jet(build, (0.7,), ([1.0, 0.0, 0.0],), jax=False)
    # d/dx (x sin x) = sin x + x cos x; its derivatives at 0.7.
    x = 0.7
    want = [
        math.sin(x) + x * math.cos(x),
        2 * math.cos(x) - x * math.sin(x),
        -3 * math.sin(x) - x * math.cos(x),
        -4 * math.cos(x) + x * math.sin(x),
    ]
    np.testing.assert_allclose([float(y), *map(float, s)], want, rtol=1e-12)


def test_nested_jet_matches_jax():
    J = _jax_ns()

    def outer(m, jet_fn):
        inner = lambda x: jet_fn(lambda z: m.np.exp(m.np.sin(z)), (x,), ((x, x * x),))[1][1]  # noqa: E731
        return inner

    rng = np.random.RandomState(0)
    x = rng.rand(3)
    series = ([rng.randn(3) for _ in range(3)],)
    y, s = jet(outer(FG, jet), (x,), series)
    jy, js = J.jet(outer(J, J.jet), (x,), series)
    _assert_trees_close(y, jy, 1e-10, 1e-10)
    _assert_trees_close(s, js, 1e-10, 1e-10)


# ----------------------------------------------------------------------------------------------
# The API: the docstring example, scaling, pytrees, integers, zeros, errors


def test_docstring_example_sin_of_cube():
    h0, h1, h2 = 0.5**3.0, 3.0 * 0.5**2.0, 6.0 * 0.5
    f0, (f1, f2) = jet(fnp.sin, (h0,), ((h1, h2),))
    np.testing.assert_allclose(float(f0), math.sin(h0), rtol=1e-14)
    np.testing.assert_allclose(float(f1), math.cos(h0) * h1, rtol=1e-14)
    np.testing.assert_allclose(float(f2), -math.sin(h0) * h1**2 + math.cos(h0) * h2, rtol=1e-14)
    # The printed values of JAX's docstring (float32 there).
    np.testing.assert_allclose(
        [float(f0), float(f1), float(f2)], [0.12467473, 0.74414825, 2.9064636], rtol=1e-6
    )


def test_factorial_scaled_false_and_jet2():
    J = _jax_ns()
    rng = np.random.RandomState(0)
    x, series = rng.rand(3), ([rng.randn(3) for _ in range(4)],)
    for fg_call, jx_call in (
        (partial(jet, factorial_scaled=False), partial(J.jet, factorial_scaled=False)),
        (jet2, partial(J.jet, factorial_scaled=False)),
    ):
        y, s = fg_call(lambda z: fnp.log1p(z * z) * fnp.cos(z), (x,), series)
        jy, js = jx_call(lambda z: J.np.log1p(z * z) * J.np.cos(z), (x,), series)
        _assert_trees_close(y, jy, 1e-12, 1e-12)
        _assert_trees_close(s, js, 1e-10, 1e-10)
    # jet2 terms are Taylor coefficients: exp(t) = sum t^k / k!.
    _, c = jet2(fnp.exp, (0.0,), ((1.0, 0.0, 0.0, 0.0),))
    np.testing.assert_allclose([float(t) for t in c], [1.0, 1 / 2, 1 / 6, 1 / 24])
    assert float(fact(4)) == 24.0


def test_pytree_arguments_and_outputs():
    # jax.experimental.jet rejects pytree primals; funcgrad accepts them (a superset): compare with
    # the same function on flat arguments.
    rng = np.random.RandomState(0)
    a, b = rng.rand(3), rng.rand(2)
    sa, sb = [rng.randn(3) for _ in range(3)], [rng.randn(2) for _ in range(3)]

    def f_tree(p):
        return {"u": fnp.sin(p["a"]).sum() * p["b"], "v": (fnp.exp(p["b"]),)}

    y, s = jet(f_tree, ({"a": a, "b": b},), ([{"a": x, "b": z} for x, z in zip(sa, sb)],))
    flat_y, flat_s = check_jet(
        lambda m: lambda a, b: {"u": m.np.sin(a).sum() * b, "v": (m.np.exp(b),)}, (a, b), (sa, sb)
    )
    _assert_trees_close(y, flat_y, 1e-14, 1e-14)
    _assert_trees_close(s, flat_s, 1e-14, 1e-14)
    assert isinstance(s["v"], tuple) and len(s["v"][0]) == 3


def test_list_and_tuple_outputs_have_a_list_of_terms_per_leaf():
    y, s = jet(lambda x: [fnp.sin(x), (fnp.cos(x), x)], (0.5,), ((1.0, 0.0),))
    assert isinstance(s, list) and isinstance(s[1], tuple)
    np.testing.assert_allclose([float(t) for t in s[0]], [math.cos(0.5), -math.sin(0.5)])
    np.testing.assert_allclose([float(t) for t in s[1][1]], [1.0, 0.0])


def test_integer_and_boolean_inputs_do_not_vary():
    # Integer/boolean primals have float0 tangents: their terms are ignored, the output series is
    # that of the other arguments, and integer outputs have zero series of their own dtype. This
    # is the expansion JAX's tests take as the truth (its reference casts the nudged argument back
    # to the integer dtype); jax's jet itself pushes an integer primal's terms through
    # (jet(lambda x: x * 2., (3,), ([1],)) gives [2.] there, 0 here).
    n = np.array([2, 3], np.int32)
    x = np.array([0.3, -0.4])
    y, s = jet(lambda x, n: x**2 * n, (x, n), ([np.ones(2), np.zeros(2)], [np.ones(2), np.ones(2)]))
    np.testing.assert_allclose(np.asarray(s[0]), 2 * x * n)
    np.testing.assert_allclose(np.asarray(s[1]), 2.0 * n)
    yi, si = jet(lambda n: n * 2 + 1, (n,), ([np.ones(2, np.int32)] * 3,))
    np.testing.assert_array_equal(np.asarray(yi), n * 2 + 1)
    for t in si:
        np.testing.assert_array_equal(np.asarray(t), np.zeros(2))
    yb, sb = jet(lambda x: x > 0, (x,), ([np.ones(2)] * 2,))
    assert np.asarray(yb).dtype == np.bool_ and len(sb) == 2
    np.testing.assert_array_equal(np.asarray(sb[0]), np.zeros(2, np.bool_))


@pytest.mark.parametrize(
    "name, fun",
    [
        ("is_finite", lambda x: flax.is_finite(x)),
        ("le", lambda x: x <= 0.1),
        ("eq", lambda x: x == x),
        ("floor_div_int", lambda x: (x * 10).astype(np.int32) // 3),
        ("argmax", lambda x: fnp.argmax(x, axis=1)),
    ],
)
def test_integer_and_boolean_outputs_have_zero_series(name, fun):
    # JAX's float0 tests are skipped upstream ("must be adapted"); here: zero terms, output shape.
    rng = np.random.RandomState(0)
    x = rng.randn(2, 3)
    y, s = jet(fun, (x,), ([rng.randn(2, 3) for _ in range(3)],))
    assert len(s) == 3
    for t in s:
        assert np.asarray(t).shape == np.asarray(y).shape
        assert not np.any(np.asarray(t))


def test_symbolic_zero_terms_and_zero_series():
    f = lambda x, y: fnp.sin(x) * y  # noqa: E731
    y, s = jet(f, (0.3, 2.0), ((1.0, zero_term, zero_term), zero_series))
    y2, s2 = jet(f, (0.3, 2.0), ((1.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    _assert_trees_close(s, s2, 0, 0)
    np.testing.assert_allclose(
        [float(t) for t in s], [2 * math.cos(0.3), -2 * math.sin(0.3), -2 * math.cos(0.3)]
    )
    # All-zero input series: every output term is an (instantiated) zero.
    _, s0 = jet(fnp.exp, (np.ones(2),), (zero_series,))
    assert s0 == [] or all(not np.any(np.asarray(t)) for t in s0)


def test_order_one_is_jvp():
    rng = np.random.RandomState(0)
    x, v = rng.rand(2, 3), rng.randn(2, 3)
    f = lambda x: fnp.tanh(x) @ x.T  # noqa: E731
    y, (s,) = jet(f, (x,), ([v],))
    jy, jt = funcgrad.jvp(f, (x,), (v,))
    _assert_trees_close((y, s), (jy, jt), 1e-14, 1e-14)


def test_errors():
    with pytest.raises(ValueError, match="inconsistent lengths"):
        jet(fnp.add, (1.0, 2.0), ((1.0,), (1.0, 0.0)))
    with pytest.raises(ValueError, match="shape"):
        jet(fnp.sin, (np.ones(3),), ((np.ones(2),),))
    with pytest.raises((TypeError, ValueError)):
        jet(fnp.sin, (1.0,), (1.0,))  # the terms must be a sequence
    with pytest.raises((TypeError, ValueError)):
        jet(fnp.sin, (1.0,), ((1.0,), (1.0,)))  # more series than primals
    with pytest.raises(TypeError):
        jet(fnp.sin, (1.0,), (("a",),))  # a term that is not an array
    with pytest.raises(TypeError):
        jet(fnp.sin, ("a",), ((1.0,),))  # a primal that is not an array


def test_fact_is_weakly_typed_like_jax():
    # jax's fact is exp(lgamma(n + 1.)) of a Python float: weakly typed, so scaling a float32
    # term by it (as JAX's nested-jvp reference does) keeps float32.
    x32 = np.ones(3, np.float32)
    assert (fnp.asarray(x32) / fact(3)).dtype == np.float32
    assert (x32 * fact(2)).dtype == np.float32
    assert [float(fact(k)) for k in range(6)] == [1.0, 1.0, 2.0, 6.0, 24.0, 120.0]


def test_series_given_as_an_array_of_terms():
    # jax's jet iterates an argument's terms, so an array whose leading axis holds them works too.
    rng = np.random.RandomState(0)
    x, terms = rng.rand(2, 3), rng.randn(4, 2, 3)
    y, s = jet(fnp.sin, (x,), (terms,))
    y2, s2 = jet(fnp.sin, (x,), (list(terms),))
    _assert_trees_close((y, s), (y2, s2), 0, 0)
    _, js = _jax_ns().jet(_jax_ns().np.sin, (x,), (terms,))
    _assert_trees_close(s, js, 1e-12, 1e-12)
    _, s1 = jet(fnp.sin, (0.5,), (fnp.asarray([1.0, 0.0]),))
    np.testing.assert_allclose([float(t) for t in s1], [math.cos(0.5), -math.sin(0.5)])


# ----------------------------------------------------------------------------------------------
# More primitives and compositions, against both references where jax's jet can run them


def _more_cases():
    rng = np.random.RandomState(0)
    x = rng.randn(2, 3)
    terms = [rng.randn(2, 3) for _ in range(4)]
    ties = np.array([[1.0, 2.0, 2.0], [0.0, 0.0, -1.0]])
    w, img = rng.randn(2, 1, 3, 3), rng.randn(1, 1, 5, 5)
    w_s, img_s = [rng.randn(2, 1, 3, 3) for _ in range(4)], [rng.randn(1, 1, 5, 5) for _ in range(4)]
    a3, b34 = rng.randn(2, 2, 3), rng.randn(3, 4)
    a3_s, b34_s = [rng.randn(2, 2, 3) for _ in range(4)], [rng.randn(3, 4) for _ in range(4)]
    u, u_s = rng.randn(1, 2), [rng.randn(1, 2) for _ in range(4)]
    n = np.array([[1, 2, 3], [0, 2, 4]])
    zeros4 = [np.zeros((2, 3))] * 4
    # name: (build, primals, series, jax usable?) -- with the reason where jax's jet is no oracle.
    return {
        # Ties: jax's max/min rules average the tied operands' series, as the JVP rules do.
        "reduce_max_ties": (lambda m: lambda x: x.max(axis=1), (ties,), (terms,), True),
        "max_ties": (lambda m: lambda x: m.lax.max(x, x[:, ::-1]), (ties,), (terms,), True),
        "maximum_equal_args": (
            lambda m: m.np.maximum,
            (ties, ties),
            (terms, [t * 0.5 for t in terms]),
            True,
        ),
        "cummax_ties": (lambda m: lambda x: m.lax.cummax(x, axis=1), (ties,), (terms,), True),
        # abs at 0 takes the right derivative (factor +1), as jax's rule and the JVP rule do.
        "abs_at_zero": (lambda m: m.np.abs, (np.array([0.0, -1.0, 2.0]),), ([np.ones(3)] * 3,), True),
        "gather_advanced": (
            lambda m: lambda x: x[np.array([0, 1, 1]), np.array([2, 0, 2])],
            (x,),
            (terms,),
            True,
        ),
        "reverse": (lambda m: lambda x: x[:, ::-1], (x,), (terms,), True),
        "take": (lambda m: lambda x: m.np.take(x, np.array([2, 0]), axis=1), (x,), (terms,), True),
        "select_n_3_cases": (
            lambda m: lambda x: m.lax.select_n(np.array([[0, 1, 2], [2, 1, 0]]), x, 2 * x, m.np.sin(x)),
            (x,),
            (terms,),
            True,
        ),
        "pow_float_constant": (lambda m: lambda x: m.np.abs(x) ** 2.5, (x,), (terms,), True),
        "power_3": (lambda m: lambda x: m.np.power(x, 3), (x,), (terms,), True),
        "reciprocal": (lambda m: m.np.reciprocal, (x + 3,), (terms,), True),
        "conv_same_nchw": (
            lambda m: lambda w, x: m.lax.conv_general_dilated(x, w, (1, 1), "SAME"),
            (w, img),
            (w_s, img_s),
            True,
        ),
        "matmul_batched": (lambda m: lambda a, b: a @ b, (a3, b34), (a3_s, b34_s), True),
        "einsum": (
            lambda m: lambda a, b: m.np.einsum("ij,kj->ik", a, b),
            (x, x + 1),
            (terms, terms[::-1]),
            True,
        ),
        "gelu_tanh": (lambda m: m.nn.gelu, (x,), (terms,), True),
        "gelu_exact": (lambda m: lambda x: m.nn.gelu(x, approximate=False), (x,), (terms,), True),
        "sigmoid": (lambda m: m.nn.sigmoid, (x,), (terms,), True),
        "silu": (lambda m: m.nn.silu, (x,), (terms,), True),
        "softmax": (lambda m: lambda x: m.nn.softmax(x, axis=1), (x,), (terms,), True),
        "log_softmax": (lambda m: lambda x: m.nn.log_softmax(x, axis=1), (x,), (terms,), True),
        "elu": (lambda m: m.nn.elu, (x,), (terms,), True),
        "norm": (lambda m: lambda x: m.np.linalg.norm(x, axis=1), (x,), (terms,), True),
        "mean_var": (lambda m: lambda x: m.np.var(x, axis=0) + m.np.mean(x), (x,), (terms,), True),
        "where_of_a_comparison": (
            lambda m: lambda x: m.np.where(x > 0, m.np.sin(x), m.np.exp(x)),
            (x,),
            (terms,),
            True,
        ),
        "pad": (lambda m: lambda x: m.np.pad(x, ((1, 0), (0, 2))), (x,), (terms,), True),
        "concatenate_broadcast": (
            lambda m: lambda x: m.np.concatenate([x, m.np.broadcast_to(x[:1], (2, 3))]),
            (x,),
            (terms,),
            True,
        ),
        "reshape_transpose_squeeze": (
            lambda m: lambda x: m.np.squeeze(x[None], 0) * x.reshape(3, 2).T,
            (x,),
            (terms,),
            True,
        ),
        "convert_to_float32": (lambda m: lambda x: m.np.sin(x.astype(np.float32)), (x,), (terms,), True),
        "real_of_complex_exp": (lambda m: lambda x: m.np.real(m.np.exp(1j * x)), (x,), (terms,), True),
        "rsqrt_of_sum": (lambda m: lambda x: m.lax.rsqrt((x * x).sum() + 1), (x,), (terms,), True),
        "atan2_constant_y": (lambda m: lambda x: m.lax.atan2(x, 2.0), (x,), (terms,), True),
        "reduce_window_sum": (
            lambda m: lambda x: m.lax.reduce_window(x, 0.0, m.lax.add, (1, 2), (1, 1), "VALID"),
            (x,),
            (terms,),
            True,
        ),
        "dynamic_update_slice_varying_update": (
            lambda m: lambda x, u: m.lax.dynamic_update_slice(x, u * u, (1, 1)),
            (x, u),
            (terms, u_s),
            True,
        ),
        "split": (
            lambda m: lambda x: m.np.split(x, [1], axis=1)[1] * m.np.split(x, [1], axis=1)[0],
            (x,),
            (terms,),
            True,
        ),
        "device_put": (lambda m: lambda x: m.np.sin(m.device_put(x)), (x,), (terms,), True),
        "cumsum_axis0_reverse": (
            lambda m: lambda x: m.lax.cumsum(x, axis=0, reverse=True),
            (x,),
            (terms,),
            True,
        ),
        "min_of_all": (lambda m: lambda x: m.np.min(x * x), (x,), (terms,), True),
        "fft2_real": (lambda m: lambda x: m.np.real(m.np.fft.fft2(x * x)), (x,), (terms,), True),
        "ifft_imag": (lambda m: lambda x: m.np.imag(m.np.fft.ifft(m.np.exp(x))), (x,), (terms,), True),
        # jax's abs rule compares the complex primal with 0 (TypeError for complex128).
        "abs_of_rfft": (lambda m: lambda x: m.np.abs(m.np.fft.rfft(x, axis=1)), (x,), (terms,), False),
        # No jax rule for multi-operand sort, tile or argmax (KeyError there).
        "sort_two_operands": (
            lambda m: lambda x: m.lax.sort((x[0], x[1]), num_keys=1)[1],
            (x,),
            (terms,),
            False,
        ),
        "tile": (lambda m: lambda x: m.np.tile(x[:, None], (1, 2, 1)), (x,), (terms,), False),
        "index_by_argmax": (lambda m: lambda x: x[0, m.np.argmax(x[1])], (x,), (terms,), False),
        # jax's clamp rule (a composition of max and min) fails on scalar bounds:
        # "select cases must have the same shapes".
        "clamp_scalar_bounds": (lambda m: lambda x: m.lax.clamp(-0.5, x, 0.5), (x,), (terms,), False),
        # jax's pow rule multiplies by the integer exponent: "lax.mul requires ... int64, float64".
        "pow_integer_array_exponent": (lambda m: lambda x, n: x**n, (x, n), (terms, zeros4), False),
        # jax's dynamic_slice rule selects between a float term and the integer index's zero term.
        "dynamic_slice_integer_argument": (
            lambda m: lambda x, i: m.lax.dynamic_slice(x, (i, 0), (1, 3)),
            (x, 1),
            (terms, [0, 0, 0, 0]),
            False,
        ),
        # custom_jvp functions: jax's jet raises UnexpectedTracerError (test_custom_jvp_function).
        "relu": (lambda m: m.nn.relu, (x,), (terms,), False),
        "softplus_nn": (lambda m: m.nn.softplus, (x,), (terms,), False),
        "xlogy": (lambda m: lambda x: m.special.xlogy(x, x * x + 1), (x,), (terms,), False),
        # No jet rule in jax for these primitives (KeyError there).
        "prod": (lambda m: lambda x: m.np.prod(x, axis=1), (x,), (terms,), False),
        "scatter_set": (lambda m: lambda x: x.at[0, 1].set(x[1, 2] ** 2), (x,), (terms,), False),
        "scatter_mul": (lambda m: lambda x: x.at[0].mul(x[1]), (x,), (terms,), False),
        "top_k": (lambda m: lambda x: m.lax.top_k(x, 2)[0], (x,), (terms,), False),
        "argsort_take_along_axis": (
            lambda m: lambda x: m.np.take_along_axis(x, m.np.argsort(x, axis=1), axis=1),
            (x,),
            (terms,),
            False,
        ),
        "inverse": (lambda m: lambda a: m.np.linalg.inv(a @ a.T + 3 * m.np.eye(2)), (x,), (terms,), False),
    }


_MORE = _more_cases()


@pytest.mark.parametrize("name", sorted(_MORE))
def test_more(name):
    build, primals, series, use_jax = _MORE[name]
    check_jet(build, primals, series, jax=use_jax)


def test_singular_points_first_term_is_the_jvp():
    # At x0 = 0 the first term of sqrt, rsqrt and cbrt is the JVP's (inf, -inf), as nested jvp
    # gives; jax's jet gives nan there (its x ** 0.5 composition divides 0 by 0).
    x = np.array([0.0, 1.0, 4.0])
    v = [np.ones(3), np.zeros(3)]
    for f in (fnp.sqrt, flax.rsqrt, fnp.cbrt):
        _, s = jet(f, (x,), (v,))
        _, t = funcgrad.jvp(f, (x,), (np.ones(3),))
        np.testing.assert_allclose(np.asarray(s[0]), np.asarray(t), rtol=1e-14)
        assert np.isinf(np.asarray(s[0])[0])
    # x ** 2.0 and x ** -1 at 0 (pow with a constant exponent, integer_pow): the exact series,
    # where jax's jet gives nan.
    _, s = jet(lambda x: x**2.0, (x,), ([np.ones(3)] * 3,))
    np.testing.assert_allclose([np.asarray(t)[0] for t in s], [0.0, 2.0, 6.0])


def test_custom_vjp_function_is_its_primal_function():
    # jax's jet means to trace a custom_vjp function's primal body (its rules are for reverse
    # mode); funcgrad does so. jax 0.10.2 raises UnexpectedTracerError there, so the reference is
    # the jet of the same body without the custom_vjp wrapper.
    @funcgrad.custom_vjp
    def f(x):
        return fnp.sin(x) * x

    f.defvjp(lambda x: (f(x), x), lambda x, g: (g * (fnp.cos(x) * x + fnp.sin(x)),))
    x, series = np.array([0.3, 0.7]), ([np.ones(2), 0.5 * np.ones(2), -np.ones(2)],)
    got = jet(f, (x,), series)
    want = jet(lambda x: fnp.sin(x) * x, (x,), series)
    _assert_trees_close(got, want, 0, 0)


@pytest.mark.parametrize("name", ["sin", "tanh_moderate", "erf_inv", "cummax", "reduce_max", "pow"])
def test_jit_of_jet_matches_eager(name):
    build, kw = _UNARY[name] if name in _UNARY else _BINARY[name]
    f = build(FG)
    rng = np.random.RandomState(0)
    n_args = 1 if name in _UNARY else 2
    lims = kw.get("lims", (-2, 2)) if name != "pow" else (0.5, 2.0)
    primals = tuple(_transform(lims, rng.rand(2, 3)) for _ in range(n_args))
    series = tuple([rng.randn(2, 3) for _ in range(4)] for _ in range(n_args))
    eager = jet(f, primals, series)
    jitted = funcgrad.jit(lambda p, s: jet(f, p, s))(primals, series)
    _assert_trees_close(jitted, eager, 1e-12, 1e-12)


def test_scalar_terms_broadcast_and_order_zero():
    # jax's jet broadcasts a scalar term against an array primal; so does funcgrad's.
    x = np.array([0.2, 0.9])
    y, s = jet(fnp.sin, (x,), ((1.0, 0.0),))
    y2, s2 = jet(fnp.sin, (x,), ((np.ones(2), np.zeros(2)),))
    _assert_trees_close((y, s), (y2, s2), 0, 0)
    _, js = _jax_ns().jet(_jax_ns().np.sin, (x,), ((1.0, 0.0),))
    _assert_trees_close(s, js, 1e-14, 1e-14)
    # Order 0: the primal and an empty list of terms per output.
    y0, s0 = jet(lambda x: (fnp.sin(x), x), (x,), ([],))
    assert s0 == ([], [])
    np.testing.assert_allclose(np.asarray(y0[0]), np.sin(x))


_COMPLEX = {
    "exp": lambda m: m.np.exp,
    "sin": lambda m: m.np.sin,
    "cosh": lambda m: m.np.cosh,
    "log": lambda m: m.np.log,
    "log1p": lambda m: m.np.log1p,
    "expm1": lambda m: m.np.expm1,
    "tanh": lambda m: m.np.tanh,
    "logistic": lambda m: m.lax.logistic,
    "sqrt": lambda m: m.np.sqrt,
    "rsqrt": lambda m: m.lax.rsqrt,
    "cube": lambda m: lambda x: x**3,
    "square": lambda m: m.lax.square,
    "reciprocal": lambda m: lambda x: 1 / x,
    "complex_power": lambda m: lambda x: x ** (0.5 + 0.5j),
    "dot": lambda m: lambda x: m.np.dot(x, x.T),
    "cumprod": lambda m: m.np.cumprod,
}
# No jax rule for these on complex input: jax has no tan/atan/asinh rules, and its abs rule
# compares the complex primal with 0 ("lt does not accept dtype complex128").
_COMPLEX_NO_JAX = {
    "tan": lambda m: m.np.tan,
    "atan": lambda m: m.np.arctan,
    "asinh": lambda m: m.np.arcsinh,
    "abs": lambda m: m.np.abs,
}


@pytest.mark.parametrize("name", sorted(_COMPLEX) + sorted(_COMPLEX_NO_JAX))
def test_complex_inputs(name):
    build = _COMPLEX.get(name) or _COMPLEX_NO_JAX[name]
    unary_check(build, lims=(0.3, 1.5), dtype=np.complex128, order=4, jax=name in _COMPLEX)
