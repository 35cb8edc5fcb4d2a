"""Eager ``grad`` through recorded programs (NOTE: [eager grad program cache]) and the jaxpr
simplifier it uses.

Each test runs a function several times (the program is cached from its second sighting) and
holds every call to the answer of the uncached JVP path, closed forms or finite differences --
above all when what the function reads changes between calls.
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.kernel import recording
from funcgrad.kernel.simplify import simplify


def _calls(f, *args, n=4):
    return [f(*args) for _ in range(n)]


def _programs_for(before: int) -> int:
    return len(recording.program_cache.programs) - before


def test_fourth_derivative_of_tanh_matches_closed_form_on_every_call():
    d4 = fnp.tanh
    for _ in range(4):
        d4 = funcgrad.grad(d4)
    for x in (0.5, -1.25, 0.0, 2.0):
        t = np.tanh(x)
        s = 1 - t**2  # d/dx tanh; then d4 = 16 t s^2 - 8 t^3 s
        want = 16 * t * s**2 - 8 * t**3 * s
        for got in _calls(d4, x, n=6):
            np.testing.assert_allclose(float(got), want, rtol=1e-12, atol=1e-14)


def test_a_program_is_cached_from_its_second_sighting_and_reused():
    f = funcgrad.grad(lambda x: fnp.sum(fnp.sin(x) * x))
    x = np.linspace(0.0, 1.0, 5)
    before = len(recording.program_cache.programs)
    f(x)
    # (FUNCGRAD_EAGER_PROGRAM_CACHE=first, for running the suite through the cache, caches at once.)
    assert _programs_for(before) == (1 if recording.cache_first_sighting else 0)
    f(x)
    assert _programs_for(before) == 1
    for _ in range(3):
        np.testing.assert_allclose(f(x), np.cos(x) * x + np.sin(x), rtol=1e-13)
    assert _programs_for(before) == 1
    f(x.astype(np.float32))  # other avals: another program
    f(x.astype(np.float32))
    assert _programs_for(before) == 2


def test_globals_and_closures_read_anew_every_call():
    state = {"scale": 2.0}
    cell = [fnp.asarray(3.0)]

    def f(x):
        return state["scale"] * x**2 + cell[0] * x

    g = funcgrad.grad(f)
    for scale, c in [(2.0, 3.0), (2.0, 3.0), (5.0, 3.0), (5.0, -1.0), (0.5, 7.0), (0.5, 7.0)]:
        state["scale"], cell[0] = scale, fnp.asarray(c)
        assert float(g(1.5)) == pytest.approx(2 * scale * 1.5 + c, rel=1e-14)


def test_python_control_flow_on_values_takes_the_branch_of_each_call():
    def f(x):
        if x > 0:  # a concrete comparison, as under the JVP trace
            return fnp.sin(x)
        return x**3

    g = funcgrad.grad(f)
    for x in [1.0, 1.0, -2.0, -2.0, 0.5, -0.5, 3.0]:
        want = np.cos(x) if x > 0 else 3 * x**2
        assert float(g(x)) == pytest.approx(want, rel=1e-14)


def test_value_dependent_shapes_and_integer_values_are_concrete():
    def f(x):
        kept = x[x > 0]  # boolean mask: a concrete value
        n = int(fnp.argmax(x))  # an integer result: concrete
        return fnp.sum(kept**2) + x[n]

    g = funcgrad.grad(f)
    for x in [np.array([1.0, -2.0, 3.0]), np.array([1.0, -2.0, 3.0]), np.array([-1.0, 4.0, 0.5])]:
        want = np.where(x > 0, 2 * x, 0.0)
        want[np.argmax(x)] += 1
        for got in _calls(g, x, n=3):
            np.testing.assert_allclose(got, want, rtol=1e-14)


def test_side_effects_run_on_every_call():
    seen = []

    def f(x):
        seen.append(1)
        return fnp.sum(x * x)

    g = funcgrad.grad(f)
    for _ in range(5):
        g(np.ones(3))
    assert len(seen) == 5


def test_callbacks_in_a_loop_run_once_per_call_when_the_recording_needs_a_value():
    # fori_loop's integer counter is concrete, so the recording evaluates the loop: its callback
    # would run there and again in the derivative program (diffrax's progress meter under grad).
    from funcgrad import lax

    seen = []

    def f(p):
        def body(i, x):
            funcgrad.debug.callback(lambda i: seen.append(int(i)), i)
            return x * p

        return lax.fori_loop(0, 2, body, p)

    for _ in range(3):
        seen.clear()
        np.testing.assert_allclose(float(funcgrad.grad(f)(1.5)), 3 * 1.5**2, rtol=1e-13)
        funcgrad.effects_barrier()
        assert seen == [0, 1]


def test_custom_vjp_rules_run_on_every_call():
    calls = {"fwd": 0, "bwd": 0}

    @funcgrad.custom_vjp
    def clip_grad(x):
        return x

    def fwd(x):
        calls["fwd"] += 1
        return x, None

    def bwd(_, g):
        calls["bwd"] += 1
        # Python on the concrete cotangent, as eager custom rules may do.
        return (g if float(fnp.abs(g)) < 1.0 else fnp.sign(g),)

    clip_grad.defvjp(fwd, bwd)
    g = funcgrad.grad(lambda x: 3.0 * clip_grad(x))
    for _ in range(4):
        assert float(g(2.0)) == 1.0
    assert calls == {"fwd": 4, "bwd": 4}


def test_has_aux_argnums_and_static_aux_leaves():
    def loss(w, b, x):
        pred = x @ w + b
        return fnp.mean(pred**2), {"pred": pred, "name": "mse", "n": 3}

    x = np.arange(6.0).reshape(3, 2)
    w, b = np.array([0.5, -1.0]), 0.25
    vg = funcgrad.value_and_grad(loss, argnums=(0, 1), has_aux=True)
    for _ in range(4):
        (val, aux), (gw, gb) = vg(w, b, x)
        pred = x @ w + b
        assert float(val) == pytest.approx(np.mean(pred**2))
        np.testing.assert_allclose(aux["pred"], pred)
        assert aux["name"] == "mse" and aux["n"] == 3
        np.testing.assert_allclose(gw, 2 * x.T @ pred / 3, rtol=1e-14)
        assert float(gb) == pytest.approx(2 * pred.mean(), rel=1e-14)


def test_mlp_gradients_equal_the_uncached_path(uncached):
    rng = np.random.default_rng(0)
    params = [
        (rng.standard_normal((4, 8)), rng.standard_normal(8)),
        (rng.standard_normal((8, 3)), np.zeros(3)),
    ]
    x, y = rng.standard_normal((5, 4)), rng.standard_normal((5, 3))

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = fnp.tanh(h @ w + b)
        w, b = params[-1]
        out = h @ w + b
        return fnp.mean((out - y) ** 2) + 1e-3 * sum(fnp.sum(w**2) for w, _ in params)

    g = funcgrad.grad(loss)
    cached = _calls(g, params, x, y)
    with uncached:
        want = g(params, x, y)
    for got in cached:
        for a, b in zip(funcgrad.tree_util.tree_leaves(got), funcgrad.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def test_nested_grads_of_closures_and_hessian_vector_products():
    def f(x, y):
        return fnp.sin(x * y) * fnp.exp(x)

    dxdy = funcgrad.grad(funcgrad.grad(f, argnums=0), argnums=1)
    for x, y in [(0.3, 1.2), (0.3, 1.2), (0.3, 1.2), (-1.0, 0.5)]:
        want = np.exp(x) * (np.cos(x * y) - x * y * np.sin(x * y) + x * np.cos(x * y))
        assert float(dxdy(x, y)) == pytest.approx(want, rel=1e-12)

    def hvp(x, v):
        return funcgrad.grad(lambda x: fnp.vdot(funcgrad.grad(lambda z: fnp.sum(z**4))(x), v))(x)

    x, v = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    for _ in range(4):
        np.testing.assert_allclose(hvp(x, v), 12 * x**2 * v)


def test_recording_under_other_transformations_is_not_used_and_they_agree():
    g = funcgrad.grad(lambda x: fnp.sum(fnp.sin(x) ** 2))
    xs = np.linspace(-1, 1, 6).reshape(3, 2)
    eager = np.stack([g(x) for x in xs])
    np.testing.assert_allclose(funcgrad.vmap(g)(xs), eager, rtol=1e-13)
    np.testing.assert_allclose(funcgrad.jit(funcgrad.vmap(g))(xs), eager, rtol=1e-13)
    # A grad whose function calls a jitted function records one call of it.
    inner = funcgrad.jit(lambda x: fnp.sin(x) * x)
    h = funcgrad.grad(lambda x: 2.0 * inner(x))
    for _ in range(3):
        assert float(h(0.3)) == pytest.approx(2 * (np.cos(0.3) * 0.3 + np.sin(0.3)), rel=1e-14)


def test_concretizing_a_differentiated_value_still_raises():
    def f(x):
        return float(x) * x  # would silently drop the derivative through float(x)

    with pytest.raises(funcgrad.errors.ConcretizationTypeError, match="grad"):
        funcgrad.grad(f)(1.0)


def test_stop_gradient_values_are_concrete_as_under_the_jvp_trace():
    def f(x):
        s = funcgrad.lax.stop_gradient(x)
        return x * float(s)

    for _ in range(3):
        assert float(funcgrad.grad(f)(3.0)) == 3.0


def test_leaked_tracer_is_reported():
    leaked = []

    def f(x):
        leaked.append(x)
        return x * 2.0

    funcgrad.grad(f)(1.0)
    with pytest.raises(funcgrad.errors.UnexpectedTracerError):
        leaked[0] + 1.0


def test_non_scalar_output_error_is_unchanged():
    g = funcgrad.grad(lambda x: x * 2.0)
    for _ in range(3):
        with pytest.raises(TypeError, match="scalar output"):
            g(np.ones(3))


def test_cond_inside_grad_keeps_no_constants_alive():
    import gc
    import weakref

    refs = []

    def f(x):
        big = fnp.ones(1000) * 2.0
        refs.append(weakref.ref(big))
        return funcgrad.lax.cond(x > 0, lambda x: fnp.sum(x * big), lambda x: fnp.sum(x - big), x)

    g = funcgrad.grad(f)
    for x in [1.0, -1.0] * 3:
        assert float(g(x)) == (2000.0 if x > 0 else 1000.0)
    gc.collect()
    assert sum(r() is not None for r in refs) == 0


# ----------------------------------------------------------------------------------------------
# The simplifier


def _eqn_names(closed):
    return [e.primitive.name for e in closed.jaxpr.eqns]


def test_simplify_removes_repeats_and_multiplication_by_one():
    cj = funcgrad.make_jaxpr(lambda x: fnp.sin(x) * 1.0 + fnp.sin(x) * fnp.sin(x))(0.7)
    s = simplify(cj)
    assert _eqn_names(s) == ["sin", "mul", "add"]
    x = 0.7
    got = funcgrad.kernel.core.eval_jaxpr(s.jaxpr, s.consts, x)[0]
    assert float(got) == pytest.approx(np.sin(x) + np.sin(x) ** 2)


def test_simplify_keeps_distinct_parameters_and_signed_zeros_apart():
    x = np.arange(4.0)
    cj = funcgrad.make_jaxpr(lambda x: fnp.sum(x**2) + fnp.sum(x**2.0) + fnp.sum(x * -0.0 + x * 0.0))(x)
    s = simplify(cj)
    got = funcgrad.kernel.core.eval_jaxpr(s.jaxpr, s.consts, x)[0]
    want = funcgrad.kernel.core.eval_jaxpr(cj.jaxpr, cj.consts, x)[0]
    assert float(got) == float(want)
    # -0.0 * x and 0.0 * x are different equations.
    assert _eqn_names(s).count("mul") >= 2


def test_simplify_folds_constants_and_keeps_side_effects():
    def f(x):
        funcgrad.debug.print("x = {}", x)
        funcgrad.debug.print("x = {}", x)
        return x * (fnp.float64(2.0) * 3.0)

    cj = funcgrad.make_jaxpr(f)(1.0)
    assert _eqn_names(cj).count("mul") == 2
    s = simplify(cj)
    names = _eqn_names(s)
    assert names.count(cj.jaxpr.eqns[0].primitive.name) == 2  # both prints stay
    assert names.count("mul") == 1  # 2.0 * 3.0 folded


def test_simplify_folds_input_free_arrays_and_the_gradient_is_unchanged(uncached):
    # NOTE: [folded arrays]: tril's mask (iotas, a comparison) and the broadcast zero it selects
    # against depend on no input; they become constants, the broadcast one a stride-0 view.
    from funcgrad import lax

    def f(a):
        i, j = (lax.broadcasted_iota(np.int32, (4, 4), d) for d in (0, 1))
        lower = fnp.where(j <= i, a, 0.0)
        return fnp.sum(lower**2) + fnp.sum(fnp.where(i == j, a, 0.0))

    cj = funcgrad.make_jaxpr(funcgrad.value_and_grad(f))(np.ones((4, 4)))
    assert "iota" in _eqn_names(cj)
    s = simplify(cj)
    assert not {"iota", "broadcast_in_dim"} & set(_eqn_names(s))
    assert any(np.asarray(c).strides == (0, 0) for c in s.consts)
    a = np.arange(16.0).reshape(4, 4) - 5
    cached = _calls(funcgrad.value_and_grad(f), a)
    with uncached:
        want = funcgrad.value_and_grad(f)(a)
    np.testing.assert_allclose(want[1], 2 * np.tril(a) + np.eye(4), rtol=1e-15)
    for val, g in cached:
        assert float(val) == float(want[0])
        np.testing.assert_array_equal(g, want[1])


def test_simplify_multiplication_by_one_keeps_the_result_type():
    # x (weak f64[]) * 1.0 (f32) is f32, not x: it must stay.
    cj = funcgrad.make_jaxpr(lambda x: x * np.float32(1.0))(np.float64(2.0))
    s = simplify(cj)
    assert s.jaxpr.outvars[0].aval == cj.jaxpr.outvars[0].aval


@pytest.mark.slow
def test_weak_types_match_jax_on_the_first_and_the_cached_calls(uncached):
    # jax.grad(lambda x: x * 2)(1.0) is Array(2., weak_type=True): a weak output seeds a weak
    # cotangent, and literals keep their weak type when the program is interpreted.
    cases = [
        (funcgrad.grad(lambda x: x * 2), (1.0,)),
        (funcgrad.grad(lambda x: funcgrad.grad(lambda y: x * y * y)(x)), (3.0,)),
        (funcgrad.grad(lambda d: d["a"] * d["b"]), ({"a": 1.0, "b": 2.0},)),
        (funcgrad.grad(lambda x: fnp.sum(x * 2.0)), (np.ones(2, np.float32),)),
    ]
    for f, args in cases:
        with uncached:
            want = [(a.dtype, a.weak_type) for a in funcgrad.tree_util.tree_leaves(f(*args))]
        for got in _calls(f, *args):
            assert [(a.dtype, a.weak_type) for a in funcgrad.tree_util.tree_leaves(got)] == want
    assert funcgrad.grad(lambda x: x * 2)(1.0).weak_type
    assert not funcgrad.grad(lambda x: fnp.sum(x * 2.0))(np.ones(2, np.float32)).weak_type


def test_library_custom_jvp_functions_are_cached_and_user_ones_run_every_call(uncached):
    x = np.linspace(-2.0, 2.0, 12).reshape(3, 4)

    def loss(x):
        return fnp.sum(funcgrad.nn.log_softmax(funcgrad.nn.relu(x) * x, axis=1) ** 2)

    g = funcgrad.grad(loss)
    before = len(recording.program_cache.programs)
    got = _calls(g, x)
    assert _programs_for(before) == 1  # nn.relu and nn.log_softmax are funcgrad's own, pure rules
    with uncached:
        want = g(x)
    for a in got:
        np.testing.assert_allclose(a, want, rtol=1e-13, atol=1e-15)

    calls = []

    @funcgrad.custom_jvp
    def cube(x):
        return x**3

    @cube.defjvp
    def cube_jvp(primals, tangents):
        calls.append(1)
        (x,), (t,) = primals, tangents
        return x**3, 3 * x**2 * t

    before = len(recording.program_cache.programs)
    h = funcgrad.grad(lambda x: cube(x) * 2.0)  # (a user's rule: never cached)
    for _ in range(4):
        assert float(h(2.0)) == 24.0
    assert len(calls) == 4 and _programs_for(before) == 0


def test_a_recording_that_computed_the_forward_pass_reuses_it(uncached):
    # The comparison needs the value of x @ w, so the recording computes the forward pass; the
    # cached program then starts from those values instead of computing them again.
    rng = np.random.default_rng(1)
    w, x = rng.standard_normal((4, 5)), rng.standard_normal((6, 4))

    def loss(w):
        h = x @ w
        h = fnp.where(h > 0, h, 0.1 * h)
        return fnp.sum(fnp.tanh(h) ** 2)

    g = funcgrad.grad(loss)
    got = _calls(g, w, n=5)
    with uncached:
        want = g(w)
    for a in got:
        np.testing.assert_allclose(a, want, rtol=1e-13, atol=1e-15)
    entry = recording.program_cache.programs[next(reversed(recording.program_cache.programs))]
    given = [p for k, p in entry.derived.items() if k[0] == "given_forward"]
    assert given and not any(
        e.primitive.name == "dot_general" and e.outvars[0].aval.shape == (6, 5) for e in given[0].jaxpr.eqns
    )  # x @ w is read, not recomputed


def test_a_jitted_function_in_a_cached_grad_puts_its_constants_on_the_device_once(uncached, monkeypatch):
    # The program's constant (the cotangent seed of the sum, read by the transposed jit call)
    # keeps its device copy between calls: only the freshly computed x @ w is put each call.
    from funcgrad.xla_bridge import runtime

    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((6, 4), dtype=np.float32), rng.standard_normal((4, 5), dtype=np.float32)
    relu = funcgrad.jit(lambda v: fnp.maximum(v, 0.0))
    g = funcgrad.grad(lambda w: relu(x @ w).sum())
    g(w), g(w)
    puts = []
    put = runtime.device_put
    monkeypatch.setattr(runtime, "device_put", lambda v, *a, **k: puts.append(np.shape(v)) or put(v, *a, **k))
    got = _calls(g, w, n=3)
    assert puts == [(6, 5)] * 3
    with uncached:
        want = g(w)
    closed_form = x.T @ (x @ w > 0).astype(np.float32)  # d/dw sum(relu(x @ w))
    for a in got:
        np.testing.assert_array_equal(a, want)
        np.testing.assert_allclose(a, closed_form, rtol=1e-6)


def test_a_cached_grad_through_jitted_linalg_runs_in_the_numpy_interpreter(uncached, monkeypatch):
    # NOTE: [compiled calls in cached programs]: jnp.linalg.cholesky is a jitted function, so the
    # cached grad holds the call's forward and transpose; the program still runs in the NumPy
    # interpreter (not equation by equation), with the same values as the uncached path and scipy.
    import scipy.linalg as sl

    from funcgrad.kernel import core

    rng = np.random.default_rng(5)
    x = rng.standard_normal((7, 2))
    sq = ((x[:, None] - x[None]) ** 2).sum(-1)
    y = rng.standard_normal(7)

    def nlml(t):
        k = fnp.exp(-0.5 * sq / fnp.exp(2 * t)) + 0.1 * fnp.eye(7)
        c = fnp.linalg.cholesky(k)
        z = funcgrad.scipy.linalg.solve_triangular(c, y, lower=True)
        return 0.5 * fnp.sum(z * z) + fnp.sum(fnp.log(fnp.diagonal(c)))

    g = funcgrad.grad(nlml)
    g(0.3), g(0.3)
    stepped = []
    run = core.eval_jaxpr
    monkeypatch.setattr(core, "eval_jaxpr", lambda *a, **k: stepped.append(1) or run(*a, **k))
    got = _calls(g, 0.3, n=3)
    assert not stepped, "the cached grad ran equation by equation"
    monkeypatch.undo()
    with uncached:
        want = g(0.3)

    def by_scipy(t):  # d/dt of 0.5 y^T K^-1 y + 0.5 log det K = 0.5 tr((K^-1 - a a^T) dK/dt)
        e = np.exp(-0.5 * sq / np.exp(2 * t))
        kinv = np.linalg.inv(e + 0.1 * np.eye(7))
        a = sl.cho_solve(sl.cho_factor(e + 0.1 * np.eye(7), lower=True), y)
        return 0.5 * np.sum((kinv - np.outer(a, a)) * e * sq / np.exp(2 * t))

    for a in got:
        np.testing.assert_allclose(a, want, rtol=1e-12)
        np.testing.assert_allclose(a, by_scipy(0.3), rtol=1e-9)


def test_eager_grads_in_threads_agree():
    from concurrent.futures import ThreadPoolExecutor

    def loss(w, x):
        return fnp.sum(fnp.tanh(x @ w) ** 2)

    g = funcgrad.grad(loss)
    rng = np.random.default_rng(2)
    w = rng.standard_normal((3, 2))
    xs = [rng.standard_normal((4, 3)) for _ in range(16)]
    want = [g(w, x) for x in xs]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda x: g(w, x), xs * 3))
    for a, b in zip(got, want * 3):
        np.testing.assert_allclose(a, b, rtol=1e-13)


@pytest.mark.slow
def test_derivative_suites_pass_with_every_eager_grad_through_the_cache():
    # Most tests call an eager grad once or twice, so they exercise the first-sighting path;
    # FUNCGRAD_EAGER_PROGRAM_CACHE=first caches from the first call, and these suites then check
    # the cached path against the same closed forms, finite differences and jax.
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "FUNCGRAD_EAGER_PROGRAM_CACHE": "first"}
    suites = [
        "tests/kernel/test_ad.py",
        "tests/kernel/test_custom_derivatives.py",
        "tests/surface/nn/test_nn.py",
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *suites],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]  # (5: no tests ran)
    assert "[100%]" in proc.stdout


# ----------------------------------------------------------------------------------------------
# Programs with jaxprs in their parameters (traced anew every call: matched by structure)


def _cond(x):
    return funcgrad.lax.cond(
        fnp.sum(x) > 0, lambda x: fnp.sum(fnp.sin(x) * x), lambda x: fnp.sum(fnp.cos(x)), x
    )


def _checkpointed(x):
    block = funcgrad.checkpoint(lambda x: fnp.tanh(fnp.tanh(x) * 2.0) * x)
    return fnp.sum(block(block(x)) ** 2)


def _scan(x):
    c, ys = funcgrad.lax.scan(lambda c, xi: (c * fnp.tanh(xi) + xi, c * xi), 1.0, x)
    return c + fnp.sum(ys**2)


def _while(x):
    def body(c):
        i, y = c
        return i + 1, fnp.sin(y) * 1.5

    return fnp.sum(funcgrad.lax.while_loop(lambda c: c[0] < 3, body, (0, x), max_steps=4)[1])


@pytest.mark.parametrize("f", [_cond, _checkpointed, _scan, _while], ids=lambda f: f.__name__)
def test_control_flow_and_checkpoint_programs_are_cached_by_structure(uncached, f):
    g = funcgrad.grad(f)
    before = len(recording.program_cache.programs)
    for x in (np.linspace(-1.0, 2.0, 5), np.linspace(-2.0, 0.5, 5)):  # both branches of the cond
        with uncached:
            want = g(x)
        for a in _calls(g, x):
            np.testing.assert_allclose(a, want, rtol=1e-12, atol=1e-14)
    # One program for all those calls, however often their jaxprs were traced (a cond whose
    # predicate was concrete records the branch it took: one program per branch).
    assert 1 <= _programs_for(before) <= (2 if f is _cond else 1)


def test_jaxpr_keys_compare_structure_and_constants():
    from funcgrad.kernel.jaxpr_keys import jaxpr_key

    def traced(c, scale):
        return funcgrad.make_jaxpr(lambda x: fnp.sum(x * c) * scale)(np.zeros(c.shape))

    small = np.ones(3)
    assert jaxpr_key(traced(small, 2.0)) == jaxpr_key(traced(np.ones(3), 2.0))  # by value
    assert jaxpr_key(traced(small, 2.0)) != jaxpr_key(traced(small * -0.0 + 1.0, -2.0))  # literal
    assert jaxpr_key(traced(small, 2.0)) != jaxpr_key(traced(np.array([1.0, 1.0, -0.0]), 2.0))
    big = traced(np.ones(5000), 2.0)  # large constants: by identity (staging copies them)
    assert jaxpr_key(big) == jaxpr_key(big)
    assert jaxpr_key(big) != jaxpr_key(traced(np.ones(5000), 2.0))


def test_cached_products_do_not_depend_on_a_transfer_cached_on_the_parameters(uncached):
    # NOTE: [cached programs on placed values]: a product large enough to run compiled (NOTE:
    # [eager products are XLA's]) gives the same bits on every route: the uncached call, cached
    # calls on parameters that a compiled product has put on the device (their transfer is kept
    # on the Array), and cached calls on fresh host parameters. Before, the last computed the
    # product with NumPy's BLAS and the others with XLA: float32 results in other last places.
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(7)
    x0 = rng.standard_normal((256, 128), dtype=np.float32)
    w0 = rng.standard_normal((128, 96), dtype=np.float32)
    v0 = rng.standard_normal((96, 64), dtype=np.float32)

    def loss(np_, w, v):
        return np_.sum(np_.tanh(fnp.asarray(x0) @ w if np_ is fnp else x0 @ w) @ v)

    g = funcgrad.grad(lambda w, v: loss(fnp, w, v), argnums=(0, 1))
    w, v = fnp.asarray(w0), fnp.asarray(v0)
    with uncached:
        want = g(w, v)
    got = _calls(g, w, v) + [g(fnp.asarray(w0.copy()), fnp.asarray(v0.copy())) for _ in range(3)]
    for gw, gv in got:
        np.testing.assert_array_equal(gw, want[0])
        np.testing.assert_array_equal(gv, want[1])
    ref = jax.grad(lambda w, v: jnp.sum(jnp.tanh(x0 @ w) @ v), argnums=(0, 1))(w0, v0)
    for a, b in zip(want, ref):  # (float32 sums of 128 and 96 terms, tanh's rounding: a scale's 1e-5)
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5 * float(np.abs(b).max()))


def test_cached_grad_of_committed_parameters_keeps_them_committed():
    # A committed operand still decides where the cached program runs (equation by equation,
    # each result committed to its device, as the uncached call's): NOTE: [cached programs on
    # placed values].
    rng = np.random.default_rng(8)
    x = rng.standard_normal((64, 32))
    w = funcgrad.device_put(fnp.asarray(rng.standard_normal((32, 8))), funcgrad.devices()[0])
    g = funcgrad.grad(lambda w: fnp.sum(fnp.tanh(x @ w) ** 2))
    first, *cached = _calls(g, w)
    assert w.committed and first.committed  # (jax's grad of a committed value is committed too)
    for got in cached:
        assert got.committed
        np.testing.assert_array_equal(got, first)
