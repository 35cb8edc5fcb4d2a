"""Complex numbers in funcgrad.numpy: parts, conjugate, angle, predicates, complex sorting, and the
lexicographic order NumPy gives complex values.

Layer: surface. Imports ``funcgrad.numpy._core`` and the primitive catalog (complex, elementwise).

Complex arrays are ordinary arrays (complex64, complex128) through every function where NumPy
defines the math; derivatives follow JAX's convention (NOTE: [complex cotangents] in
``primitives/complex.py``): ``grad`` of a real function of complex ``z`` is ``df/dx - i df/dy``.
NumPy orders complex numbers lexicographically (real part first, then imaginary part) in
comparisons, ``maximum``/``minimum`` and sorting; ``lexicographic`` builds that order from the real
comparisons of the parts, as ``jax.numpy`` does, since the primitives ``lt``/``le``/``gt``/``ge`` accept
only ordered (real) dtypes.

>>> real(np.array([1 + 2j])).tolist(), conj(np.array([1 + 2j])).tolist()
([1.0], [(1-2j)])
"""

from __future__ import annotations

import numpy as np

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.partial_eval import under_staging
from funcgrad.kernel.templates import named_alias
from funcgrad.numpy._core import aval, constant, promote_args, select
from funcgrad.primitives import complex as cx
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import sorting as srt
from funcgrad.primitives import structure as st

__all__ = [
    "angle",
    "conj",
    "conjugate",
    "imag",
    "iscomplex",
    "isreal",
    "real",
    "sort_complex",
]


def _is_complex(x) -> bool:
    return aval(x).dtype.kind == "c"


def real(val, /):
    """The real part (the array itself for real dtypes); complex64 gives float32.

    >>> real(np.array([1.5 + 2j, -1j])).tolist()
    [1.5, -0.0]
    >>> real(np.array([1.5])).tolist()
    [1.5]
    """
    (val,) = promote_args(val)
    return cx.real_p.bind(val) if _is_complex(val) else val


def imag(val, /):
    """The imaginary part (zeros for real dtypes); complex64 gives float32.

    >>> imag(np.array([1.5 + 2j, -1j])).tolist()
    [2.0, -1.0]
    >>> imag(np.array([1.5])).tolist()
    [0.0]
    """
    (val,) = promote_args(val)
    if _is_complex(val):
        return cx.imag_p.bind(val)
    # +0 (not val * 0, which is -0 for val < 0), weak for a weak input, as jax.numpy's full_like;
    # under a staging trace a broadcast of the scalar, not a constant of the whole shape (optax's
    # global_norm takes imag of every parameter: each was a parameter-sized program input).
    a = aval(val)
    zero = Array._from_owned(np.zeros((), a.dtype), weak_type=a.weak_type)
    if a.shape and under_staging(core.current_trace()):
        return st.broadcast_in_dim(zero, a.shape, ())
    return Array._from_owned(np.zeros(a.shape, a.dtype), weak_type=a.weak_type)


def conjugate(x, /):
    """The complex conjugate, elementwise (the array itself for real dtypes).

    >>> conjugate(np.array([1 + 2j, 3.0])).tolist()
    [(1-2j), (3-0j)]
    >>> conjugate(np.array([2.0])).tolist()
    [2.0]
    """
    (x,) = promote_args(x)
    return cx.conj_p.bind(x) if _is_complex(x) else x


conj = named_alias(conjugate, "conj")  # (a function of its own name, as JAX's)


def angle(z, deg: bool = False):
    """The argument of ``z`` (counterclockwise from the positive real axis), in radians or with
    ``deg=True`` degrees; real inputs give 0 or pi, integers compute in float64.

    >>> angle(np.array([1j, -1.0, 1 + 1j]), deg=True).tolist()
    [90.0, 180.0, 45.0]
    """
    (z,) = promote_args(z)
    re, im = real(z), imag(z)
    dtype = aval(re).dtype
    # As JAX's angle: integers, and a real float scalar, are converted (strong) to the default
    # float -- in 64-bit mode a float scalar keeps its own dtype (NumPy's result, the table of
    # docs/differences_from_jax.md); a complex value's parts keep its weak type.
    if not _dt.is_inexact(dtype) or (aval(z).dtype.kind == "f" and not aval(z).shape):
        if not _dt.is_inexact(dtype) or _dt.jax_rules:
            dtype = _dt.default_float
        re, im = (ew.convert_element_type(v, dtype, weak_type=False) for v in (re, im))
    out = ew.atan2_p.bind(im, re)
    if deg:
        out = ew.mul_p.bind(out, constant(180 / np.pi, aval(out).dtype))
    return out


def iscomplex(x):
    """True where the imaginary part is nonzero (False everywhere for real dtypes).

    >>> iscomplex(np.array([1 + 1j, 2 + 0j, 3.0])).tolist()
    [True, False, False]
    """
    (x,) = promote_args(x)
    if not _is_complex(x):
        return _real_part_test(False, x)
    im = cx.imag_p.bind(x)
    return ew.ne_p.bind(im, constant(0, aval(im).dtype))


def _real_part_test(value, x):
    """isreal/iscomplex of a real ``x``: JAX compares its imag (zeros like x) with its _const 0,
    which is weak only for a scalar, so the result is weak where x is a weak scalar (isreal(5) is
    a weak bool; of a weak vector, strong)."""
    out = constant(value, np.bool_, aval(x).shape)
    weak = aval(x).weak_type and not aval(x).shape
    return ew.convert_element_type(out, np.bool_, weak_type=True) if weak else out


def isreal(x):
    """True where the imaginary part is zero (True everywhere for real dtypes).

    >>> isreal(np.array([1 + 1j, 2 + 0j])).tolist()
    [False, True]
    """
    (x,) = promote_args(x)
    if not _is_complex(x):
        return _real_part_test(True, x)
    im = cx.imag_p.bind(x)
    return ew.eq_p.bind(im, constant(0, aval(im).dtype))


def sort_complex(a):
    """Sort along the last axis, real part first, then imaginary part; the result is complex
    (``result_type(a, complex64)``: float32 gives complex64, as in ``jax.numpy``).

    >>> sort_complex(np.array([2 + 1j, 1 + 3j, 1 - 1j])).tolist()
    [(1-1j), (1+3j), (2+1j)]
    """
    (a,) = promote_args(a)
    dtype = aval(a).dtype
    if dtype.kind != "c":
        # (under JAX's dtype rules, its to_complex_dtype: the inexact type's complex -- an int32
        # gives complex64 in 64-bit mode too; NumPy's result_type gives complex128)
        a = ew.convert_element_type(
            a,
            _dt.complex_dtype(_dt.inexact_of(dtype))
            if _dt.jax_rules
            else np.result_type(dtype, np.complex64),
        )
    if aval(a).ndim == 0:
        return a
    return srt.sort_p.bind(a, dimension=aval(a).ndim - 1, is_stable=True, num_keys=1)[0]


# ----------------------------------------------------------------------------------------------
# The lexicographic order of complex numbers (comparisons use it; see the module docstring)


def lexicographic(prim, x1, x2):
    """``prim`` (``lt_p``, ``le_p``, ``gt_p`` or ``ge_p``) of operands of one dtype and shape:
    complex operands compare by real part, ties by imaginary part (NumPy's and JAX's order)."""
    if not _is_complex(x1):
        return prim.bind(x1, x2)
    r1, r2 = cx.real_p.bind(x1), cx.real_p.bind(x2)
    i1, i2 = cx.imag_p.bind(x1), cx.imag_p.bind(x2)
    return select(ew.eq_p.bind(r1, r2), prim.bind(i1, i2), prim.bind(r1, r2))


def abs_squared(x):
    """``|x|**2`` as a real value: ``re**2 + im**2`` for complex ``x`` (no square root, so it is
    smooth at 0), ``x * x`` otherwise. Variances and 2-norms of complex arrays are made of it."""
    if not _is_complex(x):
        return ew.square_p.bind(x)
    re, im = cx.real_p.bind(x), cx.imag_p.bind(x)
    return ew.add_p.bind(ew.square_p.bind(re), ew.square_p.bind(im))


def reject_complex(name: str, *args, why: str = "complex numbers have no order", error=TypeError) -> None:
    """NumPy's refusal, as a clear TypeError naming the function and the dtype, for a function
    that is not defined on complex values (``floor``, ``clip``, ``arctan2``, ...); ``error`` is
    another type where JAX raises one (clip's and hypot's ValueError)."""
    for a in args:
        dtype = aval(a).dtype
        if dtype.kind == "c":
            raise error(
                f"funcgrad.numpy.{name} does not support complex input (got dtype {dtype.name}): "
                f"{why}. Apply it to the real or imaginary part (funcgrad.numpy.real / imag) or to "
                "the magnitude (funcgrad.numpy.abs) instead."
            )
