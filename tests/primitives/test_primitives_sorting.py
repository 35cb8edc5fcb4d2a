"""jax.lax semantics of sort, the cumulative reductions and the reductions' gradient conventions,
pinned with values checked against JAX: NaN order and stability of sort, the permutation-following
JVP, cummax/cummin/cumprod gradients with ties and zeros, reduce_prod exact with zeros (to second
order), max ties and argmax/argmin with NaN."""

from __future__ import annotations

import numpy as np
import pytest
from _checks import assert_close
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import reductions as red
from funcgrad.primitives import sorting as so

import funcgrad
from funcgrad.testing import check_grads

TIES = np.array([1.0, 3.0, 3.0, 2.0, 3.0, 0.0, 0.0])
CT = np.arange(1.0, 8.0)


def vjp(f, x, ct):
    return np.asarray(funcgrad.vjp(f, x)[1](ct)[0])


def test_sort_puts_nans_last_and_is_stable_for_equal_keys():
    out = so.sort(np.array([3.0, np.nan, -0.0, 0.0, -np.inf, 1.0]))
    assert np.asarray(out)[:-1].tolist() == [-np.inf, 0.0, 0.0, 1.0, 3.0] and np.isnan(np.asarray(out)[-1])
    _, v = so.sort((np.array([0.0, -0.0, 0.0, -0.0]), np.arange(4.0)))
    assert np.asarray(v).tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("num_keys", [1, 2])
def test_eager_sort_of_bfloat16_puts_nans_last_as_jax(num_keys):
    # ml_dtypes' bfloat16 argsort left NaN among the numbers eagerly (the fuzzer's bfloat16 inputs);
    # jit's XLA sort and jax put it last.
    import jax
    import ml_dtypes

    x = np.array([3, np.nan, 4, -0.0, 0.0, -1], ml_dtypes.bfloat16)
    ops = (x, np.array([1, 0, 1, 0, 1, 0], ml_dtypes.bfloat16))
    want = jax.lax.sort(ops, num_keys=num_keys)
    for fn in (
        so.sort_p.bind,
        funcgrad.jit(so.sort_p.bind, static_argnames=("dimension", "is_stable", "num_keys")),
    ):
        got = fn(*ops, dimension=0, is_stable=True, num_keys=num_keys)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g, np.float32), np.asarray(w, np.float32))


def test_sort_many_operands_by_lexicographic_keys():
    k1, k2, v = so.sort((np.array([1, 0, 1, 0]), np.array([2.0, 5.0, 1.0, 4.0]), np.arange(4)), num_keys=2)
    assert np.asarray(v).tolist() == [3, 1, 2, 0]
    keys, vals = so.sort_key_val(np.array([[2, 0, 1]]), np.array([[7, 8, 9]]), dimension=1)
    assert np.asarray(vals).tolist() == [[8, 9, 7]]
    assert isinstance(so.sort([np.zeros(2)]), tuple) and not isinstance(so.sort(np.zeros(2)), tuple)


def test_sort_gradient_follows_the_permutation_including_ties():
    g = funcgrad.grad(lambda x: red.reduce_sum(ew.mul(so.sort(x), np.arange(4.0)), (0,)))(
        np.array([2.0, 1.0, 2.0, 0.0])
    )
    assert np.asarray(g).tolist() == [2.0, 1.0, 3.0, 0.0]  # as JAX
    jaxpr = str(funcgrad.make_jaxpr(funcgrad.grad(lambda x: red.reduce_sum(so.sort(x), (0,))))(np.ones(3)))
    assert "sort" in jaxpr


@pytest.mark.slow
@pytest.mark.parametrize(
    "fn, forward, backward",
    [
        (so.cummax, [1.0, 10.0, 8.0, 0.0, 9.0, 0.0, 0.0], [0.0, 0.75, 2.25, 0.0, 12.0, 3.0, 10.0]),
        (so.cummin, [15.0, 0.0, 0.0, 0.0, 0.0, 9.5, 3.5], [0.0, 0.0, 0.0, 0.0, 0.0, 10.5, 17.5]),
        (so.cumprod, [376.0, 125.0, 123.0, 171.0, 90.0, 324.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 7.0]),
    ],
)
def test_cumulative_gradients_with_ties_and_zeros_match_jax(fn, forward, backward):
    assert vjp(lambda x: fn(x), TIES, CT).tolist() == forward
    assert vjp(lambda x: fn(x, reverse=True), TIES, CT).tolist() == backward


def test_cumsum_transpose_is_the_reverse_cumsum_and_values():
    assert np.asarray(so.cumsum(np.array([1, 2, 3]), reverse=True)).tolist() == [6, 5, 3]
    assert vjp(lambda x: so.cumsum(x), np.ones(3), np.array([1.0, 2.0, 3.0])).tolist() == [6.0, 5.0, 3.0]
    assert np.asarray(so.cumsum(np.ones((2, 3), np.int32), axis=1)).dtype == np.int32


def test_cumprod_is_differentiable_to_higher_order_at_zeros():
    x = np.array([[2.0, 0.0, 3.0, -1.0], [0.0, 0.0, 1.5, 2.0]])
    check_grads(lambda v: so.cumprod(v, axis=1), [x], order=3)


def test_reduce_prod_gradient_and_hessian_are_exact_with_zeros():
    g = funcgrad.grad(lambda x: red.reduce_prod(x, (0,)))
    assert np.asarray(g(np.array([2.0, 0.0, 3.0]))).tolist() == [0.0, 6.0, 0.0]
    assert np.asarray(g(np.array([2.0, 0.0, 0.0]))).tolist() == [0.0, 0.0, 0.0]
    h = funcgrad.jacfwd(g)(np.array([2.0, 0.0, 3.0]))
    assert np.asarray(h).tolist() == [[0.0, 3.0, 0.0], [3.0, 0.0, 2.0], [0.0, 2.0, 0.0]]
    x = np.array([[1.0, 0.0, 2.0], [0.5, -1.0, 0.0]])
    check_grads(lambda v: red.reduce_prod(v, (0, 1)), [x], order=3)


def test_reduce_max_ties_share_the_gradient_and_arg_reductions_pick_the_first():
    g = funcgrad.grad(lambda x: red.reduce_max(x, (0,)))(np.array([1.0, 3.0, 3.0]))
    assert_close(g, np.array([0.0, 0.5, 0.5]))
    assert int(red.argmax(np.array([1.0, np.nan, 3.0, np.nan]), 0, np.int32)) == 1
    assert int(red.argmin(np.array([1.0, 0.0, 0.0, 2.0]), 0, np.int32)) == 1
    assert red.argmax(np.zeros((2, 3)), -1, np.int64).dtype == np.int64
    with pytest.raises(ValueError, match="empty"):
        red.argmax(np.zeros((2, 0)), 1, np.int32)


def test_associative_scan_matches_cumulative_ops():
    x = np.random.default_rng(0).standard_normal((3, 5))
    assert_close(so.associative_scan(ew.add, x, axis=1), np.cumsum(x, 1))
    assert_close(
        so.associative_scan(ew.mul, x, axis=0, reverse=True), np.flip(np.cumprod(np.flip(x, 0), 0), 0)
    )


def test_associative_scan_along_a_negative_axis_batches_as_jax():
    # A negative axis reached the slice/concatenate primitives unnormalised, naming the wrong
    # dimension under vmap (the fuzzer: jacfwd/jacrev of associative_scan(np.add, x, axis=-1)).
    import jax
    import jax.numpy as jnp

    import funcgrad.numpy as fnp

    x = np.arange(1.0, 7.0).reshape(2, 3)
    # (jax's side as one program each: eagerly jax compiles one per operation)
    want = jax.jit(jax.vmap(lambda r: jax.lax.associative_scan(jnp.add, r, axis=-1)))(x)
    got = funcgrad.vmap(lambda r: funcgrad.lax.associative_scan(fnp.add, r, axis=-1))(x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    jac = jax.jit(jax.jacfwd(jax.jacrev(lambda r: jax.lax.associative_scan(jnp.multiply, r, axis=-1))))(x[0])
    ours = funcgrad.jacfwd(
        funcgrad.jacrev(lambda r: funcgrad.lax.associative_scan(fnp.multiply, r, axis=-1))
    )(x[0])
    np.testing.assert_allclose(np.asarray(ours), np.asarray(jac), rtol=1e-6)
    with pytest.raises(ValueError, match="out of bounds"):
        funcgrad.lax.associative_scan(fnp.add, x, axis=2)


def test_associative_scan_of_a_pytree_as_jax():
    # jax's associative_scan takes pytrees (fn combines trees); funcgrad's stacked them into one
    # array and recursed without end (the differential probe)
    import jax
    import jax.numpy as jnp

    import funcgrad.numpy as fnp

    x = np.arange(1.0, 6.0)

    def f(T, n):
        return lambda x: T.lax.associative_scan(
            lambda a, b: {"s": a["s"] + b["s"], "m": n.maximum(a["m"], b["m"]), "p": a["p"] * b["p"]},
            {"s": x, "m": x[::-1], "p": x},
            reverse=True,
        )

    want = jax.jit(f(jax, jnp))(x)  # (one program, not one per operation)
    for got in (f(funcgrad, fnp)(x), funcgrad.jit(f(funcgrad, fnp))(x)):
        for k in want:
            np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]))
    g = funcgrad.grad(lambda x: f(funcgrad, fnp)(x)["p"].sum())(x)
    np.testing.assert_allclose(
        np.asarray(g), np.asarray(jax.jit(jax.grad(lambda x: f(jax, jnp)(x)["p"].sum()))(x))
    )


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax"])
def test_reverse_cumulative_reductions_round_as_jax(name):
    # JAX lowers a reverse scan as a reduce_window padded after the axis (not a reversed forward
    # scan), and XLA's blocked scan then adds in its order: a reversed forward scan gave 22 of 51
    # float16 sums an ulp apart (the fuzzer's float16 cumsum gradients, seed 14305)
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(0)
    for dtype in (np.float16, np.float32):
        x = rng.uniform(-1, 1, (3, 17)).astype(dtype)
        want = np.asarray(jax.jit(lambda v: getattr(jax.lax, name)(v, axis=1, reverse=True))(x))
        got = np.asarray(funcgrad.jit(lambda v: getattr(funcgrad.lax, name)(v, axis=1, reverse=True))(x))
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("jit", [False, True])
def test_signed_zeros_of_max_min_and_scans_are_xla_s(jit):
    # NOTE: [XLA's signed zeros in max and min]: XLA orders -0 below +0 in max/min, its reductions
    # and scans start from +-inf (cumsum from +0, cumlogsumexp from -inf: never -0); NumPy's
    # maximum/minimum returned either zero eagerly (max([0, -0]) was -0, cumsum([-0, -0]) -0).
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    x = np.array([[-0.0, -0.0, 0.0, -0.0], [0.0, -0.0, -0.0, -0.0], [-0.0, 1.0, -1.0, -0.0]])
    y = np.array([0.0, -0.0, -0.0, 0.0])

    def program(T, np_, x, y):
        out = [np_.maximum(x, y), np_.minimum(x, y), np_.maximum(y, x), np_.minimum(y, x)]
        out += [np_.max(x, axis=a) for a in (0, 1)] + [np_.min(x, axis=a) for a in (0, 1)]
        for rev in (False, True):
            for name in ("cumsum", "cummax", "cummin", "cumlogsumexp"):
                out += [getattr(T.lax, name)(x, axis=a, reverse=rev) for a in (0, 1)]
        out += [T.lax.cumsum(x[:1, :1], axis=0)]  # (one element: itself, -0)
        return out

    # (x and y arguments under jit: as constants XLA's folding computes the max/min otherwise)
    fg = (funcgrad, funcgrad.numpy)
    ours = funcgrad.jit(lambda x, y: program(*fg, x, y))(x, y) if jit else program(*fg, x, y)
    theirs = program(jax, jnp, x, y)
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(np.signbit(np.asarray(o)), np.signbit(np.asarray(t)))
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-15)
