"""funcgrad.numpy histograms in several dimensions: ``histogram_bin_edges``, ``histogram2d``,
``histogramdd`` (``histogram`` itself is in ``misc``).

Layer: surface. Imports the other funcgrad.numpy modules.

Bin edges from a bin count are computed from the data's range (traced values allowed: the count
is static, the edges are values); NumPy's named rules (``bins="auto"``, ``"fd"``, ...) choose the
count from the data, so they need a concrete input (NumPy computes them). As in NumPy, the last bin
of each dimension includes its right edge and values outside the range are not counted.
"""

from __future__ import annotations

import builtins

import numpy as np

from funcgrad.numpy import reductions
from funcgrad.numpy._core import (
    asarray,
    concrete_int,
    concrete_or_error,
    convert,
    promote_args_inexact,
)
from funcgrad.numpy.indexing import getitem
from funcgrad.numpy.lookup import where
from funcgrad.numpy.manipulation import ravel, reshape, stack
from funcgrad.numpy.misc import bincount, count_bin_edges
from funcgrad.numpy.numeric import diff
from funcgrad.numpy.sorting import searchsorted

__all__ = ["histogram2d", "histogram_bin_edges", "histogramdd"]


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The edges ``histogram(a, bins, range)`` would use: ``bins + 1`` evenly spaced edges over
    ``range`` (default: the data's minimum to maximum; a zero-width range is widened by 0.5 on
    each side, as NumPy does), the given edges, or NumPy's rule named by a string.

    >>> histogram_bin_edges(np.array([1.0, 2.0, 5.0]), bins=4).tolist()
    [1.0, 2.0, 3.0, 4.0, 5.0]
    >>> histogram_bin_edges(np.array([3, 3]), bins=2).tolist()
    [2.5, 3.0, 3.5]
    """
    (a,) = promote_args_inexact(ravel(asarray(a)))
    if isinstance(bins, str):
        value = concrete_or_error(
            a, f"histogram_bin_edges(bins={bins!r}) (the bin count depends on the data)"
        )
        w = None if weights is None else np.asarray(concrete_or_error(asarray(weights), "the weights"))
        return asarray(np.histogram_bin_edges(value, bins, range, w).astype(a.dtype))
    if np.ndim(bins) == 1:
        edges = convert(asarray(bins), a.dtype)
        if edges.shape[0] < 2:
            raise ValueError("histogram_bin_edges: bins given as edges need at least two of them")
        return edges
    n = concrete_int(bins, "histogram_bin_edges: bins")
    if n < 1:
        raise ValueError(f"histogram_bin_edges: bins must be positive, got {n}")
    return count_bin_edges(a, n, range)


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
    """The ``D``-dimensional histogram of ``N`` points (``sample`` of shape ``(N, D)``): counts
    (or summed ``weights``) of shape ``(nx, ny, ...)`` and the list of each dimension's edges.
    ``bins`` is a count, a sequence of counts or of edge arrays (one per dimension); ``range`` a
    sequence of ``(min, max)`` pairs (or None entries). ``density=True`` divides by the total
    and the bin volumes.

    >>> h, edges = histogramdd(np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 0.2]]), bins=2)
    >>> h.tolist(), [e.tolist() for e in edges]
    ([[1, 0], [1, 1]], [[0.0, 0.5, 1.0], [0.0, 0.5, 1.0]])
    """
    sample = asarray(sample)
    if sample.ndim == 1:
        sample = reshape(sample, (sample.shape[0], 1))
    if sample.ndim != 2:
        raise ValueError(f"histogramdd: sample must be (N, D) points, got shape {sample.shape}")
    (sample,) = promote_args_inexact(sample)
    n, d = sample.shape
    if isinstance(bins, str):
        raise ValueError("histogramdd: bins must be counts or edges (named rules are histogram's)")
    try:  # NumPy's reading: anything with a length has one entry per dimension
        per_dim = len(bins)
    except TypeError:
        bins, per_dim = [bins] * d, d
    if per_dim != d:
        raise ValueError(f"histogramdd: bins must be a count or one entry per dimension ({d})")
    ranges = [None] * d if range is None else list(range)
    if len(ranges) != d:
        raise ValueError(f"histogramdd: range must have one (min, max) entry per dimension ({d})")
    columns = [getitem(sample, (slice(None), i)) for i in builtins.range(d)]
    edges = [histogram_bin_edges(col, b, r) for col, b, r in zip(columns, bins, ranges)]
    # Bin index per point and dimension: 0 below the first edge, len(edges) above the last; a
    # value on the last edge belongs to the last bin.
    flat_index = None
    sizes = [e.shape[0] + 1 for e in edges]
    for col, e, size in zip(columns, edges, sizes):
        idx = searchsorted(e, col, side="right")
        idx = where(col == getitem(e, -1), e.shape[0] - 1, idx)
        flat_index = idx if flat_index is None else flat_index * size + idx
    if flat_index is None:  # no dimensions
        flat_index = asarray(np.zeros((n,), int))
    w = None if weights is None else convert(ravel(asarray(weights)), sample.dtype)
    total = int(np.prod(sizes))
    counts = bincount(flat_index, weights=w, length=total)
    if weights is not None or density:  # (unweighted counts stay integers, as JAX's histogramdd)
        counts = convert(counts, sample.dtype)
    hist = getitem(reshape(counts, tuple(sizes)), (slice(1, -1),) * d)
    if density:
        volume = None
        for i, e in enumerate(edges):
            width = reshape(diff(e), tuple(-1 if j == i else 1 for j in builtins.range(d)))
            volume = width if volume is None else volume * width
        hist = hist / reductions.sum(hist) / volume
    return hist, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    """The 2-D histogram of points ``(x[i], y[i])``: counts of shape ``(nx, ny)``, the x edges and
    the y edges. ``bins``: a count, a pair of counts, one edge array (for both) or a pair of them.

    >>> h, xe, ye = histogram2d(np.array([0.0, 1.0, 1.0]), np.array([0.0, 1.0, 0.2]), bins=2)
    >>> h.tolist()
    [[1, 0], [1, 1]]
    """
    x, y = asarray(x), asarray(y)
    if x.ndim != 1 or y.shape != x.shape:
        raise ValueError(f"histogram2d: x and y must be 1-D of the same length, got {x.shape} and {y.shape}")
    # NumPy's reading of ``bins``: two entries are per dimension, any other length is one list of
    # edges for both, a scalar a count for both.
    try:
        count = len(bins)
    except TypeError:
        count = 1
    if count not in (1, 2):
        edges = asarray(bins)
        bins = [edges, edges]
    hist, (xedges, yedges) = histogramdd(stack([x, y], axis=1), bins, range, weights, density)
    return hist, xedges, yedges
