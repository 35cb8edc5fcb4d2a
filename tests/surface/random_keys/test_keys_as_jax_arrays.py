"""Typed PRNG keys where JAX's random_test uses them as arrays, against jax 0.10.2: lax's
structural functions (slices, dynamic slices and updates, concatenate, transpose, ...), creation
functions with a key dtype or key fill value, equality of a key with key arrays, the Array
attributes keys forward to their data, and JAX's errors for keys in arithmetic and conversions."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
import funcgrad.random as fr

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)
jr, jnp = jax.random, jax.numpy

pytestmark = pytest.mark.slow  # jax, the oracle, compiles each case beside funcgrad


def _same_keys(ours, theirs):
    assert isinstance(ours, type(fr.key(0))), type(ours)
    assert ours.shape == theirs.shape and str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_array_equal(fr.key_data(ours), jr.key_data(theirs))


# each case: a function of (lax, keys, *more), run with funcgrad.lax and with jax.lax
CASES = [
    lambda lax, x, u, i: lax.slice_in_dim(x, 1, 3),
    lambda lax, x, u, i: lax.slice(x, (0, 1), (2, 3)),
    lambda lax, x, u, i: lax.dynamic_slice_in_dim(x, i, 2),
    lambda lax, x, u, i: lax.dynamic_slice(x, (i, np.int16(0)), (2, 2)),
    lambda lax, x, u, i: lax.dynamic_update_slice_in_dim(x, u, i, axis=0),
    lambda lax, x, u, i: lax.dynamic_index_in_dim(x, i, keepdims=False),
    lambda lax, x, u, i: lax.concatenate([x, u], 0),
    lambda lax, x, u, i: lax.transpose(x, (1, 0)),
    lambda lax, x, u, i: lax.broadcast_in_dim(u, (2, 1, 4), (1, 2)),
    lambda lax, x, u, i: lax.reshape(x, (12,)),
    lambda lax, x, u, i: lax.squeeze(u, (0,)),
    lambda lax, x, u, i: lax.rev(x, (0,)),
]


def test_lax_structural_functions_of_keys():
    # (JAX's random_test KeyArrayTest.test_slice / test_dynamic_slice / test_dynamic_update_slice:
    # keys were converted to NumPy and refused)
    ks, jks = fr.split(fr.key(0), 12).reshape(3, 4), jr.split(jr.key(0), 12).reshape(3, 4)
    i = np.int16(1)
    for case in CASES:
        _same_keys(case(funcgrad.lax, ks, ks[:1], i), case(jax.lax, jks, jks[:1], i))
    ours = funcgrad.jit(lambda x, u, i: [c(funcgrad.lax, x, u, i) for c in CASES])(ks, ks[:1], i)
    for got, case in zip(ours, CASES, strict=True):
        _same_keys(got, case(jax.lax, jks, jks[:1], i))


def test_creation_with_key_dtypes_and_key_fill_values():
    ks, jks = fr.split(fr.key(789543)), jr.split(jr.key(789543))
    k, jk = fr.key(42), jr.key(42)
    for f in (fnp.zeros, fnp.ones, fnp.empty):
        _same_keys(f(ks.shape, dtype=ks.dtype), getattr(jnp, f.__name__)(jks.shape, dtype=jks.dtype))
    _same_keys(fnp.full(ks.shape, 100, dtype=ks.dtype), jnp.full(jks.shape, 100, dtype=jks.dtype))
    _same_keys(fnp.full(ks.shape, k, dtype=ks.dtype), jnp.full(jks.shape, jk, dtype=jks.dtype))
    _same_keys(fnp.full_like(ks, 100), jnp.full_like(jks, 100))
    _same_keys(fnp.full_like(ks, k), jnp.full_like(jks, jk))
    _same_keys(funcgrad.jit(lambda x, v: fnp.full(x.shape, v, dtype=x.dtype))(ks, k), jnp.full(2, jk))
    _same_keys(fnp.array(k, dtype=k.dtype), jnp.array(jk, dtype=jk.dtype))
    _same_keys(fnp.asarray(k, dtype=k.dtype), jk)


def test_lax_full_of_keys_and_the_take_method_as_jax():
    # (lax.full/full_like with a key fill value or key dtype converted the keys to NumPy and
    # refused; keys.take was missing; keys[i] = k is JAX's immutability TypeError)
    ks, jks = fr.split(fr.key(7), 4), jr.split(jr.key(7), 4)
    k, jk = fr.key(3), jr.key(3)
    _same_keys(funcgrad.lax.full((3,), k), jax.lax.full((3,), jk))
    _same_keys(funcgrad.lax.full((2,), 5, dtype=ks.dtype), jax.lax.full((2,), 5, dtype=jks.dtype))
    _same_keys(funcgrad.lax.full_like(ks, k), jax.lax.full_like(jks, jk))
    _same_keys(funcgrad.lax.full_like(ks, 0, shape=(2, 1)), jax.lax.full_like(jks, 0, shape=(2, 1)))
    _same_keys(funcgrad.jit(lambda v: funcgrad.lax.full((2,), v))(k), jax.lax.full((2,), jk))
    idx = np.array([2, 0])
    _same_keys(ks.take(idx), jks.take(idx))
    _same_keys(ks.reshape(2, 2).take(idx[:1], axis=1), jks.reshape(2, 2).take(idx[:1], axis=1))
    _same_keys(funcgrad.jit(lambda x: x.take(np.array([1])))(ks), jks.take(np.array([1])))
    for keys, key in ((ks, k), (jks, jk)):
        with pytest.raises(TypeError, match="JAX arrays are immutable"):
            keys[0] = key
    # (jnp.triu/tril of keys: zero keys outside the triangle, as JAX's; funcgrad refused the dtype)
    ks2, jks2 = ks.reshape(2, 2), jks.reshape(2, 2)
    _same_keys(fnp.triu(ks2), jnp.triu(jks2))
    _same_keys(fnp.tril(ks2, 1), jnp.tril(jks2, 1))
    _same_keys(funcgrad.jit(fnp.tril)(ks2), jnp.tril(jks2))
    # (jnp.select of keys with a key default; a number default is JAX's promotion ValueError)
    m = np.array([True, False, True, False])
    _same_keys(fnp.select([m], [ks], k), jnp.select([m], [jks], jk))
    _same_keys(fnp.select([m, ~m], [ks, ks[::-1]], k), jnp.select([m, ~m], [jks, jks[::-1]], jk))
    for lib, keys in ((fnp, ks), (jnp, jks)):
        with pytest.raises(ValueError, match="is not a valid dtype for JAX type promotion"):
            lib.select([m], [keys], 0)
    # (jnp.insert of keys into keys)
    _same_keys(fnp.insert(ks, 1, k), jnp.insert(jks, 1, jk))
    _same_keys(fnp.insert(ks2, 1, ks[:2], axis=1), jnp.insert(jks2, 1, jks[:2], axis=1))
    _same_keys(funcgrad.jit(lambda a, b: fnp.insert(a, 1, b))(ks, k), jnp.insert(jks, 1, jk))


def test_key_equality_broadcasts_the_keys_shapes():
    k, jk = fr.key(123), jr.key(123)
    ka, jka = fr.split(k, 5).at[2:4].set(k), jr.split(jk, 5).at[2:4].set(jk)
    with funcgrad.numpy_rank_promotion("raise"):  # (a 0-d key against keys is not rank promotion)
        np.testing.assert_array_equal(k == ka, jk == jka)
        np.testing.assert_array_equal(k != ka, jk != jka)
        np.testing.assert_array_equal(funcgrad.jit(lambda a, b: a == b)(k, ka), jk == jka)


def test_keys_forward_array_attributes_to_their_data():
    keys = fr.split(fr.key(0), 10)
    data = keys._base_array
    assert keys.device == data.device == funcgrad.devices()[0] and keys.devices() == data.devices()
    assert keys.is_fully_addressable and keys.is_fully_replicated
    assert keys.on_device_size_in_bytes() == data.on_device_size_in_bytes()
    assert keys.unsafe_buffer_pointer() == data.unsafe_buffer_pointer()
    assert len(keys.addressable_shards) == len(data.addressable_shards) == 1
    np.testing.assert_array_equal(fr.key_data(keys.addressable_data(0)), data)
    assert keys.copy_to_host_async() is None and keys.block_until_ready() is keys
    assert not keys.is_deleted()
    keys.delete()
    assert keys.is_deleted() and data.is_deleted()


def test_errors_for_keys_as_numbers_are_jax_s():
    k, jk = fr.key(123), jr.key(123)
    for f, msg in [
        (lambda m, k: m.add(k, 1), "add does not accept dtypes key<fry>, int64"),
        (lambda m, k: k + 1, "add does not accept dtypes key<fry>, int64"),
        (lambda m, k: m.add(k, k), "add does not accept dtype key<fry> at position 0"),
        (lambda m, k: k + k, "add does not accept dtype key<fry> at position 0"),
        (lambda m, k: m.negative(k), "neg does not accept dtype key<fry>"),
        (lambda m, k: -k, "neg does not accept dtype key<fry>"),
        (lambda m, k: m.multiply(k, 2.0), "multiply does not accept dtypes key<fry>, float64"),
    ]:
        with pytest.raises(TypeError, match=msg):
            f(jnp, jk)
        with pytest.raises(TypeError, match=msg):
            f(fnp, k)
    for mod, key in ((jnp, jk), (fnp, k)):  # where of keys with a non-key: JAX's ValueError
        with pytest.raises(ValueError, match="dtype=key<fry> is not a valid dtype for JAX type promotion"):
            mod.where(True, key, 1)
    for lax, key in ((jax.lax, jk), (funcgrad.lax, k)):
        with pytest.raises(ValueError, match="Cannot convert_element_type from key<fry> to int64"):
            lax.convert_element_type(key, int)
        with pytest.raises(ValueError, match="Cannot convert_element_type from int32 to key<fry>"):
            lax.convert_element_type(np.int32(0), key.dtype)
    for key in (jk, k):  # JAX's words for np.asarray of keys and for an unknown generator
        with pytest.raises(
            TypeError, match="JAX array with PRNGKey dtype cannot be converted to a NumPy array"
        ):
            np.asarray(key)
    with pytest.raises(ValueError, match='unrecognized PRNG implementation "unlikely name"'):
        fr.key(0, impl="unlikely name")
    with pytest.raises(TypeError, match="unrecognized type .* for specifying PRNG implementation"):
        fr.key(0, impl=object())
    # an invalid raw key is refused before jax_legacy_prng_key's error (JAX's order)
    with (
        funcgrad.legacy_prng_key("error"),
        pytest.raises(TypeError, match="JAX encountered invalid PRNG key data"),
    ):
        fr.uniform(np.zeros(1, np.float32))


def test_sharded_arrays_of_keys_are_assembled_from_their_data():
    # JAX's random_test test_make_array_from_callback / test_make_array_from_single_device_arrays
    devices = funcgrad.devices()
    mesh = funcgrad.make_mesh((len(devices),), ("x",))
    sharding = funcgrad.sharding.NamedSharding(mesh, funcgrad.sharding.PartitionSpec("x"))
    expected = funcgrad.vmap(fr.key)(fnp.arange(len(devices)))
    got = funcgrad.make_array_from_callback(
        (len(devices),), sharding, lambda index: funcgrad.vmap(fr.key)(fnp.arange(len(devices))[index[0]])
    )
    _same_keys(got, jax.vmap(jr.key)(jnp.arange(len(devices))))
    keys = fr.split(fr.key(0), len(devices))
    pieces = [funcgrad.device_put(keys[i : i + 1], d) for i, d in enumerate(devices)]
    got = funcgrad.make_array_from_single_device_arrays((len(devices),), sharding, pieces)
    np.testing.assert_array_equal(fr.key_data(got), fr.key_data(keys))
    assert got.dtype == expected.dtype
