"""Shared machinery of funcgrad.numpy: conversion, NEP 50 promotion, the preparation of
elementwise operands (promote, broadcast, bind).

Layer: surface. Imports the kernel (core, dtypes, array), the primitive catalog,
``funcgrad.numpy._dtypes`` and ``funcgrad.numpy._operands`` (array-likeness, shapes, broadcasting
of shapes, axes: re-exported here, where the other modules import them); every other module of funcgrad.numpy
builds on this one.

# NOTE: [numpy operand preparation]
# A numpy-layer function turns its operands into primitive operands in three steps, always in this
# order: (1) *promote* to one dtype (NEP 50: ``promote_args``; Python scalars are weak and become
# 0-d weak Arrays of the result dtype, so eager results and traced avals agree on weak types),
# (2) *broadcast* to one shape (``broadcast_args``; 0-d operands stay 0-d, which the elementwise
# primitives accept), (3) *bind*. Shapes and dtypes are checked here, with NumPy's exceptions and
# messages, before anything is bound, so no malformed program reaches a primitive or XLA.
"""

from __future__ import annotations

import functools
import numbers
import os
import sys
import warnings

import numpy as np

from funcgrad import _devices, _placement, _transfer_guard
from funcgrad._shardings import NamedSharding, Sharding, SingleDeviceSharding, check_aval_sharding
from funcgrad.kernel import ad, core, templates
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.dtypes import python_scalar_types
from funcgrad.kernel.partial_eval import under_staging
from funcgrad.numpy import _dtypes as _dtypes_mod
from funcgrad.numpy._dtypes import (  # (canonicalize_dtype, check_user_dtype: re-exported)
    ExtendedArray,
    TypePromotionError,
    _flags,
    _least_upper_bound,
    _weak_node,
    canonicalize_dtype,  # noqa: F401
    check_user_dtype,
    dtype_and_weak,
    extended_in,
    extended_op_error,
)
from funcgrad.numpy._operands import (  # (re-exported: the other modules import them from here)
    _ARRAYS,
    ARRAYLIKE_TYPES,  # noqa: F401
    AxisError,  # noqa: F401
    _as_shape,
    _broadcast_known,
    _rank_promotion,
    arraylike_error,  # noqa: F401
    arraylike_other,  # noqa: F401
    as_sequence,  # noqa: F401
    aval,
    broadcast_args,
    broadcast_shapes,
    broadcast_shapes_as_lax,  # noqa: F401
    check_arraylike,  # noqa: F401
    concrete_int,  # noqa: F401
    concrete_or_error,  # noqa: F401
    is_array,
    is_arraylike,  # noqa: F401
    ndim_of,  # noqa: F401
    normalize_axes,  # noqa: F401
    normalize_axis,  # noqa: F401
    shape_of,
    static_shape,  # noqa: F401
)
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import structure as st

__all__ = [
    "array",
    "asarray",
    "broadcast_to",
]


def rebound(x):
    """``x`` as JAX's ``jnp.asarray`` of a concrete tracer leaves it, for the functions that JAX
    passes through it and funcgrad returns unchanged (an update of an empty array, a squeeze of no
    axes): in 32-bit mode a forward-mode tracer's raw 64-bit NumPy primal is converted to its
    32-bit type, as JAX binds the conversion (NOTE: [x64 mode]); anything else is ``x``."""
    if _dt.x64_enabled or not isinstance(x, core.PrimalTracer) or not ew.conversion._raw_wide_primal(x):
        return x
    return ew.convert_element_type(x, x.dtype, weak_type=x.weak_type)


# ----------------------------------------------------------------------------------------------
# Conversion


def _iter_nested(xs):
    for x in xs:
        if isinstance(x, list | tuple):
            yield from _iter_nested(x)
        else:
            yield x


def _stands_for_array(x) -> bool:
    """An object with ``__jax_array__`` (flax's Variables, a user's wrapper), not a number."""
    return hasattr(x, "__jax_array__") and not isinstance(x, Array | core.Tracer | numbers.Number)


stands_for_array = _stands_for_array


def array_of_stand_in(x):
    """``x``'s array when ``x`` stands for one (``__jax_array__``), else ``x``: JAX's functions
    that read an argument's shape or dtype convert such objects first.

    >>> class Wrapped:
    ...     def __jax_array__(self):
    ...         return np.zeros((2, 3))
    >>> array_of_stand_in(Wrapped()).shape, array_of_stand_in(1.5)
    ((2, 3), 1.5)
    """
    return x.__jax_array__() if _stands_for_array(x) else x


def _map_nested(xs):
    """Nested lists/tuples with each ``__jax_array__`` object replaced by its array."""
    return [
        _map_nested(x) if isinstance(x, list | tuple) else x.__jax_array__() if _stands_for_array(x) else x
        for x in xs
    ]


# NOTE: [transfer guard]: ``asarray`` asks about host data only for a call from outside funcgrad
# (``array`` of this file calls it for the user; the public ``asarray`` is wrapped by
# ``takes_out_sharding``, whose frame is skipped as creation.py's ``_WRAPPERS`` skip it).
_guard = _transfer_guard.state
_OWN_FILES = (__file__, _placement.__file__)


def asarray(a, dtype=None, order=None, *, copy=None, device=None):
    """Convert ``a`` (an Array, a traced value, a NumPy array, a scalar or nested lists) to an Array.

    Python scalars give weak-typed 0-d Arrays (they still promote like Python scalars, NOTE:
    [weak types]); an explicit ``dtype`` gives a strong one.

    >>> asarray([1, 2]).dtype
    dtype('int64')
    >>> asarray(2.0)
    Array(2., dtype=float64, weak_type=True)
    """
    _check_order(order)
    if isinstance(a, ExtendedArray):  # typed PRNG keys are arrays already (ExtendedArray)
        if dtype is None or dtype == a.dtype:
            return a
        raise TypeError(f"asarray: cannot convert an array of dtype {a.dtype} to {dtype}")
    if isinstance(a, list | tuple) and a and isinstance(a[0], ExtendedArray) and dtype is None:
        return a[0]._numpy_function(concat_new_axis, (list(a),), {})  # a list of keys: stacked
    if device is not None:
        out = asarray(a, dtype, order, copy=copy)
        return place_on(out, device, "asarray", built_from_arrays(a, out))
    if dtype is not None:
        dtype = check_user_dtype(dtype, "asarray")
    if isinstance(a, core.Tracer | Array):
        if type(a) is not Array and isinstance(a, core.Tracer) and not a._trace.alive:
            core.check_live(a)  # (a leaked tracer: JAX's conversion binds and refuses it)
        if copy and isinstance(a, core.Tracer):
            a = ew.copy_p.bind(a)  # (JAX's jnp.array of a traced value stages a copy)
        # (copy=False with a dtype to convert to converts, as JAX's asarray does: it refuses only
        # host buffers it would have to copy onto an accelerator)
        out = a if dtype is None else ew.convert_element_type(a, dtype)
        # A copy is a new Array object: donating one to a jitted call leaves the other alive.
        if copy and out is a and type(a) is Array:
            if a._buffer is not None and a._buffer._committed:
                return ew.copy_p.bind(a)  # stays on its device, committed (NOTE: [committed arrays])
            return Array._from_owned(a._numpy(), a.weak_type)
        if (
            out is a
            and isinstance(a, ad.JVPTracer)
            and not isinstance(ad.as_given(a.primal), Array | core.Tracer)
        ):
            # (jvp at a Python scalar or NumPy value: JAX's asarray binds a conversion, so its result
            # is a computed Array, not the caller's object passed through: NOTE: [outputs jvp and
            # vjp return as they are])
            out = ew.copy_p.bind(a)
        return out
    if _guard.host_to_device and not isinstance(a, list | tuple) and not hasattr(a, "__jax_array__"):
        _transfer_guard.eager_host_value(a, _OWN_FILES)  # NOTE: [transfer guard]: host data made an Array
    if type(a) in python_scalar_types:
        if dtype is None:
            int_range = _INT64_RANGE if _dt.x64_enabled else _INT32_RANGE
            if type(a) is int and _dt.jax_rules and a not in int_range:  # (JAX's words; NumPy's differ)
                raise OverflowError(f"Python int {a} too large to convert to {_dt.default_int.name}")
            # (a Python bool is strong, as in JAX: jnp.asarray(True) has no weak type)
            return Array._from_owned(np.asarray(a, _dt.python_scalar_dtype(a)), weak_type=type(a) is not bool)
        return Array._from_owned(_scalar_const(a, dtype))
    if isinstance(a, list | tuple) and any(_stands_for_array(x) for x in _iter_nested(a)):
        a = _map_nested(a)  # (jnp.array(((x, x), [x, x])) of such objects: their arrays, as JAX's)
    if isinstance(a, list | tuple) and any(isinstance(x, core.Tracer | Array) for x in _iter_nested(a)):
        return _stack_nested(a, dtype)
    if hasattr(a, "__jax_array__"):
        return asarray(a.__jax_array__(), dtype)
    if _guard.host_to_device and isinstance(a, list | tuple):
        _transfer_guard.eager_host_value(a, _OWN_FILES)
    if dtype is None and _dt.jax_rules and isinstance(a, list | tuple):
        dtype = _list_dtype(a)
        if dtype is None:
            value = np.array(a, copy=None)
            if value.dtype.itemsize == 8 or value.dtype == object:
                _check_list_ints(a, value)
    value = np.array(a, dtype=dtype, copy=None) if dtype is None else np.asarray(a, dtype=dtype)
    if value.dtype == object:
        if a is None or (isinstance(a, list | tuple) and any(x is None for x in _iter_nested(a))):
            # (JAX's type and words: a None where a number belongs is a ValueError)
            raise ValueError("None is not a valid value for jnp.array")
        raise TypeError(f"funcgrad.numpy.asarray: cannot convert {type(a).__name__} {a!r:.80} to an array")
    if value.dtype.kind in "USMmO":
        raise TypeError(f"funcgrad arrays hold numbers, not {value.dtype}")
    if _dt.x64_enabled or (dtype is not None and _dt.explicit_x64_allowed):  # NOTE: [x64 mode]
        return Array(value)  # (64-bit types on, or one asked for under jax_explicit_x64_dtypes='allow')
    return Array(_dt.canonical_value(value))


def _check_order(order) -> None:
    # (JAX's type and words for array/asarray's order=: NumPy's layouts have no meaning here)
    if order is not None and order != "K":
        raise NotImplementedError("Only implemented for order='K'")


def _list_dtype(a):
    """In 32-bit mode (JAX's rules, NOTE: [x64 mode]), the dtype of a list holding NumPy scalars or
    arrays beside Python scalars: the Python scalars are weak, as in JAX (``[0, np.int16(1)]`` is
    int16, where NumPy's list inference gives int64); None (NumPy's inference) otherwise."""
    leaves = list(_iter_nested(a))
    if not any(isinstance(x, np.ndarray | np.generic) for x in leaves):
        return None
    try:
        return _result_type(tuple(dtype_and_weak(x) for x in leaves))[0]
    except (TypeError, ValueError):  # (a leaf NumPy's inference refuses: its error says which)
        return None


def _check_list_ints(a, value) -> None:
    """Under JAX's rules a list of Python ints is of the default integer: an int outside its range
    (int32's in 32-bit mode, int64's in 64-bit mode) is an OverflowError, as JAX's, where NumPy's
    int64 (or float64, or object past int64) would otherwise be wrapped to int32 silently."""
    kind = value.dtype.kind
    bound = 2**63 if _dt.x64_enabled else 2**31
    if kind == "i" and value.size and value.min() >= -bound and value.max() < bound:
        return
    if kind == "f" and not (value.size and np.abs(value).max() >= 2**63):
        return  # (NumPy reads ints past int64's range as float64 only when no other leaf is float)
    if kind in "fO" and any(type(x) is float for x in _iter_nested(a)):
        return
    if kind not in "ifO":
        return
    for x in _iter_nested(a):
        if type(x) is int and x not in (_INT64_RANGE if _dt.x64_enabled else _INT32_RANGE):
            if x not in _INT64_RANGE:
                raise OverflowError(f"Python int too large to convert to C long: {x}")
            raise OverflowError(f"Python integer {x} out of bounds for int32")


def _stack_nested(a, dtype):
    """``asarray`` of (nested) lists holding Arrays or tracers, built as JAX's ``jnp.array`` builds
    it (so a staged program reads as JAX's): one dtype for every leaf (weak leaves defer), each
    element converted to it (strong), given a leading axis (``broadcast_in_dim``) and concatenated,
    in groups of 16 (JAX's bound on one concatenation's width)."""
    if dtype is None:
        dtype, _ = _result_type(tuple(dtype_and_weak(x) for x in _iter_nested(a)))
    return _stack_as(a, np.dtype(dtype))


def _stack_as(a, dtype):
    if not a:
        return Array(np.array([], dtype))
    items = []
    for x in a:
        if isinstance(x, list | tuple):
            x = _stack_as(x, dtype)
        elif isinstance(x, Array | core.Tracer):
            if x.dtype != dtype or x.weak_type:
                x = ew.convert_element_type(x, dtype, weak_type=False)
        else:
            x = Array(np.asarray(x, dtype))
        shape = shape_of(x)
        items.append(st.broadcast_in_dim(x, (1, *shape), tuple(range(1, len(shape) + 1))))
    shapes = {shape_of(x)[1:] for x in items}
    if len(shapes) != 1:
        raise ValueError(
            "setting an array element with a sequence: the nested sequence is ragged "
            f"(element shapes {sorted(shapes)})"
        )
    while len(items) > 16:
        items = [st.concatenate(items[i : i + 16], 0) for i in range(0, len(items), 16)]
    return items[0] if len(items) == 1 else st.concatenate(items, 0)


def concat_new_axis(items):
    """Stack same-shape, same-dtype operands along a new leading axis."""
    shape = shape_of(items[0])
    parts = [st.reshape(asarray(x), (1, *shape)) for x in items]
    return parts[0] if len(parts) == 1 else st.concatenate(parts, 0)


def astype_operand(x, dtype):
    """``x`` as ``astype`` hands it to the conversion: a complex ``x`` cast to bool is ``x != 0``
    first (True where either part is nonzero, JAX's ``astype``), since the conversion itself
    (``lax.convert_element_type``, and ``asarray(x, bool)``) keeps only the real part."""
    source = getattr(x, "dtype", None)
    if isinstance(source, np.dtype) and source.kind == "c" and np.dtype(dtype) == np.bool_:
        x = asarray(x)
        return ew.ne_p.bind(x, ew.convert_element_type(np.zeros((), x.dtype), x.dtype))
    return x


def warn_complex_to_real(x, dtype) -> None:
    """JAX's DeprecationWarning for ``astype`` of a complex ``x`` to a real or integer ``dtype``
    (the imaginary part is dropped; JAX will raise ValueError in a later release)."""
    source = getattr(x, "dtype", None)
    if (
        isinstance(source, np.dtype)
        and source.kind == "c"
        and isinstance(dtype, np.dtype)
        and dtype.kind in "iuf"
    ):
        warnings.warn(
            "Casting from complex to real dtypes will soon raise a ValueError. Please first use "
            "jnp.real or jnp.imag to take the real/imaginary component of your input.",
            DeprecationWarning,
            stacklevel=3,
        )


def array(object, dtype=None, *args, copy=True, order="K", ndmin: int = 0, device=None):
    """Create an Array (a new immutable value; ``ndmin`` prepends size-1 axes).

    >>> array([[1.0, 2.0]]).shape
    (1, 2)
    """
    if args:  # (JAX's deprecation of copy, order and ndmin given positionally)
        if len(args) > 3:
            raise TypeError(f"array() takes at most 5 positional arguments but {len(args) + 2} were given")
        for i, name in enumerate(["copy", "order", "ndmin"]):
            if i < len(args) and [copy, order, ndmin][i] != [True, "K", 0][i]:
                raise TypeError(f"array() got multiple values for argument '{name}'")
        copy, order, ndmin = (list(args) + [copy, order, ndmin][len(args) :])[:3]
        warnings.warn(
            "Passing the copy, order, and ndmin arguments to jnp.array positionally is deprecated. "
            "Use keyword arguments instead.",
            DeprecationWarning,
            stacklevel=2,
        )
    _check_order(order)
    if isinstance(object, ExtendedArray) and dtype is not None and dtype == object.dtype:
        dtype = None  # typed PRNG keys to their own key dtype: themselves (JAX's)
    dtype = None if dtype is None else check_user_dtype(dtype, "array")
    out = asarray(object, dtype, copy=True if copy else None)
    if ndmin > out.ndim:
        out = st.reshape(out, (1,) * (ndmin - out.ndim) + tuple(out.shape))
    return out if device is None else place_on(out, device, "array", built_from_arrays(object, out))


def built_from_arrays(a, out) -> bool:
    """Whether ``array``/``asarray`` built ``out`` from Arrays without a conversion of its own: an
    Array of ``out``'s type, or lists holding Arrays (stacked). JAX's ``array`` then ends in a
    conversion to the requested sharding that returns its operand when the operand is laid out so
    already; from host data (or converting an Array's dtype) it places the result, committed."""
    if isinstance(a, Array):
        return a.dtype == out.dtype and a.weak_type == out.weak_type
    return isinstance(a, list | tuple) and any(isinstance(x, core.Tracer | Array) for x in _iter_nested(a))


def place_on(x, device, name: str, keep_if_placed: bool = False):
    """``x`` on ``device`` (a device or a sharding): the Array API's ``device=`` argument of
    ``name``, as ``x.to_device(device)`` (installed by funcgrad/_placement.py). A traced value is
    where its program runs: with one device that is the only place there is; with several, a clear
    error says where to place it instead. With ``keep_if_placed`` (``built_from_arrays``), an
    ``x`` already laid out as ``device`` says is returned as it is (uncommitted if it was), as JAX's.

    >>> x = asarray(np.arange(3.0))
    >>> place_on(x, _devices.devices()[0], "asarray", True) is x, x.committed
    (True, False)
    """
    if isinstance(device, NamedSharding) and under_staging(core.current_trace()):
        check_aval_sharding(device, np.shape(x), "device_put args")
        if name in _CONVERTS and device.memory_kind in (None, "device"):
            # (JAX's conversion to a sharding, staged of a constant too: the program lays it out)
            return _placement._constrain(x, device, strict=False)
        return _placement.device_put_sharded(x, device)  # (JAX's device_put: NOTE: [device_put in jit])
    if isinstance(x, core.Tracer):
        if _devices.device_count() == 1:
            return x
        if isinstance(device, Sharding):  # (JAX's conversion to a sharding: a device_put in the program)
            return _placement.device_put_sharded(x, device)
        raise TypeError(
            f"funcgrad.numpy.{name}(device=...) inside a transformation: a traced value has no "
            "placement; call funcgrad.device_put on the result outside it, or pass out_shardings= to jit"
        )
    if keep_if_placed and isinstance(x, Array):
        if isinstance(device, Sharding):
            if x.sharding == device:
                return x
        elif device in _devices.devices() and x.sharding == SingleDeviceSharding(device):
            return x
    if name in ("array", "asarray") and isinstance(x, Array) and x.committed:
        _check_same_devices(x, device)
    return x.to_device(device)


# The functions whose device= is JAX's conversion to a sharding (convert_element_type's sharding=,
# a constraint) inside jit; the others' is JAX's device_put (NOTE: [device_put in jit]).
_CONVERTS = frozenset({"array", "asarray", "linspace"})


def _check_same_devices(x, device) -> None:
    """JAX's error for ``jnp.array``/``asarray`` of an Array committed to other devices than
    ``device`` says (its conversion is a computation, which does not move committed data)."""
    want = list(device._device_assignment) if isinstance(device, Sharding) else [device]
    have = list(x.sharding._device_assignment)
    if set(want) != set(have):
        raise _devices.incompatible_devices(
            x, have, want, "args[0] of convert_element_type", "sharding_constraint inside jit"
        )


def _scalar_const(value, dtype) -> np.ndarray:
    try:
        # (a flag read on the hot path of Python-scalar operands; NOTE: [x64 mode])
        return np.asarray(value, dtype=dtype if _dt.x64_enabled else _const_dtype(dtype))
    except OverflowError:
        raise OverflowError(f"Python integer {value} out of bounds for {np.dtype(dtype).name}") from None


_INT32_RANGE = range(-(2**31), 2**31)
_INT64_RANGE = range(-(2**63), 2**63)


def _operand_const(value, dtype) -> np.ndarray:
    """A Python scalar *operand* (of arithmetic, a comparison, a fill) as a constant of ``dtype``.

    NOTE: [x64 mode]: with 64-bit types funcgrad follows NumPy 2 (NEP 50): an integer outside
    ``dtype``'s range is an OverflowError (``uint8_array + 300``). In 32-bit mode it follows JAX: a
    Python int is read as the default integer, int32 (OverflowError outside its range, whatever
    ``dtype`` is), then converted to ``dtype`` as a conversion does, wrapping (``+ 300`` adds 44 to
    a uint8 array, ``np.maximum(u8, -1)`` is 255). An explicit ``asarray(300, uint8)`` raises in both.
    """
    if not _dt.jax_rules or type(value) is not int:
        return _scalar_const(value, dtype)
    if _dt.x64_enabled:  # (JAX's rules in 64-bit mode: an int64, NOTE: [JAX's dtype rules in 64-bit mode])
        if value not in _INT64_RANGE:
            raise OverflowError(
                f"Python integer {value} out of bounds for int64 (a Python int operand is an int64)"
            )
        return np.asarray(value, np.int64).astype(np.dtype(dtype))
    if value not in _INT32_RANGE:
        raise OverflowError(
            f"Python integer {value} out of bounds for int32 (in 32-bit mode a Python int operand is "
            "an int32, as in JAX; enable jax_enable_x64 for 64-bit integers)"
        )
    return np.asarray(value, np.int32).astype(_const_dtype(dtype))


def _const_dtype(dtype) -> np.dtype:
    # (32-bit mode: canonical, but a 64-bit dtype an operand asked for under
    # jax_explicit_x64_dtypes='allow', NOTE: [x64 mode])
    dtype = np.dtype(dtype)
    return dtype if _dt.explicit_x64_allowed else _dt.canonical(dtype)


def as_fill(value, dtype):
    """A fill value (``full``'s, ``unique``'s ``fill_value=``) as an Array of ``dtype``: a Python scalar
    as an operand (``_operand_const``: wrapped in 32-bit mode, as JAX's), anything else by ``asarray``.

    >>> as_fill(7, np.uint8).tolist()
    7
    """
    if type(value) is int and not _dt.x64_enabled:
        # (JAX's full converts a Python int fill as a NumPy int, wrapping into dtype, in 32-bit mode
        # too: full(n, 0x85a308d3, uint32) and full(n, -1, uint32); it is not an int32 operand)
        return Array._from_owned(np.asarray(value).astype(_const_dtype(dtype)))
    if type(value) in python_scalar_types:
        return Array._from_owned(_operand_const(value, dtype))
    return asarray(value, dtype)


def convert(x, dtype, weak_type: bool = False):
    """``x`` converted to ``dtype`` (no equation if nothing changes)."""
    if type(x) in python_scalar_types:
        return Array._from_owned(_operand_const(x, dtype), weak_type)
    return ew.convert_element_type(x, dtype, weak_type=weak_type)


def constant(value, dtype, shape=None, weak_type: bool = False) -> Array:
    """A concrete Array constant of ``dtype`` (broadcast to ``shape`` if given; canonical for the
    x64 mode, NOTE: [x64 mode]); ``weak_type`` for a constant beside weakly typed operands (JAX's
    Python-scalar constants), so the result keeps their weak type."""
    if value is None:  # (NumPy would make it NaN: a parameter left None, e.g. ``nn.celu(x, None)``)
        raise TypeError(f"expected a number for a constant of dtype {np.dtype(dtype).name}, got None")
    arr = np.asarray(value, dtype=dtype if _dt.x64_enabled else _const_dtype(dtype))
    if shape is not None and tuple(shape) != arr.shape:
        arr = np.broadcast_to(arr, shape).copy()
    return Array._from_owned(arr, weak_type) if weak_type else Array._from_owned(arr)


def constant_like(value, x) -> Array:
    """A 0-d constant of ``x``'s dtype, weak where ``x`` is: a formula's Python scalar, as in JAX's
    implementations (``deg2rad(2.0)`` is ``2.0 * (pi / 180)``, weak).

    >>> constant_like(1, asarray(2.0)).weak_type
    True
    """
    a = core.get_aval(x)
    return constant(value, a.dtype, weak_type=a.weak_type)


def lax_const(x, value):
    """JAX's ``lax._const(x, value)``, the constants of its formulas: weak where ``x`` is a weakly
    typed scalar (0-d), else a strong 0-d constant of ``x``'s dtype -- so a formula's result is
    weakly typed exactly where jax's is (a weak array that is not 0-d, such as a boolean array
    promoted with a Python float, gives a strong result).

    >>> lax_const(asarray(2.0), 3).weak_type, lax_const(asarray(np.ones(2)) * 1.0, 3).weak_type
    (True, False)
    """
    if isinstance(x, list | tuple):  # (JAX's _const reads the example's dtype: a list has none)
        raise TypeError(f"Cannot determine dtype of {x}")
    a = core.get_aval(x)
    return constant(value, a.dtype, weak_type=a.weak_type and not a.shape)


# ----------------------------------------------------------------------------------------------
# Promotion (NEP 50)


def _float0_error():
    """JAX's TypeError for a funcgrad.numpy function given a float0 array (the tangent type of
    integers), naming the function as JAX's does (the first caller outside this module)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    name = frame.f_code.co_name if frame is not None else "a function"
    raise TypeError(
        f"Called {name} with a float0 array. float0s do not support any operations by design because "
        "they are not compatible with non-trivial vector spaces. No implicit dtype conversion is done. "
        "You can use np.zeros_like(arr, dtype=np.float) to cast a float0 array to a regular zeros "
        "array. \nIf you didn't expect to get a float0 you might have accidentally taken a gradient "
        "with respect to an integer argument."
    )


def _result_type(pairs) -> tuple[np.dtype, bool]:
    # (the calling thread's 64-bit mode is part of the key: NOTE: [x64 mode per thread])
    return _cached_result_type(pairs, _dt.x64_enabled)


@register_cache("numpy.result_type")
@functools.lru_cache(maxsize=1024)
def _cached_result_type(pairs, x64) -> tuple[np.dtype, bool]:
    # Promotion depends only on the (dtype, weak) pairs and the mode: cached, it costs a dict
    # lookup per call.
    if any(d == _dt.float0 for d, _ in pairs):
        _float0_error()
    d0 = pairs[0][0] if pairs else None
    if not x64 and d0 in _dt.TO_32 and all(d == d0 for d, _ in pairs):
        # NOTE: [x64 mode]: one 64-bit dtype (a value made inside enable_x64), alone or not all
        # weak, is JAX's trivial promotion (lattice_result_type): kept, not canonicalised
        if len(pairs) == 1 or not all(w for _, w in pairs):
            return d0, len(pairs) == 1 and pairs[0][1]
    out = _dt.result_type(*pairs)
    if _dt.jax_rules and any(d in _NARROW_ALONE for d, _ in pairs):
        # JAX's lattice puts the 8/6/4-bit floats and int4/int2 alone: mixing one with another
        # dtype (but bool, integers below a narrow float, and Python scalars) is its
        # TypePromotionError (NOTE: [JAX's promotion lattice])
        _least_upper_bound([_weak_node(d) if w else d for d, w in pairs])
    return out


_NARROW_ALONE = frozenset(d for d in _dt._NARROW_KINDS if d != _dt.bfloat16)


# NOTE: [promotion flags]
# funcgrad.config's ``jax_numpy_dtype_promotion`` ("standard" | "strict") and
# ``jax_numpy_rank_promotion`` ("allow" | "warn" | "raise") are the dict ``_flags`` (defined in
# ``_dtypes``, whose lattice reads it too, and imported here, where promotion and broadcasting
# happen): ``set_promotion_flags`` is how the config sets them.


def set_promotion_flags(*, dtype_promotion: str | None = None, rank_promotion: str | None = None) -> None:
    """Set the promotion rules (called by ``funcgrad.config``; see NOTE: [promotion flags])."""
    if dtype_promotion is not None:
        _flags["dtype_promotion"] = dtype_promotion
    if rank_promotion is not None:
        _flags["rank_promotion"] = rank_promotion
    _templates_follow_flags()


def _templates_follow_flags() -> None:
    # A cached surface template skips the checks these rules add (NOTE: [surface templates]): off
    # while the process-wide rules are not the defaults or any thread has its own rules or 64-bit
    # mode, and while a matmul precision is set (a template keeps what it was made under).
    templates.enabled = (
        not _dtypes_mod.thread_flags()
        and not _dt.thread_modes()  # (a template keeps the dtypes of the mode it was made in)
        and dict(_flags) == _DEFAULT_FLAGS
        and not matmul_precision_set[0]
    )


matmul_precision_set = [False]  # (funcgrad._config: jax_default_matmul_precision set anywhere)


_DEFAULT_FLAGS = {"dtype_promotion": "standard", "rank_promotion": "allow"}


def promote_args(*args) -> list:
    """Convert ``args`` to one dtype, the NumPy 2 way. Python scalars become 0-d weak constants.

    >>> [a.dtype for a in promote_args(np.float32(1), 2.0)]
    [dtype('float32'), dtype('float32')]
    """
    if _guard.host_to_device:
        _ask_host_operands(args)
    if args and type(args[0]) is Array:
        # Strong Arrays of one plain dtype (the common eager call): nothing to promote or check.
        # (In 32-bit mode only where the dtype is its own canonical one, NOTE: [x64 mode].)
        d = args[0].dtype
        for a in args:
            if type(a) is not Array or a.weak_type or a.dtype is not d:
                break
        else:
            if d.kind in "biufc" and (_dt.x64_enabled or d not in _dt.TO_32):
                return list(args)
    pairs = tuple(dtype_and_weak(a) for a in args)
    dtype, weak = _result_type(pairs)
    if _flags["dtype_promotion"] == "strict":
        strong = {d for d, w in pairs if not w}
        if len(strong) > 1:
            # (JAX's words, its dtypes in lattice order; then funcgrad's)
            ordered = sorted(
                strong, key=lambda d: ("buifc".index(d.kind) if d.kind in "buifc" else 5, d.itemsize)
            )
            raise TypePromotionError(
                f"Input dtypes {tuple(d.name for d in ordered)} have no available implicit dtype promotion "
                "path when jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired "
                "output type, or set jax_numpy_dtype_promotion=standard. (implicit dtype promotion of "
                + ", ".join(sorted(d.name for d in strong))
                + " is not allowed under jax_numpy_dtype_promotion='strict'; "
                "convert explicitly (x.astype(...)))"
            )
    out = []
    for a, (d, w) in zip(args, pairs):
        if type(a) in python_scalar_types:
            out.append(Array._from_owned(_operand_const(a, dtype), weak))
        elif isinstance(a, _ARRAYS):
            out.append(a if (d == dtype and w == weak) else ew.convert_element_type(a, dtype, weak_type=weak))
        elif hasattr(a, "__jax_array__"):  # (its value may be traced: never through NumPy)
            a = asarray(a)
            out.append(a if a.dtype == dtype else ew.convert_element_type(a, dtype, weak_type=weak))
        else:
            # (weak where promotion made it so: an int NumPy array with a Python float, as JAX's)
            out.append(Array(np.asarray(a, dtype=dtype), weak))
    return out


# (the files between a user's call of a jnp function and its promotion: its own, the ufuncs' and
# their ufunc objects')
_PROMOTING_FILES = (
    __file__,
    *(os.path.join(os.path.dirname(__file__), f) for f in ("ufuncs.py", "ufunc_objects.py")),
)


def _ask_host_operands(args) -> None:
    """NOTE: [transfer guard]: a host operand (a Python or NumPy scalar, a NumPy array) of a jnp
    function the user calls outside ``jit`` is an argument of JAX's jitted function: a transfer
    (``jnp.maximum(x, 0)``); asked only for the user's own call."""
    for a in args:
        if isinstance(a, (np.ndarray, np.generic, *python_scalar_types)):
            _transfer_guard.eager_operand(a, _PROMOTING_FILES)


def promote_args_inexact(*args) -> list:
    """``promote_args``, then integer/bool results become the default float (``np.sin(1)``).

    A Python scalar goes to that float directly, as JAX converts each argument to the inexact type
    (and NumPy computes in it): ``int8_array / 300`` divides by 300.0, not by 300 wrapped to int8.

    >>> float(promote_args_inexact(np.int8(1), 300)[1])
    300.0
    """
    try:
        promoted, scalars = promote_args(*args), ()
    except OverflowError:  # (a Python int out of range for an integer dtype under NumPy 2's rules)
        promoted = None
    if promoted is None or not _dt.is_inexact(aval(promoted[0]).dtype):
        scalars = [type(a) in python_scalar_types for a in args]
        if any(scalars):
            # (a Python scalar's value does not decide the promotion: a 0 of its type stands in for
            # it, so 300 beside int8 is neither wrapped nor refused on its way to the float; it is
            # put in after)
            promoted = promote_args(*[type(a)(0) if s else a for a, s in zip(args, scalars)])
        elif promoted is None:
            promoted = promote_args(*args)  # (raises the OverflowError)
    dtype = aval(promoted[0]).dtype
    if not _dt.is_inexact(dtype):
        # (a boolean is never weak once promoted, as JAX's lattice: sqrt of a weak bool is strong)
        weak = aval(promoted[0]).weak_type and all(aval(a).weak_type for a in promoted)
        weak = weak and aval(promoted[0]).dtype != np.bool_
        # (the default float under NumPy's rules, JAX's table under JAX's: NOTE: [JAX's dtype rules
        # in 64-bit mode])
        inexact = _dt.inexact_of(dtype)
        promoted = [
            Array._from_owned(_operand_const(a, inexact), weak)
            if s
            else ew.convert_element_type(p, inexact, weak_type=weak)
            for a, p, s in zip(args, promoted, scalars or [False] * len(args))
        ]
    return promoted


# lax's names of the numeric functions, which JAX's errors for typed PRNG key operands use
_LAX_NAMES = {"negative": "neg", "subtract": "sub", "true_divide": "div", "divide": "div"}


def promote_args_named(op: str, *args) -> list:
    """``promote_args`` for the function ``op``: typed PRNG keys among ``args`` are JAX's TypeError
    naming ``op`` (lax's name), checked only when promotion fails (no cost otherwise)."""
    try:
        return promote_args(*args)
    except (TypeError, ValueError) as e:
        raise keys_refused(op, args, e) from None


def keys_refused(op: str, args, error: Exception) -> Exception:
    """The error to raise when promoting ``args`` for ``op`` failed with ``error``: JAX's
    TypeError where typed PRNG keys are among ``args``, else ``error`` itself."""
    if extended_in(args) is None:
        return error
    return extended_op_error(_LAX_NAMES.get(op, op), args)


def promote_args_numeric(name, *args) -> list:
    """``promote_args`` rejecting booleans (NumPy's ``-`` on bools is a TypeError)."""
    args = promote_args_named(name, *args)
    if aval(args[0]).dtype == np.bool_:
        raise TypeError(f"numpy boolean {name} is not supported; use logical_xor / logical_not instead")
    return args


# ----------------------------------------------------------------------------------------------
# Broadcasting


def broadcast_to(array, shape):
    """Broadcast ``array`` to ``shape`` (NumPy rules).

    >>> broadcast_to(asarray([1, 2]), (3, 2)).shape
    (3, 2)
    """
    if isinstance(array, ExtendedArray):
        return array._numpy_function(broadcast_to, (array, shape), {})
    x = array if is_array(array) else asarray(array)
    shape = _as_shape(shape)
    xs = shape_of(x)
    if xs == shape:
        return x
    if any(s < 0 for s in shape):
        raise ValueError(f"all elements of broadcast shape must be non-negative, got {shape}")
    lead = len(shape) - len(xs)
    if lead < 0:  # (JAX's words)
        raise ValueError(f"Cannot broadcast to shape with fewer dimensions: arr_shape={xs} shape={shape}")
    if any(a not in (1, b) for a, b in zip(xs, shape[lead:])):  # (JAX's words)
        have = aval(x)
        want = have.update(shape=shape, weak_type=False, sharding=None)
        raise ValueError(f"Incompatible types for broadcasting: input type={have} and requested type={want}")
    return _broadcast_known(x, xs, shape)


def rank_promote(*args, name: str = "elementwise operation") -> list:
    """Operands for an n-ary elementwise primitive, as JAX's ``promote_shapes``: operands of
    lower rank get leading size-1 dimensions, and the primitive broadcasts the size-1 dimensions
    itself (NOTE: [elementwise operand contract]), so ``x[:, None] * y[None]`` stages one ``mul``.

    >>> [a.shape for a in rank_promote(np.ones((2, 3)), np.ones(3))]
    [(2, 3), (1, 3)]

    Operands of one rank that do not broadcast are JAX's TypeError (named by ``name``, the
    primitive's); of several ranks, NumPy's broadcasting error (JAX's ValueError).
    """
    if len(args) == 2:  # (JAX's lax: a scalar meeting a reduced operand is made reduced)
        args = _placement.insert_reduced_reshard(*args)
    shapes = [shape_of(a) for a in args]
    nonscalar = {s for s in shapes if s != ()}
    if len(nonscalar) <= 1:
        return list(args)  # equal shapes, or 0-d operands meeting one shape: nothing to do
    ranks = {len(s) for s in shapes}
    if len(ranks) == 1:  # (operands of one rank: as JAX's, the primitive's TypeError if they do not fit)
        for sizes in zip(*shapes):
            if len({d for d in sizes if d != 1}) > 1:
                raise TypeError(
                    f"{name} got incompatible shapes for broadcasting: {', '.join(map(str, shapes))}."
                )
        return list(args)
    ranks = {len(s) for s in nonscalar}
    if len(ranks) > 1 and _flags["rank_promotion"] != "allow":
        _rank_promotion(shapes, name)
    rank = len(broadcast_shapes(*shapes))  # (checks that the shapes broadcast, with JAX's ValueError)
    if len(ranks) == 1:
        return list(args)
    return [
        a
        if len(s) == rank
        else st.broadcast_in_dim_p.bind(
            asarray(a),
            shape=(1,) * (rank - len(s)) + s,
            broadcast_dimensions=tuple(range(rank - len(s), rank)),
        )
        for a, s in zip(args, shapes)
    ]


def broadcast_full(*args) -> list:
    """Broadcast every operand to the common shape, 0-d ones included."""
    shape = broadcast_shapes(*[shape_of(a) for a in args])
    return [broadcast_to(a, shape) for a in args]


def elementwise(prim, *args):
    """Promote (NEP 50) and rank-promote, then bind an n-ary elementwise primitive (which
    broadcasts size-1 dimensions itself)."""
    try:
        promoted = promote_args(*args)
    except (TypeError, ValueError):
        if extended_in(args) is not None:  # typed PRNG keys are not numbers: JAX's TypeError
            raise extended_op_error(prim.name, args) from None
        raise
    return prim.bind(*rank_promote(*promoted, name=prim.name))


def elementwise_inexact(prim, *args):
    """Like ``elementwise``, computing integers and bools in the default float."""
    try:
        promoted = promote_args_inexact(*args)
    except (TypeError, ValueError):
        if extended_in(args) is not None:
            raise extended_op_error(prim.name, args) from None
        raise
    return prim.bind(*rank_promote(*promoted, name=prim.name))


def select(pred, on_true, on_false):
    """``where(pred, on_true, on_false)`` on operands of one dtype; broadcasts all three.

    Used by compositions that must not promote (the values already have the right dtype).

    As JAX's ``jnp.where`` (which JAX's compositions call where funcgrad's call this): an empty
    result is ``on_true`` broadcast, no select built, so no derivative flows from ``on_false`` --
    ``jvp`` of ``hypot`` or ``nn.sparse_plus`` of an empty array has a zero tangent in jax, and an
    operation after it without a derivative rule (``nextafter``, ``pmax``) is not differentiated.
    """
    pred, on_true, on_false = broadcast_args(pred, on_true, on_false)
    shape = broadcast_shapes(shape_of(pred), shape_of(on_true), shape_of(on_false))
    if shape_of(on_true) != shape:
        on_true = broadcast_to(on_true, shape)
    if 0 in shape:  # (weak only where both cases are, as the promotion before JAX's where)
        t = aval(on_true)
        return convert(on_true, t.dtype) if t.weak_type and not aval(on_false).weak_type else on_true
    if shape_of(on_false) != shape:
        on_false = broadcast_to(on_false, shape)
    out = ew.select_n_p.bind(pred, on_false, on_true)
    # Eager evaluation makes a result weak only when every operand is (the predicate included);
    # select_n's abstract evaluation, and JAX, look at the cases only: where(c, 0.0, inf) is weak.
    if type(out) is Array and not out.weak_type and aval(on_true).weak_type and aval(on_false).weak_type:
        out = Array._from_owned(out._numpy(), True)
    return out


def full_like_aval(x, value):
    """A constant of ``x``'s shape and dtype (a concrete Array, so it folds into programs)."""
    a = aval(x)
    return constant(value, a.dtype, a.shape)


def call_custom(custom, *args):
    """Call a ``custom_jvp`` function, or, when nothing is being transformed (eager evaluation of
    concrete values), its primal function directly: its rule is irrelevant then, and tracing the
    primal to a jaxpr on every eager call would cost more than evaluating it."""
    if type(core.current_trace()) is core.EvalTrace and not any(isinstance(a, core.Tracer) for a in args):
        return custom.fun(*args)
    return custom(*args)
