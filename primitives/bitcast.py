"""The bit-level primitives: ``bitcast_convert_type`` reinterprets the bits of an array as another
dtype; ``reduce_precision`` rounds floats to a narrower exponent/mantissa format in place.

Layer: primitives. Imports only the funcgrad kernel, numpy and ml_dtypes.

As in XLA: equal bit widths keep the shape; converting to a narrower type appends a last
dimension of size ``old_bits // new_bits``; converting to a wider type consumes a last dimension
of size ``new_bits // old_bits``. Not differentiable (bits have no derivative).
``reduce_precision`` follows XLA's ReducePrecision bit for bit (tested against XLA).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from funcgrad.primitives._rules import aval_of, front_batch
from funcgrad.primitives.elementwise.conversion import convert_element_type

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import defjvp_zero, deflinear
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ShapedArray


def _bits(dtype) -> int:
    return _dt.bit_width(dtype)


def _abstract_eval(x: ShapedArray, *, new_dtype):
    old, new = _bits(x.dtype), _bits(new_dtype)
    if x.dtype == np.bool_ or np.dtype(new_dtype) == np.bool_:
        raise TypeError("bitcast_convert_type does not convert to or from bool")
    if old == new:
        return ShapedArray(x.shape, new_dtype)
    if old > new:
        return ShapedArray((*x.shape, old // new), new_dtype)
    if not x.shape or x.shape[-1] != new // old:
        raise TypeError(
            f"bitcast_convert_type: converting {x.str_short()} to the wider {np.dtype(new_dtype).name} "
            f"needs a last dimension of size {new // old}"
        )
    return ShapedArray(x.shape[:-1], new_dtype)


def _to_sub_byte(x, old: int, new: int, new_dtype: np.dtype) -> np.ndarray:
    """A narrowing bitcast to a sub-byte type (int4, uint2, ...), which NumPy stores one element
    per byte (a NumPy view would keep the count): each byte's bits in ``new``-bit fields, the low
    field first (XLA's order on a little-endian host), signed types sign-extended."""
    data = np.ascontiguousarray(x.reshape(1) if x.ndim == 0 else x).view(np.uint8)
    data = data.reshape(*x.shape, old // 8)
    fields = [(data >> np.uint8(new * i)) & np.uint8(2**new - 1) for i in range(8 // new)]
    out = np.stack(fields, axis=-1).reshape(*x.shape, old // new).astype(np.int16)
    if new_dtype.kind == "i":
        out = np.where(out >= 2 ** (new - 1), out - 2**new, out)
    return out.astype(new_dtype)


def _impl(x, *, new_dtype):
    x = np.asarray(x)
    if not x.flags.c_contiguous:
        x = x.copy()  # (np.ascontiguousarray would turn 0-d into 1-d)
    old, new = _bits(x.dtype), _bits(new_dtype)
    if old > new and new < 8 and old % 8 == 0:
        return _to_sub_byte(x, old, new, np.dtype(new_dtype))
    # (NumPy refuses a narrowing view of a 0-d array: view it as one element first)
    out = (x.reshape(1) if x.ndim == 0 else x).view(new_dtype)
    if old > new:
        return out.reshape(*x.shape, old // new)
    if old < new:
        return out.reshape(x.shape[:-1])
    return out.reshape(x.shape)  # (a 0-d operand keeps its shape: viewed as one element above)


bitcast_convert_type_p = Primitive("bitcast_convert_type")
bitcast_convert_type_p.def_impl(_impl)
bitcast_convert_type_p.def_abstract_eval(_abstract_eval)
bitcast_convert_type_p.def_batch(front_batch(bitcast_convert_type_p))
defjvp_zero(bitcast_convert_type_p)


def bitcast_convert_type(x, new_dtype):
    """Reinterpret the bits of ``x`` as ``new_dtype``.

    >>> import numpy as np
    >>> np.asarray(bitcast_convert_type(np.float32(1.0), np.uint32)).item() == 0x3F800000
    True
    """
    new_dtype = np.dtype(new_dtype)
    if aval_of(x).dtype == new_dtype:
        if not aval_of(x).weak_type:
            return x
        # (a bitcast's result is strong, as JAX's: only the weak type changes)
        return convert_element_type(x, new_dtype, weak_type=False)
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype)


# reduce_precision: round to a float format of fewer exponent and mantissa bits, kept in the
# operand's dtype (XLA's ReducePrecision). Integer arithmetic on the bit pattern, as XLA's emitter
# does it: round the mantissa to nearest (ties to even), then flush what the smaller exponent range
# cannot hold to signed zero or infinity; NaN stays NaN.
def _float_layout(dtype) -> tuple[int, int, np.dtype]:
    """(exponent bits, mantissa bits, unsigned type of the same width) of a float dtype."""
    info = ml_dtypes.finfo(dtype) if np.dtype(dtype).itemsize <= 2 else np.finfo(dtype)
    nbits = np.dtype(dtype).itemsize * 8
    return nbits - 1 - info.nmant, info.nmant, np.dtype(f"uint{nbits}")


def _reduce_precision_impl(x, *, exponent_bits, mantissa_bits):
    x = np.asarray(x)
    _check_reduce_precision(ShapedArray(x.shape, x.dtype), exponent_bits, mantissa_bits)
    src_exp, src_mant, uint = _float_layout(x.dtype)
    bits = np.ascontiguousarray(x).view(uint).copy()
    u = lambda v: uint.type(v)  # noqa: E731 - constants in the operand's unsigned type
    if mantissa_bits < src_mant:
        drop = src_mant - mantissa_bits
        last_kept = u(1 << drop)
        bias = ((bits & last_kept) >> u(drop)) + u((1 << (drop - 1)) - 1)  # ties to even
        bits = (bits + bias) & ~u((1 << drop) - 1)
    if exponent_bits < src_exp:
        sign = bits & u(1 << (x.dtype.itemsize * 8 - 1))
        exp_mask = u(((1 << src_exp) - 1) << src_mant)
        src_bias, new_bias = (1 << (src_exp - 1)) - 1, (1 << (exponent_bits - 1)) - 1
        exponent = bits & exp_mask
        bits = np.where(exponent > u((src_bias + new_bias) << src_mant), sign | exp_mask, bits)
        bits = np.where(exponent <= u((src_bias - new_bias) << src_mant), sign, bits)
    out = bits.astype(uint).view(x.dtype).reshape(x.shape)
    return np.where(np.isnan(x), x, out)  # XLA keeps NaN (rounding could carry it to a zero)


def _check_reduce_precision(aval, exponent_bits, mantissa_bits):
    # Called by the eager impl too: an eager bind does not run the abstract evaluation.
    if not _dt.is_float(aval.dtype):
        raise TypeError(f"reduce_precision takes a floating-point operand, got {aval.str_short()}")
    if exponent_bits < 1 or mantissa_bits < 0:
        raise ValueError(
            f"reduce_precision: exponent_bits must be >= 1 and mantissa_bits >= 0, got {exponent_bits} "
            f"and {mantissa_bits}"
        )


def _reduce_precision_abstract_eval(x: ShapedArray, *, exponent_bits, mantissa_bits):
    _check_reduce_precision(x, exponent_bits, mantissa_bits)
    return ShapedArray(x.shape, x.dtype, weak_type=x.weak_type)


reduce_precision_p = Primitive("reduce_precision")
reduce_precision_p.def_impl(_reduce_precision_impl)
reduce_precision_p.def_abstract_eval(_reduce_precision_abstract_eval)
reduce_precision_p.def_batch(
    lambda axis_size, vals, dims, **params: (reduce_precision_p.bind(vals[0], **params), dims[0])
)
# As in JAX: the tangent is rounded the same way (the operation is treated as linear).
deflinear(reduce_precision_p, lambda ct, x, **params: [reduce_precision_p.bind(ct, **params)])
