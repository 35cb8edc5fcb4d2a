"""The values a primitive takes: concrete ones and ``Tracer``, and the abstract value of each.

Layer: kernel (bottom). Imports numpy and the kernel modules ``array``, ``dtypes``, ``hooks``,
``ir`` and ``errors``; ``kernel.core`` (the traces) builds on it and re-exports its names.

A primitive's operand is a concrete value (an ``Array``, a NumPy array or a Python scalar) or a
``Tracer``, the value of a transformation in progress. ``get_aval`` gives either's abstract value;
a tracer's arithmetic and methods are ``Array``'s, installed by the surface.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array, check_integer_conversion, check_scalar_conversion
from funcgrad.kernel.dtypes import python_scalar_types
from funcgrad.kernel.errors import (
    ConcretizationTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
)
from funcgrad.kernel.extended import EArray
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import _DEVICE, ShapedArray, abstract_token, memory_space_of_kind

# ----------------------------------------------------------------------------------------------
# Abstract values of concrete inputs


def _python_scalar_aval(x) -> ShapedArray:
    # (a Python bool is strong, as in JAX: only int, float and complex are weak)
    return ShapedArray((), _dt.python_scalar_dtype(x), weak_type=type(x) is not bool)


def get_aval(x) -> ShapedArray:
    """The abstract value of any array-like accepted as a primitive input."""
    t = type(x)
    if t is Array:
        aval = x._aval
        if aval is None:
            v = x._value
            if v is None:
                v = x._buffer.aval
            b = x._buffer
            sharding = None
            if b is not None and hooks.aval_sharding is not None:
                sharding = hooks.aval_sharding(b, len(v.shape))  # NOTE: [sharding in types]
            space = _DEVICE if b is None else memory_space_of_kind(getattr(b._sharding, "_fg_kind", None))
            aval = x._aval = ShapedArray(v.shape, v.dtype, x.weak_type, sharding, space)
        return aval
    if t is np.ndarray:
        # (NOTE: [x64 mode]: a 64-bit NumPy value enters as its 32-bit counterpart in x32 mode)
        return ShapedArray(x.shape, x.dtype if _dt.x64_enabled else _dt.canonical(x.dtype))
    if isinstance(x, Tracer):
        return x.aval
    if isinstance(x, np.ndarray | np.generic):
        return ShapedArray(x.shape, _dt.canonical(x.dtype))
    if isinstance(x, Array):
        return ShapedArray(x.shape, x.dtype, x.weak_type)
    if isinstance(x, python_scalar_types):
        return _python_scalar_aval(x)
    if t is Token:
        return abstract_token
    aval = getattr(x, "aval", None)  # an array of an extended dtype (typed keys: ShapedArray(key<fry>[]))
    if isinstance(aval, ShapedArray) and not isinstance(aval.dtype, np.dtype):
        return aval
    if hasattr(x, "__array__") or isinstance(x, list | tuple):
        arr = np.asarray(x)
        if arr.dtype == object:
            raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid array.")
        return ShapedArray(arr.shape, _dt.canonical(arr.dtype))
    raise TypeError(
        f"Value {x!r} of type {type(x).__name__} is not a valid funcgrad array type. "
        "Pass a funcgrad Array, a NumPy array or a Python scalar."
    )


class Token:
    """A concrete token (JAX's ``core.Token``; ``lax.create_token()``): it wraps the ``bool[0]``
    buffer a token travels as between programs (NOTE: [tokens]); ``block_until_ready`` waits for
    the computation that made it.

    >>> tok = Token(np.zeros(0, np.bool_))
    >>> get_aval(tok), tok.block_until_ready()
    (AbstractToken(), None)
    """

    __slots__ = ("_buf",)

    def __init__(self, buf):
        self._buf = _TokenBuffer(buf)

    def block_until_ready(self) -> None:
        self._buf.block_until_ready()


class _TokenBuffer:
    """What a ``Token`` wraps (its ``_buf``): the ``bool[0]`` buffer, which has no value to read
    (JAX's error), only a computation to wait for."""

    __slots__ = ("_buffer",)

    def __init__(self, buffer):
        self._buffer = buffer

    @property
    def _value(self):
        raise RuntimeError("Cannot convert a token-shape buffer to a numpy array.")

    def block_until_ready(self):
        wait = getattr(self._buffer, "block_until_ready", None)
        if wait is not None:
            wait()
        return self


def dtype_of(x) -> np.dtype:
    """``get_aval(x).dtype``, without making an aval for an array that has its dtype at hand."""
    t = type(x)
    if t is np.ndarray or t is Array:
        return x.dtype
    return get_aval(x).dtype


def is_array_like(x) -> bool:
    t = type(x)
    return t is np.ndarray or t is Array or isinstance(x, _ARRAY_LIKE_TYPES)


# ----------------------------------------------------------------------------------------------
# Tracers


class Tracer:
    """A value being traced by ``_trace``. Arithmetic and methods are those of ``Array``."""

    __array_priority__ = 1000
    # (weakly referable, as JAX's tracers: TensorFlow Probability's bijector cache keys on them)
    __slots__ = ("_trace", "__weakref__")

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)
    mat = property(lambda self: self.aval.mat)  # (JAX's x.mat: its manual axis type, as the aval's)

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return self.aval.shape[0]

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")  # (JAX's words)
        return (self[i] for i in range(self.aval.shape[0]))

    def to_concrete_value(self):
        """The NumPy value this tracer stands for if it is known now, else ``None`` (JAX's
        ``Tracer.to_concrete_value``): forward mode's and eager grad's tracers of concrete inputs
        have one, so ``int(x)``, ``x`` as an index or a size, and ``bool(x)`` work on them, as in
        JAX (``float(x)`` still raises there: it would cut the derivative silently)."""
        return None

    def __bool__(self):
        shape = self.aval.shape
        if all(type(d) is int for d in shape):  # (JAX's check_bool_conversion comes first)
            size = math.prod(shape)
            if size == 0:
                raise ValueError(
                    "The truth value of an empty array is ambiguous. Use `array.size > 0` to check that "
                    "an array is not empty."
                )
            if size > 1:
                raise ValueError(
                    "The truth value of an array with more than one element is ambiguous. Use a.any() "
                    "or a.all()"
                )
        value = self.to_concrete_value()
        if value is not None:
            return bool(value)
        raise TracerBoolConversionError(
            self._concretization_message(
                f"Attempted boolean conversion of {self._error_repr()}.", "bool(), if/while/and/or"
            )
        )

    def __float__(self):
        check_scalar_conversion(self.aval)  # (JAX checks the shape first)
        raise ConcretizationTypeError(self._abstract_value_message("float", "float()"))

    def __int__(self):
        check_scalar_conversion(self.aval)
        value = self.to_concrete_value()
        if value is not None:
            return int(value)
        raise ConcretizationTypeError(self._abstract_value_message("int", "int()"))

    def __complex__(self):
        check_scalar_conversion(self.aval)
        raise ConcretizationTypeError(self._abstract_value_message("complex", "complex()"))

    def __index__(self):
        check_integer_conversion(self.aval)
        value = self.to_concrete_value()
        if value is not None:
            return operator.index(value)
        raise TracerIntegerConversionError(
            self._concretization_message(
                f"The __index__() method was called on {self._error_repr()}.", "using it as an index or size"
            )
        )

    def __array__(self, dtype=None, copy=None):
        raise TracerArrayConversionError(
            self._concretization_message(
                f"The numpy.ndarray conversion method __array__() was called on {self._error_repr()}.",
                "numpy.asarray(), converting it to a NumPy array",
            )
        )

    def item(self):
        raise ConcretizationTypeError(self._abstract_value_message("item", "item()", astype=False))

    def tolist(self):
        raise ConcretizationTypeError(self._method_message("tolist"))

    def block_until_ready(self):
        raise AttributeError(self._unavailable("block_until_ready", "method"))

    def _unavailable(self, name: str, kind: str) -> str:
        # (JAX's type and words for a method a traced value lacks, with where it was traced)
        origin = self._trace.describe_origin(self) if hasattr(self._trace, "describe_origin") else ""
        return f"The '{name}' {kind} is not available on {self._error_repr()}.{origin}"

    def __reduce__(self):
        # (JAX's error: pickling a traced value; copy.copy/deepcopy use the methods of NOTE: [array
        # methods] instead)
        raise ConcretizationTypeError(
            self._concretization_message(
                f"Abstract tracer value encountered where concrete value is expected: {self._error_repr()}.\n"
                "The error occurred in the __reduce__ method, which may indicate an attempt to "
                "serialize/pickle a traced value.",
                "pickle.dumps",
            )
        )

    def _method_message(self, name: str) -> str:
        # (JAX's words: "The tolist() method was called on traced array with shape int32[3]")
        head = (
            f"Abstract tracer value encountered where concrete value is expected: The {name}() method was "
            f"called on {self._error_repr()}."
        )
        return self._concretization_message(head, f"x.{name}()")

    def _error_repr(self) -> str:
        aval = self.aval  # (JAX's words: the dtype's full name, "traced array with shape float32[3]")
        return f"traced array with shape {np.dtype(aval.dtype).name}[{','.join(map(str, aval.shape))}]"

    def _abstract_value_message(self, fname: str, usage: str, astype: bool = True) -> str:
        # JAX's words first (code written for JAX matches them), then funcgrad's explanation.
        head = (
            f"Abstract tracer value encountered where concrete value is expected: {self._error_repr()}\n"
            f"The problem arose with the `{fname}` function. "
        )
        if astype:
            head += (
                "If trying to convert the data type of a value, try using "
                f"`x.astype({fname})` or `jnp.array(x, {fname})` instead."
            )
        return self._concretization_message(head, usage)

    def _concretization_message(self, head: str, usage: str) -> str:
        origin = self._trace.describe_origin(self) if hasattr(self._trace, "describe_origin") else ""
        return (
            f"{head}{origin}\nIt was called ({usage}) on a traced value inside "
            f"{self._trace.describe() if hasattr(self._trace, 'describe') else 'a transformation'}. "
            "A traced value has no concrete value while the function is being "
            "transformed. Fixes: mark the argument static (jit(f, static_argnums=...)) if it is a "
            "configuration value; use funcgrad.lax.cond / funcgrad.lax.while_loop for control flow "
            "on traced values; use funcgrad.numpy.where to select between values."
        )

    def __repr__(self):
        # Each transformation's tracer names itself as JAX 0.10's does (``JitTracer(~float64[])``,
        # ``JVPTracer(primal=..., tangent=...)``, ...): a ``print`` in a traced function shows what
        # JAX's documentation shows. Tracers of other traces keep the generic form.
        jax_form = getattr(self, "_jax_repr", None)
        if jax_form is not None:
            return jax_form()
        return f"Traced<{self.aval.str_short()}>with<{type(self._trace).__name__}>"

    def __hash__(self):
        raise TypeError(f"unhashable type: traced array {self.aval.str_short()}")


# Operators of Array and Tracer are installed by the surface (funcgrad.numpy) at import time:
# the kernel cannot import the surface (see design.md, dependency inversion).


class PrimalTracer(Tracer):
    """A tracer that carries its primal value (forward mode's and Taylor mode's tracers, which add
    a tangent or a series): its aval is the primal's, computed once on first use."""

    __slots__ = ("primal", "_aval")

    @property
    def aval(self):
        aval = self._aval
        if aval is None:
            aval = self._aval = get_aval(self.primal)
        return aval

    def to_concrete_value(self):
        return concrete_value_or_none(self.primal)  # (the primal's, as JAX's JVPTracer)


# ----------------------------------------------------------------------------------------------
# Helpers used across transformations


def concrete_value_or_none(x):
    """The NumPy value of ``x`` if it is known now -- ``x`` concrete, or a tracer whose value is
    (``Tracer.to_concrete_value``) -- else ``None`` (JAX's ``core.to_concrete_value``)."""
    if isinstance(x, Tracer):
        return x.to_concrete_value()
    if isinstance(x, Array):
        return x._numpy()
    return np.asarray(x)


def concrete_value(x):
    """The NumPy value of ``x`` if it is concrete, else ``None``."""
    if isinstance(x, Tracer):
        return None
    if isinstance(x, Array):
        return x._numpy()
    return np.asarray(x)


def wrap_result(x, weak_type: bool = False) -> Any:
    """Wrap an eager NumPy result as a public ``Array`` (primitive impls return NumPy)."""
    if type(x) is Array or type(x) is Token or isinstance(x, Tracer) or type(x) in _dt.typed_scalar_types:
        return x  # (a typed scalar is a value a primitive forwarded, as JAX returns it)
    if type(x) is EArray:  # (an extended dtype's array is its own: NOTE: [extended dtypes])
        return x
    return Array._from_owned(np.asarray(x), weak_type)


_PYTHON_SCALARS = frozenset((*python_scalar_types, *_dt.typed_scalar_types))  # (weak, as JAX's)
_WEAK_SCALARS = _PYTHON_SCALARS - {bool}


# (After ``Tracer``'s definition: what ``is_array_like`` accepts.)
_ARRAY_LIKE_TYPES = (Tracer, Array, np.ndarray, np.generic, *python_scalar_types, EArray)
