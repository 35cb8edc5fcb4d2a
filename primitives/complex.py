"""Complex parts: ``real``, ``imag``, ``conj`` and ``complex`` (the primitives of ``jax.lax``).

Layer: primitives. Imports only the funcgrad kernel, numpy and the shared rule helpers
(``primitives._rules``); ``elementwise`` imports this module (for the complex derivative of
``abs``), never the other way round.

All four are linear, so each is declared by its transpose rule (``deflinear``); the JVP applies the
primitive to the tangent.

# NOTE: [complex cotangents]
# Transposes follow JAX's convention: the transpose of a linear map ``L`` is the one for which
# ``Re(sum(ct * L(t))) == Re(sum(L^T(ct) * t))`` -- the real part of the *unconjugated* product,
# so complex-linear maps (``mul`` by a constant, ``dot_general``, ``fft``) transpose without any
# conjugation, and the maps that are only real-linear get: ``real^T(c) = complex(c, 0)``,
# ``imag^T(c) = complex(0, -c)``, ``conj^T(c) = conj(c)``, ``complex^T(c) = (real(c), -imag(c))``.
# The consequence is JAX's gradient of a real loss ``f(z)`` of complex ``z``: ``grad(f)(z) =
# df/dx - i df/dy`` (``grad(lambda z: abs(z) ** 2)(z) == 2 * conj(z)``), the conjugate of the
# steepest-ascent direction, and ``vjp`` with cotangent 1 of a holomorphic function is ``f'(z)``.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives._rules import aval_of, broadcast_operand_shapes, elementwise_batch, unbroadcast

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import deflinear, is_undefined_primal
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ShapedArray


def _require_complex(name: str, x: ShapedArray) -> None:
    if x.dtype.kind != "c":
        raise TypeError(
            f"{name} requires a complex operand (complex64 or complex128), got {x.str_short()}; "
            f"funcgrad.numpy.{name} also accepts real arrays"
        )


def _part_abstract_eval(name: str):
    def abstract_eval(x: ShapedArray) -> ShapedArray:
        _require_complex(name, x)
        return ShapedArray(x.shape, _dt.real_dtype(x.dtype), x.weak_type)

    return abstract_eval


def _unary_batch(primitive: Primitive):
    return lambda axis_size, vals, dims: (primitive.bind(vals[0]), dims[0])


def _zero_of(x):
    # A 0-d zero, which the elementwise ``complex`` takes beside an array (NOTE: [elementwise
    # operand contract]): no array of zeros is made. Strong, as JAX's rules write it
    # (``np.zeros((), dtype)``): the cotangent of a complex input is never weak, even when the
    # real cotangent is (``grad(lambda z: real(z) ** 2)(3 + 4j)`` is a strong complex128).
    return np.zeros((), aval_of(x).dtype)


# ----------------------------------------------------------------------------------------------
# real and imag: complex -> real (real-linear; NOTE: [complex cotangents])

real_p = Primitive("real")
real_p.def_traits(sparse="zero_preserving_linear")
real_p.def_impl(lambda x: np.asarray(np.real(x)))
real_p.def_abstract_eval(_part_abstract_eval("real"))
real_p.def_batch(_unary_batch(real_p))
real_p.weak_type_rule = lambda params: True  # the part of a weak complex is a weak float
deflinear(real_p, lambda ct, x: [complex_p.bind(ct, _zero_of(ct))])

imag_p = Primitive("imag")
imag_p.def_traits(sparse="zero_preserving_linear")
imag_p.def_impl(lambda x: np.asarray(np.imag(x)))
imag_p.def_abstract_eval(_part_abstract_eval("imag"))
imag_p.def_batch(_unary_batch(imag_p))
imag_p.weak_type_rule = lambda params: True
# complex(0, -ct), written as the conjugate of complex(0, ct) so this family needs no `neg`.
deflinear(imag_p, lambda ct, x: [conj_p.bind(complex_p.bind(_zero_of(ct), ct))])

# ----------------------------------------------------------------------------------------------
# conj: complex -> complex

conj_p = Primitive("conj")
conj_p.def_traits(sparse="zero_preserving_linear")
conj_p.def_impl(lambda x: np.asarray(np.conj(x)))


def _conj_abstract_eval(x: ShapedArray) -> ShapedArray:
    _require_complex("conj", x)
    return x


conj_p.def_abstract_eval(_conj_abstract_eval)
conj_p.def_batch(_unary_batch(conj_p))
deflinear(conj_p, lambda ct, x: [conj_p.bind(ct)])

# ----------------------------------------------------------------------------------------------
# complex(x, y) = x + iy: two reals of one dtype (float32 or float64) -> complex


def _complex_impl(x, y):
    x, y = np.asarray(x), np.asarray(y)
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), _dt.complex_dtype(x.dtype))
    out.real, out.imag = x, y  # no complex128 temporary (x + 1j * y is one for float32 parts)
    return out


def _complex_abstract_eval(x: ShapedArray, y: ShapedArray) -> ShapedArray:
    if x.dtype != y.dtype or x.dtype not in (_dt.float32, _dt.float64):
        raise TypeError(
            f"complex requires two real operands of one dtype, float32 or float64, got "
            f"{x.str_short()} and {y.str_short()}; convert them first (funcgrad.lax.complex "
            "promotes for you)"
        )
    shape = broadcast_operand_shapes("complex", (x, y))
    return ShapedArray(shape, _dt.complex_dtype(x.dtype), x.weak_type and y.weak_type)


def _complex_transpose(ct, x, y):
    return [
        unbroadcast(real_p.bind(ct), x.aval) if is_undefined_primal(x) else None,
        unbroadcast(imag_p.bind(conj_p.bind(ct)), y.aval) if is_undefined_primal(y) else None,
    ]


complex_p = Primitive("complex")
complex_p.def_impl(_complex_impl)
complex_p.def_abstract_eval(_complex_abstract_eval)
complex_p.def_batch(elementwise_batch(complex_p))
complex_p.weak_type_rule = lambda params: True
deflinear(complex_p, _complex_transpose)


# ----------------------------------------------------------------------------------------------
# Thin binds for the other families and the surface


def real(x):
    """The real part of a complex array (``lax.real``).

    >>> float(real(np.complex128(1 + 2j)))
    1.0
    """
    return real_p.bind(x)


def imag(x):
    """The imaginary part of a complex array (``lax.imag``).

    >>> float(imag(np.complex128(1 + 2j)))
    2.0
    """
    return imag_p.bind(x)


def conj(x):
    """The complex conjugate of a complex array (``lax.conj`` of a complex operand).

    >>> complex(conj(np.complex128(1 + 2j)))
    (1-2j)
    """
    return conj_p.bind(x)


def make_complex(x, y):
    """``x + 1j * y`` from two real arrays of one dtype (``lax.complex``).

    >>> complex(make_complex(np.float64(1.0), np.float64(2.0)))
    (1+2j)
    """
    return complex_p.bind(x, y)
