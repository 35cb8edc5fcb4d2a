"""``funcgrad.scipy.ndimage``: ``map_coordinates`` (``jax.scipy.ndimage``'s one function).

Layer: surface. Imports funcgrad.numpy.

>>> import funcgrad.numpy as fnp
>>> float(map_coordinates(fnp.array([0.0, 10.0, 20.0]), [fnp.array(0.5)], order=1))
5.0
"""

from __future__ import annotations

import functools
import itertools
import operator

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.numpy._core import concrete_int

__all__ = ["map_coordinates"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


def _mirror(index, size):
    s = size - 1
    return fnp.abs((index + s) % (2 * s) - s) if s > 0 else fnp.zeros_like(index)


def _reflect(index, size):
    return fnp.floor_divide(_mirror(2 * index + 1, 2 * size + 1) - 1, 2)


_INDEX_FIXERS = {
    "constant": lambda index, size: index,
    "nearest": lambda index, size: fnp.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _round_half_away_from_zero(a):
    return (
        a
        if fnp.issubdtype(a.dtype, fnp.integer)
        else fnp.where(a >= 0, fnp.floor(a + 0.5), fnp.ceil(a - 0.5))
    )


def _nearest(coordinate):
    return [(_round_half_away_from_zero(coordinate).astype(np.int32), 1.0)]


def _linear(coordinate):
    lower = fnp.floor(coordinate)
    upper_weight = coordinate - lower
    index = lower.astype(np.int32)
    return [(index, 1.0 - upper_weight), (index + 1, upper_weight)]


def map_coordinates(input, coordinates, order: int, mode: str = "constant", cval=0.0):
    """The values of ``input`` at fractional ``coordinates`` (one array per dimension of ``input``)
    by nearest-neighbour (``order=0``) or linear (``order=1``) interpolation; points outside are
    ``cval`` (``mode="constant"``) or mapped back inside by ``"nearest"``, ``"wrap"``, ``"mirror"``
    or ``"reflect"``. As in JAX, ``"constant"`` and ``"wrap"`` are SciPy's ``"grid-constant"`` and
    ``"grid-wrap"``: a point between the last sample and the edge interpolates towards ``cval``
    (SciPy's ``"constant"`` gives ``cval`` there). Differentiable in ``input`` and, with
    ``order=1``, in the coordinates.

    >>> import funcgrad.numpy as fnp
    >>> image = fnp.arange(12.0).reshape(3, 4)
    >>> map_coordinates(image, [fnp.array([0.5, 2.0]), fnp.array([0.5, 3.5])], order=1).tolist()
    [2.5, 5.5]
    """
    input_arr = fnp.asarray(input)
    coordinate_arrs = [fnp.asarray(c) for c in coordinates]
    if len(coordinate_arrs) != input_arr.ndim:
        raise ValueError(
            f"map_coordinates: coordinates must be a sequence of length input.ndim, but "
            f"{len(coordinate_arrs)} != {input_arr.ndim}"
        )
    fixer = _INDEX_FIXERS.get(mode)
    if fixer is None:
        raise NotImplementedError(  # (JAX's type and words)
            f"jax.scipy.ndimage.map_coordinates does not yet support mode {mode}. Currently supported "
            f"modes are {set(_INDEX_FIXERS)}."
        )
    order = concrete_int(order, "map_coordinates: order")
    if order not in (0, 1):
        raise NotImplementedError(
            f"jax.scipy.ndimage.map_coordinates currently requires order<=1 (got order={order})"
        )
    interp = _nearest if order == 0 else _linear
    cval = fnp.asarray(cval, input_arr.dtype)
    per_dim = []
    for coordinate, size in zip(coordinate_arrs, input_arr.shape):
        nodes = []
        for index, weight in interp(coordinate):
            valid = ((index >= 0) & (index < size)) if mode == "constant" else None
            nodes.append((fixer(index, size), valid, weight))
        per_dim.append(nodes)
    outputs = []
    for items in itertools.product(*per_dim):
        indices, validities, weights = zip(*items)
        contribution = input_arr[tuple(indices)]
        if mode == "constant":
            contribution = fnp.where(functools.reduce(operator.and_, validities), contribution, cval)
        outputs.append(functools.reduce(operator.mul, weights) * contribution)
    result = functools.reduce(operator.add, outputs)
    if fnp.issubdtype(input_arr.dtype, fnp.integer):
        result = _round_half_away_from_zero(result)
    return result.astype(input_arr.dtype)
