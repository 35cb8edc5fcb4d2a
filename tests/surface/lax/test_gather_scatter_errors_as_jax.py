"""Malformed gather/scatter dimension numbers raise JAX's TypeError in JAX's words (its shape rules'
order: the first rule broken is the one named), against jax 0.10.2 (cases from JAX's lax_test
testGatherShapeCheckingRule / testScatterShapeCheckingRule)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad

jax = pytest.importorskip("jax")

OPERAND, INDICES = (10, 9, 8, 7, 6), (5, 4, 3, 2, 5)

GATHER = {  # dimension numbers, slice sizes
    "offset dims unsorted": (((4, 5, 6, 8, 7), (0, 1, 2, 3, 4), (0, 1, 2, 3, 4), (), ()), (10, 9, 8, 7, 6)),
    "offset dim out of bounds": (((4, 5, 6, 7, 9), (), (0, 1, 2, 3, 4), (), ()), (10, 9, 8, 7, 6)),
    "start_index_map repeats": (((4, 5, 6, 7, 8), (), (0, 1, 2, 3, 3), (), ()), (10, 9, 8, 7, 6)),
    "start_index_map too short": (((4, 5, 6, 7, 8), (), (0, 1, 2, 3), (), ()), (10, 9, 8, 7, 6)),
    "collapsed bound": (((4, 5, 6, 7), (1,), (0, 1, 2, 3, 4), (), ()), (10, 9, 8, 7, 6)),
    "slice sizes count": (((4, 5, 6, 7, 8), (), (0, 1, 2, 3, 4), (), ()), (10, 9, 8, 7)),
    "batching dims count": (((4, 5, 6, 7), (), (0, 1, 2, 3), (4,), ()), (10, 9, 8, 7, 1)),
    "index vector dim batched": (((4, 5, 6, 7, 8), (), (0, 1, 2, 3, 4), (), (4,)), (10, 9, 8, 7, 6)),
    "indices batching dims repeat": (((4, 5, 6, 7, 8), (), (0, 1, 2, 3, 4), (), (0, 0)), (10, 9, 8, 7, 6)),
}
SCATTER = {  # updates shape, dimension numbers
    "update window dims unsorted": (
        (10, 9, 8, 7, 6, 5, 4, 3, 2),
        ((4, 5, 6, 8, 7), (), (0, 1, 2, 3, 4), (), ()),
    ),
    "window size": ((10, 9, 8, 7, 6, 5, 4, 3), ((4, 5, 6, 7), (), (0, 1, 2, 3, 4), (), ())),
    "updates rank": ((10, 9, 8, 7, 3, 2, 4, 1), ((4, 5, 6), (0, 1), (0, 1, 2, 3, 4), (), ())),
    "inserted dims repeat": ((10, 9, 8, 7, 6, 5, 4, 3), ((4, 5, 6, 7), (1, 1), (0, 1, 2, 3, 4), (), ())),
    "to operand out of range": (
        (5, 4, 3, 2, 10, 9, 8, 7, 6),
        ((4, 5, 6, 7, 8), (), (0, 1, 2, 3, 10), (), ()),
    ),
    "batching dims count": ((5, 4, 3, 2, 10, 9, 8, 7), ((4, 5, 6, 7), (), (0, 1, 2, 3), (4,), ())),
    "index vector dim batched": ((5, 4, 3, 2, 10, 9, 8, 7), ((4, 5, 6, 7), (), (0, 1, 2, 3), (4,), (4,))),
}


def _raised(call):
    with pytest.raises(Exception) as info:
        call()
    return info.value


@pytest.mark.parametrize("case", sorted(GATHER))
def test_gather_dimension_numbers_errors_as_jax(case):
    dn, sizes = GATHER[case]
    errs = []
    for lib in (jax, funcgrad):
        nums = lib.lax.GatherDimensionNumbers(
            offset_dims=dn[0], collapsed_slice_dims=dn[1], start_index_map=dn[2],
            operand_batching_dims=dn[3], start_indices_batching_dims=dn[4],
        )  # fmt: skip
        x, i = np.ones(OPERAND, np.int32), np.zeros(INDICES, np.int32)
        errs.append(_raised(lambda: lib.lax.gather(x, i, nums, sizes)))  # noqa: B023
    want, got = errs
    assert type(got) is TypeError and type(want) is TypeError and str(got) == str(want)


@pytest.mark.parametrize("case", sorted(SCATTER))
def test_scatter_dimension_numbers_errors_as_jax(case):
    upd, dn = SCATTER[case]
    errs = []
    for lib in (jax, funcgrad):
        nums = lib.lax.ScatterDimensionNumbers(
            update_window_dims=dn[0], inserted_window_dims=dn[1], scatter_dims_to_operand_dims=dn[2],
            operand_batching_dims=dn[3], scatter_indices_batching_dims=dn[4],
        )  # fmt: skip
        x, i, u = np.ones(OPERAND, np.int32), np.zeros(INDICES, np.int32), np.ones(upd, np.int32)
        errs.append(_raised(lambda: lib.lax.scatter_add(x, i, u, nums)))  # noqa: B023
    want, got = errs
    assert type(got) is TypeError and type(want) is TypeError and str(got) == str(want)


def test_gather_transpose_takes_the_cotangents_dtype_as_jax():
    # (lax_test test_gather_with_asymmetric_dtype: a custom_vjp's bwd gives a bfloat16 cotangent
    # for a float8 operand; the gather's transpose scatters it into zeros of its own dtype)
    def run(lib):
        jnp = lib.numpy

        @lib.custom_vjp
        def f(x):
            return x

        f.defvjp(lambda x: (f(x), ()), lambda res, g: (g.astype(jnp.bfloat16),))
        x = jnp.arange(8, dtype=jnp.float8_e4m3fn)
        _, pullback = lib.vjp(lambda v: f(v.at[jnp.argsort(v)].get()), x)
        (ct,) = pullback(jnp.ones((8,), dtype=jnp.float8_e4m3fn))
        return str(ct.dtype), np.asarray(ct, np.float32).tolist()

    assert run(funcgrad) == run(jax)


def test_float_indices_raise_jax_s_value_error():
    # (JAX's ValueError 'indices must have an integer type' for gather and scatter; funcgrad raised
    # a TypeError only)
    x, i, u = np.arange(4.0, dtype=np.float32), np.array([[1.0]], np.float32), np.ones(1, np.float32)
    g = dict(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    s = dict(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    for lib in (jax, funcgrad):
        with pytest.raises(ValueError, match="indices must have an integer type"):
            lib.lax.gather(x, i, lib.lax.GatherDimensionNumbers(**g), (1,))
        with pytest.raises(ValueError, match="indices must have an integer type"):
            lib.lax.scatter_add(x, i, u, lib.lax.ScatterDimensionNumbers(**s))
