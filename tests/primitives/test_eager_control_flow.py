"""Eager control flow runs compiled, as JAX's (NOTE: [eager control flow is compiled] in
primitives/control_flow.py): float32 bits equal to jit's and to JAX's, one compile per program, a
user primitive inside an eager loop lowered through its registered lowering (its impl traced on
Arrays), the NumPy interpreter kept for a body whose primitive has no lowering."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import XLA_DEFAULT_OPTIONS, xla_default_compiles
from funcgrad.primitives.scan import scan_p
from funcgrad.xla_bridge import executables
from funcgrad.xla_bridge import runtime as rt

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.interpreters import mlir
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ShapedArray

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")

F32 = np.float32


def _two_loop(np_, lax_, jit=lambda f: f):
    """optax's L-BFGS two-loop recursion: two float32 scans whose rounding compounds. ``jit``
    wraps each scan (JAX's eager scan is the jit of that one scan)."""

    def back(q, xs):
        s, y, r = xs
        a = r * np_.dot(s, q)
        return q - a * y, a

    def forward(r, xs):
        s, y, rh, a = xs
        return r + s * (a - rh * np_.dot(y, r)), None

    back_scan = jit(lambda g, S, Y, rho: lax_.scan(back, g, (S, Y, rho), reverse=True))
    forward_scan = jit(lambda r, S, Y, rho, alphas: lax_.scan(forward, r, (S, Y, rho, alphas))[0])

    def f(S, Y, rho, g):
        q, alphas = back_scan(g, S, Y, rho)
        return forward_scan(np.asarray(q) * F32(0.5), S, Y, rho, alphas)

    return f


def test_float32_scan_bits_equal_jit_and_jax():
    rng = np.random.default_rng(0)
    S, Y = (rng.standard_normal((6, 9)).astype(F32) for _ in range(2))
    rho = (1.0 / np.sum(S * Y, axis=1)).astype(F32)
    g = rng.standard_normal(9).astype(F32)
    # Each eager scan is one compiled program, as JAX's eager scan is: the bits of jit's, and of
    # JAX's, all at XLA's default options (NOTE: [oracle compile options]).
    with xla_default_compiles():
        eager = np.asarray(_two_loop(fnp, lax)(S, Y, rho, g))
        jitted = _two_loop(fnp, lax, funcgrad.jit)(S, Y, rho, g)
    assert eager.dtype == F32
    jax_jit = lambda f: jax.jit(f, compiler_options=XLA_DEFAULT_OPTIONS)  # noqa: E731
    np.testing.assert_array_equal(eager, np.asarray(jitted))
    np.testing.assert_array_equal(eager, np.asarray(_two_loop(jax.numpy, jax.lax, jax_jit)(S, Y, rho, g)))


def _count_compiles(monkeypatch) -> list:
    calls = []
    real = rt.compile

    def counting(*a, **k):
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(rt, "compile", counting)
    return calls


def _body(c):
    return c * F32(1.5) + F32(0.25)


def _small(c):
    return c < F32(100.0)


def _step(c, x):
    return c * x, c


def test_each_eager_program_compiles_once(monkeypatch):
    calls = _count_compiles(monkeypatch)  # (a call reaching the executable cache counts too)
    x, xs = F32(2.0), np.linspace(1, 2, 4, dtype=F32)
    runs = [
        lambda: lax.while_loop(_small, _body, x),
        lambda: lax.scan(_step, x, xs),
        lambda: lax.cond(x > 1, _body, fnp.sin, x),
    ]
    for run in runs:
        first = funcgrad.tree_util.tree_map(np.asarray, run())
        n = len(calls)
        again = funcgrad.tree_util.tree_map(np.asarray, run())
        assert len(calls) == n, "the second eager call of the same loop compiled again"
        funcgrad.tree_util.tree_map(np.testing.assert_array_equal, first, again)
    assert len(calls) == 3
    c = x
    while c < 100:
        c = _body(c)
    assert float(lax.while_loop(_small, _body, x)) == float(c) == float(F32(143.6626))


def _set_row_primitive(lowered: bool) -> Primitive:
    """A user primitive whose impl uses Array methods (``.at``), as equinox's ``maybe_set``."""
    p = Primitive("set_row_lowered" if lowered else "set_row_numpy")
    if lowered:
        p.def_impl(lambda xs, x, i: xs.at[i].set(x))
        mlir.register_lowering(p, mlir.lower_fun(lambda xs, x, i: xs.at[i].set(x), multiple_results=False))
    else:
        p.def_impl(lambda xs, x, i: np.concatenate([xs[:i], x[None], xs[i + 1 :]]))
    p.def_abstract_eval(lambda xs, x, i: ShapedArray(xs.shape, xs.dtype))
    return p


@pytest.mark.parametrize("lowered", [True, False], ids=["with_lowering", "without_lowering"])
def test_user_primitive_inside_an_eager_while_loop(lowered):
    p = _set_row_primitive(lowered)

    def fill(n):
        def body(c):
            i, xs = c
            return i + 1, p.bind(xs, fnp.full((3,), i, F32), i)

        return lax.while_loop(lambda c: c[0] < n, body, (0, fnp.zeros((4, 3), F32)))[1]

    expected = np.repeat(np.array([0, 1, 2, 0], F32)[:, None], 3, axis=1)
    # With a lowering the loop is compiled and the impl is traced on Arrays (as in JAX); without
    # one the loop is interpreted, as it runs eagerly outside a loop.
    np.testing.assert_array_equal(np.asarray(fill(3)), expected)
    np.testing.assert_array_equal(np.asarray(fill(3)), expected)  # (remembered: interpreted again)
    if lowered:
        np.testing.assert_array_equal(np.asarray(funcgrad.jit(fill, static_argnums=0)(3)), expected)
    else:
        with pytest.raises(NotImplementedError, match="set_row_numpy"):
            funcgrad.jit(fill, static_argnums=0)(3)


def test_eager_loops_with_float0_tangents_and_callbacks(capfd):
    # An integer carry's tangent is float0: jvp's loop carries it through the compiled program.
    def f(x):
        return lax.fori_loop(0, 3, lambda i, c: (c[0] + i, c[1] * x), (0, x))

    (n, y), (dn, dy) = funcgrad.jvp(f, (F32(2.0),), (F32(1.0),))
    assert int(n) == 3 and float(y) == 16.0 and float(dy) == 32.0
    assert dn.dtype == funcgrad.dtypes.float0
    # A host callback in an eager loop runs once per iteration, in order, before the loop returns.
    lax.fori_loop(0, 3, lambda i, c: funcgrad.debug.print("step {i}", i=i) or c + 1, 0)
    print("after")
    assert capfd.readouterr().out.split() == ["step", "0", "step", "1", "step", "2", "after"]


def test_eager_loops_pass_captured_arrays_as_operands_as_jax_does(monkeypatch):
    # NOTE: [eager loops keep only what their trace made]: at the top a captured array is an
    # operand of the loop (JAX's num_consts), so new values of it compile no new program; the arange
    # is the loop's iota equation, as JAX's, and no constant; the bits are jit's and JAX's. Under
    # jvp every constant is an operand.
    seen = []
    real = scan_p.impl
    monkeypatch.setattr(scan_p, "impl", lambda *a, **p: seen.append((len(a), p)) or real(*a, **p))

    def loop(np_, lax_, x, w):
        body = lambda i, c: np_.tanh(c * w) * (1.5 + np_.arange(4, dtype=F32)) + np_.zeros(4, F32)  # noqa: E731
        return lax_.fori_loop(0, 3, body, x)

    rng = np.random.default_rng(0)
    x, w = (rng.standard_normal(4).astype(F32) for _ in range(2))
    with xla_default_compiles():
        eager = np.asarray(loop(fnp, lax, x, w))
        jitted = np.asarray(funcgrad.jit(lambda x: loop(fnp, lax, x, w))(x))
    (n_args, params), *_ = seen
    assert n_args == 3 and params["num_consts"] == 1  # (w, i, c): w is an operand
    assert not params["jaxpr"].consts
    assert "iota" in [e.primitive.name for e in params["jaxpr"].jaxpr.eqns]
    np.testing.assert_array_equal(eager, jitted)
    jax_jit = jax.jit(lambda x: loop(jax.numpy, jax.lax, x, w), compiler_options=XLA_DEFAULT_OPTIONS)
    np.testing.assert_array_equal(eager, np.asarray(jax_jit(x)))
    loop(fnp, lax, x, w)  # (compiled at the suite's options)
    misses = executables._mem_stats["misses"]
    w2 = w + F32(1)
    again = np.asarray(loop(fnp, lax, x, w2))  # a fresh closure over new values: the same program
    assert executables._mem_stats["misses"] == misses
    with xla_default_compiles():  # (the suite's cheap options fold the in-body iota otherwise)
        np.testing.assert_array_equal(again, np.asarray(funcgrad.jit(lambda x: loop(fnp, lax, x, w2))(x)))
    seen.clear()
    funcgrad.jvp(lambda x: loop(fnp, lax, x, w), (x,), (x,))
    assert seen[0][1]["num_consts"] > 0  # under jvp: operands the transformation sees
