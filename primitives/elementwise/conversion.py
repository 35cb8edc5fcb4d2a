"""Elementwise dtype conversion and the identities: ``convert_element_type`` (with XLA's
float -> integer conversion eagerly too), ``stop_gradient`` (a zero derivative) and ``copy`` (a
new value), with their rules.

Layer: primitives. Imports the funcgrad kernel, numpy and the family's shared helpers
(``primitives._rules``). Part of the ``elementwise`` family (``primitives/elementwise/``): the
primitives that change a value's type or identity but not its numbers, which ``arithmetic`` uses
(abs's derivative converts) and so imports from here; nothing here needs arithmetic.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives._rules import aval_of

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import extended as _ext
from funcgrad.kernel.ad import Zero, defjvp_zero, deflinear, instantiate, linear_taylor
from funcgrad.kernel.array import Array
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ShapedArray

# ----------------------------------------------------------------------------------------------
# Dtype conversion


def _convert_impl(x, *, new_dtype, weak_type=False):
    if _ext.is_extended(new_dtype) or isinstance(x, _ext.EArray):
        return _edtype_impl(x, new_dtype)
    x = np.asarray(x)
    if x.dtype.kind == "c" and np.dtype(new_dtype).kind != "c":
        x = x.real  # complex -> real keeps the real part (as XLA does), without a ComplexWarning
    if _dt.kind(new_dtype) in "iu" and _dt.kind(x.dtype) == "f":
        return _float_to_int(x, np.dtype(new_dtype))
    return x.astype(new_dtype)


def _float_to_int(x, dtype):
    """XLA's float -> integer conversion, so eager results equal compiled ones: truncation toward
    zero, out-of-range values saturate at the type's limits, NaN gives 0 (NumPy's cast of those
    is undefined: 300.0 -> int8 wraps to 44 here)."""
    info = _dt.iinfo(dtype)
    hi, lo = float(info.max), float(info.min)
    x = x.astype(np.float64) if x.dtype.kind == "V" else x  # (ml_dtypes floats: compare as float64)
    above, below = x >= hi, x <= lo
    inside = np.where(np.isnan(x) | above | below, 0, x).astype(dtype)
    limits = np.where(above, np.array(info.max).astype(dtype), np.array(info.min).astype(dtype))
    return np.where(above | below, limits, inside).astype(dtype)


def _convert_abstract_eval(x, *, new_dtype, weak_type=False):
    if _ext.is_extended(new_dtype) or _ext.is_extended(x.dtype):
        return _edtype_abstract_eval(x, new_dtype)
    return ShapedArray(x.shape, new_dtype, weak_type)


# Conversions to and from a library's extended dtype (NOTE: [extended dtypes]): JAX's to_edtype and
# from_edtype, here the same primitive's (as JAX's before them); the representation is unchanged.


def _edtype_abstract_eval(x, new_dtype):
    old = x.dtype
    if _ext.is_extended(old) and _ext.is_extended(new_dtype):
        raise ValueError(
            f"cannot directly convert between extended dtypes: from {old} to {new_dtype}. Instead, "
            "convert to and from their representation dtypes"
        )
    edtype, other = (new_dtype, old) if _ext.is_extended(new_dtype) else (old, new_dtype)
    to = _ext.is_extended(new_dtype)
    rule = getattr(edtype._rules, "convert_to" if to else "convert_from", None)
    allowed = (
        (rule(other, edtype) if to else rule(edtype, other))
        if rule
        else getattr(edtype._rules, "allow_conversion", False)
    )
    if not allowed:
        raise ValueError(
            f"Cannot convert_element_type from {_dt.long_name(old)} to {_dt.long_name(new_dtype)}"
        )
    rep = _ext.physical_element_aval(edtype)
    if np.dtype(rep.dtype) != np.dtype(other):
        direction = "to extended dtype from" if to else "from extended dtype to"
        raise ValueError(
            f"can only convert {direction} its representation dtype, but tried to convert from "
            f"{_dt.long_name(old)} to {_dt.long_name(new_dtype)} which doesn't match the representation "
            f"type {_dt.long_name(rep.dtype)}."
        )
    if not to:
        return ShapedArray((*x.shape, *rep.shape), np.dtype(other))
    n = len(x.shape) - len(rep.shape)
    if n < 0 or tuple(x.shape[n:]) != tuple(rep.shape):
        raise ValueError(
            f"can only convert to extended dtype from an array of its representation type, but the extended "
            f"dtype {edtype} has a representation shape {rep.shape} while the given representation array has "
            f"shape {x.shape}"
        )
    return ShapedArray(x.shape[:n], edtype)


def _edtype_impl(x, new_dtype):
    aval = _edtype_abstract_eval(core.get_aval(x), new_dtype)
    if _ext.is_extended(new_dtype):
        return _ext.EArray(aval, x)
    return x._data


def _convert_jvp(primals, tangents, *, new_dtype, weak_type=False):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if type(t) is Zero or not _dt.is_inexact(new_dtype) or not _dt.is_inexact(aval_of(x).dtype):
        return out, Zero.from_primal_value(out)
    if _ext.is_extended(new_dtype) or _ext.is_extended(aval_of(x).dtype):
        # (a tangent of its tangent dtype, as JAX's to_edtype/from_edtype JVPs)
        tangent_dtype = _dt.tangent_dtype(new_dtype)
        same = tangent_dtype == aval_of(t).dtype
        return out, t if same else convert_element_type_p.bind(t, new_dtype=tangent_dtype)
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct, x, *, new_dtype, weak_type=False):
    old = x.aval
    if type(ct) is Zero:
        return [Zero(old)]
    if _ext.is_extended(old.dtype) or _ext.is_extended(new_dtype):  # (to its tangent dtype: JAX's rules)
        dtype = _dt.tangent_dtype(old.dtype)
        return [ct if dtype == aval_of(ct).dtype else convert_element_type_p.bind(ct, new_dtype=dtype)]
    return [convert_element_type_p.bind(ct, new_dtype=old.dtype, weak_type=old.weak_type)]


convert_element_type_p = Primitive("convert_element_type")
convert_element_type_p.def_traits(sparse="zero_preserving")
convert_element_type_p.def_impl(_convert_impl)
convert_element_type_p.def_abstract_eval(_convert_abstract_eval)
convert_element_type_p.def_jvp(_convert_jvp)
convert_element_type_p.def_transpose(_convert_transpose)
convert_element_type_p.def_traits(linear=True)
convert_element_type_p.def_batch(
    lambda axis_size, vals, dims, **params: (convert_element_type_p.bind(vals[0], **params), dims[0])
)
convert_element_type_p.weak_type_rule = lambda params: params["weak_type"]
# ``weak_type=True`` makes the result weak whatever the operand, eagerly as when staged.
convert_element_type_p.weak_type_of = lambda params, args: params.get("weak_type", False)
convert_element_type_p.def_taylor(linear_taylor(convert_element_type_p))  # (linear in its inexact operands)


def convert_element_type(x, dtype, weak_type: bool = False):
    """Convert ``x`` to ``dtype`` (a no-op, not an equation, when nothing changes); in x32 mode a
    64-bit ``dtype`` is its 32-bit counterpart (NOTE: [x64 mode])."""
    aval = aval_of(x)
    if _ext.is_extended(dtype) or _ext.is_extended(aval.dtype):  # (NOTE: [extended dtypes])
        if aval.dtype == dtype:
            return x
        dtype = dtype if _ext.is_extended(dtype) else np.dtype(dtype)
        return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=False)
    dtype = np.dtype(dtype)
    if not _dt.x64_enabled and not _dt.explicit_x64_allowed:  # (NOTE: [x64 mode])
        dtype = _dt.canonical(dtype)
    if aval.dtype == dtype and aval.weak_type == weak_type and type(x) not in _dt.python_scalar_types:
        if _dt.x64_enabled or not _raw_wide_primal(x):
            return x
        # NOTE: [x64 mode]: a transformation's raw 64-bit NumPy primal is converted here, as JAX
        # binds the conversion for a concrete tracer (jvp of x.astype(float32) gives float32)
    if type(x) in _dt.python_scalar_types or isinstance(x, np.generic):
        # A constant scalar is converted now (JAX folds it: a jaxpr shows a literal of the new
        # type, not a conversion equation).
        return Array._from_owned(np.asarray(x).astype(dtype), weak_type)
    return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=weak_type)


convert = convert_element_type


def _raw_wide_primal(x) -> bool:
    """Whether ``x`` is a forward-mode tracer whose primal is, at bottom, a 64-bit NumPy value."""
    while isinstance(x, core.PrimalTracer):
        x = x.primal
    return isinstance(x, np.ndarray | np.generic) and x.dtype in _dt.TO_32


# ----------------------------------------------------------------------------------------------
# stop_gradient: the identity, with a zero derivative (PyTorch's no_grad / detach)

stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.def_traits(sparse="zero_preserving")
stop_gradient_p.def_impl(lambda x: x)
stop_gradient_p.def_abstract_eval(lambda x: x)
stop_gradient_p.def_batch(lambda axis_size, vals, dims: (stop_gradient_p.bind(vals[0]), dims[0]))
defjvp_zero(stop_gradient_p)


# ----------------------------------------------------------------------------------------------
# copy: the identity as a new value (JAX's ``copy_p``: ``jnp.array`` of a traced value stages it,
# so the copy is a value of its own, never the caller's object: NOTE: [primals as the caller gave
# them] maps objects, not values). Eagerly the result is a new Array over the same immutable data.

copy_p = Primitive("copy")
copy_p.def_impl(lambda x: x)
copy_p.def_abstract_eval(lambda x: x)
copy_p.def_batch(lambda axis_size, vals, dims: (copy_p.bind(vals[0]), dims[0]))
deflinear(copy_p, lambda ct, x: [copy_p.bind(instantiate(ct))])
copy_p.def_taylor(linear_taylor(copy_p))
copy_p.def_traits(sparse="zero_preserving_linear")
