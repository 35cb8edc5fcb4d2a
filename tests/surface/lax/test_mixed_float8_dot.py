"""dot_general of two float8 formats (no common promotion; flax's fp8 layers contract e4m3 with
e5m2) and einsum's default preferred_element_type (the operands' result type, as JAX names it to
each dot_general: a custom ``_dot_general`` reads it), against jax."""

import ml_dtypes
import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

DN = (((1,), (0,)), ((), ()))
A = np.array([[1.5, 2, -3], [0.25, 7, 9]], ml_dtypes.float8_e4m3fn)
B = np.array([[1, 2], [3, -4], [0.5, 6]], ml_dtypes.float8_e5m2)


@pytest.mark.parametrize("pet", [ml_dtypes.bfloat16, np.float32])
def test_float8_pair_contracts_exactly_at_the_preferred_type(pet):
    import jax

    got = funcgrad.lax.dot_general(A, B, DN, preferred_element_type=pet)
    want = jax.lax.dot_general(A, B, DN, preferred_element_type=pet)
    assert got.dtype == want.dtype == np.dtype(pet)
    np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(want, np.float32))
    # The exact product, computed in float64: every float8 value is exact in the wider type.
    exact = A.astype(np.float64) @ B.astype(np.float64)
    np.testing.assert_array_equal(np.asarray(got, np.float64), exact.astype(pet).astype(np.float64))


def test_float8_pair_result_type_and_einsum_names_its_type():
    import jax

    assert funcgrad.lax.dot_general(A, B, DN).dtype == jax.lax.dot_general(A, B, DN).dtype
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    seen = []

    def dot(x, y, dims, precision=None, preferred_element_type=None):
        seen.append(preferred_element_type)
        return funcgrad.lax.dot_general(x, y, dims, precision, preferred_element_type)

    fnp.einsum("ij,jk->ik", a, b, _dot_general=dot)
    assert seen == [np.dtype(np.float32)]
    text = str(funcgrad.make_jaxpr(lambda a, b: fnp.einsum("ij,jk->ik", a, b))(a, b))
    assert "preferred_element_type=float32" in text
