"""funcgrad.numpy set routines: ``unique`` (all of NumPy's and JAX's options: ``axis``,
``return_index/inverse/counts``, ``equal_nan``, a static ``size=`` with ``fill_value``), the Array
API's ``unique_all``/``unique_counts``/``unique_inverse``/``unique_values``, and ``intersect1d``,
``setdiff1d``, ``setxor1d``, ``union1d``.

Layer: surface. Imports the other funcgrad.numpy modules.

Everything is one sort plus masks (``_sorted_unique``), as in JAX: the number of unique elements is
data-dependent, so it needs a concrete input, or a static ``size=`` under ``jit``/``vmap`` (the
result is cut or padded to ``size``; padded values are ``fill_value``, by default the smallest
unique value, padded indices 0-based positions of it, padded counts 0).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from funcgrad.kernel import dtypes as _dt
from funcgrad.numpy import reductions
from funcgrad.numpy._core import (
    as_fill,
    asarray,
    aval,
    concrete_int,
    concrete_or_error,
    convert,
    normalize_axis,
    promote_args,
)
from funcgrad.numpy.creation import arange, zeros
from funcgrad.numpy.indexing import getitem
from funcgrad.numpy.lookup import nonzero, take, where
from funcgrad.numpy.manipulation import concatenate, expand_dims, moveaxis, ravel, reshape
from funcgrad.numpy.misc import isin
from funcgrad.numpy.sorting import argsort, cumsum, lexsort, searchsorted
from funcgrad.numpy.transcendental import isnan

__all__ = [
    "intersect1d",
    "setdiff1d",
    "setxor1d",
    "union1d",
    "unique",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
]


def _sorted_unique(ar, axis, equal_nan):
    """``(aux, mask, perm)``: ``ar`` sorted along ``axis`` (rows lexicographically for an axis),
    the mask of first occurrences in ``aux``, and the sorting permutation."""
    if axis is None:
        aux_in = ravel(ar)
        perm = argsort(aux_in, stable=True)
        aux = take(aux_in, perm)
        if aux.shape[0] == 0:
            return aux, zeros((0,), bool), perm
        diff = getitem(aux, slice(1, None)) != getitem(aux, slice(None, -1))
        if equal_nan and _dt.is_inexact(aux.dtype):
            both_nan = isnan(getitem(aux, slice(1, None))) & isnan(getitem(aux, slice(None, -1)))
            diff = diff & ~both_nan
        mask = concatenate([asarray([True]), diff])
        return aux, mask, perm
    rows = moveaxis(ar, axis, 0)
    n = rows.shape[0]
    if n == 0:
        return rows, zeros((0,), bool), zeros((0,), int)
    flat = reshape(rows, (n, -1))
    # Rows sort lexicographically: lexsort takes its last key as the primary one.
    perm = (
        lexsort([getitem(flat, (slice(None), j)) for j in range(flat.shape[1] - 1, -1, -1)])
        if flat.shape[1]
        else arange(n)
    )
    aux = take(rows, perm, axis=0)
    aux_flat = reshape(aux, (n, -1))
    later, earlier = getitem(aux_flat, slice(1, None)), getitem(aux_flat, slice(None, -1))
    differs = later != earlier
    if equal_nan and _dt.is_inexact(aux.dtype):
        differs = differs & ~(isnan(later) & isnan(earlier))
    diff = reductions.any(differs, axis=1)
    mask = concatenate([asarray([True]), diff])
    return aux, mask, perm


def _unique(ar, axis, return_index, return_inverse, return_counts, equal_nan, size, fill_value):
    ar = asarray(ar)
    if axis is not None:
        axis = normalize_axis(axis, ar.ndim)
    aux, mask, perm = _sorted_unique(ar, axis, equal_nan)
    if size is None:
        n_unique = (
            int(concrete_or_error(reductions.sum(mask), "unique without size=").item())
            if mask.shape[0]
            else 0
        )
        size = n_unique
        padded = False
    else:
        size = concrete_int(size, "unique: size")
        padded = True
    ind = nonzero(mask, size=size, fill_value=0)[0] if mask.shape[0] else zeros((size,), int)
    result = (
        take(aux, ind, axis=0 if axis is not None else None)
        if mask.shape[0]
        else zeros((size, *aux.shape[1:]), aux.dtype)
    )
    if axis is not None:
        result = moveaxis(result, 0, axis)
    if padded:
        valid = arange(size) < reductions.sum(mask)
        if fill_value is None:
            fill = getitem(aux, 0) if aux.shape[0] else asarray(0, aux.dtype)
        else:
            fill = as_fill(fill_value, aux.dtype)
        if axis is None:
            result = where(valid, result, fill)
        else:
            shape = [1] * result.ndim
            shape[axis] = size
            # (a slice's fill -- the first unique slice or the caller's -- gets the axis back, so
            # no implicit rank promotion happens: JAX's default 'raise' refuses one)
            fill = expand_dims(fill, axis) if fill.ndim else fill
            result = where(reshape(valid, tuple(shape)), result, fill)
        if fill_value is not None and not (size and mask.shape[0]):
            # (JAX fills an empty result with full_like, which keeps the input's weak type)
            result = _weak_as(result, aval(aux).weak_type)
    outs = [result]
    if return_index:
        # (an empty input gives empty indices and counts even with size=, as JAX's)
        outs.append(take(perm, ind) if mask.shape[0] else zeros((0,), int))
    if return_inverse:
        imask = cumsum(mask.astype(int)) - 1 if mask.shape[0] else zeros((0,), int)
        inverse = zeros(mask.shape, int).at[perm].set(imask)
        if axis is None:
            inverse = reshape(inverse, ar.shape)
        outs.append(inverse)
    if return_counts:
        if mask.shape[0]:
            # Every run's start (not only the first ``size``), so that the last kept run ends at
            # the next start even when ``size`` cuts the result; padded runs count 0.
            m = mask.shape[0]
            idx = concatenate([nonzero(mask, size=max(size, m), fill_value=m)[0], asarray([m])])
            counts = getitem(getitem(idx, slice(1, None)) - getitem(idx, slice(None, -1)), slice(size))
        else:
            counts = zeros((0,), int)
        outs.append(counts)
    return outs[0] if len(outs) == 1 else tuple(outs)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True,
           size=None, fill_value=None):  # fmt: skip
    """The sorted unique elements of ``ar`` (flattened, or the unique slices along ``axis``), and
    optionally the first index of each, the inverse (to rebuild ``ar``) and the counts.

    Needs a concrete ``ar``, or a static ``size=`` (the result is cut or padded to ``size`` with
    ``fill_value``, by default the smallest element) under ``jit``/``vmap``.

    >>> unique([3, 1, 3, 2]).tolist()
    [1, 2, 3]
    >>> [x.tolist() for x in unique([3, 1, 3], return_counts=True, size=3, fill_value=0)]
    [[1, 3, 0], [1, 2, 0]]
    >>> unique([[1, 2], [0, 5], [1, 2]], axis=0).tolist()
    [[0, 5], [1, 2]]
    """
    return _unique(ar, axis, return_index, return_inverse, return_counts, equal_nan, size, fill_value)


class UniqueAllResult(NamedTuple):
    values: object
    indices: object
    inverse_indices: object
    counts: object


class UniqueCountsResult(NamedTuple):
    values: object
    counts: object


class UniqueInverseResult(NamedTuple):
    values: object
    inverse_indices: object


def unique_all(x, /, *, size=None, fill_value=None):
    """The Array API's ``unique_all``: values, first indices, inverse indices (of ``x``'s shape)
    and counts; NaNs are distinct values.

    >>> r = unique_all([2, 1, 2])
    >>> r.values.tolist(), r.indices.tolist(), r.inverse_indices.tolist(), r.counts.tolist()
    ([1, 2], [1, 0], [1, 0, 1], [1, 2])
    """
    return UniqueAllResult(*_unique(x, None, True, True, True, False, size, fill_value))


def unique_counts(x, /, *, size=None, fill_value=None):
    """The Array API's ``unique_counts``: values and counts (NaNs distinct).

    >>> r = unique_counts([2, 1, 2])
    >>> r.values.tolist(), r.counts.tolist()
    ([1, 2], [1, 2])
    """
    return UniqueCountsResult(*_unique(x, None, False, False, True, False, size, fill_value))


def unique_inverse(x, /, *, size=None, fill_value=None):
    """The Array API's ``unique_inverse``: values and inverse indices of ``x``'s shape.

    >>> r = unique_inverse([2, 1, 2])
    >>> r.values.tolist(), r.inverse_indices.tolist()
    ([1, 2], [1, 0, 1])
    """
    return UniqueInverseResult(*_unique(x, None, False, True, False, False, size, fill_value))


def unique_values(x, /, *, size=None, fill_value=None):
    """The Array API's ``unique_values``: the sorted unique values (NaNs distinct).

    >>> unique_values([2, 1, 2]).tolist()
    [1, 2]
    """
    return _unique(x, None, False, False, False, False, size, fill_value)


def _weak_as(out, weak: bool):
    """``out`` weakly typed where JAX's set function's result is: setdiff1d's keeps ar1's weak type;
    intersect1d's and setxor1d's (of promoted operands) keep theirs without ``size=`` and are strong
    with it (JAX builds them then in an array of the result dtype)."""
    return convert(out, aval(out).dtype, weak_type=bool(weak)) if aval(out).weak_type != bool(weak) else out


def _compact(values, keep, size, fill_value, what, zero_fill=False):
    """The entries of ``values`` where ``keep``, in order, cut or padded to ``size`` with
    ``fill_value``, by default JAX's: the smallest entry kept, 0 where none is (always 0 with
    ``zero_fill``: setdiff1d)."""
    if size is None:
        size = int(concrete_or_error(reductions.sum(keep), f"{what} without size=").item())
    else:
        size = concrete_int(size, f"{what}: size")
    if values.shape[0] == 0:
        fill = 0 if fill_value is None else fill_value
        return zeros((size,), values.dtype) + as_fill(fill, values.dtype)
    idx = nonzero(keep, size=size, fill_value=0)[0]
    out = take(values, idx)
    valid = arange(size) < reductions.sum(keep)
    if fill_value is not None:
        fill = fill_value
    elif zero_fill:
        fill = 0
    else:
        # JAX's: the padding (zeros) filled with the largest entry, then with the smallest of that
        # (the smallest kept value, 0 where none is kept, NaN where a NaN is kept; a NaN not kept,
        # as intersect1d's, is not looked at)
        padded = where(valid, out, as_fill(0, values.dtype))
        fill = reductions.min(where(valid, out, reductions.max(padded))) if size else 0
    return where(valid, out, as_fill(fill, values.dtype))


def _unique_with_valid(ar):
    """Sorted unique values of a flattened ``ar`` (duplicates kept but masked) and the mask."""
    aux, mask, _ = _sorted_unique(ravel(asarray(ar)), None, True)
    return aux, mask


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted unique values in either array.

    >>> union1d([3, 1], [2, 1]).tolist()
    [1, 2, 3]
    """
    ar1, ar2 = promote_args(asarray(ar1), asarray(ar2))
    return unique(concatenate([ravel(ar1), ravel(ar2)]), size=size, fill_value=fill_value)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted unique values of ``ar1`` that are not in ``ar2``.

    >>> setdiff1d([4, 1, 3, 1], [3, 5]).tolist()
    [1, 4]
    """
    # (ar1's dtype and weak type, as NumPy's and JAX's: ar2 is only compared with)
    ar1, ar2 = asarray(ar1), asarray(ar2)
    if assume_unique:  # (NumPy's and JAX's: ar1's entries in their order, duplicates kept)
        aux, mask = ravel(ar1), True
    else:
        aux, mask = _unique_with_valid(ar1)
    keep = mask & isin(aux, ar2, invert=True)
    out = _compact(aux, keep, size, fill_value, "setdiff1d", zero_fill=True)
    return _weak_as(out, aval(ar1).weak_type)


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted values that are in exactly one of the arrays.

    >>> setxor1d([1, 2, 3], [2, 3, 4]).tolist()
    [1, 4]
    """
    ar1, ar2 = promote_args(asarray(ar1), asarray(ar2))
    if assume_unique:
        # NumPy's and JAX's: the values that occur once in both arrays together (a value repeated
        # within one array is dropped too; the inputs are trusted, not deduplicated).
        values = concatenate([ravel(ar1), ravel(ar2)])
        values = take(values, argsort(values, stable=True))
        if values.shape[0]:
            differs = getitem(values, slice(1, None)) != getitem(values, slice(None, -1))
            edge = asarray([True])
            keep = concatenate([edge, differs]) & concatenate([differs, edge])
        else:
            keep = values != values
        out = _compact(values, keep, size, fill_value, "setxor1d")
        return _weak_as(out, size is None and aval(ar1).weak_type)
    aux1, mask1 = _unique_with_valid(ar1)
    aux2, mask2 = _unique_with_valid(ar2)
    keep = concatenate([mask1 & isin(aux1, ar2, invert=True), mask2 & isin(aux2, ar1, invert=True)])
    values = concatenate([aux1, aux2])
    order = argsort(values, stable=True)
    out = _compact(take(values, order), take(keep, order), size, fill_value, "setxor1d")
    return _weak_as(out, size is None and aval(ar1).weak_type)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None, fill_value=None):
    """The sorted unique values in both arrays; with ``return_indices``, also the index of each
    value's first occurrence in the flattened ``ar1`` and ``ar2``.

    >>> intersect1d([1, 3, 4, 3], [3, 1, 2, 1]).tolist()
    [1, 3]
    """
    ar1, ar2 = promote_args(asarray(ar1), asarray(ar2))
    if assume_unique:
        return _intersect1d_trusted(ravel(ar1), ravel(ar2), return_indices, size, fill_value)
    aux, mask = _unique_with_valid(ar1)
    keep = mask & isin(aux, ar2)
    values = _weak_as(
        _compact(aux, keep, size, fill_value, "intersect1d"), size is None and aval(ar1).weak_type
    )
    if not return_indices:
        return values
    flat1, flat2 = ravel(ar1), ravel(ar2)
    n_out = values.shape[0]
    valid = arange(n_out) < reductions.sum(keep)
    idx1 = _first_index(flat1, values)
    idx2 = _first_index(flat2, values)
    # (padded indices are the flattened sizes, as JAX's: out of range of either array)
    return values, where(valid, idx1, flat1.shape[0]), where(valid, idx2, flat2.shape[0])


def _intersect1d_trusted(flat1, flat2, return_indices, size, fill_value):
    """intersect1d with ``assume_unique``, as NumPy's and JAX's: the inputs are trusted, not
    deduplicated; a value equal to the next one in the stably sorted concatenation is in the
    intersection (so a value repeated within one input is too), its indices those of the pair."""
    n1 = flat1.shape[0]
    both = concatenate([flat1, flat2])
    perm = argsort(both, stable=True)
    aux = take(both, perm)
    if aux.shape[0]:
        keep = concatenate([getitem(aux, slice(1, None)) == getitem(aux, slice(None, -1)), asarray([False])])
    else:
        keep = aux != aux
    values = _weak_as(
        _compact(aux, keep, size, fill_value, "intersect1d"), size is None and aval(both).weak_type
    )
    if not return_indices:
        return values
    n_out = values.shape[0]
    valid = arange(n_out) < reductions.sum(keep)
    at = nonzero(keep, size=n_out, fill_value=0)[0]
    if aux.shape[0] == 0:
        return values, zeros((n_out,), int), zeros((n_out,), int)
    idx1 = take(perm, at)
    idx2 = take(perm, where(at + 1 < aux.shape[0], at + 1, 0)) - n1
    # (padded indices are the flattened sizes, as JAX's: out of range of either array; without
    # size=, JAX's indices are its sort's iota's, int32 in either mode)
    idx1, idx2 = where(valid, idx1, n1), where(valid, idx2, flat2.shape[0])
    if size is None:
        idx1, idx2 = convert(idx1, np.int32), convert(idx2, np.int32)
    return values, idx1, idx2


def _first_index(flat, values):
    """The index of the first occurrence of each of ``values`` in ``flat`` (stable sort + search)."""
    if flat.shape[0] == 0:
        return zeros(values.shape, int)
    order = argsort(flat, stable=True)
    pos = searchsorted(take(flat, order), values)
    return take(order, where(pos >= flat.shape[0], flat.shape[0] - 1, pos))
