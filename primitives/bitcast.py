"""bitcast_convert_type: reinterpret the bits of an array as another dtype.

Layer: primitives. Imports only the funcgrad kernel and numpy.

As in XLA: equal bit widths keep the shape; converting to a narrower type appends a last
dimension of size ``old_bits // new_bits``; converting to a wider type consumes a last dimension
of size ``new_bits // old_bits``. Not differentiable (bits have no derivative).
"""

from __future__ import annotations

import numpy as np

from funcgrad.kernel.ad import defjvp_zero
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ShapedArray
from primitives._rules import aval_of, move_to_front


def _bits(dtype) -> int:
    return np.dtype(dtype).itemsize * 8


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


def _impl(x, *, new_dtype):
    x = np.asarray(x)
    if not x.flags.c_contiguous:
        x = x.copy()  # (np.ascontiguousarray would turn 0-d into 1-d)
    old, new = _bits(x.dtype), _bits(new_dtype)
    out = x.view(new_dtype)
    if old > new:
        return out.reshape(*x.shape, old // new)
    if old < new:
        return out.reshape(x.shape[:-1])
    return out


def _batch(axis_size, vals, dims, *, new_dtype):
    x = move_to_front(vals[0], dims[0])
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), 0


bitcast_convert_type_p = Primitive("bitcast_convert_type")
bitcast_convert_type_p.def_impl(_impl)
bitcast_convert_type_p.def_abstract_eval(_abstract_eval)
bitcast_convert_type_p.def_batch(_batch)
defjvp_zero(bitcast_convert_type_p)


def bitcast_convert_type(x, new_dtype):
    """Reinterpret the bits of ``x`` as ``new_dtype``.

    >>> import numpy as np
    >>> np.asarray(bitcast_convert_type(np.float32(1.0), np.uint32)).item() == 0x3F800000
    True
    """
    new_dtype = np.dtype(new_dtype)
    if aval_of(x).dtype == new_dtype:
        return x
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype)
