"""Array creation in funcgrad.numpy: zeros, ones, full, arange, linspace, eye, tri, meshgrid, ...

Layer: surface. Imports ``funcgrad.numpy._core``, ``ufuncs`` and the primitive catalog
(``transcendental`` imports this module).

Shapes are static (Python ints), so creation functions whose values depend only on shapes return
concrete Arrays computed by NumPy; under ``jit``/``make_jaxpr`` the filled ones (``zeros``,
``ones``, ``full``, ``*_like``) are instead a ``broadcast_in_dim`` of the scalar staged into the
program, as JAX stages them (no array-sized constant is captured, and the jaxpr reads as JAX's),
and ``arange``, ``eye``/``identity``, ``tri`` and ``linspace``'s steps are JAX's ``iota``
equations: XLA folds those after its algebraic rewrites, where a constant array is folded before
them (a division by it became a multiplication by reciprocals, a last bit from jax's). Eager
``linspace`` is one compiled program, as JAX's jitted one (XLA's last bits). Functions whose
*values* may be traced (``full``, ``linspace``, ``tril``...) are compositions of primitives and are
differentiable in those values.
"""

from __future__ import annotations

import functools

import numpy as np

from funcgrad import _placement, _transfer_guard
from funcgrad._placement import (  # JAX 0.10's explicit sharding
    Mesh,
    placed_in_context,
    sharded_like,
    takes_out_sharding,
)
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import extended as _ext
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.caches import bounded_put, register_cache
from funcgrad.kernel.dtypes import python_scalar_types
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.partial_eval import trace_to_jaxpr, under_staging
from funcgrad.kernel.values import get_aval
from funcgrad.numpy._core import (
    as_fill,
    asarray,
    aval,
    broadcast_shapes,
    broadcast_to,
    canonicalize_dtype,
    check_user_dtype,
    concrete_int,
    constant,
    constant_like,
    convert,
    is_array,
    normalize_axis,
    place_on,
    promote_args,
    select,
    shape_of,
    static_shape,
)
from funcgrad.numpy._dtypes import ExtendedArray, _is_extended, keys_by_word
from funcgrad.numpy.ufuncs import power
from funcgrad.primitives import complex as cx
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import structure as st
from funcgrad.primitives._rules import size_extremum
from funcgrad.primitives.call import jit_p

__all__ = [
    "arange",
    "empty",
    "empty_like",
    "eye",
    "full",
    "full_like",
    "geomspace",
    "identity",
    "indices",
    "linspace",
    "logspace",
    "meshgrid",
    "ones",
    "ones_like",
    "tri",
    "tril",
    "triu",
    "zeros",
    "zeros_like",
]


def _shape(shape) -> tuple[int, ...]:
    shape = static_shape(shape)
    if any(s < 0 for s in shape):
        # (JAX's type: a TypeError, as for every invalid shape)
        raise TypeError(
            f"negative dimensions are not allowed: shape must have every element be nonnegative, got {shape}"
        )
    return shape


def _honours_device(fn, *, ignored_in_jit: bool = False):
    """``fn`` with its ``device=`` argument (a device or a sharding, the Array API's) applied to
    the result (``place_on``). With ``ignored_in_jit`` (the fills, JAX's ``lax.full``), a device or
    a sharding over devices is ignored inside a staged program, as JAX's: its fill is traced
    there, and ``full`` places only a concrete fill (its docstring: "sharding will currently be
    ignored in jitted mode"); a sharding over an abstract mesh still types the result."""

    @functools.wraps(fn)
    def placed(*args, device=None, **kwargs):
        out = fn(*args, **kwargs)
        if device is not None and ignored_in_jit and under_staging(core.current_trace()):
            mesh = getattr(device, "mesh", None)
            if mesh is None or isinstance(mesh, Mesh):
                device = None
        if device is None:
            return placed_in_context(out)  # (on the mesh set_mesh set: NOTE: [placement in context])
        if isinstance(out, tuple):  # (linspace's retstep=True: the samples and the step)
            return tuple(place_on(o, device, fn.__name__) for o in out)
        return _strong(place_on(out, device, fn.__name__))

    return takes_out_sharding(placed)


_fills_device = functools.partial(_honours_device, ignored_in_jit=True)


def _strong(out):
    """A placed concrete value of a creation function is strongly typed, as JAX builds it for a
    concrete sharding (``make_array_from_callback``): ``full(3, 2.0, device=d)`` and
    ``zeros_like(weak, device=d)`` are not weak there (a traced one stays weak, as JAX's)."""
    if type(out) is Array and out.weak_type:
        return ew.convert_element_type(out, out.dtype, weak_type=False)
    return out


# NOTE: [transfer guard]: the public creation functions' wrappers (this file's and
# ``takes_out_sharding``'s), skipped when asking whether the user called one.
_WRAPPERS = (__file__, _placement.__file__)


def _filled(shape, value, dtype, weak: bool = False):
    """``shape`` filled with the scalar ``value``: computed by NumPy eagerly; under a staging trace
    a ``broadcast_in_dim`` of the scalar (see the module docstring)."""
    if shape and under_staging(core.current_trace()):
        return st.broadcast_in_dim(Array._from_owned(np.asarray(value, dtype), weak), shape, ())
    if _transfer_guard.state.host_to_device:  # NOTE: [transfer guard]: JAX transfers the fill value
        _transfer_guard.eager_host_value(np.asarray(value, dtype), _WRAPPERS)
    return Array._from_owned(np.full(shape, value, dtype), weak)


def _keys_filled(shape, value, dtype):
    """An array of the extended dtype ``dtype`` and ``shape``: for a library's, its rules' ``full``;
    typed PRNG keys of the key dtype ``dtype``: ``value`` keys
    broadcast, or keys whose data words all hold the number ``value`` (JAX's ``zeros``/``ones``/
    ``full`` of a key dtype: ``full((2,), 100, dtype=key.dtype)`` is keys of data ``[100, 100]``)."""
    if _ext.is_extended(dtype):  # a library's extended dtype: its rules' full (NOTE: [extended dtypes])
        return _ext.rules(dtype, "full")(shape, value, dtype)
    if isinstance(value, ExtendedArray):
        if value.dtype != dtype:
            raise TypeError(f"full: a fill value of dtype {value.dtype} for keys of dtype {dtype}")
        return broadcast_to(value, shape)
    keys_aval = dtype.aval_type(shape, dtype)
    (data,) = keys_aval.lo_ty()  # the keys' raw data: uint32[*shape, *key_shape]
    return keys_aval.raise_val(_filled(tuple(data.shape), np.asarray(value, data.dtype), data.dtype))


def _check_shape_tuple(name: str, shape, dtype) -> None:
    # ``zeros(2, 3)``: JAX's hint for a shape given as two arguments (its words)
    if isinstance(dtype, int) and isinstance(shape, int):
        raise TypeError(
            f"Cannot interpret '{dtype}' as a data type.\n\nDid you accidentally write "
            f"`jax.numpy.{name}({shape}, {dtype})` when you meant `jax.numpy.{name}(({shape}, {dtype}))`, "
            "i.e. with a single tuple argument for the shape?"
        )


def _dtype(dtype, fun_name: str) -> np.dtype:
    # (the default is read at call time: it is the current mode's, NOTE: [x64 mode])
    return _dt.default_float if dtype is None else check_user_dtype(dtype, fun_name)


@_fills_device
def zeros(shape, dtype=None, *, device=None):
    """An Array of zeros (float64 by default).

    >>> zeros((2, 3)).shape, zeros(2, int).dtype
    ((2, 3), dtype('int64'))
    """
    _check_shape_tuple("zeros", shape, dtype)
    if _is_extended(dtype):  # typed PRNG keys of zero data (JAX's)
        return _keys_filled(_shape(shape), 0, dtype)
    return _filled(_shape(shape), 0, _dtype(dtype, "zeros"))


@_fills_device
def ones(shape, dtype=None, *, device=None):
    """An Array of ones (float64 by default).

    >>> ones(3).tolist()
    [1.0, 1.0, 1.0]
    """
    _check_shape_tuple("ones", shape, dtype)
    if _is_extended(dtype):
        return _keys_filled(_shape(shape), 1, dtype)
    return _filled(_shape(shape), 1, _dtype(dtype, "ones"))


@_fills_device
def empty(shape, dtype=None, *, device=None):
    """Like ``zeros`` (Arrays are immutable, so there is nothing to leave uninitialised).

    >>> empty(2).tolist()
    [0.0, 0.0]
    """
    _check_shape_tuple("empty", shape, dtype)
    return zeros(shape, dtype)


@_fills_device
def full(shape, fill_value, dtype=None, *, device=None):
    """An Array of ``shape`` filled with ``fill_value`` (which may be an array that broadcasts).

    >>> full((2,), 7).tolist()
    [7, 7]
    >>> full((2, 2), np.array([1.0, 2.0])).tolist()
    [[1.0, 2.0], [1.0, 2.0]]
    """
    shape = _shape(shape)
    if _is_extended(dtype) or (isinstance(fill_value, ExtendedArray) and dtype is None):
        return _keys_filled(shape, fill_value, fill_value.dtype if dtype is None else dtype)
    value = asarray(fill_value) if dtype is None else as_fill(fill_value, check_user_dtype(dtype, "full"))
    if not isinstance(value, Array) or value.ndim:
        return broadcast_to(value, shape)
    return _filled(shape, value._numpy(), value.dtype, value.weak_type)


def _like(a, dtype, shape, fun_name=None):
    try:
        a_aval = aval(a)
    except TypeError:  # as in JAX, any value with a shape and a dtype (a ShapeDtypeStruct) will do
        if not (hasattr(a, "shape") and hasattr(a, "dtype")):
            raise
        out_shape = tuple(a.shape) if shape is None else _shape(shape)
        return (
            out_shape,
            canonicalize_dtype(a.dtype) if dtype is None else check_user_dtype(dtype, fun_name),
            False,
        )
    out_shape = a_aval.shape if shape is None else _shape(shape)
    out_dtype = a_aval.dtype if dtype is None else check_user_dtype(dtype, fun_name)
    weak = a_aval.weak_type and dtype is None
    return out_shape, out_dtype, weak


@_fills_device
def zeros_like(a, dtype=None, shape=None, *, device=None):
    """Zeros with the shape and dtype of ``a``.

    >>> zeros_like(np.array([1, 2])).tolist()
    [0, 0]
    """
    if isinstance(a, ExtendedArray) and dtype is None:  # typed PRNG keys: keys of zero data, as JAX's
        return a._numpy_function(zeros_like, (a,), {"shape": shape})
    shape, dtype, weak = _like(a, dtype, shape, "zeros_like")
    return hooks.vary_like(sharded_like(_filled(shape, 0, dtype, weak), a), a)


@_fills_device
def ones_like(a, dtype=None, shape=None, *, device=None):
    """Ones with the shape and dtype of ``a``.

    >>> ones_like(np.array([1.5, 2.5])).tolist()
    [1.0, 1.0]
    """
    if isinstance(a, ExtendedArray) and dtype is None:
        return a._numpy_function(ones_like, (a,), {"shape": shape})
    shape, dtype, weak = _like(a, dtype, shape, "ones_like")
    return hooks.vary_like(sharded_like(_filled(shape, 1, dtype, weak), a), a)


@_fills_device
def empty_like(prototype, dtype=None, shape=None, *, device=None):
    """Like ``zeros_like``.

    >>> empty_like(np.ones(2)).tolist()
    [0.0, 0.0]
    """
    return zeros_like(prototype, dtype, shape)


@_fills_device
def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
    """``fill_value`` with the shape and dtype of ``a``.

    >>> full_like(np.array([1, 2]), 5).tolist()
    [5, 5]
    """
    if isinstance(a, ExtendedArray) and dtype is None:  # typed PRNG keys (JAX's)
        return _keys_filled(a.shape if shape is None else _shape(shape), fill_value, a.dtype)
    shape, dtype, weak = _like(a, dtype, shape, "full_like")
    if is_array(fill_value) and not isinstance(fill_value, Array):
        return hooks.vary_like(sharded_like(broadcast_to(convert(fill_value, dtype), shape), a), a)
    return hooks.vary_like(sharded_like(_filled(shape, np.asarray(fill_value), dtype, weak), a), a)


# ----------------------------------------------------------------------------------------------
# Ranges


def _static_scalar(x, what):
    if x is None or type(x) in python_scalar_types:
        return x
    value = x._numpy() if isinstance(x, Array) else None
    if value is None and not is_array(x):
        value = np.asarray(x)
    if value is None:  # (jax's type and words for a traced arange bound)
        raise core.ConcretizationTypeError(
            f"Abstract tracer value encountered where concrete value is expected: arange's {what} must be "
            f"concrete (a Python number or a concrete array), got a traced value {aval(x).str_short()}.\n"
            f"It arose in the jnp.arange argument '{what}'. arange's length must be static: use "
            "jit(..., static_argnums=...), or linspace, whose endpoints may be traced."
        )
    if value.ndim:
        raise ValueError(f"arange's {what} must be a scalar, got shape {value.shape}")
    return value[()]


@_honours_device
def arange(start, stop=None, step=None, dtype=None, *, device=None):
    """Evenly spaced values in ``[start, stop)`` with NumPy's dtype rules.

    >>> arange(3).tolist(), arange(1.0, 2.0, 0.5).tolist()
    ([0, 1, 2], [1.0, 1.5])
    """
    if any(getattr(v, "traced", False) for v in (start, stop, step)):
        start, stop, step = _symbolic_arange(start, stop, step)
    # (a lone argument is the stop, as JAX's error names it)
    start = _static_scalar(start, "start" if stop is not None else "stop")
    stop = _static_scalar(stop, "stop")
    step = _static_scalar(step, "step")
    if any(np.iscomplexobj(v) for v in (start, stop, step) if v is not None):  # (JAX's error)
        raise ValueError("Passing complex start/stop/step to jnp.arange is no longer supported")
    if dtype is None:
        dtype = np.result_type(*(v for v in (start, stop, step) if v is not None))
        if isinstance(start, int) and dtype.kind == "i":
            dtype = _dt.default_int
        dtype = canonicalize_dtype(dtype)
    else:
        dtype = check_user_dtype(dtype, "arange")
    if under_staging(core.current_trace()):
        return _arange_staged(start, stop, step, np.dtype(dtype))
    return Array._from_owned(_arange_values(start, stop, step, np.dtype(dtype)))


def _symbolic_arange(start, stop, step):
    """JAX's arange of sizes a symbolic export traces (its ``_arange_dynamic``; NOTE: [symbolic
    comparisons at sample sizes] in funcgrad/export/_polymorphic.py): every bound an integer, the
    step's sign decided for every size, and the element count computed as JAX's,
    ``max(0, distance + gap - 1) // gap``, so that the export writes it (``floordiv(b + 9, b)`` for
    ``arange(0, 10, b)``). The bounds come back as ints for the sample's arange."""
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    if any(not isinstance(v, int | np.integer) or isinstance(v, bool) for v in (start, stop, step)):
        shown = [getattr(v, "expr", v) for v in (start, stop, step)]
        raise ValueError(  # (JAX's words)
            "In arange with non-constant arguments all of start, stop, and step must be either dimension "
            f"expressions or integers: start={shown[0]}, stop={shown[1]}, step={shown[2]}"
        )
    if step == 0:
        raise ValueError("arange has step == 0")
    try:
        up = step.decide(0, ">") if hasattr(step, "decide") else step > 0
    except core.InconclusiveDimensionOperation as e:
        raise type(e)(
            f"In arange with non-constant arguments the step ({getattr(step, 'expr', step)}) must be "
            f"resolved statically if it is > 0 or < 0.\nDetails: {e}"
        ) from None
    gap = step if up else -step
    distance = (stop - start) if up else (start - stop)
    size_extremum(0, distance + gap - 1, "max") // gap  # (the traced size records its expression)
    return int(start), int(stop), int(step)


def _arange_staged(start, stop, step, dtype):
    """JAX's arange under a staging trace: an ``iota`` (times ``step``, plus ``start``), which XLA
    folds after its algebraic rewrites -- a constant array there would be folded first (``x / (1.5
    + arange(4))`` became a multiplication by reciprocals, 1 ulp from jax's division). The same
    values as ``_arange_values``."""
    if dtype.kind == "c":  # (funcgrad's iota is real: the real one, converted; the same values)
        real = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
        start, stop, step = (None if v is None else np.asarray(v).real.item() for v in (start, stop, step))
        return convert(_arange_staged(start, stop, step, real), dtype)
    start, size, working = _arange_plan(start, stop, step, dtype)
    if step is None:
        iota = st.broadcasted_iota(dtype, (size,), 0)
        return iota if start == 0 else ew.add_p.bind(_convert_saturating(start, dtype)[()], iota)
    iota = st.broadcasted_iota(working, (size,), 0)
    scaled = ew.mul_p.bind(_convert_saturating(step, working)[()], iota)
    return convert(ew.add_p.bind(_convert_saturating(start, working)[()], scaled), dtype)


def _convert_saturating(v, to):  # (XLA's float-to-int conversion saturates; NaN gives 0)
    v = np.asarray(v)
    if to.kind in "iu" and v.dtype.kind == "f":
        info = np.iinfo(to)
        v = np.nan_to_num(np.clip(v, info.min, info.max), nan=0)
    return v.astype(to)


def _arange_values(start, stop, step, dtype):
    """JAX's arange values (NumPy's differ): start and step converted to the dtype first (an int
    dtype truncates them: ``arange(-3, 3, 0.5, dtype=int)`` repeats -3), then ``start + step * i``
    in that dtype (float32 for half floats), ``ceil((stop - start) / step)`` of them."""
    with np.errstate(all="ignore"):
        start, size, working = _arange_plan(start, stop, step, dtype)
        if step is None:
            return (_convert_saturating(start, dtype) + np.arange(size).astype(dtype)).astype(dtype)
        iota = np.arange(size).astype(working)
        return (_convert_saturating(start, working) + _convert_saturating(step, working) * iota).astype(dtype)


def _arange_plan(start, stop, step, dtype):
    """``start`` (0 when ``stop`` is None), the element count, and the type the steps are taken in
    (float32 for half floats) of JAX's arange: the staged and NumPy routes' shared first step."""
    if stop is None:
        start, stop = 0, start
    if step is None:
        return start, max(0, int(np.ceil(stop - start))), dtype
    working = np.dtype(np.float32) if _dt.is_float(dtype) and dtype.itemsize < 4 else dtype
    return start, max(0, int(np.ceil((stop - start) / step))), working


@_honours_device
def linspace(
    start,
    stop,
    num: int = 50,
    endpoint: bool = True,
    retstep: bool = False,
    dtype=None,
    axis: int = 0,
    *,
    device=None,
):
    """``num`` evenly spaced values from ``start`` to ``stop``; differentiable in both ends.

    >>> linspace(0.0, 1.0, 5).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    >>> linspace(np.array([0.0, 1.0]), 2.0, 3, axis=1).shape
    (2, 3)
    """
    num = concrete_int(num, "linspace's num")
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    if not under_staging(core.current_trace()) and not any(
        isinstance(v, list | tuple) for v in (start, stop)
    ):
        # Outside a staged program, one compiled program, as JAX's jitted _linspace: XLA's
        # arithmetic (its folding of iota / div, its fused multiply-adds) gives jax's bits eagerly.
        return _compiled_linspace(start, stop, num, endpoint, retstep, dtype, axis)
    return _linspace(start, stop, num, endpoint, retstep, dtype, axis)


def _linspace(start, stop, num, endpoint, retstep, dtype, axis):
    """linspace's computation (``num`` checked): staged as JAX's under a trace, the body of the
    compiled program outside one."""
    start, stop = promote_args(start, stop)
    # (the operands' inexact type, as JAX's to_inexact_dtype: not a promotion 'strict' refuses)
    compute_dtype = _dt.inexact_of(start.dtype)
    out_dtype = compute_dtype if dtype is None else check_user_dtype(dtype, "linspace")
    if dtype is not None:
        # JAX computes in the requested dtype's inexact type (float16 for float16, the default
        # float for an integer dtype), so retstep's step has that dtype too.
        compute_dtype = _dt.inexact_of(out_dtype)
    start, stop = convert(start, compute_dtype), convert(stop, compute_dtype)
    bshape = broadcast_shapes(shape_of(start), shape_of(stop))
    start, stop = broadcast_to(start, bshape), broadcast_to(stop, bshape)
    div = (num - 1) if endpoint else num
    delta = ew.sub_p.bind(stop, start)
    step = (
        ew.div_p.bind(delta, constant(div, compute_dtype))
        if div > 0
        else constant(np.nan, compute_dtype)  # (a 0-d NaN, as NumPy's and JAX's)
    )
    # JAX's formula (its bits, in float16 too): start * (1 - t) + stop * t for t = i / div, rounded
    # in the dtype's real type then in the computation's, with stop appended when endpoint.
    rows = div if num > 1 else min(num, 1)
    full_shape = (rows, *bshape)
    lead = tuple(range(1, len(full_shape)))
    y = st.broadcast_in_dim(start, full_shape, lead)
    if num > 1:
        real = np.real(np.zeros((), compute_dtype)).dtype
        column = (rows,) + (1,) * len(bshape)
        if under_staging(core.current_trace()):  # (JAX's iota / div, see arange)
            t = ew.div_p.bind(st.broadcasted_iota(real, column, 0), constant(div, real))
            t = convert(t, compute_dtype)
            one_minus_t = ew.sub_p.bind(constant(1, compute_dtype), t)
        else:
            t = constant((np.arange(div, dtype=real) / np.asarray(div, real)).reshape(column), compute_dtype)
            one_minus_t = constant(
                (np.ones((), compute_dtype) - np.asarray(t)).astype(compute_dtype), compute_dtype
            )
        y = ew.add_p.bind(
            ew.mul_p.bind(y, broadcast_to(one_minus_t, full_shape)),
            ew.mul_p.bind(st.broadcast_in_dim(stop, full_shape, lead), broadcast_to(t, full_shape)),
        )
        if endpoint:
            y = st.concatenate([y, st.broadcast_in_dim(stop, (1, *bshape), lead)], 0)
    full_shape = (num, *bshape)
    if axis != 0:
        y = st.moveaxis(y, 0, normalize_axis(axis, len(full_shape)))
    if np.dtype(out_dtype).kind in "iu":
        y = ew.floor_p.bind(y)  # (y is of the inexact computation dtype)
    y = convert(y, out_dtype)
    return (y, step) if retstep else y


def _compiled_linspace(start, stop, num, endpoint, retstep, dtype, axis):
    """Eager linspace as one compiled call (``jit_p``, run by the bridge's ``jit_impl``, NOTE:
    [kernel registration]) of ``_linspace`` staged for the ends' abstract values, as JAX's jitted
    _linspace: the same program for new end values."""
    start, stop = (x if isinstance(x, Array) else asarray(x) for x in (start, stop))
    key = (get_aval(start), get_aval(stop), num, endpoint, retstep, dtype, axis)
    closed = _linspace_jaxprs.get(key)
    if closed is None:
        closed = trace_to_jaxpr(
            lambda a, b: list(tu.tree_leaves(_linspace(a, b, num, endpoint, retstep, dtype, axis))),
            key[:2],
            description="linspace",
        )
        bounded_put(_linspace_jaxprs, key, closed, 256)
    out = jit_p.bind(start, stop, jaxpr=closed, name="linspace", donated_invars=(False, False))
    return tuple(out) if retstep else out[0]


# (start aval, stop aval, num, endpoint, retstep, dtype, axis) -> linspace's staged program
_linspace_jaxprs: dict = register_cache("numpy.linspace_programs", {})


def logspace(start, stop, num: int = 50, endpoint: bool = True, base=10.0, dtype=None, axis: int = 0):
    """``base ** linspace(start, stop, num)``.

    >>> logspace(0.0, 2.0, 3).tolist()
    [1.0, 10.0, 100.0]
    """
    y = linspace(start, stop, num, endpoint, dtype=None, axis=axis)
    out = (
        power(base, y)
        if not is_array(base) or shape_of(base) == ()
        else power(_expand_base(base, y, axis), y)
    )
    return out if dtype is None else convert(out, check_user_dtype(dtype, "logspace"))


def _expand_base(base, y, axis):
    base = asarray(base)
    axis = normalize_axis(axis, len(shape_of(y)))
    return st.expand_dims(base, (axis,))


def _log10(x):
    # jnp.log10 (transcendental's, which imports this module): log(x) times log10(e), each part
    k = constant(np.log10(np.e), _dt.real_dtype(aval(x).dtype))
    r = ew.log_p.bind(x)
    if aval(x).dtype.kind != "c":
        return ew.mul_p.bind(r, k)
    return cx.complex_p.bind(ew.mul_p.bind(cx.real_p.bind(r), k), ew.mul_p.bind(cx.imag_p.bind(r), k))


def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0):
    """``num`` values spaced evenly on a log scale from ``start`` to ``stop``: JAX's formula,
    ``sign(start) * logspace(log10(start / sign), log10(stop / sign))``, so endpoints are not
    replaced by the exact inputs (NumPy's), and a zero start or endpoints of opposite signs give
    NaN throughout, as in JAX.

    >>> geomspace(1.0, 1000.0, 4).round(12).tolist()
    [1.0, 10.0, 100.0, 1000.0]
    >>> geomspace(-1.0, -100.0, 3).tolist()
    [-1.0, -10.0, -100.0]
    """
    start, stop = promote_args(start, stop)
    out_dtype = _dt.inexact_of(start.dtype) if dtype is None else check_user_dtype(dtype, "geomspace")
    compute_dtype = _dt.inexact_of(out_dtype)
    start, stop = convert(start, compute_dtype), convert(stop, compute_dtype)
    sign = ew.sign_p.bind(start)
    log_start, log_stop = _log10(ew.div_p.bind(start, sign)), _log10(ew.div_p.bind(stop, sign))
    y = logspace(log_start, log_stop, num, endpoint, dtype=compute_dtype, axis=0)
    full_shape = shape_of(y)
    lead = tuple(range(len(full_shape) - len(shape_of(sign)), len(full_shape)))
    y = ew.mul_p.bind(st.broadcast_in_dim(sign, full_shape, lead), y)
    if axis != 0:  # (num == 0 too: the empty axis goes where asked, as JAX's)
        y = st.moveaxis(y, 0, normalize_axis(axis, len(full_shape)))
    return convert(y, out_dtype)


# ----------------------------------------------------------------------------------------------
# Matrices


@_honours_device
def eye(N, M=None, k: int = 0, dtype=None, *, device=None):
    """A 2-D Array with ones on the ``k``-th diagonal.

    >>> eye(2, 3, k=1).tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    N = concrete_int(N, "eye's N", TypeError)  # (a dimension: jax's TypeError when traced)
    M = N if M is None else concrete_int(M, "eye's M", TypeError)
    if type(k) is int:  # (JAX clips a Python int offset to int32's range: eye(4, k=2**100) is zeros)
        k = min(max(k, -(2**31)), 2**31 - 1)
    if isinstance(k, core.Tracer) or under_staging(core.current_trace()):  # (JAX's iotas, see arange)
        return _offset_mask(N, M, k, ew.eq_p, _dtype(dtype, "eye"))
    _ask_offset(k)
    return Array._from_owned(np.eye(N, M, concrete_int(k, "eye's k"), dtype=_dtype(dtype, "eye")))


def _ask_offset(k) -> None:
    # NOTE: [transfer guard]: JAX's eager eye/tri take the diagonal offset as an int32 argument
    if _transfer_guard.state.host_to_device and not isinstance(k, Array):
        _transfer_guard.eager_host_value(np.int32(k), _WRAPPERS)


def _offset_mask(n, m, k, compare, dtype):
    """``compare(col - row, k)`` over an ``(n, m)`` grid, as ``dtype``: eye/tri of a traced diagonal
    offset ``k`` (JAX's take one), built from iotas."""
    k = convert(asarray(k), _dt.default_int)
    rows = st.broadcasted_iota(_dt.default_int, (n, m), 0)
    cols = st.broadcasted_iota(_dt.default_int, (n, m), 1)
    offset = ew.sub_p.bind(cols, rows)
    return convert(compare.bind(offset, st.broadcast_in_dim(k, (n, m), ())), np.dtype(dtype))


def identity(n, dtype=None):
    """The ``n x n`` identity matrix.

    >>> identity(2, int).tolist()
    [[1, 0], [0, 1]]
    """
    return eye(n, dtype=dtype)


def tri(N, M=None, k: int = 0, dtype=None):
    """Ones at and below the ``k``-th diagonal.

    >>> tri(2, 3).tolist()
    [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]
    """
    # (a traced N or M: JAX's TypeError for a traced shape)
    (N,) = static_shape(N, "tri's N")
    M = N if M is None else static_shape(M, "tri's M")[0]
    if dtype is None and _dt.jax_rules:
        # (JAX's tri defaults to float32 in either mode: NOTE: [JAX's dtype rules in 64-bit mode])
        dtype = np.float32
    if type(k) is int and _dt.jax_rules:
        asarray(k)  # (a Python int k past the default integer: JAX's OverflowError)
    if isinstance(k, core.Tracer) or under_staging(core.current_trace()):  # (as eye)
        return _offset_mask(N, M, k, ew.le_p, _dtype(dtype, "tri"))
    _ask_offset(k)
    return Array._from_owned(np.tri(N, M, concrete_int(k, "tri's k"), dtype=_dtype(dtype, "tri")))


def _triangle(m, k, lower: bool):
    m = asarray(m)
    if m.ndim == 0:
        raise ValueError("tril/triu need an array of at least 1 dimension")
    if m.ndim == 1:
        # NumPy treats a 1-D input as the rows of a square matrix.
        m = broadcast_to(m, (m.shape[0], m.shape[0]))
    n_rows, n_cols = m.shape[-2:]
    k = concrete_int(k, "the diagonal offset k")
    mask = np.tri(n_rows, n_cols, k, dtype=bool) if lower else ~np.tri(n_rows, n_cols, k - 1, dtype=bool)
    # (JAX's select(mask, m, zeros_like(m)): weak where m is)
    return select(broadcast_to(constant(mask, np.bool_), m.shape), m, constant_like(0, m))


@keys_by_word  # (typed PRNG keys: zero keys outside the triangle, JAX's per-word select)
def tril(m, k: int = 0):
    """The lower triangle of ``m`` (the last two axes); zeros above the ``k``-th diagonal.

    >>> tril(np.ones((2, 2))).tolist()
    [[1.0, 0.0], [1.0, 1.0]]
    """
    return _triangle(m, k, lower=True)


@keys_by_word
def triu(m, k: int = 0):
    """The upper triangle of ``m`` (the last two axes); zeros below the ``k``-th diagonal.

    >>> triu(np.ones((2, 2))).tolist()
    [[1.0, 1.0], [0.0, 1.0]]
    """
    return _triangle(m, k, lower=False)


# ----------------------------------------------------------------------------------------------
# Grids


def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy"):
    """Coordinate matrices from coordinate vectors (NumPy's ``meshgrid``).

    >>> [g.tolist() for g in meshgrid(np.array([1, 2]), np.array([3, 4, 5]))]
    [[[1, 2], [1, 2], [1, 2]], [[3, 3], [4, 4], [5, 5]]]
    """
    if not copy:
        raise ValueError("jax.numpy.meshgrid only supports copy=True")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
    args = [asarray(x) for x in xi]
    if any(len(shape_of(x)) != 1 for x in args):  # (JAX's: NumPy flattens them)
        raise ValueError(
            f"Arguments to jax.numpy.meshgrid must be 1D, got shapes {[shape_of(x) for x in args]}"
        )
    ndim = len(args)
    shapes = [x.shape[0] for x in args]
    if indexing == "xy" and ndim > 1:
        shapes[0], shapes[1] = shapes[1], shapes[0]
    outs = []
    for i, x in enumerate(args):
        axis = i
        if indexing == "xy" and ndim > 1 and i < 2:
            axis = 1 - i
        sparse_shape = [1] * ndim
        sparse_shape[axis] = x.shape[0]
        y = st.reshape(x, tuple(sparse_shape))
        outs.append(y if sparse else broadcast_to(y, tuple(shapes)))
    return outs


def indices(dimensions, dtype=int, sparse: bool = False):
    """The index grid of an array of shape ``dimensions`` (NumPy's ``indices``).

    >>> indices((2, 2)).tolist()
    [[[0, 0], [1, 1]], [[0, 1], [0, 1]]]
    """
    dimensions = _shape(dimensions)
    dtype = canonicalize_dtype(dtype)
    out = np.indices(dimensions, dtype=dtype, sparse=sparse)
    if sparse:
        return tuple(Array._from_owned(o) for o in out)
    return Array._from_owned(out)
