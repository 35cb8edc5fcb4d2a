"""Indexing of funcgrad arrays and tracers: NumPy's basic and advanced indexing (against NumPy),
JAX's out-of-bounds conventions, boolean masks (concrete only, a clear error under jit), the
``.at[]`` functional updates, and their derivatives, batching and compilation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.api import jit
from funcgrad.testing import check_grads

SHAPE = (3, 4, 5)
X = np.arange(60.0).reshape(SHAPE)

INDICES = [
    0,
    -1,
    (1, 2),
    (1, -1, 2),
    slice(None, None, -1),
    (slice(1, None), slice(None, None, 2)),
    (slice(None, None, -2), 1, slice(3, 0, -1)),
    (Ellipsis, 1),
    (None, 0, Ellipsis, None),
    (slice(None), None, slice(1, 3)),
    np.array([2, 0, 2]),
    np.array([0, -1]),  # (a list alone, x[[0, -1]], is JAX's TypeError: test_arraylike_args.py)
    (slice(None), [0, 2]),
    ([0, 1], [1, 2]),
    ([0, 1], slice(None), [1, 2]),
    (slice(None), [0, 1], [1, 2]),
    (0, slice(None), [1, 3]),
    (slice(None), 0, [1, 3]),
    (np.array([[0], [2]]), np.array([0, 3])),
    (Ellipsis, np.array([[0, 1], [2, 3]])),
    (np.array([1, 0]), None, slice(None), np.array([4, 3])),
    (slice(None), None, [0, 1], None),
    X[..., 0] > 20,
    (slice(None), X[0, :, 0] > 5),
    (X[:, :, 0] > 7,),
    (1, slice(None), X[0, 0] > 1),
    (),
    (Ellipsis,),
    np.array(1),
    False,
    (Ellipsis, False),
    (0, True),
    # A scalar True joins the other advanced indices (JAX's lax_numpy_indexing_test found these):
    (0, slice(None, 2), True),
    (slice(None, 2), [0, 2], True),
    (True, slice(None), True),
    # An Ellipsis standing for no axis still separates advanced indices: their axis goes in front.
    (slice(None), [0, 1], Ellipsis, [0, 1]),
]


def _ids(i):
    return repr(i)[:40]


@pytest.mark.parametrize("index", INDICES, ids=_ids)
def test_getitem_matches_numpy(index):
    expected = X[index]
    for x in (X, fnp.asarray(X)):
        out = fnp.asarray(x)[index]
        assert out.shape == expected.shape
        np.testing.assert_array_equal(np.asarray(out), expected)


@st.composite
def basic_index(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    index = draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    return shape, index


@st.composite
def advanced_index(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    index = draw(
        hnp.integer_array_indices(shape, result_shape=hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
    )
    return shape, index


@given(basic_index())
def test_basic_indexing_matches_numpy(case):
    shape, index = case
    x = np.arange(float(np.prod(shape))).reshape(shape)
    out = fnp.asarray(x)[index]
    np.testing.assert_array_equal(np.asarray(out), x[index])
    assert out.shape == x[index].shape


@given(advanced_index())
def test_integer_array_indexing_matches_numpy(case):
    shape, index = case
    x = np.arange(float(np.prod(shape))).reshape(shape)
    np.testing.assert_array_equal(np.asarray(fnp.asarray(x)[index]), x[index])


@pytest.mark.parametrize("index", INDICES, ids=_ids)
def test_getitem_grad_vmap_jit(index):
    rng = np.random.default_rng(0)
    x = rng.normal(size=SHAPE)
    f = lambda v: fnp.asarray(v)[index]  # noqa: E731
    check_grads(f, [x], order=1)
    np.testing.assert_array_equal(np.asarray(jit(f)(x)), x[index])
    batched = np.stack([x, 2 * x])
    out = funcgrad.vmap(f)(batched)
    np.testing.assert_array_equal(np.asarray(out[1]), (2 * x)[index])


def test_traced_indices():
    x = fnp.arange(10.0)
    np.testing.assert_array_equal(np.asarray(jit(lambda i: x[i])(3)), 3.0)
    np.testing.assert_array_equal(np.asarray(jit(lambda i: x[i])(-2)), 8.0)
    np.testing.assert_array_equal(np.asarray(jit(lambda i: x[i])(np.array([1, -1]))), [1.0, 9.0])
    out = funcgrad.vmap(lambda i: x[i])(np.array([0, 5, -1]))
    np.testing.assert_array_equal(np.asarray(out), [0.0, 5.0, 9.0])
    m = fnp.arange(12.0).reshape(3, 4)
    out = funcgrad.vmap(lambda i, j: m[i, j])(np.array([0, 2]), np.array([3, 1]))
    np.testing.assert_array_equal(np.asarray(out), [3.0, 9.0])
    g = funcgrad.grad(lambda v, i: v[i] * 2.0)(np.arange(4.0), 2)
    np.testing.assert_array_equal(np.asarray(g), [0, 0, 2.0, 0])


def test_out_of_bounds_follow_jax():
    x = fnp.arange(10)
    assert int(x[11]) == 9 and int(x[-11]) == 0  # retrieval clamps (Python ints too)
    np.testing.assert_array_equal(np.asarray(x[np.array([12, -12])]), [9, 0])
    np.testing.assert_array_equal(np.asarray(jit(lambda i: x[i])(np.array([12]))), [9])
    f = fnp.arange(3.0)
    assert np.isnan(float(f.at[5].get(mode="fill")))
    assert float(f.at[5].get(mode="fill", fill_value=-1.0)) == -1.0
    assert float(f.at[5].get(mode="clip")) == 2.0
    # Updates drop out-of-bounds indices (and clip with mode="clip").
    np.testing.assert_array_equal(np.asarray(f.at[5].set(9.0)), [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(f.at[np.array([1, 7, -9])].add(1.0)), [0.0, 2.0, 2.0])
    np.testing.assert_array_equal(np.asarray(f.at[5].set(9.0, mode="clip")), [0.0, 1.0, 9.0])
    assert fnp.take(f, np.array([5])).tolist()[0] != fnp.take(f, np.array([5])).tolist()[0]  # NaN fill


def test_boolean_masks():
    x = fnp.asarray(X)
    np.testing.assert_array_equal(np.asarray(x[x > 30]), X[X > 30])
    np.testing.assert_array_equal(np.asarray(x[None, True]), X[None, True])
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[np.ones(2, bool)]
    with pytest.raises(fnp.NonConcreteBooleanIndexError) as info:
        jit(lambda v: v[v > 3])(np.arange(5.0))
    assert isinstance(info.value, IndexError)
    assert "where" in str(info.value) and "size=" in str(info.value)
    with pytest.raises(IndexError):
        funcgrad.vmap(lambda v: v[v > 0])(np.ones((2, 3)))
    # The jit-friendly alternatives.
    out = jit(lambda v: fnp.where(v > 3, v, 0.0))(np.arange(5.0))
    np.testing.assert_array_equal(np.asarray(out), [0, 0, 0, 0, 4.0])


def test_index_errors():
    x = fnp.ones((2, 3))
    with pytest.raises(IndexError, match="Too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="integer"):
        x[np.array([0.5])]
    with pytest.raises(IndexError, match="only integers"):
        x["a"]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ...]
    with pytest.raises(TypeError, match="at\\[index\\]"):
        x[0] = 1


# ----------------------------------------------------------------------------------------------
# Functional updates


UPDATE_INDICES = [
    1,
    (slice(None), 2),
    (Ellipsis, -1),
    (slice(1, None, -1), slice(None, None, 2)),
    (np.array([0, 2]),),
    (np.array([0, 2]), slice(1, 3)),
    (np.array([[0], [2]]), np.array([1, 3])),
    (slice(None), None, [0, 1]),
    X[..., 0, 0] > 20,
]


def _reference(op, x, index, y):
    out = np.array(x, dtype=float)
    if op == "set":
        out[index] = y
    elif op in ("add", "subtract", "multiply", "divide", "min", "max", "power"):
        fn = {
            "add": np.add,
            "subtract": np.subtract,
            "multiply": np.multiply,
            "divide": np.divide,
            "min": np.minimum,
            "max": np.maximum,
            "power": np.power,
        }[op]
        view = out[index]
        fn.at(out, index, np.broadcast_to(y, view.shape)) if _is_advanced(index) else out.__setitem__(
            index, fn(view, y)
        )
    return out


def _is_advanced(index):
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, np.ndarray | list) for i in items)


@pytest.mark.parametrize("op", ["set", "add", "subtract", "multiply", "divide", "min", "max", "power"])
@pytest.mark.parametrize("index", UPDATE_INDICES, ids=_ids)
def test_at_updates_match_numpy(op, index):
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 2.0, size=(3, 4))
    y = np.asarray(rng.uniform(0.5, 2.0, size=np.shape(np.asarray(x)[index])[-1:]))
    out = getattr(fnp.asarray(x).at[index], op)(y)
    np.testing.assert_allclose(np.asarray(out), _reference(op, x, index, y), rtol=1e-12)
    jitted = jit(lambda v, w: getattr(v.at[index], op)(w))(x, y)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(out), rtol=1e-12)


def test_at_repeated_indices_accumulate():
    x = fnp.zeros(3)
    idx = np.array([0, 0, 2])
    np.testing.assert_array_equal(np.asarray(x.at[idx].add(1.0)), [2.0, 0.0, 1.0])
    np.testing.assert_array_equal(np.asarray(fnp.ones(3).at[idx].multiply(3.0)), [9.0, 1.0, 3.0])
    np.testing.assert_array_equal(np.asarray(x.at[idx].min(-1.0)), [-1.0, 0.0, -1.0])


@pytest.mark.parametrize("op", ["set", "add", "multiply", "min", "max"])
def test_at_updates_are_differentiable(op):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 3))
    y = rng.normal(size=(2, 3))
    idx = np.array([3, 1])
    check_grads(lambda v, w: getattr(fnp.asarray(v).at[idx], op)(w, unique_indices=True), [x, y], order=2)
    check_grads(lambda v, w: getattr(fnp.asarray(v).at[1:3, ::-1], op)(w), [x, y], order=1)


def test_at_get_apply_and_vmap():
    x = fnp.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(x.at[:, 1].get()), [1.0, 4.0])
    np.testing.assert_array_equal(np.asarray(x.at[0].apply(fnp.negative)), [[0, -1.0, -2.0], [3, 4, 5]])
    out = funcgrad.vmap(lambda row, i: row.at[i].set(-1.0))(x, np.array([0, 2]))
    np.testing.assert_array_equal(np.asarray(out), [[-1.0, 1, 2], [3, 4, -1.0]])
    out = funcgrad.vmap(lambda row, v: row.at[1].add(v))(x, np.array([10.0, 20.0]))
    np.testing.assert_array_equal(np.asarray(out), [[0, 11.0, 2], [3, 24.0, 5]])
    g = funcgrad.grad(lambda v: fnp.sum(fnp.asarray(v).at[1].set(0.0) ** 2))(np.ones(3))
    np.testing.assert_array_equal(np.asarray(g), [2.0, 0.0, 2.0])


def test_at_on_tracers_under_jit_grad_vmap():
    def f(x, i):
        return fnp.sum(x.at[i].multiply(x[i]) ** 2)

    x = np.array([1.0, 2.0, 3.0])
    g = funcgrad.grad(f)(x, 1)
    np.testing.assert_allclose(np.asarray(g), [2.0, 32.0, 6.0])
    np.testing.assert_allclose(np.asarray(jit(funcgrad.grad(f))(x, 1)), np.asarray(g))
    gs = funcgrad.vmap(funcgrad.grad(f), in_axes=(None, 0))(x, np.array([0, 1]))
    np.testing.assert_allclose(np.asarray(gs[1]), np.asarray(g))


# ----------------------------------------------------------------------------------------------
# nonzero / argwhere / where with size= under jit and vmap


@settings(max_examples=4)
@given(hnp.arrays(np.int8, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), elements=st.integers(-1, 1)))
def test_nonzero_with_size(x):
    expected = np.nonzero(x)
    n = len(expected[0])
    for size in (n, n + 2, max(n - 1, 0)):
        # Eagerly: the same composition that runs under jit (compiled once below).
        out = fnp.nonzero(x, size=size, fill_value=-1)
        for got, exp in zip(out, expected):
            want = np.concatenate([exp, np.full(max(size - n, 0), -1)])[:size]
            np.testing.assert_array_equal(np.asarray(got), want)
    out = jit(lambda v: fnp.argwhere(v, size=n + 1, fill_value=-1))(x)
    want = np.concatenate([np.argwhere(x), np.full((1, x.ndim), -1)])
    np.testing.assert_array_equal(np.asarray(out), want)
    for got, exp in zip(fnp.where(x, size=n), expected):
        np.testing.assert_array_equal(np.asarray(got), exp)


def test_nonzero_under_vmap():
    x = np.array([[0, 3, 0, 4], [5, 0, 0, 0]])
    out = funcgrad.vmap(lambda r: fnp.nonzero(r, size=2)[0])(x)
    np.testing.assert_array_equal(np.asarray(out), [[1, 3], [0, 0]])


def test_wrap_negative_indices_false_makes_negative_indices_out_of_bounds():
    # jax.Array.at's docstring: x.at[-1].set(99, wrap_negative_indices=False, mode='drop') drops
    x = fnp.arange(5.0)
    assert x.at[-1].set(99.0, wrap_negative_indices=False, mode="drop").tolist() == [0, 1, 2, 3, 4]
    assert x.at[-1].set(99.0, wrap_negative_indices=False, mode="clip").tolist() == [99, 1, 2, 3, 4]
    assert np.isnan(float(x.at[-1].get(wrap_negative_indices=False, mode="fill")))
    assert float(x.at[-1].get(wrap_negative_indices=False, mode="clip")) == 0.0
    assert x.at[np.array([-1, 2])].add(1.0, wrap_negative_indices=False).tolist() == [0, 1, 3, 3, 4]
    traced = funcgrad.jit(lambda x, i: x.at[i].set(9.0, wrap_negative_indices=False))(x, -2)
    assert traced.tolist() == [0, 1, 2, 3, 4]
    assert x.at[-1].set(99.0).tolist() == [0, 1, 2, 3, 99]  # (the default wraps)


def test_ds_slices_at_a_traced_start_as_jax():
    # jax.ds's docstring: x[jax.ds(i, size)] with i traced (lax.dynamic_slice_in_dim: a negative
    # start counts from the end, the window is clamped); .at[] updates through it too
    x = fnp.arange(10)
    assert x[funcgrad.ds(4, 2)].tolist() == [4, 5]
    f = funcgrad.jit(lambda x, i: x[funcgrad.ds(i, 3)])
    assert f(x, 8).tolist() == [7, 8, 9] and f(x, -2).tolist() == [7, 8, 9]
    add = funcgrad.jit(lambda x, i: x.at[funcgrad.ds(i, 2)].add(100))
    assert add(x, 3).tolist() == [0, 1, 2, 103, 104, 5, 6, 7, 8, 9]
    y = fnp.arange(12).reshape(3, 4)
    assert y[funcgrad.ds(1, 2), 1:3].tolist() == [[5, 6], [9, 10]]
    assert y[..., funcgrad.ds(1, 2)].tolist() == [[1, 2], [5, 6], [9, 10]]
    assert x[funcgrad.ds(1, 3, 2)].tolist() == [1, 3, 5]
    g = funcgrad.grad(lambda v, i: v[funcgrad.ds(i, 3)].sum())(np.arange(10.0), 2)
    assert g.tolist() == [0, 0, 1, 1, 1, 0, 0, 0, 0, 0]


def test_found_by_jax_indexing_tests_as_jax():
    # JAX's lax_numpy_indexing_test through funcgrad.as_jax: apply with repeated indices applies
    # func again (ufunc.at, JAX's documented rule; it was applied once), an empty boolean mask
    # selects nothing whatever its sizes (was an IndexError), a traced index into an empty axis is
    # an IndexError (was a TypeError from dynamic_slice).
    import jax
    import jax.numpy as jnp

    idx = np.array([1, 1, 1, 3, -1, 5, 5])
    want = jnp.arange(10.0).at[idx].apply(jnp.sin)
    np.testing.assert_allclose(fnp.arange(10.0).at[idx].apply(fnp.sin), want, rtol=1e-6)
    got = jit(lambda x, i: x.at[i].apply(fnp.sin))(fnp.arange(10.0), idx)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    dn = funcgrad.lax.ScatterDimensionNumbers((), (0,), (0,))
    twice = funcgrad.lax.scatter_apply(
        np.ones(3), np.array([[2], [2]]), lambda v: v * 5, dn, update_shape=(2,)
    )
    want = jax.lax.scatter_apply(jnp.ones(3), jnp.array([[2], [2]]), lambda v: v * 5, dn, update_shape=(2,))
    np.testing.assert_array_equal(twice, want)
    for x_shape, m_shape in [((3, 4), (0, 4)), ((3, 4, 5), (3, 0))]:
        m = np.empty(m_shape, bool)
        assert fnp.ones(x_shape)[m].shape == jnp.ones(x_shape)[m].shape == np.ones(x_shape)[m].shape
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 0"):
        jit(lambda i: fnp.ones((2, 0))[0, i])(0)


def test_updates_of_a_weak_array_stay_weak_as_jax():
    # JAX's testIndexingWeakTypes: gather and scatter results have the operand's weak type, eagerly
    # as under jit (eager updates were strong), whatever the update's.
    import jax.numpy as jnp
    from funcgrad.primitives.elementwise.conversion import convert_element_type
    from jax._src.lax.lax import _convert_element_type as jax_convert

    x = convert_element_type(fnp.arange(5.0), np.dtype("float32"), weak_type=True)
    xj = jax_convert(jnp.arange(5.0), np.dtype("float32"), weak_type=True)
    for f in (
        lambda x, m: x.at[0].set(1.0),
        lambda x, m: x.at[0].mul(m.ones((), "float32")),
        lambda x, m: x[m.array([0, 1])],
    ):
        got, want = f(x, fnp), f(xj, jnp)
        assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type) == (np.dtype("float32"), True)
        assert jit(lambda x, f=f: f(x, fnp))(x).weak_type


def test_check_static_indices_flag_as_jax():
    # JAX's ValidateIndicesTest (jax_check_static_indices=True): a static int out of bounds raises
    # IndexError in x[...], under jit and in .at[].get(); by default it is clamped, as in jax.
    import jax

    x, xj = fnp.zeros((2, 3, 5)), jax.numpy.zeros((2, 3, 5))
    for idx in (4, np.index_exp[:, [1, 2], 6], np.index_exp[np.arange(3), 6, None]):
        for config in (funcgrad.config, jax.config):
            config.update("jax_check_static_indices", True)
        try:
            with pytest.raises(IndexError) as got:
                jit(lambda x, idx=idx: x[idx])(x)
            with pytest.raises(IndexError) as want:
                xj.at[idx].get()
        finally:
            for config in (funcgrad.config, jax.config):
                config.update("jax_check_static_indices", False)
        assert str(want.value).startswith(str(got.value))  # (jax adds "(normalize_indices=True)")
        assert x[idx].shape == xj[idx].shape  # clamped again


def test_index_type_errors_are_jax_type_errors_and_numpy_index_errors():
    # JAX raises TypeError for a float or string index (lax_numpy_indexing_test), NumPy IndexError:
    # funcgrad's error is both; the boolean mismatch says JAX's words.
    x = fnp.zeros((2, 3))
    for idx, words in ((0.0, "Indexer must have integer or boolean type"), ("abc", "string indexing")):
        for err in (TypeError, IndexError):
            with pytest.raises(err, match=words):
                x[idx]
    with pytest.raises(TypeError, match="Indexer must have integer or boolean type"):
        x.at[np.array([0.0])].add(1.0)
    with pytest.raises(IndexError, match=r"boolean index did not match shape of indexed array in index 0"):
        x[np.array([True, False, True])]


def test_reads_and_updates_of_an_empty_axis_as_jax():
    # Found by the fuzzer: static ints into an axis of size 0 raise JAX's IndexError in every mode;
    # beside an index array an update raises nothing and updates nothing, while a read (a gather
    # of slices of 1 there) raises JAX's TypeError, fill and drop modes included.
    import jax.numpy as jnp

    for shape in ((0, 3), (2, 0, 3)):
        for mode in (None, "promise_in_bounds", "drop", "clip", "fill"):
            for idx in ((-1,), (-1, Ellipsis, np.array([0, 5])), (0, 1), (Ellipsis, 1), (np.array([0]),)):
                for how in ("add", "get"):
                    out = []
                    for np_ in (jnp, fnp):
                        at = np_.asarray(np.zeros(shape)).at[idx]
                        try:
                            out.append((at.get(mode=mode) if how == "get" else at.add(1.0, mode=mode)).shape)
                        except (IndexError, TypeError) as e:
                            out.append(type(e))
                    assert out[0] == out[1], (shape, mode, idx, how, out)


def test_an_empty_selection_keeps_the_weak_type_and_devices_as_jax():
    import jax

    from funcgrad import lax

    for idx in (np.array([], int), np.zeros(3, bool)):
        got = lax.broadcast(2.0, (3,))[idx]
        want = jax.lax.broadcast(2.0, (3,))[idx]
        assert got.shape == want.shape and got.weak_type == want.weak_type  # (was strong)
    # (a committed array's empty selection stays committed to its device; a one-device process
    # has only device 0, so this checks the commitment)
    x = funcgrad.device_put(fnp.arange(2.0), funcgrad.devices()[0])
    empty = x[fnp.zeros(2, bool)]
    assert empty.shape == (0,) and empty.committed and empty.devices() == x.devices()
    assert jit(lambda a: a[np.array([], int)])(x).shape == (0,)


@pytest.mark.parametrize("transform", [lambda f: f, jit], ids=["eager", "jit"])
def test_at_subtract_of_a_boolean_update_as_jax(transform):
    # (the fuzzer's random programs) JAX subtracts in the array's dtype: the boolean update is
    # converted first, then negated (funcgrad negated the bool: a TypeError, or invalid StableHLO
    # under jit); a boolean array has no subtraction.
    jax = pytest.importorskip("jax")
    a = np.arange(3, dtype=np.int16)
    for x, i, v in (
        (a, 0, True),
        (a, slice(None, 2), np.array([True, False])),
        (np.arange(3, dtype=np.float32), 1, True),
    ):
        ours = transform(lambda x, i=i, v=v: fnp.asarray(x).at[i].subtract(v))(x)
        theirs = jax.numpy.asarray(x).at[i].subtract(v)
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)
    with pytest.raises(TypeError, match="sub does not accept dtype bool"):
        transform(lambda x: fnp.asarray(x).at[0].subtract(True))(np.array([True, False]))


def test_apply_on_booleans_and_fill_values_of_slices_as_jax():
    # (the sharded-program fuzzer, seed 16004) .at[].apply of a boolean array takes func's value
    # back to bool, as the scatter's update region does (funcgrad's repeated-index path joined a
    # float with the bool: select_n's TypeError under jit, a float64 result eagerly; jax's own
    # lowering fails there, but jit o jacfwd of it computes); a fill value is converted only for a
    # gather: an index of slices and newaxis is JAX's static slice (fill_value=1j then works)
    jax = pytest.importorskip("jax")
    b = np.array([[1.0, np.inf, 2, 3], [0, 1, 2, np.nan]], np.float32)

    def apply(np_):
        return lambda v: (
            np_.isfinite(v).at[np.array([[0], [1]])].apply(np_.sin, mode="fill").astype(np.float32)
        )

    want = jax.jit(jax.jacfwd(apply(jax.numpy)))(b)
    jac = jit(funcgrad.jacfwd(apply(fnp)))(b)
    assert jac.shape == want.shape
    np.testing.assert_array_equal(np.asarray(jac), np.asarray(want))
    got = jit(lambda v: fnp.isfinite(v).at[np.array([[0], [1]])].apply(fnp.sin, mode="fill"))(b)
    assert got.dtype == np.bool_ and got.tolist() == np.isfinite(b).tolist()
    for idx in ((None, slice(None)), (Ellipsis, slice(0, 4)), (slice(1, None),), (0,)):
        try:
            want = jax.numpy.asarray(b).at[idx].get(mode="fill", fill_value=1j)
        except TypeError:
            with pytest.raises(TypeError, match="not 'complex'"):
                fnp.asarray(b).at[idx].get(mode="fill", fill_value=1j)
            continue
        got = fnp.asarray(b).at[idx].get(mode="fill", fill_value=1j)
        assert got.dtype == want.dtype and got.shape == want.shape, idx
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=str(idx))


def test_a_numpy_complex_fill_value_of_a_real_array_keeps_its_real_part_as_jax():
    # (the random programs, seed 17002) JAX converts a NumPy complex scalar by NumPy's astype (the
    # real part, with ComplexWarning); a Python complex (or a 0-d array's, by .item()) is float()'s
    # TypeError. (Distinct values: jax's static fill_value compares equal across the two types.)
    jax = pytest.importorskip("jax")
    x, idx = np.array([1.5, 2.0], np.float32), np.array([0, 5])
    for fill in (np.complex64(3 - 1j), np.complex128(-2j)):
        want = jax.numpy.asarray(x).at[idx].get(mode="fill", fill_value=fill)
        for f in (
            lambda v, fill=fill: v.at[idx].get(mode="fill", fill_value=fill),
            jit(lambda v, fill=fill: v.at[idx].get(mode="fill", fill_value=fill)),
        ):
            got = f(fnp.asarray(x))
            assert got.dtype == want.dtype and np.asarray(got).tolist() == np.asarray(want).tolist()
    for fill in (5 - 1j, np.array(7 - 1j)):
        for lib in (jax.numpy, fnp):
            with pytest.raises(TypeError, match="not 'complex'"):
                lib.asarray(x).at[idx].get(mode="fill", fill_value=fill)


def test_at_subtract_converts_the_update_to_the_array_dtype_before_negating_as_jax():
    # (the sharded-program fuzzer, seed 17008) JAX's scatter_sub converts the update to x's dtype:
    # float32.at[1:].subtract(np.uint64(5)) is -5 (funcgrad negated the unsigned update first and
    # wrapped: 4294967291); bool.at[0].subtract(1) converts, subtract(True) is sub's TypeError
    jax = pytest.importorskip("jax")
    for x, v in (
        (np.zeros(3, np.float32), np.uint32(5)),
        (np.zeros(3, np.int32), np.uint8(5)),
        (np.zeros(3, np.int32), 2.7),
        (np.zeros(3, np.int16), True),
        (np.zeros(3, np.uint8), 3),
        (np.zeros(3, bool), 1),
    ):
        want = jax.numpy.asarray(x).at[1:].subtract(v)
        for f in (lambda a, v=v: a.at[1:].subtract(v), jit(lambda a, v=v: a.at[1:].subtract(v))):
            got = f(fnp.asarray(x))
            assert got.dtype == want.dtype and np.asarray(got).tolist() == np.asarray(want).tolist(), (
                x.dtype,
                v,
            )
    for lib in (jax.numpy, fnp):
        with pytest.raises(TypeError, match="sub does not accept dtype bool"):
            lib.zeros(3, bool).at[0].subtract(True)


def test_a_traced_slice_bound_under_jit_is_an_index_error_as_jax():
    # (x[i:] with a traced i: JAX's IndexError, and funcgrad's advice to use dynamic_slice; the
    # fill value's whole-axis check of 24fc5b6, asked first, raised TracerIntegerConversionError)
    jax = pytest.importorskip("jax")
    for f in (lambda x, i: x[i:], lambda x, i: x[:i], lambda x, i: x[None, i:]):
        with pytest.raises(IndexError):
            jax.jit(f)(np.arange(5.0), 2)
        with pytest.raises(IndexError, match="dynamic_slice"):
            jit(f)(np.arange(5.0), 2)


@pytest.mark.parametrize("transform", [lambda f: f, jit], ids=["eager", "jit"])
def test_promise_in_bounds_update_out_of_bounds_as_jax(transform):
    # JAX hands a 'promise_in_bounds' update's indices to XLA's scatter, which drops out-of-bounds
    # updates (funcgrad clamped them: x.at[7].set(9.) wrote x[4]); its derivatives' gathers clamp
    jax = pytest.importorskip("jax")
    x = np.arange(5.0, dtype=np.float32)
    mode = "promise_in_bounds"
    progs = [
        lambda np_, x: x.at[7].set(9.0, mode=mode),
        lambda np_, x: x.at[-7].add(1.0, mode=mode),
        lambda np_, x: x.at[np_.array([-7, 2, 5])].set(9.0, mode=mode),
        lambda np_, x: x.at[7].mul(2.0, mode=mode),
        lambda np_, x: x.at[np_.array([1, 9])].max(20.0, mode=mode),
        lambda np_, x: x.at[2:9].set(1.0, mode=mode),
        lambda np_, x: jax_or_fg(np_).grad(lambda x: (x.at[7].set(3.0, mode=mode) ** 2).sum())(x),
        lambda np_, x: jax_or_fg(np_).grad(lambda y: x.at[np_.array([1, 9])].add(y, mode=mode).sum())(1.0),
        lambda np_, x: jax_or_fg(np_).vmap(lambda r: r.at[7].set(9.0, mode=mode))(np_.stack([x, x])),
    ]

    def jax_or_fg(np_):
        return jax if np_ is jax.numpy else funcgrad

    for prog in progs:
        want = jax.jit(lambda x, p=prog: p(jax.numpy, x))(x)
        got = transform(lambda x, p=prog: p(fnp, x))(fnp.asarray(x))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
