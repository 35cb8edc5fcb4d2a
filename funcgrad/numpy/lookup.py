"""Index-based helpers of funcgrad.numpy: take, take_along_axis, put_along_axis, diagonal, diag,
diagflat, tril/triu/diag_indices, nonzero, argwhere, where, select, piecewise.

Layer: surface. Imports ``funcgrad.numpy._core``, ``indexing``, ``ufuncs``, ``manipulation``,
``sorting``, ``reductions``, the primitive catalog, ``funcgrad._control_flow`` (``piecewise``'s
``switch``) and the kernel's ``vmap_flat``.

Everything here is expressed with ``indexing.getitem`` (one gather) or ``x.at[...]`` (one scatter),
so it inherits their derivatives, batching and out-of-bounds conventions (NOTE: [indexing
semantics]). Functions whose output *shape* depends on values (``nonzero``, ``argwhere``,
one-argument ``where``) need concrete inputs, or a static ``size=`` under ``jit``/``vmap``.
"""

from __future__ import annotations

import numpy as np

from funcgrad._control_flow import switch
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.batching import vmap_flat
from funcgrad.kernel.templates import template_public_functions
from funcgrad.numpy import reductions
from funcgrad.numpy._core import (
    asarray,
    aval,
    broadcast_shapes,
    broadcast_to,
    concrete_int,
    constant,
    convert,
    normalize_axis,
    promote_args,
)
from funcgrad.numpy._core import select as select_same_dtype
from funcgrad.numpy._dtypes import ExtendedArray, extended_in
from funcgrad.numpy.index_update import IndexUpdateHelper
from funcgrad.numpy.indexing import getitem
from funcgrad.numpy.manipulation import moveaxis, ravel, reshape, stack
from funcgrad.numpy.sorting import cumsum
from funcgrad.numpy.ufuncs import as_bool, remainder, where3
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import gather as ix
from funcgrad.primitives._rules import size_extremum

__all__ = [
    "argwhere",
    "diag",
    "diag_indices",
    "diag_indices_from",
    "diagflat",
    "diagonal",
    "flatnonzero",
    "nonzero",
    "piecewise",
    "put_along_axis",
    "select",
    "take",
    "take_along_axis",
    "tril_indices",
    "tril_indices_from",
    "triu_indices",
    "triu_indices_from",
    "where",
]


def _take_mode(mode):
    # jax.numpy's default for take/take_along_axis: out-of-bounds indices return the fill value.
    if mode is None or mode == "fill":
        return "fill"
    if mode in ("clip", "wrap", "promise_in_bounds"):
        return mode
    if mode == "raise":
        raise NotImplementedError("take: mode='raise' needs concrete indices; use 'fill', 'clip' or 'wrap'")
    raise ValueError(f"invalid mode {mode!r} for take")


def take(
    a,
    indices,
    axis=None,
    out=None,
    mode=None,
    unique_indices=False,
    indices_are_sorted=False,
    fill_value=None,
):
    """Elements of ``a`` at ``indices`` along ``axis`` (the flattened array if None).

    Out-of-bounds indices give ``fill_value`` (NaN for floats) by default, as in jax.numpy;
    ``mode='clip'`` clamps into range (a negative index to 0, as NumPy) and ``mode='wrap'`` wraps around.

    >>> take(np.array([[1, 2], [3, 4]]), np.array([1, 0]), axis=1).tolist()
    [[2, 1], [4, 3]]
    >>> take(np.array([0.8, 1.5, 1.9]), np.array([-1, 5]), mode="clip").tolist()
    [0.8, 1.9]
    >>> take(np.array([1.0, 2.0]), 5).item()
    nan
    """
    if isinstance(a, ExtendedArray):  # typed PRNG keys (ExtendedArray)
        kw = {"mode": mode, "unique_indices": unique_indices, "indices_are_sorted": indices_are_sorted}
        return a._numpy_function(take, (a, indices, axis), kw)
    if out is not None:
        raise NotImplementedError("take: the out argument is not supported")
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(axis, a.ndim)
    indices = asarray(indices)
    if indices.dtype.kind not in "iu":
        raise ValueError(f"take: indices must be integers, got {indices.dtype}")  # (jax's type)
    mode = _take_mode(mode)
    if a.shape[axis] == 0 and indices.size:  # (JAX's error: nothing to take, whatever the mode)
        raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
    if mode == "wrap":
        indices, mode = remainder(indices, a.shape[axis]), "clip"
    elif mode == "clip":
        indices = _clip_indices(indices, a.shape[axis])
    index = (slice(None),) * axis + (indices,)
    return getitem(
        a,
        index,
        mode=mode,
        fill_value=fill_value,
        unique_indices=unique_indices,
        indices_are_sorted=indices_are_sorted,
    )


def _clip_indices(indices, size):
    """``indices`` clamped to ``[0, size - 1]``: ``take(mode='clip')`` clips a negative index to 0, as
    NumPy and jax.numpy do, where ``x[i]`` (and ``take_along_axis``, in jax) first counts it from the end.
    Clamping before the gather leaves getitem's end-relative normalisation nothing to do."""
    dtype = aval(indices).dtype
    hi = min(max(size - 1, 0), int(_dt.iinfo(dtype).max))
    return ew.clamp_p.bind(np.zeros((), dtype), indices, np.asarray(hi, dtype))


def _along_axis_index(arr_shape, indices, axis):
    """The advanced index selecting ``indices`` along ``axis`` and every position of the other axes."""
    ndim = len(arr_shape)
    idx_shape = aval(indices).shape
    if len(idx_shape) != ndim:
        raise ValueError(
            f"indices and arr must have the same number of dimensions; got {len(idx_shape)} and {ndim}"
        )
    index = []
    for d in range(ndim):
        if d == axis:
            index.append(indices)
        else:
            shape = [1] * ndim
            shape[d] = arr_shape[d]
            index.append(np.arange(arr_shape[d]).reshape(shape))
    # Check NumPy's broadcasting rule of the non-axis dimensions (a clear error before any gather).
    others_arr = tuple(s for d, s in enumerate(arr_shape) if d != axis)
    others_idx = tuple(s for d, s in enumerate(idx_shape) if d != axis)
    broadcast_shapes(others_arr, others_idx)
    return tuple(index)


def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None, *, wrap_negative_indices=None):
    """Pick ``indices`` along ``axis`` (index and array broadcast in the other axes; the last axis
    by default, as NumPy 2.3+ and jax), as NumPy. JAX's options: ``mode='one_hot'`` (an
    out-of-range index gives 0) and ``wrap_negative_indices=False`` (a negative index is out of
    range: clamped to 0 under ``'clip'``/``'promise_in_bounds'``, filled under ``'fill'``).

    >>> x = np.array([[10, 30, 20], [60, 40, 50]])
    >>> take_along_axis(x, np.argsort(x, axis=1), axis=1).tolist()
    [[10, 20, 30], [40, 50, 60]]
    """
    arr = asarray(arr)
    indices = asarray(indices)
    if indices.dtype.kind not in "iu":
        raise TypeError(f"take_along_axis indices must be of integer type, got {indices.dtype}")
    if axis is None:
        arr, axis = ravel(arr), 0
        indices = ravel(indices)
    axis = normalize_axis(axis, arr.ndim)
    if arr.shape[axis] == 0 and aval(indices).ndim == arr.ndim:
        # (JAX's: nothing to pick from, zeros of the broadcast shape in any mode, a constant)
        shape = broadcast_shapes(aval(indices).shape, arr.shape[:axis] + (1,) + arr.shape[axis + 1 :])
        return constant(0, arr.dtype, shape)
    if mode == "one_hot":  # (JAX's one-hot contraction: the same values, 0 out of range)
        mode, fill_value = "fill", 0
    mode = _take_mode(mode)
    if wrap_negative_indices is False and indices.dtype.kind == "i" and mode != "wrap":
        n = arr.shape[axis]
        indices = where3(indices < 0, 0 if mode in ("clip", "promise_in_bounds") else n, indices)
    if mode == "wrap":
        indices, mode = remainder(indices, arr.shape[axis]), "clip"
    index = _along_axis_index(arr.shape, indices, axis)
    if aval(arr)._sharding is not None and all(
        i == 1 or i == a for d, (i, a) in enumerate(zip(aval(indices).shape, arr.shape)) if d != axis
    ):
        return _take_along_batched(arr, indices, axis, mode, fill_value)
    return getitem(arr, index, mode=mode, fill_value=fill_value)


def _take_along_batched(arr, indices, axis, mode, fill_value):
    """``take_along_axis`` as JAX writes it: one gather whose other dimensions are batch
    dimensions of the operand and the indices, so that on explicit mesh axes they keep their
    shardings (NOTE: [sharding in types]) where an index built from iotas would be ambiguous."""
    n = arr.shape[axis]
    shape = tuple(s if d == axis else arr.shape[d] for d, s in enumerate(aval(indices).shape))
    idx = broadcast_to(indices, shape)
    idx = where3(idx < 0, idx + n, idx)  # negative indices count from the end, as NumPy's
    idx = reshape(idx, (*shape, 1))
    batch = tuple(d for d in range(arr.ndim) if d != axis)
    dn = ix.GatherDimensionNumbers(
        offset_dims=(),
        collapsed_slice_dims=(axis,),
        start_index_map=(axis,),
        operand_batching_dims=batch,
        start_indices_batching_dims=batch,
    )
    return ix.gather(arr, idx, dn, (1,) * arr.ndim, mode=mode, fill_value=fill_value)


def put_along_axis(arr, indices, values, axis, inplace=False, *, mode=None):
    """``arr`` with ``values`` written at ``indices`` along ``axis`` (a new array: ``inplace`` must be
    False, since funcgrad arrays are immutable).

    >>> put_along_axis(np.zeros((2, 2)), np.array([[1], [0]]), 5.0, axis=1).tolist()
    [[0.0, 5.0], [5.0, 0.0]]
    """
    if inplace:
        raise ValueError(
            "put_along_axis: funcgrad arrays are immutable; pass inplace=False and use the result"
        )
    arr = asarray(arr)
    indices = asarray(indices)
    if axis is None:
        flat = ravel(arr)
        return reshape(
            IndexUpdateHelper(flat)[ravel(indices)].set(ravel(asarray(values)), mode=mode), arr.shape
        )
    axis = normalize_axis(axis, arr.ndim)
    return IndexUpdateHelper(arr)[_along_axis_index(arr.shape, indices, axis)].set(values, mode=mode)


# ----------------------------------------------------------------------------------------------
# Diagonals


def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """The ``offset``-th diagonal of the ``(axis1, axis2)`` planes, as the last axis of the result.

    >>> diagonal(np.arange(9).reshape(3, 3), 1).tolist()
    [1, 5]
    >>> diagonal(np.ones((2, 3, 3)), axis1=1, axis2=2).shape
    (2, 3)
    """
    a = asarray(a)
    if a.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    ax1, ax2 = normalize_axis(axis1, a.ndim, "axis1"), normalize_axis(axis2, a.ndim, "axis2")
    if ax1 == ax2:
        raise ValueError("axis1 and axis2 cannot be the same")
    offset = concrete_int(offset, "diagonal's offset")
    b = moveaxis(a, (ax1, ax2), (-2, -1))
    n, m = b.shape[-2:]
    length = max(0, min(n + min(offset, 0), m - max(offset, 0)))
    rows = np.arange(length) + max(-offset, 0)
    cols = np.arange(length) + max(offset, 0)
    out = getitem(b, (Ellipsis, rows, cols))
    # Weak types as JAX's: its diagonal of a square 2-D (non-bool) array at offset 0 is a product
    # with a strong eye (strong); its other diagonals gather (a weak input's stay weak, empty too).
    square = a.ndim == 2 and a.shape[0] == a.shape[1] and offset == 0 and a.dtype != np.bool_
    weak = aval(a).weak_type and not square
    if aval(out).weak_type != weak:
        out = ew.convert_element_type(out, aval(out).dtype, weak_type=weak)
    return out


def diag(v, k: int = 0):
    """The ``k``-th diagonal of a matrix, or a matrix with the vector ``v`` on its ``k``-th diagonal.

    >>> diag(np.array([1, 2])).tolist()
    [[1, 0], [0, 2]]
    >>> diag(np.array([[1, 2], [3, 4]]), 1).tolist()
    [2]
    """
    v = asarray(v)
    k = concrete_int(k, "diag's k")
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError("diag: input must be 1-d or 2-d")
    n = v.shape[0] + abs(k)
    rows = np.arange(v.shape[0]) + max(-k, 0)
    cols = np.arange(v.shape[0]) + max(k, 0)
    zeros = constant(0, v.dtype, (n, n))
    return IndexUpdateHelper(zeros)[rows, cols].set(v, unique_indices=True, indices_are_sorted=True)


def diagflat(v, k: int = 0):
    """A matrix with the flattened ``v`` on its ``k``-th diagonal.

    >>> diagflat(np.array([[1, 2]])).tolist()
    [[1, 0], [0, 2]]
    """
    return diag(ravel(v), k)


def _index_arrays(arrays):
    return tuple(Array._from_owned(np.asarray(x, dtype=_dt.default_int)) for x in arrays)


def tril_indices(n, k: int = 0, m=None):
    """Row and column indices of the lower triangle of an ``(n, m)`` array.

    >>> [x.tolist() for x in tril_indices(2)]
    [[0, 1, 1], [0, 0, 1]]
    """
    _check_size(_triu_size(n if m is None else m, n, -k))
    return _index_arrays(np.tril_indices(concrete_int(n, "n"), concrete_int(k, "k"), m))


def triu_indices(n, k: int = 0, m=None):
    """Row and column indices of the upper triangle of an ``(n, m)`` array.

    >>> [x.tolist() for x in triu_indices(2)]
    [[0, 0, 1], [0, 1, 1]]
    """
    _check_size(_triu_size(n, n if m is None else m, k))
    return _index_arrays(np.triu_indices(concrete_int(n, "n"), concrete_int(k, "k"), m))


def _check_size(size) -> None:
    """A size a symbolic export traces (the traced sizes record its expression) must be >= 0 for
    every size the export allows, as JAX's shape check of the result decides it."""
    if size is not None:
        _decided(size, ">=", 0)


def _decided(a, op: str, b) -> bool:
    """``a <op> b`` of sizes, decided for every size a symbolic export allows when one is traced."""
    if hasattr(a, "decide"):
        return a.decide(b, op)
    if hasattr(b, "decide"):
        return b.decide(a, {"<": ">", ">=": "<="}[op])
    return a < b if op == "<" else a >= b


def _triu_size(n, m, k):
    """How many indices ``triu_indices(n, k, m)`` gives, computed as JAX's ``_triu_size`` when a
    symbolic export traces the sizes (NOTE: [symbolic comparisons at sample sizes] in
    funcgrad/export/_polymorphic.py): the traced sizes record ``floordiv(n^2 + n, 2)``, which the
    export writes as the result's dimension; else nothing."""
    if not any(getattr(v, "traced", False) for v in (n, m, k)):
        return None
    if _decided(k, "<", 0):  # (decided for every size, as JAX's: k = 1 - n is inconclusive)
        return n * m - _triu_size(m, n, 1 - k)
    if _decided(k, ">=", m):
        return 0
    mk = size_extremum(n, m - k, "min")
    return mk * (mk + 1) // 2 + mk * (m - k - mk)


def tril_indices_from(arr, k: int = 0):
    """``tril_indices`` for the shape of the 2-D ``arr``.

    >>> [x.tolist() for x in tril_indices_from(np.ones((2, 3)), 1)]
    [[0, 0, 1, 1, 1], [0, 1, 0, 1, 2]]
    """
    shape = aval(arr).shape
    if len(shape) != 2:
        raise ValueError("input array must be 2-d")
    return tril_indices(shape[0], k, shape[1])


def triu_indices_from(arr, k: int = 0):
    """``triu_indices`` for the shape of the 2-D ``arr``.

    >>> [x.tolist() for x in triu_indices_from(np.ones((2, 2)))]
    [[0, 0, 1], [0, 1, 1]]
    """
    shape = aval(arr).shape
    if len(shape) != 2:
        raise ValueError("input array must be 2-d")
    return triu_indices(shape[0], k, shape[1])


def diag_indices(n, ndim: int = 2):
    """Indices of the main diagonal of an ``ndim``-dimensional array of side ``n``.

    >>> [x.tolist() for x in diag_indices(2)]
    [[0, 1], [0, 1]]
    """
    return _index_arrays(np.diag_indices(concrete_int(n, "n"), ndim))


def diag_indices_from(arr):
    """``diag_indices`` for an array whose sides are all equal.

    >>> [x.tolist() for x in diag_indices_from(np.ones((2, 2)))]
    [[0, 1], [0, 1]]
    """
    shape = aval(arr).shape
    if len(set(shape)) != 1 or len(shape) < 2:
        raise ValueError("All dimensions of input must be of equal length (and at least 2)")
    return diag_indices(shape[0], len(shape))


# ----------------------------------------------------------------------------------------------
# Data-dependent shapes: nonzero, argwhere, where


def nonzero(a, *, size=None, fill_value=None):
    """Indices of the non-zero elements, one array per dimension.

    Under ``jit``/``vmap`` the number of results must be static: pass ``size=N`` (the result is cut
    to, or padded to, ``N`` entries; padding uses ``fill_value``, 0 by default).

    >>> [x.tolist() for x in nonzero(np.array([[0, 3], [4, 0]]))]
    [[0, 1], [1, 0]]
    >>> [x.tolist() for x in nonzero(np.array([0, 5, 0, 7]), size=3, fill_value=-1)]
    [[1, 3, -1]]
    """
    a = asarray(a)
    if a.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use atleast_1d(a).nonzero() instead.")
    mask = as_bool(a)
    if size is None:
        value = core.concrete_value(mask)
        if value is None:
            raise core.ConcretizationTypeError(
                "nonzero (and argwhere, and where with one argument) on a traced array needs a static "
                "size: the number of non-zero elements decides the result's shape. Pass size=N (and "
                "optionally fill_value=...) to get exactly N indices, or use "
                "funcgrad.numpy.where(condition, x, y) to keep the array's shape."
            )
        return _index_arrays(np.nonzero(value))
    size = concrete_int(size, "nonzero's size")
    dtype = _dt.default_int
    if a.size == 0:  # zeros, not fill_value, as JAX's (its early return for an empty array)
        return tuple(constant(0, dtype, (size,)) for _ in a.shape)
    if size == 0:
        fills = _fill_values(fill_value, a.ndim)
        return tuple(_filled(f, dtype, (size,)) for f in fills)
    flat_mask = ew.convert_element_type(ravel(mask), dtype)
    rank = cumsum(flat_mask)
    # counts[k] = how many elements have rank k; their running sum is the flat index of the
    # (k+1)-th non-zero element (a.size past the last one).
    counts = IndexUpdateHelper(constant(0, dtype, (size,)))[rank].add(
        constant(1, dtype, (a.size,)), mode="drop"
    )
    flat_index = cumsum(counts)
    total = reductions.sum(flat_mask)
    valid = ew.lt_p.bind(constant(np.arange(size), dtype), total)
    outs = []
    stride = a.size
    for dim, fill in zip(a.shape, _fill_values(fill_value, a.ndim)):
        stride //= dim
        coord = remainder(ew.div_p.bind(flat_index, constant(stride, dtype)), dim) if dim else flat_index
        outs.append(select_same_dtype(valid, coord, _filled(fill, dtype, (size,))))
    return tuple(outs)


def _fill_values(fill_value, ndim):
    if fill_value is None:
        return [0] * ndim
    parts = fill_value if isinstance(fill_value, tuple | list) else (fill_value,)
    if any(isinstance(v, core.Tracer) for v in parts):  # (a traced fill_value under jit, as JAX takes)
        values = asarray(fill_value)
        if values.ndim == 0:
            return [values] * ndim
        if values.shape != (ndim,):
            raise ValueError(f"fill_value must be a scalar or a tuple of length {ndim}; got {fill_value!r}")
        return [getitem(values, i) for i in range(ndim)]
    values = np.asarray(fill_value)
    if values.ndim == 0:
        return [values.item()] * ndim
    if values.shape != (ndim,):
        raise ValueError(f"fill_value must be a scalar or a tuple of length {ndim}; got {fill_value!r}")
    return values.tolist()


def _filled(fill, dtype, shape):
    if isinstance(fill, core.Tracer | Array):
        return broadcast_to(convert(fill, dtype), shape)
    return constant(fill, dtype, shape)


def flatnonzero(a, *, size=None, fill_value=None):
    """Indices of the non-zero elements of the flattened array.

    >>> flatnonzero(np.array([[0, 1], [2, 0]])).tolist()
    [1, 2]
    """
    return nonzero(ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """Indices of the non-zero elements, one row per element (shape ``(N, a.ndim)``).

    >>> argwhere(np.array([[0, 3], [4, 0]])).tolist()
    [[0, 1], [1, 0]]
    """
    a = asarray(a)
    if a.ndim == 0:
        n = 1 if size is None and bool(core.concrete_value(as_bool(a))) else (size or 0)
        return constant(0, _dt.default_int, (n, 0))
    return stack(nonzero(a, size=size, fill_value=fill_value), axis=1)


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """``x`` where ``condition`` else ``y`` (broadcast, NEP 50 promotion); with only ``condition``,
    ``nonzero(condition, size=..., fill_value=...)``.

    The derivative flows to the selected operand only (the other gets zeros); to avoid NaN
    derivatives from an unselected branch, make that branch's *inputs* safe too (NOTE: [no NaN
    gradients]).

    >>> where(np.array([True, False]), 1.0, np.array([5.0, 6.0])).tolist()
    [1.0, 6.0]
    >>> [i.tolist() for i in where(np.array([0, 1, 1]))]
    [[1, 2]]
    """
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("Either both or neither of x and y should be given")
    if size is not None or fill_value is not None:
        raise ValueError("size and fill_value are only valid with the one-argument form of where")
    if (keys := extended_in((x, y))) is not None:  # typed PRNG keys (ExtendedArray): with keys only
        if not (isinstance(x, ExtendedArray) and isinstance(y, ExtendedArray)):  # (JAX's error)
            raise _dt.not_promotable(keys.dtype)
        return keys._numpy_function(_where_pair, (condition, [x, y]), {})
    return where3(condition, x, y)


def _where_pair(condition, pair):
    return where3(condition, *pair)


_where_pair.__name__ = "where"  # (its errors name where)


def select(condlist, choicelist, default=0):
    """Elements of the first ``choicelist`` entry whose condition holds (``default`` if none does).

    >>> x = np.arange(5)
    >>> select([x < 2, x > 3], [x, x ** 2], default=-1).tolist()
    [0, 1, -1, -1, 16]
    """
    if len(condlist) != len(choicelist):
        n, m = len(condlist), len(choicelist)
        raise ValueError(f"condlist must have length equal to choicelist ({n} vs {m})")
    if not condlist:
        raise ValueError("condlist must be non-empty")
    # (JAX's: a condition of another dtype is its truth value, NaN true; NumPy refuses it)
    conds = [asarray(c) for c in condlist]
    conds = [c if c.dtype == np.bool_ else c.astype(np.bool_) for c in conds]
    if (keys := extended_in((list(choicelist), default))) is not None:  # typed PRNG keys: with keys only
        if not all(isinstance(c, ExtendedArray) for c in (*choicelist, default)):
            raise ValueError(f"dtype={keys.dtype} is not a valid dtype for JAX type promotion.")  # (JAX's)
        return keys._numpy_function(lambda cs: select(conds, cs[:-1], cs[-1]), ([*choicelist, default],), {})
    choices = promote_args(*choicelist, default)
    out = choices[-1]
    for cond, choice in zip(reversed(conds), reversed(choices[:-1])):
        out = where3(cond, choice, out)
    return out


def piecewise(x, condlist, funclist, *args, **kw):
    """Evaluate ``funclist[i](x)`` where ``condlist[i]`` holds (later conditions win; an extra last
    function is the default).

    As JAX's: a ``lax.switch`` over the index of the condition that holds, vmapped over the
    elements, so each function sees one element and a branch not taken contributes nothing to a
    derivative (not ``0 * inf``).

    >>> x = np.array([-2.0, 0.5, 3.0])
    >>> piecewise(x, [x < 0, x > 1], [lambda v: -v, lambda v: v ** 2, 0.0]).tolist()
    [2.0, 0.0, 9.0]
    >>> piecewise(x, np.array([False, True]), [lambda v: v, lambda v: 10 * v]).tolist()
    [-20.0, 5.0, 30.0]
    """
    x = asarray(x)
    if isinstance(condlist, Array | core.Tracer | np.ndarray):
        c, nf = asarray(condlist), len(funclist)
        if c.ndim == 0 or (c.ndim == x.ndim and c.shape[0] not in (nf, nf - 1)):
            condlist = [c]  # one condition (NumPy's reading; JAX would refuse the count)
        else:  # JAX's: a stack of conditions along axis 0, each broadcast against x
            condlist = [getitem(c, i) for i in range(c.shape[0])]
    elif not isinstance(condlist, list | tuple):
        condlist = [condlist]
    conds = [broadcast_to(as_bool(c), x.shape) for c in condlist]
    n = len(conds)
    if len(funclist) == n + 1:
        funclist = [funclist[-1], *funclist[:n]]  # (the default is branch 0, as JAX's)
    elif len(funclist) == n:
        funclist = [0, *funclist]
    else:
        raise ValueError(
            f"with {n} condition(s), either {n} or {n + 1} functions are expected; got {len(funclist)}"
        )
    # The branch of each element: 1 + the last condition that holds there, else 0 (the default).
    index = constant(0, np.int32, x.shape)
    for i, cond in enumerate(conds):
        index = select_same_dtype(cond, constant(i + 1, np.int32, x.shape), index)

    def branch(f):
        if callable(f):
            return lambda v: convert(asarray(f(v, *args, **kw)), x.dtype)
        return lambda v: convert(asarray(f), x.dtype)

    branches = [branch(f) for f in funclist]
    if x.ndim == 0:
        return switch(index, branches, x)
    flat = vmap_flat(lambda i, v: [switch(i, branches, v)], x.size, [0, 0], [0], [ravel(index), ravel(x)])[0]
    return reshape(flat, x.shape + flat.shape[1:])


# NOTE: [surface templates]: every public function defined above is templated (the rule, not a mark).
template_public_functions(globals())
