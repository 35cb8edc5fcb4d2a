"""The arithmetic and logical functions that are ``ufunc`` objects in ``jax.numpy`` (``add``,
``multiply``, ``maximum``, ``logical_and``, ... 14 of them): ``fnp.add(x, y)`` as before, plus
``fnp.add.reduce``, ``.accumulate``, ``.at``, ``.outer`` and ``.reduceat``.

Layer: surface. Imports the funcgrad.numpy modules that hold the functions and their fast methods
(``ufuncs``, ``transcendental``, ``reductions``, ``sorting``) and ``ufunc_objects``.

The functions themselves stay plain functions in their modules (the library calls those); the
public names are these objects, whose methods use the known reductions where one exists
(``add.reduce`` is ``sum``, ``maximum.accumulate`` a running maximum, ``add.at`` a scatter-add)
and the generic loop of ``ufunc`` otherwise.

>>> import funcgrad.numpy as fnp
>>> fnp.add.reduce(np.arange(5)).tolist(), fnp.add.outer(np.arange(2), np.arange(3)).tolist()
(10, [[0, 1, 2], [1, 2, 3]])
>>> fnp.add.at(np.zeros(3), np.array([0, 0, 2]), 1.0, inplace=False).tolist()
[2.0, 0.0, 1.0]
"""

from __future__ import annotations

import inspect

import numpy as np

from funcgrad.kernel.array import Array
from funcgrad.numpy import complexes, manipulation, reductions, sorting, transcendental, ufuncs
from funcgrad.numpy._core import asarray, constant_like, normalize_axis, promote_args_inexact, select
from funcgrad.numpy.ufunc_objects import ufunc
from funcgrad.primitives import elementwise as ew

__all__ = [
    "add",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "logaddexp",
    "logaddexp2",
    "logical_and",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "subtract",
]


def _reduction(fn, *, has_initial: bool = True, has_dtype: bool = True, combine=None):
    """``combine`` (a binary function) folds ``initial`` into the result of a reduction ``fn`` that
    takes no ``initial=`` (all/any: ``all(a) & initial``, as JAX's ufunc reduce)."""

    def reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
        if isinstance(axis, np.ndarray | Array) and np.ndim(axis):  # (JAX's ValueError: axis is static)
            raise ValueError(
                f"Non-hashable static arguments are not supported: reduce's axis is an array "
                f"{np.asarray(axis)}; pass an int or a tuple of ints (for segments use reduceat)"
            )
        kwargs = {"keepdims": keepdims, "where": where}
        if has_dtype:
            kwargs["dtype"] = dtype
        elif dtype is not None:
            a = asarray(a).astype(dtype)
        if initial is not None and not has_initial:
            return combine(fn(a, axis=axis, **kwargs), initial)
        if initial is not None:
            kwargs["initial"] = initial
        return fn(a, axis=axis, **kwargs)

    return reduce


def _scatter(method: str):
    def at(a, indices, b):
        if b is None:
            raise ValueError(f"{method}.at: a binary ufunc needs b")
        return getattr(asarray(a).at[indices], method)(b)

    return at


def _make(func, *, identity=None, reduce=None, accumulate=None, at=None, nin=2) -> ufunc:
    u = ufunc(func, nin, 1, name=func.__name__, identity=identity, call=func, reduce=reduce,
              accumulate=accumulate, at=at)  # fmt: skip
    u.__doc__ = func.__doc__
    u.__signature__ = inspect.signature(func)  # inspect.signature(fnp.add) as for the function
    u.__wrapped__ = func
    return u


add = _make(
    ufuncs.add,
    identity=0,
    reduce=_reduction(reductions.sum),
    accumulate=lambda a, axis=0, dtype=None: sorting.cumsum(a, axis=axis, dtype=dtype),
    at=_scatter("add"),
)
multiply = _make(
    ufuncs.multiply,
    identity=1,
    reduce=_reduction(reductions.prod),
    accumulate=lambda a, axis=0, dtype=None: sorting.cumprod(a, axis=axis, dtype=dtype),
    at=_scatter("multiply"),
)
maximum = _make(ufuncs.maximum, reduce=_reduction(reductions.max, has_dtype=False), at=_scatter("max"))
minimum = _make(ufuncs.minimum, reduce=_reduction(reductions.min, has_dtype=False), at=_scatter("min"))
logical_and = _make(
    ufuncs.logical_and,
    identity=True,
    reduce=_reduction(reductions.all, has_initial=False, has_dtype=False, combine=ufuncs.logical_and),
)
logical_or = _make(
    ufuncs.logical_or,
    identity=False,
    reduce=_reduction(reductions.any, has_initial=False, has_dtype=False, combine=ufuncs.logical_or),
)
logical_xor = _make(ufuncs.logical_xor, identity=False)
bitwise_and = _make(ufuncs.bitwise_and, identity=-1)
bitwise_or = _make(ufuncs.bitwise_or, identity=0)
bitwise_xor = _make(ufuncs.bitwise_xor, identity=0)


def _logsumexp(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
    """JAX's ``logaddexp.reduce`` (its ``reductions._logsumexp``): the largest real part (finite,
    else 0; where= masked, from -inf) subtracted, ``exp``, summed, ``log``, added back; ``initial``
    joins by ``logaddexp`` (``dtype`` is unused, as JAX's). Folded by logaddexp one element at a
    time, float32 results differed from jax's in the last place, and a complex -inf was NaN."""
    (a,) = promote_args_inexact(asarray(a))
    axes = (
        tuple(range(a.ndim))
        if axis is None
        else tuple(normalize_axis(ax, a.ndim) for ax in (axis if isinstance(axis, tuple | list) else (axis,)))
    )
    amax = reductions.max(complexes.real(a), axis=axes, keepdims=keepdims, where=where, initial=-np.inf)
    amax = ew.stop_gradient_p.bind(select(transcendental.isfinite(amax), amax, constant_like(0, amax)))
    shifted = amax if keepdims else manipulation.expand_dims(amax, axes)
    exp_a = transcendental.exp(a - shifted.astype(a.dtype))
    sumexp = reductions.sum(exp_a, axis=axes, keepdims=keepdims, where=where)
    result = transcendental.log(sumexp) + amax.astype(sumexp.dtype)
    return result if initial is None else transcendental.logaddexp(initial, result)


def _logsumexp2(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
    """JAX's ``logaddexp2.reduce``: ``_logsumexp`` of ``a * ln 2``, divided by ``ln 2``."""
    ln2 = float(np.log(2))
    initial = None if initial is None else initial * ln2
    return _logsumexp(asarray(a) * ln2, axis, dtype, keepdims, initial, where) / ln2


logaddexp = _make(transcendental.logaddexp, identity=-np.inf, reduce=_logsumexp)
logaddexp2 = _make(transcendental.logaddexp2, identity=-np.inf, reduce=_logsumexp2)
subtract = _make(ufuncs.subtract, at=lambda a, indices, b: asarray(a).at[indices].add(-asarray(b)))
negative = _make(ufuncs.negative, nin=1)
