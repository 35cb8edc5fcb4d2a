"""Eager complex elementwise primitives at infinities, NaNs and signed zeros computed by XLA, as
jax computes them (NOTE: [complex special values]).

Layer: primitives. Wraps the host steps (``impl``) of the elementwise primitives defined in
``arithmetic`` and ``transcendental``, which it imports itself; imported by the family's
``__init__``.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives.elementwise import arithmetic as _ar
from funcgrad.primitives.elementwise import transcendental as _tr

from funcgrad.kernel.hooks import hooks

# NOTE: [complex special values]
# NumPy's complex functions follow C99's Annex G at infinities, NaNs and signed zeros; XLA's
# (hence jax's, eager or jitted) use their own formulas there: exp(-inf+infj) is 0 in NumPy, NaN
# in XLA; sqrt(-4-0j) is -2j in NumPy, 2j in XLA (which ignores the zero's sign); (inf+0j) ** 2.0
# is inf+nanj in NumPy, inf+0j in XLA; 1 / (inf+infj) is NaN in NumPy, 0 in XLA. A complex
# operand holding such a value (or a result that overflowed to one) therefore has its eager step
# recomputed by the primitive's own compiled program (``hooks.eager_compiled``); finite values keep
# NumPy's answer (equal to XLA's to rounding) at the cost of one finiteness check. Real operands
# pay one dtype check (the cached-program interpreter none: it takes the unwrapped ``real_step``);
# division and multiplication check inside their impls (NumPy's complex product is fused: (1e30 -
# infj) * (1 + 1e30j) is inf-infj in NumPy, inf+nanj in XLA, complex64 and complex128 alike).


def _special(vals, out, branch_cut: bool) -> bool:
    """Whether a complex operand has an infinite or NaN part (or, for a function with a branch
    cut, a negative zero part), or the result is not finite (NOTE: [complex special values])."""
    arrays = [np.asarray(v) for v in vals]
    for a in (*arrays, *(out if isinstance(out, list | tuple) else (out,))):
        a = np.asarray(a)
        if a.dtype.kind in "fc" and not np.isfinite(a).all():
            return True
    for a in arrays if branch_cut else ():
        if a.dtype.kind == "c":
            for part in (a.real, a.imag):
                if np.signbit(part[part == 0]).any():
                    return True
    return False


def _at_specials(primitive, vals, params, out, branch_cut: bool = False):
    if hooks.eager_compiled is not None and _special(vals, out, branch_cut):
        res = hooks.eager_compiled(primitive, list(vals), params)
        return [o._numpy() for o in res] if primitive.multiple_results else res._numpy()
    return out


# (division's and multiplication's impls check their dtype already: they call this for complex
# operands, with no wrapper around them to slow real arithmetic)
_ar._complex_at_specials = _at_specials


def _xla_at_specials(primitive) -> None:
    impl = primitive.impl
    branch_cut = primitive in _BRANCH_CUTS

    def step(*vals, **params):
        out = impl(*vals, **params)
        kind = getattr(getattr(vals[0], "dtype", None), "kind", None)  # (the first operand's is the op's)
        return _at_specials(primitive, vals, params, out, branch_cut) if kind == "c" else out

    step.__wrapped__ = step.real_step = impl  # (the cached-program interpreter's for real operands)
    step.__name__ = f"{primitive.name}_impl"
    primitive.def_impl(step)


# (where the sign of a zero part picks the side of a branch cut: NumPy follows it, XLA does not)
_BRANCH_CUTS = frozenset(
    (_tr.log_p, _tr.log1p_p, _tr.sqrt_p, _tr.rsqrt_p, _tr.pow_p, _tr.asin_p, _tr.acos_p, _tr.atan_p)
    + (_tr.asinh_p, _tr.acosh_p, _tr.atanh_p)
)

for _p in (
    _ar.integer_pow_p,
    _ar.abs_p,
    _ar.square_p,
    _ar.sign_p,
    _tr.exp_p,
    _tr.exp2_p,
    _tr.expm1_p,
    _tr.log_p,
    _tr.log1p_p,
    _tr.sqrt_p,
    _tr.rsqrt_p,
    _tr.pow_p,
    _tr.sin_p,
    _tr.cos_p,
    _tr.tan_p,
    _tr.sinh_p,
    _tr.cosh_p,
    _tr.tanh_p,
    _tr.asin_p,
    _tr.acos_p,
    _tr.atan_p,
    _tr.asinh_p,
    _tr.acosh_p,
    _tr.atanh_p,
):
    _xla_at_specials(_p)
