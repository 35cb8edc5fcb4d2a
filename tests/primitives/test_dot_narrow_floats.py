"""Eager ``dot_general`` of 16-bit floats (bfloat16, float16) computes in float32 and rounds once, as
XLA's CPU dot does (NumPy has no BLAS for them: its scalar loop took minutes for one layer of flax's
ViT example); the result has the operands' dtype and agrees with jax 0.10.2 to one ulp."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad.numpy as fnp
from funcgrad import lax


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_narrow_float_dot_general_matches_jax(dtype):
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 5, 64)), rng.standard_normal((64, 7))
    dims = (((2,), (0,)), ((), ()))
    ours = lax.dot_general(fnp.asarray(a, dtype), fnp.asarray(b, dtype), dims)
    theirs = jax.lax.dot_general(jax.numpy.asarray(a, dtype), jax.numpy.asarray(b, dtype), dims)
    assert ours.dtype == theirs.dtype == np.dtype(getattr(fnp, dtype))
    ulp = 2.0**-7 if dtype == "bfloat16" else 2.0**-10
    np.testing.assert_allclose(
        np.asarray(ours, np.float32), np.asarray(theirs, np.float32), rtol=ulp, atol=ulp
    )


_NARROWED = [("float16", "bfloat16"), ("bfloat16", "float16"), ("float32", "bfloat16"), ("float64", "int8")]


@pytest.mark.parametrize("src, pet", _NARROWED)
def test_narrow_preferred_element_type_is_jax_s_bits(src, pet):
    # (session 18's leftover: eager float16 x float16 -> bfloat16 was one bfloat16 ulp off in half
    # the values) XLA's CPU dot converts float16 operands to a bfloat16 preferred type first, and
    # computes a product narrowed otherwise in the operands' type, converting once
    jax = pytest.importorskip("jax")
    import ml_dtypes

    jax.config.update("jax_enable_x64", True)
    dt = {"bfloat16": np.dtype(ml_dtypes.bfloat16)}
    src, pet = dt.get(src, np.dtype(src)), dt.get(pet, np.dtype(pet))
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(16, 32)).astype(src), rng.normal(size=(32, 8)).astype(src)
    dims = (((1,), (0,)), ((), ()))
    want = np.asarray(jax.lax.dot_general(a, b, dims, preferred_element_type=pet))
    got = lax.dot_general(a, b, dims, preferred_element_type=pet)
    assert got.dtype == want.dtype == pet
    np.testing.assert_array_equal(np.asarray(got, np.float64), want.astype(np.float64))
