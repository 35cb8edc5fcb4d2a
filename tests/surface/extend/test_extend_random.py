"""funcgrad.extend.random: JAX's PRNG implementations (threefry, rbg, unsafe_rbg) and user ones
(define_prng_impl) usable with funcgrad.random.key/wrap_key_data and every sampler, against jax."""

from __future__ import annotations

import re

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
import funcgrad.random as fr
from funcgrad.extend import random as fer

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jr = jax.random


@pytest.mark.slow  # jax, the oracle, compiles each sampler: slow tier
@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_rbg_keys_as_jax(impl):
    ours = {"rbg": fer.rbg_prng_impl, "unsafe_rbg": fer.unsafe_rbg_prng_impl}[impl]
    jk = jr.key(3, impl=impl)
    for fk in (fr.key(3, impl=impl), fr.key(3, impl=ours), fer.seed_with_impl(ours, 3)):
        assert fr.key_impl(fk) == impl and fk.shape == ()
        np.testing.assert_array_equal(fr.key_data(fk), jr.key_data(jk))
        np.testing.assert_array_equal(fr.key_data(fr.split(fk, 3)), jr.key_data(jr.split(jk, 3)))
        np.testing.assert_array_equal(fr.key_data(fr.fold_in(fk, 7)), jr.key_data(jr.fold_in(jk, 7)))
    fk = fr.key(3, impl=impl)
    np.testing.assert_array_equal(fr.bits(fk, (5,), np.uint32), jr.bits(jk, (5,), np.uint32))
    np.testing.assert_allclose(fr.normal(fk, (4,)), jr.normal(jk, (4,)), rtol=1e-12)
    np.testing.assert_allclose(fr.gamma(fk, 2.0, (3,)), jr.gamma(jk, 2.0, (3,)), rtol=1e-10)
    np.testing.assert_array_equal(fr.randint(fk, (5,), 0, 10), jr.randint(jk, (5,), 0, 10))
    np.testing.assert_array_equal(fr.permutation(fk, 6), jr.permutation(jk, 6))
    # jit of a key array: the impl is static, the data traced
    np.testing.assert_allclose(
        funcgrad.jit(lambda k: fr.uniform(k, (3,)))(fk), jax.jit(lambda k: jr.uniform(k, (3,)))(jk)
    )
    # raw data back to keys, and PRNGKey's raw data of this impl
    data = np.arange(4, dtype=np.uint32)
    np.testing.assert_array_equal(
        fr.key_data(fr.split(fr.wrap_key_data(data, impl=impl))),
        jr.key_data(jr.split(jr.wrap_key_data(data, impl=impl))),
    )
    np.testing.assert_array_equal(fr.PRNGKey(3, impl=impl), jr.PRNGKey(3, impl=impl))


def test_vmap_over_rbg_keys_draws_what_jax_draws():
    # JAX's batching rule of RngBitGenerator: the batch is drawn from the first key, so a vmap over
    # rbg keys differs from a loop over them, in jax and in funcgrad alike.
    keys = fr.split(fr.key(1, impl="rbg"), 3)
    batched = funcgrad.vmap(lambda k: fr.normal(k, (2,)))(keys)
    jkeys = jr.split(jr.key(1, impl="rbg"), 3)
    np.testing.assert_allclose(batched, jax.vmap(lambda k: jr.normal(k, (2,)))(jkeys), rtol=1e-12)
    looped = np.stack([fr.normal(k, (2,)) for k in keys])
    np.testing.assert_allclose(looped, np.stack([jr.normal(k, (2,)) for k in jkeys]), rtol=1e-12)


def test_threefry_impl_is_the_default():
    impl = fer.threefry_prng_impl
    assert impl.key_shape == (2,) and impl.name == "threefry2x32"
    assert fr.key(5, impl=impl).dtype == fr.key(5).dtype == fr.key_dtype(impl)
    np.testing.assert_array_equal(fr.key_data(fr.key(5, impl=impl)), fr.PRNGKey(5))
    seeded = fer.random_seed(np.arange(3), impl)
    assert seeded.shape == jer_shape(np.arange(3)) == (3,)
    np.testing.assert_array_equal(fr.key_data(seeded), np.stack([jr.key_data(jr.key(i)) for i in range(3)]))
    np.testing.assert_array_equal(
        impl.random_bits(fr.PRNGKey(2), 32, (3,)), jr.bits(jr.key(2), (3,), np.uint32)
    )


def jer_shape(seeds):
    from jax.extend import random as jer

    return jer.random_seed(seeds, jer.threefry_prng_impl).shape


def test_threefry_2x32_as_jax():
    from jax.extend.random import threefry_2x32 as theirs

    count = np.arange(7, dtype=np.uint32).reshape(7, 1)
    key = (np.uint32(11), np.uint32(12345))
    np.testing.assert_array_equal(fer.threefry_2x32(key, count), theirs(key, count))
    with pytest.raises(TypeError, match="uint32"):
        fer.threefry_2x32((1, 2), count)


def _counter_impl(module):
    return module.define_prng_impl(
        key_shape=(2,),
        seed=lambda s: (
            fnp.stack([fnp.asarray(s, np.uint32), fnp.asarray(0, np.uint32)])
            if module is fer
            else jax.numpy.stack([jax.numpy.asarray(s, np.uint32), jax.numpy.asarray(0, np.uint32)])
        ),
        split=lambda k, shape: (k + np.arange(1, 1 + int(np.prod(shape)), dtype=np.uint32)[:, None]).reshape(
            (*shape, 2)
        ),
        fold_in=lambda k, d: k ^ d,
        random_bits=lambda k, w, shape: (
            (k[0] * np.uint32(2654435761) + np.arange(int(np.prod(shape)), dtype=np.uint32))
            .reshape(shape)
            .astype(f"uint{w}")
        ),
        name="counter",
        tag="ctr",
    )


def test_define_prng_impl_as_jax():
    ours, theirs = _counter_impl(fer), _counter_impl(jax.extend.random)
    fk, jk = fr.key(9, impl=ours), jr.key(9, impl=theirs)
    assert str(ours) == str(theirs) == "ctr"
    np.testing.assert_array_equal(fr.key_data(fk), jr.key_data(jk))
    np.testing.assert_array_equal(fr.key_data(fr.split(fk, 4)), jr.key_data(jr.split(jk, 4)))
    np.testing.assert_array_equal(fr.key_data(fr.fold_in(fk, 3)), jr.key_data(jr.fold_in(jk, 3)))
    np.testing.assert_array_equal(fr.bits(fk, (3,), np.uint32), jr.bits(jk, (3,), np.uint32))
    np.testing.assert_allclose(fr.uniform(fk, (3,)), jr.uniform(jk, (3,)))


def test_bad_input():
    with pytest.raises(ValueError, match="unknown PRNG implementation 'nope'"):
        fr.key(0, impl="nope")
    with pytest.raises(TypeError, match=r"shape ending in \(4,\) \(rbg keys\)"):
        fr.wrap_key_data(np.zeros(2, np.uint32), impl="rbg")
    with pytest.raises(ValueError, match="accepts a single key"):
        fr.normal(fr.split(fr.key(0, impl="rbg"), 2), (2,))


def test_threefry2x32_p_as_jax():
    """jax.extend.random.threefry2x32_p: one primitive, eager, jit and vmap (broadcasting size-1
    axes), the same words as jax's, and jax's TypeErrors."""
    from jax.extend.random import threefry2x32_p as jp

    r = np.random.RandomState(0)
    a = [r.randint(0, 2**32, size=(3, 4), dtype=np.uint32) for _ in range(4)]
    for args in (a, [a[0], a[1], a[2][:1], a[3][:1]]):
        want = [np.asarray(w) for w in jp.bind(*args)]
        for f in (fer.threefry2x32_p.bind, funcgrad.jit(fer.threefry2x32_p.bind)):
            for got, w in zip(f(*args), want):
                np.testing.assert_array_equal(got, w)
    for args, axes in ((a, (1, 1, 1, 1)), ([a[0][0], a[1][0], a[2], a[3]], (None, None, 0, 0))):
        want = jax.vmap(jp.bind, in_axes=axes)(*args)
        for got, w in zip(funcgrad.vmap(fer.threefry2x32_p.bind, in_axes=axes)(*args), want):
            np.testing.assert_array_equal(got, np.asarray(w))
    # a 0-d operand broadcasts, as JAX's shape rule says (jax.eval_shape; its eager hash then fails)
    s = [a[0][0, 0], a[1][0], a[2][0], a[3][0]]
    assert [w.shape for w in jax.eval_shape(jp.bind, *s)] == [(4,), (4,)]
    want = jp.bind(np.broadcast_to(s[0], (4,)), *s[1:])
    for f in (fer.threefry2x32_p.bind, funcgrad.jit(fer.threefry2x32_p.bind)):
        for got, w in zip(f(*s), want):
            np.testing.assert_array_equal(got, np.asarray(w))
    for bad, words in (
        ((a[0], a[1], a[2], a[3][:2]), "incompatible shapes for broadcasting"),
        (
            (a[0][0], a[1], a[2], a[3]),
            re.escape("threefry2x32: arrays must have the same number of dimensions, got {1, 2}"),
        ),
        ((a[0].astype(np.int32), a[1], a[2], a[3]), "must have uint32 type"),
    ):
        for f in (fer.threefry2x32_p.bind, jp.bind):
            with pytest.raises(TypeError, match=words):
                f(*bad)


def test_key_impl_of_a_user_impl_is_its_spec():
    """random.key_impl names a registered generator and gives a user one's PRNGSpec, as jax's."""
    spec = fer.define_prng_impl(
        key_shape=(2,), seed=lambda s: fnp.zeros(2, np.uint32), split=None, fold_in=None, random_bits=None
    )
    k = fr.key(1, impl=spec)
    assert fr.key_impl(k) == spec and repr(fr.key_impl(k)) == "PRNGSpec('<unnamed>')"
    assert fr.key_impl(fr.key(1, impl="rbg")) == jr.key_impl(jr.key(1, impl="rbg")) == "rbg"


def test_extend_sharding_proto_round_trip():
    # (jax.extend.sharding as the oracle: the same bytes, a replicated and a tiled sharding)
    from jax.extend import sharding as jes
    from jaxlib import xla_client as xc

    from funcgrad.extend import sharding as fes

    for hlo in (xc.HloSharding.from_proto(xc.OpSharding()), xc.HloSharding.iota_tile((2, 2))):
        data = fes.get_serialized_proto_from_hlo_sharding(hlo)
        assert isinstance(data, bytes) and fes.get_hlo_sharding_from_serialized_proto(data) == hlo
        assert data == jes.get_serialized_proto_from_hlo_sharding(hlo)
