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


@pytest.mark.parametrize("pair", [("float32", "int32"), ("int32", "uint32"), ("bfloat16", "int16")])
def test_mixed_dtype_dot_general_takes_jax_result_type(pair):
    # JAX's lax_test testDot through funcgrad.as_jax: mixed operands give the "larger" type by
    # XLA's order (float32 x int32 -> float32, not NumPy's float64; int32 x uint32 -> int32), and
    # strict promotion does not refuse them (it raised TypePromotionError for bfloat16 x int16).
    import jax

    a, b = (np.arange(4).reshape(2, 2).astype(ml_dtypes.bfloat16 if t == "bfloat16" else t) for t in pair)
    want = jax.lax.dot_general(a, b, DN)
    with funcgrad.numpy_dtype_promotion("strict"):
        got = funcgrad.lax.dot_general(a, b, DN)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got, np.float64), np.asarray(want, np.float64))


@pytest.mark.parametrize(
    "ldt, pet", [("float32", "bfloat16"), ("float32", "float16"), ("float16", "float32")]
)
def test_vjp_of_a_dot_with_another_preferred_type_as_jax(ldt, pet):
    # Found by the fuzzer: the cotangent (in preferred_element_type) met the other operand's dtype
    # in the transposed product, which funcgrad's dot_general refused under a trace; JAX contracts
    # them in the preferred type (its CPU lowering converts both) and converts to the operand's.
    import jax

    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    b = np.cos(np.arange(6.0, dtype=np.float32)).reshape(3, 2)

    def run(T, lax):
        def f(a, b):
            out = lax.dot_general(a.astype(ldt), b.astype(ldt), DN, preferred_element_type=pet)
            return out.astype("float32")

        def g(a, b):
            out, pullback = T.vjp(f, a, b)
            return pullback(out * 0.5 + 1.0)

        return [*g(a, b), *T.jit(g)(a, b)]

    for got, want in zip(run(funcgrad, funcgrad.lax), run(jax, jax.lax)):
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize(
    "dt, pet", [("float32", "int8"), ("float64", "int16"), ("bfloat16", "float16"), ("float32", "bfloat16")]
)
def test_eager_dot_into_a_narrower_or_integer_type_as_jax(dt, pet):
    # Found by the fuzzer: eagerly funcgrad converted the operands to preferred_element_type first
    # (float32 -> int8 wrapped 3.95 * ... to -81); XLA's dot computes in the operands' type and
    # converts the result once, saturating into integers.
    import jax

    a = np.array([[1.7, -2.6, 3.2], [100.5, 2000.25, -3.9]]).astype(jax.numpy.dtype(dt))
    b = np.array([[0.5, 1.5], [2.5, -1.25], [3.0, 7.7]]).astype(jax.numpy.dtype(dt))
    want = np.asarray(jax.jit(lambda a, b: jax.lax.dot(a, b, preferred_element_type=pet))(a, b))
    for got in (
        funcgrad.lax.dot(a, b, preferred_element_type=pet),
        funcgrad.jit(lambda a, b: funcgrad.lax.dot(a, b, preferred_element_type=pet))(a, b),
    ):
        assert np.asarray(got).dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("l, r, pet", [("float64", "float16", "int32"), ("float16", "float64", "float16")])
def test_mixed_operands_with_a_preferred_type_convert_to_it_as_jax(l, r, pet):
    # Found by the fuzzer: JAX's CPU lowering converts mixed operands to preferred_element_type
    # before the product (float64 x float16 -> int32 multiplies int32s); funcgrad took the wider one.
    import jax

    a = np.array([[1.7, -2.6, 3.2], [100.5, 2000.25, -3.9]]).astype(l)
    b = np.array([[0.5, 1.5], [2.5, -1.25], [3.0, 7.7]]).astype(r)
    want = np.asarray(jax.lax.dot_general(a, b, DN, preferred_element_type=pet))
    got = np.asarray(funcgrad.lax.dot_general(a, b, DN, preferred_element_type=pet))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
