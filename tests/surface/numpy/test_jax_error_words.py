"""Errors of funcgrad.numpy in JAX's types and words where JAX's own tests (lax_numpy_test) check
them: each case raises the same exception type, matching the same pattern, in funcgrad and in jax
0.10.2 (users and libraries grep for these messages)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

SHAPES = "Shapes must be 1D sequences of concrete values of integer type"
CASES = {
    # JAX's check_arraylike: a reduction of a list raises (the sharp-bits guide's jnp.sum([1, 2, 3]))
    "sum_of_list": (
        lambda j, n: n.sum([1, 2, 3]),
        TypeError,
        r"sum requires ndarray or scalar arguments, got <class 'list'> at position 0\.",
    ),
    "max_of_tuple": (
        lambda j, n: n.max((1, 2)),
        TypeError,
        r"max requires ndarray or scalar arguments, got <class 'tuple'>",
    ),
    "argmax_of_list": (
        lambda j, n: n.argmax([1, 2]),
        TypeError,
        r"argmax requires ndarray or scalar arguments",
    ),
    "ufunc_of_list": (
        lambda j, n: n.add([1, 2], n.ones(2)),
        TypeError,
        r"add requires ndarray or scalar arguments, got <class 'list'> at position 0\.",
    ),
    "ufunc_of_tuple": (
        lambda j, n: n.maximum(n.ones(2), (1, 2)),
        TypeError,
        r"maximum requires ndarray or scalar arguments, got <class 'tuple'> at position 1\.",
    ),
    "mean_of_list": (
        lambda j, n: n.mean([1.0, 2.0]),
        TypeError,
        r"mean requires ndarray or scalar arguments",
    ),
    "zeros_of_float": (lambda j, n: n.zeros(1.0), TypeError, SHAPES),
    "zeros_traced": (lambda j, n: j.jit(n.zeros)(2), TypeError, SHAPES + r".*\nIf using `jit`, try using"),
    "tri_traced": (lambda j, n: j.jit(n.tri)(3, M=3, k=0), TypeError, SHAPES),
    "ones_negative": (lambda j, n: n.ones((-1, 1)), TypeError, "nonnegative"),
    "shape_hint": (
        lambda j, n: n.ones(2, 3),
        TypeError,
        r"Did you accidentally write `jax\.numpy\.ones\(2, 3\)`",
    ),
    "broadcast_fewer": (
        lambda j, n: n.broadcast_to(n.zeros((3, 4, 5)), (4, 5)),
        ValueError,
        "Cannot broadcast to shape with fewer dimensions",
    ),
    "broadcast_incompatible": (
        lambda j, n: n.broadcast_to(np.ones((2, 3)), (1, 3)),
        ValueError,
        "Incompatible.*broadcasting: .*",
    ),
    "expand_dims_repeated": (lambda j, n: n.expand_dims(n.ones(3), (1, 1)), ValueError, "repeated axis.*"),
    "tensordot_rank": (
        lambda j, n: n.tensordot(n.ones((3, 2)), n.ones(2), axes=2),
        TypeError,
        "exceeds input ranks",
    ),
    "tensordot_lengths": (
        lambda j, n: n.tensordot(n.ones((3, 2)), n.ones(2), axes=([0], [0, 1])),
        TypeError,
        "tensordot requires axes lists to have equal length",
    ),
    "tensordot_axes_type": (
        lambda j, n: n.tensordot(n.ones(2), n.ones(2), axes="bad"),
        TypeError,
        "tensordot axes argument must be an int, a pair of ints, or a pair of lists",
    ),
    "trace_same_axes": (
        lambda j, n: n.trace(n.ones((2, 2)), axis1=0, axis2=-2),
        ValueError,
        "can not be same",
    ),
    "tolist_traced": (
        lambda j, n: j.jit(lambda x: x.tolist())(n.ones(2)),
        "Concretization",
        "The tolist.. method was called",
    ),
    "tobytes_traced": (
        lambda j, n: j.jit(lambda x: x.tobytes())(n.ones(2)),
        "Concretization",
        "The tobytes.. method was called",
    ),
    "split_traced": (
        lambda j, n: j.jit(lambda i: n.split(n.zeros(4), [1, i]))(2),
        TypeError,
        "Abstract tracer value encountered where concrete value is expected",
    ),
    "pad_kwargs": (
        lambda j, n: n.pad(n.ones(3), 1, "edge", constant_values=0),
        ValueError,
        "unsupported keyword arguments for mode 'edge'",
    ),
    "pad_unknown_mode": (
        lambda j, n: n.pad(n.ones(3), 1, "foo"),
        NotImplementedError,
        "Unimplemented padding mode 'foo'",
    ),
    "structured_dtype": (
        lambda j, n: n.array(3, [("a", "<i4"), ("b", "<i4")]),
        TypeError,
        "JAX only supports number, bool, and string dtypes",
    ),
    "rot90_1d": (
        lambda j, n: n.rot90(n.ones(2)),
        ValueError,
        "rot90 requires its first argument to have ndim",
    ),
    "c_directive": (lambda j, n: n.c_["asdfgh", [1, 2, 3]], ValueError, "could not understand directive"),
    "mgrid_traced": (
        lambda j, n: j.jit(lambda a: n.mgrid[a:3])(0),
        "Concretization",
        "slice start of jnp.mgrid",
    ),
    "r_traced": (lambda j, n: j.jit(lambda a, b: n.r_[a:b])(0, 2), "Concretization", "slice start of jnp.r_"),
    "take_along_float": (
        lambda j, n: n.take_along_axis(n.arange(5), n.array([3.0], np.float32), axis=0),
        TypeError,
        "take_along_axis indices must be of integer type, got float32",
    ),
    "take_empty_axis": (
        lambda j, n: n.take(n.ones((2, 0, 4)), n.array([0]), axis=1),
        IndexError,
        "non-empty jnp.take",
    ),
    "arange_complex": (
        lambda j, n: n.arange(1j),
        ValueError,
        "Passing complex start/stop/step to jnp.arange",
    ),
    "arange_traced": (lambda j, n: j.jit(n.arange)(3), "Concretization", "argument 'stop'"),
    "ravel_raise_jit": (  # (lax_numpy_test testRavelMultiIndex)
        lambda j, n: j.jit(lambda a: n.ravel_multi_index((a, a), (3, 3), mode="raise"))(np.array([0, 1])),
        "Concretization",
        "The error occurred because ravel_multi_index was jit-compiled with mode='raise'. Use mode='wrap'",
    ),
    "strict_promotion": (  # (lax_numpy_indexing_test testIndexingTypePromotion, strict mode)
        lambda j, n: _strict(j, lambda: n.arange(3, dtype=n.int32).at[0].set(n.int16(0))),
        ValueError,
        r"Input dtypes \('int(16|32)', 'int(16|32)'\) have no available implicit dtype promotion path",
    ),
    # (the program fuzzer: NumPy drops an update's extra leading size-1 dimensions; JAX's .at[]
    # broadcasts the update as broadcast_to does and refuses them)
    "update_of_more_dimensions": (
        lambda j, n: n.zeros(3).at[0].set(np.ones(1)),
        ValueError,
        r"^Cannot broadcast to shape with fewer dimensions: arr_shape=\(1,\) shape=\(\)",
    ),
    "update_of_another_shape": (
        lambda j, n: n.zeros((3, 4), np.float32).at[0].set(np.ones(3, np.float32)),
        ValueError,
        r"^Incompatible types for broadcasting: input type=float32\[3\] and requested type=float32\[4\]",
    ),
}


def _strict(j, fn):
    with j.numpy_dtype_promotion("strict"):
        return fn()


def test_lossy_scatter_warns_as_jax():
    # JAX's deprecation warning for an update x's dtype cannot hold (testIndexingTypePromotion)
    for n in (fnp, jnp):
        for x_dtype, y in [(n.int16, n.int32(0)), (n.int32, n.float32(0)), (n.float32, n.complex64(0))]:
            with pytest.warns(FutureWarning, match="scatter inputs have incompatible types"):
                assert n.arange(5, dtype=x_dtype).at[0].set(y).dtype == x_dtype
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            n.arange(5, dtype=n.float32).at[0].set(n.int32(0))  # safe: no warning
            n.arange(5, dtype=n.uint8).at[0].add(-3)  # a Python scalar: no warning


@pytest.mark.parametrize("name", sorted(CASES))
def test_error_as_jax(name):
    fn, error, pattern = CASES[name]
    for j, n in ((funcgrad, fnp), (jax, jnp)):
        kind = j.errors.ConcretizationTypeError if error == "Concretization" else error
        with pytest.raises(kind, match=pattern):
            fn(j, n)


def test_deprecation_and_rank_promotion_warnings_as_jax():
    # lax_numpy_test's testAstypeComplexDowncast, testNdimShapeSizeNonArrayInput,
    # testDisableNumpyRankPromotionBroadcasting: the same warning class and words in both
    for j, n in ((funcgrad, fnp), (jax, jnp)):
        z = n.array(2.0 + 1.5j, dtype="complex64")
        with pytest.warns(DeprecationWarning, match="Casting from complex to real dtypes"):
            z.astype("float32")
        for op in (n.ndim, n.shape, n.size):
            with pytest.warns(
                DeprecationWarning, match=f"{op.__name__} requires ndarray or scalar arguments"
            ):
                op([1, 2, 3])
        with j.numpy_rank_promotion("warn"):
            with pytest.warns(
                UserWarning,
                match=r"Following NumPy automatic rank promotion for add on shapes \(2,\) \(1, 2\)",
            ):
                n.ones(2) + n.ones((1, 2))
        with j.numpy_rank_promotion("raise"):
            with pytest.raises(
                ValueError,
                match=r"Operands could not be broadcast together for add on shapes \(2,\) \(1, 2\)",
            ):
                n.ones(2) + n.ones((1, 2))
            n.ones(2) + 3  # (a scalar is not rank promotion)
        x = n.array([1, 2, 3])
        with pytest.warns(
            DeprecationWarning, match="Passing the copy, order, and ndmin arguments to jnp.array"
        ):
            assert n.array(x, None, False) is x
        with pytest.raises(TypeError, match=r"array\(\) takes at most 5 positional arguments"):
            n.array(x, None, True, "K", 0, "extra")
        with pytest.raises(TypeError, match=r"array\(\) got multiple values for argument 'copy'"):
            n.array(x, None, True, copy=False)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            z.astype("complex64"), n.ndim(np.ones(2)), n.shape(3.0), n.array(x, copy=False)


def test_linspace_retstep_on_a_device():
    # testArangeEyeLinspaceArrayWithDevice: the (samples, step) pair was placed as one value
    device = funcgrad.devices()[-1]
    samples, step = fnp.linspace(5, 6, 7, retstep=True, device=device)
    assert samples.devices() == {device}
    np.testing.assert_allclose(step, jnp.linspace(5, 6, 7, retstep=True)[1])
