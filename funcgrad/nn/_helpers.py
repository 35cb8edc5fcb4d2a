"""funcgrad.nn's shared steps of jax.nn's formulas: the promotions their first steps make
(``_inexact``, ``_inexact_formula``, ``_inexact_int_formula``), weak constants (``_const``) and the
refusals in JAX's words that its formulas raise on the way (``_no_bool_shift``, ``_no_complex_clip``,
``_logistic_operand``).

Layer: surface. Imports ``funcgrad.numpy``'s ``_core`` helpers.
"""

from __future__ import annotations

import numpy as np

from funcgrad.numpy._core import asarray, constant_like, promote_args, promote_args_inexact


def _inexact(x):
    (x,) = promote_args_inexact(x)
    return x


def _logistic_operand(x):
    """``x`` promoted as ``_inexact`` does, after JAX's refusal of an integer or boolean operand
    (a Python int too): its sigmoid/silu/swish/glu bind ``lax.logistic``, which takes none."""
    dtype = getattr(x, "dtype", None)
    dtype = np.dtype(asarray(x).dtype if dtype is None else dtype)
    if dtype.kind in "biu":
        raise TypeError(
            f"logistic does not accept dtype {dtype.name}. Accepted dtypes are subtypes of floating, "
            "complexfloating."
        )
    return _inexact(x)


def _no_bool_shift(x, where):
    # (JAX's softmax and log_softmax subtract the maximum first: a boolean array is lax.sub's
    # TypeError there, in its words; with a mask, jnp.where(where, x, -inf) made it a float first)
    if where is not None:
        return
    if getattr(x, "dtype", None) == np.bool_ or isinstance(x, bool | np.bool_):
        raise TypeError(
            "sub does not accept dtype bool at position 0. Accepted dtypes at position 0 are subtypes of "
            "integer, floating, complexfloating."
        )


def _inexact_formula(x):
    # (as JAX's formulas with Python float constants: an integer or bool array gives a weak float)
    return promote_args(x, 1.0)[0]


def _inexact_int_formula(x):
    # (as JAX's formulas whose first step meets a Python int -- logaddexp(x, 0), abs(x) + 1: a bool
    # array becomes a weak int there, so gives a weak float; another integer array a strong float)
    return _inexact(promote_args(x, 0)[0])


def _no_complex_clip(x):
    # (JAX's formula clips here, jnp.clip: complex values are its ValueError, in its words)
    if np.dtype(x.dtype).kind == "c":
        raise ValueError(
            "Clip received a complex value either through the input or the min/max keywords. Complex "
            "values have no ordering and cannot be clipped. Please convert to a real value or array by "
            "taking the real or imaginary components via jax.numpy.real/imag respectively."
        )


# Weak where ``like`` is: jax.nn's formulas meet Python scalars, which keep a weak value weak
# (nn.relu(0.0) is weak in JAX): funcgrad.numpy's ``constant_like``.
_const = constant_like
