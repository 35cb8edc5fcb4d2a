"""Structured control flow (funcgrad._control_flow): values against Python loops, derivatives
against central finite differences (float64), vmap against per-example loops, compiled (jit, XLA)
against eager, and every jaxpr through the type checker.
"""

from __future__ import annotations

import numpy as np
import pytest
from _checks import assert_close, typecheck
from funcgrad.primitives.control_flow import cond_p, while_p
from funcgrad.primitives.scan import scan_p
from funcgrad.xla_bridge.lowering import lower_jaxpr

import funcgrad
import funcgrad.numpy as fnp
from funcgrad._control_flow import ReverseModeWhileLoopError, cond, fori_loop, scan, switch, while_loop
from funcgrad._control_flow import map as lax_map
from funcgrad.kernel import ir
from funcgrad.kernel import tree_util as tu
from funcgrad.testing import check_grads


def _eqn_prims(closed) -> set:
    found = set()

    def walk(j):
        for e in j.eqns:
            found.add(e.primitive)
            for sub in ir.jaxprs_in_params(e.params):
                walk(sub)

    walk(closed.jaxpr)
    return found


def check_jit(f, *args, rtol=1e-10, atol=1e-12):
    """``jit(f)`` (lowered to StableHLO, compiled by XLA) agrees with eager ``f``."""
    assert_close(funcgrad.jit(f)(*args), f(*args), rtol=rtol, atol=atol, err_msg="jit vs eager")


def check_types(f, *args):
    """The jaxprs of f, of its jvp and (for scalar outputs) of its gradient pass the type checker."""
    typecheck(funcgrad.make_jaxpr(f)(*args))
    tangents = tuple(tu.tree_map(np.ones_like, a) for a in args)
    typecheck(funcgrad.make_jaxpr(lambda *xs: funcgrad.jvp(f, xs, tangents))(*args))


def full_check(f, args, order=1, grad=True):
    """FD derivatives (forward and reverse unless ``grad`` is False), jit vs eager, type checks."""
    if grad:
        check_grads(f, args, order=order)
        scalar = lambda *xs: fnp.sum(tu.tree_leaves(f(*xs))[0])  # noqa: E731
        typecheck(funcgrad.make_jaxpr(funcgrad.grad(scalar, argnums=tuple(range(len(args)))))(*args))
        check_jit(funcgrad.grad(scalar, argnums=tuple(range(len(args)))), *args)
    check_types(f, *args)
    check_jit(f, *args)


# ----------------------------------------------------------------------------------------------
# cond and switch


def _branchy(x, y):
    # Branches with different residuals (sin/cos vs exp * y) and pytree operands and outputs.
    return cond(
        fnp.sum(x) > 0,
        lambda ops: {"a": fnp.sin(ops[0]) * ops[1], "b": ops[1] * 2.0},
        lambda ops: {"a": fnp.exp(ops[0]) * ops[1] ** 2, "b": fnp.cos(ops[1])},
        (x, y),
    )


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["true", "false"])
def test_cond_both_branches(sign, rng):
    x, y = sign * (1.0 + rng.uniform(size=3)), rng.standard_normal()
    out = _branchy(x, y)
    ref = {"a": np.sin(x) * y, "b": y * 2.0} if sign > 0 else {"a": np.exp(x) * y**2, "b": np.cos(y)}
    assert_close(out, ref)
    full_check(_branchy, [x, y], order=2)


def test_cond_closure_and_hessian():
    def f(x):
        c = x * 3.0  # captured by the branches: a tracer of every enclosing transformation
        return cond(x < 1.0, lambda: fnp.sin(c) * x, lambda: c**2)

    for x in (0.5, 2.0):
        check_grads(f, [x], order=2)
        h = funcgrad.hessian(f)(x)
        ref = -9 * np.sin(3 * x) * x + 6 * np.cos(3 * x) if x < 1 else 18.0
        assert_close(h, ref)
        check_jit(funcgrad.hessian(f), x)


def test_switch_clamps_and_differentiates():
    branches = [lambda x: fnp.sin(x), lambda x: x**3, lambda x: fnp.exp(-x)]
    refs = [np.sin, lambda x: x**3, lambda x: np.exp(-x)]
    for i, k in [(-5, 0), (0, 0), (1, 1), (2, 2), (9, 2)]:
        f = lambda x, i=i: switch(i, branches, x)  # noqa: E731
        assert_close(f(0.7), refs[k](0.7))
        full_check(f, [0.7])
    g = funcgrad.jit(lambda i, x: switch(i, branches, x))
    assert_close(g(np.int32(7), 0.7), np.exp(-0.7))


def test_cond_mismatched_branch_outputs():
    # (JAX's words: tests/surface/lax/test_control_flow_errors.py compares them with jax's)
    with pytest.raises(
        TypeError, match=r"true_fun at path \['b'\] has type float64\[3\].*false_fun has type float64\[2\]"
    ):
        cond(True, lambda x: {"a": x, "b": fnp.zeros(3)}, lambda x: {"a": x, "b": fnp.zeros(2)}, 1.0)
    with pytest.raises(TypeError, match="output of branch1 has type float32\\[2\\]"):
        switch(0, [lambda x: x, lambda x: x.astype("float32")], np.ones(2))
    with pytest.raises(TypeError, match="same pytree structure"):
        cond(True, lambda x: (x, x), lambda x: x, 1.0)


@pytest.mark.parametrize("pred", [0.5, 0.0, -0.0, float("nan"), np.float32(-2.0)])
def test_cond_takes_a_float_predicate_as_jax(pred):
    # jax's cond reads a float pred as pred != 0 (NaN is true); funcgrad refused it (the fuzzer's probe)
    import jax

    want = jax.jit(lambda p: jax.lax.cond(p, lambda: 1.0, lambda: 2.0))(pred)
    for fn in (
        lambda p: cond(p, lambda: 1.0, lambda: 2.0),
        funcgrad.jit(lambda p: cond(p, lambda: 1.0, lambda: 2.0)),
    ):
        assert float(fn(pred)) == float(want)


@pytest.mark.parametrize("callback_branch", [True, False])
def test_cond_output_weak_types_are_branch_zeros_as_jax(callback_branch):
    # JAX's cond takes branch 0's (the false branch's) output types, weak types included: equinox's
    # error_if passes a weak value through its false branch (its true branch, a pure_callback, is
    # strong), and diffrax then multiplies it with a float64 under dtype_promotion='strict'.
    import jax

    def run(m, lax_cond, where):
        def callback(x):
            return m.pure_callback(lambda y: y, m.ShapeDtypeStruct((), x.dtype), x)

        def passthrough(x):
            return x * 1

        branches = (callback, passthrough) if callback_branch else (passthrough, callback)
        # (a weak int: int64 here, int32 on the oracle, which runs in JAX's 32-bit default)
        return m.jit(lambda p, t: lax_cond(p, *branches, where(t < 1.0, 1, -1)))(True, 0.0)

    got = run(funcgrad, cond, fnp.where)
    want = run(jax, jax.lax.cond, jax.numpy.where)
    assert got.weak_type == want.weak_type and int(got) == int(want)


def test_a_weak_carry_the_body_makes_a_float_becomes_a_strong_float_as_jax():
    # JAX converts a weakly typed initial carry to the body's dtype with convert_element_type, whose
    # result is strong (the fuzzer compares weak types): fori_loop, while_loop and scan alike.
    import jax

    def run(m, lax):
        return (
            lax.fori_loop(0, 2, lambda i, a: a * 0.5 + m.numpy.sin(a) * i, 2),
            lax.while_loop(lambda c: c < 3, lambda c: c + 1.5, 0),
            lax.scan(lambda c, x: (c * 0.5, c), 1, None, length=2)[0],
            lax.fori_loop(0, 2, lambda i, a: a + 1, 2),  # stays a weak int
        )

    import funcgrad.lax

    got, want = run(funcgrad, funcgrad.lax), run(jax, jax.lax)
    for g, w in zip(got, want):
        assert g.weak_type == w.weak_type and float(g) == pytest.approx(float(w), rel=1e-6)


def test_cond_takes_the_older_per_branch_operands_as_jax():
    # cond(pred, true_operand, true_fun, false_operand, false_fun): JAX still accepts it (blackjax)
    import jax

    for pred in (True, False):
        args = (pred, np.arange(3.0), lambda x: x * 2.0, np.ones(3), lambda x: -x)
        np.testing.assert_array_equal(cond(*args), jax.lax.cond(*args))
        np.testing.assert_array_equal(funcgrad.jit(lambda p, a=args: cond(p, *a[1:]))(pred), cond(*args))
    with pytest.raises(TypeError, match="should be callable"):
        cond(True, 1.0, 2.0)


def test_vmap_cond_batched_and_unbatched_predicate(rng):
    xs = rng.standard_normal(6)
    f = lambda x, p: cond(p > 0, lambda v: fnp.sin(v) * 2.0, lambda v: v**2, x)  # noqa: E731
    ps = rng.standard_normal(6)
    ref = np.where(ps > 0, np.sin(xs) * 2, xs**2)
    batched = funcgrad.vmap(f)(xs, ps)  # batched predicate: select_n of both branches
    assert_close(batched, ref)
    assert cond_p not in _eqn_prims(funcgrad.make_jaxpr(funcgrad.vmap(f))(xs, ps))
    unbatched = funcgrad.vmap(f, in_axes=(0, None))(xs, -1.0)  # stays a cond over batched branches
    assert_close(unbatched, xs**2)
    assert cond_p in _eqn_prims(funcgrad.make_jaxpr(funcgrad.vmap(f, in_axes=(0, None)))(xs, -1.0))
    check_jit(funcgrad.vmap(f), xs, ps)
    g = funcgrad.vmap(funcgrad.grad(f))(xs, ps)
    assert_close(g, np.where(ps > 0, 2 * np.cos(xs), 2 * xs))
    idx = np.array([0, 2, 1, 5, -1, 1])
    sw = funcgrad.vmap(lambda i, x: switch(i, [fnp.sin, fnp.cos, fnp.exp], x))(idx, xs)
    assert_close(sw, np.array([[np.sin, np.cos, np.exp][min(max(i, 0), 2)](x) for i, x in zip(idx, xs)]))


# ----------------------------------------------------------------------------------------------
# scan


def _rnn(params, h0, xs, reverse=False):
    def step(carry, x):
        h, acc = carry["h"], carry["acc"]
        h = fnp.tanh(params["W"] @ h + x * params["u"])
        return {"h": h, "acc": acc + fnp.sum(h)}, (h * 2.0, fnp.sum(h**2))

    return scan(step, {"h": h0, "acc": 0.0}, xs, reverse=reverse)


def _rnn_ref(params, h0, xs, reverse=False):
    h, acc, ys1, ys2 = h0, 0.0, [None] * len(xs), [None] * len(xs)
    for i in reversed(range(len(xs))) if reverse else range(len(xs)):
        h = np.tanh(params["W"] @ h + xs[i] * params["u"])
        acc = acc + h.sum()
        ys1[i], ys2[i] = h * 2.0, (h**2).sum()
    return {"h": h, "acc": acc}, (np.stack(ys1), np.array(ys2))


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_scan_pytree_rnn(reverse, rng):
    params = {"W": rng.standard_normal((3, 3)) * 0.5, "u": rng.standard_normal(3)}
    h0, xs = rng.standard_normal(3), rng.standard_normal(5)
    assert_close(_rnn(params, h0, xs, reverse), _rnn_ref(params, h0, xs, reverse))

    def f(W, u, h0, xs):
        return _rnn({"W": W, "u": u}, h0, xs, reverse)

    full_check(f, [params["W"], params["u"], h0, xs], order=2)


def test_scan_unroll_and_no_xs(rng):
    xs = rng.standard_normal((7, 2))
    for unroll in (1, 3, True):
        f = lambda c, xs, u=unroll: scan(lambda c, x: (c * 0.9 + x, fnp.sum(c)), c, xs, unroll=u)  # noqa: E731
        full_check(f, [np.ones(2), xs])
    g = lambda c: scan(lambda c, _: (fnp.sin(c), c), c, None, length=4)  # noqa: E731
    full_check(g, [0.3])
    assert_close(lax_map(lambda x: x**2, xs), xs**2)
    # As JAX's lowering (lax_control_flow_test test_scan_unroll): a loop unless fully unrolled
    unrolls = (1, 3, 7, True)
    hlo = [
        funcgrad.jit(lambda c, xs, u=u: scan(lambda c, x: (c * x.sum(), c), c, xs, unroll=u))
        .lower(1.0, xs)
        .as_text("hlo")
        for u in unrolls
    ]
    assert ["while(" in h for h in hlo] == [True, True, False, False]


def test_nested_scan_grad(rng):
    def f(w, xs):
        def outer(c, row):
            inner_c, ys = scan(lambda a, x: (fnp.sin(a * w + x), a * x), c, row)
            return inner_c * 1.1, fnp.sum(ys)

        return scan(outer, 0.5, xs)

    full_check(f, [0.8, rng.standard_normal((3, 4))], order=2)


def test_hessian_through_scan(rng):
    xs = rng.standard_normal(4)

    def f(p):
        c, ys = scan(lambda c, x: (fnp.sin(c * p[0] + x) + p[1] * c, c**2), p[2], xs)
        return c + fnp.sum(ys)

    p = np.array([0.7, 0.3, 0.4])
    h = funcgrad.hessian(f)(p)
    eps = 1e-5
    g = funcgrad.grad(f)
    ref = np.stack([(np.asarray(g(p + eps * e)) - np.asarray(g(p - eps * e))) / (2 * eps) for e in np.eye(3)])
    assert_close(h, ref, rtol=1e-6, atol=1e-7)
    typecheck(funcgrad.make_jaxpr(funcgrad.hessian(f))(p))
    check_jit(funcgrad.hessian(f), p)


def test_vmap_scan(rng):
    W = rng.standard_normal((3, 3)) * 0.5
    h0s, xss = rng.standard_normal((4, 3)), rng.standard_normal((5, 4))

    def f(h0, xs):
        return scan(lambda h, x: (fnp.tanh(W @ h + x), fnp.sum(h)), h0, xs)

    ref = [f(h0s[i], xss[:, i]) for i in range(4)]
    ref = tu.tree_map(lambda *r: np.stack(r), *ref)
    got = funcgrad.vmap(f, in_axes=(0, 1), out_axes=(0, 0))(h0s, xss)  # batched carry and xs
    assert_close(got, ref)
    got2 = funcgrad.vmap(f, in_axes=(None, 1))(h0s[0], xss)  # unbatched init: carry gets batched
    assert_close(got2[0], np.stack([f(h0s[0], xss[:, i])[0] for i in range(4)]))
    check_jit(funcgrad.vmap(f, in_axes=(0, 1)), h0s, xss)
    grads = funcgrad.vmap(funcgrad.grad(lambda h, xs: fnp.sum(f(h, xs)[0])), in_axes=(0, 1))(h0s, xss)
    for i in range(4):
        assert_close(grads[i], funcgrad.grad(lambda h, xs: fnp.sum(f(h, xs)[0]))(h0s[i], xss[:, i]))


def test_scan_errors():
    with pytest.raises(TypeError, match=r"carry c has type float64\[2\] but .* has type float64\[3\]"):
        scan(lambda c, x: (fnp.concatenate([c, x[None]]), None), np.zeros(2), np.ones(3))
    with pytest.raises(ValueError, match="scan got value with no leading axis to scan over"):
        scan(lambda c, x: (c, x), 0, [np.int32(1), np.int32(2)])  # JAX's error (issue 744)
    with pytest.raises(
        ValueError, match=r"scan got `length` argument of 5 which disagrees with leading axis sizes \[3\]"
    ):
        scan(lambda c, x: (c, x), 0.0, np.ones(3), length=5)
    with pytest.raises(ValueError, match="same leading axis"):
        scan(lambda c, x: (c, None), 0.0, (np.ones(3), np.ones(4)))
    with pytest.raises(TypeError, match="pair"):
        scan(lambda c, x: c, 0.0, np.ones(3))


@pytest.mark.parametrize("mode", [True, "dots_saveable", "sqrt"])
def test_scan_checkpoint(mode, rng):
    W = rng.standard_normal((4, 4)) * 0.4
    xs = rng.standard_normal((10, 4))

    def loss(W, h0, ckpt):
        # Two layers per step, so a step keeps more residuals than its inputs (h, x).
        h, _ = scan(lambda h, x: (fnp.tanh(W @ fnp.tanh(W @ h + x)), None), h0, xs, checkpoint=ckpt)
        return fnp.sum(h)

    h0 = rng.standard_normal(4)
    want = funcgrad.grad(loss, argnums=(0, 1))(W, h0, False)
    got = funcgrad.grad(loss, argnums=(0, 1))(W, h0, mode)
    assert_close(got, want, rtol=1e-10, atol=1e-12)
    check_jit(funcgrad.grad(lambda W, h0: loss(W, h0, mode), argnums=(0, 1)), W, h0)
    nbytes = lambda res: sum(np.asarray(r).nbytes for r in res)  # noqa: E731
    plain = nbytes(funcgrad.vjp(lambda W, h0: loss(W, h0, False), W, h0)[1].residuals)
    saved = nbytes(funcgrad.vjp(lambda W, h0: loss(W, h0, mode), W, h0)[1].residuals)
    assert saved < plain if mode in (True, "sqrt") else saved <= plain


def test_scan_residuals_are_hoisted_and_stacked(rng):
    # W is loop invariant: one copy, not `length` stacked copies (NOTE: [scan residuals]).
    W, xs = rng.standard_normal((8, 8)), rng.standard_normal((50, 8))
    _, f_vjp = funcgrad.vjp(lambda W: scan(lambda h, x: (fnp.tanh(W @ h + x), None), np.ones(8), xs)[0], W)
    shapes = [np.shape(r) for r in f_vjp.residuals]
    assert (8, 8) in shapes and not any(s[:1] == (50,) and np.prod(s[1:]) > 8 for s in shapes), shapes
    assert sum(np.asarray(r).nbytes for r in f_vjp.residuals) <= (8 * 8 + 3 * 8 + 2 * 50 * 8) * 8


# ----------------------------------------------------------------------------------------------
# fori_loop


def test_fori_loop_concrete_bounds_is_a_scan():
    f = lambda x: fori_loop(1, 5, lambda i, v: v * x + i, 0.5)  # noqa: E731

    def ref(x):
        v = 0.5
        for i in range(1, 5):
            v = v * x + i
        return v

    assert_close(f(1.3), ref(1.3))
    assert scan_p in _eqn_prims(funcgrad.make_jaxpr(f)(1.3))
    full_check(f, [1.3], order=2)
    assert_close(fori_loop(3, 1, lambda i, v: v + 1.0, 0.0), 0.0)


def test_fori_loop_traced_bounds_is_a_while(rng):
    f = lambda x, n: fori_loop(0, n, lambda i, v: fnp.sin(v) + x, x)  # noqa: E731
    assert while_p in _eqn_prims(funcgrad.make_jaxpr(f)(0.3, 4))

    def ref(x, n):
        v = x
        for _ in range(n):
            v = np.sin(v) + x
        return v

    assert_close(funcgrad.jit(f)(0.3, 4), ref(0.3, 4))
    _, t = funcgrad.jvp(lambda x: f(x, np.int64(4)), (0.3,), (1.0,))
    assert_close(t, (ref(0.3 + 1e-6, 4) - ref(0.3 - 1e-6, 4)) / 2e-6, rtol=1e-6)
    # vmap over trip counts: a batched predicate runs until every lane is done.
    ns = np.array([0, 3, 1, 5])
    xs = rng.uniform(size=4)
    assert_close(funcgrad.vmap(f)(xs, ns), np.array([ref(x, n) for x, n in zip(xs, ns)]))
    check_jit(funcgrad.vmap(f), xs, ns)


# ----------------------------------------------------------------------------------------------
# while_loop


def _collatz_like(x, k):
    return while_loop(lambda c: c[0] < k, lambda c: (c[0] + 1, c[1] * 1.5 - fnp.sin(c[1])), (0, x))


def test_while_loop_value_jvp_jit():
    f = lambda x: _collatz_like(x, 6)[1]  # noqa: E731
    v = 0.4
    for _ in range(6):
        v = v * 1.5 - np.sin(v)
    assert_close(f(0.4), v)
    check_types(f, 0.4)
    check_jit(f, 0.4)
    check_grads(f, (0.4,), order=1, modes=("fwd",))
    assert_close(funcgrad.jacfwd(f)(0.4), funcgrad.jit(funcgrad.jacfwd(f))(0.4))


def test_vmap_while_batched_and_unbatched_predicate(rng):
    xs = rng.uniform(1.0, 2.0, size=5)
    # Unbatched predicate (counter), batched carry.
    f = lambda x: while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, fnp.sqrt(c[1]) + 1.0), (0, x))[1]  # noqa: E731
    assert_close(funcgrad.vmap(f)(xs), np.array([f(x) for x in xs]))
    # Batched predicate: lanes finish after different numbers of steps.
    g = lambda x: while_loop(lambda v: v < 100.0, lambda v: v * 3.0, x)  # noqa: E731
    starts = np.array([1.0, 50.0, 0.1, 200.0, 7.0])
    assert_close(funcgrad.vmap(g)(starts), np.array([g(s) for s in starts]))
    check_jit(funcgrad.vmap(g), starts)
    check_jit(funcgrad.vmap(f), xs)


def test_batched_while_predicates_as_jax():
    # NOTE: [batched while predicates]: vmap of a loop whose condition is batched gives the
    # condition the lanes' predicates (JAX's bool[n]) and runs while any holds; vmap of vmap
    # batches the lanes again (bool[m,n]); eagerly, jitted and by the NumPy interpreter alike
    jax = pytest.importorskip("jax")
    from funcgrad.primitives import control_flow as cf

    def g(lib, x, k):
        return lib.lax.while_loop(lambda c: c[1] < k, lambda c: (c[0] * 1.5 + 1.0, c[1] + 1), (x, 0))[0]

    xs = np.linspace(0.1, 1.0, 6).reshape(2, 3)
    ks = np.array([[0, 3, 1], [5, 2, 4]])
    want = np.asarray(jax.vmap(jax.vmap(lambda x, k: g(jax, x, k)))(xs, ks))
    f = funcgrad.vmap(funcgrad.vmap(lambda x, k: g(funcgrad, x, k)))
    for how in (f, funcgrad.jit(f)):
        assert_close(how(xs, ks), want)
    for lib, inner in ((jax, lambda x, k: g(jax, x, k)), (funcgrad, lambda x, k: g(funcgrad, x, k))):
        eqn = next(
            e for e in lib.make_jaxpr(lib.vmap(lib.vmap(inner)))(xs, ks).eqns if e.primitive.name == "while"
        )
        assert eqn.params["cond_jaxpr"].out_avals[0].shape == (2, 3), lib
    # the NumPy interpreter (a loop without a lowering runs there): the loop's operands are the
    # inputs and the counter's zeros
    closed = funcgrad.make_jaxpr(f)(xs, ks)
    (w,) = [e for e in closed.jaxpr.eqns if e.primitive is while_p]
    given = dict(zip(closed.jaxpr.invars, (xs, ks)))
    args = [given.get(v, np.zeros(v.aval.shape, v.aval.dtype)) for v in w.invars]
    assert_close(cf._while_impl(*args, **w.params)[0], want)


def test_reverse_mode_through_unbounded_while_raises():
    f = lambda x: while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x)  # noqa: E731
    with pytest.raises(ReverseModeWhileLoopError, match="max_steps"):
        funcgrad.grad(f)(1.0)
    with pytest.raises(ReverseModeWhileLoopError, match="fori_loop"):
        funcgrad.jit(funcgrad.grad(f))(1.0)
    # JAX's type and words (a ValueError; still a NotImplementedError as before)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"):
        funcgrad.grad(f)(1.0)


def test_vjp_through_a_while_of_an_empty_where_result_as_jax():
    # JAX's where of an empty result is its x (no select), so interp's output of an empty input
    # has a zero tangent and a while_loop carrying it goes under vjp (the fuzzer's case); jax's
    # ValueError stays for a carry that does depend on the input.
    import jax

    def run(api, np_, shape):
        def f(x):
            v = np_.interp(x, np_.array([-1.0, 0.0, 2.0]), np_.array([0.5, -1.0, 3.0]))
            return api.lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, c[1] * 2.0), (0, v))[1]

        out, pullback = api.vjp(f, np.zeros(shape))
        return [np.asarray(v).shape for v in (out, *pullback(out))]

    assert run(funcgrad, fnp, (3, 0)) == run(jax, jax.numpy, (3, 0)) == [(3, 0), (3, 0)]
    assert fnp.where(np.ones((0, 2), bool), np.ones(2), 1.0).shape == (0, 2)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        run(funcgrad, fnp, (2,))


def _newton_sqrt(a):
    return while_loop(lambda x: fnp.abs(x * x - a) > 1e-13 * a, lambda x: 0.5 * (x + a / x), a, max_steps=60)


@pytest.mark.filterwarnings("ignore:divide by zero")  # vmap runs the untaken branch on zero residuals
def test_bounded_while_newton_sqrt_grad():
    for a in (0.3, 2.0, 9.0):
        assert_close(_newton_sqrt(a), np.sqrt(a), rtol=1e-12)
        assert_close(funcgrad.grad(_newton_sqrt)(a), 1 / (2 * np.sqrt(a)), rtol=1e-9)
    check_jit(funcgrad.grad(_newton_sqrt), 2.0)
    typecheck(funcgrad.make_jaxpr(funcgrad.grad(_newton_sqrt))(2.0))
    a = np.array([0.5, 4.0, 10.0])
    assert_close(funcgrad.vmap(funcgrad.grad(_newton_sqrt))(a), 1 / (2 * np.sqrt(a)), rtol=1e-9)
    check_jit(funcgrad.vmap(funcgrad.grad(_newton_sqrt)), a)


def test_bounded_while_stops_at_its_bound_or_its_condition():
    # x -> 1.5 x while x < 10 takes 74 steps from 1e-12, 6 from 1, none from 20; a bound cuts them
    # (from N = 64 in chunks of isqrt(N), NOTE: [bounded while loops run in checkpointed chunks]:
    # with N = 70, 6 steps end inside the first chunk of 8 and 70 inside the ninth); the
    # derivative is 1.5 ** steps; the user's functions are traced once each.
    xs = np.array([1e-12, 1.0, 20.0])
    for max_steps in (0, 7, 70):
        calls = []

        def f(x, max_steps=max_steps, calls=calls):
            def cond_fun(c):
                calls.append("cond")
                return c[1] < 10.0

            def body_fun(c):
                calls.append("body")
                return c[0] + 1, c[1] * 1.5

            return while_loop(cond_fun, body_fun, (0, x), max_steps=max_steps)

        steps = np.minimum([74, 6, 0], max_steps)
        n, y = funcgrad.vmap(f)(xs)
        assert n.tolist() == steps.tolist() and sorted(calls) == ["body", "cond"]
        assert_close(y, xs * 1.5**steps, rtol=1e-12)
        assert_close(funcgrad.vmap(funcgrad.grad(lambda x: f(x)[1]))(xs), 1.5**steps, rtol=1e-12)
        assert_close(funcgrad.jvp(lambda x: f(x)[1], (1.0,), (1.0,))[1], 1.5 ** steps[1], rtol=1e-12)


# ----------------------------------------------------------------------------------------------
# Compilation and eager execution


def test_lowered_control_flow_ops():
    f = lambda x: (  # noqa: E731
        cond(x > 0, fnp.sin, fnp.cos, x)
        + scan(lambda c, y: (c + y, None), 0.0, fnp.ones(3) * x)[0]
        + while_loop(lambda v: v < 5.0, lambda v: v + 1.0, x)
    )
    text = lower_jaxpr(funcgrad.make_jaxpr(f)(0.5), "f").text
    assert '"stablehlo.case"' in text and text.count('"stablehlo.while"') == 2
    assert "stablehlo.dynamic_slice" in text


@pytest.mark.parametrize("batch_size", [0, 3, 4, 12])
def test_map_batch_size_vmaps_each_step_and_the_remainder(batch_size):
    # jax.lax.map's docstring: each scan step sees batch_size elements (vmap), the rest one vmap
    xs = {"a": np.arange(10.0).reshape(10, 1), "b": np.arange(10.0)}
    seen = []

    def f(d):
        seen.append(d["a"].shape)
        return d["a"][0] * d["b"] + 1.0

    out = lax_map(f, xs, batch_size=batch_size)
    np.testing.assert_allclose(np.asarray(out), np.arange(10.0) ** 2 + 1.0)
    # f is traced once for the loop's vmapped step and once for the remainder's vmap (JAX prints
    # "inner shape" twice in the docstring); every trace sees one element
    assert len(seen) == {0: 1, 3: 2, 4: 2, 12: 1}[batch_size] and set(seen) == {(1,)}
    grad = funcgrad.grad(lambda x: lax_map(fnp.sin, x, batch_size=batch_size).sum())(np.arange(10.0))
    np.testing.assert_allclose(np.asarray(grad), np.cos(np.arange(10.0)), rtol=1e-12)


def test_map_batch_size_of_an_empty_input():
    # JAX's lax.map with batch_size and no whole batch vmaps the remainder, empty or not (found by
    # the fuzzer: an empty input raised "None is not a valid value for jnp.array"); under grad too
    xs = np.zeros((0,), np.float16)
    out = lax_map(lambda x: fnp.sin(x) * x, xs, batch_size=2)
    assert out.shape == (0,) and out.dtype == np.float16
    g = funcgrad.grad(lambda x: fnp.sum(lax_map(lambda v: fnp.sin(v) * v, x, batch_size=2)))(xs)
    assert g.shape == (0,) and g.dtype == np.float16


def test_grad_of_vmapped_cond_has_no_nan_from_the_unused_branch_as_jax():
    # JAX's testCondGradVmapNan (issue 1052) through funcgrad.as_jax: under vmap a batched
    # predicate runs both branches; sqrt's infinite derivative at 0 in the lanes that take the other
    # branch reached the gradient as 0 * inf = NaN.
    import jax

    for api, np_, lax in ((funcgrad, fnp, funcgrad.lax), (jax, jax.numpy, jax.lax)):

        def safe(x, np_=np_, lax=lax):
            return lax.cond(x < 1e-3, lambda _: 1e-3, lambda _: np_.sqrt(x), ())

        x = np.array([0.0, 1.0, 4.0, 0.0])
        got = api.grad(lambda x, safe=safe, api=api: api.vmap(safe)(x).sum())(x)
        np.testing.assert_allclose(got, [0.0, 0.5, 0.25, 0.0])


def _read_only_carries(api, np_):
    def foo(w, x, c_max):  # flax issue 4700
        def body(v):
            c, x, w = v
            return c + 1, x @ w, w

        _, x, w = api.lax.while_loop(lambda v: v[0] < c_max, body, (0, x, w))
        return w, x

    w, x = api.vmap(foo, in_axes=(None, 0, 0), out_axes=(None, 0))(
        np_.ones((2, 2)), np_.ones((4, 2)), np_.arange(4)
    )

    def f(x, y):  # flax issue 4709
        def g(_, y):
            return api.lax.scan(lambda y, _: (y, None), y, None, length=1)[0]

        return api.lax.cond(x < 0, g, g, x, y)

    z = api.vmap(f, (0, None), None)(np_.arange(3.0), 3.0)
    return [np.asarray(v).tolist() for v in (w, x, z)]


def test_read_only_carries_stay_unbatched_as_jax():
    # JAX's lax_control_flow_test test_while/scan_readonly_carry_optimization: a carry the body
    # returns unchanged is a constant (NOTE: [read-only carries]); vmap(out_axes=None) raised.
    import jax
    import jax.numpy as jnp

    assert _read_only_carries(funcgrad, fnp) == _read_only_carries(jax, jnp)


@pytest.mark.parametrize("kw", ["length", "unroll"])
def test_traced_scan_parameters_say_jax_words(kw):
    # JAX's lax_control_flow_test test_scan_length/unroll_concrete_error
    f = funcgrad.jit(lambda n: funcgrad.lax.scan(lambda c, x: (c, x), 0.0, fnp.arange(3.0), **{kw: n}))
    with pytest.raises(
        funcgrad.errors.ConcretizationTypeError,
        match=f"The `{kw}` argument to `scan` expects a concrete `int`",
    ):
        f(3)


_UNUSED_OPERAND = {
    "switch": lambda api, m, a: api.lax.switch(
        (m.sum(a) > 0).astype(int), [lambda a, b: a * 2, lambda a, b: a * 3], a, m.cos(a)
    ),
    "scan_xs": lambda api, m, a: api.lax.scan(lambda c, t: (c * 2, None), a, m.cos(a)[None])[0],
    "map": lambda api, m, a: api.lax.map(lambda p: p[0] * 2, (a, m.cos(a))),
    "checkpoint": lambda api, m, a: api.checkpoint(lambda a, b: a * 2)(a, m.cos(a)),
}


@pytest.mark.parametrize("form", sorted(_UNUSED_OPERAND))
def test_operand_the_body_does_not_use_has_a_zero_cotangent_as_jax(form):
    # (the lax-parameter fuzzer, seed 20016) an operand of cond/switch, scan, map or checkpoint
    # that the body never uses gets a symbolic-zero cotangent, as JAX's transposes: computed zeros
    # reached cos's transpose as 0 * -sin(inf) = NaN
    jax = pytest.importorskip("jax")
    x = np.array([-np.inf, 1.0, 2.5], np.float32)

    def derivatives(api, m):
        h = lambda a: _UNUSED_OPERAND[form](api, m, a)  # noqa: E731
        return [np.asarray(api.grad(lambda a: h(a).sum())(x)), np.asarray(api.jit(api.jacrev(h))(x))]

    ours, theirs = derivatives(funcgrad, fnp), derivatives(jax, jax.numpy)
    for got, want in zip(ours, theirs):
        np.testing.assert_array_equal(got, want)
    assert not np.isnan(ours[0]).any()
