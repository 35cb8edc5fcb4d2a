"""Installs NumPy's operators and methods on ``Array`` and ``Tracer`` (see NOTE: [array methods]).

Layer: surface. Imports the funcgrad.numpy modules whose functions become methods, and the two
kernel classes it patches. ``funcgrad.numpy`` imports this module, so importing ``funcgrad.numpy``
(which ``funcgrad.api`` does) equips every array and every tracer.

Binary operators take NumPy's operand rules (NEP 50 promotion, broadcasting); an operand that is
not array-like (nor has ``__jax_array__``, whose value is then the operand) makes the operator
return ``NotImplemented``, so Python tries the reflected one and then raises its usual ``TypeError``.
"""

from __future__ import annotations

import numpy as np

from funcgrad import _transfer_guard, kernel
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.dtypes import python_scalar_types
from funcgrad.numpy import (
    complexes,
    contractions,
    index_update,
    indexing,
    lookup,
    manipulation,
    misc,
    numeric,
    rearrangement,
    reductions,
    sorting,
    transcendental,
    ufuncs,
)
from funcgrad.numpy._arraylike import ARRAYLIKE_ARGS, checked
from funcgrad.numpy._core import asarray, check_user_dtype
from funcgrad.primitives import bitcast as bc
from funcgrad.primitives import complex as cx

_ARRAY_LIKE = (Array, core.Tracer, np.ndarray, np.generic, *python_scalar_types)

_SYMBOLS = {
    "add": "+", "subtract": "-", "multiply": "*", "true_divide": "/", "floor_divide": "//",
    "remainder": "%", "divmod": "divmod()", "power": "** or pow()", "matmul": "@", "bitwise_and": "&",
    "bitwise_or": "|", "bitwise_xor": "^", "left_shift": "<<", "right_shift": ">>", "less": "<",
    "less_equal": "<=", "greater": ">", "greater_equal": ">=", "equal": "==", "not_equal": "!=",
}  # fmt: skip


def _refuse_sequence(name: str, left, right):
    """A list or tuple operand of an operator is a TypeError, as in JAX (NumPy would read it as an
    array; Python's ``+``/``*`` of sequences concatenate): JAX's words, and how to fix it."""
    sym, types = _SYMBOLS[name], f"{type(left).__name__!r} and {type(right).__name__!r}"
    ordering = name in ("less", "less_equal", "greater", "greater_equal")  # (Python's own words)
    what = (
        f"{sym!r} not supported between instances of {types}"
        if ordering
        else f"unsupported operand type(s) for {sym}: {types}"
    )
    raise TypeError(
        f"{what} (as in JAX, a list or tuple is not an array operand: convert it with "
        "jax.numpy.asarray(...) first)"
    )


_HOST_OPERANDS = (np.ndarray, np.generic, *python_scalar_types)
_guard = _transfer_guard.state
_THIS_FILE = (__file__,)


def _ask_guard(name: str, other, exponent: bool = False) -> None:
    """NOTE: [transfer guard]: a host operand (a Python or NumPy scalar, a NumPy array) of an
    operator the user applies to an Array outside any transformation is a host-to-device transfer
    in JAX (its operators are compiled programs taking the operand as an argument), so JAX's
    guards refuse ``x + 1`` and ``x == np_array``; an integer exponent is static there (``x ** 2``,
    ``x ** np.int32(2)``: ``integer_pow``, no transfer). Operators inside funcgrad's own functions are not
    asked (JAX's library functions are jitted: their constants are not transfers)."""
    static = exponent and name == "power" and (type(other) is int or isinstance(other, np.integer))
    if isinstance(other, _HOST_OPERANDS) and not static:
        _transfer_guard.eager_operand(other, _THIS_FILE)


def _binary(fn, reflected: bool = False):
    # An object with ``__jax_array__`` (flax's Variables) is an operand by its value, as in JAX. A
    # list or tuple (exactly: a NamedTuple may define the operator) is refused, as JAX refuses it.
    name = fn.__name__
    if reflected:

        def op(self, other):
            if not isinstance(other, _ARRAY_LIKE):
                if type(other) in (list, tuple):
                    _refuse_sequence(name, other, self)
                if not hasattr(other, "__jax_array__"):
                    return NotImplemented
                other = other.__jax_array__()
            elif _guard.host_to_device:
                _ask_guard(name, other)
            return fn(other, self)

    else:

        def op(self, other):
            if not isinstance(other, _ARRAY_LIKE):
                if type(other) in (list, tuple):
                    _refuse_sequence(name, self, other)
                if not hasattr(other, "__jax_array__"):
                    return NotImplemented
                other = other.__jax_array__()
            elif _guard.host_to_device:
                _ask_guard(name, other, exponent=True)
            return fn(self, other)

    op.__name__ = fn.__name__
    return op


def _astype(self, dtype, copy: bool = False, device=None):
    """``x.astype(dtype)``: convert (a strong dtype; NumPy's casting of out-of-range values), as
    ``numpy.astype`` does (a library's extended dtype too: NOTE: [extended dtypes])."""
    return numeric.astype(self, dtype, copy=copy, device=device)


def _reshape(self, *shape, order="C", out_sharding=None):
    """``x.reshape(shape)`` or ``x.reshape(*shape)`` (``out_sharding=``: the result's sharding,
    as ``reshape``'s)."""
    if len(shape) == 1 and not isinstance(shape[0], int | np.integer):
        shape = shape[0]
    return _shape_mod.reshape(self, shape, order=order, out_sharding=out_sharding)


_shape_mod = manipulation


def _transpose(self, *axes):
    """``x.transpose()``, ``x.transpose(axes)`` or ``x.transpose(*axes)``."""
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int | np.integer)):
        axes = axes[0]
    return _shape_mod.transpose(self, axes or None)


def _copy(self, order="C"):
    """A new Array with the same value (donating one to a jitted call leaves the other usable)."""
    return asarray(self, copy=True)


def _shallow_copy(self):
    """``copy.copy(x)``: ``x.copy()``, as JAX's (a tracer is not pickled: its ``__reduce__`` raises
    JAX's ConcretizationTypeError)."""
    return asarray(self, copy=True)


def _deepcopy(self, memo):
    """``copy.deepcopy(x)``: ``x.copy()``, as JAX's (traced values too: a staged copy, where the
    default deepcopy copied the tracer object itself, which then escaped its ``jit``)."""
    return asarray(self, copy=True)


def _round(self, decimals=0, out=None):
    return transcendental.round(self, decimals, out)


# JAX's ``x.clip``/``x.choose``/``x.compress`` call its checked functions (NOTE: [array-like
# arguments]): the public functions themselves.
_checked = {
    name: checked(name, fn)
    for name, fn in (("clip", ufuncs.clip), ("choose", misc.choose), ("compress", misc.compress))
}


def _clip(self, min=None, max=None):
    return _checked["clip"](self, min, max)


def _argpartition(self, kth, axis=-1):
    """``x.argpartition(kth, axis=-1)``: indices that partition ``x`` along ``axis`` so that the
    ``kth`` entry is in its sorted place (``funcgrad.numpy.argpartition``; they fully sort it).

    >>> import funcgrad.numpy as fnp
    >>> x = fnp.array([3, 4, 2, 1])
    >>> int(x[x.argpartition(1)][1])
    2
    """
    return sorting.argpartition(self, kth, axis=axis)


def _byteswap(self, inplace=False):
    """``x.byteswap()``: the same dtype with the bytes of each element reversed (little- and
    big-endian swap). ``inplace=True`` is refused: Arrays are immutable.

    >>> import funcgrad.numpy as fnp
    >>> fnp.arange(3, dtype="int32").byteswap()
    Array([       0, 16777216, 33554432], dtype=int32)
    >>> fnp.arange(3, dtype="int32").byteswap().byteswap()
    Array([0, 1, 2], dtype=int32)
    """
    if inplace:
        raise ValueError("byteswap(inplace=True): funcgrad Arrays are immutable; use x = x.byteswap()")
    x = asarray(self)
    if x.dtype.kind == "c":
        return cx.complex_p.bind(_byteswap(complexes.real(x)), _byteswap(complexes.imag(x)))
    if x.dtype.itemsize == 1:
        return asarray(x, copy=True)
    swapped = rearrangement.flip(bc.bitcast_convert_type(x, np.uint8), -1)
    return bc.bitcast_convert_type(swapped, x.dtype)


def _contains(self, value):
    """``value in x``: whether any element of the 1-D ``x`` equals the scalar ``value`` (JAX's
    checks and words).

    >>> import funcgrad.numpy as fnp
    >>> 1 in fnp.arange(4), 100 in fnp.arange(4)
    (True, False)
    """
    if not isinstance(
        value, int | float | complex | bool | np.number | np.bool_ | np.ndarray
    ) and not hasattr(value, "dtype"):
        raise TypeError(f"Array.__contains__: unsupported operand type {type(value).__name__!r}")
    if np.ndim(value) != 0:
        raise ValueError(f"Array.__contains__: query value must be a scalar; got shape {np.shape(value)}")
    if np.ndim(self) != 1:
        raise ValueError(
            f"Array.__contains__: search array must be one-dimensional; got shape {np.shape(self)}"
        )
    return bool(reductions.any(self == value))


def _choose(self, choices, out=None, mode="raise"):
    """``x.choose(choices)``: ``choices[x[i]][i]`` at each position (``funcgrad.numpy.choose``).

    >>> import funcgrad.numpy as fnp
    >>> fnp.array([0, 1, 0]).choose([fnp.array([1, 2, 3]), fnp.array([10, 20, 30])]).tolist()
    [1, 20, 3]
    """
    return _checked["choose"](self, choices, out=out, mode=mode)


def _compress(self, condition, axis=None, *, out=None, size=None, fill_value=0):
    """``x.compress(condition, axis=None)``: the slices of ``x`` where ``condition`` is true
    (``funcgrad.numpy.compress``; ``size=`` allows a traced condition under ``jit``/``vmap``).

    >>> import funcgrad.numpy as fnp
    >>> fnp.array([1, 2, 3]).compress(fnp.array([True, False, True])).tolist()
    [1, 3]
    """
    return _checked["compress"](condition, self, axis=axis, out=out, size=size, fill_value=fill_value)


def _view(self, dtype=None, type=None):
    """``x.view(dtype)``: the bits of ``x`` reinterpreted as ``dtype`` (a copy, as in JAX). When
    the item sizes differ, the last axis grows or shrinks by their ratio (NumPy's rule); a 0-d
    array keeps its item size. Bool and complex values are handled as in ``jax.Array.view``
    (bools as bytes; complex as interleaved real and imaginary parts).

    >>> import funcgrad.numpy as fnp
    >>> fnp.array([1.0], dtype="float32").view("int32")
    Array([1065353216], dtype=int32)
    >>> fnp.zeros((2, 3), dtype="int16").view("int8").shape
    (2, 6)
    """
    if type is not None:
        raise NotImplementedError("view(type=...) is not supported: funcgrad has one array type")
    x = asarray(self)
    if dtype is None:
        return x
    dtype = check_user_dtype(dtype, "view")
    bits_in, bits_out = _dt.bit_width(x.dtype), _dt.bit_width(dtype)  # (int4 is 4 bits, in 1 byte)
    if x.ndim == 0:
        if bits_in != bits_out:
            raise ValueError(
                f"view of a 0-d array changes dtype only between equal item sizes ({x.dtype.name} "
                f"is {bits_in} bits, {dtype.name} is {bits_out})"
            )
        return manipulation.squeeze(_view(manipulation.expand_dims(x, 0), dtype), 0)
    if (x.shape[-1] * bits_in) % bits_out:
        raise ValueError(
            f"view as {dtype.name}: the last axis of {x.dtype.name}{list(x.shape)} holds "
            f"{x.shape[-1] * bits_in} bits, not a multiple of the {bits_out} bits of {dtype.name}"
        )
    if x.dtype == dtype:
        return x
    if x.dtype == np.bool_:  # bools are bytes (bitcast does not take bool)
        return _view(_astype(x, np.uint8), dtype)
    if x.dtype.kind == "c":  # complex: the real and imaginary parts, interleaved
        parts = manipulation.stack([complexes.real(x), complexes.imag(x)], axis=-1)
        return _view(_shape_mod.reshape(parts, (*x.shape[:-1], 2 * x.shape[-1])), dtype)
    if dtype == np.bool_:
        return _astype(_view(x, np.uint8), np.bool_)
    if dtype.kind == "c":
        part = np.dtype(f"f{dtype.itemsize // 2}")
        flat = _view(x, part)
        return cx.complex_p.bind(
            indexing.getitem(flat, (..., slice(0, None, 2))), indexing.getitem(flat, (..., slice(1, None, 2)))
        )
    if bits_in < bits_out:
        k = bits_out // bits_in
        return bc.bitcast_convert_type(_shape_mod.reshape(x, (*x.shape[:-1], x.shape[-1] // k, k)), dtype)
    out = bc.bitcast_convert_type(x, dtype)
    if bits_in > bits_out:
        return _shape_mod.reshape(out, (*out.shape[:-2], out.shape[-2] * out.shape[-1]))
    return out


def _tobytes(self, order="C"):
    """``x.tobytes()``: the raw bytes of the value (``numpy.ndarray.tobytes``). Only a concrete
    Array has bytes: under a transformation this raises ``ConcretizationTypeError``.

    >>> import funcgrad.numpy as fnp
    >>> fnp.array([1, 2], dtype="uint8").tobytes()
    b'\\x01\\x02'
    """
    if isinstance(self, core.Tracer):
        raise core.ConcretizationTypeError(self._method_message("tobytes"))
    return np.asarray(self).tobytes(order=order)


def _clone(self):
    """``x.clone()``: a new Array with the same value (JAX's name for ``x.copy()``).

    >>> import funcgrad.numpy as fnp
    >>> fnp.arange(3.0).clone()
    Array([0., 1., 2.], dtype=float64)
    """
    return asarray(self, copy=True)


def _setitem(self, index, value):
    raise TypeError(
        "funcgrad Arrays are immutable: item assignment is not supported. Use the functional update "
        "x = x.at[index].set(value) instead (it is differentiable and works under jit)."
    )


def _sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None, promote_integers=True):
    """``x.sum(...)``: JAX's method, which takes ``initial`` and does not pass it on (jax 0.10.2's
    ``x.sum(initial=1.0)`` is ``x.sum()``; the function ``sum(x, initial=1.0)`` adds it).

    >>> from funcgrad.numpy import arange
    >>> float(arange(3.0).sum(initial=1.0)), float(reductions.sum(arange(3.0), initial=1.0))
    (3.0, 4.0)
    """
    del initial
    kw = {"dtype": dtype, "out": out, "keepdims": keepdims, "where": where}
    return reductions.sum(a, axis, promote_integers=promote_integers, **kw)


_sum.__name__ = "sum"  # (the function of its name but for initial=: its arguments checked as sum's, below)


def _operator_round(self, ndigits=None):
    """Python's ``round(x, ndigits)``: ``numpy.round``; without ``ndigits``, of the default integer
    dtype, as ``round`` of a float is an int (JAX's ``_operator_round``)."""
    out = transcendental.round(self, ndigits or 0)
    return out if ndigits is not None else _astype(out, int)


_METHODS = {
    "__add__": _binary(ufuncs.add),
    "__radd__": _binary(ufuncs.add, True),
    "__sub__": _binary(ufuncs.subtract),
    "__rsub__": _binary(ufuncs.subtract, True),
    "__mul__": _binary(ufuncs.multiply),
    "__rmul__": _binary(ufuncs.multiply, True),
    "__truediv__": _binary(ufuncs.true_divide),
    "__rtruediv__": _binary(ufuncs.true_divide, True),
    "__floordiv__": _binary(ufuncs.floor_divide),
    "__rfloordiv__": _binary(ufuncs.floor_divide, True),
    "__mod__": _binary(ufuncs.remainder),
    "__rmod__": _binary(ufuncs.remainder, True),
    "__divmod__": _binary(ufuncs.divmod),
    "__rdivmod__": _binary(ufuncs.divmod, True),
    "__pow__": _binary(ufuncs.power),
    "__rpow__": _binary(ufuncs.power, True),
    "__matmul__": _binary(contractions.matmul),
    "__rmatmul__": _binary(contractions.matmul, True),
    "__and__": _binary(ufuncs.bitwise_and),
    "__rand__": _binary(ufuncs.bitwise_and, True),
    "__or__": _binary(ufuncs.bitwise_or),
    "__ror__": _binary(ufuncs.bitwise_or, True),
    "__xor__": _binary(ufuncs.bitwise_xor),
    "__rxor__": _binary(ufuncs.bitwise_xor, True),
    "__lshift__": _binary(ufuncs.left_shift),
    "__rlshift__": _binary(ufuncs.left_shift, True),
    "__rshift__": _binary(ufuncs.right_shift),
    "__rrshift__": _binary(ufuncs.right_shift, True),
    "__lt__": _binary(ufuncs.less),
    "__le__": _binary(ufuncs.less_equal),
    "__gt__": _binary(ufuncs.greater),
    "__ge__": _binary(ufuncs.greater_equal),
    "__eq__": _binary(ufuncs.equal),
    "__ne__": _binary(ufuncs.not_equal),
    "__neg__": ufuncs.negative,
    "__pos__": ufuncs.positive,
    "__abs__": ufuncs.absolute,
    "__invert__": ufuncs.bitwise_not,
    "__round__": _operator_round,
    "__getitem__": indexing.getitem,
    "__setitem__": _setitem,
    "sum": _sum,
    "prod": reductions.prod,
    "mean": reductions.mean,
    "var": reductions.var,
    "std": reductions.std,
    "max": reductions.max,
    "min": reductions.min,
    "ptp": reductions.ptp,
    "argmax": reductions.argmax,
    "argmin": reductions.argmin,
    "any": reductions.any,
    "all": reductions.all,
    "cumsum": sorting.cumsum,
    "cumprod": sorting.cumprod,
    "sort": sorting.sort,
    "argsort": sorting.argsort,
    "searchsorted": sorting.searchsorted,
    "clip": _clip,
    "round": _round,
    "reshape": _reshape,
    "astype": _astype,
    "transpose": _transpose,
    "ravel": manipulation.ravel,
    "flatten": manipulation.ravel,
    "squeeze": manipulation.squeeze,
    "swapaxes": manipulation.swapaxes,
    "repeat": rearrangement.repeat,
    "dot": contractions.dot,
    "trace": contractions.trace,
    "diagonal": lookup.diagonal,
    "nonzero": lookup.nonzero,
    "take": lookup.take,
    "conj": complexes.conjugate,
    "conjugate": complexes.conjugate,
    "copy": _copy,
    "__copy__": _shallow_copy,
    "__deepcopy__": _deepcopy,
    "clone": _clone,
    "argpartition": _argpartition,
    "byteswap": _byteswap,
    "__contains__": _contains,
    "choose": _choose,
    "compress": _compress,
    "view": _view,
    "tobytes": _tobytes,
}

_PROPERTIES = {
    "T": lambda self: _shape_mod.transpose(self),
    "mT": manipulation.matrix_transpose,
    "real": complexes.real,
    "imag": complexes.imag,
    "at": index_update.IndexUpdateHelper,
    "itemsize": lambda self: self.dtype.itemsize,
    "nbytes": lambda self: int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize,
}


# A method that is the function of its name refuses a list where JAX's does (x.take([0, 1]),
# x.dot([1, 2]), x.sum(where=[...]): JAX's methods call its functions; NOTE: [array-like
# arguments]), when the function checks more than ``self``.
for _name, _fn in list(_METHODS.items()):
    _calls = ARRAYLIKE_ARGS.get(_name)
    if isinstance(_calls, tuple) and getattr(_fn, "__name__", None) == _name:
        if sum(isinstance(p, str) for call in _calls for p in call[1:]) > 1:
            _METHODS[_name] = checked(_name, _fn)

# Operators, methods and properties of ``Array`` and of every ``Tracer`` (NOTE: [array methods]).
kernel.register(array_methods=_METHODS, array_properties=_PROPERTIES)
