"""funcgrad.lax: the jax.lax-style wrappers against NumPy references, their strictness (no
promotion, no broadcasting, errors before binding), and derivatives/vmap/jit through them."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import funcgrad
from funcgrad import lax
from funcgrad.api import jit
from funcgrad.testing import check_grads

RNG = np.random.default_rng(0)
X = RNG.uniform(0.2, 0.9, size=(3, 4))
Y = RNG.uniform(0.2, 0.9, size=(3, 4))

UNARY = {
    "neg": np.negative,
    "sign": np.sign,
    "floor": np.floor,
    "ceil": np.ceil,
    "abs": np.abs,
    "exp": np.exp,
    "exp2": np.exp2,
    "expm1": np.expm1,
    "log": np.log,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "cbrt": np.cbrt,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "atanh": np.arctanh,
    "logistic": sp.expit,
    "erf": sp.erf,
    "erfc": sp.erfc,
    "erf_inv": sp.erfinv,
    "lgamma": sp.gammaln,
    "digamma": sp.digamma,
    "square": np.square,
    "is_finite": np.isfinite,
}
BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "rem": np.fmod,
    "pow": np.power,
    "max": np.maximum,
    "min": np.minimum,
    "atan2": np.arctan2,
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "nextafter": np.nextafter,
}
NOT_DIFFERENTIABLE = {"sign", "floor", "ceil", "is_finite", "eq", "ne", "lt", "le", "gt", "ge", "nextafter"}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    f = getattr(lax, name)
    np.testing.assert_allclose(np.asarray(f(X)), UNARY[name](X), rtol=1e-12)
    assert f(X.astype(np.float32)).dtype == (np.bool_ if name == "is_finite" else np.float32)
    np.testing.assert_allclose(np.asarray(jit(f)(X)), np.asarray(f(X)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(funcgrad.vmap(f)(X)), np.asarray(f(X)), rtol=1e-12)
    if name not in NOT_DIFFERENTIABLE:
        check_grads(f, [X], order=2)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name):
    f = getattr(lax, name)
    np.testing.assert_allclose(np.asarray(f(X, Y)), BINARY[name](X, Y), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(f(X, 0.5)), BINARY[name](X, 0.5), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(jit(f)(X, Y)), np.asarray(f(X, Y)), rtol=1e-12)
    if name not in NOT_DIFFERENTIABLE:
        check_grads(f, [X, Y], order=1)


def test_integer_and_bitwise_ops():
    a, b = np.array([-7, 12, 5]), np.array([2, 10, 3])
    np.testing.assert_array_equal(np.asarray(lax.div(a, b)), [-3, 1, 1])  # rounds toward zero
    np.testing.assert_array_equal(np.asarray(lax.rem(a, b)), np.fmod(a, b))
    np.testing.assert_array_equal(np.asarray(lax.bitwise_and(a, b)), a & b)
    np.testing.assert_array_equal(np.asarray(lax.bitwise_or(a, b)), a | b)
    np.testing.assert_array_equal(np.asarray(lax.bitwise_xor(a, b)), a ^ b)
    np.testing.assert_array_equal(np.asarray(lax.bitwise_not(a)), ~a)
    np.testing.assert_array_equal(np.asarray(lax.shift_left(a, 1)), a << 1)
    np.testing.assert_array_equal(np.asarray(lax.shift_right_arithmetic(a, 1)), a >> 1)
    np.testing.assert_array_equal(
        np.asarray(lax.shift_right_logical(np.array([-8], np.int32), np.int32(28))), [15]
    )
    np.testing.assert_array_equal(np.asarray(lax.integer_pow(a, 3)), a**3)
    np.testing.assert_array_equal(np.asarray(lax.round(np.array([0.5, -1.5, 2.5]))), [1.0, -2.0, 3.0])
    np.testing.assert_array_equal(
        np.asarray(lax.round(np.array([0.5, -1.5, 2.5]), lax.RoundingMethod.TO_NEAREST_EVEN)),
        [0.0, -2.0, 2.0],
    )


def test_strictness():
    with pytest.raises(TypeError, match="same dtypes"):
        lax.add(np.ones(2, np.float32), np.ones(2))
    with pytest.raises(TypeError, match="incompatible shapes"):
        lax.mul(np.ones(2), np.ones(3))
    with pytest.raises(TypeError, match="does not accept"):
        lax.sin(np.ones(2, np.int32))
    with pytest.raises(TypeError):
        lax.dynamic_slice(np.ones(3), (0.5,), (1,))
    with pytest.raises(ValueError, match="total size must be unchanged"):  # jax 0.10's type
        lax.reshape(np.ones(6), (4,))
    with pytest.raises(TypeError):
        lax.broadcast_in_dim(np.ones(3), (2, 4), (1,))
    # As jax 0.10's lax: a Python scalar has its default dtype, which must match (no truncation of
    # a float into an integer array, no weak promotion); equal defaults combine.
    for op, x, y in [
        (lax.add, np.ones(2, np.int64), 1.0),
        (lax.add, np.ones(2, np.float32), 1.0),
        (lax.mul, np.ones(2, np.int32), 2),
        (lax.add, 1, 1.0),
    ]:
        with pytest.raises(TypeError, match="same dtypes"):
            op(x, y)
    assert lax.add(np.ones(2), 1.0).dtype == np.float64 and lax.mul(np.ones(2, np.int64), 2).dtype == np.int64


def test_selection_and_conversion():
    p = np.array([True, False, True])
    np.testing.assert_array_equal(np.asarray(lax.select(p, np.ones(3), np.zeros(3))), [1.0, 0.0, 1.0])
    which = np.array([0, 1, 2], np.int32)
    out = lax.select_n(which, np.zeros(3), np.ones(3), np.full(3, 2.0))
    np.testing.assert_array_equal(np.asarray(out), [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(
        np.asarray(lax.clamp(0.0, np.array([-1.0, 0.5, 2.0]), 1.0)), [0.0, 0.5, 1.0]
    )
    np.testing.assert_array_equal(
        np.asarray(lax.convert_element_type(np.array([1.7, -1.7]), np.int32)), [1, -1]
    )
    bits = lax.bitcast_convert_type(np.array([1.0], np.float32), np.int32)
    np.testing.assert_array_equal(np.asarray(bits), np.array([1.0], np.float32).view(np.int32))
    g = funcgrad.grad(lambda x: lax.stop_gradient(x) * x)(3.0)
    assert float(g) == 3.0
    check_grads(lambda a, b: lax.select(p, a, b), [np.ones(3), np.zeros(3)], order=1)
    check_grads(lambda x: lax.clamp(0.0, x, 1.0), [np.array([-1.0, 0.5, 2.0])], order=1)


def test_reductions_and_contractions():
    np.testing.assert_allclose(np.asarray(lax.reduce_sum(X, (1,))), X.sum(1))
    np.testing.assert_allclose(np.asarray(lax.reduce_max(X, (0,))), X.max(0))
    np.testing.assert_allclose(np.asarray(lax.reduce_min(X, (0, 1))), X.min())
    np.testing.assert_allclose(np.asarray(lax.reduce_prod(X, (1,))), X.prod(1))
    assert bool(lax.reduce_and(np.array([True, False]), (0,))) is False
    assert bool(lax.reduce_or(np.array([True, False]), (0,))) is True
    assert lax.argmax(X, 1, np.int32).dtype == np.int32
    np.testing.assert_array_equal(np.asarray(lax.argmin(X, 0, np.int64)), X.argmin(0))
    dn = (((2,), (2,)), ((0,), (0,)))
    a, b = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 5, 4))
    with pytest.raises(TypeError, match="dot_general"):
        lax.dot_general(a, b, (((1,), (1,)), ((0,), (0,))))
    np.testing.assert_allclose(np.asarray(lax.dot_general(a, b, dn)), np.einsum("bik,bjk->bij", a, b))
    np.testing.assert_allclose(np.asarray(lax.dot(X, Y.T)), X @ Y.T)
    check_grads(lambda u, v: lax.dot_general(u, v, dn), [a, b], order=1)
    check_grads(lambda u: lax.reduce_max(u, (1,)), [X], order=1)


def test_shapes():
    x = np.arange(6.0).reshape(2, 3)
    assert lax.broadcast_in_dim(np.arange(3.0), (2, 3), (1,)).shape == (2, 3)
    assert lax.broadcast(x, (4,)).shape == (4, 2, 3)
    np.testing.assert_array_equal(np.asarray(lax.reshape(x, (3, 2), dimensions=(1, 0))), x.T.reshape(3, 2))
    assert lax.squeeze(np.ones((1, 3, 1)), (0, 2)).shape == (3,)
    assert lax.expand_dims(x, (0, 3)).shape == (1, 2, 3, 1)
    np.testing.assert_array_equal(np.asarray(lax.transpose(x, (1, 0))), x.T)
    np.testing.assert_array_equal(np.asarray(lax.rev(x, (0, 1))), x[::-1, ::-1])
    assert lax.collapse(np.ones((2, 3, 4)), 1).shape == (2, 12)
    np.testing.assert_array_equal(np.asarray(lax.iota(np.int32, 4)), np.arange(4))
    np.testing.assert_array_equal(
        np.asarray(lax.broadcasted_iota(np.int32, (2, 3), 1)), np.indices((2, 3))[1]
    )
    assert lax.full((2,), 1.5, np.float32).dtype == np.float32
    np.testing.assert_array_equal(np.asarray(lax.full_like(x, 7)), np.full_like(x, 7))
    np.testing.assert_array_equal(np.asarray(lax.zeros_like_array(x)), 0.0)


def test_full_like_keeps_a_weak_type_as_jax():
    import jax

    for make in (lambda: 1.0, lambda: np.float32(1.0), lambda: np.ones(2, np.int32)):
        for shape in (None, (3,)):
            got = lax.full_like(make(), 3, shape=shape)
            want = jax.lax.full_like(make(), 3, shape=shape)
            assert got.weak_type == want.weak_type and got.shape == want.shape
            assert np.dtype(got.dtype).kind == np.dtype(want.dtype).kind
    assert jit(lambda a: lax.full_like(a, 3))(1.0).weak_type
    assert not lax.full_like(1.0, 3, dtype=np.float32).weak_type


def test_slicing_and_indexing():
    x = np.arange(24.0).reshape(4, 6)
    np.testing.assert_array_equal(np.asarray(lax.slice(x, (1, 0), (4, 6), (2, 3))), x[1:4:2, 0:6:3])
    np.testing.assert_array_equal(np.asarray(lax.slice_in_dim(x, 1, 3, axis=1)), x[:, 1:3])
    np.testing.assert_array_equal(np.asarray(lax.index_in_dim(x, -1, keepdims=False)), x[-1])
    np.testing.assert_array_equal(np.asarray(lax.dynamic_slice(x, (3, 5), (2, 2))), x[2:4, 4:6])  # clamped
    np.testing.assert_array_equal(np.asarray(lax.dynamic_slice(x, (-1, 0), (1, 2))), x[3:4, 0:2])
    np.testing.assert_array_equal(np.asarray(lax.dynamic_slice_in_dim(x, 1, 2, axis=1)), x[:, 1:3])
    np.testing.assert_array_equal(np.asarray(lax.dynamic_index_in_dim(x, 2, keepdims=False)), x[2])
    upd = lax.dynamic_update_slice(x, np.zeros((2, 2)), (1, 1))
    ref = x.copy()
    ref[1:3, 1:3] = 0
    np.testing.assert_array_equal(np.asarray(upd), ref)
    upd = lax.dynamic_update_index_in_dim(x, np.zeros(6), 0, axis=0)
    np.testing.assert_array_equal(np.asarray(upd)[0], 0.0)
    out = jit(lambda v, i: lax.dynamic_slice(v, (i, 0), (2, 6)))(x, 1)
    np.testing.assert_array_equal(np.asarray(out), x[1:3])
    out = funcgrad.vmap(lambda i: lax.dynamic_slice_in_dim(x, i, 2, axis=1))(np.array([0, 4]))
    np.testing.assert_array_equal(np.asarray(out[1]), x[:, 4:6])
    check_grads(lambda v: lax.dynamic_slice(v, (1, 2), (2, 3)), [x], order=2)
    check_grads(lambda v, u: lax.dynamic_update_slice(v, u, (1, 2)), [x, np.ones((2, 3))], order=1)
    np.testing.assert_array_equal(
        np.asarray(lax.pad(np.array([1.0, 2.0]), 0.0, [(1, 2, 1)])), [0, 1, 0, 2, 0, 0]
    )
    np.testing.assert_array_equal(np.asarray(lax.concatenate([x, x], 1)), np.concatenate([x, x], 1))
    check_grads(lambda v: lax.pad(v, 0.0, [(1, -1, 1), (0, 2, 0)]), [x], order=1)


def test_gather_and_scatter():
    x = np.arange(12.0).reshape(4, 3)
    dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    idx = np.array([[3], [0], [3]])
    np.testing.assert_array_equal(np.asarray(lax.gather(x, idx, dn, (1, 3))), x[[3, 0, 3]])
    out = lax.gather(x, np.array([[7]]), dn, (1, 3), mode="fill")
    assert np.all(np.isnan(np.asarray(out)))
    check_grads(lambda v: lax.gather(v, idx, dn, (1, 3)), [x], order=1)
    sdn = lax.ScatterDimensionNumbers(
        update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
    )
    upd = np.ones((3, 3))
    ref = x.copy()
    np.add.at(ref, [3, 0, 3], upd)
    np.testing.assert_array_equal(np.asarray(lax.scatter_add(x, idx, upd, sdn)), ref)
    np.testing.assert_array_equal(np.asarray(lax.scatter(x, np.array([[1]]), np.zeros((1, 3)), sdn))[1], 0.0)
    np.testing.assert_array_equal(
        np.asarray(lax.scatter_mul(x, np.array([[1]]), 2 * np.ones((1, 3)), sdn))[1], 2 * x[1]
    )
    np.testing.assert_array_equal(
        np.asarray(lax.scatter_min(x, np.array([[2]]), np.zeros((1, 3)), sdn))[2], 0.0
    )
    np.testing.assert_array_equal(
        np.asarray(lax.scatter_max(x, np.array([[2]]), np.zeros((1, 3)), sdn))[2], x[2]
    )
    check_grads(lambda v, u: lax.scatter_add(v, idx, u, sdn), [x, upd], order=1)


def test_sorting_and_scans():
    x = RNG.normal(size=(3, 5))
    np.testing.assert_array_equal(np.asarray(lax.sort(x)), np.sort(x))
    np.testing.assert_array_equal(np.asarray(lax.sort(x, dimension=0)), np.sort(x, 0))
    keys, vals = lax.sort_key_val(np.array([3, 1, 2]), np.array([30.0, 10.0, 20.0]))
    np.testing.assert_array_equal(np.asarray(vals), [10.0, 20.0, 30.0])
    k1, k2, v = lax.sort((np.array([1, 0, 1]), np.array([2, 5, 1]), np.array([0.0, 1.0, 2.0])), num_keys=2)
    np.testing.assert_array_equal(np.asarray(v), [1.0, 2.0, 0.0])
    vals, idx = lax.top_k(x, 2)
    np.testing.assert_array_equal(np.asarray(vals), -np.sort(-x)[:, :2])
    np.testing.assert_array_equal(np.asarray(idx), np.argsort(-x, kind="stable")[:, :2])
    np.testing.assert_allclose(np.asarray(lax.cumsum(x, axis=1)), np.cumsum(x, 1))
    np.testing.assert_allclose(
        np.asarray(lax.cumsum(x, axis=1, reverse=True)), np.cumsum(x[:, ::-1], 1)[:, ::-1]
    )
    np.testing.assert_allclose(np.asarray(lax.cumprod(x, axis=0)), np.cumprod(x, 0))
    np.testing.assert_allclose(np.asarray(lax.cummax(x, axis=1)), np.maximum.accumulate(x, 1))
    np.testing.assert_allclose(np.asarray(lax.cummin(x, axis=1)), np.minimum.accumulate(x, 1))
    np.testing.assert_allclose(np.asarray(lax.cumlogsumexp(x, axis=1)), np.logaddexp.accumulate(x, 1))
    np.testing.assert_allclose(np.asarray(lax.associative_scan(lax.add, x, axis=1)), np.cumsum(x, 1))
    check_grads(lambda v: lax.sort(v), [x], order=1)
    check_grads(lambda v: lax.cumlogsumexp(v, axis=1), [x], order=1)
    check_grads(lambda v: lax.top_k(v, 2)[0], [x], order=1)


def test_more_wrappers():
    x = np.array([0.5, 1.0, 2.5])
    np.testing.assert_allclose(np.asarray(lax.polygamma(1.0, x)), sp.polygamma(1, x))
    check_grads(lambda v: lax.polygamma(2.0, v), [x], order=1)
    a, b = RNG.normal(size=(4, 2, 3)), RNG.normal(size=(4, 3, 5))
    np.testing.assert_allclose(np.asarray(lax.batch_matmul(a, b)), a @ b)
    assert lax.broadcast_shapes((2, 1), (3,)) == (2, 3)
    # JAX's TypeErrors for what is not a shape (lax_vmap_test through funcgrad.as_jax; -1 passed)
    with pytest.raises(TypeError, match="Only non-negative indices are allowed"):
        lax.broadcast_shapes((-1,))
    with pytest.raises(TypeError, match="Shapes must be 1D sequences"):
        lax.broadcast_shapes("hello")
    assert lax.broadcast_to_rank(np.ones(3), 2).shape == (1, 3)
    assert [p.shape for p in lax.split(np.ones((2, 5)), (1, 4), axis=1)] == [(2, 1), (2, 4)]
    z = x + 2j * x  # lax.real/imag take complex operands only, as jax.lax's do
    np.testing.assert_array_equal(np.asarray(lax.real(z)), x)
    np.testing.assert_array_equal(np.asarray(lax.imag(z)), 2 * x)
    with pytest.raises(TypeError, match="complex"):
        lax.real(x)
    np.testing.assert_array_equal(np.asarray(lax.conj(x)), x)  # complex128, as jax.lax.conj gives
    dn = lax.ScatterDimensionNumbers((), (0,), (0,))
    out = lax.scatter_apply(x, np.array([[2]]), lambda v: -v, dn)
    np.testing.assert_array_equal(np.asarray(out), [0.5, 1.0, -2.5])


def test_broadcast_in_dim_with_result_dimensions_out_of_order():
    # jax.lax.broadcast_in_dim's docstring: broadcast_dimensions=(1, 0) maps operand dim 0 to
    # result dim 1 and operand dim 1 to result dim 0 (a transpose, then the broadcast)
    arr = np.arange(3).reshape(3, 1)
    want = np.broadcast_to(np.expand_dims(arr, 0).transpose(), (2, 3, 4))
    for f in (lax.broadcast_in_dim, jit(lax.broadcast_in_dim, static_argnums=(1, 2))):
        np.testing.assert_array_equal(np.asarray(f(arr, (2, 3, 4), (1, 0))), want)
    x = np.arange(6.0).reshape(3, 2)
    g = funcgrad.grad(
        lambda a: (lax.broadcast_in_dim(a, (4, 2, 3), (2, 1)) * np.arange(24.0).reshape(4, 2, 3)).sum()
    )
    np.testing.assert_allclose(np.asarray(g(x)), np.arange(24.0).reshape(4, 2, 3).sum(0).T)


@pytest.mark.parametrize(
    "x",
    [
        np.array([-0.0, np.nan, 0.0]),
        np.array([-0.0, 0.0, -0.0]),
        np.array([1.0, np.nan, -np.nan, np.inf, -np.inf]),
        np.array([[3, 1, 3, 2.5]], np.float16),
    ],
)
def test_top_k_ranks_floats_in_their_total_order_as_jax(x):
    # XLA's TopK (jax): -0.0 < 0.0 and -NaN below everything; funcgrad's sort-based top_k took the
    # zeros as equal and every NaN as largest (the differential fuzzer: top_k of [-0.0, nan, 0.0]).
    import jax

    want = jax.lax.top_k(x, 2)
    for fn in (funcgrad.lax.top_k, funcgrad.jit(funcgrad.lax.top_k, static_argnums=1)):
        values, idx = fn(x, 2)
        np.testing.assert_array_equal(np.asarray(idx), np.asarray(want[1]))
        np.testing.assert_array_equal(np.signbit(np.asarray(values)), np.signbit(np.asarray(want[0])))


# lax.DotAlgorithm / DotAlgorithmPreset as precision= (JAX's lax_test.py uses them at module level:
# without them the file did not load through funcgrad.as_jax).
@pytest.mark.parametrize(
    "algorithm, dtype",
    [
        ("F16_F16_F32", np.float16),
        ("F32_F32_F32", np.float16),  # operands converted to float32, the result back to float16
        ("BF16_BF16_F32", np.float32),  # float32 operands kept (a supported input type)
        ("F64_F64_F64", np.float32),
        ("DEFAULT", np.float32),
        ("explicit", np.float16),
    ],
)
def test_dot_algorithm_values_and_dtype_as_jax(algorithm, dtype):
    import jax

    def named(lax_mod):
        if algorithm == "explicit":
            return lax_mod.DotAlgorithm(np.float16, np.float16, np.float32)
        return lax_mod.DotAlgorithmPreset[algorithm]

    rng = np.random.RandomState(0)
    a, b = rng.randn(3, 5).astype(dtype), rng.randn(5, 2).astype(dtype)
    if algorithm in ("F16_F16_F32", "explicit"):
        # JAX's CPU refuses these (XLA's CPU ignores algorithms); funcgrad computes them by their
        # types on every platform: float16 operands summed in float32, rounded once to float16.
        want = (a.astype(np.float32) @ b.astype(np.float32)).astype(dtype)
    else:
        want = jax.lax.dot(a, b, precision=named(jax.lax))
    got = lax.dot(a, b, precision=named(lax))
    jitted = jit(lambda a, b: lax.dot(a, b, precision=named(lax)))(a, b)
    assert got.dtype == jitted.dtype == want.dtype == np.dtype(dtype)
    np.testing.assert_allclose(np.float64(got), np.float64(want), rtol=1e-3)
    # Eager runs NumPy's BLAS and jit XLA's: float32 sums may differ in the last place.
    np.testing.assert_allclose(np.asarray(got), np.asarray(jitted), rtol=1e-5, atol=1e-6)
    assert str(named(lax)) == str(named(jax.lax))


def test_dot_algorithm_refusals():
    f8 = np.ones((2, 2), np.float32)
    with pytest.raises(ValueError, match="requires both inputs to have float8"):
        lax.dot(f8, f8, precision="ANY_F8_ANY_F8_F32")
    with pytest.raises(ValueError, match="not a dot algorithm"):
        lax.conv(np.ones((1, 1, 3)), np.ones((1, 1, 2)), (1,), "VALID", precision="F32_F32_F32")


def test_special_functions_broadcast_size_one_dimensions_as_jax():
    # JAX's lax_test testOpAgainstNumpy (betainc, igamma) through funcgrad.as_jax: jax 0.10's n-ary
    # lax operations broadcast size-1 dimensions of equal-rank operands (these raised TypeError).
    import jax

    a, x = np.full((3, 1), 1.5, np.float32), np.linspace(0.1, 2.0, 4, dtype=np.float32)[None]
    np.testing.assert_allclose(lax.igamma(a, x), jax.lax.igamma(a, x), rtol=1e-5)
    b = np.full((1, 4), 0.3, np.float32)
    np.testing.assert_allclose(lax.betainc(a, b, b), jax.lax.betainc(a, b, b), rtol=1e-5)


def test_incomplete_gamma_second_derivative_in_x_with_a_constant_as_jax():
    # The fuzzer's scipy.stats ops: grad(jvp(gamma.logcdf(x, 0.5))) raised ReverseModeWhileLoopError
    # (a's zero tangent ran igamma_grad_a's while loop); JAX's rule skips a zero tangent's term.
    import jax

    for fg, jx in [(lax.igamma, jax.lax.igamma), (lax.igammac, jax.lax.igammac)]:
        for lib, f in [(funcgrad, fg), (jax, jx)]:
            second = lib.grad(lambda x, f=f, lib=lib: lib.jvp(lambda x: f(0.5, x), (x,), (1.0,))[1])
            if lib is funcgrad:
                got = second(1.5)
            else:
                want = second(1.5)
        np.testing.assert_allclose(got, want, rtol=1e-5)  # (jax in its 32-bit mode here)


def test_incomplete_gamma_and_beta_of_weak_operands_are_weak_as_jax():
    # The fuzzer (x32): scipy.special.gammaincc(3.0, int32 array) was strong (jax: weak float32);
    # JAX's n-ary rule: weak where every operand is.
    import jax

    weak = funcgrad.numpy.asarray(3.0), funcgrad.numpy.asarray(0.5)
    jweak = jax.numpy.asarray(3.0), jax.numpy.asarray(0.5)
    for name, args in [
        ("igamma", 2),
        ("igammac", 2),
        ("igamma_grad_a", 2),
        ("random_gamma_grad", 2),
        ("betainc", 3),
    ]:
        got = getattr(lax, name)(*(weak * 2)[:args])
        want = getattr(jax.lax, name)(*(jweak * 2)[:args])
        assert got.weak_type == want.weak_type, name
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_bitcast_of_a_0d_array_keeps_its_shape_as_jax():
    # The fuzzer (64-bit long run): remainder(np.array(1.5), np.array(2.0)) had shape (1,) -- its
    # sign test bitcasts the divisor -- after the eager bitcast viewed a 0-d array as one element.
    import jax

    for x, dtype in [
        (np.float32(1.5), np.int32),
        (np.array(2.0, np.float32), np.uint32),
        (np.float16(1.0), np.int8),
    ]:
        got, want = lax.bitcast_convert_type(x, dtype), jax.lax.bitcast_convert_type(x, dtype)
        assert got.shape == want.shape and np.array_equal(got, want)
    assert funcgrad.numpy.remainder(np.array(1.5), np.array(2.0)).shape == ()


def test_multiple_result_functions_return_lists_as_jax():
    # JAX's bind of a multiple-result primitive gives a list: top_k, lu, schur, hessenberg and
    # tridiagonal return lists (funcgrad gave tuples: another pytree structure in jit/vmap outputs
    # and tree_map; the lax-parameter fuzzer's probe)
    jax = pytest.importorskip("jax")
    m = np.eye(3) + 0.1
    calls = [
        lambda L: L.top_k(np.arange(6.0).reshape(2, 3), 2),
        lambda L: L.top_k(np.arange(6.0).reshape(2, 3), 1, axis=0),
        lambda L: L.linalg.lu(m),
        lambda L: L.linalg.schur(m),
        lambda L: L.linalg.schur(m, compute_schur_vectors=False),
        lambda L: L.linalg.hessenberg(m),
        lambda L: L.linalg.tridiagonal(m),
    ]
    for call in calls:
        want = jax.tree_util.tree_structure(call(jax.lax))
        assert str(funcgrad.tree_util.tree_structure(call(lax))) == str(want)
    got = funcgrad.vmap(lambda v: lax.top_k(v, 1))(np.ones((2, 3)))
    assert isinstance(got, list)


def test_betainc_derivative_in_a_and_b_is_refused_in_jax_words():
    # (the lax-parameter fuzzer, seeds 18016/18017) JAX's ValueError and message
    jax = pytest.importorskip("jax")
    x = np.array([0.3, 0.6], np.float32)
    for T in (funcgrad, jax):
        with pytest.raises(ValueError, match="Betainc gradient with respect to a and b not supported"):
            T.grad(lambda a, T=T: T.lax.betainc(a + 1.5, a * 0 + 2, 0.5 * x).sum())(x)
