"""``funcgrad.scipy.interpolate``: ``RegularGridInterpolator`` (``jax.scipy.interpolate``'s one
name), linear or nearest-neighbour interpolation on a rectilinear grid.

Layer: surface. Imports funcgrad.numpy and funcgrad.tree_util.

As in JAX, ``bounds_error`` must be False (a traced point cannot raise), each grid axis must be
strictly increasing (not checked: that would need the values), and the interpolator is a pytree
whose leaves are the grid, the values and the fill value, so it can be passed through ``jit``,
``vmap`` and ``grad`` -- the gradient with respect to the values, and (linear method) to the
query points, is that of the interpolation formula.

>>> import funcgrad.numpy as fnp
>>> f = RegularGridInterpolator((fnp.array([0.0, 1.0, 2.0]),), fnp.array([0.0, 10.0, 40.0]))
>>> f(fnp.array([0.5, 1.5, 3.0])).tolist()
[5.0, 25.0, nan]
"""

from __future__ import annotations

import itertools

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import tree_util as tu
from funcgrad.kernel import dtypes as _dt

__all__ = ["RegularGridInterpolator"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


_METHODS = ("linear", "nearest")


def _inexact(x):
    x = fnp.asarray(x)
    return x.astype(_dt.default_float) if x.dtype.kind in "biu" else x


def _points_array(xi, ndim: int):
    """The query points as one ``(..., ndim)`` array: a tuple of coordinate arrays is broadcast
    and stacked; a 1-d array is a list of points of dimension ``ndim``."""
    if isinstance(xi, tuple) and len(xi) == 1:
        xi = xi[0]
    if isinstance(xi, tuple):
        coords = fnp.broadcast_arrays(*[_inexact(c) for c in xi])
        return fnp.stack(coords, axis=-1)
    xi = _inexact(xi)
    return xi.reshape(-1, ndim) if xi.ndim == 1 else xi


class RegularGridInterpolator:
    """Interpolate ``values`` given on the grid ``points`` (one strictly increasing 1-d array per
    leading axis of ``values``; trailing axes are carried along) at arbitrary points, by
    ``method="linear"`` or ``"nearest"``. Points outside the grid get ``fill_value`` (NaN by
    default); ``fill_value=None`` extrapolates. ``bounds_error=True`` is refused, as in JAX.

    >>> import funcgrad.numpy as fnp
    >>> grid = (fnp.array([1.0, 2.0, 3.0]), fnp.array([4.0, 5.0, 6.0]))
    >>> values = fnp.array([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0], [70.0, 80.0, 90.0]])
    >>> interpolate = RegularGridInterpolator(grid, values)
    >>> [round(v, 6) for v in interpolate(fnp.array([[1.5, 4.5], [2.2, 5.8]])).tolist()]
    [30.0, 64.0]
    >>> interpolate(fnp.array([[1.5, 4.5], [2.2, 5.8]]), method="nearest").tolist()
    [10.0, 60.0]
    """

    def __init__(self, points, values, method="linear", bounds_error=False, fill_value=np.nan):
        if method not in _METHODS:
            raise ValueError(
                f"RegularGridInterpolator: method {method!r} is not defined; use 'linear' or 'nearest'"
            )
        if bounds_error:
            raise ValueError(
                "RegularGridInterpolator: bounds_error=True is not supported (a traced point cannot "
                "raise under jit); pass bounds_error=False and check the points yourself"
            )
        values = _inexact(values)
        if len(points) > values.ndim:
            raise ValueError(
                f"RegularGridInterpolator: there are {len(points)} point arrays, but values has "
                f"{values.ndim} dimensions"
            )
        grid = tuple(fnp.asarray(p) for p in points)
        for axis, (g, n) in enumerate(zip(grid, values.shape)):
            if g.ndim != 1 or g.shape[0] != n:
                raise ValueError(
                    f"RegularGridInterpolator: points[{axis}] must be 1-d with values.shape[{axis}] = {n} "
                    f"entries, got shape {g.shape}"
                )
            if n < 2:
                raise ValueError(f"RegularGridInterpolator: points[{axis}] needs at least 2 points, got {n}")
        if fill_value is not None:
            fill_value = fnp.asarray(fill_value)
            if not np.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
                raise ValueError(
                    f"RegularGridInterpolator: fill_value of dtype {fill_value.dtype} cannot be cast to the "
                    f"values' dtype {values.dtype}; pass None or a compatible value"
                )
        self.method = method
        self.bounds_error = bounds_error
        self.grid = grid
        self.values = values
        self.fill_value = fill_value

    def __call__(self, xi, method=None):
        method = self.method if method is None else method
        if method not in _METHODS:
            raise ValueError(
                f"RegularGridInterpolator: method {method!r} is not defined; use 'linear' or 'nearest'"
            )
        ndim = len(self.grid)
        xi = _points_array(xi, ndim)
        if xi.shape[-1] != ndim:
            raise ValueError(
                f"RegularGridInterpolator: the points xi have dimension {xi.shape[-1]}, but the grid has "
                f"dimension {ndim}"
            )
        shape = xi.shape
        flat = xi.reshape(-1, ndim)
        indices, distances, outside = self._find_indices([flat[:, d] for d in range(ndim)])
        if method == "linear":
            result = self._linear(indices, distances)
        else:
            result = self._nearest(indices, distances)
        if self.fill_value is not None:
            mask = outside.reshape(outside.shape + (1,) * (result.ndim - 1))
            result = fnp.where(mask, self.fill_value, result)
        return result.reshape(shape[:-1] + self.values.shape[ndim:])

    def _find_indices(self, coords):
        """For each axis: the index of the grid cell holding each point (clipped to the first and
        last cell, which extrapolates), the point's distance from the cell's lower edge in units
        of the cell's width, and whether the point lies outside the grid."""
        indices, distances = [], []
        outside = fnp.zeros(coords[0].shape, dtype=bool)
        for x, g in zip(coords, self.grid):
            i = fnp.clip(fnp.searchsorted(g, x) - 1, 0, g.shape[0] - 2)
            indices.append(i)
            distances.append((x - g[i]) / (g[i + 1] - g[i]))
            outside = outside | (x < g[0]) | (x > g[-1])
        return indices, distances, outside

    def _linear(self, indices, distances):
        # The sum over the 2^ndim corners of each point's cell, weighted by the product of the
        # per-axis weights (1 - t at the lower corner, t at the upper).
        trailing = (slice(None),) + (None,) * (self.values.ndim - len(indices))
        result = 0.0
        for corner in itertools.product((0, 1), repeat=len(indices)):
            weight = 1.0
            for upper, t in zip(corner, distances):
                weight = weight * (t if upper else 1 - t)
            index = tuple(i + upper for i, upper in zip(indices, corner))
            result = result + self.values[index] * weight[trailing]
        return result

    def _nearest(self, indices, distances):
        # A point exactly half-way goes to the lower neighbour, as in SciPy and JAX.
        return self.values[tuple(fnp.where(t <= 0.5, i, i + 1) for i, t in zip(indices, distances))]


def _flatten(obj):
    return (obj.grid, obj.values, obj.fill_value), (obj.method, obj.bounds_error)


def _unflatten(aux, children):
    # Bypasses __init__: the leaves may be tracers or placeholders of a tree operation.
    obj = object.__new__(RegularGridInterpolator)
    obj.grid, obj.values, obj.fill_value = children
    obj.method, obj.bounds_error = aux
    return obj


tu.register_pytree_node(RegularGridInterpolator, _flatten, _unflatten)
