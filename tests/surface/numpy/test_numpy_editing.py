"""NumPy compatibility of funcgrad.numpy's array editing (``numpy/editing.py``: insert, delete,
put, place, block, ...), set operations (``numpy/setops.py``) and index tricks
(``numpy/index_tricks.py``): values and dtypes against NumPy, derivatives against finite
differences, vmap against a loop, jit against eager (the table), and each function's options,
traced forms and errors."""

from __future__ import annotations

import numpy as np
import pytest
from _numpy_harness import (
    arr,
    shapes,
)
from _numpy_harness import numpy_case as R

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.api import jit
from funcgrad.core import ConcretizationTypeError

NONEMPTY = shapes(min_dims=1, min_side=1)


def _insert_make(rng, dt, shp):
    x = arr(rng, (3, 4), dt)
    obj = [np.array([1]), 2, np.array([0, 4, 2]), slice(1, 3)][rng.integers(4)]  # (arrays: as JAX's)
    return [x, arr(rng, (3, 1), dt)], {"obj": obj, "axis": 1}


def _delete_make(rng, dt, shp):
    x = arr(rng, (4, 3), dt)
    obj = [1, np.array([0, 3]), slice(None, None, 2), np.array([True, False, True, False])][rng.integers(4)]
    return [x], {"obj": obj, "axis": 0}


EDITING = [
    R(
        "insert",
        _insert_make,
        fn=lambda a, v, obj, axis: fnp.insert(a, obj, v, axis=axis),
        ref=lambda a, v, obj, axis: np.insert(a, obj, v, axis=axis),
    ),
    R("delete", _delete_make),
    R("rollaxis", lambda rng, dt, shp: ([arr(rng, (2, 3, 4), dt)], {"axis": 2, "start": 0})),
    R("resize", lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"new_shape": (3, 5)}), shapes=NONEMPTY),
    R("dsplit", lambda rng, dt, shp: ([arr(rng, (2, 2, 6), dt)], {"indices_or_sections": [1, 4]})),
    R(
        "block",
        lambda rng, dt, shp: ([arr(rng, (2, 2), dt), arr(rng, (2, 1), dt), arr(rng, (1, 3), dt)], {}),
        fn=lambda a, b, c: fnp.block([[a, b], [c]]),
        ref=lambda a, b, c: np.block([[a, b], [c]]),
    ),
    R(
        "apply_over_axes",
        lambda rng, dt, shp: ([arr(rng, (2, 3, 4), dt)], {"axes": [0, 2]}),
        fn=lambda a, axes: fnp.apply_over_axes(fnp.sum, a, axes),
        ref=lambda a, axes: np.apply_over_axes(np.sum, a, axes),
    ),
]

# The generic checks of this table (values, derivatives, vmap, jit) are tests/surface/test_surface_cases.py's.
CASES = EDITING
CASE_EXAMPLES = {"values": 20}


# ----------------------------------------------------------------------------------------------
# setops


SET_INPUTS = [
    np.array([3, 1, 2, 3, 1, 5]),
    np.array([2.0, np.nan, 1.0, np.nan, -0.0, 0.0]),
    np.array([], np.int32),
    np.array([[1, 2], [1, 2], [0, 5]]),
]


@pytest.mark.parametrize("x", SET_INPUTS, ids=["ints", "floats-nan", "empty", "matrix"])
@pytest.mark.parametrize("axis", [None, 0])
def test_unique_matches_numpy(x, axis):
    if axis is not None and x.ndim < 1:
        return
    flags = {"return_index": True, "return_inverse": True, "return_counts": True}
    want = np.unique(x, axis=axis, **flags)
    got = fnp.unique(x, axis=axis, **flags)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w)
    for fn in ("unique_values", "unique_counts", "unique_inverse", "unique_all"):
        g, w = getattr(fnp, fn)(x), getattr(np, fn)(x)
        if fn == "unique_values":  # NumPy >= 2.3 leaves them in hash order; funcgrad (as JAX) sorts
            g, w = [np.sort(np.asarray(g), axis=None)], [np.sort(w, axis=None)]
        for a, b in zip(g if isinstance(g, tuple) else [g], w if isinstance(w, tuple) else [w]):
            np.testing.assert_array_equal(np.asarray(a), b, err_msg=fn)


def test_unique_under_jit_with_size():
    x = np.array([3, 1, 2, 3, 1, 5])
    got = jit(lambda v: fnp.unique(v, size=6, fill_value=-1, return_counts=True))(x)
    np.testing.assert_array_equal(np.asarray(got[0]), [1, 2, 3, 5, -1, -1])
    np.testing.assert_array_equal(np.asarray(got[1]), [2, 1, 2, 1, 0, 0])
    with pytest.raises(ConcretizationTypeError, match="size"):
        jit(fnp.unique)(x)


@pytest.mark.slow
@pytest.mark.parametrize("fn", ["union1d", "intersect1d", "setdiff1d", "setxor1d"])
def test_set_operations_match_numpy(fn):
    rng = np.random.default_rng(0)
    for _ in range(5):
        a, b = rng.integers(0, 8, 7), rng.integers(0, 8, 5)
        np.testing.assert_array_equal(np.asarray(getattr(fnp, fn)(a, b)), getattr(np, fn)(a, b))
        n = len(getattr(np, fn)(a, b))
        staged = jit(lambda x, y, n=n: getattr(fnp, fn)(x, y, size=n + 2, fill_value=99))(a, b)
        np.testing.assert_array_equal(np.asarray(staged)[:n], getattr(np, fn)(a, b))
        np.testing.assert_array_equal(np.asarray(staged)[n:], 99)
    a, b = np.array([5, 1, 3, 1]), np.array([3, 3, 5, 7])
    got, want = fnp.intersect1d(a, b, return_indices=True), np.intersect1d(a, b, return_indices=True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w)


def test_set_operations_default_fill_is_jax_s():
    # (the fuzzer) with size= and no fill_value, JAX pads with the smallest value found, 0 where
    # there is none (intersect1d, setxor1d; union1d as unique), and setdiff1d always with 0
    import jax
    import jax.numpy as jnp

    pairs = [([3, 1, -2], [3, -2]), ([3, 1], [2]), ([1, 1], [1]), ([2, 4], [4, 5]), ([3, 1], [1, 3])]
    calls = [(fn, a, b) for fn in ("union1d", "intersect1d", "setdiff1d", "setxor1d") for a, b in pairs]
    # (jax's side is one jitted program of the 20 calls, its eager values: 2.6 s of eager dispatch -> 0.9)
    wants = jax.jit(lambda: [getattr(jnp, fn)(np.array(a), np.array(b), size=4) for fn, a, b in calls])()
    for (fn, a, b), want in zip(calls, wants):
        got = getattr(fnp, fn)(np.array(a), np.array(b), size=4)
        assert got.tolist() == want.tolist(), (fn, a, b)


@pytest.mark.parametrize("size", [None, 3])
def test_set_operations_dtypes_and_weak_types_as_jax(size):
    # (the fuzzer) setdiff1d keeps ar1's dtype and weak type (ar2 is only compared with: NumPy's
    # rule too); intersect1d/setxor1d of Python scalars are weak without size=, strong with it
    import jax
    import jax.numpy as jnp
    from jax._src import config as jax_config

    pairs = [(3, 2), (3, 2.0), (2.5, 1), (np.array([1, 2]), 2), (2, np.array([1.5]))]
    calls = [(fn, a, b) for fn in ("union1d", "intersect1d", "setdiff1d", "setxor1d") for a, b in pairs]

    def theirs():
        return [getattr(jnp, fn)(a, b, size=size) for fn, a, b in calls]

    with jax_config.enable_x64(True):
        # (with size=, jax's 20 calls are one jitted program: their dtypes, weak types and values
        # are the eager calls', checked; without it jax needs concrete values, so eagerly)
        wants = theirs() if size is None else jax.jit(theirs)()
    for (fn, a, b), want in zip(calls, wants):
        got = getattr(fnp, fn)(a, b, size=size)
        assert (got.dtype, got.weak_type, got.tolist()) == (want.dtype, want.weak_type, want.tolist()), fn


def test_unique_of_an_empty_array_with_size_as_jax():
    # (the fuzzer) JAX pads the values to size= but returns empty indices and counts
    import jax.numpy as jnp
    from jax._src import config as jax_config

    for x in (np.zeros((0,)), np.zeros((2, 0))):
        kw = dict(size=3, fill_value=0, return_index=True, return_inverse=True, return_counts=True)
        got = fnp.unique(x, **kw)
        with jax_config.enable_x64(True):
            want = jnp.unique(x, **kw)
        assert [(a.shape, a.dtype) for a in got] == [(a.shape, a.dtype) for a in want]
    # (session 22's fuzzer) an empty result filled keeps the input's weak type, as JAX's full_like
    got = fnp.unique(2, size=0, fill_value=0)
    with jax_config.enable_x64(True):
        want = jnp.unique(2, size=0, fill_value=0)
    assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype, want.weak_type)


def test_set_operations_options_as_jax():
    # JAX's lax_numpy_setops_test through funcgrad.as_jax: assume_unique= trusts the inputs
    # (setxor1d drops a value repeated within one array, setdiff1d keeps ar1's order), padded
    # indices of intersect1d are the arrays' sizes, unique's counts under a cutting size= end at
    # the next run, a slice fill of unique(axis=) has no implicit rank promotion, isin(method=).
    # The expected values are jax 0.10.2's (64-bit mode, rank promotion 'raise'), written out:
    # calling jax here cost ~15 s of its compiles.
    a, b = np.array([3, 1, 1, 2, 3, 3]), np.array([1, 5, 7])
    m = np.array([[1, 2], [0, 0], [1, 2], [0, 0], [4, 4]])
    with funcgrad.numpy_rank_promotion("raise"):
        cases = [
            (fnp.setxor1d(a, b, assume_unique=True, size=5), [2, 5, 7, 2, 2]),
            (fnp.setdiff1d(a, b, assume_unique=True, size=7), [3, 2, 3, 3, 0, 0, 0]),
            (fnp.setdiff1d(a, b, assume_unique=True), np.setdiff1d(a, b, assume_unique=True)),
            (fnp.setxor1d(a, b, assume_unique=True), np.setxor1d(a, b, assume_unique=True)),
            (fnp.intersect1d(a, b, return_indices=True, size=3), [[1, 1, 1], [1, 6, 6], [0, 3, 3]]),
            (fnp.unique(a, return_counts=True, return_index=True, size=2), [[1, 2], [1, 3], [2, 1]]),
            (
                fnp.unique(m, axis=0, return_counts=True, size=4, fill_value=np.array([9, 9])),
                [[[0, 0], [1, 2], [4, 4], [9, 9]], [2, 2, 1, 0]],
            ),
            (fnp.unique(m, axis=1, size=3), [[1, 2, 1], [0, 0, 0], [1, 2, 1], [0, 0, 0], [4, 4, 4]]),
            (fnp.isin(a, b, method="sort"), np.isin(a, b)),
        ]
    for got, want in cases:
        got = [x.tolist() for x in got] if isinstance(got, tuple) else got.tolist()
        assert got == (want.tolist() if isinstance(want, np.ndarray) else want)


# ----------------------------------------------------------------------------------------------
# editing and index tricks


def test_insert_broadcasting_matches_numpy():
    a = np.arange(12).reshape(3, 4)

    def arr(v):  # (as JAX's, fnp.insert takes arrays, not lists: NOTE: [array-like arguments])
        return np.asarray(v) if isinstance(v, list) else v

    for obj in (1, [1], [1, 3], [0, 0, 2], slice(1, 3), -1, [4], [-1, 0]):
        for values in ([7, 8, 9], 7, [[7], [8], [9]]):
            try:
                want = np.insert(a, obj, values, axis=1)
            except ValueError:
                with pytest.raises(ValueError):
                    fnp.insert(a, arr(obj), arr(values), axis=1)
                continue
            np.testing.assert_array_equal(np.asarray(fnp.insert(a, arr(obj), arr(values), axis=1)), want)
    got = fnp.insert(a, np.array([0, 5]), np.array([-1, -2]))
    np.testing.assert_array_equal(np.asarray(got), np.insert(a, [0, 5], [-1, -2]))
    with pytest.raises(IndexError, match="out of bounds"):
        fnp.insert(a, 9, 0, axis=1)


def test_delete_with_traced_unique_positions():
    a = np.arange(10.0)
    got = jit(lambda x, i: fnp.delete(x, i, assume_unique_indices=True))(a, np.array([7, 2]))
    np.testing.assert_array_equal(np.asarray(got), np.delete(a, [7, 2]))
    with pytest.raises(ConcretizationTypeError):
        jit(fnp.delete)(a, np.array([1]))


def test_put_and_place():
    a = np.arange(6.0)
    for mode in ("clip", "wrap"):
        want = a.copy()
        np.put(want, [0, 9, -8], [10.0, 20.0, 30.0], mode=mode)
        got = fnp.put(a, np.array([0, 9, -8]), np.array([10.0, 20.0, 30.0]), mode=mode, inplace=False)
        np.testing.assert_array_equal(np.asarray(got), want)
    with pytest.raises(ValueError, match="inplace"):
        fnp.put(a, np.array([0]), np.array([1.0]))
    # empty values put nothing (JAX's and NumPy's; it raised ValueError), eagerly and under jit
    want = a.copy()
    np.put(want, 3, np.zeros((0, 4)))
    for put in (fnp.put, jit(fnp.put, static_argnames="inplace")):
        np.testing.assert_array_equal(np.asarray(put(a, 3, np.zeros((0, 4)), inplace=False)), want)
    want = a.copy()
    np.place(want, a > 1, [7.0, 8.0])
    np.testing.assert_array_equal(np.asarray(fnp.place(a, a > 1, np.array([7.0, 8.0]), inplace=False)), want)


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_index_tricks_match_numpy():
    def same(g, w):
        if isinstance(w, tuple | list):
            assert len(g) == len(w)
            for a, b in zip(g, w):
                same(a, b)
        else:
            np.testing.assert_allclose(np.asarray(g), np.asarray(w))
            assert np.asarray(g).shape == np.asarray(w).shape

    same(fnp.r_[1:4, 0, [5, 6]], np.r_[1:4, 0, [5, 6]])
    same(fnp.r_[-1:1:5j], np.r_[-1:1:5j])
    same(fnp.r_["0,2", [1, 2], [3, 4]], np.r_["0,2", [1, 2], [3, 4]])
    same(fnp.r_["1,2,0", [1, 2], [3, 4]], np.r_["1,2,0", [1, 2], [3, 4]])
    same(fnp.r_["r", [1, 2], [3, 4]], np.r_["r", [1, 2], [3, 4]])
    same(fnp.c_[[1, 2, 3], [4, 5, 6]], np.c_[[1, 2, 3], [4, 5, 6]])
    same(fnp.c_[np.ones((2, 2)), 3 * np.ones((2, 1))], np.c_[np.ones((2, 2)), 3 * np.ones((2, 1))])
    same(fnp.mgrid[0:3, 0:4], np.mgrid[0:3, 0:4])
    same(fnp.mgrid[0:1:3j, 1:2:0.5], np.mgrid[0:1:3j, 1:2:0.5])
    same(fnp.ogrid[0:3, 0:4], np.ogrid[0:3, 0:4])
    same(fnp.ix_(np.array([0, 1]), np.array([2, 3, 4])), np.ix_([0, 1], [2, 3, 4]))
    same(fnp.mask_indices(4, fnp.triu, 1), np.mask_indices(4, np.triu, 1))
    same(fnp.fromfunction(lambda i, j: i + 2 * j, (3, 4)), np.fromfunction(lambda i, j: i + 2 * j, (3, 4)))
    assert fnp.s_[1:2, ::3] == np.s_[1:2, ::3] and fnp.index_exp[1] == np.index_exp[1]
    with pytest.raises(ValueError, match="depth"):
        fnp.block([1, 2, [3, 4]])


def test_r_concatenates_traced_arrays():
    f = jit(lambda x: fnp.r_[x, 0.0, x[::-1]])
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(f(x)), [1.0, 2.0, 0.0, 2.0, 1.0])
    np.testing.assert_array_equal(np.asarray(funcgrad.grad(lambda x: fnp.sum(fnp.r_[x, x] ** 2))(x)), 4 * x)


def test_fromfunction_dtype():
    got = fnp.fromfunction(lambda i: i * 2, (4,), dtype=np.int32)
    assert np.asarray(got).dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), [0, 2, 4, 6])


def test_fromfunction_maps_the_function_over_scalar_indices_as_jax():
    # jnp.fromfunction's docstring: the function is vmapped (it sees scalars), may return a pytree
    shapes = []

    def f(x, y):
        shapes.append(x.shape)
        return x + y, x * y

    plus, times = fnp.fromfunction(f, (3, 5))
    assert set(shapes) == {()}
    np.testing.assert_allclose(np.asarray(plus), np.add.outer(np.arange(3.0), np.arange(5.0)))
    np.testing.assert_allclose(np.asarray(times), np.multiply.outer(np.arange(3.0), np.arange(5.0)))
    got = fnp.fromfunction(lambda x: (x + 1) * fnp.arange(3), (2,))
    np.testing.assert_allclose(np.asarray(got), [[0.0, 1.0, 2.0], [0.0, 2.0, 4.0]])


def test_size_of_a_tuple_of_axes():
    y = np.ones((2, 3))
    assert fnp.size(y, axis=(1,)) == 3 and fnp.size(y, axis=(0, 1)) == 6 and fnp.size(y, -1) == 3


def test_ogrid_returns_a_list_as_jax():
    grid = fnp.ogrid[:2, :3]  # jnp.ogrid's docstring: [Array([[0], [1]]), Array([[0, 1, 2]])]
    assert isinstance(grid, list) and [g.tolist() for g in grid] == [[[0], [1]], [[0, 1, 2]]]


def test_pad_with_a_padding_function():
    # jnp.pad's docstring: a callable mode fills each 1-D slice's padding, kwargs passed through
    def custom_pad(vector, width, axis, kwargs):
        lo, hi = kwargs["before_value"], kwargs["after_value"]
        return vector.at[: width[0]].set(lo).at[vector.shape[0] - width[1] :].set(hi)

    assert fnp.pad(np.array([2, 3, 4]), 2, custom_pad, before_value=-10, after_value=10).tolist() == [
        -10,
        -10,
        2,
        3,
        4,
        10,
        10,
    ]
    y = np.arange(6).reshape(2, 3)
    got = fnp.pad(y, ((1, 0), (2, 1)), custom_pad, before_value=-1, after_value=7)
    want = np.pad(y, ((1, 0), (2, 1)))
    want[0, :], want[:, :2], want[:, -1] = -1, -1, 7  # (the second axis pass covers the first's rows)
    np.testing.assert_array_equal(np.asarray(got), want)
