"""The host step of an eager primitive (NOTE: [one eager step]) and NumPy's quiet floating point.

Layer: kernel (bottom). Imports numpy and the kernel modules ``dtypes``, ``hooks`` and ``values``;
``EvalTrace`` (``kernel.core``) and the cached-program interpreter (``kernel.numpy_plan``) both take
their steps through it.
"""

from __future__ import annotations

import functools

import numpy as np

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.extended import EArray
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.values import Token, get_aval

# NOTE: [IEEE special values]
# Eager mode returns what XLA returns -- inf, -inf, nan -- without NumPy's RuntimeWarnings (as
# JAX does): ``log(0)`` is -inf, not a warning. ``np.errstate`` costs ~2.5 µs per primitive, so the
# eager interpreter sets NumPy's floating-point-error context variable directly (~0.2 µs), falling
# back to errstate if a future NumPy moves that private name.
try:
    from numpy._core import _ufunc_config as _np_ufunc_config
    from numpy._core import umath as _np_umath

    _FP_ERRORS = _np_ufunc_config._extobj_contextvar
    _FP_QUIET = _np_umath._make_extobj(all="ignore")
except (ImportError, AttributeError):  # pragma: no cover - other NumPy versions

    class _ErrstateVar:
        """The same interface over ``np.errstate``."""

        def set(self, _):
            state = np.errstate(all="ignore")
            state.__enter__()
            return state

        def reset(self, state):
            state.__exit__(None, None, None)

    _FP_ERRORS, _FP_QUIET = _ErrstateVar(), None


def _x32_out(out, multiple: bool, wide=()):
    """Eager results in x32 mode (NOTE: [x64 mode]): 64-bit results cast to 32 bits, except those of
    a dtype in ``wide`` (the dtypes of 64-bit Array operands, made under ``enable_x64``)."""
    if multiple:
        return [_x32_one(o, wide) for o in out]
    return _x32_one(out, wide)


def _x32_one(out, wide):
    if type(out) in _KEPT:
        return out
    out = np.asarray(out)
    return out if wide and out.dtype in wide else _dt.canonical_value(out)


# (a token has no dtype to narrow, NOTE: [tokens]; a typed scalar keeps the dtype it carries)
_KEPT = (Array, Token, *_dt.typed_scalar_types, EArray)  # (an extended dtype's array: its own type)


# NOTE: [one eager step]
# Eager evaluation has two interpreters: ``EvalTrace`` (one primitive at a time, on Arrays) and
# the interpreter of cached eager programs (``kernel/numpy_plan.py``: a whole program laid out as
# slot-indexed steps over NumPy values). Both evaluate an equation through the same per-primitive
# function on host values, its *host step*: ``primitive.impl`` itself, or ``narrow_step(primitive)``
# when an operand or a result has a narrow dtype (NOTE: [narrow dtypes on the host]) or, for a
# primitive whose traits say ``half_floats_compiled``, an operand is a half float
# (``compiles_half_floats``) -- the one place that computes such dtypes compiled (int4, float8;
# float16 and bfloat16 for those primitives, whose steps XLA rounds to the half type) or casts
# NumPy's float32 result back to bfloat16. The eager loops' NumPy interpreter
# (``primitives/control_flow.py``) takes the same steps. All run with NumPy's floating-point errors
# quiet (a NaN is a value, as in XLA), and a primitive without an impl raises the same error from
# either (the program interpreter leaves such programs to ``EvalTrace``). What differs is only
# bookkeeping: EvalTrace wraps each result (its weak type from ``weak_type_rule``), the program
# interpreter wraps only the program's outputs (their weak types from the program's avals).


def narrow_step(primitive):
    """The host step of ``primitive`` for operands of narrow dtypes (NOTE: [one eager step]):
    ``step(*values, **params)`` on NumPy values, returning NumPy values of the dtypes abstract
    evaluation gives; ``None`` when the primitive has no impl.

    >>> import ml_dtypes
    >>> from funcgrad.kernel.core import Primitive
    >>> p = Primitive("in_float32"); _ = p.def_impl(lambda x: x.astype(np.float32) * 2)
    >>> _ = p.def_abstract_eval(lambda x: x)
    >>> narrow_step(p)(np.ones(2, ml_dtypes.bfloat16)).dtype
    dtype(bfloat16)
    """
    if primitive.impl is None:
        return None
    return functools.partial(_narrow_impl, primitive)


def compiles_half_floats(primitive, vals) -> bool:
    """Whether ``primitive``'s host step runs compiled for ``vals`` because of a half float: its
    traits say ``half_floats_compiled`` and an operand is float16 or bfloat16 (so float16 operands,
    which NumPy computes natively, take ``narrow_step`` too)."""
    return primitive.traits.half_floats_compiled and half_operand(vals)


def half_operand(vals) -> bool:
    """Whether one of the host values ``vals`` is float16 or bfloat16."""
    return any(getattr(v, "dtype", None) in _dt.HALF_FLOATS for v in vals)


def _narrow_impl(primitive, *vals, **params):
    if hooks.eager_compiled is not None and (
        any(type(v) is np.ndarray and v.dtype in _dt.COMPILED_ON_HOST for v in vals)
        or compiles_half_floats(primitive, vals)
    ):
        # NOTE: [narrow dtypes on the host]: what NumPy cannot compute (int4, float8), XLA does;
        # so the half floats of a primitive whose traits say ``half_floats_compiled``.
        out = hooks.eager_compiled(primitive, vals, params)
        return [o._numpy() for o in out] if primitive.multiple_results else out._numpy()
    out = primitive.impl(*vals, **params)
    if primitive.abstract_eval is not None:
        out = _in_abstract_dtypes(primitive, vals, params, out)
    return out


def _in_abstract_dtypes(primitive, vals, params, out):
    """``out`` cast to the dtypes abstract evaluation gives. NumPy computes some operations on
    bfloat16 in float32 (matmul through ml_dtypes, SciPy's special functions) and returns that;
    the primitive's result type is bfloat16 (NOTE: [narrow dtypes on the host])."""
    avals = primitive.abstract_eval(*[get_aval(v) for v in vals], **params)
    if not primitive.multiple_results:
        return _cast(out, avals.dtype)
    return [_cast(o, a.dtype) for o, a in zip(out, avals)]


def _cast(x, dtype):
    x = np.asarray(x)
    return x if x.dtype == dtype else x.astype(dtype)


def _same_dtype_as_first(out, first) -> bool:
    first_dtype = first.dtype if isinstance(first, Array) else _dt.python_scalar_dtype(first)
    return np.asarray(out).dtype == first_dtype
