"""The operand checks every ``funcgrad.lax`` wrapper shares: ``_operands`` (one dtype, Python
scalars take it, no broadcasting but of size-1 dimensions), ``_bind_check`` (the primitive's
abstract evaluation, so eager mode raises as tracing does) and ``_bind`` (check, then bind).

Layer: surface, the ground floor of ``funcgrad.lax``. Imports the kernel, the primitive catalog
(the n-ary elementwise shape rule, ``_rules.broadcast_operand_shapes``) and ``funcgrad.numpy._core``
(conversion helpers).
"""

from __future__ import annotations

import numpy as np

from funcgrad import _placement
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.dtypes import python_scalar_types
from funcgrad.numpy._core import asarray, aval, convert
from funcgrad.primitives._rules import broadcast_operand_shapes

# JAX's words for an operation on float0 values (the tangent type of integers), after its opening.
FLOAT0_WORDS = (
    "float0s do not support any operations by design, because they are not compatible with "
    "non-trivial vector spaces. No implicit dtype conversion is done. You can use "
    "np.zeros_like(arr, dtype=np.float) to cast a float0 array to a regular zeros array. \n"
    "If you didn't expect to get a float0 you might have accidentally taken a gradient with respect "
    "to an integer argument."
)


def _operands(name, *args, ones=False):
    """Array operands of one dtype; Python scalars take the dtype of the array operands. With
    ``ones`` (the n-ary arithmetic of jax 0.10: ``add``, ``max``, ``pow``, ...), operands of one rank
    may have size-1 dimensions, which the primitive broadcasts (NOTE: [elementwise operand
    contract]): ``add`` of shapes (2, 1) and (1, 3) is (2, 3)."""
    arrays = [a for a in args if type(a) not in python_scalar_types]
    # As jax 0.10's lax: a Python scalar has its default dtype (int64, float64, complex128, bool),
    # which must be the other operands' too -- lax.add(int32 array, 1) and lax.add(float32 array,
    # 1.0) are TypeErrors there, and a Python float is never truncated into an integer array.
    arg_dtypes = [
        _dt.python_scalar_dtype(a) if type(a) in python_scalar_types else aval(a).dtype for a in args
    ]
    for i, d in enumerate(arg_dtypes):
        if getattr(d, "kind", None) in ("O", "U", "S"):  # (not a JAX type: JAX's words)
            raise TypeError(
                f"Error interpreting argument to {name} as a JAX value. The problematic value is of type "
                f"{type(args[i])} and was passed to {name} at position {i}.\n"
            )
        if d == _dt.float0:
            raise TypeError(f"Called {name} with a float0 at position {i}. " + FLOAT0_WORDS)
    if len(set(arg_dtypes)) > 1:
        raise TypeError(
            f"lax.{name} requires arguments to have the same dtypes, got "
            + ", ".join(np.dtype(d).name for d in arg_dtypes)
            + " (use convert_element_type first; funcgrad.numpy promotes dtypes)"
        )
    if not arrays:  # only Python scalars: weak values of their default dtype, as JAX's
        return [asarray(a) for a in args]
    dtypes = {aval(a).dtype for a in arrays}
    (dtype,) = dtypes
    shapes = {aval(a).shape for a in arrays if aval(a).shape != ()}
    if ones and len(shapes) > 1:
        broadcast_operand_shapes(name, [aval(a) for a in arrays])  # (JAX's errors, raised eagerly too)
    elif len(shapes) > 1:
        raise TypeError(
            f"lax.{name} got incompatible shapes for broadcasting: "
            + ", ".join(str(aval(a).shape) for a in arrays)
            + " (lax does not broadcast; use broadcast_in_dim)"
        )
    out = []
    for a in args:
        if type(a) in python_scalar_types:
            try:
                # weak, as JAX's: lax.mul(2, a weak int32 array) is weak
                out.append(convert(a, dtype, weak_type=True))
            except OverflowError:
                raise OverflowError(f"lax.{name}: Python scalar {a} out of range for {dtype}") from None
        elif isinstance(a, core.Tracer) or hasattr(a, "_numpy"):
            out.append(a)
        else:
            out.append(asarray(a))
    if len(out) == 2:  # (JAX's lax: a scalar meeting a reduced operand is made reduced)
        out = list(_placement.insert_reduced_reshard(*out))
    return out


def _bind_check(prim, name, *args, **params):
    """Check operands with the primitive's abstract evaluation (so eager mode raises like tracing)."""
    try:
        prim.abstract_eval(*[aval(a) for a in args], **params)
    except TypeError as e:
        raise TypeError(f"lax.{name}: {e}") from None


def _bind(prim, name, *args, **params):
    """Check with the primitive's abstract evaluation (eager mode included), then bind."""
    _bind_check(prim, name, *args, **params)
    return prim.bind(*args, **params)
