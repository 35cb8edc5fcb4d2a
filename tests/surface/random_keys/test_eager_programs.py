"""Eager draws through cached programs (NOTE: [eager sampler programs]): the same bits as the
jitted and vmapped draws, the same errors as the general route, one program per call shape."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.random as fr
from funcgrad.random import _eager

KEYS = {"typed": lambda: fr.key(3), "raw": lambda: fr.PRNGKey(3), "rbg": lambda: fr.key(3, impl="rbg")}
DRAWS = {
    "uniform": lambda k: fr.uniform(k, (5,)),
    "uniform-f32-int-bounds": lambda k: fr.uniform(k, (2, 3), np.float32, -2, 7),
    "uniform-neg-zero": lambda k: fr.uniform(k, (4,), minval=-0.0, maxval=-1.5),
    "normal": lambda k: fr.normal(k, (5,)),
    "normal-scalar": lambda k: fr.normal(k),
    "bits-u8": lambda k: fr.bits(k, (6,), np.uint8),
    "bits-u64": lambda k: fr.bits(k, (3,), np.uint64),
}


@pytest.mark.parametrize("kind", KEYS)
def test_eager_draws_equal_jitted_and_vmapped_draws(kind):
    key = KEYS[kind]()
    keys = fr.split(key, 2)
    # (every draw with a typed key; a raw or rbg key reaches the same code: two draws suffice)
    names = list(DRAWS) if kind == "typed" else ["uniform-f32-int-bounds", "bits-u64"]
    for name in names:
        draw = DRAWS[name]
        eager = np.asarray(draw(key))
        np.testing.assert_array_equal(eager, np.asarray(funcgrad.jit(draw)(key)), err_msg=name)
        if kind == "rbg":
            # (vmap over rbg keys is JAX's rule, not a loop: the first key draws the batch;
            # checked against jax in tests/surface/lax/test_lax_reduce_rng.py)
            continue
        batched = np.asarray(funcgrad.vmap(draw)(keys))
        for i in range(2):
            np.testing.assert_array_equal(batched[i], np.asarray(draw(keys[i])), err_msg=name)
    assert eager.dtype == np.uint64


def test_one_program_per_call_shape_and_the_general_route_for_the_rest():
    key = fr.key(11)
    before = len(_eager._programs)
    a = fr.uniform(key, (7,), minval=1.0, maxval=2.0)
    assert len(_eager._programs) == before + 1
    b = fr.uniform(key, (7,), minval=1.0, maxval=2.0)
    assert len(_eager._programs) == before + 1  # found again, not rebuilt
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # -0.0 and 0.0 compare equal but are two programs; a NaN bound, a list shape and an array
    # bound take the general route, and give its values.
    fr.uniform(key, (7,), minval=0.0)
    fr.uniform(key, (7,), minval=-0.0)
    assert len(_eager._programs) == before + 3
    general = [
        fr.uniform(key, (2,), minval=float("nan")),
        fr.normal(key, [2, 2]),
        fr.uniform(key, (3,), minval=funcgrad.numpy.zeros(3), maxval=1.0),
    ]
    assert len(_eager._programs) == before + 3
    assert np.isnan(np.asarray(general[0])).all()
    np.testing.assert_array_equal(np.asarray(general[1]), np.asarray(fr.normal(key, (2, 2))))
    np.testing.assert_array_equal(np.asarray(general[2]), np.asarray(fr.uniform(key, (3,))))
    # complex normals stay on the general route (two draws), with JAX's law E|z|^2 = 1
    z = np.asarray(fr.normal(key, (4000,), np.complex128))
    assert z.dtype == np.complex128 and abs(np.mean(np.abs(z) ** 2) - 1) < 0.1


def test_eager_errors_are_the_general_routes():
    key = fr.key(0)
    with pytest.raises(TypeError, match="unsigned int dtype"):
        fr.bits(key, (2,), np.int32)
    with pytest.raises(ValueError, match="dtype argument .* must be an unsigned int dtype"):  # (JAX's)
        fr.bits(key, (2,), np.float16)
    for make in (lambda: fr.key(0, impl="rbg", dtype=fr.key_dtype()), lambda: fr.wrap_key_data(
            np.zeros(2, np.uint32), impl="threefry2x32", dtype=fr.key_dtype())):  # fmt: skip
        with pytest.raises(ValueError, match="Cannot specify both `impl` and `dtype`"):
            make()
    # (JAX's random_lax_test testDtypeErrorMessage, testCategoricalWithoutReplacement: its words)
    with pytest.raises(ValueError, match=r"dtype argument to `normal` must be a float"):
        fr.normal(key, (2,), np.int32)
    with pytest.raises(ValueError, match="Number of samples without replacement"):
        fr.categorical(key, np.zeros(3), shape=(4,), replace=False)
    # (JAX's random_lax_test test_prng_errors) a Python int seed outside int64 is JAX's
    # OverflowError for every generator, eagerly and under jit (2**63 made a key; 2**64 a TypeError)
    for seed in (2**63, 2**64, -(2**63) - 1):
        for make in (fr.PRNGKey, lambda s: fr.key(s, impl="rbg"), funcgrad.jit(fr.key)):
            with pytest.raises(OverflowError):
                make(seed)
    with pytest.raises(ValueError, match="floating dtype"):
        fr.uniform(key, (2,), np.int32)
    with pytest.raises(ValueError, match="single key"):
        fr.normal(fr.split(key, 3), (2,))
    with pytest.raises(TypeError, match="uint32"):
        fr.normal(funcgrad.numpy.array([0, 1]), (2,))
    with pytest.raises(TypeError, match="uint32"):  # and the same again: nothing was cached
        fr.normal(funcgrad.numpy.array([0, 1]), (2,))
