"""JAX's 32-bit mode (``jax_enable_x64=False``, NOTE: [x64 mode] in funcgrad/kernel/dtypes.py):
dtypes, weak types and values of representative calls equal jax 0.10.2's in its default mode.

Each case is ``lambda j, jnp, lax, np: ...`` run once with ``j = funcgrad`` and once with
``j = jax`` (each in its own 32-bit mode: jax's scoped ``enable_x64(False)``, funcgrad's flag set
by a fixture that restores it, so no other test sees a changed mode).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funcgrad
import funcgrad.lax as flax
import funcgrad.numpy as fnp

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax as jlax  # noqa: E402
from jax._src import config as _jax_config  # noqa: E402

# tests/conftest.py checks that no test leaves the 32-bit mode set; its module-scoped ``x32``
# fixture keeps it set across this module's tests (those that ask for it) on purpose.
RUNS_IN_X32 = True


def _f(x):
    return (x * x).sum() * 2.0


CASES = {
    # creation and its defaults
    "zeros": lambda j, jnp, lax, np: jnp.zeros(3),
    "ones_int": lambda j, jnp, lax, np: jnp.ones((2,), int),
    "zeros_float": lambda j, jnp, lax, np: jnp.zeros(2, float),
    "full_float": lambda j, jnp, lax, np: jnp.full((2,), 1.5),
    # Python's round() of an Array without ndigits is of the default int dtype, strong, as JAX's
    # (funcgrad's stayed float); with ndigits it is numpy.round's
    "python_round": lambda j, jnp, lax, np: (
        round(jnp.array(2.5)),
        round(jnp.array([1.5, 2.5, -0.5])),
        round(jnp.array(3)),
        round(jnp.float32(2.567), 0),
        j.jit(lambda a: round(a))(2.5),
    ),
    "full_int": lambda j, jnp, lax, np: jnp.full((2,), 3),
    # a Python int fill converts as a NumPy int, wrapping into dtype (random_test testThreefry2x32Large:
    # 0x85a308d3 into uint32 was an int32 operand's OverflowError)
    "full_uint32_beyond_int32": lambda j, jnp, lax, np: (
        jnp.full((2,), 0x85A308D3, jnp.uint32),
        jnp.full((2,), -1, jnp.uint32),
        jnp.full((2,), 2**40, jnp.uint32),
    ),
    # vector_norm of integers computes in their dtype (x * x and abs wrap; ord=1 and inf stay integers;
    # a general ord's constants are integers too): jax's formulas (the fuzzer; funcgrad converted first)
    "vector_norm_of_integers": lambda j, jnp, lax, np: (
        tuple(
            jnp.linalg.vector_norm(np.array([-128, 127, 3], np.int8), ord=o)
            for o in (2, 1, np.inf, -np.inf, 3, 0.5)
        )
        + (
            jnp.linalg.vector_norm(np.array([True, False, True]), ord=1),
            jnp.linalg.norm(np.array([3, 4], np.uint8)),
        )
    ),
    "eye": lambda j, jnp, lax, np: jnp.eye(2),
    "identity": lambda j, jnp, lax, np: jnp.identity(2),
    "tri": lambda j, jnp, lax, np: jnp.tri(3),
    "arange": lambda j, jnp, lax, np: jnp.arange(5),
    "arange_float": lambda j, jnp, lax, np: jnp.arange(0.0, 1.0, 0.25),
    # a bitcast to the same dtype gives a strong value, as every bitcast (lax_test; it kept weak)
    "bitcast_same_dtype_of_weak": lambda j, jnp, lax, np: lax.bitcast_convert_type(
        jnp.asarray(2.0), np.float32
    ),
    # a Python int that only x's dtype holds updates a uint32 in it (JAX's issue 15505; was OverflowError)
    "at_set_uint32_max": lambda j, jnp, lax, np: jnp.zeros(2, jnp.uint32).at[0].set(2**32 - 1),
    # power reads a concrete 0-d integer exponent with operator.index (an integer_pow, weak eagerly)
    "power_concrete_int_exponent": lambda j, jnp, lax, np: (
        jnp.power(2, jnp.asarray(3)),
        jnp.asarray(3) ** 2,
    ),
    "power_traced_int_exponent": lambda j, jnp, lax, np: j.jit(lambda e: 2**e)(jnp.asarray(3)),
    "linspace": lambda j, jnp, lax, np: jnp.linspace(0, 1, 5),
    # JAX's formula start * (1 - t) + stop * t (NumPy's start + i * step rounded otherwise in 16 bits)
    "linspace_bfloat16": lambda j, jnp, lax, np: jnp.linspace(-1.0125895, 5, 7, dtype=jnp.bfloat16),
    # a Python scalar goes straight to the float of an inexact function (it was wrapped to int8 first:
    # int8 / 300 divided by 44, uint8 / -3 by 253)
    "inexact_of_int8_and_big_scalar": lambda j, jnp, lax, np: (
        jnp.asarray(np.int8([1, 2])) / 300,
        jnp.true_divide(np.uint8([3]), -3),
        jnp.arctan2(np.int8([1]), 300),
        jnp.logaddexp(np.uint8([1]), 300),
    ),
    # a fill_value converts as lax converts: -7 wraps in uint32 (eagerly it was NumPy's OverflowError)
    "take_fill_wraps": lambda j, jnp, lax, np: (
        jnp.asarray(np.uint32([1, 4])).at[-5].get(mode="fill", fill_value=-7),
        jnp.take(np.uint32([1, 4]), np.array([5, 0]), mode="fill", fill_value=-7),
    ),
    "zeros_like_np": lambda j, jnp, lax, np: jnp.zeros_like(np.ones(2)),
    "ones_like_np_int": lambda j, jnp, lax, np: jnp.ones_like(np.arange(3)),
    "indices": lambda j, jnp, lax, np: jnp.indices((2, 3)),
    # values entering
    "asarray_np_f64": lambda j, jnp, lax, np: jnp.asarray(np.ones(2)),
    "asarray_np_i64": lambda j, jnp, lax, np: jnp.asarray(np.arange(3)),
    "asarray_np_u64": lambda j, jnp, lax, np: jnp.asarray(np.uint64(3)),
    "asarray_np_c128": lambda j, jnp, lax, np: jnp.asarray(np.ones(2, np.complex128)),
    "asarray_np_scalar": lambda j, jnp, lax, np: jnp.asarray(np.float64(1.5)),
    "asarray_float": lambda j, jnp, lax, np: jnp.asarray(2.0),
    # (JAX's lax_numpy_test) Python scalars in a list beside NumPy scalars are weak (NumPy: int64)
    "array_list_python_beside_np": lambda j, jnp, lax, np: (
        jnp.array([0, np.int16(1)]),
        jnp.array([[0.0, np.float16(1)]]),
        j.jit(jnp.array)([0.0, np.float16(1)]),
    ),
    # (JAX's lax_numpy_test) diff n=0 adds no prepend/append; linspace's step is a 0-d NaN for
    # num 0 (or 1 with endpoint) and in the requested float16; delete(assume_unique_indices=) of
    # 2-D positions; trace over (axis1 > axis2) under jit; roll by an array of shifts; unravel_index
    # in the indices' dtype; unwrap of integers with an integer period stays integer
    "diff_n0": lambda j, jnp, lax, np: jnp.diff(jnp.arange(4), n=0, prepend=1, append=2),
    "linspace_degenerate_steps": lambda j, jnp, lax, np: (
        *jnp.linspace(0.0, jnp.ones((2, 2)), 0, endpoint=False, retstep=True, dtype=jnp.float16),
        *jnp.linspace(0.0, jnp.ones(2), 1, retstep=True),
        *jnp.linspace(0, 1, 5, retstep=True, dtype=jnp.float16),
    ),
    "delete_unique_2d_positions": lambda j, jnp, lax, np: (
        jnp.delete(jnp.arange(12).reshape(3, 4), np.array([[0, 3]]), axis=-1, assume_unique_indices=True),
        jnp.delete(jnp.arange(3).reshape(3, 1), np.zeros((3, 0), int), axis=1, assume_unique_indices=True),
    ),
    "trace_axes_reversed_jit": lambda j, jnp, lax, np: j.jit(
        lambda x: jnp.trace(x, offset=-1, axis1=2, axis2=1, dtype=jnp.uint8)
    )(jnp.ones((2, 3, 4))),
    "roll_by_an_array": lambda j, jnp, lax, np: (
        j.jit(lambda x, s: jnp.roll(x, s, axis=(-2,)))(jnp.arange(12).reshape(3, 4), jnp.array([-2])),
        jnp.roll(jnp.arange(12).reshape(3, 4), jnp.array([1, 1]), axis=0),
    ),
    "unravel_index_dtypes": lambda j, jnp, lax, np: (
        *jnp.unravel_index(jnp.array([1, 9], jnp.uint16), (2, 1, 4)),
        *jnp.unravel_index(3, (2, 4)),
    ),
    # deg2rad's constant is lax._const: strong beside a weak array that is not 0-d (fuzzer, seed 13018)
    "rad2deg_of_bools_and_scalars": lambda j, jnp, lax, np: (
        jnp.rad2deg(np.array([True, False])),
        jnp.deg2rad(jnp.ceil(np.array([1, 2], np.int8)) ** 0.5),
        jnp.radians(2.0),
    ),
    # flip of no axes is lax.rev (a float64 primal under jvp becomes float32; fuzzer, seed 13013)
    "flip_0d_under_jvp_in_linearize": lambda j, jnp, lax, np: j.linearize(
        lambda v: j.jvp(lambda u: jnp.flip(u), (v,), (np.float32(0.5),))[0], np.array(1.0)
    )[0],
    "unwrap_integers": lambda j, jnp, lax, np: jnp.unwrap(jnp.array([1, 5, 2, 9, -7], jnp.int16), period=4),
    # (JAX's lax_numpy_test) JAX's keywords: argsort(dtype=), corrcoef(dtype=),
    # ravel_multi_index(dtype=) and its result type (int16 indices: int16) with broadcast indices,
    # take_along_axis(mode='one_hot', wrap_negative_indices=), vecdot(preferred_element_type=)
    "jax_keywords": lambda j, jnp, lax, np: (
        jnp.argsort(jnp.array([3.0, 1, 2, 1]), descending=True, dtype=jnp.uint8),
        jnp.corrcoef(jnp.arange(5), jnp.arange(5) ** 2, dtype="bfloat16"),
        jnp.ravel_multi_index(
            (jnp.array([0, 1], jnp.int16), jnp.array([[1], [2]], jnp.int16)), (2, 3), order="F"
        ),
        j.jit(lambda a, b: jnp.ravel_multi_index((a, b), (2, 3), mode="ignore", dtype=jnp.uint8))(
            jnp.array([0, 1]), jnp.array([2, 2])
        ),
        jnp.ravel_multi_index((jnp.array([0, 5]), jnp.array([2, -1])), (2, 3), mode="wrap"),
        jnp.take_along_axis(
            jnp.array([10, 20, 30]), jnp.array([-1, -2]), 0, mode="clip", wrap_negative_indices=False
        ),
        jnp.take_along_axis(jnp.array([10, 20, 30.0]), jnp.array([-1, 1]), 0, wrap_negative_indices=False),
        jnp.take_along_axis(jnp.arange(12.0).reshape(3, 4), jnp.array([[0, 5, -1, -7]]), 1, mode="one_hot"),
        jnp.vecdot(
            jnp.ones((2, 3), jnp.int8), jnp.arange(3, dtype=jnp.int8), preferred_element_type=jnp.float32
        ),
    ),
    # (JAX's lax_numpy_test) eye/tri of a traced diagonal offset; iscomplexobj of a list under jit
    "eye_tri_traced_k": lambda j, jnp, lax, np: (
        j.jit(lambda k: jnp.eye(3, 4, k=k, dtype=jnp.int8))(1),
        j.jit(lambda k: jnp.tri(4, 3, k=k))(-1),
        j.jit(jnp.iscomplexobj)([1.0, np.complex64(1)]),
    ),
    # (JAX's lax_numpy_test) interp ignores left/right with a period (raised ValueError)
    "interp_period_ignores_left_right": lambda j, jnp, lax, np: jnp.interp(
        jnp.array([-2.0, 0.3, 5.0]), jnp.arange(-17.0, 0), jnp.arange(17.0) ** 2, right=1, period=0.59
    ),
    # (JAX's lax_numpy_test) mgrid[()] is an empty integer array (raised ValueError)
    "mgrid_of_nothing": lambda j, jnp, lax, np: jnp.mgrid[()],
    # (JAX's lax_numpy_test) unravel_index with the shape traced (jit of both arguments)
    "unravel_index_traced_shape": lambda j, jnp, lax, np: j.jit(jnp.unravel_index)(
        jnp.array([1, 2, -1, 9, -9], jnp.int8), (2, 1, 4)
    ),
    # (JAX's lax_numpy_test) unpackbits(count=) past the bits there are pads with zeros (was cut)
    "unpackbits_count_past_the_bits": lambda j, jnp, lax, np: jnp.unpackbits(
        jnp.arange(6, dtype=jnp.uint8).reshape(1, 2, 3), axis=1, count=20, bitorder="little"
    ),
    # (JAX's lax_numpy_test) insert at a traced position (ConcretizationTypeError before)
    "insert_traced_position": lambda j, jnp, lax, np: (
        j.jit(lambda x, i, v: jnp.insert(x, i, v, axis=1))(jnp.arange(6.0).reshape(2, 3), -1, 9.0),
        j.jit(lambda x, i, v: jnp.insert(x, i, v, axis=0))(
            jnp.arange(6).reshape(2, 3), jnp.array([0, 2]), jnp.array([7, 8, 9])
        ),
    ),
    # (JAX's array_api_test) the inspection namespace in 32-bit mode: 32-bit defaults and dtypes
    "array_api_info": lambda j, jnp, lax, np: (
        f"{jnp.__array_namespace_info__().default_dtypes()} "
        f"{sorted(jnp.__array_namespace_info__().dtypes())} {jnp.__array_namespace_info__().default_device()}"
    ),
    # (JAX's lax_numpy_test) iinfo/finfo are the named type's limits, not its 32-bit counterpart's
    "iinfo_finfo_of_64_bit_types": lambda j, jnp, lax, np: (
        f"{jnp.iinfo(jnp.int64).min} {jnp.iinfo(int).bits} {jnp.finfo(float).bits} "
        f"{jnp.finfo(jnp.complex128).bits} {jnp.finfo('float64').eps}"
    ),
    "asarray_int": lambda j, jnp, lax, np: jnp.asarray(2),
    "asarray_complex": lambda j, jnp, lax, np: jnp.asarray(1j),
    "array_list_float": lambda j, jnp, lax, np: jnp.array([1.0, 2.0]),
    "array_list_int": lambda j, jnp, lax, np: jnp.array([1, 2]),
    "device_put": lambda j, jnp, lax, np: j.device_put(np.ones(2)),
    # arithmetic with Python scalars and NumPy operands
    "int_plus_float": lambda j, jnp, lax, np: jnp.arange(3) + 1.5,
    "f32_times_2": lambda j, jnp, lax, np: jnp.ones(2) * 2,
    "weak_int_sum": lambda j, jnp, lax, np: jnp.asarray(2) + 3,
    "weak_float_mul": lambda j, jnp, lax, np: jnp.asarray(2.0) * 3,
    "sin_np": lambda j, jnp, lax, np: jnp.sin(np.ones(2)),
    "add_np_int": lambda j, jnp, lax, np: jnp.add(np.ones(2), 1),
    "np_plus_array": lambda j, jnp, lax, np: np.float64(2.0) * jnp.ones(2),
    "i32_plus_u32": lambda j, jnp, lax, np: jnp.arange(3, dtype=jnp.int32) + jnp.arange(3, dtype=jnp.uint32),
    "int_div": lambda j, jnp, lax, np: jnp.arange(3) / 2,
    "sqrt_int": lambda j, jnp, lax, np: jnp.sqrt(2),
    "exp_float": lambda j, jnp, lax, np: jnp.exp(1.0),
    "power": lambda j, jnp, lax, np: jnp.arange(3.0) ** 2,
    "fmod_bool": lambda j, jnp, lax, np: jnp.fmod(np.array([True, False]), np.array([True, True])),
    "floor_divide_bool": lambda j, jnp, lax, np: jnp.floor_divide(np.array([True, False]), True),
    "shifts_bool": lambda j, jnp, lax, np: (
        jnp.left_shift(np.array([True, False]), np.array([True, True])),
        jnp.right_shift(np.array([True, False]), True),
    ),
    "where_scalars": lambda j, jnp, lax, np: jnp.where(np.array([True, False]), 1.0, 2),
    # JAX's rules where NumPy 2's differ (64-bit mode keeps NumPy's): a Python int operand is an int32
    # converted with wrap-around; small integers' cumulative sums and products keep their dtype;
    # integer convolutions are float32; a bool squared is an int32
    "python_int_wraps": lambda j, jnp, lax, np: (
        jnp.asarray(np.uint8([3, 250])) + 300,
        jnp.maximum(jnp.asarray(np.uint8([3])), -1),
        jnp.asarray(np.int8([1])) + 70000,
        jnp.asarray(np.uint32([1])) + -1,
        jnp.asarray(np.uint8([1, 2])) < 300,
        jnp.full(2, 300, jnp.uint8),
        jnp.unique(jnp.asarray(np.uint8([3, 250])), size=3, fill_value=-1),
        j.jit(lambda a: a + 300)(np.uint8([1])),
    ),
    "cumulative_small_ints": lambda j, jnp, lax, np: (
        jnp.cumsum(np.int8([100, 100, 100])),
        jnp.cumprod(np.int16([300, 300])),
        jnp.nancumsum(np.uint8([200, 100])),
        jnp.cumulative_prod(np.int8([100, 2])),
        jnp.cumulative_sum(np.int8([100, 100])),
        jnp.cumsum(np.array([True, True])),
    ),
    "convolve_ints": lambda j, jnp, lax, np: (
        jnp.convolve(np.int32([1, 2]), np.int32([1, 3])),
        jnp.correlate(np.array([True, False]), np.array([True, True])),
        jnp.convolve(np.int8([1, 2]), np.float16([1, 3])),
    ),
    "square_bool": lambda j, jnp, lax, np: (jnp.square(np.array([True, False])), jnp.square(True)),
    # JAX's lattice: an integer with float16 is float16 (NumPy: float32)
    "int_with_float16": lambda j, jnp, lax, np: (
        jnp.asarray(np.int32([3])) + jnp.ones(1, jnp.float16),
        jnp.asarray(np.uint16([3])) * np.float16(0.5),
    ),
    "int_with_float16_rule": lambda j, jnp, lax, np: (
        f"{jnp.promote_types(np.int16, np.float16)} {jnp.result_type(np.uint32, np.float16, np.int8)}"
    ),
    # reductions and index results
    "column_mean": lambda j, jnp, lax, np: jnp.mean(np.random.RandomState(0).rand(20000, 3), axis=0),
    # eager sums over leading axes of tall arrays (one BLAS product, accumulated in float64)
    "column_standardise": lambda j, jnp, lax, np: (lambda x: (x - x.mean(0)) / x.std(0))(
        jnp.asarray(np.random.RandomState(1).rand(10000, 10))
    )[:50],
    "leading_axes_sum": lambda j, jnp, lax, np: jnp.sum(
        np.random.RandomState(2).standard_normal((40, 300, 4)).astype(np.float32), axis=(1, 0)
    ),
    "complex_column_sum": lambda j, jnp, lax, np: jnp.sum(
        (np.random.RandomState(3).rand(5000, 2) + 1j * np.random.RandomState(4).rand(5000, 2)).astype(
            np.complex64
        ),
        axis=0,
    ),
    "sum_uint8": lambda j, jnp, lax, np: jnp.sum(np.ones(3, np.uint8)),
    "sum_np_int": lambda j, jnp, lax, np: jnp.sum(np.arange(4)),
    "mean_np_int": lambda j, jnp, lax, np: jnp.mean(np.arange(4)),
    "prod_np": lambda j, jnp, lax, np: jnp.prod(np.ones(3)),
    "argmax": lambda j, jnp, lax, np: jnp.argmax(np.array([1.0, 3.0, 2.0])),
    "argsort": lambda j, jnp, lax, np: jnp.argsort(np.array([3.0, 1.0, 2.0])),
    "cumsum": lambda j, jnp, lax, np: jnp.cumsum(np.arange(4)),
    "var": lambda j, jnp, lax, np: jnp.var(np.arange(4.0)),
    "count_nonzero": lambda j, jnp, lax, np: jnp.count_nonzero(np.array([1, 0, 2])),
    "nonzero": lambda j, jnp, lax, np: jnp.nonzero(np.array([1, 0, 2])),
    "searchsorted": lambda j, jnp, lax, np: jnp.searchsorted(np.array([1.0, 2.0, 3.0]), 2.5),
    # casts
    "astype_f64": lambda j, jnp, lax, np: jnp.ones(2).astype(np.float32).astype(float),
    "astype_int": lambda j, jnp, lax, np: jnp.ones(2).astype(int),
    "convert_f64": lambda j, jnp, lax, np: lax.convert_element_type(jnp.ones(2), float),
    "iota": lambda j, jnp, lax, np: lax.iota(int, 3),
    # (the fuzzer) a float64 NumPy operand already "of" the target dtype was returned unconverted
    "convert_np_f64_to_f32": lambda j, jnp, lax, np: (
        lax.convert_element_type(np.ones(2), np.float32),
        lax.convert_element_type(np.zeros(0), "float32"),
    ),
    "lax_add": lambda j, jnp, lax, np: lax.add(1.0, 2.0),
    "lax_mul_weak_array": lambda j, jnp, lax, np: lax.mul(2, jnp.asarray(3)),
    "lax_add_strong_array": lambda j, jnp, lax, np: lax.add(2, np.ones(2, np.int32)),
    # random
    "prng_key": lambda j, jnp, lax, np: j.random.PRNGKey(0),
    "normal": lambda j, jnp, lax, np: j.random.normal(j.random.PRNGKey(0), (3,)),
    "uniform": lambda j, jnp, lax, np: j.random.uniform(j.random.PRNGKey(1), (3,)),
    "randint": lambda j, jnp, lax, np: j.random.randint(j.random.PRNGKey(2), (4,), 0, 10),
    "bits": lambda j, jnp, lax, np: j.random.bits(j.random.PRNGKey(3), (3,)),
    "split": lambda j, jnp, lax, np: j.random.split(j.random.PRNGKey(4)),
    "bernoulli": lambda j, jnp, lax, np: j.random.bernoulli(j.random.PRNGKey(5), 0.5, (4,)),
    "choice": lambda j, jnp, lax, np: j.random.choice(j.random.PRNGKey(6), 5, (3,)),
    "permutation": lambda j, jnp, lax, np: j.random.permutation(j.random.PRNGKey(7), 5),
    # transformations of NumPy float64 inputs
    "jit_np": lambda j, jnp, lax, np: j.jit(_f)(np.ones(2)),
    "jit_py_scalar": lambda j, jnp, lax, np: j.jit(lambda x: x * 2)(1.5),
    "jit_zeros": lambda j, jnp, lax, np: j.jit(lambda x: x + jnp.zeros(2))(np.arange(2)),
    "jit_sharded_np": lambda j, jnp, lax, np: j.jit(
        lambda x: x * 2,
        in_shardings=j.sharding.NamedSharding(
            j.sharding.Mesh(np.array(j.devices()[:1]), ("x",)), j.sharding.PartitionSpec("x")
        ),
    )(np.ones(4)),
    "grad_np": lambda j, jnp, lax, np: j.grad(_f)(np.ones(2)),
    "grad_scalar": lambda j, jnp, lax, np: j.grad(lambda x: x**3)(1.5),
    "grad_cond_identity": lambda j, jnp, lax, np: j.grad(
        lambda x: lax.cond(x <= 1.0, lambda t: t, lambda t: jnp.sin(t), x)
    )(0.0),
    "grad_identity": lambda j, jnp, lax, np: j.grad(lambda x: x)(2.0),
    "vmap_np": lambda j, jnp, lax, np: j.vmap(lambda x: x.sum() + 1)(np.ones((2, 3))),
    "value_and_grad": lambda j, jnp, lax, np: j.value_and_grad(_f)(np.float64(3.0)),
    # a transformation's raw float64 primal reaching a bit-level step (the fuzzer: gamma's signbit)
    "jvp_np_signbit": lambda j, jnp, lax, np: j.jvp(
        lambda x: jnp.where(jnp.signbit(x), x, 2 * x), (np.array([np.nan, -0.0, 1.0]),), (np.ones(3),)
    ),
    # (the fuzzer) a no-op astype of a transformation's raw float64 primal converts it, as JAX's
    "jvp_np_astype": lambda j, jnp, lax, np: j.jvp(
        lambda x: jnp.asarray(x).astype("float32"), (np.array([1.0, -2.0]),), (np.ones(2),)
    ),
    # (the fuzzer) an update of an empty raw float64 primal converts it, as JAX's scatter does
    "jvp_np_at_set_empty": lambda j, jnp, lax, np: j.jvp(
        lambda x: x.at[:].set(1.0), (np.zeros((0, 2)),), (np.zeros((0, 2)),)
    ),
    "linearize_np_at_add_empty": lambda j, jnp, lax, np: j.linearize(lambda x: x.at[:].add(1.0), np.zeros(0))[
        0
    ],
    "jvp_np_nextafter": lambda j, jnp, lax, np: j.jvp(
        lambda x: x * lax.nextafter(lax.stop_gradient(x), 5.0), (np.array([1.0, -2.0]),), (np.ones(2),)
    ),
    # indexing
    "getitem_np_index": lambda j, jnp, lax, np: jnp.arange(5.0)[np.int64(2)],
    "at_set": lambda j, jnp, lax, np: jnp.ones(3).at[1].set(2.0),
    "take": lambda j, jnp, lax, np: jnp.take(np.arange(5.0), np.array([0, 2])),
    # printed jaxprs
    "jaxpr_scalar": lambda j, jnp, lax, np: str(j.make_jaxpr(lambda x: x * 2 + 1)(1.0)),
    "jaxpr_int_sum": lambda j, jnp, lax, np: str(j.make_jaxpr(lambda x: jnp.sum(x) + 1)(np.arange(3))),
    "jaxpr_np_f64": lambda j, jnp, lax, np: str(j.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(np.ones(2))),
    "eval_shape": lambda j, jnp, lax, np: str(j.eval_shape(lambda x: x * 2, np.ones(2))),
    "typeof": lambda j, jnp, lax, np: f"{j.typeof(2)} {j.typeof(np.ones(2))!r} {j.eval_shape(lambda: 1.0)}",
    "jaxpr_of_struct": lambda j, jnp, lax, np: str(
        j.make_jaxpr(lambda x: x * 2)(j.ShapeDtypeStruct((2,), np.float64))
    ),
    "result_type": lambda j, jnp, lax, np: str(jnp.result_type(np.float64, 1)),
    "canonicalize_dtype": lambda j, jnp, lax, np: str(j.dtypes.canonicalize_dtype(np.int64)),
    "promote_types": lambda j, jnp, lax, np: str(jnp.promote_types(np.int32, np.uint32)),
    # (JAX's lax_numpy_test) integer convolution with a preferred_element_type stays integer (raised)
    "convolve_ints_preferred": lambda j, jnp, lax, np: jnp.convolve(
        np.int32([1, 2, 3]), np.int32([1, 1]), preferred_element_type=np.int32
    ),
    # (JAX's lax_numpy_test) apply_along_axis over a zero-length axis (raised in reshape)
    "apply_along_empty_axis": lambda j, jnp, lax, np: jnp.apply_along_axis(
        lambda v: v.sum(), 0, np.ones((0, 3), np.float32)
    ),
}


def _weak(x) -> bool:
    aval = getattr(x, "aval", None)
    return bool(aval.weak_type) if aval is not None else bool(getattr(x, "weak_type", False))


def _describe(out):
    if isinstance(out, str):
        return [out]
    leaves = out if isinstance(out, tuple | list) else [out]
    return [(np.dtype(x.dtype).name, _weak(x), np.asarray(x)) for x in leaves]


def _run_both(case):
    fg = case(funcgrad, fnp, flax, np)
    with _jax_config.enable_x64(False):
        jx = case(jax, jnp, jlax, np)
        return _describe(fg), _describe(jx)


@pytest.mark.parametrize("name", sorted(CASES))
def test_x32_matches_jax(x32, name):
    ours, theirs = _run_both(CASES[name])
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        if isinstance(a, str):
            assert a == b
            continue
        assert a[:2] == b[:2], f"{name}: (dtype, weak) {a[:2]} != jax's {b[:2]}"
        np.testing.assert_allclose(a[2], b[2], rtol=2e-6, atol=1e-6, err_msg=name)


WARNING_CASES = {
    "zeros": lambda jnp, np: jnp.zeros(2, np.float64),
    "ones": lambda jnp, np: jnp.ones(2, dtype=np.int64),
    "arange": lambda jnp, np: jnp.arange(3, dtype=np.int64),
    "asarray": lambda jnp, np: jnp.asarray([1.0], dtype=np.float64),
    "astype": lambda jnp, np: jnp.ones(2).astype(np.complex128),
    "full": lambda jnp, np: jnp.full(2, 1.0, np.float64),
    "sum": lambda jnp, np: jnp.sum(np.ones(2), dtype=np.float64),
}


def _warnings_of(fn):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = fn()
    return np.dtype(out.dtype), [str(w.message) for w in seen if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize("name", sorted(WARNING_CASES))
def test_x32_explicit_64_bit_request_warns_as_jax(x32, name):
    ours = _warnings_of(lambda: WARNING_CASES[name](fnp, np))
    with _jax_config.enable_x64(False):
        theirs = _warnings_of(lambda: WARNING_CASES[name](jnp, np))
    assert ours[0] == theirs[0]
    assert ours[1][:1] == theirs[1][:1]


@pytest.mark.parametrize(
    "fn",
    [
        lambda jnp, np: jnp.asarray(np.uint32([1])) + 2**31,
        lambda jnp, np: jnp.ones(1, jnp.float16) + 2**40,
        lambda jnp, np: jnp.array([0, 2**40]),  # (NumPy's int64 was wrapped to [0, 0])
    ],
)
def test_x32_python_int_beyond_int32_raises_as_jax(x32, fn):
    # (a Python int operand is parsed as an int32 first, whatever the other operand's dtype)
    with pytest.raises(OverflowError, match="int32"):
        fn(fnp, np)
    with _jax_config.enable_x64(False), pytest.raises(OverflowError):
        fn(jnp, np)


def test_x32_switch_retraces_and_restores(x32):
    # A function jitted under x32 and called again under x64 traces again (the mode is part of the
    # cache key); eager values created under one mode keep their dtype.
    f = funcgrad.jit(lambda x: x + fnp.zeros(2))
    assert f(np.arange(2)).dtype == np.float32
    kept = fnp.ones(2)
    with funcgrad.enable_x64(True):
        assert f(np.arange(2)).dtype == np.float64
        assert fnp.asarray(np.ones(2)).dtype == np.float64
        assert (kept * 2).dtype == np.float32
    assert f(np.arange(2)).dtype == np.float32
    assert funcgrad.config.jax_enable_x64 is False


@pytest.mark.slow
def test_x64_env_variable_is_read_at_import():
    import subprocess
    import sys

    code = "import funcgrad, funcgrad.numpy as fnp; print(funcgrad.config.jax_enable_x64, fnp.zeros(1).dtype)"
    env = {**__import__("os").environ, "JAX_ENABLE_X64": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "float32"]


def _lattice_table(jnp_, np_):
    # every pair of dtypes (the narrow ones included) and weak Python types, as jnp's
    # promote_types / result_type answer: the dtype's name or the exception's type name
    import ml_dtypes

    names = ["bool", "int8", "int32", "int64", "uint8", "uint32", "uint64", "float16", "float32", "float64"]
    names += ["complex64", "complex128"]
    types = [np_.dtype(n) for n in names] + [np_.dtype(ml_dtypes.bfloat16), np_.dtype(ml_dtypes.int4)]
    types += [np_.dtype(ml_dtypes.float8_e4m3fn), int, float, complex]
    out = {}
    for fn in ("promote_types", "result_type"):
        for a in types:
            for b in types:
                try:
                    r = str(getattr(jnp_, fn)(a, b))
                except (TypeError, ValueError) as e:
                    r = "TypePromotionError" if "promotion path" in str(e) else type(e).__name__
                out[f"{fn}({getattr(a, 'name', a)}, {getattr(b, 'name', b)})"] = r
    return out


@pytest.mark.parametrize("promotion", ["standard", "strict"])
def test_x32_promotion_lattice_matches_jax(x32, promotion):
    # JAX's promote_types does not canonicalise (float32 x complex128 is complex128 in 32-bit
    # mode), refuses the narrow types' mixes, and honours 'strict' (NOTE: [JAX's promotion lattice])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with funcgrad.numpy_dtype_promotion(promotion):
            ours = _lattice_table(fnp, np)
        with _jax_config.enable_x64(False), jax.numpy_dtype_promotion(promotion):
            theirs = _lattice_table(jnp, np)
    assert {k: v for k, v in ours.items() if v != theirs[k]} == {}
    if promotion == "standard":
        assert ours["promote_types(float32, complex128)"] == "complex128"


def test_x32_narrow_type_mixes_as_jax(x32):
    # the 8/6/4-bit floats and int4 sit alone on JAX's lattice: a mix with another dtype is a
    # TypePromotionError (JAX's words), but bool, integers below a narrow float and Python scalars
    # promote (NOTE: [JAX's promotion lattice])
    import ml_dtypes

    f8, i4 = ml_dtypes.float8_e4m3fn, ml_dtypes.int4
    for j, n in ((funcgrad, fnp), (jax, jnp)):
        with _jax_config.enable_x64(False):
            with pytest.raises(j.dtypes.TypePromotionError, match="8-bit floats do not support implicit"):
                n.ones(2, f8) + n.ones(2, np.float32)
            with pytest.raises(j.dtypes.TypePromotionError, match="4-bit integers do not support implicit"):
                n.ones(2, i4) + n.ones(2, np.int8)
            assert (n.ones(2, f8) + n.ones(2, np.int32)).dtype == f8
            assert (n.ones(2, i4) + 1).dtype == i4


def test_x32_explicit_x64_dtypes_error_as_jax(x32):
    # jax_explicit_x64_dtypes='error': an explicit 64-bit dtype is JAX's ValueError ('warn', the
    # default, truncates with the UserWarning above; 'allow' keeps it, as jax's)
    funcgrad.config.update("jax_explicit_x64_dtypes", "error")
    try:
        with pytest.raises(
            ValueError, match="Explicitly requested dtype float64 requested in zeros is not available"
        ):
            fnp.zeros(2, np.float64)
        assert fnp.zeros(2, np.float32).dtype == np.float32
    finally:
        funcgrad.config.update("jax_explicit_x64_dtypes", "warn")

    # 'allow': explicit 64-bit dtypes kept, and promotions with them (dtypes_test's allow cases)
    def allowed(lib):
        lib.config.update("jax_explicit_x64_dtypes", "allow")
        try:
            a = lib.numpy.zeros(2, np.float64)
            f32 = lib.numpy.ones(2, np.float32)
            i64 = lib.numpy.ones(2).astype("int64")
            outs = (a, i64 + 1, a * f32, a.sum(), f32 + np.float64(1), f32.astype(float))
            steps = np.asarray(lib.numpy.linspace(0, 1, 4, dtype=np.float64)).tolist()
            return [str(o.dtype) for o in outs] + [steps]
        finally:
            lib.config.update("jax_explicit_x64_dtypes", "warn")

    with _jax_config.enable_x64(False):
        want = allowed(jax)
    assert allowed(funcgrad) == want and want[:3] == ["float64", "int64", "float64"]
    with _jax_config.enable_x64(False), _jax_config.explicit_x64_dtypes("error"):
        with pytest.raises(
            ValueError, match="Explicitly requested dtype float64 requested in zeros is not available"
        ):
            jnp.zeros(2, np.float64)


def test_x32_random_bits_explicit_x64_dtype_as_jax(x32):
    # (JAX's random_test testRngRandomBitsShapeDtype: random.bits checks an explicit dtype as jnp does)
    for j, mode in ((funcgrad, funcgrad.config), (jax, jax.config)):
        key = j.random.key(1701)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with _jax_config.enable_x64(False):
                out = j.random.bits(key, (3,), np.uint64)
        assert out.dtype == np.uint32 and out.shape == (3,)
        assert any("Explicitly requested dtype uint64" in str(x.message) for x in w)
        mode.update("jax_explicit_x64_dtypes", "error")
        try:
            with _jax_config.enable_x64(False):
                with pytest.raises(ValueError, match="Explicitly requested dtype uint64"):
                    j.random.bits(key, (3,), np.uint64)
            with _jax_config.enable_x64(False):
                assert j.random.bits(key, (3,), np.uint16).dtype == np.uint16
        finally:
            mode.update("jax_explicit_x64_dtypes", "warn")
    with _jax_config.enable_x64(False), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(
            funcgrad.random.bits(funcgrad.random.key(1701), (3,), np.uint64),
            jax.random.bits(jax.random.key(1701), (3,), np.uint64),
        )


def test_x32_one_hot_and_samplers_explicit_float64_warn_as_jax(x32):
    # (jax.nn.one_hot's last step is .astype(dtype): JAX warns "requested in astype", float32 out;
    # the random samplers' check names no function)
    with pytest.warns(UserWarning, match="Explicitly requested dtype float64 requested in astype"):
        out = funcgrad.nn.one_hot(np.array([1, 0]), 3, dtype=np.float64)
    assert out.dtype == np.float32 and out.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    with pytest.warns(
        UserWarning, match="dtype float64 is not available, and will be truncated to dtype float32"
    ):
        assert funcgrad.random.normal(funcgrad.random.key(0), (2,), np.float64).dtype == np.float32


def test_x32_tri_python_int_k_past_int32_overflows_as_jax(x32):
    # (JAX's lax_numpy_test testTri: k = 2**33 in 32-bit mode)
    with pytest.raises(OverflowError):
        fnp.tri(3, k=2**33)
    with _jax_config.enable_x64(False), pytest.raises(OverflowError):
        jnp.tri(3, k=2**33)


def test_x32_searchsorted_past_int32_asks_for_int64_as_jax(x32):
    # (JAX's lax_numpy_test testSearchsortedDtype, abstractly: no array of 2**31 elements is made)
    for j, n in ((funcgrad, fnp), (jax, jnp)):
        big = j.ShapeDtypeStruct((2**31,), np.float32)
        with (
            _jax_config.enable_x64(False),
            pytest.warns(UserWarning, match="Explicitly requested dtype.*int64"),
        ):
            with pytest.raises(OverflowError, match="Python integer 2147483648 out of bounds"):
                j.eval_shape(n.searchsorted, big, j.ShapeDtypeStruct((), np.float32))


def test_a_64_bit_array_keeps_its_width_in_eager_lax_operations_as_jax():
    # (JAX's x64_context_test test_sin/test_mul: an array made under enable_x64 keeps float64
    # through lax operations outside it; eager NumPy results were cast to 32 bits)
    with funcgrad.enable_x64(True):
        x = fnp.asarray(0.5, dtype=fnp.float64)
    with funcgrad.enable_x64(False):
        got = [flax.sin(x).dtype, flax.mul(x, x).dtype, (fnp.arange(3) + 1).dtype]
    with jax.enable_x64(True):
        y = jax.numpy.asarray(0.5, dtype=jax.numpy.float64)
    with jax.enable_x64(False):
        want = [jax.lax.sin(y).dtype, jax.lax.mul(y, y).dtype, (jax.numpy.arange(3) + 1).dtype]
    assert got == want
