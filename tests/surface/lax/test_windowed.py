"""funcgrad.lax.reduce_window against jax.lax.reduce_window (the oracle): pooling with every
monoid (and its gradients to second order; with a window dilation forward mode only, as JAX's VJP
refuses it), the generic primitive (any reducer, pytrees of operands) with its JVP, vmap and jit
(reverse mode refused, as JAX's), and errors.

(The monoid primitives and select_and_gather_add / select_and_scatter_add have op_db entries in
tests/primitives/op_db/windowed.py; the generic ``reduce_window`` carries a jaxpr and is tested here.)
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from funcgrad.primitives import windowed as wd

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.testing import check_grads

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)
jlax = jax.lax

RNG = np.random.default_rng(0)
# (window, strides, padding, base_dilation, window_dilation) over a (2, 7, 6, 3) operand
WINDOWS = [
    ((1, 2, 2, 1), (1, 1, 1, 1), "VALID", None, None),
    ((1, 3, 2, 1), (1, 2, 1, 1), "SAME", None, None),
    ((1, 2, 2, 1), (1, 1, 2, 1), [(0, 0), (1, 2), (0, 1), (0, 0)], (1, 2, 1, 1), None),
    ((1, 2, 3, 1), (1, 2, 1, 1), [(0, 0), (1, 1), (2, 0), (0, 0)], None, (1, 2, 2, 1)),
]


def _distinct(shape):
    n = int(np.prod(shape))
    return (RNG.permutation(n) * 0.37 - n / 5).reshape(shape)


@pytest.mark.parametrize("window", WINDOWS, ids=[str(i) for i in range(len(WINDOWS))])
@pytest.mark.parametrize("monoid", ["add", "max", "min"])
def test_pooling_matches_jax(window, monoid):
    x = _distinct((2, 7, 6, 3))
    op, jop = getattr(lax, monoid), getattr(jlax, monoid)
    init = {"add": 0.0, "max": -np.inf, "min": np.inf}[monoid]
    got = lax.reduce_window(x, init, op, *window)
    want = jlax.reduce_window(x, init, jop, *window)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)
    prim = {"add": wd.reduce_window_sum_p, "max": wd.reduce_window_max_p, "min": wd.reduce_window_min_p}[
        monoid
    ]
    closed = funcgrad.make_jaxpr(lambda x: lax.reduce_window(x, init, op, *window))(x)
    assert [e.primitive for e in closed.jaxpr.eqns] == [prim]
    w = RNG.standard_normal(want.shape)
    v = RNG.standard_normal(x.shape)
    jv = jax.jit(lambda x, v: jax.jvp(lambda x: jlax.reduce_window(x, init, jop, *window), (x,), (v,))[1])(
        x, v
    )
    if window[4] is not None and monoid != "add":
        # JAX's max/min pooling with a window dilation has a JVP but no VJP (the transpose of
        # select_and_gather_add refuses it): funcgrad's too, in JAX's words.
        fv = funcgrad.jvp(lambda x: lax.reduce_window(x, init, op, *window), (x,), (v,))[1]
        np.testing.assert_allclose(np.asarray(fv), np.asarray(jv), rtol=1e-12)
        errors = []
        for lib, lop in ((jax, jop), (funcgrad, op)):
            with pytest.raises(NotImplementedError) as info:
                lib.grad(
                    lambda x, lib=lib, lop=lop: (lib.lax.reduce_window(x, init, lop, *window) * w).sum()
                )(x)
            errors.append(str(info.value))
        assert errors[0] == errors[1]
        return
    g = funcgrad.grad(lambda x: (lax.reduce_window(x, init, op, *window) * w).sum())(x)
    gj = funcgrad.jit(funcgrad.grad(lambda x: (lax.reduce_window(x, init, op, *window) * w).sum()))(x)
    # (jax's side as one program: eagerly jax compiles one per operation)
    want_g = jax.jit(jax.grad(lambda x: (jlax.reduce_window(x, init, jop, *window) * w).sum()))(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(want_g), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gj), np.asarray(g), rtol=1e-12)
    # <w, J v> = <J^T w, v> against JAX's forward mode.
    np.testing.assert_allclose(
        float(np.vdot(np.asarray(g), v)), float(np.vdot(w, np.asarray(jv))), rtol=1e-10
    )


@pytest.mark.parametrize("window", WINDOWS[2:], ids=["base-dilation", "window-dilation"])
def test_max_pool_derivatives_to_second_order(window):
    x = _distinct((1, 7, 6, 2))
    # (a window dilation: forward mode only, as JAX's)
    modes = ["fwd"] if window[4] is not None else ["fwd", "rev"]
    check_grads(
        lambda x: fnp.tanh(lax.reduce_window(x, -np.inf, lax.max, *window)), (x,), order=2, modes=modes
    )


def test_pooling_of_integers_and_float32():
    x = RNG.integers(-50, 50, (2, 6, 5)).astype(np.int32)
    for op, jop, init in ((lax.max, jlax.max, np.iinfo(np.int32).min), (lax.add, jlax.add, 0)):
        # (init in the operand's dtype, as jax takes it: a Python int is int64 in 64-bit mode, and a
        # general reduction -- int32's minimum is not int64's max identity -- refuses it, as jax's)
        got = lax.reduce_window(x, np.int32(init), op, (1, 2, 2), (1, 2, 1), "SAME")
        assert got.dtype == np.int32
        np.testing.assert_array_equal(
            np.asarray(got),
            np.asarray(jlax.reduce_window(x, np.int32(init), jop, (1, 2, 2), (1, 2, 1), "SAME")),
        )
    xf = x.astype(np.float32)
    assert lax.reduce_window(xf, -np.inf, lax.max, (1, 2, 2), (1, 1, 1), "VALID").dtype == np.float32


# ----------------------------------------------------------------------------------------------
# The generic primitive


def test_generic_reducer_matches_jax_and_differentiates_forward():
    x = RNG.uniform(0.5, 1.5, (2, 7, 5))
    args = ((1, 3, 2), (1, 2, 1), "SAME", (1, 1, 2), None)
    got = lax.reduce_window(x, 1.0, lax.mul, *args)
    want = jlax.reduce_window(x, 1.0, jlax.mul, *args)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)
    closed = funcgrad.make_jaxpr(lambda x: lax.reduce_window(x, 1.0, lax.mul, *args))(x)
    assert [e.primitive for e in closed.jaxpr.eqns] == [wd.reduce_window_p]
    np.testing.assert_allclose(
        np.asarray(funcgrad.jit(lambda x: lax.reduce_window(x, 1.0, lax.mul, *args))(x)), np.asarray(want)
    )
    v = RNG.standard_normal(x.shape)
    t = funcgrad.jvp(lambda x: lax.reduce_window(x, 1.0, lax.mul, *args), (x,), (v,))[1]
    tj = jax.jit(lambda x, v: jax.jvp(lambda x: jlax.reduce_window(x, 1.0, jlax.mul, *args), (x,), (v,))[1])(
        x, v
    )
    np.testing.assert_allclose(np.asarray(t), np.asarray(tj), rtol=1e-10)
    check_grads(lambda x: lax.reduce_window(x, 1.0, lax.mul, *args), (x,), order=2, modes=("fwd",))
    # Reverse mode: the JVP reduces (primal, tangent) pairs jointly, so linearizing leaves the primal
    # unknown and both libraries refuse it, in JAX's words (fuzzer leftover: funcgrad's linearize
    # computed; its vjp raised another error).
    errors = []
    for lib in (jax, funcgrad):
        f = functools.partial(lambda lib, x: lib.lax.reduce_window(x, 1.0, lib.lax.mul, *args), lib)
        for how in (lib.linearize, lambda f, x, lib=lib: lib.grad(lambda x: f(x).sum())(x)):
            with pytest.raises(ValueError) as info:
                how(f, x)
            errors.append(str(info.value))
    assert len(set(errors)) == 1 and errors[0].startswith("Linearization failed")
    # A non-identity init value of a monoid also takes the generic path.
    got = lax.reduce_window(x, 2.0, lax.add, (1, 2, 2))
    np.testing.assert_allclose(np.asarray(got), np.asarray(jlax.reduce_window(x, 2.0, jlax.add, (1, 2, 2))))


def test_generic_reducer_with_a_user_function_and_vmap():
    x = RNG.standard_normal((3, 8))

    def smooth_max(a, b):
        return fnp.logaddexp(a, b)

    got = lax.reduce_window(x, -np.inf, smooth_max, (1, 3), (1, 2), "VALID")
    want = jlax.reduce_window(x, -np.inf, jax.numpy.logaddexp, (1, 3), (1, 2), "VALID")
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)
    batched = funcgrad.vmap(lambda r: lax.reduce_window(r, -np.inf, smooth_max, (3,), (2,), "VALID"))(x)
    np.testing.assert_allclose(np.asarray(batched), np.asarray(want), rtol=1e-12)
    jitted = funcgrad.jit(funcgrad.vmap(lambda r: lax.reduce_window(r, -np.inf, smooth_max, (3,), (2,))))(x)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(want), rtol=1e-12)


def test_variadic_reduce_window_over_a_pytree():
    # A windowed argmax: (value, index) pairs, keeping the larger value.
    x = _distinct((9,))
    idx = np.arange(9, dtype=np.int64)

    def pick(a, b):
        take_a = a[0] >= b[0]
        return (fnp.where(take_a, a[0], b[0]), fnp.where(take_a, a[1], b[1]))

    def jpick(a, b):
        take_a = a[0] >= b[0]
        return (jax.numpy.where(take_a, a[0], b[0]), jax.numpy.where(take_a, a[1], b[1]))

    init = (np.asarray(-np.inf), np.asarray(0, np.int64))
    got = lax.reduce_window((x, idx), init, pick, (3,), (2,), "VALID")
    want = jlax.reduce_window((x, idx), init, jpick, (3,), (2,), "VALID")
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    jitted = funcgrad.jit(lambda x, i: lax.reduce_window((x, i), init, pick, (3,), (2,), "VALID"))(x, idx)
    for g, w in zip(jitted, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_reduce_window_shape_tuple_matches_jax():
    for window in WINDOWS:
        dims, strides, padding, base, wdil = window
        if isinstance(padding, str):
            continue
        assert lax.reduce_window_shape_tuple((2, 7, 6, 3), dims, strides, padding, base, wdil) == tuple(
            jlax.reduce_window_shape_tuple((2, 7, 6, 3), dims, strides, padding, base, wdil)
        )


def test_reduce_window_errors():
    x = np.ones((4, 5))
    with pytest.raises(TypeError, match="window_dimensions"):
        lax.reduce_window(x, 0.0, lax.add, (2,))
    with pytest.raises(TypeError, match="window_strides must have every element be strictly positive"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (0, 1))
    with pytest.raises(ValueError, match="tree structure"):
        lax.reduce_window((x, x), (0.0,), lambda a, b: a, (2, 2))
    with pytest.raises(ValueError, match="init_value must not be batched"):
        funcgrad.vmap(lambda i: lax.reduce_window(x, i, lax.mul, (2, 2)))(np.ones(3))
    with pytest.raises(TypeError, match="init_value"):
        funcgrad.jvp(lambda i: lax.reduce_window(x, i, lax.mul, (2, 2)), (1.0,), (1.0,))


@pytest.mark.parametrize("select", ["ge", "le"])
@pytest.mark.parametrize(
    "window, strides, padding",
    [
        ((1, 2, 2, 1), (1, 1, 1, 1), ((0, 0),) * 4),
        ((1, 3, 3, 1), (1, 2, 2, 1), ((0, 0), (1, 1), (0, 2), (0, 0))),
        ((2, 1, 3, 2), (1, 3, 1, 2), ((1, 0), (0, 0), (2, 1), (0, 1))),
    ],
)
def test_select_and_scatter_unrolled_equals_xla(monkeypatch, select, window, strides, padding):
    # NOTE: [unrolled select and scatter]: the unrolled lowering picks what XLA's
    # select_and_scatter picks, ties (few distinct values) and NaNs included.
    from funcgrad.xla_bridge.rules import windowed as rules

    x = np.round(RNG.standard_normal((3, 7, 6, 4)) * 1.5)
    x[0, 1, 2, :] = np.nan
    params = dict(select=select, window_dimensions=window, window_strides=strides, padding=padding,
                  window_dilation=(1, 1, 1, 1))  # fmt: skip
    out_shape = wd.reduce_window_shape_tuple(x.shape, window, strides, padding, (1,) * 4, (1,) * 4)
    s = RNG.standard_normal(out_shape)

    def run():
        funcgrad.clear_caches()
        return np.asarray(funcgrad.jit(lambda s, x: wd.select_and_scatter_add_p.bind(s, x, **params))(s, x))

    unrolled = run()
    monkeypatch.setattr(rules, "_MAX_UNROLLED_WINDOW", 0)
    native = run()
    np.testing.assert_allclose(unrolled, native, rtol=1e-13, atol=1e-15)  # adds in another order
    np.testing.assert_allclose(unrolled.sum(), s.sum(), rtol=1e-12)  # every share lands somewhere
