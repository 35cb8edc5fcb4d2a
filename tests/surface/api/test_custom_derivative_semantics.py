"""custom_jvp / custom_vjp evaluate as JAX's do (NOTE: [custom calls follow the trace]): the
examples of JAX's "Custom derivative rules" tutorial, each written once against a library
namespace and run on funcgrad and on jax 0.10.2 (the oracle), comparing the numbers, which
rules ran how often (the examples' ``print`` side effects), what the rules received, and the
Python types of eager results."""

from __future__ import annotations

import contextlib
import io
import math
import sys
import types
from collections import namedtuple
from functools import partial

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax as flax

Point = namedtuple("Point", ["x", "y"])


def _funcgrad():
    return types.SimpleNamespace(
        custom_jvp=funcgrad.custom_jvp,
        custom_vjp=funcgrad.custom_vjp,
        grad=funcgrad.grad,
        jvp=funcgrad.jvp,
        vjp=funcgrad.vjp,
        jit=funcgrad.jit,
        vmap=funcgrad.vmap,
        np=fnp,
        while_loop=flax.while_loop,
    )


@pytest.fixture(scope="module")
def jax_lib():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    return types.SimpleNamespace(
        custom_jvp=jax.custom_jvp,
        custom_vjp=jax.custom_vjp,
        grad=jax.grad,
        jvp=jax.jvp,
        vjp=jax.vjp,
        jit=jax.jit,
        vmap=jax.vmap,
        np=jnp,
        while_loop=jax.lax.while_loop,
    )


def _run(example, lib):
    """The example's results and what it printed (its rules' side effects)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        results = example(lib)
    return results, out.getvalue().split("\n")


def _leaves(x):
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in _leaves(x[k])]
    if isinstance(x, tuple | list):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


def _same(ours, theirs):
    a, b = _leaves(ours), _leaves(theirs)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-12, atol=1e-14)


# ----------------------------------------------------------------------------------------------
# The tutorial's examples, each a function of a library namespace


def summary_custom_jvp(L):
    @L.custom_jvp
    def f(x, y):
        return L.np.sin(x) * y

    @f.defjvp
    def f_jvp(primals, tangents):
        x, y = primals
        x_dot, y_dot = tangents
        return f(x, y), L.np.cos(x) * x_dot * y + L.np.sin(x) * y_dot

    g = L.custom_jvp(lambda x, y: L.np.sin(x) * y)
    g.defjvps(lambda x_dot, ans, x, y: L.np.cos(x) * x_dot * y, lambda y_dot, ans, x, y: L.np.sin(x) * y_dot)
    return [
        f(2.0, 3.0),
        L.jvp(f, (2.0, 3.0), (1.0, 0.0)),
        L.grad(f)(2.0, 3.0),
        L.jvp(g, (2.0, 3.0), (1.0, 0.0)),
    ]


def summary_custom_vjp(L):
    @L.custom_vjp
    def f(x, y):
        return L.np.sin(x) * y

    def f_fwd(x, y):
        return f(x, y), (L.np.cos(x), L.np.sin(x), y)

    def f_bwd(res, g):
        cos_x, sin_x, y = res
        return (cos_x * g * y, sin_x * g)

    f.defvjp(f_fwd, f_bwd)
    return [f(2.0, 3.0), L.grad(f)(2.0, 3.0), L.grad(f, (0, 1))(2.0, 3.0)]


def numerical_stability(L):
    @L.custom_jvp
    def log1pexp(x):
        return L.np.log(1.0 + L.np.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        (x,), (x_dot,) = primals, tangents
        return log1pexp(x), (1 - 1 / (1 + L.np.exp(x))) * x_dot

    return [
        L.grad(log1pexp)(100.0),
        L.jit(log1pexp)(3.0),
        L.jit(L.grad(log1pexp))(3.0),
        L.vmap(L.jit(L.grad(log1pexp)))(L.np.arange(3.0)),
    ]


def differentiation_convention(L):
    @L.custom_jvp
    def f(x):
        return x / (1 + L.np.sqrt(x))

    f.defjvps(lambda t, ans, x: ((L.np.sqrt(x) + 2) / (2 * (L.np.sqrt(x) + 1) ** 2)) * t)
    return [L.grad(f)(0.0), L.grad(f)(4.0)]


def gradient_clipping(L):
    @L.custom_vjp
    def clip_gradient(lo, hi, x):
        return x

    clip_gradient.defvjp(lambda lo, hi, x: (x, (lo, hi)), lambda res, g: (None, None, L.np.clip(g, *res)))

    def clip_sin(x):
        return L.np.sin(clip_gradient(-0.75, 0.75, x))

    t = L.np.linspace(0, 10, 50)
    return [clip_sin(t), L.vmap(L.grad(clip_sin))(t)]


def implicit_fixed_point(L):
    @partial(L.custom_vjp, nondiff_argnums=(0,))
    def fixed_point(f, a, x_guess):
        def cond_fun(carry):
            x_prev, x = carry
            return L.np.abs(x_prev - x) > 1e-6

        def body_fun(carry):
            _, x = carry
            return x, f(a, x)

        _, x_star = L.while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
        return x_star

    def fixed_point_fwd(f, a, x_init):
        x_star = fixed_point(f, a, x_init)
        return x_star, (a, x_star)

    def rev_iter(f, packed, u):
        a, x_star, x_star_bar = packed
        _, vjp_x = L.vjp(lambda x: f(a, x), x_star)
        return x_star_bar + vjp_x(u)[0]

    def fixed_point_rev(f, res, x_star_bar):
        a, x_star = res
        _, vjp_a = L.vjp(lambda a: f(a, x_star), a)
        (a_bar,) = vjp_a(fixed_point(partial(rev_iter, f), (a, x_star, x_star_bar), x_star_bar))
        return a_bar, L.np.zeros_like(x_star)

    fixed_point.defvjp(fixed_point_fwd, fixed_point_rev)

    def newton_sqrt(a):
        return fixed_point(lambda a, x: 0.5 * (x + a / x), a, a)

    return [
        newton_sqrt(2.0),
        L.jit(L.vmap(newton_sqrt))(L.np.array([1.0, 2.0, 3.0, 4.0])),
        L.grad(newton_sqrt)(2.0),
        L.grad(L.grad(newton_sqrt))(2.0),
    ]


def side_effects_custom_jvp(L):
    @L.custom_jvp
    def f(x):
        print("called f!")
        return L.np.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        print("called f_jvp!")
        (x,), (t,) = primals, tangents
        return f(x), L.np.cos(x) * t

    out = []
    for name, thunk in [
        ("eager", lambda: f(3.0)),
        ("vmap", lambda: L.vmap(f)(L.np.arange(3.0))),
        ("jit", lambda: L.jit(f)(3.0)),
        ("jvp", lambda: L.jvp(f, (3.0,), (1.0,))),
        ("grad", lambda: L.grad(f)(3.0)),
        ("grad-of-grad", lambda: L.grad(L.grad(f))(3.0)),
    ]:
        print(f"-- {name}")
        out.append(thunk())
    return out


def python_control_flow(L):
    @L.custom_jvp
    def f(x):
        if x > 0:
            return L.np.sin(x)
        else:
            return L.np.cos(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (x_dot,) = primals, tangents
        ans = f(x)
        if x > 0:
            return ans, 2 * x_dot
        else:
            return ans, 3 * x_dot

    return [
        f(1.0),
        f(-1.0),
        L.grad(f)(1.0),
        L.grad(f)(-1.0),
        L.jvp(f, (1.0,), (1.0,)),
        L.vjp(f, -1.0)[1](1.0),
    ]


def side_effects_custom_vjp(L):
    @L.custom_vjp
    def f(x):
        print("called f!")
        return L.np.sin(x)

    def f_fwd(x):
        print("called f_fwd!")
        return f(x), L.np.cos(x)

    def f_bwd(cos_x, y_bar):
        print("called f_bwd!")
        return (cos_x * y_bar,)

    f.defvjp(f_fwd, f_bwd)
    print("-- eager")
    out = [f(3.0)]
    print("-- grad")
    out.append(L.grad(f)(3.0))
    print("-- vjp")
    y, f_vjp = L.vjp(f, 3.0)
    out.append(y)
    print("-- vjp function")
    out.append(f_vjp(1.0))
    return out


def pytree_containers(L):
    @L.custom_jvp
    def f(pt):
        x, y = pt.x, pt.y
        return {"a": x**2, "b": (L.np.sin(x), L.np.cos(y))}

    @f.defjvp
    def f_jvp(primals, tangents):
        (pt,), (pt_dot,) = primals, tangents
        ans_dot = {
            "a": 2 * pt.x * pt_dot.x,
            "b": (L.np.cos(pt.x) * pt_dot.x, -L.np.sin(pt.y) * pt_dot.y),
        }
        return f(pt), ans_dot

    @L.custom_vjp
    def h(pt):
        x, y = pt.x, pt.y
        return {"a": x**2, "b": (L.np.sin(x), L.np.cos(y))}

    def h_bwd(pt, g):
        a_bar, (b0_bar, b1_bar) = g["a"], g["b"]
        return (Point(2 * pt.x * a_bar + L.np.cos(pt.x) * b0_bar, -L.np.sin(pt.y) * b1_bar),)

    h.defvjp(lambda pt: (h(pt), pt), h_bwd)

    def fun(g, pt):
        dct = g(pt)
        return dct["a"] + dct["b"][0]

    pt = Point(1.0, 2.0)
    return [f(pt), L.grad(partial(fun, f))(pt), h(pt), L.grad(partial(fun, h))(pt)]


def nondiff_arguments(L):
    @partial(L.custom_jvp, nondiff_argnums=(0,))
    def app(f, x):
        return f(x)

    @app.defjvp
    def app_jvp(f, primals, tangents):
        (x,), (x_dot,) = primals, tangents
        return f(x), 2.0 * x_dot

    @partial(L.custom_jvp, nondiff_argnums=(0, 2))
    def app2(f, x, g):
        return f(g(x))

    @app2.defjvp
    def app2_jvp(f, g, primals, tangents):
        (x,), (x_dot,) = primals, tangents
        return f(g(x)), 3.0 * x_dot

    @partial(L.custom_vjp, nondiff_argnums=(0,))
    def app3(f, x):
        return f(x)

    app3.defvjp(lambda f, x: (f(x), x), lambda f, x, g: (5 * g,))
    cube, times5 = (lambda x: x**3), (lambda y: 5 * y)
    return [
        app(cube, 3.0),
        L.grad(app, 1)(cube, 3.0),
        app2(cube, 3.0, times5),
        L.grad(app2, 1)(cube, 3.0, times5),
        app3(lambda x: x**2, 4.0),
        L.grad(app3, 1)(lambda x: x**2, 4.0),
    ]


def keyword_arguments(L):
    @L.custom_jvp
    def f(x, y=2.0):
        return x**2 * y

    f.defjvps(lambda x_dot, ans, x, y: 2 * x * y * x_dot, None)

    @L.custom_vjp
    def g(x, y=2.0):
        return x * y

    g.defvjp(lambda x, y=2.0: (x * y, (x, y)), lambda res, ct: (res[1] * ct, res[0] * ct))
    return [f(3.0), f(3.0, y=4.0), L.grad(f)(3.0), L.grad(lambda x: f(x, y=4.0))(3.0), L.grad(g)(3.0, y=5.0)]


def rule_applies_the_function_to_tangents(L):
    # lineax's inexact_asarray: the JVP rule calls the custom_jvp function on the tangent too, so
    # it lands in the linear program and reverse mode transposes it through its function
    @partial(L.custom_jvp, nondiff_argnums=(0,))
    def cast(scale, x):
        return x * scale

    cast.defjvp(lambda scale, xs, ts: (cast(scale, xs[0]), cast(scale, ts[0])))
    f = lambda v: L.np.sum(L.np.sin(cast(3.0, v)) * v)  # noqa: E731
    v = L.np.arange(3.0)
    return [L.grad(f)(v), L.jit(L.grad(f))(v), L.vjp(lambda v: cast(2.0, v), v)[1](L.np.ones(3))]


EXAMPLES = [
    rule_applies_the_function_to_tangents,
    summary_custom_jvp,
    summary_custom_vjp,
    numerical_stability,
    differentiation_convention,
    gradient_clipping,
    implicit_fixed_point,
    side_effects_custom_jvp,
    python_control_flow,
    side_effects_custom_vjp,
    pytree_containers,
    nondiff_arguments,
    keyword_arguments,
]


@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.__name__)
def test_tutorial_example_matches_jax(example, jax_lib):
    ours, our_log = _run(example, _funcgrad())
    theirs, their_log = _run(example, jax_lib)
    _same(ours, theirs)
    assert our_log == their_log  # the rules ran as often, in the same order


# ----------------------------------------------------------------------------------------------
# Closed forms (fast tier, no jax)


def test_an_eager_call_runs_the_function_once_on_the_values_given():
    seen = []

    @funcgrad.custom_jvp
    def f(x):
        seen.append(x)
        return 2.0 if x > 0 else -1.0

    f.defjvp(lambda p, t: (f(*p), 0.0 * t[0]))
    assert f(1.0) == 2.0 and type(f(1.0)) is float  # a Python float the function makes stays one
    assert f(-3.0) == -1.0
    # (each argument as the typed scalar JAX's bind makes of a Python float: a float, typed)
    assert seen == [1.0, 1.0, -3.0] and all(isinstance(x, float) and x.dtype == np.float64 for x in seen)


def test_eager_results_forwarding_python_scalars_are_typed_as_jax(jax_lib):
    def build(api):
        @api.custom_jvp
        def f(x, y):
            return y

        f.defjvp(lambda p, t: (p[1], t[1]))

        @api.custom_vjp
        def g(x, n):
            return x, n, 5.0, True

        g.defvjp(lambda x, n: ((x, n, 5.0, True), None), lambda r, ct: (ct[0], None))
        return [f(1.0, 2.0), f(1.0, 2j), *g(1.0, 3)]

    got, want = build(_funcgrad()), build(jax_lib)
    assert [(type(a).__name__, repr(a)) for a in got] == [(type(b).__name__, repr(b)) for b in want]


def test_the_rule_receives_concrete_primals_under_eager_differentiation():
    kinds = []

    @funcgrad.custom_jvp
    def f(x):
        return x**3

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        kinds.append(isinstance(x, funcgrad.core.Tracer))
        scale = 3.0 if float(x) > 0 else -1.0  # Python on the primal value
        return f(x), scale * x**2 * t

    assert float(funcgrad.grad(f)(2.0)) == 12.0
    assert float(funcgrad.jvp(f, (2.0,), (1.0,))[1]) == 12.0
    assert float(funcgrad.vjp(f, -2.0)[1](1.0)[0]) == -4.0
    assert float(funcgrad.linearize(f, 2.0)[1](1.0)) == 12.0
    assert float(funcgrad.jacfwd(f)(2.0)) == 12.0
    assert kinds == [False] * 5


def test_grad_of_grad_runs_the_rule_on_the_outer_values():
    @funcgrad.custom_jvp
    def f(x):
        return fnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), fnp.cos(x) * t if x > 0 else 0.0 * t

    assert math.isclose(float(funcgrad.grad(funcgrad.grad(f))(1.0)), -math.sin(1.0), rel_tol=1e-12)
    assert float(funcgrad.grad(funcgrad.grad(f))(-1.0)) == 0.0


def test_a_custom_vjp_runs_fwd_and_bwd_once_per_grad():
    calls = []

    @funcgrad.custom_vjp
    def f(x):
        calls.append("f")
        return fnp.sin(x)

    def f_fwd(x):
        calls.append("fwd")
        return f(x), fnp.cos(x) if x > 0 else -fnp.cos(x)

    def f_bwd(c, g):
        calls.append("bwd")
        return (c * g,)

    f.defvjp(f_fwd, f_bwd)
    assert math.isclose(float(funcgrad.grad(f)(1.0)), math.cos(1.0), rel_tol=1e-14)
    assert math.isclose(float(funcgrad.grad(f)(-1.0)), -math.cos(1.0), rel_tol=1e-14)
    assert calls == ["fwd", "f", "bwd"] * 2


def test_jit_and_vmap_still_trace_the_function():
    @funcgrad.custom_jvp
    def f(x):
        return fnp.sin(x)

    f.defjvps(lambda t, ans, x: 2.0 * t)
    assert "custom_jvp_call" in str(funcgrad.make_jaxpr(f)(1.0))
    np.testing.assert_allclose(funcgrad.vmap(funcgrad.grad(f))(fnp.ones(3)), 2.0 * np.ones(3))
    assert float(funcgrad.jit(funcgrad.grad(f))(0.3)) == 2.0


def test_a_rule_returning_the_wrong_tangent_is_a_type_error():
    f = funcgrad.custom_jvp(lambda x: x)
    f.defjvp(lambda p, t: (p[0], fnp.ones(3)))
    with pytest.raises(TypeError, match=r"corresponding shapes and dtypes.*float64\[3\]"):
        funcgrad.jvp(f, (2.0,), (1.0,))
    f.defjvp(lambda p, t: (p[0], fnp.asarray(t[0], np.float32)))
    with pytest.raises(TypeError, match="corresponding shapes and dtypes"):
        funcgrad.grad(f)(np.float64(2.0))
    f.defjvp(lambda p, t: ((p[0], p[0]), t[0]))
    with pytest.raises(TypeError, match="equal container"):
        funcgrad.jvp(f, (2.0,), (1.0,))


def test_nondiff_argnames():
    @partial(funcgrad.custom_jvp, nondiff_argnames=("n",))
    def power(x, n):
        return x**n

    @power.defjvp
    def power_jvp(n, primals, tangents):
        (x,), (t,) = primals, tangents
        return power(x, n), n * x ** (n - 1) * t

    assert power.nondiff_argnums == (1,)
    assert float(funcgrad.grad(power)(2.0, 3)) == 12.0


@pytest.mark.slow
def test_weak_types_of_derivatives_match_jax(jax_lib):
    L, F = jax_lib, _funcgrad()

    def cases(L):
        f = L.custom_jvp(lambda x: L.np.sin(x))
        f.defjvps(lambda t, ans, x: L.np.cos(x) * t)
        jac = {"jacfwd": funcgrad.jacfwd, "jacrev": funcgrad.jacrev}
        if L is not F:
            import jax

            jac = {"jacfwd": jax.jacfwd, "jacrev": jax.jacrev}
        return [
            L.grad(f)(1.0),
            L.jvp(f, (1.0,), (1.0,))[1],
            L.grad(lambda z: L.np.abs(z) ** 2)(1.0 + 2.0j),
            L.grad(lambda z: z**2, holomorphic=True)(1.0 + 2.0j),
            L.grad(lambda x: L.np.real(L.np.exp(1j * x)))(1.0),
            jac["jacfwd"](L.np.sin)(1.0),
            jac["jacrev"](L.np.sin)(1.0),
            jac["jacfwd"](f)(1.0),
            jac["jacrev"](lambda x: (x**3).sum())(L.np.ones(2)),
        ]

    ours, theirs = cases(F), cases(L)
    _same(ours, theirs)
    assert [(a.dtype, a.weak_type) for a in ours] == [(b.dtype, b.weak_type) for b in theirs]


def test_zero_from_primal():
    from funcgrad.custom_derivatives import SymbolicZero, zero_from_primal

    zeros = zero_from_primal({"a": np.ones(2, np.float32), "b": 3})
    assert zeros["a"].dtype == np.float32 and np.asarray(zeros["a"]).tolist() == [0.0, 0.0]
    assert np.asarray(zeros["b"]).dtype == funcgrad.dtypes.float0
    z = zero_from_primal(1.0, symbolic_zeros=True)
    assert type(z) is SymbolicZero and z.shape == () and z.dtype == np.float64


def test_pdb_in_a_custom_vjp_backward_pass():
    # The tutorial's debugging example: pdb stops in bwd, on the concrete residual and cotangent
    # (a Pdb given scripted input: pytest replaces pdb.set_trace with its own).
    import pdb

    out = io.StringIO()

    @funcgrad.custom_vjp
    def debug(x):
        return x

    def debug_bwd(x, g):
        pdb.Pdb(stdin=io.StringIO("p float(x)\np float(g)\nc\n"), stdout=out).set_trace()
        return (g,)

    debug.defvjp(lambda x: (x, x), debug_bwd)
    got = funcgrad.grad(lambda x: fnp.sin(debug(x**2)))(3.0)
    sys.settrace(None)
    assert "9.0" in out.getvalue() and repr(float(np.cos(9.0))) in out.getvalue()
    assert math.isclose(float(got), 6.0 * math.cos(9.0), rel_tol=1e-14)


def test_custom_functions_closing_over_a_vmapped_value_as_jax():
    # JAX's custom_api_test (issue 3822) through funcgrad.as_jax: a custom_vjp/custom_jvp function
    # whose arguments are not batched but which closes over the vmap's value (it raised
    # UnexpectedTracerError: the call went to the parent trace, which cannot take the closure).
    import jax
    import jax.numpy as jnp

    def outer(api, np_, x):
        @api.custom_vjp
        def f(y):
            return x * y

        f.defvjp(lambda y: (f(y), np_.cos(y)), lambda c, g: (c * g,))
        return f

    for api, np_ in ((funcgrad, fnp), (jax, jnp)):
        f = partial(outer, api, np_)
        got = api.vmap(lambda x, f=f: f(x)(3.0))(np.arange(3.0))
        np.testing.assert_allclose(got, np.arange(3.0) * 3)
        grads = api.vmap(api.grad(lambda y, x, f=f: f(x)(y)), (None, 0))(3.0, np.arange(3.0))
        np.testing.assert_allclose(grads, np.full(3, np.cos(3.0)), rtol=1e-6)


def test_a_traced_value_among_custom_vjp_nondiff_argnums_is_refused_as_jax():
    # JAX's custom_api_test test_nondiff_arg_tracer_error: bwd gets nondiff arguments as they were,
    # outside the trace that made them; JAX refuses a tracer there, under jit and vmap too (funcgrad
    # computed jit's and vmap's, and named grad's an escaped tracer)
    import jax
    import jax.numpy as jnp

    def check(api, np_):
        @partial(api.custom_vjp, nondiff_argnums=(0,))
        def f(x, y):
            return x * y

        f.defvjp(lambda x, y: (f(x, y), np_.cos(y)), lambda x, c, g: (c * g,))
        calls = (
            lambda: api.jit(f)(2.0, 3.0),
            lambda: api.grad(api.jit(f), 1)(2.0, 3.0),
            lambda: api.grad(lambda x: f(x, 3.0))(2.0),
            lambda: api.vmap(f, (0, None))(np_.ones(2), 3.0),
        )
        for call in calls:
            with pytest.raises(
                api.errors.UnexpectedTracerError, match="nondiff_argnums as non-differentiable"
            ):
                call()
        assert float(api.grad(f, 1)(2.0, 3.0)) == pytest.approx(np.cos(3.0))  # (a value is fine)

    check(jax, jnp)
    check(funcgrad, fnp)


def test_disable_bwd_checks_takes_bwd_cotangents_unchecked_as_jax():
    # JAX's custom_api_test test_bwd_rule_shape_mismatch_disable: jax_disable_bwd_checks lets a
    # cotangent of another shape through, as JAX's (its value is bwd's); without it, JAX's ValueError
    import jax
    import jax.numpy as jnp

    def grad_of_mismatch(api, np_):
        @api.custom_vjp
        def foo(x, y):
            return x

        foo.defvjp(lambda x, y: (x, None), lambda _, g: (np_.zeros(3), np_.zeros(3)))
        return api.grad(lambda x, y: foo(x, y).sum(), 1)(np_.ones(3), np_.ones(4))

    for api, np_ in ((jax, jnp), (funcgrad, fnp)):
        with pytest.raises(ValueError, match="Custom VJP bwd rule must produce an output with the same type"):
            grad_of_mismatch(api, np_)
        api.config.update("jax_disable_bwd_checks", True)
        try:
            got = grad_of_mismatch(api, np_)
        finally:
            api.config.update("jax_disable_bwd_checks", False)
        np.testing.assert_array_equal(got, np.zeros(3))


def test_custom_jvp_of_a_partial_and_keyword_only_defaults_as_jax():
    # JAX's custom_api_test: a functools.partial with bound keywords is opaque (its keywords are
    # not the caller's), a keyword-only default stays the function's, and binding errors say JAX's
    # words (funcgrad raised "keyword arguments could not be resolved" for both calls).
    import jax

    def fun(x, y, a):
        return x + y * a

    for api in (funcgrad, jax):
        fw = partial(fun, a=0.1)
        fn = api.custom_jvp(fw)
        fn.defjvp(lambda p, t, api=api, fw=fw: api.jvp(fw, p, t))
        grads = api.grad(lambda args, fn=fn: fn(*args))((1.0, 2.0))
        np.testing.assert_allclose([float(g) for g in grads], [1.0, 0.1], rtol=1e-6)

        @api.custom_jvp
        def g(x, y, *, k=2.0):
            return x * y * k

        g.defjvp(lambda p, t, g=g: (g(*p), t[0] * p[1] * 2.0 + t[1] * p[0] * 2.0))
        assert float(api.grad(g)(3.0, 1.0)) == 2.0
        with pytest.raises(
            TypeError, match="custom_jvp-decorated function g(.*)\n.*missing a required argument"
        ):
            g(0.5)
        with pytest.raises(TypeError, match="could not be resolved to positions: k"):
            g(0.5, 1.0, k=3.0)


def test_custom_jvp_of_concrete_values_under_ensure_compile_time_eval_as_jax():
    # JAX's custom_api_test: inside ensure_compile_time_eval under jit, a custom_jvp function of
    # concrete arguments runs on them (its body compares them; it was traced and raised).
    import jax

    for api in (funcgrad, jax):

        @api.custom_jvp
        def f(x):
            assert x == 0.0  # concrete
            return x + 1.0

        f.defjvp(lambda p, t: (p[0], t[0]))

        def g(api=api, f=f):
            with api.ensure_compile_time_eval():
                return f(0.0)

        assert float(api.jit(g)()) == 1.0


_SZ_TRANSFORMS = {
    "eager grad": lambda api, f: api.grad(f)(1.0, 2.0),
    "jit grad": lambda api, f: api.jit(api.grad(f))(1.0, 2.0),
    "linearize": lambda api, f: api.linearize(f, 1.0, 2.0)[1](1.0, 1.0),
    "vmap of jvp": lambda api, f: api.vmap(lambda a, b: api.jvp(f, (a, b), (a, b))[1])(
        np.ones(2), np.ones(2)
    ),
    "jvp of vmap": lambda api, f: api.jvp(api.vmap(f), (np.ones(2),) * 2, (np.ones(2),) * 2)[1],
}


def _symbolic_zero_case(api, how):
    seen = []
    SymbolicZero = api.custom_derivatives.SymbolicZero

    @api.custom_jvp
    def nondiff(x):
        return x

    @nondiff.defjvp
    def _nondiff_jvp(p, t):
        raise RuntimeError("a tangent reached nondiff's rule")

    @api.custom_jvp
    def cut(x, y):  # y's tangent is declared zero
        return x, y

    cut.defjvp(lambda p, t: (p, (t[0], SymbolicZero.from_primal_value(p[1]))), symbolic_zeros=True)

    @api.custom_jvp
    def record(x, y):
        return x + y

    def _record_jvp(p, t):
        seen.append(type(t[1]) is SymbolicZero)
        return p[0] + p[1], t[0]

    record.defjvp(_record_jvp, symbolic_zeros=True)

    def f(a, b):
        x, y = cut(a, b)
        nondiff(y)
        return record(x, y) * 2.0

    got = _SZ_TRANSFORMS[how](api, f)
    np.testing.assert_allclose(np.asarray(got), np.full(np.shape(got), 2.0))
    assert seen == [True], (api.__name__, seen)


@pytest.mark.parametrize("how", list(_SZ_TRANSFORMS))
def test_symbolic_zero_tangents_reach_custom_rules_as_jax(how):
    # JAX 0.10.2: a rule that returns a SymbolicZero makes that output unperturbed, so a later
    # custom_jvp rule gets a SymbolicZero for it (symbolic_zeros=True) or is not run at all when all
    # its tangents are zero (equinox's nondifferentiable raises in its rule: test_unperturbed_output).
    # funcgrad materialised the zeros in vmap's batched rule and kept eager grad's recorded output.
    import jax

    for api in (funcgrad, jax):
        _symbolic_zero_case(api, how)


def _vjp_zero_cotangent_under_vmap(api):
    seen = []

    @api.custom_vjp
    def f(x, y):
        return x, y

    def fwd(x, y):
        seen.append((x.perturbed, y.perturbed))
        return f(x.value, y.value), None

    def bwd(_, g):
        seen.append(type(g[1]) is api.custom_derivatives.SymbolicZero)
        return g[0], None  # (None: y's cotangent is zero)

    f.defvjp(fwd, bwd, symbolic_zeros=True)
    grads = api.grad(lambda x, y: api.vmap(f)(x, y)[0].sum(), (0, 1))(np.ones(3), np.ones(3))
    return seen, [np.asarray(g).tolist() for g in grads]


def test_custom_vjp_zero_cotangents_stay_symbolic_under_vmap_as_jax():
    # JAX's custom_api_test test_symbolic_zero_custom_vjp_vmap_output: vmap's batched bwd got
    # materialised zeros (a BatchTracer) for the unused output's cotangent.
    import jax

    assert _vjp_zero_cotangent_under_vmap(funcgrad) == _vjp_zero_cotangent_under_vmap(jax)
    assert _vjp_zero_cotangent_under_vmap(funcgrad)[0] == [(True, True), True]


def test_closure_convert_called_with_another_structure_says_jax_words():
    # JAX's custom_api_test test_closure_convert_pytree_mismatch
    f, consts = funcgrad.closure_convert(lambda x: x * 2.0, 1.0)
    with pytest.raises(TypeError, match="The inputs to the closure produced by closure_convert must have"):
        f((1.0,), *consts)


def _rule_closing_over_a_vmapped_value(api, np_):
    # JAX's issue 8783 (custom_api_test test_closure_with_vmap2): the rule closes over the vmap's
    # value; it ran in a fresh vmap that did not know that value's tracer (UnexpectedTracerError).
    def h(z):
        def f(x):
            @api.custom_jvp
            def g(y):
                return x * y

            g.defjvp(lambda p, t: (x * p[0], x * t[0]))
            return g(z)

        return api.vmap(f)(np_.arange(3.0))

    return [np.asarray(v).tolist() for v in api.jvp(h, (1.0,), (2.0,))]


def test_a_rule_closing_over_a_vmapped_value_as_jax():
    import jax
    import jax.numpy as jnp

    got = _rule_closing_over_a_vmapped_value(funcgrad, fnp)
    assert got == _rule_closing_over_a_vmapped_value(jax, jnp) == [[0.0, 1.0, 2.0], [0.0, 2.0, 4.0]]


def test_jacfwd_tangent_of_a_python_scalar_is_weak_as_jax():
    # (session 20's transformation-composition fuzzer, seed 2009) jacfwd's basis for a Python
    # scalar argument was a strong float64 tangent, so a custom_jvp rule's tangent of a float32
    # value scaled by it came out float64 and jacfwd raised 'Custom JVP rule must produce primal and
    # tangent outputs with corresponding shapes and dtypes'; JAX's basis has each leaf's weak type
    jax = pytest.importorskip("jax")
    a = np.array([0.3, -1.2], np.float32)

    def run(T, np_):
        @T.custom_jvp
        def g(x, y):
            return np_.sin(x) * y

        g.defjvp(lambda p, t: (g(*p), np_.cos(p[0]) * p[1] * t[0] + np_.sin(p[0]) * t[1]))
        return T.jacfwd(g, argnums=(0, 1))(a, -1.5)

    jax.config.update("jax_enable_x64", True)  # (as the suite's other jax oracles do)
    got, want = run(funcgrad, fnp), run(jax, jax.numpy)
    for u, v in zip(got, want):
        assert (u.dtype, u.weak_type) == (v.dtype, v.weak_type)
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-6)
