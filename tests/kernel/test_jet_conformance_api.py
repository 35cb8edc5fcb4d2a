"""``funcgrad.jet`` as JAX checks ``jax.experimental.jet`` (its ``tests/jet_test.py``), part two:
how jet composes and what its API does -- symbolic zeros and derivatives inside jet,
``custom_jvp``/``custom_vjp`` functions, ``jit`` and nested ``jet``, the docstring example,
``factorial_scaled=False`` and ``jet2``, pytrees, integer and boolean inputs and outputs, scalar terms
and arrays of terms, and the errors. Each case against the nested-jvp expansion and, where it can
run the case, jax's jet (tests/kernel/_jet_checks.py). The primitives' rules are
tests/kernel/test_jet_conformance.py's."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest
from _jet_checks import (
    FG,
    _assert_trees_close,
    _jax_ns,
    _nested_jvp_expansion,
    binary_check,
    check_jet,
    unary_check,
)

import funcgrad
import funcgrad.nn
import funcgrad.numpy as fnp
from funcgrad import lax as flax
from funcgrad.experimental.jet import fact, jet, jet2, zero_series, zero_term

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

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
# custom_vjp functions, scalar terms


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
