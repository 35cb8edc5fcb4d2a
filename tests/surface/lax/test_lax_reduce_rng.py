"""funcgrad.lax.reduce (monoids to the dedicated reductions, any other computation to the generic
``reduce`` primitive) and XLA's generators ``rng_bit_generator`` / ``rng_uniform``, against NumPy
and jax.lax (the oracle): values, JVP and VJP (finite differences in float64, and jax's), jit
against eager, vmap against a loop, and errors.

(The generic ``reduce`` carries a jaxpr, so it is tested here; the rng primitives also have op_db
entries in tests/primitives/op_db/rng.py.)
"""

from __future__ import annotations

import numpy as np
import pytest
from funcgrad.primitives import reductions as red

import funcgrad
from funcgrad import lax
from funcgrad.testing import check_grads

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)
jlax = jax.lax

RNG = np.random.default_rng(0)
X = RNG.uniform(0.2, 1.2, (3, 5, 4))


def _prims(f, *args):
    return {e.primitive for e in funcgrad.make_jaxpr(f)(*args).jaxpr.eqns}


def _soft(a, b):  # associative and commutative, identity 0 -- not a primitive JAX recognises
    return a + b + a * b


# ----------------------------------------------------------------------------------------------
# lax.reduce: monoids


@pytest.mark.parametrize(
    "op, init, ref, prim",
    [
        (lax.add, 0.0, np.sum, red.reduce_sum_p),
        (lax.mul, 1.0, np.prod, red.reduce_prod_p),
        (lax.max, -np.inf, np.max, red.reduce_max_p),
        (lax.min, np.inf, np.min, red.reduce_min_p),
    ],
)
@pytest.mark.parametrize("dims", [(0,), (1, 2), (0, 1, 2)])
def test_monoid_binds_the_dedicated_reduction(op, init, ref, prim, dims):
    f = lambda x: lax.reduce(x, init, op, dims)  # noqa: E731
    np.testing.assert_allclose(f(X), ref(X, axis=dims), rtol=1e-13)
    assert _prims(f, X) == {prim}
    check_grads(f, (X,), order=2)


def test_bitwise_monoids_on_integers_and_booleans():
    ints = RNG.integers(0, 64, (4, 6)).astype(np.int32)
    bools = ints % 3 == 0
    for op, init, ref in [
        (lax.bitwise_or, 0, np.bitwise_or.reduce),
        (lax.bitwise_and, -1, np.bitwise_and.reduce),
        (lax.bitwise_xor, 0, np.bitwise_xor.reduce),
    ]:
        np.testing.assert_array_equal(lax.reduce(ints, np.int32(init), op, (1,)), ref(ints, axis=1))
        np.testing.assert_array_equal(
            lax.reduce(ints, np.int32(init), op, (0,)),
            jlax.reduce(ints, np.int32(init), getattr(jlax, op.__name__), (0,)),
        )
    np.testing.assert_array_equal(lax.reduce(bools, False, lax.bitwise_or, (0,)), bools.any(0))
    np.testing.assert_array_equal(lax.reduce(bools, True, lax.bitwise_and, (1,)), bools.all(1))
    assert _prims(lambda b: lax.reduce(b, False, lax.bitwise_or, (0,)), bools) == {red.reduce_or_p}


def test_monoid_op_with_another_init_is_generic():
    # lax.add from 1.0 is not the sum: one extra 1 per reduction, computed by the generic primitive.
    f = lambda x: lax.reduce(x, 1.0, lax.add, (1,))  # noqa: E731
    assert red.reduce_p in _prims(f, X)
    np.testing.assert_allclose(f(X), jlax.reduce(X, 1.0, jlax.add, (1,)), rtol=1e-13)


# ----------------------------------------------------------------------------------------------
# lax.reduce: the generic primitive


@pytest.mark.parametrize("dims", [(1,), (0, 2), (2, 0, 1), ()])
def test_generic_matches_jax_eager_and_jit(dims):
    f = lambda x: lax.reduce(x, 0.0, _soft, dims)  # noqa: E731
    expected = jlax.reduce(X, 0.0, _soft, dims)
    assert red.reduce_p in _prims(f, X)
    np.testing.assert_allclose(f(X), expected, rtol=1e-12)
    np.testing.assert_allclose(funcgrad.jit(f)(X), expected, rtol=1e-12)


def test_generic_odd_lengths_and_empty_reductions():
    for n in (1, 2, 3, 5, 7, 8):
        x = RNG.uniform(0.1, 0.5, (2, n))
        np.testing.assert_allclose(
            lax.reduce(x, 0.0, _soft, (1,)), jlax.reduce(x, 0.0, _soft, (1,)), rtol=1e-12
        )
    empty = np.zeros((3, 0))
    for f in (
        lambda x: lax.reduce(x, 0.0, _soft, (1,)),
        funcgrad.jit(lambda x: lax.reduce(x, 0.0, _soft, (1,))),
    ):
        np.testing.assert_array_equal(f(empty), np.zeros(3))


@pytest.mark.parametrize(
    "shape, dims", [((5,), (0,)), ((2, 3), (0, 1)), ((2, 3), (1,)), ((1, 2), (0,)), ((2,), ())]
)
def test_generic_order_and_init_as_jax(shape, dims):
    # A reducer neither associative nor started from its identity shows the order: eagerly and under
    # jit XLA folds the elements into the init in order (none for one element per output: the
    # operand itself), and under a derivative JAX's value is its JVP tree's (found by the fuzzer:
    # funcgrad's eager tree combined the init once at the end, and with one element too).
    x = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    soft = lambda a, b: a * 0.5 + b  # noqa: E731
    f = lambda x: lax.reduce(x, 0.25, soft, dims)  # noqa: E731
    g = lambda x: jlax.reduce(x, 0.25, soft, dims)  # noqa: E731
    np.testing.assert_allclose(f(x), g(x), rtol=1e-14)
    np.testing.assert_allclose(funcgrad.jit(f)(x), g(x), rtol=1e-14)
    ours = funcgrad.value_and_grad(lambda x: f(x).sum())(x)
    theirs = jax.value_and_grad(lambda x: g(x).sum())(x)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-14)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-14)


def test_generic_derivatives_match_jax_and_finite_differences():
    f = lambda x: lax.reduce(x, 0.0, _soft, (1,))  # noqa: E731
    g = lambda x: jlax.reduce(x, 0.0, _soft, (1,))  # noqa: E731
    t = RNG.normal(size=X.shape)
    _, ours = funcgrad.jvp(f, (X,), (t,))
    _, theirs = jax.jvp(g, (X,), (t,))
    np.testing.assert_allclose(ours, theirs, rtol=1e-11)
    ct = RNG.normal(size=(3, 4))
    np.testing.assert_allclose(funcgrad.vjp(f, X)[1](ct)[0], jax.vjp(g, X)[1](ct)[0], rtol=1e-11)
    np.testing.assert_allclose(
        funcgrad.jit(funcgrad.grad(lambda x: f(x).sum()))(X), jax.grad(lambda x: g(x).sum())(X), rtol=1e-11
    )
    check_grads(f, (X[:, :3],), order=2)


def test_variadic_reduce_is_an_argmax():
    # (value, index) pairs: keep the larger value, the smaller index on ties.
    def pick(a, b, select=lax.select):
        take_a = (a[0] > b[0]) | ((a[0] == b[0]) & (a[1] < b[1]))
        return select(take_a, a[0], b[0]), select(take_a, a[1], b[1])

    x = np.round(RNG.uniform(0, 3, (4, 9)))
    idx = np.broadcast_to(np.arange(9), x.shape).astype(np.int64)
    f = lambda x, i: lax.reduce((x, i), (-np.inf, np.int64(9)), pick, (1,))  # noqa: E731
    for g in (f, funcgrad.jit(f)):
        v, i = g(x, idx)
        np.testing.assert_array_equal(v, x.max(1))
        np.testing.assert_array_equal(i, x.argmax(1))
    jv, ji = jlax.reduce((x, idx), (-np.inf, np.int64(9)), lambda a, b: pick(a, b, jlax.select), (1,))
    np.testing.assert_array_equal(i, ji)
    # Dict pytrees keep their structure.
    out = lax.reduce(
        {"a": x, "b": x},
        {"a": 0.0, "b": 1.0},
        lambda p, q: {"a": p["a"] + q["a"], "b": p["b"] * q["b"]},
        (0,),
    )
    np.testing.assert_allclose(out["a"], x.sum(0))
    np.testing.assert_allclose(out["b"], x.prod(0))


@pytest.mark.parametrize("in_axis", [0, 1, 2])
def test_generic_vmap_matches_loop(in_axis):
    f = lambda x: lax.reduce(x, 0.0, _soft, (1,))  # noqa: E731
    batched = funcgrad.vmap(f, in_axes=in_axis)(X)
    loop = np.stack([f(np.take(X, k, axis=in_axis)) for k in range(X.shape[in_axis])])
    np.testing.assert_allclose(batched, loop, rtol=1e-12)
    # vmap of the gradient, compiled
    h = funcgrad.jit(funcgrad.vmap(funcgrad.grad(lambda x: f(x).sum()), in_axes=in_axis))
    loop = np.stack(
        [funcgrad.grad(lambda x: f(x).sum())(np.take(X, k, axis=in_axis)) for k in range(X.shape[in_axis])]
    )
    np.testing.assert_allclose(np.moveaxis(h(X), 0, 0), loop, rtol=1e-12)


def test_reduce_errors():
    with pytest.raises(ValueError, match="same tree structure"):
        lax.reduce((X, X), 0.0, lax.add, (0,))
    with pytest.raises(IndexError, match="out of bounds"):  # (JAX's type for a generic computation)
        lax.reduce(X, 0.0, _soft, (3,))
    with pytest.raises(ValueError, match="dimensions"):
        lax.reduce(X, 0.0, _soft, (-1,))
    with pytest.raises(ValueError, match="duplicate value in 'axes'"):  # (JAX's words)
        lax.reduce(X, 0.0, _soft, (1, 1))
    with pytest.raises(TypeError, match="init value dtype"):
        lax.reduce(X, np.float32(0), _soft, (0,))
    with pytest.raises(TypeError, match="one shape"):
        lax.reduce((X, X[0]), (0.0, 0.0), lambda a, b: (a[0] + b[0], a[1] + b[1]), (0,))
    with pytest.raises(TypeError, match="scalars"):
        lax.reduce(X, 0.0, lambda a, b: np.ones(2) * (a + b), (0,))
    with pytest.raises(ValueError, match="init_values must not be batched"):
        funcgrad.vmap(lambda i: lax.reduce(X, i, _soft, (0,)))(np.zeros(2))
    with pytest.raises(TypeError, match="init_values"):
        funcgrad.grad(lambda i: lax.reduce(X, i, _soft, (0, 1, 2)))(0.0)


# ----------------------------------------------------------------------------------------------
# rng_bit_generator / rng_uniform


@pytest.mark.parametrize("algorithm", list(lax.RandomAlgorithm))
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_rng_bit_generator_gives_jax_bits(algorithm, dtype):
    key = np.array([3, 1, 4, 159], np.uint32)
    new, bits = lax.rng_bit_generator(key, (5, 3), dtype, algorithm)
    jnew, jbits = jlax.rng_bit_generator(key, (5, 3), dtype, jlax.RandomAlgorithm(int(algorithm)))
    assert bits.dtype == np.dtype(dtype) and bits.shape == (5, 3) and new.dtype == np.uint32
    np.testing.assert_array_equal(bits, jbits)
    np.testing.assert_array_equal(new, jnew)
    cnew, cbits = funcgrad.jit(lambda k: lax.rng_bit_generator(k, (5, 3), dtype, algorithm))(key)
    np.testing.assert_array_equal(cbits, bits)
    np.testing.assert_array_equal(cnew, new)


def test_rng_bit_generator_u64_key_chaining_and_vmap():
    key = np.array([7, 11], np.uint64)
    k1, b1 = lax.rng_bit_generator(key, (4,), np.uint64)
    jk1, jb1 = jlax.rng_bit_generator(key, (4,), np.uint64)
    np.testing.assert_array_equal(b1, jb1)
    _, b2 = lax.rng_bit_generator(k1, (4,), np.uint64)
    _, jb2 = jlax.rng_bit_generator(jk1, (4,), np.uint64)
    np.testing.assert_array_equal(b2, jb2)
    assert not np.array_equal(b1, b2)
    # vmap over keys is JAX's rule, bit for bit: the first key draws the whole batch and alone is
    # advanced (funcgrad ran one generator per key; JAX's random_lax_test RBG
    # test_vmap_random_bits_value / unsafe_rbg test_vmap_split_mapped_key_values), any in_axes
    keys = RNG.integers(0, 2**32, (3, 4), dtype=np.uint64).astype(np.uint32)
    import jax

    for axis in (0, 1):
        batched = keys if axis == 0 else keys.T
        got = funcgrad.vmap(lambda k: lax.rng_bit_generator(k, (2, 2)), in_axes=axis)(batched)
        want = jax.vmap(lambda k: jlax.rng_bit_generator(k, (2, 2)), in_axes=axis)(batched)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    lk, lb = lax.rng_bit_generator(keys[0], (3, 2, 2))
    np.testing.assert_array_equal(got[1], lb)
    np.testing.assert_array_equal(got[0][0], lk)


def test_rng_bit_generator_errors():
    with pytest.raises(TypeError, match="uint32\\[4\\]"):
        lax.rng_bit_generator(np.zeros(4, np.int32), (2,))
    with pytest.raises(TypeError, match="unsupported dtype float32"):
        lax.rng_bit_generator(np.zeros(4, np.uint32), (2,), np.float32)
    with pytest.raises(ValueError, match="RandomAlgorithm"):
        lax.rng_bit_generator(np.zeros(4, np.uint32), (2,), np.uint32, 7)
    assert [a.name for a in lax.RandomAlgorithm] == [a.name for a in jlax.RandomAlgorithm]
    assert [int(a) for a in lax.RandomAlgorithm] == [int(a) for a in jlax.RandomAlgorithm]


@pytest.mark.parametrize("lo, hi", [(np.float32(-2), np.float32(5)), (2.0, 2.5), (np.int32(-3), np.int32(4))])
def test_rng_uniform_range_and_spread(lo, hi):
    for f in (
        lambda: lax.rng_uniform(lo, hi, (4000,)),
        funcgrad.jit(lambda: lax.rng_uniform(lo, hi, (4000,))),
    ):
        x = np.asarray(f())
        assert x.shape == (4000,) and x.dtype == np.asarray(lo).dtype
        assert (x >= lo).all() and (x < hi).all()
        # uniform: the mean is the midpoint (for integers, of lo..hi-1), to a few standard errors
        mid = (lo + hi) / 2 if x.dtype.kind == "f" else (lo + hi - 1) / 2
        assert abs(x.mean() - mid) < 5 * (hi - lo) / np.sqrt(12 * 4000)
    x = funcgrad.vmap(lambda a: lax.rng_uniform(a, a + 1.0, (50,)))(np.array([0.0, 10.0, 20.0]))
    assert ((x >= np.array([[0.0], [10.0], [20.0]])) & (x < np.array([[1.0], [11.0], [21.0]]))).all()


def test_rng_uniform_errors():
    with pytest.raises(ValueError, match="one dtype"):
        lax.rng_uniform(np.float32(0), np.float64(1), (2,))
    with pytest.raises(ValueError, match="scalars"):
        lax.rng_uniform(np.zeros(2), np.ones(2), (2,))


def test_logical_reductions_of_integers_are_bitwise_as_jax():
    # (JAX's lax_test testNamedReduceOperators: reduce_and of uint32) reduce_and/reduce_or take
    # integers, bitwise, eagerly and under jit, empty axes giving every bit set / none; floats are
    # JAX's TypeError
    cases = [
        (np.array([[3, 5], [7, 6]], np.uint32), (0, 1)),
        (np.array([[3, 5], [8, 6]], np.int8), (1,)),
        (np.zeros((0, 2), np.int32), (0,)),
        (np.zeros((0, 2), np.uint8), (0,)),
    ]
    for name in ("reduce_and", "reduce_or"):
        ours, theirs = getattr(lax, name), getattr(jax.lax, name)
        for a, axes in cases:
            want = np.asarray(theirs(a, axes))
            for got in (ours(a, axes), funcgrad.jit(ours, static_argnums=1)(a, axes)):
                assert got.dtype == want.dtype and np.asarray(got).tolist() == want.tolist(), (name, a.dtype)
    with pytest.raises(TypeError, match="logical reduction requires operand dtype bool or int, got float32"):
        lax.reduce_and(np.ones(3, np.float32), (0,))


def test_reduce_result_is_weak_when_operand_and_init_are_as_jax():
    # (JAX's lax_test testReduceWeakType) the monoid reducers (an identity init) and the generic
    # reduction alike, eagerly and under jit (funcgrad kept the operand's weak type, or none)
    from funcgrad.primitives.elementwise import convert_element_type as ours_weak
    from jax._src.lax.lax import _convert_element_type as jax_weak

    for op in ("add", "mul"):
        for aw in (False, True):
            for iw in (False, True):
                arr, init, i32 = np.arange(10, dtype=np.int32), np.int32(1), np.dtype(np.int32)
                jargs = (jax_weak(arr, i32, weak_type=aw), jax_weak(init, i32, weak_type=iw))
                want = jax.lax.reduce(*jargs, getattr(jax.lax, op), (0,))
                args = (ours_weak(arr, np.int32, weak_type=aw), ours_weak(init, np.int32, weak_type=iw))
                f = lambda a, i, op=op: lax.reduce(a, i, getattr(lax, op), (0,))  # noqa: E731
                for got in (f(*args), funcgrad.jit(f)(*args)):
                    assert got.weak_type == want.weak_type == (aw and iw), (op, aw, iw)
