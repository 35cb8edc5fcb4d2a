"""funcgrad.random: bit-exact with JAX's threefry (x64), pure, batchable, and sensible statistics."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.random as fr

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)
jr = jax.random


@pytest.mark.parametrize("seed", [0, 1, 42, 2**31 + 5, 2**40 + 3])
def test_keys_and_split_match_jax(seed):
    k, jk = fr.PRNGKey(seed), jr.PRNGKey(seed)
    np.testing.assert_array_equal(np.asarray(k), np.asarray(jk))
    np.testing.assert_array_equal(np.asarray(fr.split(k)), np.asarray(jr.split(jk)))
    np.testing.assert_array_equal(np.asarray(fr.split(k, 5)), np.asarray(jr.split(jk, 5)))
    np.testing.assert_array_equal(np.asarray(fr.fold_in(k, 123)), np.asarray(jr.fold_in(jk, 123)))


@pytest.mark.parametrize("shape", [(), (3,), (2, 5)])
def test_distributions_match_jax(shape):
    k, jk = fr.PRNGKey(7), jr.PRNGKey(7)
    np.testing.assert_array_equal(np.asarray(fr.uniform(k, shape)), np.asarray(jr.uniform(jk, shape)))
    np.testing.assert_allclose(np.asarray(fr.normal(k, shape)), np.asarray(jr.normal(jk, shape)), rtol=1e-12)
    np.testing.assert_array_equal(
        np.asarray(fr.randint(k, shape, -3, 17)), np.asarray(jr.randint(jk, shape, -3, 17))
    )
    # float32 scaling may differ by an ulp: XLA fuses the multiply-add into an FMA.
    np.testing.assert_allclose(
        np.asarray(fr.uniform(k, shape, np.float32, -2.0, 3.0)),
        np.asarray(jr.uniform(jk, shape, np.float32, -2.0, 3.0)),
        rtol=1e-6,
    )
    np.testing.assert_array_equal(
        np.asarray(fr.bernoulli(k, 0.3, shape)), np.asarray(jr.bernoulli(jk, 0.3, shape))
    )


def test_statistics_and_purity():
    k = fr.PRNGKey(0)
    x = np.asarray(fr.normal(k, (20000,)))
    assert abs(x.mean()) < 0.03 and abs(x.std() - 1) < 0.03
    np.testing.assert_array_equal(np.asarray(fr.normal(k, (5,))), np.asarray(fr.normal(k, (5,))))
    k1, k2 = fr.split(k)
    assert not np.array_equal(np.asarray(fr.normal(k1, (5,))), np.asarray(fr.normal(k2, (5,))))
    c = np.asarray(fr.categorical(fr.PRNGKey(3), np.log(np.tile([0.2, 0.8], (4000, 1)))))
    assert abs(c.mean() - 0.8) < 0.03


def test_vmap_over_keys_matches_loop():
    keys = fr.split(fr.PRNGKey(0), 4)
    batched = funcgrad.vmap(lambda k: fr.normal(k, (3,)))(keys)
    for i in range(4):
        np.testing.assert_allclose(np.asarray(batched[i]), np.asarray(fr.normal(np.asarray(keys)[i], (3,))))


def test_bad_key_errors():
    with pytest.raises(TypeError, match="uint32"):
        fr.normal(np.array([0, 1]), (2,))
    with pytest.raises(TypeError, match="shape \\(2,\\)"):
        fr.normal(fr.split(fr.PRNGKey(0), 3), (2,))
