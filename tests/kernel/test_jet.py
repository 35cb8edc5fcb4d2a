"""Taylor mode (``funcgrad.jet``): every Taylor rule against nested ``jvp``, closed forms, control
flow, composition with the other transformations, and ``jax.experimental.jet`` as an oracle.

- op_db-driven: for every differentiable entry in float64 and complex128 (collectives under their
  ``vmap``), the first 5 Taylor coefficients of ``f(x(t))`` along a random polynomial path ``x(t)``
  in *all* inexact operands, by ``jet``, against 5 nested ``jvp``s in ``t`` (divided by ``k!``);
- the series of sin, exp, 1/(1-x) and tanh against closed forms to order 10;
- ``scan`` (an explicit Euler ODE solver), ``while_loop`` / ``fori_loop`` (Newton's iteration with
  a fixed step count), ``cond`` / ``switch``, ``jit``, ``checkpoint``, ``custom_jvp`` (its rule
  is used) and ``custom_vjp`` (its primal function) against nested ``jvp``;
- ``vmap(jet)`` against a loop, ``jit(jet)`` against eager, ``grad`` of a Taylor coefficient,
  ``jet`` of ``jet``;
- ``jax.experimental.jet`` on functions with random (not only seed) series.
"""

from __future__ import annotations

import math

import numpy as np
import op_db
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.experimental.jet import fact, jet2, zero_series, zero_term
from funcgrad.experimental.jet import jet as experimental_jet
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import Zero
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.taylor import jet_flat
from funcgrad.scipy import special as fsp

F64 = np.dtype(np.float64)
ORDER = 5


def _nested_jvp(g, t0, order):
    """``[g(t0), g'(t0), ..., g^(order)(t0)]`` by nested jvp (``g`` returns a list of arrays)."""
    fs = [g]
    for _ in range(order):
        fs.append(lambda t, prev=fs[-1]: funcgrad.jvp(prev, (t,), (1.0,))[1])
    return [f(t0) for f in fs]


def _seed(order, v=1.0):
    return (v,) + (0.0,) * (order - 1)


def _derivs_by_nested_jvp(f, x, v, order):
    """Directional derivatives of ``f`` at ``x`` along ``v``, orders 1..order, by nested jvp."""
    fs = [f]
    for _ in range(order):
        fs.append(lambda y, prev=fs[-1]: funcgrad.jvp(prev, (y,), (v,))[1])
    return [np.asarray(g(x)) for g in fs[1:]]


def _close(a, b, rtol=1e-9, atol=1e-9):
    a, b = np.asarray(a), np.asarray(b)
    dtype = np.complex128 if np.iscomplexobj(a) or np.iscomplexobj(b) else np.float64
    np.testing.assert_allclose(a.astype(dtype), b.astype(dtype), rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------------------------
# Every Taylor rule of the catalog against nested jvp (op_db)


C128 = np.dtype(np.complex128)
# (an entry differentiable to first order only, as eigvals, has no Taylor series to compare)
_JET_CASES = [
    (e, d) for e in op_db.OPS if e.differentiable and e.order >= 2 for d in (F64, C128) if d in e.dtypes
]


@pytest.mark.slow
@pytest.mark.parametrize("entry, dtype", _JET_CASES, ids=[f"{e.name}-{d.name}" for e, d in _JET_CASES])
def test_taylor_rule_matches_nested_jvp(entry, dtype):
    rng = np.random.default_rng(0)
    sample = op_db.sample_inputs(entry, dtype, rng)[0]
    args = list(sample.args)
    varying = (
        list(entry.diff_argnums)
        if entry.diff_argnums is not None
        else [i for i, a in enumerate(args) if _dt.is_inexact(np.asarray(a).dtype)]
    )

    # A random polynomial path x_i(t) = x_i + sum_k c_ik t^k in every inexact operand.
    def coefficient(a):
        c = 0.3 * rng.standard_normal(np.shape(a))
        return c + 0.2j * rng.standard_normal(np.shape(a)) if np.iscomplexobj(a) else c

    coeffs = {i: [coefficient(args[i]) for _ in range(ORDER)] for i in varying}

    def f(*xs):
        out = entry.op(*xs, **sample.params)
        return list(out) if isinstance(out, list | tuple) else [out]

    # The coefficients are arguments too, so that a collective's vmap gives each instance its own.
    flat_coeffs = [c for i in varying for c in coeffs[i]]

    def unflatten(cs):
        return {i: list(cs[n * ORDER : (n + 1) * ORDER]) for n, i in enumerate(varying)}

    def by_jet(*xs_and_cs):
        xs, cs = xs_and_cs[: len(args)], unflatten(xs_and_cs[len(args) :])
        series = [cs[i] if i in cs else [Zero.from_primal_value(a)] * ORDER for i, a in enumerate(xs)]
        outs, outs_s = jet_flat(f, xs, series, ORDER)
        zero = lambda o: fnp.zeros(fnp.shape(o), core.get_aval(o).dtype)  # noqa: E731
        return [zero(o) if type(t) is Zero else t for o, s in zip(outs, outs_s) for t in s]

    def by_nested_jvp(*xs_and_cs):
        xs, cs = xs_and_cs[: len(args)], unflatten(xs_and_cs[len(args) :])

        def path(t):
            ys = list(xs)
            for i in varying:
                y = xs[i]
                for k, c in enumerate(cs[i]):
                    y = y + c * t ** (k + 1)
                ys[i] = y
            return f(*ys)

        derivs = _nested_jvp(path, 0.0, ORDER)
        scaled = lambda v, k: v / math.factorial(k) if _dt.is_inexact(core.get_aval(v).dtype) else v  # noqa: E731
        return [scaled(d[o], k) for o in range(len(derivs[0])) for k, d in enumerate(derivs) if k]

    if entry.named_axis is not None:  # a collective: under the vmap that binds its axis
        by_jet = funcgrad.vmap(by_jet, axis_name=entry.named_axis)
        by_nested_jvp = funcgrad.vmap(by_nested_jvp, axis_name=entry.named_axis)
    got, expected = by_jet(*args, *flat_coeffs), by_nested_jvp(*args, *flat_coeffs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if _dt.is_inexact(np.asarray(e).dtype):
            _close(g, e, rtol=1e-7, atol=1e-8)


# ----------------------------------------------------------------------------------------------
# Closed forms to order 10


@pytest.mark.parametrize("x", [0.0, 0.3, -1.2])
def test_series_of_sin_exp_and_geometric_match_closed_forms(x):
    K = 10
    _, s = funcgrad.jet(fnp.sin, (x,), (_seed(K),))
    _close(s, [math.sin(x + k * math.pi / 2) for k in range(1, K + 1)], rtol=1e-12, atol=1e-12)
    _, s = funcgrad.jet(fnp.exp, (x,), (_seed(K),))
    _close(s, [math.exp(x)] * K, rtol=1e-12)
    _, s = funcgrad.jet(lambda y: 1 / (1 - y), (x / 4,), (_seed(K),))
    _close(s, [math.factorial(k) / (1 - x / 4) ** (k + 1) for k in range(1, K + 1)], rtol=1e-11)


def test_powers_at_zero_are_exact():
    # x ** 2.0 and integer_pow are products (no division by x); x ** 2.5 follows x y' = p y x'.
    _close(funcgrad.jet(lambda x: x**2.0, (0.0,), (_seed(3),))[1], [0.0, 2.0, 0.0])
    _close(funcgrad.jet(lambda x: x**5, (0.0,), (_seed(6),))[1], [0, 0, 0, 0, 120, 0])
    _close(funcgrad.jet(lambda x: x**2.5, (1.0,), (_seed(3),))[1], [2.5, 2.5 * 1.5, 2.5 * 1.5 * 0.5])


def test_series_of_tanh_matches_its_taylor_expansion():
    # tanh x = x - x^3/3 + 2x^5/15 - 17x^7/315 + 62x^9/2835 - ...: Taylor coefficients at 0.
    K = 10
    _, c = jet2(fnp.tanh, (0.0,), (_seed(K),))
    expected = [1, 0, -1 / 3, 0, 2 / 15, 0, -17 / 315, 0, 62 / 2835, 0]
    _close(c, expected, rtol=1e-12, atol=1e-14)
    # Away from 0: tanh' = 1 - tanh^2 (a polynomial in y = tanh x), so every derivative is a
    # polynomial in y: P_(k+1)(y) = (1 - y^2) P_k'(y).
    x = 0.7
    y = math.tanh(x)
    poly = np.polynomial.Polynomial([0, 1])
    derivs = []
    for _ in range(K):
        poly = np.polynomial.Polynomial([1, 0, -1]) * poly.deriv()
        derivs.append(poly(y))
    _close(funcgrad.jet(fnp.tanh, (x,), (_seed(K),))[1], derivs, rtol=1e-10)


# ----------------------------------------------------------------------------------------------
# Control flow, calls and custom rules against nested jvp


def _check_against_nested_jvp(f, x, v, order=6, rtol=1e-9):
    _, series = funcgrad.jet(f, (x,), ((v,) + (np.zeros_like(v),) * (order - 1),))
    expected = _derivs_by_nested_jvp(f, x, v, order)
    for got, e in zip(series, expected):
        _close(got, e, rtol=rtol, atol=1e-9 * max(1.0, float(np.max(np.abs(e)))))


def _euler(y0, k):
    """Explicit Euler for y' = -k y + sin(y), 100 steps of 0.01, as a scan."""

    def step(y, _):
        y = y + 0.01 * (-k * y + fnp.sin(y))
        return y, y

    y, ys = lax.scan(step, y0, None, length=100)
    return y + 0.1 * fnp.sum(ys)


# Order 4 through loops: eager loops run compiled (as JAX's), and the nested-jvp reference at order 6
# makes loop bodies of ~14k equations that take seconds each to compile; order 4 still carries every
# Taylor coefficient rule through the loop primitives.
LOOP_ORDER = 4


@pytest.mark.slow
def test_jet_through_scan_euler_solver():
    _check_against_nested_jvp(lambda y0: _euler(y0, 0.5), np.float64(0.8), np.float64(1.0), order=LOOP_ORDER)
    # The series also flows through a closed-over parameter and through stacked xs.
    _check_against_nested_jvp(lambda k: _euler(0.8, k), np.float64(0.5), np.float64(1.0), order=LOOP_ORDER)
    xs = np.linspace(0.0, 1.0, 7)
    scanned = lambda x: lax.scan(lambda c, a: (c * fnp.cos(a * x) + a, c * x), x, xs)  # noqa: E731
    _check_against_nested_jvp(
        lambda x: fnp.sum(scanned(x)[1]) + scanned(x)[0], np.float64(0.4), np.float64(1.0), order=LOOP_ORDER
    )


def test_jet_through_scan_keeps_the_loop():
    jaxpr = funcgrad.make_jaxpr(lambda y: funcgrad.jet(lambda y0: _euler(y0, 0.5), (y,), (_seed(8),)))(0.8)
    scans = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "scan"]
    assert len(scans) == 1 and scans[0].params["length"] == 100


def _newton_sqrt(a):
    return lax.fori_loop(0, 8, lambda i, x: x - (x * x - a) / (2 * x), a)


def _newton_sqrt_while(a):
    body = lambda c: (c[0] + 1, c[1] - (c[1] * c[1] - a) / (2 * c[1]))  # noqa: E731
    return lax.while_loop(lambda c: c[0] < 8, body, (0, a))[1]


@pytest.mark.slow
@pytest.mark.parametrize("solver", [_newton_sqrt, _newton_sqrt_while], ids=["fori_loop", "while_loop"])
def test_jet_through_newton_iteration(solver):
    _check_against_nested_jvp(solver, np.float64(2.0), np.float64(1.0), order=LOOP_ORDER)
    # Converged Newton: the series is that of sqrt.
    _, s = funcgrad.jet(solver, (2.0,), (_seed(4),))
    exact = [0.5 * 2**-0.5, -0.25 * 2**-1.5, 0.375 * 2**-2.5, -0.9375 * 2**-3.5]
    _close(s, exact, rtol=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("x", [0.7, -0.7])
def test_jet_through_cond_and_switch(x):
    f = lambda y: lax.cond(y > 0, lambda z: fnp.sin(z) * z, lambda z: fnp.exp(z) + z**3, y)  # noqa: E731
    _check_against_nested_jvp(f, np.float64(x), np.float64(1.0), order=LOOP_ORDER)
    branches = [lambda z: fnp.tanh(z), lambda z: z * z, lambda z: fnp.log1p(z * z)]
    g = lambda y: lax.switch((y > 0).astype(np.int32) + 1, branches, y)  # noqa: E731
    _check_against_nested_jvp(g, np.float64(x), np.float64(1.0), order=LOOP_ORDER)


@pytest.mark.slow
def test_jet_through_jit_and_checkpoint():
    inner = funcgrad.jit(lambda z: fnp.sin(z) * fnp.exp(z))
    _check_against_nested_jvp(lambda y: inner(y) + funcgrad.checkpoint(fnp.tanh)(y), np.float64(0.3), 1.0)


def test_custom_jvp_uses_its_rule_and_custom_vjp_its_primal_function():
    @funcgrad.custom_jvp
    def f(x):
        return fnp.sin(x)

    # A rule that is not sin's derivative shows that jet follows the rule (as jvp does).
    f.defjvp(lambda primals, tangents: (f(primals[0]), 2.0 * fnp.cos(primals[0]) * tangents[0]))
    _check_against_nested_jvp(f, np.float64(0.4), np.float64(1.0))
    _, (d1, d2) = funcgrad.jet(f, (0.4,), ((1.0, 0.0),))
    _close([d1, d2], [2 * math.cos(0.4), -2 * math.sin(0.4)])

    @funcgrad.custom_vjp
    def g(x):
        return fnp.exp(x) * x

    g.defvjp(lambda x: (g(x), x), lambda x, ct: (ct * 100.0,))
    _, s = funcgrad.jet(g, (0.5,), (_seed(4),))
    _close(s, [math.exp(0.5) * (0.5 + k) for k in range(1, 5)])


def test_jet_through_linear_solves():
    # custom_linear_solve (numpy.linalg.solve) and triangular_solve have series rules of their own
    # (one solve per term); the operator and the right-hand side both vary along the path.
    A = np.eye(3) * 3 + 0.1
    b = np.linspace(0.1, 1.0, 3)
    solve = lambda t: fnp.sum(
        fnp.linalg.solve(A * t + fnp.diag(fnp.array([0.0, 1.0, 1.0]) * t * t), b * fnp.sin(t))
    )  # noqa: E731
    _check_against_nested_jvp(solve, np.float64(1.3), np.float64(1.0))
    tri = lambda t: fnp.sum(
        funcgrad.scipy.linalg.solve_triangular(fnp.tril(A * t + t * t), b * t, lower=True)
    )  # noqa: E731
    _check_against_nested_jvp(tri, np.float64(1.3), np.float64(1.0))
    chol = lambda t: fnp.sum(fnp.linalg.cholesky(A * t + np.eye(3) * t * t))  # noqa: E731
    _check_against_nested_jvp(chol, np.float64(1.3), np.float64(1.0))


def test_jet_through_decompositions_at_order_7():
    # Decompositions take their series from their JVP rules (NOTE: [memoised JVP rules under jet]
    # keeps svd's, which binds svd twice, polynomial in the order).
    A = np.array([[3.0, 1, 0.2], [0.5, 2, 0.1], [0.3, 0.2, 4]])
    B = np.array([[0.3, -1, 0.2], [0.5, 0.7, 0.1], [0.3, 0.2, -0.4]])
    weights = np.arange(9.0).reshape(3, 3)
    cases = [
        lambda t: fnp.sum(funcgrad.scipy.linalg.lu(A + B * t)[2] ** 2),
        lambda t: fnp.sum(fnp.linalg.qr(A + B * t)[0] * weights),
        lambda t: fnp.sum(fnp.linalg.svd(A + B * t, compute_uv=False) ** 3),
        lambda t: fnp.sum(fnp.linalg.eigh(A + A.T + (B + B.T) * t)[1][0] ** 2),
    ]
    for f in cases:
        _check_against_nested_jvp(f, np.float64(0.3), np.float64(1.0), order=7, rtol=1e-8)


# ----------------------------------------------------------------------------------------------
# Composition with vmap, jit, grad and itself


def _f(x):
    return fnp.sum(fnp.tanh(np.linspace(-1, 1, 5) * fnp.sin(x) * x))


def _kth(x, k=4):
    return funcgrad.jet(_f, (x,), (_seed(k),))[1][k - 1]


def test_vmap_of_jet_matches_a_loop():
    xs = np.linspace(-1.0, 1.0, 6)
    _close(funcgrad.vmap(_kth)(xs), [_kth(x) for x in xs], rtol=1e-12)
    # Batched series too: each lane its own direction.
    vs = np.linspace(0.5, 2.0, 6)
    lane = lambda x, v: funcgrad.jet(_f, (x,), ((v, 0.0, 0.0),))[1]  # noqa: E731
    for got, x, v in zip(np.stack(funcgrad.vmap(lane)(xs, vs), 1), xs, vs):
        _close(got, lane(x, v), rtol=1e-12)


def test_jit_of_jet_matches_eager():
    for k in (1, 4, 9):
        _close(funcgrad.jit(lambda x, k=k: _kth(x, k))(0.3), _kth(0.3, k), rtol=1e-11)


def test_grad_of_a_taylor_coefficient_is_the_next_derivative():
    _close(funcgrad.grad(_kth)(0.3), _kth(0.3, 5), rtol=1e-10)
    _close(funcgrad.grad(funcgrad.grad(_kth))(0.3), _kth(0.3, 6), rtol=1e-9)


def test_jet_of_jet():
    first = lambda x: funcgrad.jet(_f, (x,), ((1.0, 0.0),))[1][0]  # noqa: E731
    _, s = funcgrad.jet(first, (0.3,), (_seed(3),))
    _close(s, funcgrad.jet(_f, (0.3,), (_seed(4),))[1][1:], rtol=1e-10)


def test_program_grows_quadratically_with_the_order():
    def count(k):
        return len(funcgrad.make_jaxpr(lambda x: _kth(x, k))(0.3).jaxpr.eqns)

    assert count(16) < 4.5 * count(8)  # ~k^2; nested derivatives would grow ~2^k


# ----------------------------------------------------------------------------------------------
# The API: JAX's conventions, pytrees, zeros, errors


def test_factorial_scaling_and_jet2():
    _, s = funcgrad.jet(fnp.exp, (0.0,), ((1.0, 0.0, 0.0),))
    _close(s, [1.0, 1.0, 1.0])
    _, c = jet2(fnp.exp, (0.0,), ((1.0, 0.0, 0.0),))
    _close(c, [1.0, 0.5, 1 / 6])
    assert experimental_jet is funcgrad.jet


def test_symbolic_zero_terms_and_series():
    f = lambda x, y: fnp.sin(x) * y  # noqa: E731
    y, s = funcgrad.jet(f, (0.3, 2.0), ((1.0, zero_term), zero_series))
    _close(s, [2 * math.cos(0.3), -2 * math.sin(0.3)])
    _close(s, funcgrad.jet(f, (0.3, 2.0), ((1.0, 0.0), (0.0, 0.0)))[1])
    assert float(fact(5)) == 120.0


def test_pytrees_of_primals_and_outputs():
    f = lambda p: {"s": fnp.sin(p["a"]) * p["b"], "c": fnp.cos(p["a"])}  # noqa: E731
    primals = ({"a": 0.3, "b": np.array([1.0, 2.0])},)
    series = (({"a": 1.0, "b": np.zeros(2)}, {"a": 0.0, "b": np.zeros(2)}),)
    y, s = funcgrad.jet(f, primals, series)
    assert set(s) == {"s", "c"} and len(s["s"]) == 2
    _close(s["s"][0], math.cos(0.3) * np.array([1.0, 2.0]))
    _close(s["c"][1], -math.cos(0.3))


def test_constant_outputs_and_integer_inputs_have_zero_series():
    y, s = funcgrad.jet(lambda x, n: (fnp.ones(3) * 2.0, x * n), (1.5, 3), ((1.0, 0.0), (0, 0)))
    _close(s[0][0], np.zeros(3))
    _close(s[0][1], np.zeros(3))
    _close(s[1], [3.0, 0.0])


def test_debug_print_runs_once(capsys):
    def f(x):
        funcgrad.debug.print("x = {}", x)
        return fnp.sin(x)

    funcgrad.jet(f, (0.5,), (_seed(4),))
    assert capsys.readouterr().out.count("x = ") == 1


def test_errors_name_what_is_wrong():
    with pytest.raises(ValueError, match="inconsistent lengths"):
        funcgrad.jet(fnp.add, (1.0, 2.0), ((1.0,), (1.0, 0.0)))
    with pytest.raises(ValueError, match="term 0 of primals\\[0\\] has shape"):
        funcgrad.jet(fnp.sin, (np.ones(3),), ((np.ones(2),),))
    with pytest.raises(TypeError, match="tuples or lists"):
        funcgrad.jet(fnp.sin, 1.0, ((1.0,),))
    no_rule = Primitive("no_rule_for_jet")
    no_rule.def_impl(lambda x: x)
    no_rule.def_abstract_eval(lambda x: x)
    with pytest.raises(NotImplementedError, match="no_rule_for_jet"):
        funcgrad.jet(lambda x: no_rule.bind(x), (1.0,), ((1.0,),))


def test_taylor_derivatives():
    d = funcgrad.taylor_derivatives(fnp.sin, 0.5, 5)
    _close(d, [math.sin(0.5 + k * math.pi / 2) for k in range(6)], rtol=1e-12)
    x, v = np.array([0.3, -0.2]), np.array([1.0, 2.0])
    f = lambda z: fnp.sum(fnp.exp(z) * z)  # noqa: E731
    got = funcgrad.taylor_derivatives(f, x, 3, direction=v)
    _close(got[1:], _derivs_by_nested_jvp(f, x, v, 3))
    with pytest.raises(ValueError, match="direction"):
        funcgrad.taylor_derivatives(f, x, 3)


# ----------------------------------------------------------------------------------------------
# jax.experimental.jet as an oracle


def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    from jax.experimental import jet as jax_jet  # noqa: PLC0415 - the oracle, only in tests

    return jax, jax.numpy, jax_jet.jet


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        "sin_exp",
        "log_div",
        "pow",
        "dot_tanh",
        "logistic_sqrt",
        "erf_atanh",
        "max_abs_cumprod",
        "cumsum_max",
        "integer_pow",
    ],
)
def test_matches_jax_experimental_jet(name):
    jax, jnp, jax_jet = _jax()
    rng = np.random.default_rng(1)
    W = rng.standard_normal((3, 4))
    fns = {
        "sin_exp": lambda m: lambda x: m.sin(x) * m.exp(x),
        "log_div": lambda m: lambda x: m.log(x * x + 1.0) / (x + 3.0),
        "pow": lambda m: lambda x: (x * x + 1.0) ** (x * 0.5),
        "dot_tanh": lambda m: lambda x: m.tanh(m.dot(W, x)),
        "logistic_sqrt": lambda m: lambda x: m.sqrt(x * x + 2.0) * (1 / (1 + m.exp(-x))),
        "erf_atanh": lambda m: lambda x: m.arctanh(x / 2) + (jax.scipy.special if m is jnp else fsp).erf(x),
        "cumsum_max": lambda m: lambda x: m.cumsum(x) * m.max(x),
        "integer_pow": lambda m: lambda x: x**3 + x**-2,
        "max_abs_cumprod": lambda m: lambda x: m.maximum(x, 1.0 - x) * m.abs(x - 1.0) + m.cumprod(x),
    }
    x = rng.uniform(0.5, 1.5, 4)
    series = tuple(rng.standard_normal(4) for _ in range(4))
    y, s = funcgrad.jet(fns[name](fnp), (x,), (series,))
    # (jax's side as one program: eagerly jax compiles one per operation and Taylor rule)
    jy, js = jax.jit(lambda x, series: jax_jet(fns[name](jnp), (x,), (series,)))(x, series)
    _close(y, jy, rtol=1e-12)
    for a, b in zip(s, js):
        _close(a, b, rtol=1e-9, atol=1e-9)


def test_jet_weak_types_of_python_scalars_and_zero_series_as_jax():
    # (the transformation-composition fuzzer, session 19) jax's series of a Python scalar's path
    # are weakly typed at every order, and a zero series (an output not depending on the inputs)
    # has its primal's weak type: funcgrad's terms after the first were strong (the factorial
    # scaling), and its zero series strong, so a float32 value beside them became float64
    jax = pytest.importorskip("jax")
    import jax.experimental.jet as jjet

    jax.config.update("jax_enable_x64", True)  # (the oracle in funcgrad's default mode)
    cases = [
        (lambda n: lambda a, b: n.sin(a) * b, (1.0, 2.0), ((1.0, 0.5), (0.3, 0.2))),
        (lambda n: lambda a: n.exp(a), (1.0,), ((1.0, 0.5, 0.1),)),
        (lambda n: lambda a: n.sin(a), (1.0,), ((np.float64(1.0), 0.5, 0.1),)),
        # (session 20: a product of two Python scalars' terms in a Cauchy sum was a strong
        # constant, so the second term of a * a came out strong)
        (lambda n: lambda a: a * a, (0.5,), ((0.25, 0.1),)),
        (lambda n: lambda a: a * a * a, (0.5,), ((1.0, 0.0, 0.5),)),
        (
            lambda n: lambda a: (n.sin(a), n.sin(2.5)),
            (np.float32(1.0),),
            ((np.float32(1.0), np.float32(0.5)),),
        ),
    ]
    for make, primals, series in cases:
        ours = experimental_jet(make(fnp), primals, series)
        theirs = jjet.jet(make(jax.numpy), primals, series)
        a, b = jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
        assert [(v.dtype, v.weak_type) for v in a] == [(v.dtype, v.weak_type) for v in b]
        for u, v in zip(a, b):
            np.testing.assert_allclose(
                np.asarray(u), np.asarray(v), rtol=1e-12 if u.dtype == np.float64 else 1e-6
            )


def test_jet_of_log_at_zero_as_jax():
    # (the transformation-composition fuzzer's jet probe, session 19) log's series at x0 = 0 by
    # JAX's recurrence, x y' = x': its infinities are jax's (the third term was NaN, jax -inf)
    jax = pytest.importorskip("jax")
    import jax.experimental.jet as jjet

    jax.config.update("jax_enable_x64", True)
    x = np.array([0.3, -1.2, 2.0, 0.0, -0.0, 1.0])
    terms = tuple(np.cos(np.arange(x.size) + k) * 0.7 for k in range(4))
    for order in (1, 2, 3, 4):
        p, s = experimental_jet(fnp.log, (x,), (terms[:order],))
        q, t = jjet.jet(jax.numpy.log, (x,), (terms[:order],))
        for u, v in zip([p, *s], [q, *t]):
            np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-12, equal_nan=True)
