"""funcgrad.numpy index helpers: ``s_``, ``index_exp``, ``ix_``, ``mgrid``, ``ogrid``, ``r_``,
``c_``, ``mask_indices``, ``fromfunction``.

Layer: surface. Imports the other funcgrad.numpy modules and the kernel's batching (``vmap_flat``,
for ``fromfunction``).

Grids and concatenations have static sizes: slice bounds are concrete Python numbers (a complex
step ``5j`` means 5 points, endpoint included, as in NumPy).
"""

from __future__ import annotations

import numpy as np

from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.batching import vmap_flat
from funcgrad.numpy._core import (
    asarray,
    broadcast_to,
    concrete_int,
    promote_args,
)
from funcgrad.numpy.creation import arange, linspace, ones, zeros
from funcgrad.numpy.lookup import nonzero
from funcgrad.numpy.manipulation import (
    concatenate,
    reshape,
    stack,
    transpose,
)

__all__ = ["c_", "fromfunction", "index_exp", "ix_", "mask_indices", "mgrid", "ogrid", "r_", "s_"]


class _IndexExpression:
    """``s_[...]`` / ``index_exp[...]``: the index expression itself (a tuple for ``index_exp``)."""

    def __init__(self, maketuple: bool):
        self.maketuple = maketuple

    def __getitem__(self, item):
        if self.maketuple and not isinstance(item, tuple):
            return (item,)
        return item


s_ = _IndexExpression(False)
s_.__doc__ = """``s_[1:3, ::2]`` is ``(slice(1, 3), slice(None, None, 2))``, as NumPy's ``s_``.

>>> s_[1:3]
slice(1, 3, None)
"""
index_exp = _IndexExpression(True)


def ix_(*args):
    """Open meshes from 1-D sequences: ``a[ix_(rows, cols)]`` selects the cross product.

    >>> [x.shape for x in ix_([0, 1], [2, 3, 4])]
    [(2, 1), (1, 3)]
    """
    out = []
    n = len(args)
    for i, a in enumerate(args):
        a = asarray(a)
        if a.ndim != 1:  # (JAX's errors; NumPy takes a boolean mask's nonzero indices)
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape {a.shape}")
        if a.dtype == np.bool_:
            raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
        shape = [1] * n
        shape[i] = a.shape[0]
        out.append(reshape(a, tuple(shape)))
    return tuple(out)


class _Grid:
    """``mgrid[...]`` (dense) and ``ogrid[...]`` (open): grids from slices; a complex step
    ``5j`` means 5 points including the end, as in NumPy."""

    def __init__(self, sparse: bool):
        self.sparse = sparse

    def __getitem__(self, key):
        single = isinstance(key, slice)
        keys = (key,) if single else tuple(key)
        axes = [_grid_axis(k, "ogrid" if self.sparse else "mgrid") for k in keys]
        if single:
            return axes[0]
        if not axes:  # mgrid[()] / ogrid[()]: JAX's empty int array and empty tuple
            return () if self.sparse else asarray(np.zeros(0, int))
        dtype = np.result_type(*[a.dtype for a in axes])
        axes = [a.astype(dtype) for a in axes]
        n = len(axes)
        if self.sparse:  # (a list, as JAX's ogrid returns; NumPy 2 gives a tuple)
            return [
                reshape(a, tuple(a.shape[0] if j == i else 1 for j in range(n))) for i, a in enumerate(axes)
            ]
        shape = tuple(a.shape[0] for a in axes)
        return stack(
            [
                broadcast_to(reshape(a, tuple(a.shape[0] if j == i else 1 for j in range(n))), shape)
                for i, a in enumerate(axes)
            ]
        )


def _grid_axis(s, op_name: str):
    if not isinstance(s, slice):
        raise TypeError(f"mgrid/ogrid take slices (start:stop:step), got {s!r}")
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    stop = s.stop
    for v, what in ((start, "start"), (stop, "stop"), (step, "step")):
        if isinstance(v, core.Tracer):  # (JAX's words; the grid's size is static)
            raise core.ConcretizationTypeError(
                f"Abstract tracer value encountered where concrete value is expected: the slice {what} "
                f"of jnp.{op_name} (the grid's size is static)"
            )
    if isinstance(step, complex):
        num = int(abs(step))
        return linspace(start, stop, num)
    return arange(start, stop, step)


mgrid = _Grid(sparse=False)
mgrid.__doc__ = """A dense multi-dimensional grid: ``mgrid[0:2, 0:3].shape == (2, 2, 3)``.

>>> mgrid[0:3].tolist()
[0, 1, 2]
"""
ogrid = _Grid(sparse=True)
ogrid.__doc__ = """An open multi-dimensional grid: ``[a.shape for a in ogrid[0:2, 0:3]] == [(2, 1), (1, 3)]``.

>>> ogrid[0:1:3j].tolist()
[0.0, 0.5, 1.0]
"""


class _Concatenator:
    """``r_[...]`` / ``c_[...]``: concatenate arrays, scalars and slices (``r_[1:4, 0, 7]``) along
    an axis; a leading string ``"axis,ndmin,trans1d"`` or ``"r"``/``"c"`` sets how, as in NumPy."""

    def __init__(self, axis: int, ndmin: int, trans1d: int, name: str):
        self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        matrix = None
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive in ("r", "c"):
                matrix = directive
            else:
                try:
                    parts = [int(p) for p in directive.split(",")]
                except ValueError:  # (JAX's words)
                    raise ValueError(f"could not understand directive {directive!r}") from None
                axis = parts[0]
                if len(parts) > 1:
                    ndmin = parts[1]
                if len(parts) > 2:
                    trans1d = parts[2]
        arrays = []
        for item in items:
            if isinstance(item, slice):
                a = _grid_axis(item, self.name)
            else:
                a = asarray(item)
            if ndmin > a.ndim:
                a = _expand_to(a, ndmin, trans1d)
            arrays.append(a)
        if not arrays:
            return zeros((0,))
        arrays = promote_args(*arrays)
        out = concatenate(arrays, axis=axis)
        if matrix == "r":
            return reshape(out, (1, -1)) if out.ndim == 1 else out
        if matrix == "c":
            return reshape(out, (-1, 1)) if out.ndim == 1 else out
        return out


def _expand_to(a, ndmin, trans1d):
    """``a`` with ``ndmin`` dimensions: its dims end at position ``trans1d`` (NumPy's rule)."""
    k = ndmin - a.ndim
    out = reshape(a, (1,) * k + a.shape)
    if trans1d != -1 and a.ndim > 0:
        t = trans1d % ndmin
        # Move the original axes so that the last original one lands at position t.
        order = list(range(k, ndmin))
        ones_ = list(range(k))
        start = t - (a.ndim - 1)
        perm = ones_[:start] + order + ones_[start:]
        out = transpose(out, tuple(perm))
    return out


r_ = _Concatenator(axis=0, ndmin=1, trans1d=-1, name="r_")
r_.__doc__ = """Row-wise concatenation of arrays, scalars and slices (NumPy's ``r_``).

>>> r_[1:4, 0, 7].tolist()
[1, 2, 3, 0, 7]
"""
c_ = _Concatenator(axis=-1, ndmin=2, trans1d=0, name="c_")
c_.__doc__ = """Column-wise concatenation: 1-D inputs become columns (NumPy's ``c_``).

>>> c_[[1, 2], [3, 4]].tolist()
[[1, 3], [2, 4]]
"""


def mask_indices(n: int, mask_func, k: int = 0, *, size=None):
    """The indices where ``mask_func(ones((n, n)), k)`` is non-zero (e.g. ``triu``).

    >>> import funcgrad.numpy as fnp
    >>> [x.tolist() for x in mask_indices(3, fnp.triu, 1)]
    [[0, 0, 1], [1, 2, 2]]
    """
    n = concrete_int(n, "mask_indices: n")
    return nonzero(mask_func(ones((n, n), int), k), size=size)


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """``function`` evaluated at every index of ``shape`` (indices of ``dtype``), as JAX's: the
    function is ``vmap``-ped over each axis, so it sees scalar indices (NumPy passes it whole index
    grids); it may return a pytree.

    >>> fromfunction(lambda i, j: i + j, (2, 3), dtype=int).tolist()
    [[0, 1, 2], [1, 2, 3]]
    >>> fromfunction(lambda i: (i + 1) * arange(3), (2,)).tolist()
    [[0.0, 1.0, 2.0], [0.0, 2.0, 4.0]]
    """
    shape = tuple(concrete_int(s, "fromfunction: shape") for s in shape)
    indices = [arange(n, dtype=dtype) for n in shape]

    def over(k, fixed):
        if k == len(shape):
            return function(*fixed, **kwargs)
        return _vmapped(lambda i: over(k + 1, [*fixed, i]), shape[k], indices[k])

    return over(0, [])


def _vmapped(f, n: int, x):
    """``vmap(f)(x)`` over ``x``'s leading axis, for a pytree result."""
    trees = []

    def flat(v):
        leaves, tree = tu.tree_flatten(f(v))
        trees.append(tree)
        return [asarray(leaf) for leaf in leaves]

    outs = vmap_flat(flat, n, [0], lambda: [0] * trees[0].num_leaves, [x])
    return tu.tree_unflatten(trees[0], outs)
