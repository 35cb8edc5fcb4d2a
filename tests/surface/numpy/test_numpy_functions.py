"""NumPy compatibility of funcgrad.numpy's shape manipulation, joining/splitting, sorting and
searching, indexing helpers, contractions and einsum, linalg.norm, differences/integration and the
further functions of ``misc``: values and dtypes against NumPy, derivatives against finite
differences, vmap against a loop, jit against eager."""

from __future__ import annotations

import numpy as np
import pytest
from _numpy_harness import (
    ALL,
    F64,
    I32,
    NUMERIC,
    Case,
    arr,
    check_zero_grad,
    one,
    pick_axis,
    shapes,
)
from _numpy_harness import numpy_case as R
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.api import jit
from funcgrad.testing import check_grads as check_function_grads

NONEMPTY = shapes(min_side=1)


def _perm(rng, ndim):
    return tuple(int(i) for i in rng.permutation(ndim))


def _reshape_make(rng, dt, shp):
    x = arr(rng, shp[0], dt)
    target = [x.size] if x.size else [0]
    if x.size and x.size % 2 == 0:
        target = [2, -1]
    return [x], {"shape": tuple(target), "order": ["C", "F"][rng.integers(2)]}


def _list_of(n, fn, **kwargs):
    """A function of ``n`` arrays that calls ``fn`` on the list of them (concatenate, stack...)."""
    return lambda *xs, **kw: fn(list(xs), **kwargs, **kw)


def joined(name, n=3, same_shape=True, **kwargs):
    fn = getattr(fnp, name)
    ref = getattr(np, name)

    def make(rng, dt, shp):
        return [arr(rng, shp[0], dt) for _ in range(n)], {}

    return Case(
        name,
        _list_of(n, fn, **kwargs),
        _list_of(n, ref, **kwargs),
        make,
        dtypes=ALL,
        shapes=shapes(
            min_dims=1 if name not in ("stack", "vstack", "hstack", "dstack", "column_stack") else 0,
            max_dims=3,
        ),
        id=f"{name}{kwargs or ''}",
    )


def _concat_make(rng, dt, shp):
    ndim = len(shp[0])
    axis = int(rng.integers(ndim))
    parts = []
    for _ in range(3):
        s = list(shp[0])
        s[axis] = int(rng.integers(0, 3))
        parts.append(arr(rng, tuple(s), dt))
    return parts, {"axis": axis}


def _split_make(rng, dt, shp):
    x = arr(rng, shp[0], dt)
    axis = int(rng.integers(x.ndim))
    n = x.shape[axis]
    sections = [d for d in range(1, 5) if n % d == 0] or [1]
    if rng.integers(2):
        return [x], {"indices_or_sections": int(rng.choice(sections)), "axis": axis}
    return [x], {"indices_or_sections": sorted(rng.integers(-1, n + 2, size=2).tolist()), "axis": axis}


def _outputs(fn):
    return lambda *a, **k: tuple(fn(*a, **k))


MANIPULATION = [
    R("reshape", _reshape_make, dtypes=ALL),
    R("ravel", one(), dtypes=ALL),
    R(
        "transpose",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"axes": _perm(rng, len(shp[0]))}),
        dtypes=ALL,
    ),
    R("permute_dims", lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"axes": _perm(rng, len(shp[0]))})),
    R("matrix_transpose", one(), shapes=shapes(min_dims=2), dtypes=ALL),
    R(
        "swapaxes",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"axis1": 0, "axis2": -1}),
        dtypes=ALL,
        shapes=shapes(min_dims=1),
    ),
    R(
        "moveaxis",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"source": 0, "destination": -1}),
        shapes=shapes(min_dims=1),
    ),
    R("expand_dims", lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"axis": (0, -1)}), dtypes=ALL),
    R("squeeze", one(), dtypes=ALL, shapes=shapes(max_side=2)),
    R("broadcast_to", lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"shape": (2, *shp[0])}), dtypes=ALL),
    R(
        "broadcast_arrays",
        lambda rng, dt, shp: ([arr(rng, s, dt) for s in shp], {}),
        shapes=shapes(2),
        fn=_outputs(fnp.broadcast_arrays),
        ref=_outputs(np.broadcast_arrays),
        dtypes=ALL,
    ),
    Case(
        "concatenate",
        lambda *xs, axis: fnp.concatenate(xs, axis),
        lambda *xs, axis: np.concatenate(xs, axis),
        _concat_make,
        shapes=shapes(min_dims=1),
        dtypes=ALL,
        vmap=False,
    ),
    Case(
        "concat",
        lambda *xs, axis: fnp.concat(xs, axis=axis),
        lambda *xs, axis: np.concat(xs, axis=axis),
        _concat_make,
        shapes=shapes(min_dims=1),
        vmap=False,
    ),
    joined("stack"),
    joined("stack", axis=-1),
    joined("hstack"),
    joined("vstack"),
    joined("dstack"),
    joined("column_stack", n=2),
    R(
        "split",
        _split_make,
        shapes=shapes(min_dims=1),
        fn=_outputs(fnp.split),
        ref=_outputs(np.split),
        dtypes=ALL,
    ),
    R(
        "array_split",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"indices_or_sections": int(rng.integers(1, 4))}),
        shapes=shapes(min_dims=1),
        fn=_outputs(fnp.array_split),
        ref=_outputs(np.array_split),
    ),
    R(
        "hsplit",
        lambda rng, dt, shp: ([arr(rng, (2, 4), dt)], {"indices_or_sections": 2}),
        fn=_outputs(fnp.hsplit),
        ref=_outputs(np.hsplit),
    ),
    R(
        "vsplit",
        lambda rng, dt, shp: ([arr(rng, (4, 2), dt)], {"indices_or_sections": [1]}),
        fn=_outputs(fnp.vsplit),
        ref=_outputs(np.vsplit),
    ),
    R(
        "unstack",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"axis": -1}),
        shapes=shapes(min_dims=1),
        fn=_outputs(fnp.unstack),
        ref=_outputs(np.unstack),
    ),
    R(
        "tile",
        lambda rng, dt, shp: (
            [arr(rng, shp[0], dt)],
            {"reps": tuple(rng.integers(1, 3, size=rng.integers(1, 3)))},
        ),
        dtypes=ALL,
    ),
    R(
        "repeat",
        lambda rng, dt, shp: (
            [arr(rng, shp[0], dt)],
            {"repeats": int(rng.integers(0, 3)), "axis": pick_axis(rng, len(shp[0]), allow_tuple=False)},
        ),
        dtypes=ALL,
    ),
    R(
        "repeat",
        lambda rng, dt, shp: ([arr(rng, (3, 2), dt)], {"repeats": np.array([1, 0, 2]), "axis": 0}),
        id="repeat-counts",
    ),
    R(
        "flip",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"axis": pick_axis(rng, len(shp[0]))}),
        dtypes=ALL,
    ),
    R("fliplr", one(), shapes=shapes(min_dims=2)),
    R("flipud", one(), shapes=shapes(min_dims=1)),
    R(
        "roll",
        lambda rng, dt, shp: (
            [arr(rng, shp[0], dt)],
            {"shift": int(rng.integers(-5, 6)), "axis": pick_axis(rng, len(shp[0]), allow_tuple=False)},
        ),
        dtypes=ALL,
    ),
    R(
        "rot90",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"k": int(rng.integers(-3, 5))}),
        shapes=shapes(min_dims=2),
        dtypes=ALL,
    ),
    R(
        "pad",
        lambda rng, dt, shp: (
            [arr(rng, shp[0], dt)],
            {
                "pad_width": int(rng.integers(0, 3)),
                "mode": [
                    "constant",
                    "edge",
                    "reflect",
                    "symmetric",
                    "wrap",
                    "linear_ramp",
                    "maximum",
                    "mean",
                ][rng.integers(8)],
            },
        ),
        shapes=shapes(min_dims=1, min_side=2),
        order=1,
    ),
    R("atleast_1d", one(), dtypes=ALL),
    R("atleast_2d", one(), dtypes=ALL),
    R("atleast_3d", one(), dtypes=ALL),
]


# ----------------------------------------------------------------------------------------------
# Sorting, searching, indexing helpers


def _sorted_make(rng, dt, shp):
    a = np.sort(arr(rng, (int(rng.integers(1, 6)),), dt))
    return [a, arr(rng, shp[0], dt)], {"side": ["left", "right"][rng.integers(2)]}


def _take_make(rng, dt, shp):
    x = arr(rng, shp[0], dt)
    axis = pick_axis(rng, x.ndim, allow_tuple=False)
    n = x.size if axis is None else x.shape[axis]
    idx = rng.integers(-n, n, size=(2,)) if n else np.zeros((0,), int)
    return [x], {"indices": idx, "axis": axis}


def _take_along_make(rng, dt, shp):
    x = arr(rng, shp[0], dt)
    axis = int(rng.integers(x.ndim))
    return [x], {"indices": np.argsort(np.asarray(arr(rng, x.shape, F64)), axis=axis), "axis": axis}


def _select_make(rng, dt, shp):
    x = arr(rng, shp[0], dt)
    return [x, arr(rng, shp[0], dt)], {}


SORTING = [
    R(
        "sort",
        lambda rng, dt, shp: (
            [arr(rng, shp[0], dt)],
            {"axis": pick_axis(rng, len(shp[0]), allow_tuple=False)},
        ),
        dtypes=ALL,
    ),
    R(
        "argsort",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt, -2, 2)], {"axis": -1}),
        shapes=shapes(min_dims=1),
        ref=lambda a, axis: np.argsort(a, axis, kind="stable"),
        dtypes=ALL,
        grad=False,
    ),
    R(
        "lexsort",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt, -2, 2), arr(rng, shp[0], dt, -2, 2)], {}),
        fn=lambda a, b: fnp.lexsort((a, b)),
        ref=lambda a, b: np.lexsort((a, b)),
        shapes=shapes(min_dims=1),
        dtypes=NUMERIC,
        grad=False,
    ),
    R(
        "partition",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"kth": int(rng.integers(shp[0][-1]))}),
        fn=lambda a, kth: fnp.partition(a, kth)[..., kth],
        ref=lambda a, kth: np.partition(a, kth)[..., kth],
        shapes=shapes(min_dims=1, min_side=1),
    ),
    R("searchsorted", _sorted_make, dtypes=NUMERIC, grad=False, vmap=False),
    R(
        "digitize",
        lambda rng, dt, shp: (
            [arr(rng, shp[0], dt), np.sort(arr(rng, (4,), dt))[:: [1, -1][rng.integers(2)]]],
            {"right": bool(rng.integers(2))},
        ),
        dtypes=NUMERIC,
        grad=False,
        vmap=False,
    ),
    R("take", _take_make, dtypes=ALL),
    R("take_along_axis", _take_along_make, shapes=shapes(min_dims=1), dtypes=ALL),
    R(
        "put_along_axis",
        lambda rng, dt, shp: (
            [arr(rng, (3, 4), dt), arr(rng, (3, 1), dt)],
            {"indices": rng.integers(0, 4, size=(3, 1)), "axis": 1},
        ),
        fn=lambda a, v, indices, axis: fnp.put_along_axis(a, indices, v, axis),
        ref=lambda a, v, indices, axis: _np_put_along_axis(a, indices, v, axis),
    ),
    R(
        "diagonal",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"offset": int(rng.integers(-2, 3))}),
        shapes=shapes(min_dims=2),
        dtypes=ALL,
    ),
    R(
        "trace",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"offset": int(rng.integers(-2, 3))}),
        shapes=shapes(min_dims=2),
        dtypes=NUMERIC,
    ),
    R(
        "nonzero",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt, -1, 1)], {}),
        shapes=shapes(min_dims=1),
        fn=_outputs(fnp.nonzero),
        ref=_outputs(np.nonzero),
        dtypes=ALL,
        grad=False,
        vmap=False,
        jit=False,
    ),
    R(
        "argwhere",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt, -1, 1)], {}),
        dtypes=ALL,
        grad=False,
        vmap=False,
        jit=False,
        shapes=shapes(min_dims=1),
    ),
    R(
        "where",
        lambda rng, dt, shp: ([arr(rng, shp[0], B_), arr(rng, shp[1], dt), arr(rng, shp[2], dt)], {}),
        shapes=shapes(3),
        dtypes=ALL,
    ),
    R(
        "select",
        _select_make,
        fn=lambda x, y: fnp.select([x > 1, x < -1], [x, y], 0.5),
        ref=lambda x, y: np.select([x > 1, x < -1], [x, y], 0.5),
    ),
    R(
        "piecewise",
        one(),
        fn=lambda x: fnp.piecewise(x, [x < 0, x > 1], [lambda v: v**2, lambda v: -v, 0.5]),
        ref=lambda x: np.piecewise(x, [x < 0, x > 1], [lambda v: v**2, lambda v: -v, 0.5]),
    ),
]

B_ = np.dtype(np.bool_)


def _np_put_along_axis(a, indices, values, axis):
    a = np.array(a)
    np.put_along_axis(a, indices, values, axis)
    return a


# ----------------------------------------------------------------------------------------------
# Contractions and linalg.norm


def two(s1, s2, lo=-2.0, hi=2.0, **kwargs):
    return lambda rng, dt, shp: ([arr(rng, s1, dt, lo, hi), arr(rng, s2, dt, lo, hi)], dict(kwargs))


def _matmul_make(rng, dt, shp):
    batch, (n, k, m), va, vb = shp
    a_shape = [(k,), (n, k), (*batch, n, k)][va]
    b_shape = [(k,), (k, m), (*batch[-1:], k, m)][vb]
    return [arr(rng, a_shape, dt, -2, 2), arr(rng, b_shape, dt, -2, 2)], {}


MATMUL_SHAPES = st.tuples(
    shapes(max_dims=1, min_side=1).map(lambda s: s[0]),
    st.tuples(*[st.integers(1, 3)] * 3),
    st.integers(0, 2),
    st.integers(0, 2),
)
CONV_SHAPES = st.tuples(st.integers(1, 5), st.integers(1, 5), st.sampled_from(["full", "same", "valid"]))


def _conv_make(rng, dt, shp):
    n, m, mode = shp
    return [arr(rng, (n,), dt), arr(rng, (m,), dt)], {"mode": mode}


def _norm_make(rng, dt, shp):
    x = arr(rng, shp[0], dt, 0.5, 2.0) * np.where(rng.random(shp[0]) < 0.5, -1, 1).astype(dt)
    if x.ndim == 1 and rng.integers(2):
        return [x], {"ord": [None, 1, 2, 3, np.inf, -np.inf, 0.5][rng.integers(7)]}
    if x.ndim == 2 and rng.integers(2):
        return [x], {
            "ord": [None, "fro", 1, -1, np.inf, -np.inf, 2, -2, "nuc"][rng.integers(9)],
            "keepdims": bool(rng.integers(2)),
        }
    if x.ndim >= 2:
        return [x], {"axis": (0, 1), "ord": ["fro", 1, np.inf, 2, "nuc"][rng.integers(5)]}
    return [x], {"axis": None}


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (4, 3, 2)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("i,i", [(3,), (3,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("iij,jk->ik", [(2, 2, 3), (3, 2)]),
    ("ijk,ikj->i", [(2, 3, 4), (2, 4, 3)]),
]


def _einsum_case(spec, shapes_):
    def make(rng, dt, shp):
        return [arr(rng, s, dt, -2, 2) for s in shapes_], {}

    return Case(
        "einsum",
        lambda *xs: fnp.einsum(spec, *xs),
        lambda *xs: np.einsum(spec, *xs),
        make,
        dtypes=NUMERIC,
        id=f"einsum[{spec}]",
    )


CONTRACTIONS = [
    R("matmul", _matmul_make, shapes=MATMUL_SHAPES, dtypes=NUMERIC),
    R("dot", two((2, 3), (4, 3, 2)), dtypes=NUMERIC),
    R("dot", two((3,), (3,)), dtypes=NUMERIC, id="dot-vectors"),
    R("vdot", two((2, 3), (3, 2)), dtypes=NUMERIC),
    R("inner", two((2, 3), (4, 3)), dtypes=NUMERIC),
    R("outer", two((2, 2), (3,)), dtypes=NUMERIC),
    R("tensordot", two((2, 3, 4), (3, 4, 2), axes=2), dtypes=NUMERIC),
    R("tensordot", two((2, 3), (3, 2), axes=([0, 1], [1, 0])), id="tensordot-pairs"),
    R("kron", two((2, 2), (3,)), dtypes=NUMERIC),
    R("cross", two((4, 3), (3,)), dtypes=NUMERIC),
    # NumPy deprecates 2-vectors in cross; the reference is the scalar z-component.
    R(
        "cross",
        two((2,), (2,)),
        id="cross-2d",
        ref=lambda a, b: a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0],
    ),
    R("vecdot", two((2, 3), (3,)), dtypes=NUMERIC),
    R("matvec", two((4, 2, 3), (3,)), dtypes=NUMERIC),
    R("vecmat", two((2,), (4, 2, 3)), dtypes=NUMERIC),
    *[_einsum_case(spec, s) for spec, s in EINSUMS],
    Case(
        "linalg.norm",
        fnp.linalg.norm,
        np.linalg.norm,
        _norm_make,
        shapes=shapes(min_dims=1, max_dims=3, min_side=1),
        dtypes=NUMERIC,
        order=1,
    ),
]


# ----------------------------------------------------------------------------------------------
# Differences, integration, convolution, interpolation


def _interp_make(rng, dt, shp):
    xp = np.sort(rng.uniform(-3, 3, size=int(rng.integers(1, 6))))
    return [arr(rng, shp[0], dt, -4, 4), xp.astype(dt), arr(rng, xp.shape, dt)], {}


NUMERIC_FUNCS = [
    R(
        "diff",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"n": int(rng.integers(0, 3)), "axis": -1}),
        shapes=shapes(min_dims=1),
        dtypes=ALL,
    ),
    R(
        "diff",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt), arr(rng, shp[0][:-1] + (1,), dt)], {}),
        fn=lambda a, p: fnp.diff(a, prepend=p, append=2.0),
        ref=lambda a, p: np.diff(a, prepend=p, append=2.0),
        shapes=shapes(min_dims=1),
        id="diff-prepend",
        expected_dtype=lambda dt: dt,  # the Python float 2.0 is weak (NumPy makes it a float64 array)
    ),
    R("ediff1d", one(), dtypes=NUMERIC),
    R(
        "gradient",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt)], {"edge_order": int(rng.integers(1, 3))}),
        shapes=shapes(min_dims=1, min_side=3),
        fn=_outputs(lambda *a, **k: _as_list(fnp.gradient(*a, **k))),
        ref=_outputs(lambda *a, **k: _as_list(np.gradient(*a, **k))),
    ),
    R(
        "trapezoid",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt), np.cumsum(arr(rng, shp[0][-1:], dt, 0.1, 1))], {}),
        shapes=shapes(min_dims=1, min_side=1),
    ),
    R(
        "convolve",
        _conv_make,
        shapes=CONV_SHAPES,
        dtypes=NUMERIC,
    ),
    R(
        "correlate",
        _conv_make,
        shapes=CONV_SHAPES,
        dtypes=NUMERIC,
    ),
    # NumPy's interp always returns float64; float32 stays float32 here (as in jax.numpy).
    R("interp", _interp_make, grad_argnums=(0, 2), vmap=False, expected_dtype=lambda dt: dt),
]


def _as_list(x):
    return list(x) if isinstance(x, list | tuple) else [x]


MISC = [
    R("append", lambda rng, dt, shp: ([arr(rng, shp[0], dt), arr(rng, shp[0], dt)], {}), dtypes=ALL),
    R("fabs", one(), dtypes=NUMERIC),
    R(
        "bincount",
        lambda rng, dt, shp: (
            [rng.integers(0, 5, size=shp[0][:1]), arr(rng, shp[0][:1], dt)],
            {"minlength": 6},
        ),
        fn=lambda x, w, **k: fnp.bincount(x, w, **k),
        ref=lambda x, w, **k: np.bincount(x, w, **k),
        grad_argnums=(1,),
        vmap=False,
        jit=False,
        shapes=shapes(min_dims=1, max_dims=1, min_side=1),
        expected_dtype=lambda dt: dt,  # NumPy sums weights in float64; float32 stays float32 here
    ),
    R(
        "isin",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt, -3, 3), arr(rng, (4,), dt, -3, 3)], {}),
        dtypes=(I32,),
        grad=False,
    ),
    # NumPy's vander promotes with int64; the input dtype is kept here (as in jax.numpy).
    R(
        "vander",
        lambda rng, dt, shp: ([arr(rng, shp[0][:1], dt)], {"N": 3}),
        dtypes=NUMERIC,
        shapes=shapes(min_dims=1),
        expected_dtype=lambda dt: dt,
    ),
    R("polyval", lambda rng, dt, shp: ([arr(rng, (3,), dt), arr(rng, shp[0], dt)], {}), dtypes=NUMERIC),
    R(
        "cov",
        lambda rng, dt, shp: ([arr(rng, (3, 5), dt)], {"rowvar": bool(rng.integers(2))}),
        expected_dtype=lambda dt: dt,
    ),  # NumPy computes cov in float64; float32 stays float32 here
    R("corrcoef", lambda rng, dt, shp: ([arr(rng, (3, 5), dt)], {}), expected_dtype=lambda dt: dt),
    R("nanargmax", lambda rng, dt, shp: ([arr(rng, (3, 4), dt)], {"axis": 1}), grad=False),
    R(
        "array_equiv",
        lambda rng, dt, shp: ([arr(rng, shp[0], dt, 0, 1), arr(rng, shp[1], dt, 0, 1)], {}),
        shapes=shapes(2),
        dtypes=(I32,),
        grad=False,
    ),
]


# The generic checks of this table (values, derivatives, vmap, jit) are tests/surface/test_surface_cases.py's.
CASES = MANIPULATION + SORTING + CONTRACTIONS + NUMERIC_FUNCS + MISC


def test_utilities():
    x = np.ones((2, 3))
    assert fnp.shape(x) == (2, 3) and fnp.ndim(x) == 2 and fnp.size(x) == 6 and fnp.size(x, 1) == 3
    assert fnp.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert fnp.copy(x).shape == (2, 3)
    assert (
        fnp.pi == np.pi and fnp.e == np.e and np.isinf(fnp.inf) and np.isnan(fnp.nan) and fnp.newaxis is None
    )
    assert [a.tolist() for a in fnp.tril_indices(3, -1)] == [a.tolist() for a in np.tril_indices(3, -1)]
    assert [a.tolist() for a in fnp.triu_indices(3, 1, 4)] == [a.tolist() for a in np.triu_indices(3, 1, 4)]
    assert [a.tolist() for a in fnp.diag_indices(3, 3)] == [a.tolist() for a in np.diag_indices(3, 3)]
    path, info = fnp.einsum_path("ij,jk,kl->il", np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5)))
    assert len(path) == 2 and "Complete contraction" in str(info)


def test_shape_ndim_size_of_non_arrays_as_jax():
    # JAX warns for a value that is not an array, then answers as NumPy (TensorFlow Probability's
    # JAX substrate takes np.shape of a None maxval when it samples a uniform)
    import warnings

    import jax.numpy as jnp

    def answers(m):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            cases = [None, "abc", {"a": 1}, [1, 2, 3], [[1.0, 2.0]], (1, 2), [np.ones(2), np.ones(2)], 3.5]
            return [(m.shape(v), m.ndim(v), m.size(v)) for v in cases]

    assert answers(fnp) == answers(jnp)
    message = "shape requires ndarray or scalar arguments, got <class 'NoneType'>"
    with pytest.warns(DeprecationWarning, match=message):
        fnp.shape(None)


def test_singular_values_and_derived():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 4, 3))
    np.testing.assert_allclose(
        np.asarray(fnp.linalg.svdvals(x)), np.linalg.svd(x, compute_uv=False), rtol=1e-12
    )
    np.testing.assert_allclose(np.asarray(jit(fnp.linalg.svdvals)(x)), np.linalg.svd(x, compute_uv=False))
    np.testing.assert_allclose(float(fnp.linalg.cond(x[0])), np.linalg.cond(x[0]), rtol=1e-10)
    assert int(fnp.linalg.matrix_rank(np.outer([1.0, 2.0], [3.0, 4.0, 5.0]))) == 1
    # d(sum of singular values)/dx = U V^T for distinct singular values.
    u, _, vt = np.linalg.svd(x[0], full_matrices=False)
    g = funcgrad.grad(lambda v: fnp.linalg.norm(v, "nuc"))(x[0])
    np.testing.assert_allclose(np.asarray(g), u @ vt, atol=1e-10)
    check = funcgrad.vmap(lambda v: fnp.linalg.norm(v, 2))(x)
    np.testing.assert_allclose(np.asarray(check), np.linalg.norm(x, 2, axis=(1, 2)))


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4, 4)])
def test_det_inv_solve(shape):
    rng = np.random.default_rng(4)
    a = rng.normal(size=shape)
    b = rng.normal(size=shape[:-1])
    L = fnp.linalg
    np.testing.assert_allclose(np.asarray(L.det(a)), np.linalg.det(a), rtol=1e-10)
    sign, logdet = L.slogdet(a)
    ref_sign, ref_logdet = np.linalg.slogdet(a)
    np.testing.assert_allclose(np.asarray(sign), ref_sign)
    np.testing.assert_allclose(np.asarray(logdet), ref_logdet, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(L.inv(a)), np.linalg.inv(a), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(
        np.asarray(L.solve(a, b[..., None])), np.linalg.solve(a, b[..., None]), rtol=1e-9
    )
    np.testing.assert_allclose(np.asarray(jit(L.det)(a)), np.linalg.det(a), rtol=1e-10)
    # d det(a) / da = det(a) inv(a)^T; d solve / db = inv(a) (check_grads compares with differences).
    check_function_grads(lambda m: L.det(m), [a], order=1)
    check_function_grads(lambda m, v: L.solve(m, v[..., None]), [a, b], order=1)
    assert float(L.det(np.array([[1.0, 2.0], [2.0, 4.0]]))) == 0.0


def test_norm_gradient_at_zero_is_finite():
    for kwargs in ({}, {"ord": 2}, {"ord": 3}, {"ord": "fro"}):
        x = np.zeros(3) if "fro" not in kwargs.values() else np.zeros((2, 2))
        g = funcgrad.grad(lambda v, kw=kwargs: fnp.linalg.norm(v, **kw))(x)
        np.testing.assert_array_equal(np.asarray(g), 0.0)


@pytest.mark.parametrize("axis", [0, -1, 3])
def test_repeat_of_a_0d_array_ignores_axis_as_jax(axis):
    # (the fuzzer: repeat inside a vmap, each example 0-d) JAX's repeat of a 0-d array is
    # full([total], a) whatever the axis; funcgrad raised AxisError
    jnp = pytest.importorskip("jax.numpy")
    for a in (np.int16(3), np.float32(-1.5)):
        got, want = fnp.repeat(a, 2, axis=axis), jnp.repeat(a, 2, axis=axis)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    batched = funcgrad.vmap(lambda b: fnp.repeat(b, 2, axis=axis))(np.arange(3.0))
    np.testing.assert_array_equal(np.asarray(batched), [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])


def test_traced_roll_and_repeat():
    x = np.arange(10.0).reshape(2, 5)
    for s in (0, 2, -3, 7):
        np.testing.assert_array_equal(
            np.asarray(jit(lambda v, s: fnp.roll(v, s, axis=1))(x, s)), np.roll(x, s, 1)
        )
        np.testing.assert_array_equal(np.asarray(jit(lambda v, s: fnp.roll(v, s))(x, s)), np.roll(x, s))
    r = np.array([1, 0, 2, 1, 0])
    out = jit(lambda v, r: fnp.repeat(v, r, axis=1, total_repeat_length=4))(x, r)
    np.testing.assert_array_equal(np.asarray(out), np.repeat(x, r, axis=1))
    out = fnp.repeat(x, r, axis=1, total_repeat_length=6)  # a shortfall repeats the last element
    np.testing.assert_array_equal(np.asarray(out), np.repeat(x, [1, 0, 2, 1, 2], axis=1))
    g = funcgrad.grad(lambda v, r: fnp.sum(fnp.repeat(v, r, total_repeat_length=3)))(
        np.array([1.0, 2.0]), np.array([2, 1])
    )
    np.testing.assert_array_equal(np.asarray(g), [2.0, 1.0])


@pytest.mark.parametrize(
    "case",
    [
        c
        for c in CASES
        if c.name in ("argsort", "lexsort", "searchsorted", "digitize", "nonzero", "argwhere", "isin")
    ],
    ids=repr,
)
@settings(max_examples=2)
@given(data=st.data())
def test_integer_valued_functions_have_zero_grads(case, data):
    check_zero_grad(case, data)


def test_take_along_axis_defaults_to_the_last_axis():
    x = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    idx = np.argsort(x)
    np.testing.assert_array_equal(np.asarray(fnp.take_along_axis(x, idx)), np.take_along_axis(x, idx, -1))


@pytest.mark.parametrize("mode", [None, "fill", "clip"])
def test_take_along_an_empty_axis_is_zeros_as_jax(mode):
    # (the program fuzzer, seed 17017) JAX returns zeros of the broadcast shape for indices into an
    # empty axis, in any mode (its early lax.full); funcgrad's gather refused the slice of 1 there
    jax = pytest.importorskip("jax")
    x, idx = np.zeros((2, 0), np.float32), np.array([[0, -1, 5]])
    got = jit(lambda x: fnp.take_along_axis(x, idx, axis=-1, mode=mode))(x)
    want = jax.numpy.take_along_axis(x, idx, axis=-1, mode=mode)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert got.dtype == want.dtype and got.weak_type == want.weak_type
    assert funcgrad.grad(lambda x: fnp.take_along_axis(x, idx, axis=-1).sum())(x).shape == (2, 0)


# ----------------------------------------------------------------------------------------------
# vectorize with a signature (numpy/misc.py) and einsum's interleaved form (numpy/contractions.py)


_RNG = np.random.default_rng(0)


def _close(got, want):
    if isinstance(want, tuple | list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
    else:
        np.testing.assert_allclose(np.asarray(got), np.asarray(want, dtype=float), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "signature, fn, shapes",
    [
        ("(n,n),(n)->(n)", lambda m, v: m @ v, [(4, 3, 3), (3,)]),
        ("(n),(n)->()", lambda u, v: (u * v).sum(), [(2, 1, 5), (3, 5)]),
        ("(k)->(),()", lambda x: (x.min(), x.max()), [(4, 6)]),
        ("()->(m)", lambda s: s * np.arange(3.0), [(2, 2)]),
    ],
)
def test_vectorize_signature_matches_numpy(signature, fn, shapes):
    args = [_RNG.normal(size=s) for s in shapes]
    got = fnp.vectorize(fn, signature=signature)(*args)
    want = np.vectorize(fn, signature=signature)(*args)
    _close(got, want)
    _close(funcgrad.jit(fnp.vectorize(fn, signature=signature))(*args), want)


def test_vectorize_checks_core_dimensions_and_excludes():
    f = fnp.vectorize(lambda m, v: m @ v, signature="(n,n),(n)->(n)")
    with pytest.raises(ValueError, match="inconsistent size for core dimension 'n'"):
        f(np.ones((2, 3, 3)), np.ones(4))
    with pytest.raises(ValueError, match="core dimensions"):
        f(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="output 0"):
        fnp.vectorize(lambda x: x[:2], signature="(n)->(n)")(np.ones((2, 3)))
    with pytest.raises(ValueError, match="not a valid gufunc signature"):
        fnp.vectorize(lambda x: x, signature="(n)->(m")
    scaled = fnp.vectorize(lambda x, s, scale=1.0: x * len(s) * scale, excluded={1})
    assert scaled(np.arange(3.0), "ab", scale=np.array([[1.0], [2.0]])).tolist() == [[0, 2, 4], [0, 4, 8]]
    g = funcgrad.grad(lambda v: fnp.sum(f(np.eye(3)[None].repeat(2, 0), v)))(np.ones(3))
    assert g.tolist() == [2.0, 2.0, 2.0]


def test_einsum_interleaved_form_matches_numpy():
    a, b = _RNG.random((2, 3, 4)), _RNG.random((4, 5))
    for args in [
        (a, [0, 1, 2], b, [2, 3], [0, 1, 3]),
        (a, [Ellipsis, 2], b, [2, 3]),
        (a, [0, 1, 2]),
        (np.eye(3), [0, 0], []),
    ]:
        _close(fnp.einsum(*args), np.einsum(*args))


@pytest.mark.slow
def test_einsum_interleaved_labels_are_any_hashables_as_jax():
    # JAX hands the interleaved form to opt_einsum, whose labels are any sortable hashables
    # (penzai's named-axis einsums label with strings: 'tq'); NumPy takes integers below 52 only.
    jnp = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra").numpy
    a, b = _RNG.random((2, 3, 4)), _RNG.random((4, 5))
    for args in [
        (a, ["tq", "k", "x"], b, ["x", "y"], ["y", "tq"]),
        (a, [0, 1, 99], b, [99, 60]),
        (a, [Ellipsis, "x"], b, ["x", "y"], [Ellipsis, "y"]),
    ]:
        ours, theirs = np.asarray(fnp.einsum(*args)), np.asarray(jnp.einsum(*args))  # (jax: float32)
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    with pytest.raises(TypeError, match="hashable and comparable"):
        fnp.einsum(a, [0, "x", 1])  # (unsortable labels: opt_einsum's error)


def test_partition_and_argpartition_arrange_as_jax():
    # jnp.partition's/argpartition's docstrings: the kth + 1 smallest ascending, then the larger
    # values descending (partition) or the other indices ascending (argpartition)
    x = np.array([6, 8, 4, 3, 1, 9, 7, 5, 2, 3])
    assert fnp.partition(x, 4).tolist() == [1, 2, 3, 3, 4, 9, 8, 7, 6, 5]
    assert fnp.argpartition(x, 4).tolist() == [4, 8, 3, 9, 2, 0, 1, 5, 6, 7]
    assert fnp.argpartition(x, 4).dtype == np.int32  # (lax.top_k's indices, in 64-bit mode too)
    y = np.random.default_rng(0).integers(0, 5, (3, 4, 5))
    for axis in (0, 1, -1):
        part = np.asarray(fnp.partition(y, 1, axis=axis))
        np.testing.assert_array_equal(np.sort(part, axis), np.sort(y, axis))
        idx = np.asarray(funcgrad.jit(fnp.argpartition, static_argnums=(1, 2))(y, 2, axis))
        kth = np.take(np.take_along_axis(y, idx, axis), [2], axis)
        np.testing.assert_array_equal(kth, np.take(np.sort(y, axis), [2], axis))
    for name in ("partition", "argpartition"):  # (session 22's fuzzer: JAX takes no axis=None)
        with pytest.raises(TypeError, match="NoneType"):
            getattr(fnp, name)(x, 4, None)


# Ties, signed zeros and NaN of both signs (the differential fuzzer's progz tables, session 18)
_TIES = np.array([1.0, np.nan, -0.0, 0.0, 2.0, 2.0, -1.0, -np.nan, 0.5], np.float32)


@pytest.mark.parametrize("x", [_TIES, _TIES[::-1].copy(), np.array([3, 0, 1, 0, 7], np.uint8)], ids=str)
def test_partition_orders_ties_and_zeros_as_jax(x):
    # JAX's two top_k's rank floats in XLA's total order (-0.0 before 0.0, -NaN first): a sort made
    # the zeros equal, so their places (and argpartition's indices) differed
    import jax.numpy as jnp

    for kth in (0, 1, 4, -1):
        for name in ("partition", "argpartition"):
            got, want = getattr(fnp, name)(x, kth), getattr(jnp, name)(x, kth)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(np.signbit(np.asarray(got)), np.signbit(np.asarray(want)))
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_unstable_descending_argsort_and_complex_digitize_as_jax():
    # argsort(stable=False, descending=True) is JAX's ascending sort reversed (ties last first);
    # digitize orders complex values as searchsorted does (real parts, then imaginary parts)
    import jax.numpy as jnp

    m = np.array([[1.0, np.nan, 2.0], [np.nan, np.nan, np.nan], [3.0, 3.0, -1.0]], np.float32)
    for a, axis in ((_TIES, -1), (m, 0)):
        want = jnp.argsort(a, axis=axis, stable=False, descending=True)
        got = fnp.argsort(a, axis=axis, stable=False, descending=True)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    z = np.array([1 + 1j, 0.5 - 2j, 1 + 0j, 2j, -1 + 0j], np.complex64)
    for bins in (np.array([0j, 1, 1 + 1j], np.complex64), np.array([1 + 1j, 1, 0j], np.complex64)):
        for right in (False, True):
            got, want = fnp.digitize(z, bins, right=right), jnp.digitize(z, bins, right=right)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_descending_sort_routes_tied_tangents_as_jax():
    # jnp.sort(descending=True) is the ascending sort reversed: tied elements come last first, and
    # so do their tangents (funcgrad sorted the reversed array, keeping ties in order: the jvp of
    # sort([1, 1, 2, 1], descending=True) was [.3, .1, .2, .4] where jax's is [.3, .4, .2, .1];
    # the four-way fuzzer's seed 9)
    import jax
    import jax.numpy as jnp
    from jax._src import config as jax_config

    x, t = np.array([1.0, 1.0, 2.0, 1.0]), np.array([0.1, 0.2, 0.3, 0.4])
    for kw in ({"descending": True}, {"descending": True, "stable": False}, {"stable": True}):
        got = funcgrad.jvp(lambda x, kw=kw: fnp.sort(x, **kw), (x,), (t,))
        with jax_config.enable_x64(True):
            want = jax.jvp(lambda x, kw=kw: jnp.sort(x, **kw), (x,), (t,))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_intersect1d_fill_and_assume_unique_as_jax():
    # size='s padding is JAX's (the smallest of the intersection; a NaN of the input, never in
    # it, is not looked at), and assume_unique trusts the inputs: a value repeated in one is kept
    import jax.numpy as jnp

    b = np.array([3, 1, 1, 0, 7, -2], np.float32)
    for kw in ({"size": 6}, {"assume_unique": True, "size": 7}):
        got = fnp.intersect1d(_TIES, b, return_indices=True, **kw)
        want = jnp.intersect1d(_TIES, b, return_indices=True, **kw)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype or g.dtype.kind == "i"  # (indices: the mode's int)
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_bincount_clips_negative_values_to_zero_as_jax():
    # jnp.bincount's docstring: negative values count as 0, values at or past length are dropped
    assert fnp.bincount(np.array([-1, -1, 1, 3, 10]), length=5).tolist() == [2, 1, 0, 1, 0]
    jitted = funcgrad.jit(lambda x: fnp.bincount(x, length=3))(np.array([-3, 0, 7, 2]))
    assert jitted.tolist() == [2, 0, 1]
    assert fnp.bincount(np.array([-1, 2])).tolist() == [1, 0, 1]
    assert fnp.bincount(np.array([True, False, True])).tolist() == [1, 2]  # (counts, not a mask)


def test_nonzero_takes_a_traced_fill_value_under_jit():
    # jnp.nonzero's docstring: jit(nonzero, static_argnames='size')(x, size=5, fill_value=len(x))
    x = np.array([0, 5, 0, 6, 0, 7])
    f = funcgrad.jit(fnp.nonzero, static_argnames="size")
    assert f(x, size=5, fill_value=len(x))[0].tolist() == [1, 3, 5, 6, 6]
    rows, cols = funcgrad.jit(lambda x, fill: fnp.nonzero(x, size=4, fill_value=fill))(
        x.reshape(2, 3), (9, 8)
    )
    assert rows.tolist() == [0, 1, 1, 9] and cols.tolist() == [1, 0, 2, 8]


def test_nonzero_of_an_empty_array_is_zeros_as_jax():
    # jax returns size zeros for an empty array, whatever fill_value (found by the fuzzer: vmap of
    # nonzero(size=5, fill_value=-1) of a (0, 1, 2) array gave -1s)
    jnp = pytest.importorskip("jax.numpy")
    x = np.zeros((2, 0, 3), np.float32)
    kw = dict(size=3, fill_value=-1)
    for name in ["nonzero", "argwhere", "flatnonzero", "where"]:
        want = getattr(jnp, name)(x[0], **kw)
        got = getattr(fnp, name)(x[0], **kw)
        for g, w in zip(*(v if isinstance(v, tuple) else (v,) for v in (got, want))):
            assert np.asarray(g).tolist() == np.asarray(w).tolist(), name
    got = funcgrad.vmap(lambda v: fnp.nonzero(v, size=2, fill_value=7)[-1])(x)
    assert got.tolist() == [[0, 0], [0, 0]]


def test_piecewise_takes_an_array_of_conditions_along_axis_0_as_jax():
    # jnp.piecewise's docstring: condlist = jnp.array([False, True, False]) is three scalar conditions
    x = np.arange(-4, 5)
    out = fnp.piecewise(
        x, np.array([False, True, False]), [lambda v: v * 0, lambda v: v * 10, lambda v: v * 100]
    )
    assert out.tolist() == (10 * x).tolist()
    stacked = fnp.piecewise(x, np.array([x < -1, x > 1]), [lambda v: 1 + v, lambda v: v - 1, 0])
    assert (
        stacked.tolist() == np.piecewise(x, [x < -1, x > 1], [lambda v: 1 + v, lambda v: v - 1, 0]).tolist()
    )
    assert fnp.piecewise(x, x < 0, [-1, 1]).tolist() == np.piecewise(x, x < 0, [-1, 1]).tolist()


def test_piecewise_is_a_vmapped_switch_as_jax():
    # The fuzzer: grad of sum(piecewise(x, [x<0, x>1], [neg, square, 0.5])) at -inf was NaN (every
    # function ran on all of x and a select's zero cotangent met square's inf); JAX's piecewise is a
    # lax.switch over the condition that holds, vmapped, whose untaken branches contribute nothing.
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)  # (as the suite's other oracle tests run jax)

    def program(T, N):
        x = np.array([-np.inf, -2.0, 0.5, 3.0, np.inf], np.float32)
        k = np.arange(-4, 5).reshape(3, 3)

        def f(a):
            return N.piecewise(a, [a < 0, a > 1], [lambda v: -v, lambda v: v * v, 0.5])

        return [
            f(x),
            T.grad(lambda a: N.sum(f(a)))(x),
            T.jacfwd(lambda a: N.piecewise(a, [a < 0, a > 1], [N.exp, N.log, 0.5]))(x),
            N.piecewise(k, [k < 0], [lambda v, c: v * c, 1], 3),  # (extra arguments; int dtype)
            T.vmap(lambda a: N.piecewise(a, [a < 0], [N.sin, N.cos]))(x.reshape(5, 1)),
            N.piecewise(np.float32(-1.5), [True], [lambda v: v * 2]),  # (a 0-d x: one switch)
        ]

    for got, want in zip(program(funcgrad, fnp), program(jax, jax.numpy)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_interp_extrapolates_when_asked_as_jax():
    # jnp.interp's docstring: left/right='extrapolate' continue the end segments' lines
    x, xp, fp = np.array([-10.0, 10.0]), np.array([-5.0, 0.0, 5.0]), np.array([-10.0, 0.0, 10.0])
    assert fnp.interp(x, xp, fp, left="extrapolate", right="extrapolate").tolist() == [-20.0, 20.0]
    assert fnp.interp(x, xp, fp, right="extrapolate", left=7.0).tolist() == [7.0, 20.0]
    with pytest.raises(ValueError, match="extrapolate"):
        fnp.interp(x, xp, fp, left="linear")


def test_interp_derivatives_and_weak_types_as_jax():
    # JAX's formula step for step (the fuzzer): a duplicate xp selects fp[i - 1] and x still reaches
    # the result through delta (grad of entr(x) there is 0 * NaN = NaN in jax, was 0), a single
    # sample point goes through the same formula, and Python scalars give a weak result.
    jax = pytest.importorskip("jax")
    jss = pytest.importorskip("jax.scipy.special")
    import funcgrad.scipy.special as fss

    jax.config.update("jax_enable_x64", True)  # (as the suite's other oracle tests run jax)

    def program(T, np_, special):
        def f(x, xp, fp):
            return np_.sum(np_.interp(special.entr(x), xp, fp) * np_.arange(1.0, 5.0))

        return T.grad(f, argnums=(0, 1, 2))

    x = np.array([-1.0, 0.0, 0.5, 2.0])
    for xp in (np.array([0.0, 0.0, 1.0]), np.array([-np.inf, -np.inf, 0.25]), np.array([0.5])):
        fp = np.linspace(1.0, 2.0, xp.size) ** 2
        want = program(jax, jax.numpy, jss)(x, xp, fp)
        for got in (program(funcgrad, fnp, fss)(x, xp, fp), jit(program(funcgrad, fnp, fss))(x, xp, fp)):
            for g, w in zip(got, want):
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)
    for np_ in (fnp, jax.numpy):
        assert np_.interp(1.5, np_.sort(np_.ravel(2.0)), np_.ravel(4.0)).weak_type
        assert not np_.interp(1.5, np.array([1.0, 2.0]), np.array([1.0, 2.0])).weak_type


def test_pad_odd_reflection_and_linear_ramp_as_jax():
    # (the fuzzer) reflect_type='odd' raised NotImplementedError; a one-wide linear ramp is its end
    # value alone (jax's linspace of one point; NumPy's 0 * inf gave NaN); integer ramps round as
    # jax's float32 linspace; the derivative of an odd reflection is jax's too
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)  # (as the suite's other oracle tests run jax)
    cases = [
        (np.array([1.0, 2.5, -4.0, 7.0]), 7, "reflect", {"reflect_type": "odd"}),
        (np.arange(6.0).reshape(2, 3) ** 2, (4, 1), "symmetric", {"reflect_type": "odd"}),
        (np.array([3.0]), 2, "reflect", {"reflect_type": "odd"}),
        (np.array([np.inf, 1.0, np.nan]), 1, "linear_ramp", {"end_values": (2, -1)}),
        (np.array([1, 5, 2], np.int32), 3, "linear_ramp", {"end_values": (2, -1)}),
    ]
    for x, width, mode, kw in cases:
        want = jax.numpy.pad(x, width, mode=mode, **kw)
        padded = jit(lambda x, width=width, mode=mode, kw=kw: fnp.pad(x, width, mode, **kw))
        for fn in (fnp.pad, padded):
            got = fn(x, width, mode, **kw) if fn is fnp.pad else fn(x)
            assert got.dtype == want.dtype
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-13)
    x = np.array([1.0, 2.5, -4.0])
    f = lambda m: lambda x: m.sum(m.pad(x, 4, mode="reflect", reflect_type="odd") * m.arange(11.0))
    np.testing.assert_allclose(np.asarray(funcgrad.grad(f(fnp))(x)), np.asarray(jax.grad(f(jax.numpy))(x)))


def test_a_range_of_axes_as_jax():
    # JAX reads axes as an index tuple, so a range or a 1-D NumPy array works (distrax:
    # expand_dims(scale, range(n)); TensorFlow Probability: transpose(x, np.array(perm)))
    jnp = pytest.importorskip("jax.numpy")
    x = np.ones((1, 1, 3), np.float32)
    for f in (
        lambda m: m.expand_dims(x[0, 0], range(2)),
        lambda m: m.squeeze(x, range(2)),
        lambda m: m.sum(x, axis=range(2)),
        lambda m: m.transpose(x, np.array([0, 2, 1], np.int32)),
        lambda m: m.roll(x, np.array([1, 2]), axis=(1, 2)),
    ):
        got, want = f(fnp), f(jnp)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_vectorize_passes_none_through_and_checks_rank_promotion_as_jax():
    # (JAX's lax_numpy_vectorize_test) a positional None is passed through unchanged where its
    # core dimensions are (); the loop dimensions follow jax_numpy_rank_promotion
    f = fnp.vectorize(lambda x, y: x if y is None else x + y)
    np.testing.assert_array_equal(np.asarray(f(fnp.arange(3), None)), np.arange(3))
    with pytest.raises(ValueError, match=r"Cannot pass None at locations \{1\}"):
        fnp.vectorize(lambda x, y: x, signature="(k),(k)->(k)")(fnp.arange(3), None)
    g = fnp.vectorize(fnp.add, signature="(),()->()")
    with funcgrad.numpy_rank_promotion("raise"), pytest.raises(ValueError, match="require rank promotion"):
        g(fnp.zeros((4, 4)), fnp.zeros(4))
    assert g(fnp.zeros((4, 4)), fnp.zeros(())).shape == (4, 4)


def test_diagonal_weak_types_as_jax():
    # The fuzzer (64-bit long run): the empty diagonal of a weak (0, 2) array was strong (jax: weak);
    # jax's square 2-D offset-0 diagonal is strong (a product with a strong eye), others keep weak.
    jax = pytest.importorskip("jax")
    for shape in [(2, 2), (0, 2), (3, 2), (0, 0), (1, 0, 2)]:
        w, jw = funcgrad.nn.selu(np.zeros(shape, np.int32)), jax.nn.selu(np.zeros(shape, np.int32))
        for offset in (0, 1):
            got, want = fnp.diagonal(w, offset), jax.numpy.diagonal(jw, offset)
            assert (got.shape, got.weak_type) == (want.shape, want.weak_type), (shape, offset)


@pytest.mark.parametrize("shape, axis", [((3, 1, 1), 0), ((2, 3), -1), ((1, 4), (0, 1))])
def test_squeeze_refusal_in_jaxs_words(shape, axis):
    jnp = pytest.importorskip("jax.numpy")
    with pytest.raises(ValueError) as want:
        jnp.squeeze(jnp.ones(shape), axis)
    with pytest.raises(ValueError) as got:
        fnp.squeeze(np.ones(shape), axis)
    assert str(got.value) == str(want.value)


def test_eager_functions_jax_jits_have_jax_s_bits():
    # NOTE: [eager library functions as one program]: these run eagerly as one compiled program, as
    # JAX's jitted functions do, so float32 values are jax's eager ones bit for bit (op by op: nanmean
    # 12 of 16 differed, cov 195 of 256, polyval 356 of 512, i0 322 of 512, sinc 60 of 512)
    import jax.numpy as jnp
    from _oracle import cheapen_jax_compiles

    cheapen_jax_compiles()  # (both sides compiled alike: NOTE: [oracle compile options])
    rng = np.random.default_rng(18)
    x = (rng.standard_normal((8, 16)) * 2).astype(np.float32)
    nans = np.where(rng.random(x.shape) < 0.2, np.nan, x).astype(np.float32)
    for name, args, kw in (
        ("nanmean", (nans,), {"axis": 1}),
        ("cov", (x,), {}),
        ("polyval", (x[0, :5], x), {}),
        ("i0", (x,), {}),
        ("sinc", (x,), {}),
        ("trapezoid", (x,), {"axis": 0}),
    ):
        got, want = getattr(fnp, name)(*args, **kw), getattr(jnp, name)(*args, **kw)
        assert got.dtype == want.dtype and got.weak_type == want.weak_type, name
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=name)


@pytest.mark.parametrize(
    "name, args, kw",
    [
        ("isclose", (np.float32([1.0, 1.1, 2.0]), np.float32([1.05, 1.0, 2.0])), {"rtol": 0.06, "atol": 0.0}),
        ("allclose", (np.float32([1.0, 2.0]), np.float32([1.05, 2.0])), {"atol": 0.1}),
        ("nan_to_num", (np.float32([np.nan, np.inf, -np.inf, 1.0]),), {"nan": 2.5, "posinf": 7.0}),
    ],
)
def test_traced_tolerances_and_replacements_as_jax(name, args, kw):
    # JAX traces isclose's rtol/atol and nan_to_num's nan/posinf/neginf (they are not static): under
    # jit they are tracers (funcgrad refused them with TracerArrayConversionError), and an eager call
    # passing one keeps the function on its compiled route (NOTE: [eager library functions as one
    # program]) instead of falling back to op by op for every later call
    import jax
    import jax.numpy as jnp

    def under(jit_fn, mod):
        return jit_fn(lambda kw: getattr(mod, name)(*args, **kw))(kw)

    for got, want in (
        (getattr(fnp, name)(*args, **kw), getattr(jnp, name)(*args, **kw)),
        (under(jit, fnp), under(jax.jit, jnp)),
    ):
        assert got.dtype == want.dtype and got.weak_type == want.weak_type
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_diff_of_order_zero_returns_the_input_before_any_check_as_jax():
    # (the fuzzer's progq table, seed 23002, 32-bit eager) jnp.diff with n=0 returns its input
    # before checking the rank and the axis: a 0-d input, or an axis past the rank, is no error
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    for a, kw in ((np.float32(2.0), dict(prepend=0)), (np.ones(3), dict(axis=5)), (np.arange(4), {})):
        want = jnp.diff(a, n=0, **kw)
        got = fnp.diff(a, n=0, **kw)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    with pytest.raises(ValueError, match="at least one dimensional"):
        fnp.diff(np.float32(2.0))


def test_repeat_of_an_empty_axis_with_total_repeat_length_as_jax():
    # (the fuzzer's progq table, seed 23006, 32-bit) JAX returns the array unchanged when the repeated
    # axis is empty, whatever total_repeat_length asks (0 excepted): funcgrad made the asked length
    # (shape (2, 0, 2) for (2, 0, 0)) or raised a gather's TypeError for a 1-d empty array
    import jax.numpy as jnp

    for shape, axis, total in (((2, 0, 0), -1, 2), ((0,), 0, 3), ((2, 0), 0, 3), ((0, 2), 0, 0)):
        x = np.zeros(shape, np.float32)
        want = jnp.repeat(x, 2, axis=axis, total_repeat_length=total)
        for f in (fnp.repeat, jit(fnp.repeat, static_argnames=("axis", "total_repeat_length"))):
            got = f(x, 2, axis=axis, total_repeat_length=total)
            assert got.shape == want.shape and got.dtype == want.dtype, (shape, total, got.shape)


def test_vectorize_over_typed_keys_as_jax():
    # flowjax samples with jnp.vectorize(signature="()->(...)") over a batch of typed keys: the
    # function gets key arrays (it got the keys' data: "invalid PRNG key data"); jax's draws
    jax = pytest.importorskip("jax")
    import funcgrad.random as fr

    def draws(np_, random, key):
        f = np_.vectorize(lambda k: random.normal(k, (2,), np.float32), signature="()->(2)")
        s = np_.vectorize(lambda k: random.split(k), signature="()->(2)")
        keys = random.split(key, 6)
        return f(keys.reshape(2, 3)), f(keys[0]), random.key_data(s(keys[:3]))

    ours, theirs = draws(fnp, fr, fr.key(0)), draws(jax.numpy, jax.random, jax.random.key(0))
    for a, b in zip(ours[:2], theirs[:2]):  # (the same bits; eager float32's last place aside)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(ours[2]), np.asarray(theirs[2]))
