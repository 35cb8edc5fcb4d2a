"""JAX 0.10's counter-based PRNG implementations beside threefry2x32 -- ``threefry4x32``,
``philox2x32``, ``philox4x32`` -- against jax 0.10.2: seeds, split, fold_in, bits of every width,
draws under jit and vmap, in 64- and 32-bit mode (funcgrad/random/_counter_impls.py)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.random as fr

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)
jr = jax.random

pytestmark = pytest.mark.slow  # jax, the oracle, compiles each draw beside funcgrad

IMPLS = ("threefry4x32", "philox2x32", "philox4x32")


def _same(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("impl", IMPLS)
def test_counter_impls_draw_jax_bits(impl):
    for seed in (-3, 2**40 + 7):
        k, jk = fr.key(seed, impl=impl), jr.key(seed, impl=impl)
        assert str(k.dtype) == str(jk.dtype) and k.dtype == fr.key_dtype(impl)
        _same(fr.key_data(k), jr.key_data(jk))
    _same(fr.key_data(fr.split(k, (2, 3))), jr.key_data(jr.split(jk, (2, 3))))
    _same(fr.key_data(fr.fold_in(k, 7)), jr.key_data(jr.fold_in(jk, 7)))
    for dtype in ("uint8", "uint64"):  # (uint32 in the 32-bit test below)
        _same(fr.bits(k, (5, 3), dtype), jr.bits(jk, (5, 3), dtype))
    _same(
        funcgrad.vmap(lambda k: fr.normal(k, (2,)))(fr.split(k, 3)),
        jax.vmap(lambda k: jr.normal(k, (2,)))(jr.split(jk, 3)),
    )
    with funcgrad.default_prng_impl(impl):  # JAX's context manager for keys made without impl=
        assert fr.key(0).dtype == k.dtype and fr.PRNGKey(0).shape == jr.key_data(jk).shape


def test_counter_impls_in_32_bit_mode():
    # (the philox hashes need mulhi of uint32, which widened to a type 32-bit mode lacks)
    try:
        funcgrad.config.update("jax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)
        for impl in IMPLS:
            k, jk = fr.key(42, impl=impl), jr.key(42, impl=impl)
            _same(fr.key_data(fr.split(k)), jr.key_data(jr.split(jk)))
            _same(fr.bits(k, (3,)), jr.bits(jk, (3,)))
    finally:
        funcgrad.config.update("jax_enable_x64", True)
        jax.config.update("jax_enable_x64", True)


def test_prng_flags_as_jax():
    # jax.default_prng_impl, jax.legacy_prng_key, jax_random_seed_offset (JAX's random_test)
    import warnings

    raw, jraw = fr.PRNGKey(0), jr.PRNGKey(0)
    msg = "Legacy uint32 key array passed as key to jax.random function"
    with funcgrad.legacy_prng_key("error"), jax.legacy_prng_key("error"):
        for f in (lambda r: fr.uniform(r), lambda r: fr.split(r), funcgrad.jit(lambda r: fr.normal(r))):
            with pytest.raises(ValueError, match=msg):
                f(raw)
        with pytest.raises(ValueError, match=msg):
            jr.uniform(jraw)
        fr.uniform(fr.key(0))  # typed keys pass
    with funcgrad.legacy_prng_key("warn"), pytest.warns(UserWarning, match=msg):
        fr.uniform(raw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fr.uniform(raw)  # "allow", the default
    with funcgrad.default_prng_impl("rbg"), jax.default_prng_impl("rbg"):
        _same(fr.PRNGKey(3), jr.PRNGKey(3))
        assert str(fr.key(3).dtype) == str(jr.key(3).dtype) == "key<rbg>"
    try:
        funcgrad.config.update("jax_random_seed_offset", 3)
        jax.config.update("jax_random_seed_offset", 3)
        _same(fr.key_data(fr.key(17)), jr.key_data(jr.key(17)))
        _same(funcgrad.jit(fr.PRNGKey)(np.int32(17)), jax.jit(jr.PRNGKey)(np.int32(17)))
    finally:
        funcgrad.config.update("jax_random_seed_offset", 0)
        jax.config.update("jax_random_seed_offset", 0)
    _same(funcgrad.jit(fr.PRNGKey)(np.int32(17)), jr.PRNGKey(17))  # (not the offset's trace)
