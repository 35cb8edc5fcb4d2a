"""``funcgrad.Array``: the one public array type.

Layer: kernel (bottom). Imports numpy, ``funcgrad.kernel.hooks``, ``funcgrad.kernel.ir``
(``ShapedArray``, for ``Array.aval``), ``funcgrad.kernel.c_modules`` and its own C
base ``funcgrad.kernel._array_base`` where it is built (NOTE: [array in C]).

An Array is immutable and holds its value in host memory (a NumPy array), in a device buffer
(produced by a jitted call), or both. Conversions are lazy and cached: a device-backed Array becomes
NumPy only when something reads it on the host (``np.asarray``, printing, an eager primitive), and a
host Array is put on a device once, the first time a jitted function receives it, so jitted calls
chain on device without host round trips.

# NOTE: [array methods]
# Operators (``+``, ``@``, ``[]``) and methods (``.sum()``, ``.reshape()``, ``.at[]``) of Array and
# of Tracer are NumPy-surface functions. The kernel cannot import the surface, so
# ``funcgrad.numpy`` registers them with the kernel (``funcgrad.kernel.register``, NOTE: [kernel
# registration]) when it is imported (``funcgrad.api`` imports it, so every public entry point has
# them).
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.c_modules import c_modules_wanted
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import _DEVICE, ShapedArray, memory_space_of_kind

# NOTE: [array in C]
# The two things a jitted call does per output -- make an Array around the device buffer, and
# (usually) read it with ``np.asarray`` -- cost more in Python than the whole C++ dispatch.
# Two small C modules (built by ``pip install``; see pyproject.toml) remove that Python:
# - ``funcgrad.kernel._array_base.ArrayBase``: Array's fields, its ``_from_buffer``/``_from_owned``
#   constructors and a read-only buffer protocol that forwards to whatever holds the value (the
#   NumPy array, else the device buffer). NumPy tries the buffer protocol before ``__array__``;
#   where the holder cannot export (bfloat16, sub-byte dtypes, a GPU or sharded buffer, a deleted
#   one), NumPy falls back to ``Array.__array__``, which handles every case.
# - ``xla_bridge._hot_call.HotCall``: the base of ``Dispatcher``, whose C ``__call__`` is the
#   native-dispatch hot path (NOTE: [jitted call route]).
# Both are optional: where they are not built (no C compiler), ``_PythonArrayBase`` below and
# ``Dispatcher._native_route`` (xla_bridge/dispatch.py) are the same code in Python. Every
# method of Array stays in Python, and so does every decision the C code does not make.


class _PythonArrayBase:
    """``ArrayBase`` in Python (NOTE: [array in C]): the fields and the constructors."""

    __slots__ = ("_value", "_buffer", "weak_type", "_aval", "__weakref__")

    @classmethod
    def _from_owned(cls, value: np.ndarray, weak_type: bool = False) -> Array:
        return cls._make(value, None, weak_type)

    @classmethod
    def _from_buffer(cls, buffer, weak_type: bool = False) -> Array:
        return cls._make(None, buffer, weak_type)

    @classmethod
    def _make(cls, value, buffer, weak_type) -> Array:
        self = object.__new__(cls)
        self._value, self._buffer, self.weak_type, self._aval = value, buffer, weak_type, None
        return self


_ArrayBase = _PythonArrayBase
if c_modules_wanted():
    with contextlib.suppress(ImportError):  # not built: no C compiler where it was installed
        from funcgrad.kernel._array_base import ArrayBase as _ArrayBase
C_ACCELERATED = _ArrayBase is not _PythonArrayBase


def _unpickle(value: np.ndarray, weak_type: bool) -> Array:
    """An Array from its pickle, in the dtype the loading process's mode gives it (JAX's
    ``_reconstruct_array`` puts the value on the device: a float64 pickled with x64 on loads as
    float32 in 32-bit mode).

    >>> _unpickle(np.zeros(2, np.float32), False).dtype
    dtype('float32')
    """
    return Array(_dt.canonical_value(value), weak_type)


def check_scalar_conversion(x) -> None:
    """JAX's check before ``int``/``float``/``complex`` of an array: only a 0-d one converts (a
    one-element 1-d array too is refused, where NumPy converts it).

    >>> check_scalar_conversion(np.zeros(2))
    Traceback (most recent call last):
    TypeError: Only scalar arrays can be converted to Python scalars; got arr.ndim=1
    """
    if len(x.shape):
        raise TypeError(f"Only scalar arrays can be converted to Python scalars; got arr.ndim={len(x.shape)}")


def check_integer_conversion(x) -> None:
    """JAX's check before ``__index__`` of an array (``operator.index``, ``hex``, a slice bound):
    only a 0-d integer array is an index."""
    if tuple(x.shape) != () or getattr(x.dtype, "kind", None) not in ("i", "u"):
        raise TypeError("Only integer scalar arrays can be converted to a scalar index.")


class Array(_ArrayBase):
    """An immutable n-dimensional array, NumPy-interoperable.

    >>> import funcgrad.numpy as fnp
    >>> x = fnp.arange(3.0)
    >>> (x * 2).sum()
    Array(6., dtype=float64)
    """

    # The fields (``_value``, ``_buffer``, ``weak_type``, ``_aval``) live in the base.
    # ``_aval``: the abstract value, made on first request (``core.get_aval``) and kept, since
    # transformations ask for it several times per primitive.
    __slots__ = ()
    __array_priority__ = 100

    def __init__(self, value, weak_type: bool = False):
        value = np.asarray(value)
        if value.flags.writeable:
            # Immutable: take a private copy, so the caller's later writes cannot change us.
            value = value.copy()
            value.flags.writeable = False
        self._value = value
        self._buffer = None
        self.weak_type = weak_type
        self._aval = None
        if value.ndim == 0:
            hooks.note_constant(self)  # NOTE: [constants made while tracing]

    # ``_from_owned`` of the base (C or Python), for callers whose results are never constants of
    # a trace being staged (eager results: the evaluating trace is the root, nothing is staging).
    _from_owned_raw = _ArrayBase.__dict__["_from_owned"]

    @classmethod
    def _from_owned(cls, value, weak_type: bool = False) -> Array:
        x = cls._from_owned_raw(value, weak_type)
        # A 0-d value made while a jaxpr is staged is a constant of that trace, staged as a
        # literal, where an Array made before it is a constvar (NOTE: [constants made while
        # tracing], kernel/partial_eval.py); a computed one of any shape is noted as made by the
        # trace (NOTE: [constants a trace made]).
        hooks.note_constant(x)
        return x

    # ``Array._from_owned(value, weak_type=False)`` wraps a freshly computed NumPy array without
    # copying it. Primitive impls may return views of their inputs, so the flags of ``value`` are
    # left alone; ``__array__`` (and the buffer protocol) hand out read-only views instead, which
    # keeps the Array immutable. ``Array._from_buffer(buffer, weak_type=False)`` is an Array
    # backed only by a device buffer (read back to the host lazily): the one constructor from a
    # device buffer (``xla_bridge.dispatch`` makes every output with it). Both come from the base.

    def _numpy(self) -> np.ndarray:
        value = self._value
        if value is None:
            value = hooks.device_to_numpy(self._buffer)
            self._value = value
        return value

    @property
    def shape(self) -> tuple[int, ...]:
        if self._value is not None:
            return self._value.shape
        return tuple(self._buffer.aval.shape)

    @property
    def dtype(self) -> np.dtype:
        if self._value is not None:
            return self._value.dtype
        return self._buffer.aval.dtype

    @property
    def aval(self) -> ShapedArray:
        """The abstract value (shape, dtype, weak type): what a transformation sees of this Array
        (``jax.Array.aval``; ``core.get_aval`` returns the same object).

        >>> import funcgrad.numpy as fnp
        >>> fnp.arange(3.0).aval.str_short()
        'f64[3]'
        """
        aval = self._aval
        if aval is None:
            b = self._buffer
            sharding = None
            if b is not None and hooks.aval_sharding is not None:
                sharding = hooks.aval_sharding(b, self.ndim)  # NOTE: [sharding in types]
            # NOTE: [memory space in types]: a value in host memory is typed so.
            space = _DEVICE if b is None else memory_space_of_kind(getattr(b._sharding, "_fg_kind", None))
            aval = self._aval = ShapedArray(self.shape, self.dtype, self.weak_type, sharding, space)
        return aval

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
    nbytes = property(lambda self: self.size * self.dtype.itemsize)

    @property
    def flat(self):
        # (JAX's error: NumPy's flat iterator writes in place, and code probing for an ndarray
        # through ``.flat`` sees jax's exception type)
        raise NotImplementedError(
            "JAX Arrays do not implement the arr.flat property: consider arr.flatten() instead."
        )

    @property
    def __numpy_dtype__(self) -> np.dtype:
        # NumPy 2.4's protocol for ``np.dtype(x)``: JAX deprecates passing an array as a dtype.
        warnings.warn(
            "Implicit conversion of an array to a dtype is deprecated; rather than dtype=arr use "
            "dtype=arr.dtype. In the future this will result in an error.",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.dtype

    def __array__(self, dtype=None, copy=None):
        value = self._value
        if value is None:
            value = self._value = hooks.device_to_numpy(self._buffer)
            if dtype is None and not copy:
                return value  # read-only: device_to_numpy's contract
        if dtype is None and not copy and not value.flags.writeable:
            return value  # (a device buffer's host view is read-only: the common case, first)
        if copy:
            value = value.copy()
        elif value.flags.writeable:
            value = value.view()
            value.flags.writeable = False
        return value if dtype is None else value.astype(dtype, copy=False)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d Array)")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")  # (JAX's words, as NumPy's)
        return (self[i] for i in range(self.shape[0]))

    def __bool__(self):
        return bool(self._numpy())

    def __float__(self):
        check_scalar_conversion(self)
        return float(self._numpy())

    def __int__(self):
        check_scalar_conversion(self)
        return int(self._numpy())

    def __complex__(self):
        check_scalar_conversion(self)
        return complex(self._numpy())

    def __index__(self):
        check_integer_conversion(self)
        return self._numpy().__index__()

    def item(self, *args):
        return self._numpy().item(*args)

    def tolist(self):
        return self._numpy().tolist()

    def block_until_ready(self) -> Array:
        if self._buffer is not None:
            self._buffer.block_until_ready()
        return self

    # As JAX's Array: unhashable by type (not an instance of collections.abc.Hashable), so
    # hash(x) is Python's "unhashable type: 'Array'" TypeError.
    __hash__ = None

    def __repr__(self):
        extra = ", weak_type=True" if self.weak_type else ""
        try:
            value = self._numpy()
        except NotImplementedError:  # an unreduced value is not read whole: JAX's form
            return f"Array(shape={self.shape}, dtype={self.dtype.name}{extra}, sharding={self.sharding})"
        if value.size == 0 and value.ndim:
            return f"Array([], shape={value.shape}, dtype={value.dtype.name}{extra})"
        # JAX's layout (jax/_src/array.py): the last line keeps room for the ',' after it, and
        # where the dtype does not fit beside it, the dtype is padded by the prefix's width on
        # the same line ("...]],      dtype=complex64)"), as doctests of JAX's examples print.
        width = np.get_printoptions()["linewidth"]
        body = np.array2string(value, separator=", ", prefix="Array(", suffix=",", max_line_width=width)
        dtype_str = f"dtype={value.dtype.name}{extra}"
        last_line_len = len(body) - body.rfind("\n") + 1
        sep = " " * len("Array(") if last_line_len + len(dtype_str) + 2 > width else " "
        return f"Array({body},{sep}{dtype_str})"

    def __str__(self):
        try:
            return str(self._numpy())
        except NotImplementedError:
            return repr(self)

    def __format__(self, spec):
        value = self._numpy()
        return format(value.item(), spec) if value.ndim == 0 else format(value, spec)

    def __reduce__(self):
        return (_unpickle, (np.array(self._numpy()), self.weak_type))

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export through DLPack (the host copy). A consumer that only speaks DLPack < 1.0 cannot be
        told the buffer is read-only, so it gets a private copy (funcgrad Arrays are immutable)."""
        value = self._numpy()
        if not value.flags.writeable and (max_version is None or tuple(max_version)[0] < 1):
            if copy is False:
                raise BufferError(
                    "__dlpack__: this Array is read-only; a DLPack < 1.0 export needs copy=None/True"
                )
            value = value.copy()
        kwargs = {"stream": stream, "dl_device": dl_device, "copy": copy}
        if max_version is not None:
            kwargs["max_version"] = max_version
        return value.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._numpy().__dlpack_device__()
