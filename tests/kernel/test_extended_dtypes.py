"""A library's extended dtype (NOTE: [extended dtypes] in funcgrad/kernel/extended.py): the same
definition -- flax's fp8_meta32 pattern, a float32 representation whose cotangents accumulate by
max -- made for funcgrad and for jax, run through conversions, jit, grad, scan, vmap and
``numpy.zeros``, against jax."""

import dataclasses
import functools

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.dtypes import extended
from funcgrad.kernel.extended import EArray, ExtendedDType
from funcgrad.kernel.ir import ShapedArray

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)  # (the oracle in funcgrad's default 64-bit mode)
jnp = jax.numpy
from jax._src import core as jax_core  # noqa: E402
from jax._src import dtypes as jax_dtypes  # noqa: E402


def _jax_result_handler(aval, out_sharding, committed):
    # (what jax needs to make an eager array of the dtype, as flax's rules give it; funcgrad makes
    # its EArrays itself)
    from jax._src import earray
    from jax._src.interpreters import pxla

    make = pxla.global_result_handlers[jax_core.ShapedArray]
    phys = make(jax_core.physical_aval(aval), out_sharding, committed)
    return lambda bufs: earray.EArray(aval, phys(bufs))


def _max_dtype(lib_lax, shaped_array, base, extended_type, result_handler=None):
    """flax's fp8_meta32 (flax/linen/fp8_ops.py), written against one library."""

    class Rules:
        global_sharded_result_handler = staticmethod(result_handler)

        @staticmethod
        def physical_element_aval(dtype):
            return shaped_array((), dtype.float_dtype)

        @staticmethod
        def convert_from(edtype, other):
            return edtype.float_dtype == other

        @staticmethod
        def convert_to(other, edtype):
            return edtype.float_dtype == other

        @staticmethod
        def add(dt, x, y):
            from_meta = functools.partial(lib_lax.convert_element_type, new_dtype=dt.float_dtype)
            return lib_lax.convert_element_type(lib_lax.max(from_meta(x), from_meta(y)), dt)

        @staticmethod
        def zero(dt):
            return lib_lax.convert_element_type(np.array(-np.inf, dt.float_dtype), dt)

        @staticmethod
        def tangent_dtype(dtype):
            return dtype

        @staticmethod
        def full(shape, fill_value, dtype):
            fill = lib_lax.convert_element_type(fill_value, dtype.float_dtype)
            return lib_lax.convert_element_type(lib_lax.full(shape, fill, dtype.float_dtype), dtype)

    class meta_type(extended_type):  # noqa: N801
        pass

    @dataclasses.dataclass(frozen=True)
    class MaxDType(base):
        float_dtype: np.dtype
        _rules: type = Rules
        type: type = meta_type

        def __repr__(self) -> str:
            return "fm32"

        name = property(__repr__)

    return MaxDType(np.dtype(np.float32))


FM = _max_dtype(lax, ShapedArray, ExtendedDType, extended)
JFM = _max_dtype(
    jax.lax, jax_core.ShapedArray, jax_dtypes.ExtendedDType, jax_dtypes.extended, _jax_result_handler
)


def _program(lib, lib_lax, lib_np, fm):
    """flax's Fp8Test.test_fp8_meta_dtype: a scan reuses two values of the max dtype, so their
    cotangents are the max (the rules' add) over the iterations, not the sum."""

    @functools.partial(lib.custom_vjp, nondiff_argnums=())
    def record(x, scale, history):
        return x

    def record_fwd(x, scale, history):
        s = lib_lax.convert_element_type(scale, np.float32)
        h = lib_lax.convert_element_type(history, np.float32)
        amax = lib_np.max(lib_np.abs(x))
        new_h = lib_np.roll(h, -1).at[0].set(amax)
        new_s = s * 0 + lib_np.max(h) + 1.0
        return x, (lib_lax.convert_element_type(new_s, fm), lib_lax.convert_element_type(new_h, fm))

    def record_bwd(res, g):
        return (g, *res)

    record.defvjp(record_fwd, record_bwd)

    def outer(x, ah, sf):
        ah_m = lib_lax.convert_element_type(ah, fm)
        sf_m = lib_lax.convert_element_type(sf, fm)

        def body(carry, _):
            return record(carry * 1.5, sf_m, ah_m), None

        out, _ = lib_lax.scan(body, lib_np.array([x], np.float32), None, length=3)
        return out[0]

    return lib.grad(outer, (0, 1, 2))


@pytest.mark.parametrize("use_jit", [True, False])
def test_scan_cotangents_accumulate_with_the_dtypes_add_as_jax(use_jit):
    got_f = _program(funcgrad, lax, fnp, FM)
    want_f = _program(jax, jax.lax, jnp, JFM)
    if use_jit:
        got_f, want_f = funcgrad.jit(got_f), jax.jit(want_f)
    ah, sf = np.array([0.5, 4.0, 1.0], np.float32), np.array([1.0], np.float32)
    for x in (2.0, 3.0):
        got, want = got_f(np.float32(x), ah, sf), want_f(np.float32(x), ah, sf)
        for g, w in zip(got, want, strict=True):
            assert np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        # the history's cotangent is the max over the three iterations (a sum would triple it)
        assert np.asarray(got[1])[0] == pytest.approx(x * 1.5**3)
        ah, sf = np.asarray(got[1]), np.asarray(got[2])


def test_conversions_jaxpr_and_arrays_as_jax():
    x = np.array([1.0, -2.0], np.float32)

    def f(lib_lax, fm):
        return lambda v: lib_lax.convert_element_type(lib_lax.convert_element_type(v, fm), np.float32)

    assert str(funcgrad.make_jaxpr(f(lax, FM))(x)).count("fm32[2]") == 1
    assert "fm32[2]" in str(jax.make_jaxpr(f(jax.lax, JFM))(x))
    # an array of the dtype, eagerly and out of jit, through jit and back
    e = lax.convert_element_type(x, FM)
    assert type(e) is EArray and e.dtype == FM and e.shape == (2,)
    double = funcgrad.jit(lambda a: lax.convert_element_type(lax.convert_element_type(a, np.float32) * 2, FM))
    doubled = double(e)
    assert type(doubled) is EArray and doubled.dtype == FM
    np.testing.assert_array_equal(np.asarray(lax.convert_element_type(doubled, np.float32)), 2 * x)
    # astype, the method and the function, as jax's (flax's fp8 guide: scale.astype(fmax32))
    for m in (fnp.asarray(x).astype(FM), fnp.astype(x, FM)):
        assert type(m) is EArray and m.dtype == FM
        np.testing.assert_array_equal(np.asarray(fnp.astype(m, np.float32)), x)
    # The derivative through both conversions is the identity's (closed form 2v): jax 0.10.2's
    # from_edtype transpose reads x.dtype of an UndefinedPrimal and raises AttributeError there.
    grad_of_astype = funcgrad.jit(funcgrad.grad(lambda v: fnp.sum(v.astype(FM).astype(np.float32) * v)))
    np.testing.assert_array_equal(grad_of_astype(x), 2 * x)
    assert funcgrad.dtypes.issubdtype(FM, funcgrad.dtypes.extended)
    assert not funcgrad.dtypes.issubdtype(FM, funcgrad.dtypes.prng_key)
    assert jax_dtypes.issubdtype(JFM, jax_dtypes.extended)


@pytest.mark.parametrize("make", ["zeros", "ones", "full"])
def test_numpy_creation_uses_the_dtypes_full_as_jax(make):
    def build(lib_np, fm):
        args = ((2, 3), 7.0) if make == "full" else ((2, 3),)
        return getattr(lib_np, make)(*args, dtype=fm)

    got, want = build(fnp, FM), build(jnp, JFM)
    assert got.dtype == FM and got.shape == want.shape == (2, 3)
    np.testing.assert_array_equal(
        np.asarray(lax.convert_element_type(got, np.float32)),
        np.asarray(jax.lax.convert_element_type(want, np.float32)),
    )


def test_vmap_of_conversions_as_jax():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)

    def f(lib_lax, fm):
        return lambda v: lib_lax.convert_element_type(lib_lax.convert_element_type(v, fm), np.float32) + 1

    np.testing.assert_array_equal(funcgrad.vmap(f(lax, FM))(x), jax.vmap(f(jax.lax, JFM))(x))


def test_refused_conversions_say_why_as_jax():
    for lib_lax, fm in ((lax, FM), (jax.lax, JFM)):
        with pytest.raises(ValueError, match="Cannot convert_element_type from int32 to fm32"):
            lib_lax.convert_element_type(np.int32(1), fm)
    with pytest.raises(ValueError, match="Cannot convert_element_type from fm32 to float64"):
        lax.convert_element_type(lax.convert_element_type(np.float32(1), FM), np.float64)
