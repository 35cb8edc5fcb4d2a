"""The lexicographic order of complex values in StableHLO, shared by the rule modules that
compare complex operands (``max``/``min``, ``reduce_max``/``reduce_min``).

Layer: xla_bridge (compiler half). Imports numpy, the kernel's dtypes and ``xla_bridge.emitter``.

StableHLO's ``maximum``/``minimum``/``compare LT`` take no complex operands; NumPy and JAX order
complex numbers by real part, then imaginary part. ``max``/``min`` and their reductions pick as
JAX's lowering does (``complex_select``: the first operand where it compares larger/smaller, else
the second, so a NaN part propagates only where it comes second); the scatters and cumulative
scans still propagate a NaN as NumPy's ``maximum`` (``complex_pick``), as their eager impls do.
"""

from __future__ import annotations

import numpy as np
from funcgrad.xla_bridge.emitter import aval_type, tensor_type

from funcgrad.kernel import dtypes as _dt


def complex_compare(fb, direction: str, a: str, b: str, aval) -> str:
    """``a > b`` (``direction="GT"``) or ``a < b`` (``"LT"``) in the lexicographic order, for two
    complex operands of ``aval``: the real parts decide, ties are broken by the imaginary parts."""
    shape, dtype = tuple(aval.shape), np.dtype(aval.dtype)
    part = _dt.real_dtype(dtype)
    t_in, t_part = tensor_type(shape, dtype), tensor_type(shape, part)
    tb = tensor_type(shape, np.bool_)
    ra, rb, ia, ib = (
        fb.emit(f"stablehlo.{f} {v} : ({t_in}) -> {t_part}") for f in ("real", "imag") for v in (a, b)
    )
    real_eq = fb.compare("EQ", ra, rb, part, shape)
    real_cmp = fb.compare(direction, ra, rb, part, shape)
    imag_cmp = fb.compare(direction, ia, ib, part, shape)
    return fb.emit(f"stablehlo.select {real_eq}, {imag_cmp}, {real_cmp} : {tb}, {tb}")


def complex_select(fb, direction: str, a: str, b: str, aval) -> str:
    """JAX's complex ``max``/``min`` (its ``mlir._minmax_hlo``): ``a`` where it is the larger
    (``direction="GT"``) or smaller (``"LT"``) of two complex operands of ``aval`` in the
    lexicographic order, else ``b`` (a comparison with a NaN part is false: ``b``)."""
    tb = tensor_type(tuple(aval.shape), np.bool_)
    lex = complex_compare(fb, direction, a, b, aval)
    return fb.emit(f"stablehlo.select {lex}, {a}, {b} : {tb}, {aval_type(aval)}")


def complex_pick(fb, direction: str, a: str, b: str, aval) -> str:
    """``a`` where it is the larger (``direction="GT"``) or smaller (``"LT"``) of two complex
    operands of ``aval`` in the lexicographic order, or a NaN; else ``b``."""
    shape, dtype = tuple(aval.shape), np.dtype(aval.dtype)
    tb = tensor_type(shape, np.bool_)
    lex = complex_compare(fb, direction, a, b, aval)
    a_nan = fb.compare("NE", a, a, dtype, shape)
    b_num = fb.compare("EQ", b, b, dtype, shape)
    take_a = fb.emit(f"stablehlo.or {a_nan}, {fb.emit(f'stablehlo.and {b_num}, {lex} : {tb}')} : {tb}")
    return fb.emit(f"stablehlo.select {take_a}, {a}, {b} : {tb}, {aval_type(aval)}")
