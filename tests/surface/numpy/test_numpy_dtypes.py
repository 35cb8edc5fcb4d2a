"""Dtype semantics of funcgrad.numpy: NumPy 2 (NEP 50) promotion with weak Python scalars, float64
default, float32 preserved; the dtype utilities (result_type, promote_types, can_cast, iinfo,
finfo, issubdtype) and scalar types against NumPy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

DTYPES = [np.bool_, np.int8, np.int32, np.int64, np.uint8, np.uint32, np.float16, np.float32, np.float64]
SCALARS = [True, 2, 2.5]


@pytest.mark.parametrize("a, b", list(itertools.combinations_with_replacement(DTYPES, 2)))
def test_array_array_promotion_matches_numpy(a, b):
    x, y = np.ones(2, a), np.ones(2, b)
    for f in (fnp.add, fnp.multiply, fnp.maximum, fnp.equal):
        ref = getattr(np, f.__name__)(x, y)
        assert f(x, y).dtype == ref.dtype, (f.__name__, a, b)
    assert fnp.result_type(x, y) == np.result_type(x, y)
    assert fnp.promote_types(a, b) == np.promote_types(a, b)


@pytest.mark.parametrize("dtype, scalar", list(itertools.product(DTYPES, SCALARS)))
def test_python_scalars_are_weak(dtype, scalar):
    x = np.ones(2, dtype)
    expected = (x * scalar).dtype
    assert fnp.multiply(x, scalar).dtype == expected
    assert (fnp.asarray(x) * scalar).dtype == expected
    assert (scalar * fnp.asarray(x)).dtype == expected
    assert fnp.result_type(x, scalar) == np.result_type(x, scalar)


def test_weak_types_propagate():
    w = fnp.asarray(2.0)
    assert w.weak_type and w.dtype == np.float64
    assert (np.ones(2, np.float32) * w).dtype == np.float32
    assert not fnp.asarray(2.0, np.float64).weak_type
    assert fnp.add(1, 2.5).weak_type
    assert not fnp.add(np.float64(1), 2.5).weak_type
    # Inside transformations too: grad of a function of a Python float promotes like NumPy.
    assert funcgrad.grad(lambda v: fnp.sum(v * np.ones(2, np.float32)))(2.0).dtype == np.float64


def test_default_dtypes():
    assert fnp.asarray(1.0).dtype == np.float64
    assert fnp.asarray(1).dtype == np.int64
    assert fnp.zeros(2).dtype == np.float64
    assert fnp.arange(3).dtype == np.int64
    assert fnp.linspace(0, 1, 3).dtype == np.float64
    assert fnp.sin(np.int32(1)).dtype == np.float64
    assert fnp.mean(np.ones(2, np.int32)).dtype == np.float64
    assert fnp.sum(np.ones(2, np.int32)).dtype == np.int64
    assert fnp.sum(np.ones(2, np.float32)).dtype == np.float32
    assert fnp.mean(np.ones(2, np.float32)).dtype == np.float32


def test_scalar_overflow_raises_like_numpy():
    with pytest.raises(OverflowError):
        fnp.add(np.ones(2, np.uint8), -1)
    with pytest.raises(OverflowError):
        fnp.add(np.ones(2, np.int32), 2**40)


@pytest.mark.parametrize("a, b", list(itertools.product(DTYPES, DTYPES)))
def test_can_cast_matches_numpy(a, b):
    for casting in ("safe", "same_kind", "unsafe"):
        assert fnp.can_cast(a, b, casting) == np.can_cast(a, b, casting)


def test_dtype_utilities():
    for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32):
        assert fnp.iinfo(t).max == np.iinfo(t).max and fnp.iinfo(t).min == np.iinfo(t).min
    for t in (np.float16, np.float32, np.float64):
        assert fnp.finfo(t).eps == np.finfo(t).eps and fnp.finfo(t).max == np.finfo(t).max
    assert fnp.finfo(fnp.float32).bits == 32
    assert fnp.iinfo(fnp.asarray(np.int32(1))).bits == 32
    assert fnp.issubdtype(fnp.float32, fnp.floating)
    assert fnp.issubdtype(np.int32, fnp.integer) and not fnp.issubdtype(np.int32, fnp.floating)
    assert fnp.result_type(fnp.float32, float) == np.float32
    assert fnp.result_type(np.int32, 1.5) == np.float64


def test_scalar_types():
    x = fnp.float32(1.5)
    assert isinstance(x, fnp.ndarray) and x.dtype == np.float32 and x.shape == ()
    assert fnp.float32 == np.float32 and np.dtype(fnp.float32) == np.float32
    assert fnp.zeros(2, fnp.int32).dtype == np.int32
    assert fnp.ones(2).astype(fnp.float16).dtype == np.float16
    assert fnp.dtype("float32") == np.float32
    assert fnp.bool_(1).dtype == np.bool_
    for name in (
        "float16",
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint32",
        "bool_",
    ):
        assert np.dtype(getattr(fnp, name)) == np.dtype(getattr(np, name))


def test_astype_and_conversions():
    x = fnp.asarray([1.7, -1.7, 300.0])
    np.testing.assert_array_equal(
        np.asarray(x.astype(np.int32)), np.array([1.7, -1.7, 300.0]).astype(np.int32)
    )
    assert fnp.astype(x, bool).dtype == np.bool_
    # Converting to an integer dtype has a zero derivative and does not break grad.
    g = funcgrad.grad(lambda v: fnp.sum(v.astype(np.int32).astype(np.float64) * v))(np.array([1.5, 2.5]))
    np.testing.assert_array_equal(np.asarray(g), [1.0, 2.0])


def test_complex_to_bool_as_jax():
    # (the lax-parameter fuzzer) astype(bool) of a complex value is != 0 (either part), while
    # lax.convert_element_type keeps the real part only: eagerly and under jit alike (jit's
    # conversion compared both parts)
    jax = pytest.importorskip("jax")
    z = np.array([1j, 0j, 1 + 0j, -0.0 + 2e19j], np.complex64)
    for T, tnp in [(funcgrad, fnp), (jax, jax.numpy)]:
        got = [
            tnp.asarray(z).astype(bool),
            tnp.astype(z, bool),
            T.jit(lambda v, tnp=tnp: tnp.astype(v, bool))(z),
            T.lax.convert_element_type(z, bool),
            T.jit(lambda v, T=T: T.lax.convert_element_type(v, bool))(z),
        ]
        np.testing.assert_array_equal(
            np.stack([np.asarray(g) for g in got]), [[1, 0, 1, 1]] * 3 + [[0, 0, 1, 0]] * 2
        )


def test_ndarray_isinstance_covers_tracers():
    assert isinstance(fnp.ones(2), fnp.ndarray)
    assert not isinstance(np.ones(2), fnp.ndarray)
    seen = []
    funcgrad.grad(lambda x: seen.append(isinstance(x, fnp.ndarray)) or fnp.sum(x))(np.ones(2))
    funcgrad.vmap(lambda x: seen.append(isinstance(x, fnp.ndarray)) or x)(np.ones(2))
    assert seen == [True, True]


# ----------------------------------------------------------------------------------------------
# Scalar types (numpy/scalar_types.py)


NARROW = ["int1", "int2", "int4", "uint1", "uint2", "uint4", "float4_e2m1fn", "float6_e2m3fn",
          "float6_e3m2fn", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
          "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu"]  # fmt: skip


@pytest.mark.parametrize("name", NARROW)
def test_narrow_scalar_types_like_jax(name):
    jnp = pytest.importorskip("jax.numpy")
    ours, theirs = getattr(fnp, name), getattr(jnp, name)
    assert np.dtype(ours.dtype) == np.dtype(theirs.dtype)
    assert fnp.asarray(ours(1)).dtype == np.dtype(theirs.dtype)
    for abstract in (
        "floating",
        "integer",
        "signedinteger",
        "unsignedinteger",
        "inexact",
        "number",
        "generic",
    ):
        assert fnp.issubdtype(ours, getattr(fnp, abstract)) == jnp.issubdtype(
            theirs, getattr(jnp, abstract)
        ), (
            name,
            abstract,
        )
    limits = fnp.finfo if "float" in name else fnp.iinfo
    jlimits = jnp.finfo if "float" in name else jnp.iinfo
    assert float(limits(ours).max) == float(jlimits(theirs).max)


def test_default_aliases_and_numpy_types():
    assert fnp.bool is fnp.bool_ and fnp.bool(1).dtype == np.bool_
    assert fnp.uint(3).dtype == np.uint64
    assert fnp.object_ is np.object_ and fnp.character is np.character and fnp.flexible is np.flexible
    assert fnp.ComplexWarning is np.exceptions.ComplexWarning
    assert fnp.zeros(3, fnp.int4).dtype == fnp.int4.dtype
    # Compiled programs take the 8-bit floats XLA's CPU backend stores.
    x = fnp.asarray(np.array([1.0, 2.0], fnp.float8_e4m3fn.dtype))
    assert funcgrad.jit(lambda a: a)(x).dtype == fnp.float8_e4m3fn.dtype


@pytest.mark.parametrize("narrow", ["bfloat16", "float8_e4m3fn", "int4"])
def test_issubdtype_of_a_narrow_type_against_every_abstract_type(narrow):
    # issubdtype(bfloat16, complexfloating) raised "Converting np.complex to a dtype" (found adding
    # dtypes.scalar_type_of)
    jnp = pytest.importorskip("jax.numpy")
    for abstract in (
        np.generic,
        np.number,
        np.inexact,
        np.floating,
        np.complexfloating,
        np.integer,
        np.bool_,
    ):
        assert fnp.issubdtype(narrow, abstract) == jnp.issubdtype(narrow, abstract), abstract


def test_issubdtype_does_not_canonicalize_and_takes_abstract_first_arguments():
    # JAX's dtypes_test testIsSubdtype / testIsSubdtypeCustomFloats (32-bit mode): int64 is a
    # subdtype of int64 in 32-bit mode too (it was canonicalized to int32 first), and
    # issubdtype(np.generic, bfloat16) is False (it raised "Converting np.generic to a dtype")
    jnp = pytest.importorskip("jax.numpy")
    with funcgrad.enable_x64(False):
        for t in (fnp.int64, fnp.uint64, fnp.float64, fnp.complex128):
            assert (
                fnp.issubdtype(t, t)
                and fnp.issubdtype(np.dtype(t).type, t)
                and fnp.issubdtype(t, np.dtype(t))
            )
        for a, b in [(int, np.integer), (np.dtype("int64"), fnp.int64), ("float64", np.float64)]:
            assert fnp.issubdtype(a, b) == jnp.issubdtype(a, b)
    for narrow in ("bfloat16", "float8_e4m3fn", "int4", "uint2"):
        for other in (np.generic, object, np.float64, np.dtype(narrow), narrow):
            assert fnp.issubdtype(narrow, other) == jnp.issubdtype(narrow, other), (narrow, other)
        assert fnp.issubdtype(np.generic, narrow) is jnp.issubdtype(np.generic, narrow) is False
        # (the narrow scalar types stay funcgrad's, making Arrays: lax_numpy_test testDtypeWrappers)
        assert isinstance(getattr(fnp, narrow)(0), funcgrad.Array)


def test_comparisons_of_weak_operands_are_weak_bools():
    # JAX's weak-type rule holds for a bool result (jnp.equal's docstring: Array(True, dtype=bool,
    # weak_type=True)); one strong operand makes it strong; eager and jit agree
    for f in (fnp.equal, fnp.less, fnp.not_equal, funcgrad.jit(fnp.greater_equal)):
        assert f(1, 2.0).weak_type
        assert not f(fnp.float32(1), 2.0).weak_type and not f(fnp.arange(2), 1).weak_type
    assert funcgrad.lax.is_finite(1.0).weak_type and fnp.isfinite(3 - 4j).weak_type
    assert not funcgrad.lax.is_finite(fnp.float32(1)).weak_type


def test_promote_types_takes_python_types_as_weak():
    # jnp.promote_types's docstring: promote_types('uint8', int) is uint8, ('float16', float) float16
    assert fnp.promote_types("uint8", int) == fnp.promote_types(int, "uint8") == np.uint8
    assert fnp.promote_types("float16", float) == np.float16
    assert fnp.promote_types("float32", complex) == np.complex64
    assert fnp.promote_types("int8", float) == fnp.promote_types(float, int)  # (the default float)


def test_python_bools_are_strong_as_in_jax():
    # jnp.array's/asarray's docstrings: jnp.array(True) is Array(True, dtype=bool) (no weak type);
    # jit(np.isscalar)(1.0)'s Python bool result too; ints, floats and complexes stay weak
    assert not fnp.asarray(True).weak_type and not fnp.array(False).weak_type
    assert not funcgrad.jit(lambda: True)().weak_type and not funcgrad.jit(lambda b: b)(True).weak_type
    assert not fnp.logical_and(True, False).weak_type
    assert fnp.asarray(1).weak_type and fnp.asarray(1.0).weak_type and (fnp.asarray(1) + True).weak_type
    assert (fnp.int8(3) + True).dtype == np.int8


def test_isnan_reciprocal_float_power_of_python_scalars_are_weak_as_jax():
    # their docstrings: jnp.isnan(6), jnp.reciprocal(2), jnp.float_power(-3, 1.7) print weak_type=True
    assert fnp.isnan(6).weak_type and not fnp.isnan(np.arange(3)).weak_type
    assert fnp.reciprocal(2).weak_type and float(fnp.reciprocal(2)) == 0.5
    assert not fnp.reciprocal(np.float32(4)).weak_type
    assert fnp.float_power(-3, 1.7).weak_type and not fnp.float_power(np.arange(3), 2).weak_type
    assert fnp.hypot(3, 4).weak_type and float(fnp.hypot(3, 4)) == 5.0
    assert not fnp.hypot(np.float32(3), 4).weak_type


def test_strict_promotion_lattice_matches_jax_in_64_bit_mode():
    # Under 'strict' the lattice is JAX's in 64-bit mode too (NOTE: [JAX's promotion lattice]);
    # 'standard' keeps NumPy 2's there. The table is test_x32's.
    import warnings

    jax = pytest.importorskip("jax")
    from jax._src import config as jax_config

    from tests.surface.numpy.test_x32 import _lattice_table

    assert funcgrad.config.jax_enable_x64
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with funcgrad.numpy_dtype_promotion("strict"):
            ours = _lattice_table(fnp, np)
        with jax_config.enable_x64(True), jax.numpy_dtype_promotion("strict"):
            theirs = _lattice_table(jax.numpy, np)
    assert {k: v for k, v in ours.items() if v != theirs[k]} == {}
    assert ours["promote_types(float32, float64)"] == "TypePromotionError"


def test_linspace_of_integers_under_strict_promotion_as_jax():
    # (an integer's inexact type is not a promotion: JAX's linspace/geomspace work under 'strict';
    # funcgrad's asked result_type for int64 with a Python float, which the lattice refuses)
    jax = pytest.importorskip("jax")
    with funcgrad.numpy_dtype_promotion("strict"):
        ours = [fnp.linspace(np.int64(0), np.int64(4), 3), fnp.geomspace(np.uint16(1), np.uint16(4), 3)]
    with jax.numpy_dtype_promotion("strict"):
        theirs = [
            jax.numpy.linspace(np.int64(0), np.int64(4), 3),
            jax.numpy.geomspace(np.uint16(1), np.uint16(4), 3),
        ]
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def test_result_type_none_and_itemsize_none_as_jax():
    jax = pytest.importorskip("jax")
    assert fnp.result_type(None) == np.float64  # (the default float, as jax's and NumPy's)
    assert jax.numpy.result_type(None) == jax.dtypes.canonicalize_dtype(np.float64)
    for j in (funcgrad, jax):
        with pytest.raises(ValueError, match="dtype cannot be None"):
            j.dtypes.itemsize_bits(None)


def test_arange_values_as_jax():
    # Found by the fuzzer: JAX converts start and step to the dtype before start + step * i (an int
    # dtype truncates a fractional step: arange(-3, 3, 0.5, dtype=int32) repeats -3; NumPy's gives
    # -3..8), in float32 for half floats, and a float start saturates into a narrow int.
    jnp = pytest.importorskip("jax").numpy
    for args, dtype in [
        ((-3, 3, 0.5), "int32"),
        ((1, 3.7, 0.9), "int8"),
        ((0, 1, 0.1), "bfloat16"),
        ((3, -2.5, -0.7), "float16"),
        ((1e3, 1e3 + 5), "int8"),
        ((0.5, 4), "uint8"),
        ((2.5,), "int32"),
        ((0.1, 2.3, 0.3), "float32"),
    ]:
        got, want = fnp.arange(*args, dtype=dtype), jnp.arange(*args, dtype=dtype)
        assert got.dtype == want.dtype, (args, dtype)
        np.testing.assert_array_equal(
            np.asarray(got, np.float64), np.asarray(want, np.float64), err_msg=str(args)
        )


def test_result_type_of_float0_as_jax():
    # (session 20's transformation-composition fuzzer, seed 2005: a float0 gradient of an integer
    # input under allow_int reached result_type, which raised KeyError: 'V') float0 is its own
    # result type; promoting it with anything else is JAX's ValueError
    jax = pytest.importorskip("jax")
    z = np.zeros(3, jax.dtypes.float0)
    for args in [(z,), (z, z), (jax.dtypes.float0,)]:
        assert fnp.result_type(*args) == jax.numpy.result_type(*args) == jax.dtypes.float0
    for args in [(z, 1.0), (z, np.float32(1))]:
        with pytest.raises(ValueError, match="is not a valid dtype for JAX type promotion"):
            jax.numpy.result_type(*args)
        with pytest.raises(ValueError, match="is not a valid dtype for JAX type promotion"):
            fnp.result_type(*args)
    g = funcgrad.grad(lambda x, n: fnp.sum(x * n), argnums=(0, 1), allow_int=True)(np.ones(3), np.arange(3))
    assert fnp.result_type(g[1]) == jax.dtypes.float0
