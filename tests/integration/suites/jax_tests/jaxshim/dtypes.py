"""``jax._src.dtypes`` for JAX's test files: the alias's ``dtypes`` (funcgrad's) plus the internal
helpers the tests call (``is_weakly_typed``, ``to_inexact_dtype``, ``default_float_dtype``, the
ml_dtypes types, ...), written over funcgrad's public API and NumPy."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import funcgrad
import funcgrad.numpy as jnp
from funcgrad.as_jax._jax._src.dtypes import *  # noqa: F403
from funcgrad.as_jax._jax._src.dtypes import DType, ExtendedDType, supports_inf  # noqa: F401
from funcgrad.dtypes import canonicalize_dtype as _fg_canonicalize
from funcgrad.dtypes import finfo, iinfo, issubdtype  # noqa: F401

from . import config as _config

for _name in (
    "bfloat16 float8_e4m3b11fnuz float8_e4m3fn float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz float8_e3m4 "
    "float8_e4m3 float8_e8m0fnu float4_e2m1fn float6_e2m3fn float6_e3m2fn int2 int4 uint2 uint4"
).split():
    globals()[_name] = getattr(ml_dtypes, _name, None)
int1 = getattr(ml_dtypes, "int1", None)
uint1 = getattr(ml_dtypes, "uint1", None)
_float8_dtypes = [
    np.dtype(t)
    for t in (
        ml_dtypes.float8_e3m4,
        ml_dtypes.float8_e4m3,
        ml_dtypes.float8_e4m3b11fnuz,
        ml_dtypes.float8_e4m3fn,
        ml_dtypes.float8_e4m3fnuz,
        ml_dtypes.float8_e5m2,
        ml_dtypes.float8_e5m2fnuz,
        ml_dtypes.float8_e8m0fnu,
    )
]
_intn_dtypes = [np.dtype(t) for t in (ml_dtypes.int2, ml_dtypes.int4, ml_dtypes.uint2, ml_dtypes.uint4)]
_weak_types = [int, float, complex]
python_scalar_types_to_dtypes = {
    bool: np.dtype("bool"),
    int: np.dtype("int64"),
    float: np.dtype("float64"),
    complex: np.dtype("complex128"),
}
float0 = funcgrad.dtypes.float0
bool_ = np.bool_
int_ = np.int64
float_ = np.float64
complex_ = np.complex128
uint = np.uint64
inexact = np.inexact
floating = np.floating
complexfloating = np.complexfloating
signedinteger = np.signedinteger
unsignedinteger = np.unsignedinteger
integer = np.integer
number = np.number
generic = np.generic


def _x64() -> bool:
    return bool(_config._read("jax_enable_x64"))


def canonicalize_dtype(dtype, allow_extended_dtype=False):
    del allow_extended_dtype
    return np.dtype(_fg_canonicalize(dtype))


def dtype(x, *, canonicalize=False):
    """The dtype of a value or dtype-like (Python scalars: their 64-bit NumPy dtype)."""
    if type(x) in python_scalar_types_to_dtypes:
        out = python_scalar_types_to_dtypes[type(x)]
    elif x is None:
        raise ValueError("Invalid argument to dtype: None.")
    elif isinstance(x, type) and x in python_scalar_types_to_dtypes:
        out = python_scalar_types_to_dtypes[x]
    elif isinstance(x, type):  # (a scalar type: np.float16.dtype is a descriptor, not a dtype)
        out = np.dtype(x)
    elif hasattr(x, "dtype"):
        out = np.dtype(x.dtype)
    else:
        out = np.result_type(x)
    return canonicalize_dtype(out) if canonicalize else out


def default_float_dtype():
    return np.dtype("float64" if _x64() else "float32")


def default_int_dtype():
    return np.dtype("int64" if _x64() else "int32")


def default_uint_dtype():
    return np.dtype("uint64" if _x64() else "uint32")


def default_complex_dtype():
    return np.dtype("complex128" if _x64() else "complex64")


default_types = {
    "b": lambda: np.dtype(bool),
    "i": default_int_dtype,
    "u": default_uint_dtype,
    "f": default_float_dtype,
    "c": default_complex_dtype,
}


def is_weakly_typed(x) -> bool:
    if type(x) in _weak_types:
        return True
    try:
        return bool(getattr(funcgrad.core.get_aval(x), "weak_type", False))
    except Exception:
        return False


def to_numeric_dtype(dtype_like):
    d = np.dtype(dtype_like)
    return np.dtype("int32") if d == np.dtype(bool) else d


# JAX's table (its dtypes._dtype_to_inexact): a 64-bit integer becomes float64, the narrower
# integers and bool float32, in either mode (not a promotion: it holds under 'strict' too)
_TO_INEXACT = {np.dtype(n): np.dtype("float64" if n.endswith("64") else "float32") for n in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")}  # fmt: skip


def to_inexact_dtype(dtype_like):
    d = np.dtype(dtype_like)
    if issubdtype(d, np.inexact):
        return d
    return _TO_INEXACT.get(d) or jnp.promote_types(d, default_float_dtype())


def to_floating_dtype(dtype_like):
    d = np.dtype(dtype_like)
    if issubdtype(d, np.complexfloating):
        return np.finfo(d).dtype
    return to_inexact_dtype(d)


def to_complex_dtype(dtype_like):
    d = np.dtype(dtype_like)
    if issubdtype(d, np.complexfloating):
        return d
    f = to_inexact_dtype(d)
    return np.dtype("complex128" if f == np.dtype("float64") else "complex64")


def itemsize_bits(dtype_like) -> int:
    return funcgrad.dtypes.itemsize_bits(dtype_like)


def result_type(*args, return_weak_type_flag=False):
    out = np.dtype(jnp.result_type(*args))
    if return_weak_type_flag:
        return out, all(is_weakly_typed(a) for a in args)
    return out


def safe_to_cast(input_dtype_or_value, output_dtype_or_value) -> bool:
    i, o = dtype(input_dtype_or_value), dtype(output_dtype_or_value)
    return np.dtype(jnp.promote_types(i, o)) == o


def canonicalize_value(x):
    """A NumPy value in its canonical dtype (int64 -> int32 in 32-bit mode), as JAX's."""
    x = np.asarray(x)
    return x.astype(_fg_canonicalize(x.dtype), copy=False)


def _types(names):
    return [
        np.dtype(getattr(ml_dtypes, n, None) or n)
        for n in names.split()
        if hasattr(ml_dtypes, n) or hasattr(np, n)
    ]


# JAX's dtype lists (jax._src.dtypes), which the tests iterate over.
_bool_types = [np.dtype(bool)]
_unsigned_types = _types("uint1 uint2 uint4 uint8 uint16 uint32 uint64")
_signed_types = _types("int1 int2 int4 int8 int16 int32 int64")
_int_types = _unsigned_types + _signed_types
_custom_float_dtypes = _types(
    "float4_e2m1fn float6_e2m3fn float6_e3m2fn float8_e3m4 float8_e4m3 float8_e8m0fnu float8_e4m3b11fnuz "
    "float8_e4m3fn float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz bfloat16"
)
_float_types = _custom_float_dtypes + _types("float16 float32 float64")
_complex_types = _types("complex64 complex128")
_jax_types = _bool_types + _int_types + _float_types + _complex_types


def register_canonicalize_value_handler(type_, handler) -> None:
    """JAX's registry of canonicalizers for array-like types: the extended-dtype tests that use it
    fail on their own; registering is accepted so that the file loads."""


# The public functions JAX's dtypes module also holds (jnp.isdtype, jnp.promote_types): funcgrad's.
isdtype = jnp.isdtype
promote_types = jnp.promote_types
