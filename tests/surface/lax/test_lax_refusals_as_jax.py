"""Operands that ``jax.lax`` refuses (strict by contract) are refused by ``funcgrad.lax`` with
JAX's exception type, and accepted ones give JAX's values (jax 0.10.2 is the oracle): a table of
calls, each run through both libraries.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import funcgrad
import funcgrad.lax as flax
import funcgrad.numpy as fnp

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", True)

# (id, call of (lax, numpy) -> value)
CASES = [
    ("add_int_float", lambda lax, np_: lax.add(np_.int32(1), np_.float32(1))),
    ("add_shapes", lambda lax, np_: lax.add(np_.ones(2), np_.ones(3))),
    ("mul_int_by_float", lambda lax, np_: lax.mul(np_.ones(2, np_.int32), 1.5)),
    ("sin_int", lambda lax, np_: lax.sin(np_.int32(1))),
    ("bitwise_float", lambda lax, np_: lax.bitwise_and(1.0, 2.0)),
    ("dot_mismatch", lambda lax, np_: lax.dot(np_.ones(2), np_.ones(3))),
    ("dot_rank3", lambda lax, np_: lax.dot(np_.ones((2, 2, 2)), np_.ones(2))),
    ("dot_ok", lambda lax, np_: lax.dot(np_.ones((2, 3)), np_.arange(3.0))),
    # (the lax-parameter fuzzer's dtype probe: eagerly an OR of ANDs converted to int8, 1s)
    (
        "dot_bool_pet_int8_counts",
        lambda lax, np_: lax.dot(
            np.tri(3, dtype=bool), np.ones((3, 2), bool), preferred_element_type=np.int8
        ),
    ),
    (
        "associative_scan_negative_axis",
        lambda lax, np_: lax.associative_scan(lax.add, np_.ones((2, 3)), axis=-1),
    ),
    ("dot_positional_precision", lambda lax, np_: lax.dot(np_.ones(3), np_.ones(3), lax.Precision.DEFAULT)),
    (
        "dot_dimension_numbers",
        lambda lax, np_: lax.dot(
            np_.ones((2, 2, 3)), np_.arange(6.0).reshape(2, 3), dimension_numbers=(((2,), (1,)), ((0,), (0,)))
        ),
    ),
    ("concat_dtypes", lambda lax, np_: lax.concatenate([np_.ones(2), np_.ones(2, np_.int32)], 0)),
    ("reshape_size", lambda lax, np_: lax.reshape(np_.ones(4), (3,))),
    ("select_pred", lambda lax, np_: lax.select(np_.ones(1), np_.ones(1), np_.ones(1))),
    ("slice_bounds", lambda lax, np_: lax.slice(np_.ones(3), (0,), (4,))),
    ("squeeze_size", lambda lax, np_: lax.squeeze(np_.ones((2, 3)), (0,))),
    ("squeeze_ok", lambda lax, np_: lax.squeeze(np_.ones((1, 3)), (0,))),
    ("expand_dims_bounds", lambda lax, np_: lax.expand_dims(np_.ones(2), (3,))),
    ("expand_dims_ok", lambda lax, np_: lax.expand_dims(np_.ones(2), (-1,))),
    ("sort_bounds", lambda lax, np_: lax.sort(np_.ones(2), dimension=3)),
    ("sort_ok", lambda lax, np_: lax.sort(np_.array([3.0, 1.0]), dimension=-1)),
    ("integer_pow_float", lambda lax, np_: lax.integer_pow(np_.ones(2), 1.5)),
    ("integer_pow_ok", lambda lax, np_: lax.integer_pow(np_.arange(3.0), 3)),
    ("abs_unsigned", lambda lax, np_: lax.abs(np_.ones(2, np_.uint32))),
    ("abs_signed", lambda lax, np_: lax.abs(np_.array([-2, 3], np_.int32))),
    ("pow_int_base", lambda lax, np_: lax.pow(np_.int32(2), np_.float32(3))),
    ("transpose_perm", lambda lax, np_: lax.transpose(np_.ones((2, 3)), (0,))),
    ("shift_float", lambda lax, np_: lax.shift_left(np_.ones(2), 1)),
    # a Python int converts straight to the dtype, as JAX's (lax_test testConvertElementTypeOOB)
    ("convert_int_wraps", lambda lax, np_: lax.convert_element_type(2**32, "int32")),
    ("convert_negative_int_to_uint8", lambda lax, np_: lax.convert_element_type(-1, "uint8")),
    ("convert_big_int_to_float32", lambda lax, np_: lax.convert_element_type(2**100, "float32")),
    ("convert_huge_int_to_int32", lambda lax, np_: lax.convert_element_type(2**64, "int32")),
]


def _run(call, lax, np_):
    try:
        return call(lax, np_), None
    except Exception as e:  # the type is the result
        return None, type(e).__name__


@pytest.mark.parametrize("name,call", CASES, ids=[c[0] for c in CASES])
def test_lax_operands_as_jax(name, call):
    want, want_exc = _run(call, jax.lax, jnp)
    got, got_exc = _run(call, flax, fnp)
    assert got_exc == want_exc, (got_exc, want_exc)
    if want_exc is None:
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_typeof_refuses_containers_as_jax():
    for x in ([1], (1.0, 2.0), {"a": 1}):
        with pytest.raises(TypeError, match="not a valid JAX type"):
            funcgrad.typeof(x)
        with pytest.raises(TypeError, match="not a valid JAX type"):
            jax.typeof(x)
    assert str(funcgrad.typeof(np.ones(2, np.float32))) == str(jax.typeof(np.ones(2, np.float32)))


# (id, call) whose error JAX's words are in: the type and JAX's message (funcgrad may add its
# operation's name before it and advice after it). Cases of JAX's lax_test testSqueezeShapeCheck,
# testBroadcastInDimShapeCheck, testArgMinMax*Error, test_population_count_booleans_not_supported,
# testSplitErrors, testPadErrors, test_reduction_with_repeated_axes_error, testDynamic*SliceTypeErrors,
# testReduceWindowFailures, test_reduce_with_*_errors, testConvInvalidPadding,
# test_window_strides_dimension_shape_rule.
WORDED = [
    ("dot_positional_precision", lambda lax, np_: lax.dot(np_.ones(3), np_.ones(3), lax.Precision.DEFAULT)),
    ("dot_rank3_words", lambda lax, np_: lax.dot(np_.ones((2, 2, 2)), np_.ones(2))),
    ("squeeze_repeated", lambda lax, np_: lax.squeeze(np_.ones((1, 2, 3)), (0, 0))),
    ("squeeze_axis_3", lambda lax, np_: lax.squeeze(np_.ones((1, 2, 3)), (3,))),
    ("squeeze_axis_-4", lambda lax, np_: lax.squeeze(np_.ones((1, 2, 3)), (-4,))),
    ("squeeze_none", lambda lax, np_: lax.squeeze(np_.ones((1, 2, 3)), (None,))),
    ("bid_dims_length", lambda lax, np_: lax.broadcast_in_dim(np_.ones(2), (2, 2), (0, 1))),
    ("bid_rank", lambda lax, np_: lax.broadcast_in_dim(np_.ones((2, 2)), (2,), (0, 1))),
    ("bid_subset", lambda lax, np_: lax.broadcast_in_dim(np_.ones(2), (2, 2), (2,))),
    ("bid_sizes", lambda lax, np_: lax.broadcast_in_dim(np_.ones(2), (3,), (0,))),
    ("bid_duplicates", lambda lax, np_: lax.broadcast_in_dim(np_.ones((2, 2)), (2,), (0, 0))),
    ("argmax_float_index", lambda lax, np_: lax.argmax(np_.ones((2, 2)), 0, np_.float16)),
    ("argmin_bool_index", lambda lax, np_: lax.argmin(np_.ones((2, 2)), 0, np_.bool_)),
    ("argmin_empty", lambda lax, np_: lax.argmin(np_.ones((0, 2)), 0, np_.int32)),
    ("argmax_negative_axis", lambda lax, np_: lax.argmax(np_.ones((2, 3)), -1, np_.int32)),
    ("population_count_bool", lambda lax, np_: lax.population_count(True)),
    ("clz_float", lambda lax, np_: lax.clz(np_.float32(1.0))),
    ("split_negative", lambda lax, np_: lax.split(np_.arange(5), [-1])),
    ("split_sum", lambda lax, np_: lax.split(np_.arange(5), [6])),
    ("split_axis", lambda lax, np_: lax.split(np_.arange(5), sizes=(), axis=1)),
    ("pad_value", lambda lax, np_: lax.pad(np_.zeros(2), np_.zeros(2), [(0, 0, 0)])),
    ("pad_config_length", lambda lax, np_: lax.pad(np_.zeros(2), 0.0, [(0, 1, 0), (0, 1, 0)])),
    ("pad_interior", lambda lax, np_: lax.pad(np_.zeros(2), 0.0, [(0, 1, -1)])),
    ("pad_negative", lambda lax, np_: lax.pad(np_.zeros(2), 0.0, [(-4, 0, 1)])),
    # (a Python scalar padding value has its kind's default dtype: fuzzer seed 18002)
    ("pad_python_int_uint8", lambda lax, np_: lax.pad(np_.zeros(2, np.uint8), 0, [(1, 0, 0)])),
    ("pad_python_float_float32", lambda lax, np_: lax.pad(np_.zeros(2, np.float32), 0.5, [(0, 1, 1)])),
    # (the cumulative reductions' axis is not normalised: fuzzer seed 18001)
    ("cumsum_negative_axis", lambda lax, np_: lax.cumsum(np_.ones((2, 3)), axis=-1)),
    ("cumlogsumexp_negative_axis", lambda lax, np_: lax.cumlogsumexp(np_.ones(2), axis=-1, reverse=True)),
    ("cummax_axis_out_of_bounds", lambda lax, np_: lax.cummax(np_.ones(2), axis=1)),
    ("cumprod_bool", lambda lax, np_: lax.cumprod(np_.ones(2, bool))),
    ("cumlogsumexp_int", lambda lax, np_: lax.cumlogsumexp(np_.ones(2, np.int32))),
    # (rev's dimensions are not normalised: fuzzer seed 18001)
    ("rev_negative", lambda lax, np_: lax.rev(np_.ones((2, 3)), (-1,))),
    ("rev_past_rank", lambda lax, np_: lax.rev(np_.ones((2, 3)), (2,))),
    ("rev_repeated", lambda lax, np_: lax.rev(np_.ones((2, 3)), (0, 0))),
    ("rev_float", lambda lax, np_: lax.rev(np_.ones((2, 3)), (1.0,))),
    ("rev_int", lambda lax, np_: lax.rev(np_.ones((2, 3)), 1)),
    # (broadcasted_iota's dimension in range, not normalised: the lax-parameter fuzzer's probe)
    ("iota_scalar_shape", lambda lax, np_: lax.broadcasted_iota(np.int32, (), 0)),
    ("iota_past_rank", lambda lax, np_: lax.broadcasted_iota(np.int32, (2,), 1)),
    ("iota_negative", lambda lax, np_: lax.broadcasted_iota(np.int32, (2, 3), -1)),
    # (sort's num_keys: JAX's ValueError, before the dimension; fuzzer seed 18006)
    ("sort_num_keys_single", lambda lax, np_: lax.sort(np_.ones(3), num_keys=2)),
    ("sort_num_keys_zero", lambda lax, np_: lax.sort((np_.ones(3), np_.ones(3)), num_keys=0)),
    ("sort_num_keys_many", lambda lax, np_: lax.sort([np_.ones(3), np_.ones(3)], num_keys=3, dimension=4)),
    ("sort_no_operands", lambda lax, np_: lax.sort(())),
    # (preferred_element_type as JAX's dtype rules check it: the lax-parameter fuzzer's probe)
    (
        "dot_general_narrower_pet",
        lambda lax, np_: lax.dot_general(
            np_.ones((2, 3), np.int32),
            np_.ones((3,), np.int32),
            (((1,), (0,)), ((), ())),
            preferred_element_type=np.float16,
        ),
    ),
    (
        "dot_bool_int8_pet_bool",
        lambda lax, np_: lax.dot(np_.ones(3, bool), np_.ones(3, np.int8), preferred_element_type=np.bool_),
    ),
    (
        "conv_pet_signedness",
        lambda lax, np_: lax.conv(
            np_.ones((1, 1, 3), np.int8),
            np_.ones((1, 1, 2), np.int8),
            (1,),
            "VALID",
            preferred_element_type=np.uint16,
        ),
    ),
    (
        "conv_pet_float_to_complex",
        lambda lax, np_: lax.conv(
            np_.ones((1, 1, 3)), np_.ones((1, 1, 2)), (1,), "VALID", preferred_element_type=np.complex128
        ),
    ),
    (
        "conv_pet_narrower_int",
        lambda lax, np_: lax.conv(
            np_.ones((1, 1, 3), np.int32),
            np_.ones((1, 1, 2), np.int32),
            (1,),
            "VALID",
            preferred_element_type=np.int8,
        ),
    ),
    ("reduce_repeated_axes", lambda lax, np_: lax.reduce(np_.arange(3), 0, lax.add, (0, 0))),
    # (the lax-parameter fuzzer: a generic reduction's out-of-range dimension is JAX's IndexError,
    # a monoid's its ValueError)
    (
        "reduce_generic_axis_out_of_range",
        lambda lax, np_: lax.reduce(np_.ones(3), 0.0, lambda a, b: a + b, (1,)),
    ),
    ("reduce_monoid_axis_out_of_range", lambda lax, np_: lax.reduce(np_.ones(3), 0.0, lax.add, (1,))),
    # (the lax-parameter fuzzer, seed 18015: jax's reversed associative scan takes no negative axis)
    (
        "associative_scan_reverse_negative_axis",
        lambda lax, np_: lax.associative_scan(lax.add, np_.ones((2, 3)), reverse=True, axis=-1),
    ),
    (
        "dynamic_slice_index_types",
        lambda lax, np_: lax.dynamic_slice(np_.ones((3, 4)), (np.int32(1), np.int16(2)), (2, 2)),
    ),
    (
        "dynamic_slice_python_int_and_int32",
        lambda lax, np_: lax.dynamic_slice(np_.ones((3, 4)), (np.int32(1), 2), (2, 2)),
    ),
    ("dynamic_slice_float_index", lambda lax, np_: lax.dynamic_slice(np_.ones((3, 4)), (1.0, 2), (2, 2))),
    (
        "reduce_window_empty_window",
        lambda lax, np_: lax.reduce_window(np_.ones((1,)), 0.0, lax.add, (0,), (1,), "VALID"),
    ),
    (
        "reduce_window_zero_stride",
        lambda lax, np_: lax.reduce_window(np_.ones((1,)), 0.0, lax.add, (1,), (0,), "VALID"),
    ),
    (
        "reduce_window_vector_init",
        lambda lax, np_: lax.reduce_window(
            np_.ones((4, 4)), np_.zeros((1,)), lax.max, (2, 2), (2, 2), "VALID"
        ),
    ),
    (
        "reduce_window_output_tree",
        lambda lax, np_: lax.reduce_window(np_.ones((1,)), 0.0, lambda x, y: [x + y], (1,), (1,), "VALID"),
    ),
    # (computed or another type where JAX raises: reshape's dimensions not a permutation, negative
    # sizes, a float iota size truncated)
    ("reshape_dimensions_not_a_permutation", lambda lax, np_: lax.reshape(np_.ones((2, 3)), (3, 2), (0,))),
    ("reshape_negative_sizes", lambda lax, np_: lax.reshape(np_.ones((2, 3)), (-1, 6))),
    ("broadcast_negative_sizes", lambda lax, np_: lax.broadcast(np_.ones((2, 3)), (-1,))),
    ("full_negative_shape", lambda lax, np_: lax.full((2, -1), 0.0)),
    ("iota_float_size", lambda lax, np_: lax.iota(np.int32, 2.5)),
    ("top_k_k_too_large", lambda lax, np_: lax.top_k(np_.ones((2, 3)), 4)),
    ("top_k_k_negative", lambda lax, np_: lax.top_k(np_.ones((2, 3)), -1)),
    ("top_k_of_a_scalar", lambda lax, np_: lax.top_k(np_.float32(1.0), 1)),
    ("top_k_of_complex", lambda lax, np_: lax.top_k(np_.ones(2, np_.complex64), 1)),  # (session 22)
    ("bitcast_to_bool", lambda lax, np_: lax.bitcast_convert_type(np_.ones(2, np.float32), np.bool_)),
    ("bitcast_from_bool", lambda lax, np_: lax.bitcast_convert_type(np_.ones(2, bool), np.int8)),
    ("bitcast_complex", lambda lax, np_: lax.bitcast_convert_type(np_.ones(2, np.complex64), np.float32)),
    # (JAX's shape-rule words for windows of the wrong rank; funcgrad said "needs one entry per
    # dimension of the operand")
    (
        "reduce_window_window_rank",
        lambda lax, np_: lax.reduce_window(np_.ones(4), 0.0, lax.add, (2, 2), (1,), "VALID"),
    ),
    (
        "reduce_window_strides_rank",
        lambda lax, np_: lax.reduce_window(np_.ones(4), 0.0, lax.add, (2,), (1, 1), "VALID"),
    ),
    (
        "reduce_window_max_base_dilation_rank",
        lambda lax, np_: lax.reduce_window(np_.ones(4), -np.inf, lax.max, (2,), (1,), "VALID", (1, 1)),
    ),
    ("reduce_tree", lambda lax, np_: lax.reduce({"x": np_.ones(5)}, {"y": 0.0}, lambda x, y: x, [0])),
    (
        "reduce_vector_init",
        lambda lax, np_: lax.reduce({"x": np_.ones(5)}, {"x": np_.ones(5)}, lambda x, y: x, [0]),
    ),
    (
        "conv_strides",
        lambda lax, np_: lax.conv(np_.zeros((1, 1, 3, 3)), np_.zeros((1, 1, 1, 1)), [1], "SAME"),
    ),
    (
        "conv_patches_padding",
        lambda lax, np_: lax.conv_general_dilated_patches(np_.ones((1, 10, 10, 5)), (5, 5), (1, 1), (3, 3)),
    ),
    (
        "dynamic_update_slice_index_types",
        lambda lax, np_: lax.dynamic_update_slice(
            np_.ones((3, 4)), np_.zeros((2, 2)), (np.int32(1), np.int16(2))
        ),
    ),
    # (the lax-parameter fuzzer, seed 20010: the shape rule's ValueError before the dtype rule's
    # TypeError, a narrower preferred_element_type; no transpose_kernel: jax's rev caches its
    # dimensions (1.0,) as (1,), and its refusal of them, which rev_float and the kernel's rev share)
    (
        "conv_transpose_features_before_pet",
        lambda lax, np_: lax.conv_transpose(
            np_.ones((2, 1, 2, 2)),
            np_.ones((3, 1, 2, 2)),
            (1, 1),
            "SAME",
            dimension_numbers=("WCHN", "HWIO", "NCHW"),
            preferred_element_type=np.float16,
        ),
    ),  # fmt: skip
]


@pytest.mark.parametrize("name,call", WORDED, ids=[c[0] for c in WORDED])
def test_lax_errors_in_jax_words(name, call):
    with pytest.raises(Exception) as want:
        call(jax.lax, jnp)
    with pytest.raises(type(want.value)) as got:
        call(flax, fnp)
    assert str(want.value) in str(got.value)


def test_slice_in_dim_refuses_bounds_outside_the_axis_as_jax():
    # (JAX translates None and negative bounds, then lax.slice refuses what is outside the axis;
    # funcgrad clipped as a Python slice does)
    x = np.arange(6.0).reshape(2, 3)
    for args in ((0, 5), (-5, 1), (2, 1), (0, 4, 1, 1)):
        with pytest.raises(TypeError):
            jax.lax.slice_in_dim(x, *args)
        with pytest.raises(TypeError):
            flax.slice_in_dim(x, *args)
    for args in ((None, None), (-1, None), (0, -1, 1, 1), (1, 3, 2, 1)):
        np.testing.assert_array_equal(flax.slice_in_dim(x, *args), jax.lax.slice_in_dim(x, *args))


def test_padtype_to_pads_gives_python_ints_as_jax():
    shapes = [np.array(v, np.int64) for v in ((10, 10), (5, 5), (1, 1))]
    for padding in ("SAME", "SAME_LOWER", "VALID"):
        got = flax.padtype_to_pads(*shapes, padding)
        assert got == list(jax.lax.padtype_to_pads(*shapes, padding))
        assert all(type(v) is int for pair in got for v in pair)


def test_polygamma_refuses_a_derivative_in_its_order_as_jax():
    # (the fuzzer's CI draw: grad(lax.polygamma(x, x)) computed, jax raises)
    for lib, lx in ((funcgrad, flax), (jax, jax.lax)):
        with pytest.raises(ValueError, match="polygamma gradient with respect to m is not supported"):
            lib.grad(lambda x, lx=lx: lx.polygamma(x, x))(1.0)
    got = funcgrad.grad(lambda x: flax.polygamma(2.0, x))(1.5)
    np.testing.assert_allclose(got, jax.grad(lambda x: jax.lax.polygamma(2.0, x))(1.5), rtol=1e-12)


def test_derivatives_of_an_empty_mean_are_nan_as_jax():
    # mean of an empty axis is 0 / 0 through the division, so its tangent is NaN too (it was a
    # NaN constant with a zero derivative; the fuzzer's CI draw: jvp of np.average of [])
    for x in (np.zeros((0,)), np.zeros((2, 0), np.float32), np.zeros((0, 3), np.complex128)):
        for axis in (None, -1):
            want = jax.jvp(lambda v, axis=axis: jnp.mean(v, axis=axis), (x,), (x,))
            mean = functools.partial(fnp.mean, axis=axis)
            average = functools.partial(fnp.average, axis=axis)
            for got in (
                funcgrad.jvp(mean, (x,), (x,)),
                funcgrad.jit(lambda v, average=average: funcgrad.jvp(average, (v,), (v,)))(x),
            ):
                for g, w in zip(got, want):
                    assert g.dtype == w.dtype and g.shape == w.shape
                    np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
