"""Typed PRNG keys (``random.key(0)``: shape ``()``, dtype ``key<fry>``) against jax 0.10.2: the
key functions, indexing and funcgrad.numpy's structural functions, the transformations, and the
errors where JAX refuses (NOTE: [PRNG implementations])."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
import funcgrad.random as fr
from funcgrad import dtypes as fdt

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)
jr, jnp = jax.random, jax.numpy


def same_keys(ours, theirs):
    assert ours.shape == theirs.shape and str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_array_equal(fr.key_data(ours), jr.key_data(theirs))


@pytest.mark.slow  # jax, the oracle, compiles each case beside funcgrad (10-15 s)
def test_key_is_typed_as_jax():
    k, jk = fr.key(0), jr.key(0)
    same_keys(k, jk)
    assert k.ndim == 0 and k.size == 1 and k.itemsize == jk.itemsize == 8
    assert isinstance(k, funcgrad.Array) and not isinstance(fr.PRNGKey(0).dtype, type(k.dtype))
    assert k.dtype != np.uint32 and k.dtype == fr.key(1).dtype != fr.key(0, impl="rbg").dtype
    assert fdt.issubdtype(k.dtype, fdt.prng_key) and fnp.issubdtype(k.dtype, fdt.extended)
    assert not fnp.issubdtype(k.dtype, np.integer) and not fnp.issubdtype(np.uint32, fdt.prng_key)
    assert fnp.issubdtype(k.dtype, k.dtype)
    assert repr(k) == str(k) == repr(jk) == "Array((), dtype=key<fry>) overlaying:\n[0 0]"
    assert repr(fr.split(k, 2)) == repr(jr.split(jk, 2))
    # raw data and typed keys: the same bits, the same draws; typed in, typed out
    np.testing.assert_array_equal(fr.key_data(k), fr.PRNGKey(0))
    same_keys(fr.wrap_key_data(fr.PRNGKey(3)), jr.wrap_key_data(jr.PRNGKey(3)))
    same_keys(fr.wrap_key_data(np.zeros((3, 2), np.uint32)), jr.wrap_key_data(jnp.zeros((3, 2), jnp.uint32)))
    same_keys(fr.clone(k), jr.clone(jk))
    assert fr.key_impl(k) == jr.key_impl(jk) == "threefry2x32"
    for ours, theirs in [(fr.split(k), jr.split(jk)), (fr.split(k, (2, 3)), jr.split(jk, (2, 3)))]:
        same_keys(ours, theirs)
    same_keys(fr.fold_in(k, 3), jr.fold_in(jk, 3))
    np.testing.assert_array_equal(fr.split(fr.PRNGKey(0)), fr.key_data(fr.split(k)))
    np.testing.assert_array_equal(fr.normal(k, (3,)), fr.normal(fr.PRNGKey(0), (3,)))
    np.testing.assert_array_equal(fr.normal(k, (3,)), jr.normal(jk, (3,)))
    np.testing.assert_array_equal(fr.randint(k, (4,), 0, 9), jr.randint(jk, (4,), 0, 9))
    np.testing.assert_array_equal(fr.permutation(k, 5), jr.permutation(jk, 5))
    np.testing.assert_allclose(fr.gamma(k, 2.0, (2,)), jr.gamma(jk, 2.0, (2,)), rtol=1e-12)


@pytest.mark.slow  # jax, the oracle, compiles each case beside funcgrad (10-15 s)
def test_key_arrays_index_and_reshape_as_jax():
    ks, jks = fr.split(fr.key(1), 4), jr.split(jr.key(1), 4)
    for idx in (1, -1, slice(1, 3), np.array([3, 0]), (None,), Ellipsis, (Ellipsis, None)):
        same_keys(ks[idx], jks[idx])
    same_keys(fr.key(0)[None], jr.key(0)[None])
    same_keys(fr.key(0)[...], jr.key(0)[...])
    assert [k.shape for k in ks] == [()] * 4 and len(ks) == 4
    same_keys(list(ks)[2], jks[2])
    same_keys(ks.reshape(2, 2), jks.reshape(2, 2))
    same_keys(ks.reshape((2, -1)).T, jks.reshape((2, -1)).T)
    same_keys(ks.reshape(2, 2).ravel(), jks.reshape(2, 2).ravel())
    same_keys(ks.at[0].set(fr.key(9)), jks.at[0].set(jr.key(9)))
    # .get's mode: 'fill' out of bounds is the key of uint32 maxima (was clamped; JAX's random_test)
    same_keys(ks.at[100].get(mode="fill"), jks.at[100].get(mode="fill"))
    same_keys(ks.at[-1].get(mode="clip"), jks.at[-1].get(mode="clip"))
    k, jk = fr.key(2), jr.key(2)
    cases = [
        (lambda m, k, ks: m.stack([k, k]), None),
        (lambda m, k, ks: m.stack([ks, ks], axis=1), None),
        (lambda m, k, ks: m.concatenate([ks, ks[:2]]), None),
        (lambda m, k, ks: m.broadcast_to(k, (3, 2)), None),
        (lambda m, k, ks: m.reshape(ks, (2, 2)), None),
        (lambda m, k, ks: m.expand_dims(ks, 1), None),
        (lambda m, k, ks: m.squeeze(ks[None]), None),
        (lambda m, k, ks: m.transpose(m.reshape(ks, (2, 2))), None),
        (lambda m, k, ks: m.where(np.array([True, False, True, False]), ks, m.stack([k] * 4)), None),
        (lambda m, k, ks: m.asarray([k, k, k]), None),
        (lambda m, k, ks: m.moveaxis(m.reshape(ks, (2, 2)), 0, 1), None),
        (lambda m, k, ks: m.swapaxes(m.reshape(ks, (2, 2)), 0, 1), None),
        (lambda m, k, ks: m.flip(ks), None),
        (lambda m, k, ks: m.tile(k, (2,)), None),
        (lambda m, k, ks: m.repeat(ks, 2), None),
        (lambda m, k, ks: m.take(ks, np.array([3, 1])), None),
        (lambda m, k, ks: m.zeros_like(ks), None),
        (lambda m, k, ks: m.ones_like(k), None),
        (lambda m, k, ks: m.asarray(ks), None),
    ]
    for case, _ in cases:
        same_keys(case(fnp, k, ks), case(jnp, jk, jks))
    np.testing.assert_array_equal(ks == ks, jks == jks)
    np.testing.assert_array_equal(fnp.not_equal(ks, ks[::-1]), jnp.not_equal(jks, jks[::-1]))
    assert bool(fnp.equal(k, fr.key(2))) and bool(jnp.equal(jk, jr.key(2)))
    assert (fnp.shape(ks), fnp.ndim(ks), fnp.size(ks)) == (jnp.shape(jks), jnp.ndim(jks), jnp.size(jks))
    assert k[...] is k and jk[...] is jk  # flax's Variable reads keys with [...]
    assert repr(funcgrad.typeof(ks)) == repr(jax.typeof(jks)) == "ShapedArray(key<fry>[4])"
    for name in ("allclose", "array_equal"):
        assert bool(getattr(fnp, name)(k, fr.key(3))) == bool(getattr(jnp, name)(jk, jr.key(3))) is False
        assert bool(getattr(fnp, name)(ks, ks)) and bool(getattr(jnp, name)(jks, jks))
    np.testing.assert_array_equal(ks[0] != ks[1], jks[0] != jks[1])


def test_key_refusals_as_jax():
    k = fr.key(0)
    for bad in (
        lambda: k + 1,
        lambda: k * k,
        lambda: -k,
        lambda: k < k,
        lambda: k == fr.PRNGKey(0),
        lambda: k == fr.key(0, impl="rbg"),
        lambda: np.asarray(k),
        lambda: bool(k),
        lambda: int(k),
        lambda: hash(k),
        lambda: len(k),
        lambda: fr.key(k),
        lambda: fr.PRNGKey(k),
        lambda: fr.key(fr.PRNGKey(0)),
        lambda: fr.wrap_key_data(k),
        lambda: fr.wrap_key_data(np.zeros(2, np.int32)),
        lambda: fr.wrap_key_data(np.zeros(3, np.uint32)),
        lambda: fr.normal(np.zeros(2, np.int32)),
        lambda: fnp.concatenate([fr.split(k), fr.split(fr.PRNGKey(0))]),
    ):
        with pytest.raises(TypeError):
            bad()
    for bad in (lambda m: m.key(0) + 1, lambda m: m.key(0) == m.PRNGKey(0)):  # JAX's words
        with pytest.raises(TypeError) as want:
            bad(jr)
        with pytest.raises(TypeError) as got:
            bad(fr)
        assert str(got.value).startswith(str(want.value))
    with pytest.raises(ValueError, match="in_axes/out_axes"):  # (JAX maps key axes from the back too)
        funcgrad.vmap(fr.normal, in_axes=-1)(fr.split(k, 3))
    with pytest.raises(IndexError, match="Too many indices"):
        k[0]
    with pytest.raises(ValueError, match="split accepts a single key"):
        fr.split(fr.split(k, 3))
    with pytest.raises(ValueError, match="accepts a single key, but was given a key array of shape \\(3,\\)"):
        fr.normal(fr.split(k, 3))


@pytest.mark.slow  # jax, the oracle, compiles each case beside funcgrad (10-15 s)
def test_typed_keys_through_transformations():
    k, jk = fr.key(0), jr.key(0)
    same_keys(funcgrad.jit(lambda k: fr.split(k))(k), jax.jit(lambda k: jr.split(k))(jk))
    np.testing.assert_array_equal(funcgrad.jit(fr.normal)(k), jax.jit(jr.normal)(jk))
    keys, jkeys = fr.split(k, 8), jr.split(jk, 8)
    np.testing.assert_array_equal(
        funcgrad.vmap(lambda k: fr.normal(k))(keys), jax.vmap(lambda k: jr.normal(k))(jkeys)
    )
    same_keys(funcgrad.vmap(lambda k: fr.fold_in(k, 1))(keys), jax.vmap(lambda k: jr.fold_in(k, 1))(jkeys))
    same_keys(
        funcgrad.vmap(lambda k: fr.split(k), out_axes=1)(keys[:3]),
        jax.vmap(lambda k: jr.split(k), out_axes=1)(jkeys[:3]),
    )

    def step(m):
        return lambda c, _: (m.split(c)[0], m.normal(c))

    (ck, xs), (jck, jxs) = (
        funcgrad.lax.scan(step(fr), k, None, length=3),
        jax.lax.scan(step(jr), jk, None, length=3),
    )
    same_keys(ck, jck)
    np.testing.assert_array_equal(xs, jxs)
    same_keys(
        funcgrad.lax.fori_loop(0, 3, lambda i, c: fr.fold_in(c, i), k),
        jax.lax.fori_loop(0, 3, lambda i, c: jr.fold_in(c, i), jk),
    )
    same_keys(
        funcgrad.lax.cond(True, lambda: k, lambda: fr.key(1)),
        jax.lax.cond(True, lambda: jk, lambda: jr.key(1)),
    )
    # keys are not differentiable: a function of a key and x differentiates w.r.t. x
    np.testing.assert_allclose(
        funcgrad.grad(lambda x, k: x * fr.normal(k))(1.5, k), jax.grad(lambda x, k: x * jr.normal(k))(1.5, jk)
    )
    with pytest.raises(TypeError, match="grad requires real"):
        funcgrad.grad(lambda k, x: x * fr.normal(k))(k, 1.0)
    ct_key, ct_x = funcgrad.vjp(lambda k, x: x * fr.normal(k), k, 1.0)[1](1.0)
    jct_key, _ = jax.vjp(lambda k, x: x * jr.normal(k), jk, 1.0)[1](1.0)
    assert ct_key.dtype == jct_key.dtype == fdt.float0 and ct_key.shape == jct_key.shape == ()
    np.testing.assert_allclose(
        funcgrad.checkpoint(lambda k, x: x * fr.normal(k))(k, 2.0),
        jax.checkpoint(lambda k, x: x * jr.normal(k))(jk, 2.0),
    )
    shape = funcgrad.eval_shape(fr.split, k)
    assert shape == funcgrad.ShapeDtypeStruct((2,), k.dtype)
    assert repr(shape) == repr(jax.eval_shape(jr.split, jk)) == "ShapeDtypeStruct(shape=(2,), dtype=key<fry>)"


def test_astype_to_its_own_key_dtype_is_the_key_as_in_jax():
    # optax's tree_utils.cast_like casts every leaf to the other tree's dtype, keys included, in a
    # traced cond: jax returns the key (jnp.astype eagerly too); another dtype stays refused.
    import jax
    import jax.numpy as jnp

    k, kj = funcgrad.random.key(0), jax.random.key(0)
    assert (
        jnp.astype(kj, kj.dtype).dtype == kj.dtype
        and jax.jit(lambda v: v.astype(v.dtype))(kj).dtype == kj.dtype
    )
    assert funcgrad.numpy.astype(k, k.dtype) is k and k.astype(k.dtype) is k
    assert funcgrad.jit(lambda v: v.astype(v.dtype))(k).dtype == k.dtype
    with pytest.raises(TypeError, match="cannot be cast"):
        k.astype(np.uint32)


def test_nan_to_num_of_keys_is_the_keys_as_in_jax():
    # blackjax's adjusted MCLMC adaptation applies nan_to_num to every leaf of its state, its key
    # included, inside a scan: jax returns a key (not inexact) as it is; funcgrad's promotion refused it.
    k, kj = fr.split(fr.key(1)), jr.split(jr.key(1))
    same_keys(fnp.nan_to_num(k), jnp.nan_to_num(kj))
    assert fnp.nan_to_num(k) is k
    carry, _ = funcgrad.lax.scan(lambda c, _: (fnp.nan_to_num(c), None), k, None, length=2)
    same_keys(carry, kj)


def test_lax_select_of_keys_as_jax():
    # (blackjax's adaptation selects between two states holding keys, inside a scan: funcgrad's
    # select refused keys eagerly and returned their raw data when traced)
    k, k2, kj, kj2 = fr.split(fr.key(0)), fr.split(fr.key(1)), jr.split(jr.key(0)), jr.split(jr.key(1))
    pred = np.array([True, False])
    same_keys(funcgrad.lax.select(pred, k, k2), jax.lax.select(pred, kj, kj2))
    same_keys(funcgrad.lax.select_n(np.array([1, 0]), k, k2), jax.lax.select_n(np.array([1, 0]), kj, kj2))
    traced = funcgrad.jit(lambda p, a, b: funcgrad.lax.select(p, a, b))(False, k, k2)
    same_keys(traced, jax.jit(lambda p, a, b: jax.lax.select(p, a, b))(False, kj, kj2))


def test_result_type_of_keys_under_jax_promotion_lattice_as_jax():
    # (flax's nnx.tabulate reads jnp.result_type of every leaf, keys included; JAX's lattice, used in
    # 32-bit mode and under strict promotion, refused the key dtype with NumPy's TypeError)
    k, kj = fr.key(0), jr.key(0)
    with funcgrad.numpy_dtype_promotion("strict"), jax.numpy_dtype_promotion("strict"):
        assert str(fnp.result_type(k)) == str(jnp.result_type(kj)) == "key<fry>"
        with pytest.raises(ValueError, match="is not a valid dtype for JAX type promotion"):
            jnp.result_type(kj, 1.0)
        with pytest.raises(ValueError, match="is not a valid dtype for JAX type promotion"):
            fnp.result_type(k, 1.0)


@pytest.mark.parametrize(
    "name, f",
    [
        ("unstack", lambda np_, k: np_.unstack(k)),
        ("split", lambda np_, k: np_.split(k, 2)),
        ("array_split", lambda np_, k: np_.array_split(k, 3)),
        ("roll", lambda np_, k: np_.roll(k, 1)),
        ("rot90", lambda np_, k: np_.rot90(k.reshape(2, 2))),
    ],
)
def test_splitting_and_rolling_keys_as_jax(name, f):
    # (pmap_test unstacks split keys to put one on each device: funcgrad converted them to NumPy)
    k, kj = fr.split(fr.key(0), 4), jr.split(jr.key(0), 4)
    got, want = f(fnp, k), f(jnp, kj)
    got, want = (got, want) if isinstance(got, list | tuple) else ([got], [want])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        same_keys(g, w)
    if name == "unstack":  # (and under jit)
        same_keys(funcgrad.jit(lambda v: f(fnp, v))(k)[0], want[0])
