"""Dtype rules: NumPy 2 (NEP 50) promotion with weak Python scalars, tangent dtypes, short names.

Layer: kernel. Imports only numpy and ml_dtypes.

# NOTE: [weak types]
# A Python scalar (``2.0``) has no dtype of its own: it is *weak* and takes the dtype of the array
# it meets, exactly as NumPy 2 does (NEP 50): ``float32 array * 2.0`` stays float32, ``int32 array
# * 2.5`` becomes float64. Values that came from Python scalars keep ``weak_type=True`` in their aval
# (tracers) or on the Array, so ``grad(f)(3.0)`` still promotes like NumPy inside ``f``. We ask
# NumPy itself for the answer (``np.result_type`` with Python scalar stand-ins), so there is one
# source of truth for the promotion table.
"""

from __future__ import annotations

import numpy as np

try:  # ml_dtypes ships with jaxlib; it is optional for the kernel itself.
    import ml_dtypes

    bfloat16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - exercised only without ml_dtypes
    bfloat16 = None

float0 = np.dtype([("float0", np.void, 0)])
"""The dtype of tangents of integer and boolean values (they have no derivative)."""

bool_ = np.dtype(np.bool_)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

default_float = float64
default_int = int64
default_complex = complex128

_SHORT = {
    "bool": "bool",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float64": "f64",
    "complex64": "c64",
    "complex128": "c128",
}


def short_name(dtype) -> str:
    """The jaxpr spelling of a dtype: ``short_name(np.float32) == 'f32'``."""
    dtype = np.dtype(dtype)
    if dtype == float0:
        return "float0"
    return _SHORT.get(dtype.name, dtype.name)


def is_float(dtype) -> bool:
    """True for real floating dtypes, bfloat16 included."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or (bfloat16 is not None and dtype == bfloat16)


def is_inexact(dtype) -> bool:
    """True for the dtypes that have derivatives (floating and complex)."""
    known = _inexact.get(dtype) if type(dtype) is np.dtype else None
    if known is not None:
        return known  # (asked for every traced value: a dict lookup)
    d = np.dtype(dtype)
    out = d.kind in "fc" or (bfloat16 is not None and d == bfloat16)
    if type(dtype) is np.dtype:
        _inexact[dtype] = out
    return out


_inexact: dict = {}


def real_dtype(dtype) -> np.dtype:
    """The real dtype of a complex one (``complex64 -> float32``); real dtypes map to themselves.

    >>> real_dtype(np.complex64), real_dtype(np.float64)
    (dtype('float32'), dtype('float64'))
    """
    dtype = np.dtype(dtype)
    return np.dtype(np.float32 if dtype == complex64 else np.float64) if dtype.kind == "c" else dtype


def complex_dtype(dtype) -> np.dtype:
    """The complex dtype of a real floating one (``float32 -> complex64``, otherwise complex128),
    as ``np.result_type(dtype, np.complex64)``.

    >>> complex_dtype(np.float32), complex_dtype(np.float64)
    (dtype('complex64'), dtype('complex128'))
    """
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return dtype
    return complex64 if dtype in (float32, float16) or dtype == bfloat16 else complex128


def tangent_dtype(dtype):
    """The dtype of a tangent or cotangent for a primal of ``dtype`` (float0 for ints and bools)."""
    return np.dtype(dtype) if is_inexact(dtype) else float0


_WEAK_STANDIN = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}

python_scalar_types = (bool, int, float, complex)
"""The Python number types, whose values are weak (NOTE: [weak types]); the one definition every
layer imports. Test membership with ``type(x) in python_scalar_types`` where NumPy scalars (which
subclass ``float`` and ``complex``) and ``IntEnum``s must not count, ``isinstance`` otherwise.

>>> type(2.0) in python_scalar_types, type(np.float64(2.0)) in python_scalar_types
(True, False)
"""


def python_scalar_dtype(x) -> np.dtype:
    """The dtype a Python scalar gets when it stands alone (NumPy's defaults)."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return default_int
    if isinstance(x, float):
        return default_float
    if isinstance(x, complex):
        return default_complex
    raise TypeError(f"not a Python scalar: {x!r}")


def result_type(*dtypes_and_weak) -> tuple[np.dtype, bool]:
    """Promote ``(dtype, weak_type)`` pairs the NumPy 2 way; returns ``(dtype, weak_type)``.

    >>> result_type((np.dtype('float32'), False), (np.dtype('float64'), True))
    (dtype('float32'), False)
    """
    strong = []
    weak = []
    for dtype, is_weak in dtypes_and_weak:
        if is_weak:
            weak.append(dtype)
        else:
            strong.append(dtype)
    if not strong:
        # Only weak values: the widest category wins, at the default precision of that category,
        # and the result stays weak.
        kinds = "biufc"
        kind = max((np.dtype(d).kind for d in weak), key=lambda k: kinds.index(k if k != "V" else "f"))
        if bfloat16 is not None and any(np.dtype(d) == bfloat16 for d in weak):
            kind = "f"
        return np.result_type(*weak) if len(set(weak)) == 1 else _default_of(kind), True
    standins = [_WEAK_STANDIN[_kind(d)] for d in weak]
    return np.result_type(*strong, *standins), False


def _kind(dtype) -> str:
    dtype = np.dtype(dtype)
    if bfloat16 is not None and dtype == bfloat16:
        return "f"
    return dtype.kind


def _default_of(kind: str) -> np.dtype:
    return {"b": bool_, "i": default_int, "u": default_int, "f": default_float, "c": default_complex}[kind]


def canonicalize(dtype) -> np.dtype:
    """``np.dtype`` of anything NumPy accepts as a dtype (``float``, ``'f4'``, ``jnp.float32``...)."""
    if not isinstance(dtype, np.dtype | type | str) and hasattr(dtype, "dtype"):
        dtype = dtype.dtype  # an array or array-like carrying a dtype
    return np.dtype(dtype)
