"""NumPy compatibility of funcgrad.numpy's reductions, statistics and array creation: values and
dtypes against NumPy, derivatives against finite differences, vmap against a loop, jit against
eager."""

from __future__ import annotations

import numpy as np
import pytest
from _numpy_harness import (
    ALL,
    NUMERIC,
    arr,
    check_zero_grad,
    const,
    one,
    pick_axis,
    reduction,
    shapes,
)
from _numpy_harness import numpy_case as R
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.core import ConcretizationTypeError

NONEMPTY = shapes(min_side=1)


def _ddof(rng, x):
    return {"ddof": int(rng.integers(2))}


def _no_keepdims(make):
    def wrapped(rng, dtype, shp):
        args, kwargs = make(rng, dtype, shp)
        kwargs.pop("keepdims", None)
        return args, kwargs

    return wrapped


def _singlepick_axis(make):
    def wrapped(rng, dtype, shp):
        args, kwargs = make(rng, dtype, shp)
        if isinstance(kwargs.get("axis"), tuple):
            kwargs["axis"] = 0
        return args, kwargs

    return wrapped


def _quantile_make(scale):
    def make(rng, dtype, shp):
        x = arr(rng, shp[0], dtype)
        method = ["linear", "lower", "higher", "nearest", "midpoint"][rng.integers(5)]
        q = rng.uniform(0, 1, size=int(rng.integers(0, 3)) or ()) * scale
        return [x], {
            "q": q,
            "axis": pick_axis(rng, x.ndim),
            "method": method,
            "keepdims": bool(rng.integers(2)),
        }

    return make


def _keeps_raveled_axis(np_fn):
    """NumPy's ``np_fn`` as JAX's median/quantile family computes it: a 0-d input is raveled first,
    so ``keepdims=True`` keeps that axis (shape ``(..., 1)``; NumPy's is 0-d)."""

    def ref(x, *args, **kwargs):
        out = np_fn(x, *args, **kwargs)
        if np.ndim(x) == 0 and kwargs.get("keepdims"):
            out = np.reshape(out, (*np.shape(out), 1))
        return out

    return ref


def _average_make(rng, dtype, shp):
    x = arr(rng, shp[0], dtype)
    axis = pick_axis(rng, x.ndim, allow_tuple=False)
    if axis is None or rng.integers(2):
        w = arr(rng, x.shape, dtype, 0.5, 2.0)
    else:
        w = arr(rng, (x.shape[axis],), dtype, 0.5, 2.0)
    return [x, w], {"axis": axis, "returned": bool(rng.integers(2))}


REDUCTIONS = [
    R("sum", dtypes=ALL),
    R("prod", reduction(0.5, 1.5), dtypes=NUMERIC),
    R("mean", dtypes=NUMERIC),
    R("var", reduction(extra=_ddof), dtypes=NUMERIC, shapes=NONEMPTY),
    R("std", reduction(extra=_ddof), dtypes=NUMERIC, shapes=shapes(min_side=2)),
    R("max", dtypes=ALL, shapes=NONEMPTY),
    R("min", dtypes=ALL, shapes=NONEMPTY),
    R("amax", dtypes=NUMERIC, shapes=NONEMPTY),
    R("amin", dtypes=NUMERIC, shapes=NONEMPTY),
    R("ptp", dtypes=NUMERIC, shapes=NONEMPTY),
    R("argmax", _singlepick_axis(reduction()), dtypes=ALL, shapes=NONEMPTY, grad=False),
    R("argmin", _singlepick_axis(reduction()), dtypes=ALL, shapes=NONEMPTY, grad=False),
    R("all", dtypes=ALL, grad=False),
    R("any", dtypes=ALL, grad=False),
    R("count_nonzero", reduction(-1, 1), dtypes=ALL, grad=False),
    R("cumsum", _no_keepdims(_singlepick_axis(reduction())), dtypes=ALL),
    R("cumprod", _no_keepdims(_singlepick_axis(reduction(0.5, 1.5))), dtypes=NUMERIC),
    R(
        "cumulative_sum",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"axis": 0, "include_initial": True}),
        dtypes=NUMERIC,
        shapes=shapes(min_dims=1),
    ),
    R(
        "average",
        _average_make,
        shapes=NONEMPTY,
        fn=lambda a, w, **k: fnp.average(a, weights=w, **k),
        ref=lambda a, w, **k: np.average(a, weights=w, **k),
    ),
    R("median", reduction(allow_tuple=False), shapes=NONEMPTY, ref=_keeps_raveled_axis(np.median)),
    R("quantile", _quantile_make(1.0), shapes=NONEMPTY, order=1, ref=_keeps_raveled_axis(np.quantile)),
    R("percentile", _quantile_make(100.0), shapes=NONEMPTY, order=1, ref=_keeps_raveled_axis(np.percentile)),
    R("nansum", reduction(nan=True), grad=False),
    R("nanprod", reduction(0.5, 1.5, nan=True), grad=False),
    R("nanmean", reduction(nan=True), grad=False),
    R("nanmax", reduction(nan=True), shapes=NONEMPTY, grad=False),
    R("nanmin", reduction(nan=True), shapes=NONEMPTY, grad=False),
    R("nanvar", reduction(nan=True), grad=False),
    R("nanstd", reduction(nan=True), grad=False),
    R("nansum", reduction(), id="nansum-grad"),
    R("nanmean", reduction(), shapes=NONEMPTY, id="nanmean-grad"),
    R("nanmax", reduction(), shapes=NONEMPTY, id="nanmax-grad"),
]


# ----------------------------------------------------------------------------------------------
# Creation


# ----------------------------------------------------------------------------------------------
# Creation


CREATION = [
    R("zeros", const(shape=(2, 3)), grad=False),
    R("ones", const(shape=4, dtype=np.int32), grad=False),
    R(
        "empty",
        const(shape=(0, 2)),
        grad=False,
        check_dtype=True,
        fn=lambda shape: fnp.zeros(shape),
        ref=lambda shape: np.zeros(shape),
    ),
    R(
        "full",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {}),
        dtypes=ALL,
        shapes=shapes(max_dims=1),
        fn=lambda v: fnp.full((2, *np.shape(v)), v),
        ref=lambda v: np.full((2, *np.shape(v)), v),
    ),
    R("zeros_like", one(), dtypes=ALL, grad=False),
    R("ones_like", one(), dtypes=ALL, grad=False),
    R(
        "full_like",
        one(),
        dtypes=ALL,
        fn=lambda a: fnp.full_like(a, 7),
        ref=lambda a: np.full_like(a, 7),
        grad=False,
    ),
    R("empty_like", one(), dtypes=ALL, fn=fnp.zeros_like, ref=np.zeros_like, grad=False),
    R("array", one(), dtypes=ALL, fn=lambda a: fnp.array(a, ndmin=3), ref=lambda a: np.array(a, ndmin=3)),
    R("asarray", one(), dtypes=ALL),
    R("arange", const(start=1, stop=7, step=2), grad=False),
    R("arange", const(start=0.5, stop=2.0, step=0.25), grad=False, id="arange-float"),
    R(
        "linspace",
        lambda rng, dt, shp: (
            [arr(rng, shp[0], dt), arr(rng, shp[0], dt)],
            {
                "num": int(rng.integers(0, 6)),
                "endpoint": bool(rng.integers(2)),
                "axis": -1 if len(shp[0]) and rng.integers(2) else 0,
            },
        ),
        shapes=shapes(max_dims=2),
    ),
    R(
        "logspace",
        lambda rng, dt, shp: (
            [arr(rng, shp[0], dt, -1, 1), arr(rng, shp[0], dt, -1, 1)],
            {"num": int(rng.integers(1, 5)), "base": 2.0},
        ),
        shapes=shapes(max_dims=1),
    ),
    R(
        "geomspace",
        lambda rng, dt, shp: (
            [arr(rng, shp[0], dt, 0.5, 2), arr(rng, shp[0], dt, 3, 5)],
            {"num": int(rng.integers(1, 5))},
        ),
        shapes=shapes(max_dims=1),
        expected_dtype=lambda dt: dt,  # float32 stays float32 (NumPy's geomspace computes in float64)
    ),
    R("eye", const(N=3, M=4, k=1), grad=False),
    R("identity", const(n=3), grad=False),
    R("tri", const(N=3, M=2, k=-1), grad=False),
    R(
        "tril",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"k": int(rng.integers(-2, 3))}),
        dtypes=ALL,
        shapes=shapes(min_dims=2),
    ),
    R(
        "triu",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"k": int(rng.integers(-2, 3))}),
        dtypes=ALL,
        shapes=shapes(min_dims=2),
    ),
    R(
        "diag",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"k": int(rng.integers(-2, 3))}),
        dtypes=ALL,
        shapes=shapes(min_dims=1, max_dims=2),
    ),
    R(
        "diagflat",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"k": int(rng.integers(-2, 3))}),
        dtypes=ALL,
        shapes=shapes(max_dims=2),
    ),
    R(
        "meshgrid",
        lambda rng, dt, shp: (
            [arr(rng, shp[0], dt), arr(rng, shp[1], dt)],
            {"indexing": ["xy", "ij"][rng.integers(2)]},
        ),
        shapes=shapes(2, min_dims=1, max_dims=1, broadcast=False),
        dtypes=ALL,
    ),
    R("indices", const(dimensions=(2, 3)), grad=False),
]


# ----------------------------------------------------------------------------------------------
# Shape manipulation, joining, splitting


# The generic checks of this table (values, derivatives, vmap, jit) are tests/surface/test_surface_cases.py's.
CASES = REDUCTIONS + CREATION


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c.name in ("argmax", "argmin", "all", "any", "count_nonzero")],
    ids=repr,
)
@settings(max_examples=2)
@given(data=st.data())
def test_integer_valued_functions_have_zero_grads(case, data):
    check_zero_grad(case, data)


# nanquantile / nanpercentile / nanmedian: traceable, against NumPy on slices with NaNs.
_NAN_ROWS = np.array(
    [[1.0, 2.0, np.nan, 7.0], [4.0, 5.0, 6.0, 0.5], [np.nan] * 4, [3.0, np.nan, np.nan, 1.0]]
)


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
@pytest.mark.parametrize("axis", [1, 0, None])
@pytest.mark.parametrize("q", [0.5, np.array([0.1, 0.75])])
def test_nanquantile_matches_numpy_eager_and_jit(method, axis, q):
    expected = np.nanquantile(_NAN_ROWS, q, axis=axis, method=method)
    if method == "nearest":  # JAX's tie rule: halfway takes the lower neighbour (NumPy: even)
        count = np.sum(~np.isnan(_NAN_ROWS), axis=axis)
        pos = np.multiply.outer(q, np.maximum(count, 1) - 1)
        low, high = (np.nanquantile(_NAN_ROWS, q, axis=axis, method=m) for m in ("lower", "higher"))
        expected = np.where(pos - np.floor(pos) <= 0.5, low, high)
    got = fnp.nanquantile(_NAN_ROWS, q, axis=axis, method=method)
    jitted = funcgrad.jit(lambda a: fnp.nanquantile(a, q, axis=axis, method=method))(_NAN_ROWS)
    for g in (got, jitted):
        np.testing.assert_allclose(np.asarray(g), expected, equal_nan=True)
    kept = fnp.nanquantile(_NAN_ROWS, q, axis=axis, method=method, keepdims=True)
    assert kept.shape == np.nanquantile(_NAN_ROWS, q, axis=axis, method=method, keepdims=True).shape


def test_nanpercentile_nanmedian_dtypes_vmap_and_grad():
    x32 = _NAN_ROWS.astype(np.float32)
    assert fnp.nanpercentile(x32, 30, axis=1).dtype == np.float32  # a Python q is weak
    np.testing.assert_allclose(
        np.asarray(fnp.nanpercentile(_NAN_ROWS, 30, axis=1)), np.nanpercentile(_NAN_ROWS, 30, axis=1)
    )
    np.testing.assert_allclose(
        np.asarray(funcgrad.vmap(fnp.nanmedian)(_NAN_ROWS)), np.nanmedian(_NAN_ROWS, axis=1)
    )
    # d nanmedian / dx: 1/2 on the two middle non-NaN values of an even count, 0 elsewhere.
    x = np.array([1.0, np.nan, 3.0, 4.0, 0.0])
    g = funcgrad.grad(fnp.nanmedian)(x)
    np.testing.assert_array_equal(np.asarray(g), [0.5, 0.0, 0.5, 0.0, 0.0])
    eps = 1e-6
    fd = [
        (float(fnp.nanmedian(x + eps * e)) - float(fnp.nanmedian(x - eps * e))) / (2 * eps) for e in np.eye(5)
    ]
    np.testing.assert_allclose(np.nan_to_num(fd), np.asarray(g), atol=1e-6)


@pytest.mark.parametrize("fn, q", [("nanmedian", None), ("nanquantile", 0.5), ("nanquantile", [0.2, 0.9])])
def test_nan_quantiles_over_an_empty_axis_of_an_empty_result(fn, q):
    # An empty reduced axis with an empty kept axis is an empty result, as in jax and NumPy (the
    # differential fuzzer found nanmedian(zeros((0, 2, 0)), axis=0) raising); with nonempty slices
    # there is nothing to rank, and it raises.
    import jax.numpy as jnp

    x = np.zeros((0, 2, 0), np.float32)
    args = (x,) if q is None else (x, np.asarray(q, np.float32))
    want = getattr(jnp, fn)(*args, axis=0)
    for got in (
        getattr(fnp, fn)(*args, axis=0),
        funcgrad.jit(getattr(fnp, fn), static_argnames="axis")(*args, axis=0),
    ):
        assert (got.shape, got.dtype) == (want.shape, want.dtype)
    grad = funcgrad.grad(lambda a: fnp.sum(getattr(fnp, fn)(a, *args[1:], axis=0)))(x)
    assert grad.shape == x.shape
    with pytest.raises(ValueError, match="empty"):
        getattr(fnp, fn)(np.zeros((0, 3)), *args[1:], axis=0)


@pytest.mark.parametrize("fn, q", [("median", None), ("quantile", 0.5), ("percentile", [20.0, 90.0])])
def test_quantiles_over_an_empty_axis_of_an_empty_result_raise_as_jax(fn, q):
    # jax's quantile/median/percentile (not the nan- forms, above) raise over an empty reduced axis
    # even where the result is empty; funcgrad computed an empty result (the four-way fuzzer,
    # percentile(zeros((0, 0)), 50, axis=1)), now it raises, eagerly and traced
    import jax
    import jax.numpy as jnp

    x = np.zeros((0, 0), np.float32)
    args = (x,) if q is None else (x, np.asarray(q, np.float32))
    with pytest.raises(TypeError):
        getattr(jnp, fn)(*args, axis=1)
    with pytest.raises(TypeError):
        jax.jit(getattr(jnp, fn), static_argnames="axis")(*args, axis=1)
    for f in (getattr(fnp, fn), funcgrad.jit(getattr(fnp, fn), static_argnames="axis")):
        with pytest.raises(ValueError, match="empty"):
            f(*args, axis=1)


# ----------------------------------------------------------------------------------------------
# Histograms (numpy/histograms.py)


RNG = np.random.default_rng(0)


SAMPLE = RNG.normal(size=(60, 3))


WEIGHTS = RNG.random(60)


def _close(got, want):
    if isinstance(want, tuple | list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
    else:
        np.testing.assert_allclose(np.asarray(got), np.asarray(want, dtype=float), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"bins": 4},
        {"bins": [2, 3, 4]},
        {"bins": 3, "range": [(-1, 1), (-2, 2), (0, 1)]},
        {"bins": 3, "weights": WEIGHTS},
        {"bins": 3, "density": True},
        {"bins": [np.array([-3.0, 0.0, 3.0]), 2, np.linspace(-1, 1, 5)]},
    ],
)
def test_histogramdd_matches_numpy(kwargs):
    _close(fnp.histogramdd(SAMPLE, **kwargs), np.histogramdd(SAMPLE, **kwargs))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"bins": 5},
        {"bins": [3, 4]},
        {"bins": [-2.0, -1.0, 0.0, 1.0, 2.0]},
        {"bins": 4, "density": True, "weights": WEIGHTS},
        {"bins": (np.array([-3.0, 0.0, 3.0]), 3)},
    ],
)
def test_histogram2d_matches_numpy(kwargs):
    x, y = SAMPLE[:, 0], SAMPLE[:, 1]
    _close(fnp.histogram2d(x, y, **kwargs), np.histogram2d(x, y, **kwargs))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"bins": 7},
        {"bins": "auto"},
        {"bins": "fd"},
        {"bins": 3, "range": (0, 1)},
        {"bins": np.array([0, 1, 5.0])},
    ],
)
def test_histogram_bin_edges_matches_numpy(kwargs):
    x = SAMPLE[:, 0]
    _close(fnp.histogram_bin_edges(x, **kwargs), np.histogram_bin_edges(x, **kwargs))
    _close(fnp.histogram_bin_edges(np.array([3, 3]), 2), np.histogram_bin_edges(np.array([3, 3]), 2))


def test_histograms_trace_and_differentiate_in_the_weights():
    x, y = SAMPLE[:, 0], SAMPLE[:, 1]
    _close(funcgrad.jit(lambda x: fnp.histogram_bin_edges(x, 4))(x), np.histogram_bin_edges(x, 4))
    _close(funcgrad.jit(lambda x, y: fnp.histogram2d(x, y, 3)[0])(x, y), np.histogram2d(x, y, 3)[0])
    g = funcgrad.grad(lambda w: fnp.histogram2d(x, y, 3, weights=w)[0][1, 1])(WEIGHTS)
    h, xe, ye = np.histogram2d(x, y, 3)
    inside = (np.searchsorted(xe, x, "right") == 2) & (np.searchsorted(ye, y, "right") == 2)
    np.testing.assert_array_equal(np.asarray(g), inside.astype(float))
    with pytest.raises(ConcretizationTypeError):
        funcgrad.jit(lambda x: fnp.histogram_bin_edges(x, "auto"))(x)
    # data with NaN: jax's edges (NaN from the NaN maximum; NumPy refuses a non-finite range)
    import jax.numpy as jnp

    got, want = (
        fnp.histogram_bin_edges(np.array([1.0, np.nan]), 3),
        jnp.histogram_bin_edges(np.array([1.0, np.nan]), 3),
    )
    assert np.isnan(np.asarray(got)).tolist() == np.isnan(np.asarray(want)).tolist()


@pytest.mark.parametrize(
    "x", [np.array([1, 2, 3, 4], np.int8), np.array([0.3, 0.1, 0.9, 0.7, 0.5, 0.1]), np.array([2.0, 2.0])]
)
def test_histogram_of_a_traced_array_takes_its_range_in_the_program(x):
    # jax's histogram under jit computes the data's range (the fuzzer: funcgrad required range=)
    import jax
    import jax.numpy as jnp

    got = funcgrad.jit(lambda x: fnp.histogram(x, bins=3))(x)
    want = jax.jit(lambda x: jnp.histogram(x, bins=3))(x)
    for g, w, e in zip(got, want, fnp.histogram(x, bins=3)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-12)


def test_histogram_of_an_empty_array_without_a_range_raises_as_jax():
    # jax takes the data's minimum and raises (NumPy bins over [0, 1]); funcgrad computed NumPy's
    # eagerly and raised AttributeError under jit (the four-way fuzzer). With a range both compute.
    import jax
    import jax.numpy as jnp

    x = np.zeros(0)
    calls = [
        lambda m, x: m.histogram(x, bins=3),
        lambda m, x: m.histogram_bin_edges(x, bins=3),
        lambda m, x: m.histogram2d(x, x, bins=2),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="zero-size array") as want:
            call(jnp, x)
        for side in (lambda x, c=call: c(fnp, x), funcgrad.jit(lambda x, c=call: c(fnp, x))):
            with pytest.raises(ValueError) as got:
                side(x)
            assert str(got.value) == str(want.value)
    got = funcgrad.jit(lambda x: fnp.histogram(x, bins=3, range=(0.0, 2.0)))(x)
    want = jax.jit(lambda x: jnp.histogram(x, bins=3, range=(0.0, 2.0)))(x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


def test_linear_quantiles_weigh_the_neighbours_as_jax():
    # JAX's interpolation low * (1 - t) + high * t (funcgrad had NumPy's lerp, b - (b - a)(1 - t)
    # for t >= 0.5: quantile([inf, -3], 0.5) was inf - inf = NaN where jax gives inf, and 150 of
    # 1960 random float64 quantiles/percentiles differed from jax's in the last bits); the four-way
    # fuzzer found the NaN (nanquantile, eager and jit, both modes)
    import jax.numpy as jnp

    rng = np.random.default_rng(3)
    xs = [
        np.array([np.inf, -3.0]),
        np.array([-np.inf, 3.0]),
        np.array([np.inf, np.nan, 1.0]),
        np.array([1.0, np.inf]),
    ]
    for x in xs + [rng.normal(size=7) for _ in range(8)]:
        for q in (0.5, 0.0, 0.3, 0.77, np.array([0.1, 0.9])):
            for fn in ("quantile", "nanquantile"):
                for method in ("linear", "midpoint"):
                    got = getattr(fnp, fn)(x, q, method=method)
                    want = getattr(jnp, fn)(x.astype(np.float32), np.float32(q), method=method)
                    # (jax in its 32-bit mode here: funcgrad's float32 against it, bit for bit)
                    got32 = getattr(fnp, fn)(x.astype(np.float32), np.float32(q), method=method)
                    np.testing.assert_array_equal(np.asarray(got32), np.asarray(want))
                    assert np.isnan(np.asarray(got)).tolist() == np.isnan(np.asarray(want)).tolist()
    assert float(fnp.quantile(np.array([np.inf, -3.0]), 0.5)) == np.inf


def test_histograms_are_jax_s_eager_and_traced():
    # One formula eager and traced, JAX's (the four-way fuzzer: histogram of [inf, inf, inf] eagerly
    # had NumPy's float64 linspace edges [nan, nan, nan, inf] and dropped the values -- counts
    # [0, 0, 0] where jax gives edges [nan, inf, inf, inf] and [0, 0, 3]; a range that is infinite
    # or reversed raised NumPy's ValueError where jax computes; density divided in NumPy's order)
    import jax
    import jax.numpy as jnp
    from jax._src import config as jax_config

    inf = np.inf
    rng = np.random.default_rng(4)
    xs = [np.array([inf, inf, inf]), np.array([1.0, 1.0]), np.array([-inf, 2.0]), np.array([np.nan, 1.0])]
    kws = [
        {"bins": 3}, {"bins": 4, "range": (0.0, 2.0)}, {"bins": 2, "range": (1.0, 1.0)},
        {"bins": 3, "density": True}, {"bins": 2, "range": (0.0, inf)}, {"bins": 2, "range": (2.0, 0.0)},
    ]  # fmt: skip
    for x in xs + [rng.normal(size=9)]:
        for dt in (np.float32, np.float64):
            for kw in kws + [{"bins": 3, "weights": np.abs(x.astype(dt)) + 1, "density": True}]:
                with jax_config.enable_x64(True):
                    want = jnp.histogram(x.astype(dt), **kw)
                for f in (fnp.histogram, funcgrad.jit(lambda x, kw=kw: fnp.histogram(x, **kw))):
                    got = f(x.astype(dt), **kw) if f is fnp.histogram else f(x.astype(dt))
                    for g, w in zip(got, want):
                        assert repr(np.asarray(g).tolist()) == repr(np.asarray(w).tolist()), (x, dt, kw)
    assert jax.jit(lambda x: jnp.histogram(x, 3))(xs[0])[0].tolist() == [0.0, 0.0, 3.0]


def test_nearest_quantile_takes_the_lower_neighbour_at_a_tie_as_jax():
    # jnp.percentile's and jnp.quantile's docstrings
    assert fnp.percentile(np.arange(7), np.array([25, 50, 75]), method="nearest").tolist() == [1, 3, 4]
    assert fnp.quantile(np.arange(10.0), np.array([0.25, 0.5, 0.75]), method="nearest").tolist() == [2, 4, 7]


def test_nanmax_nanmin_where_with_initial_ignore_nans_of_unselected_elements():
    # jnp.nanmax's docstring (and NumPy): a slice whose selected part is empty gives initial;
    # only a slice that is NaN throughout gives NaN
    nan = np.nan
    x = np.array([[8, nan, 4, 6], [nan, -2, nan, -4], [-2, 1, 7, nan]])
    where = np.array([[True], [False], [False]])
    for f, ref in ((fnp.nanmax, np.nanmax), (fnp.nanmin, np.nanmin)):
        got = f(x, axis=0, keepdims=True, initial=0, where=where)
        np.testing.assert_array_equal(np.asarray(got), ref(x, axis=0, keepdims=True, initial=0, where=where))


def test_weighted_inverted_cdf_quantiles():
    # jnp.quantile's/percentile's/nanquantile's docstrings, and a closed form: the first sorted value
    # whose cumulative weight reaches q of the total
    x, w = np.array([1, 2, 3, 4, 5]), np.array([1, 1, 2, 1, 1])
    assert float(fnp.quantile(x, 0.5, weights=w, method="inverted_cdf")) == 3.0
    assert float(fnp.percentile(x, 50, weights=w, method="inverted_cdf")) == 3.0
    xn = np.array([np.nan, 2, 3, 4, 5.0])
    assert float(fnp.nanquantile(xn, 0.5, weights=w, method="inverted_cdf")) == 3.0  # (cum 1, 3, 4, 5)
    assert np.isnan(float(fnp.quantile(xn, 0.5, weights=w, method="inverted_cdf")))
    rng = np.random.default_rng(0)
    a, wa = rng.random((3, 7)), rng.random((3, 7))
    got = funcgrad.jit(lambda a, w: fnp.quantile(a, 0.3, axis=1, weights=w, method="inverted_cdf"))(a, wa)
    order = np.argsort(a, axis=1)
    s, c = np.take_along_axis(a, order, 1), np.cumsum(np.take_along_axis(wa, order, 1), axis=1)
    want = [s[i, np.argmax(c[i] >= 0.3 * c[i, -1])] for i in range(3)]
    np.testing.assert_allclose(np.asarray(got), want)
    with pytest.raises(NotImplementedError, match="inverted_cdf"):
        fnp.quantile(x, 0.5, weights=w)


def test_unweighted_histogram2d_counts_are_integers_as_jax():
    # jnp.histogram2d's docstring: counts of edges given as arrays print as int32
    x, y = np.array([1, 2, 3, 10, 11, 15, 19, 25]), np.array([2, 5, 6, 8, 13, 16, 17, 18])
    edges = np.array([0, 10, 20, 30])
    counts = fnp.histogram2d(x, y, bins=[edges, edges])[0]
    assert fnp.issubdtype(counts.dtype, fnp.integer) and counts.tolist() == [[3, 0, 0], [1, 3, 0], [0, 1, 0]]
    assert fnp.issubdtype(fnp.histogram2d(x, y, density=True)[0].dtype, fnp.floating)


def test_max_min_initial_takes_the_array_dtype_as_jax():
    # (the fuzzer: np.min(int array, initial=2.5) was a weak float) initial converts to the array's
    # dtype, as in jax and NumPy: max([1, 2], initial=2.5) is the int 2
    import jax.numpy as jnp
    from jax._src import config as jax_config

    for f, g in ((fnp.max, jnp.max), (fnp.min, jnp.min)):
        for x, init in ((np.array([1, 2]), 2.5), (np.float32([1, 2]), np.float64(2.5)), (np.int8([1, 5]), 3)):
            got = f(x, initial=init)
            with jax_config.enable_x64(True):
                want = g(x, initial=init)
            assert (got.dtype, got.weak_type, got.tolist()) == (want.dtype, want.weak_type, want.tolist())


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "ptp", "amax", "argmax", "cumsum", "cumprod"])
def test_reductions_of_weak_values_are_strong_as_jax(name):
    # (the fuzzer, now comparing weak types) jnp.sum(2.0) is a strong float64, so it promotes as
    # one: jnp.sum(2.0) + float32 is float64; funcgrad's stayed weak
    import jax
    import jax.numpy as jnp
    from jax._src import config as jax_config

    for v in (2.0, 3):
        for T, np_ in ((funcgrad, fnp), (jax, jnp)):
            with jax_config.enable_x64(True):
                eager, staged = getattr(np_, name)(v), T.jit(getattr(np_, name))(v)
                results = [(x.dtype, x.weak_type) for x in (eager, staged)]
            if T is funcgrad:
                ours = results
        assert ours == results, (name, v)


_JAX_CASES = {
    # found by JAX's own lax_numpy_reducers_test through funcgrad.as_jax (tests/integration/suites/jax_tests)
    "nanmax_empty_initial": lambda m, x: m.nanmax(m.zeros((3, 0), np.complex64), initial=1),
    "nanmin_all_nan_initial": lambda m, x: m.nanmin(
        m.array([[np.nan, np.nan], [1, 2]], np.float32), axis=1, initial=5.0
    ),
    "var_complex_dtype": lambda m, x: m.var(x.astype(np.complex64) * (1 + 2j), dtype=np.complex64),
    "std_complex_dtype": lambda m, x: m.std(x.astype(np.complex64), axis=0, dtype=np.complex64),
    "nanvar_complex_dtype": lambda m, x: m.nanvar(
        m.array([1 + 1j, np.nan, 2 - 1j], np.complex64), dtype=np.complex64
    ),
    "sum_bool_no_promote": lambda m, x: m.sum(x > 0, axis=1, promote_integers=False),
    "prod_bool_no_promote": lambda m, x: m.prod(x > -9, axis=0, promote_integers=False, initial=0),
    "cov_no_samples": lambda m, x: m.cov(m.zeros((3, 0), np.float32)),
    "cov_one_var_no_samples": lambda m, x: m.cov(m.zeros((0,), np.float32)),
    "cov_rowvar_false_one_row": lambda m, x: m.cov(x[:1], rowvar=False),
    "cov_weights": lambda m, x: m.cov(
        x, fweights=np.array([1, 2, 3, 1]), aweights=np.array([0.5, 1, 2, 1], np.float32)
    ),
    "cov_dtype": lambda m, x: m.cov(x, dtype=np.float32),
    # quantile: a's dtype, q converted to it (no promotion with q under 'strict'); nan-quantiles of
    # a vector q with keepdims broadcast without implicit rank promotion
    # cumulative sums/products with dtype=bool: counted in the default integer, then converted
    "cumsum_to_bool": lambda m, x: m.cumsum(x.round(), axis=1, dtype=bool),
    "cumprod_to_bool": lambda m, x: m.cumprod(x > 0, axis=0, dtype=bool),
    "cumulative_sum_to_bool": lambda m, x: m.cumulative_sum(m.zeros((0, 4), bool), axis=0, dtype=bool),
    # average with N-D weights along a tuple of axes, in the order the axes are named
    "average_nd_weights": lambda m, x: m.average(
        x.reshape(3, 2, 2), (2, 0), np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)
    ),
    "quantile_f16_q_f32": lambda m, x: m.quantile(x.astype(np.float16), np.float32([0.5, 0.9]), axis=1),
    "nanpercentile_keepdims": lambda m, x: m.nanpercentile(
        x, np.float32([10, 50, 90]), axis=1, keepdims=True, method="higher"
    ),
}


@pytest.mark.parametrize("case", sorted(_JAX_CASES))
def test_reductions_as_jax(case):
    jax = pytest.importorskip("jax")
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    promotion = "strict" if "quantile" in case or "percentile" in case else "standard"
    with (
        funcgrad.numpy_rank_promotion("raise"),
        jax.numpy_rank_promotion("raise"),
        funcgrad.numpy_dtype_promotion(promotion),
        jax.numpy_dtype_promotion(promotion),
    ):
        got, want = _JAX_CASES[case](fnp, x), _JAX_CASES[case](jax.numpy, x)
    assert got.shape == want.shape and got.dtype.kind == want.dtype.kind, (got, want)
    if want.dtype.kind in "fc":
        assert got.dtype == want.dtype  # (both sides at float32/complex64 here)
    rtol = 5e-3 if want.dtype == np.float16 else 1e-5  # (float16: the interpolation's rounding)
    np.testing.assert_allclose(np.asarray(got, want.dtype), np.asarray(want), rtol=rtol, equal_nan=True)


def test_searchsorted_methods_agree_with_jax():
    # (the fuzzer: method='scan_unrolled' raised) every method JAX names gives the same indices
    import jax.numpy as jnp

    a, v = np.array([-1.0, 0.0, 0.0, 2.0]), np.array([[0.0, 3.0], [-2.0, np.nan]])
    for method in ("scan", "scan_unrolled", "sort", "compare_all"):
        for side in ("left", "right"):
            got = fnp.searchsorted(a, v, side=side, method=method)
            want = jnp.searchsorted(a, v, side=side, method=method)
            assert got.tolist() == want.tolist(), (method, side)


@pytest.mark.parametrize(
    "name", ["sum", "prod", "max", "nanmin", "nansum", "mean", "var", "std", "all", "any"]
)
def test_reductions_refuse_a_non_boolean_where_and_a_non_scalar_initial_as_jax(name):
    # JAX's lax_numpy_reducers_test (testReducerWhereNonBooleanError*, testReducerBadInitial)
    x = np.arange(10.0).reshape(2, 5)
    with pytest.raises(ValueError, match=f"jnp.{name}: where must be None or a boolean array"):
        getattr(fnp, name)(x, axis=-1, where=np.ones(5, int))
    if name in ("sum", "prod", "max", "nanmin", "nansum"):
        with pytest.raises(
            ValueError, match=r"initial value must be a scalar. Got array of shape \(1, 2, 3\)"
        ):
            getattr(fnp, name)(x, axis=-1, initial=np.zeros((1, 2, 3)))


def test_var_and_nanvar_derivatives_without_degrees_of_freedom_as_jax():
    # Found by the fuzzer (x32 long run: jvp of nanvar of an all-NaN value was NaN, jax 0): where no
    # more than ddof values are left, JAX's var is a select after sum / (n - ddof) (forward tangent
    # 0; grad NaN at n == ddof, 0 below), its nanvar divides by 1 there (grad 0 too).
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    nan = np.nan
    cases = [
        ("nanvar", {}, np.array([nan, nan])),
        ("nanvar", {"ddof": 1}, np.array([1.0, nan])),
        ("var", {"ddof": 1}, np.array([2.0])),
        ("var", {"ddof": 2}, np.array([2.0])),
        ("var", {"where": np.array([False, False])}, np.array([1.0, 2.0])),
        ("nanvar", {"axis": 1, "ddof": 1}, np.array([[1.0, nan], [1.0, 2.0]])),
    ]
    for name, kw, x in cases:
        x = x.astype(np.float32)
        for lib, mod in ((funcgrad, fnp), (jax, jnp)):
            f = lambda v, mod=mod: mod.sum(getattr(mod, name)(v, **kw))  # noqa: B023
            tangent = np.asarray(lib.jvp(f, (x,), (np.ones_like(x),))[1])
            grad = np.asarray(lib.grad(f)(x))
            if lib is funcgrad:
                got = tangent, grad
        np.testing.assert_array_equal(got[0], tangent, err_msg=f"{name} {kw} jvp")
        np.testing.assert_array_equal(got[1], grad, err_msg=f"{name} {kw} grad")


def test_product_derivatives_over_infinities_and_nans_as_jax():
    # Found by the fuzzer (second derivatives of nanprod over inf + NaN slices): JAX differentiates
    # reduce_prod through a pairwise tree of products (its primal too), so 0 * inf and inf - inf
    # land where jax's do, and bfloat16 values round as jax's.
    jax = pytest.importorskip("jax")
    inf, nan = np.inf, np.nan
    x = np.array([[0.0, inf, inf, 2.0, -1.5], [nan, -inf, 0.5, 3.0, 0.0], [inf, nan, -2.0, 0.0, 1.0]])

    def run(lib, np_):
        first = lambda a: np_.sum(np_.nanprod(a, axis=1) + np_.prod(a[:, ::2], axis=1))  # noqa: E731
        second = lib.hessian(lambda a: np_.sum(np_.prod(a, axis=0)))(x[:, :3])
        mixed = lib.grad(lambda a: np_.sum(lib.grad(first)(a) ** 2))(x)
        b16 = lib.grad(lambda a: np_.sum(lib.grad(first)(a)))(
            np.array([[0.25, nan, -1.0, 3.0, 2.75]], jax.numpy.bfloat16)
        )
        return [lib.grad(first)(x), second, mixed, b16]

    from jax._src import config as jax_config

    with jax_config.enable_x64(True):
        # (jax's side as one jitted program: its values are its eager ones bit for bit, NaNs and
        # bfloat16 included, checked; eagerly jax dispatched each derivative's primitives: 6 s CPU)
        wants = [np.asarray(v).astype(np.float64) for v in jax.jit(lambda: run(jax, jax.numpy))()]
    for got, want in zip(run(funcgrad, fnp), wants):
        np.testing.assert_array_equal(np.asarray(got).astype(np.float64), want)


def test_var_and_std_with_an_integer_dtype_as_jax():
    # Found by the fuzzer: JAX computes var(dtype=int) in that dtype (truncating mean and quotient)
    # and then selects NaN through a Python float, so the result is the default float; nanvar's
    # stays integer; std refuses an integer dtype (ValueError).
    jnp = pytest.importorskip("jax").numpy
    from jax._src import config as jax_config

    x = np.array([[0.5, -3.0, 2.7, 9.0], [1.0, 2.0, 3.5, -4.0], [7.0, 0.2, 0.0, 1.0]])
    for fn, kw in [
        ("var", dict(dtype="int32")),
        ("var", dict(dtype="int8", axis=0, keepdims=True, ddof=1)),
        ("var", dict(dtype="uint8", axis=1, where=x > 0)),
        ("var", dict(dtype="int32", ddof=5, axis=0)),
        ("nanvar", dict(dtype="uint8", axis=-2, ddof=3)),
        ("nanvar", dict(dtype="int32", axis=1, keepdims=True)),
    ]:
        with jax_config.enable_x64(True):
            want = getattr(jnp, fn)(x, **kw)
        got = getattr(fnp, fn)(x, **kw)
        assert got.dtype == want.dtype and got.shape == want.shape, (fn, kw)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=f"{fn} {kw}")
    with pytest.raises(ValueError, match="dtype argument to jnp.std must be inexact; got int32"):
        fnp.std(x, dtype="int32")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_sums_products_and_means_round_as_jax(dtype):
    # jax.numpy accumulates float16/bfloat16 in float32 only when no dtype is asked for
    # (upcast_f16_for_computation=(dtype is None)): prod did not upcast, sum/mean(dtype=float16)
    # did; nanmean sums in the input's dtype. Compared bit for bit under jit (the compiled
    # reductions; eagerly NumPy's order of additions differs)
    jax = pytest.importorskip("jax")
    x = (np.random.default_rng(2).standard_normal(64) * 2).astype(jax.numpy.dtype(dtype))
    cases = {
        "prod": lambda m, v: m.prod(v * 0.05 + 1),
        "sum_f16": lambda m, v: m.sum(v, dtype=np.float16),
        "mean_f16": lambda m, v: m.mean(v, dtype=np.float16),
        "nanmean": lambda m, v: m.nanmean(v),
        "nanprod": lambda m, v: m.nanprod(v * 0.05 + 1, axis=0),
        "sum": lambda m, v: m.sum(v.reshape(8, 8), axis=1),
    }
    for name, f in cases.items():
        want = np.asarray(jax.jit(lambda v, f=f: f(jax.numpy, v))(x))
        got = np.asarray(funcgrad.jit(lambda v, f=f: f(fnp, v))(x))
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_sums_accumulated_in_the_half_type_eagerly_as_jax(dtype):
    # An eager sum/prod with dtype=float16/bfloat16 adds in XLA's order (compiled), as jax's: NumPy's
    # loop added one element after another, so a bfloat16 sum of 1000 values in [0, 1) stopped at
    # 256 (256 + 0.5 rounds back to 256) where jax's is about 500
    jax = pytest.importorskip("jax")
    dt = jax.numpy.dtype(dtype)
    x = np.random.default_rng(0).random(1000).astype(dt)
    for name, f in {
        "sum": lambda m, v: m.sum(v, dtype=dt),
        "sum_axis": lambda m, v: m.sum(v.reshape(10, 100), axis=1, dtype=dt),
        "prod": lambda m, v: m.prod(v[:50] * 0.05 + 1, dtype=dt),
    }.items():
        want = np.asarray(f(jax.numpy, jax.numpy.asarray(x)))
        got = np.asarray(f(fnp, fnp.asarray(x)))
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_quantiles_of_a_0d_array_with_keepdims_as_jax():
    # Found by the fuzzer: JAX ravels a 0-d input and keeps that axis (NumPy gives 0-d)
    jnp = pytest.importorskip("jax").numpy
    from jax._src import config as jax_config

    for f, args in (
        ("median", ()),
        ("nanmedian", ()),
        ("quantile", (0.5,)),
        ("nanpercentile", (np.array([20, 70]),)),
    ):
        for kw in ({}, {"method": "inverted_cdf"} if args else {}):
            got = getattr(fnp, f)(np.float32(1.5), *args, keepdims=True, **kw)
            # jax's 32-bit default: in its 64-bit mode jax 0.10.2's inverted_cdf of a float32 input
            # with a 64-bit q fails inside lax.mul (float64 * float32); the suite's order decides
            # which mode jax is in when this test runs
            with jax_config.enable_x64(False):
                want = getattr(jnp, f)(np.float32(1.5), *args, keepdims=True, **kw)
            assert got.shape == want.shape, (f, kw)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_initial_out_of_the_dtypes_range_converts_as_jax():
    # Fuzzer find (seed 13005 x32: max(uint16, initial=-1.5) raised OverflowError): jax converts
    # initial with lax.convert_element_type -- a Python int wraps into the dtype, a float (Python or
    # NumPy) saturates -- in every reduction taking one.
    jax = pytest.importorskip("jax")
    for v in (np.array([65535, 3000], np.uint16), np.array([-5, 7], np.int8)):
        for init in (-1.5, -1, 70000, 1e6, np.float64(-2.5), 300):
            for fn in ("min", "max", "sum", "prod"):
                with jax.enable_x64(True):  # (funcgrad's mode here)
                    want = getattr(jax.numpy, fn)(v, initial=init)
                got = getattr(fnp, fn)(v, initial=init)
                assert (int(got), got.dtype) == (int(want), want.dtype), (v.dtype, init, fn)


def test_an_infinite_python_initial_is_not_an_inf_under_debug_infs():
    # JAX converts a Python scalar initial at trace time: max(x, initial=-inf) and scipy's logsumexp
    # (which uses it) run under jax_debug_infs (JAX's lax_scipy_test testLogSumExpOnes); funcgrad
    # converted it with an equation, whose inf output the check flagged
    from funcgrad.scipy.special import logsumexp

    x = np.ones(4, np.float32)
    with funcgrad.debug_infs(True):
        assert float(fnp.max(x, initial=-np.inf)) == 1.0
        assert float(fnp.min(x, initial=np.inf)) == 1.0
        np.testing.assert_allclose(float(logsumexp(x)), 1 + np.log(4), rtol=1e-6)
        np.testing.assert_allclose(float(funcgrad.jit(logsumexp)(x)), 1 + np.log(4), rtol=1e-6)
        with pytest.raises(FloatingPointError):
            fnp.log(fnp.zeros(2))


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "nancumsum", "nancumprod"])
def test_cumulative_functions_ravel_a_weak_scalar_as_jax(name):
    # The random-program fuzzer (seed 15001, under grad): JAX ravels a weak 0-d input (a Python
    # scalar, jnp.asarray(2.0), a tracer of one) so axis=-1 names its one axis; a strong 0-d input
    # (float32(2), a NumPy array) has no axis -1
    jax = pytest.importorskip("jax")

    def run(T, np_, v):
        try:
            return np.asarray(getattr(np_, name)(v, axis=-1)).tolist()
        except ValueError:
            return "ValueError"

    for v in (2.0, 3, np.float32(2.0), np.array(2.0)):
        assert run(funcgrad, fnp, v) == run(jax, jax.numpy, v), v
    want = jax.grad(lambda b: getattr(jax.numpy, name)(b, axis=-1).sum())(1.5)
    assert float(funcgrad.grad(lambda b: getattr(fnp, name)(b, axis=-1).sum())(1.5)) == float(want)


def test_a_where_mask_of_more_dimensions_broadcasts_the_array_as_jax():
    # (the program fuzzer's progy table, seed 17020) JAX's reductions mask with a broadcasting
    # where, so a larger mask broadcasts the array and the axes (counted on the array) apply to
    # that; mean and var refuse it. funcgrad refused every one ('Cannot broadcast to shape with
    # fewer dimensions')
    import jax

    x, m = np.float32(1.5), np.array([[True], [False]])
    v, m2 = np.arange(3.0, dtype=np.float32), np.array([[True, False, True], [True, True, False]])
    for T, N in ((funcgrad, fnp), (jax, jax.numpy)):
        got = [
            N.sum(x, where=m),
            N.max(x, where=m, initial=0.0),
            N.prod(v, axis=-1, where=m2),
            N.sum(v, axis=0, where=m2, keepdims=True),
            N.any(v > 0, where=m2),
        ]
        if T is funcgrad:
            mine = got
        else:
            for a, b in zip(mine, got):
                assert a.shape == b.shape and a.dtype == b.dtype
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        with pytest.raises(ValueError, match="Cannot broadcast to shape with fewer dimensions"):
            N.mean(x, where=m)


@pytest.mark.parametrize(
    "kw", [{"bins": 3}, {"bins": 2, "range": (0.0, 1.5 + 1j)}, {"bins": 3, "density": True}]
)
def test_histogram_of_complex_values_as_jax(kw):
    # (the fuzzer's progz, 32-bit, seed 21008: eager, the edges dropped the imaginary parts and the
    # counts came out zero; under jit, "ge does not accept dtype complex64". JAX orders complex
    # values lexicographically, in min/max and searchsorted)
    jax = pytest.importorskip("jax")
    z = np.array([1.5 + 1j, 0.5 - 2j, 1.0 + 0.5j], np.complex64)
    want = jax.numpy.histogram(z, **kw)
    for got in (fnp.histogram(z, **kw), funcgrad.jit(lambda v: fnp.histogram(v, **kw))(z)):
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6)


def test_complex_max_and_min_with_nan_parts_pick_as_jax():
    # (session 22's fuzzer) JAX's complex max/min pick the first operand where it compares
    # larger/smaller (real parts, then imaginary), else the second: a NaN part propagates only from
    # the second (funcgrad propagated any, as NumPy); reductions fold that from the identity, and
    # initial= comes first. Values: jax 0.10.2's, eager and under jit.
    nan = np.nan
    a = np.array([complex(nan, -1), complex(nan, 2), -1, 1, complex(1, nan), 2], np.complex64)
    b = np.array([complex(nan, 2), -1, complex(nan, -1), complex(1, nan), 1, complex(nan, nan)], np.complex64)
    cases = {
        lambda: fnp.maximum(a, b): [
            complex(nan, 2),
            -1,
            complex(nan, -1),
            complex(1, nan),
            1,
            complex(nan, nan),
        ],
        lambda: fnp.max(a): 2,
        lambda: fnp.max(np.stack([a, b, a[::-1]]), axis=0, initial=0j): [
            2,
            complex(1, nan),
            1,
            complex(1, nan),
            complex(nan, 2),
            complex(nan, -1),
        ],
    }
    for f, want in cases.items():
        want = np.asarray(want, np.complex64)
        for got in (f(), funcgrad.jit(f)()):
            np.testing.assert_array_equal(np.asarray(got).real, want.real)
            np.testing.assert_array_equal(np.asarray(got).imag, want.imag)
