"""``ufunc`` objects (``jax.numpy.ufunc``) and ``frompyfunc``: a function of ``nin`` scalars with
NumPy's ufunc methods ``reduce``, ``accumulate``, ``at``, ``reduceat`` and ``outer``.

Layer: surface. Imports the other funcgrad.numpy modules and ``funcgrad._control_flow``
(``scan``: the generic ``reduce``/``accumulate``/``at`` are loops of the scalar function, compiled as
one loop body under ``jit``).

The function is written for scalars and broadcast with ``vectorize``; the ``call``/``reduce``/
``accumulate``/``at``/``reduceat`` arguments replace a method with a faster one (a vectorized
call, a known reduction). funcgrad's arrays are immutable: ``at`` returns the updated array and
needs ``inplace=False``; ``out=`` is refused. ``funcgrad.numpy.add`` and the 13 other functions
that are ufunc objects in ``jax.numpy`` are ufunc objects here too (``ufunc_instances``).

>>> import funcgrad.numpy as fnp
>>> hypot = frompyfunc(lambda a, b: fnp.sqrt(a * a + b * b), 2, 1, identity=0.0)
>>> hypot.reduce(np.array([3.0, 4.0, 12.0])).tolist()
13.0
>>> hypot.outer(np.array([3.0, 5.0]), np.array([4.0, 12.0])).tolist()
[[5.0, 12.36931687685298], [6.4031242374328485, 13.0]]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from funcgrad._control_flow import fori_loop, scan
from funcgrad.kernel.array import Array
from funcgrad.numpy._core import array_of_stand_in, asarray, check_arraylike, convert, normalize_axis
from funcgrad.numpy.creation import full
from funcgrad.numpy.indexing import getitem
from funcgrad.numpy.lookup import take
from funcgrad.numpy.lookup import where as _where
from funcgrad.numpy.manipulation import (
    broadcast_to,
    concatenate,
    expand_dims,
    moveaxis,
    ravel,
    reshape,
)
from funcgrad.numpy.vectorization import vectorize

__all__ = ["frompyfunc", "ufunc"]


_ACCUMULATE_CHECKED_AS = {"add": "cumsum", "multiply": "cumprod"}
_PLAIN = frozenset({Array, np.ndarray, int, float, complex, bool})  # (no __jax_array__ to look for)


class ufunc:
    """A function of ``nin`` scalars returning ``nout`` values, with NumPy's ufunc methods.

    ``ufunc(func, nin, nout, *, name=None, nargs=None, identity=None, call=None, reduce=None,
    accumulate=None, at=None, reduceat=None)``: ``func`` takes and returns scalars (it is
    vectorized); the optional callables implement the corresponding methods directly.
    """

    def __init__(self, func: Callable, /, nin: int, nout: int, *, name: str | None = None, nargs=None,
                 identity=None, call=None, reduce=None, accumulate=None, at=None, reduceat=None):  # fmt: skip
        if not callable(func):
            raise TypeError(f"ufunc: func must be callable, got {type(func).__name__}")
        if int(nin) < 1 or int(nout) < 1:
            raise ValueError(f"ufunc: nin and nout must be positive, got nin={nin}, nout={nout}")
        # The defining fields are read-only (JAX's: setting one is an AttributeError); equality and
        # the hash compare them, so two frompyfunc of one function are equal.
        for attr, value in (("nin", int(nin)), ("nout", int(nout)), ("identity", identity), ("_func", func),
                            ("nargs", int(nargs) if nargs is not None else int(nin))):  # fmt: skip
            object.__setattr__(self, attr, value)
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self._call = call or vectorize(func)
        self._reduce, self._accumulate, self._at, self._reduceat = reduce, accumulate, at, reduceat

    _READ_ONLY = frozenset({"nin", "nout", "nargs", "identity", "_func"})

    def __setattr__(self, name, value):
        if name in self._READ_ONLY:
            raise AttributeError(f"ufunc attribute {name!r} is read-only")
        object.__setattr__(self, name, value)

    def _key(self):
        return (self._func, self.nin, self.nout, self.nargs, self.identity)

    def __eq__(self, other):
        return isinstance(other, ufunc) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"<funcgrad.numpy.ufunc '{self.__name__}'>"

    def __call__(self, *args, out=None, where=None):
        check_arraylike(self.__name__, *args)  # (as JAX's: add([1, 2], x) raises TypeError)
        if out is not None:
            raise TypeError(f"{self.__name__}: out= is not supported (funcgrad arrays are immutable)")
        if where is not None:
            raise TypeError(f"{self.__name__}: where= needs out=, which funcgrad does not support")
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__} takes {self.nin} arguments, got {len(args)}")
        if not all(type(a) in _PLAIN for a in args):  # (objects with __jax_array__: their arrays)
            args = tuple(array_of_stand_in(a) for a in args)
        return self._call(*args)

    def _binary(self, method: str) -> None:
        if self.nin != 2 or self.nout != 1:
            raise ValueError(f"{self.__name__}.{method} needs a binary ufunc (nin=2, nout=1)")

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=None):
        """Fold ``a`` along ``axis`` (None: all of it) with the function; ``initial`` (or the
        identity) starts the fold and is the result of an empty one; ``where`` masks elements.

        >>> import funcgrad.numpy as fnp
        >>> frompyfunc(fnp.maximum, 2, 1).reduce(np.array([[1, 5], [7, 2]]), axis=1).tolist()
        [5, 7]
        """
        name = f"{self.__name__}.reduce"
        check_arraylike(name, a)  # (JAX's checks, in its order)
        if initial is not None:
            check_arraylike(name, initial)
        if where is not None:
            check_arraylike(name, where)
        self._binary("reduce")
        if out is not None:
            raise TypeError(f"{self.__name__}.reduce: out= is not supported")
        if self._reduce is not None:
            return self._reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)
        a = asarray(a) if dtype is None else convert(asarray(a), np.dtype(dtype))
        if isinstance(axis, tuple):
            raise ValueError(
                f"{self.__name__}.reduce: a tuple of axes is supported only by reorderable ufuncs"
            )
        shape, whole = a.shape, axis is None
        mask = None if where is None else broadcast_to(asarray(where), shape)  # (before any ravel)
        if whole:
            a, axis = ravel(a), 0
            mask = None if mask is None else ravel(mask)
        axis = normalize_axis(axis, a.ndim)
        moved = moveaxis(a, axis, 0)
        mask = None if mask is None else moveaxis(mask, axis, 0)
        start = initial if initial is not None else self.identity
        if start is None and (mask is not None or moved.shape[0] == 0):
            raise ValueError(
                f"{self.__name__}.reduce: an empty or masked reduction needs initial= "
                "(the ufunc has no identity)"
            )
        if start is None:
            carry, rest, rest_mask = getitem(moved, 0), getitem(moved, slice(1, None)), None
        else:
            carry = full(moved.shape[1:], start, dtype=moved.dtype)
            rest, rest_mask = moved, mask

        def step(c, xs):
            x, m = xs
            new = convert(asarray(self._call(c, x)), moved.dtype)
            return (new if m is None else _where(m, new, c)), None

        result, _ = scan(step, carry, (rest, rest_mask)) if rest.shape[0] else (carry, None)
        if keepdims:
            result = reshape(result, tuple(1 for _ in shape)) if whole else expand_dims(result, axis)
        return result

    def accumulate(self, a, axis=0, dtype=None, out=None):
        """The running fold of ``a`` along ``axis``: ``[a0, f(a0, a1), f(f(a0, a1), a2), ...]``.

        >>> frompyfunc(lambda x, y: x * y + 1, 2, 1).accumulate(np.array([1.0, 2.0, 3.0])).tolist()
        [1.0, 3.0, 10.0]
        """
        # (JAX's words: its add.accumulate is cumsum, which checks as "cumsum")
        fixed = _ACCUMULATE_CHECKED_AS.get(self.__name__) if self._accumulate is not None else None
        check_arraylike(fixed or f"{self.__name__}.accumulate", a)
        self._binary("accumulate")
        if out is not None:
            raise TypeError(f"{self.__name__}.accumulate: out= is not supported")
        if self._accumulate is not None:
            return self._accumulate(a, axis=axis, dtype=dtype)
        a = asarray(a) if dtype is None else convert(asarray(a), np.dtype(dtype))
        axis = normalize_axis(axis, a.ndim)
        moved = moveaxis(a, axis, 0)
        if moved.shape[0] == 0:
            return a

        def step(c, x):
            new = convert(asarray(self._call(c, x)), moved.dtype)
            return new, new

        first = getitem(moved, 0)
        _, rest = scan(step, first, getitem(moved, slice(1, None)))
        return moveaxis(concatenate([expand_dims(first, 0), rest], axis=0), 0, axis)

    def at(self, a, indices, b=None, /, *, inplace=True):
        """``a`` with the function applied at ``indices`` (repeated indices apply repeatedly, in
        order, as NumPy's unbuffered ``at``); ``b`` is the second operand of a binary ufunc.
        Returns a new array: pass ``inplace=False``.

        >>> add = frompyfunc(lambda x, y: x + y, 2, 1)
        >>> add.at(np.zeros(3), np.array([0, 0, 2]), 1.0, inplace=False).tolist()
        [2.0, 0.0, 1.0]
        """
        if inplace:
            raise ValueError(f"{self.__name__}.at: funcgrad arrays are immutable; pass inplace=False")
        if self._at is not None:
            return self._at(a, indices, b)
        if isinstance(indices, tuple):
            raise ValueError(f"{self.__name__}.at: indices select along the first axis (one integer array)")
        a = asarray(a)
        idx = ravel(asarray(indices))
        if self.nin == 2 and b is not None:
            vals = broadcast_to(asarray(b), (idx.shape[0], *a.shape[1:]))
        elif self.nin == 1 and b is None:
            vals = None
        else:
            raise ValueError(f"{self.__name__}.at: a unary ufunc takes no b, a binary one needs b")
        if idx.shape[0] == 0:
            return a

        def step(arr, xs):
            i, v = xs
            old = getitem(arr, i)
            new = self._call(old) if v is None else self._call(old, v)
            return arr.at[i].set(convert(asarray(new), arr.dtype)), None

        result, _ = scan(step, a, (idx, vals))
        return result

    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        """Reductions of ``a`` over the slices ``indices[i]:indices[i + 1]`` along ``axis`` (the
        last one to the end; ``a[indices[i]]`` where ``indices[i] >= indices[i + 1]``). The
        indices are concrete (they fix the slices).

        >>> import funcgrad.numpy as fnp
        >>> frompyfunc(fnp.maximum, 2, 1).reduceat(np.array([1, 5, 2, 8, 3]), np.array([0, 2, 4])).tolist()
        [5, 8, 3]
        """
        check_arraylike(f"{self.__name__}.reduceat", a, indices)
        self._binary("reduceat")
        if out is not None:
            raise TypeError(f"{self.__name__}.reduceat: out= is not supported")
        if self._reduceat is not None:
            return self._reduceat(a, indices, axis=axis, dtype=dtype)
        a = asarray(a) if dtype is None else convert(asarray(a), np.dtype(dtype))
        indices = asarray(indices)
        if a.ndim == 0:
            raise ValueError(f"reduceat: a must have 1 or more dimension, got {a.shape=}")
        if indices.ndim != 1:
            raise ValueError(f"reduceat: indices must be one-dimensional, got {indices.shape=}")
        axis = normalize_axis(axis, a.ndim)
        n = a.shape[axis]
        # JAX's method, so the indices may be traced: start from a[indices], then one pass over the
        # axis folds each element i into the segments with start < i < end.
        out = take(a, indices, axis=axis)
        shape = [1] * out.ndim
        shape[axis] = indices.shape[0] + 1
        bounds = reshape(concatenate([indices, asarray([n], indices.dtype)]), tuple(shape))
        start = getitem(bounds, (slice(None),) * axis + (slice(0, indices.shape[0]),))
        end = getitem(bounds, (slice(None),) * axis + (slice(1, None),))

        def body(i, acc):
            row = take(a, expand_dims(i, (0,)), axis=axis)
            return _where((i > start) & (i < end), convert(asarray(self._call(acc, row)), acc.dtype), acc)

        return fori_loop(0, n, body, out)

    def outer(self, A, B, /, **kwargs):
        """The function on every pair: result shape ``A.shape + B.shape``.

        >>> frompyfunc(lambda x, y: x - y, 2, 1).outer(np.array([1, 2]), np.array([10, 20, 30])).tolist()
        [[-9, -19, -29], [-8, -18, -28]]
        """
        check_arraylike(f"{self.__name__}.outer", A, B)
        self._binary("outer")
        A, B = asarray(A), asarray(B)
        # (both operands at the full rank: no implicit rank promotion, which 'raise' refuses)
        return self(reshape(A, A.shape + (1,) * B.ndim), reshape(B, (1,) * A.ndim + B.shape), **kwargs)


def frompyfunc(func: Callable, /, nin: int, nout: int, *, identity=None) -> ufunc:
    """A ``ufunc`` from a Python function of scalars (NumPy's ``frompyfunc``; the results keep
    funcgrad dtypes rather than becoming object arrays).

    >>> frompyfunc(lambda x, y: x * 10 + y, 2, 1)(np.array([1, 2]), 3).tolist()
    [13, 23]
    """
    return ufunc(func, nin, nout, identity=identity)
