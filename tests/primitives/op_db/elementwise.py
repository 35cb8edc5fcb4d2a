"""op_db entries: the elementwise primitives (primitives/elementwise/, bitcast.py)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import scipy.special as sp
from funcgrad.primitives import bitcast as bc
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import placement
from hypothesis import strategies as st

from op_db._base import (
    BOOL,
    C64,
    C128,
    COMPLEX,
    F32,
    F64,
    FLOATS,
    I32,
    INEXACT,
    OpInfo,
    Sample,
    _arr,
    _away,
    _comparable,
    _distinct,
    _one,
    _shapes,
)

# ----------------------------------------------------------------------------------------------
# Elementwise


def unary(prim, ref, gen=None, *, dtypes=FLOATS, op=None, name=None, params=None, **kw):
    sampler = _one(gen, **{k: (lambda shape, v=v: v) for k, v in (params or {}).items()})
    return OpInfo(name or prim.name, prim, op or prim.bind, ref, sampler, _shapes(), dtypes=dtypes,
                  differentiable=not prim.traits.not_differentiable, **kw)  # fmt: skip


def _uniform(lo, hi):
    return lambda rng, shape, dtype: _arr(rng, shape, dtype, lo, hi)


# Per operand: False (the full shape), True (0-d) or "one" (size 1 along the first axis, which the
# primitive broadcasts: NOTE: [elementwise operand contract]).
_SCALAR_MASKS = st.sampled_from(
    [(False, False), (True, False), (False, True), ("one", False), (False, "one")]
)


def binary(prim, ref, gen=None, *, dtypes=FLOATS, name=None, **kw):
    """Operands of one shape, one of them 0-d, or one of them of size 1 along the first axis (NOTE:
    [elementwise operand contract])."""
    gen = gen or (lambda rng, shape, dtype: (_arr(rng, shape, dtype), _arr(rng, shape, dtype)))

    def sampler(shape, dtype, rng):
        (shape, modes) = shape
        if "one" in modes and shape:
            # The pair is drawn at the size-1 shape (so a generator's pairing -- ties kept apart,
            # away from kinks -- holds for every element) and the other operand repeated along it.
            pair = gen(rng, (1, *shape[1:]), dtype)
            return Sample(
                tuple(v if m == "one" else np.repeat(v, shape[0], axis=0) for v, m in zip(pair, modes)), {}
            )
        pair = gen(rng, shape, dtype)
        scalar = lambda v: np.asarray(v.flat[0] if v.size else 1, dtype)  # noqa: E731
        return Sample(tuple(scalar(v) if m is True else v for v, m in zip(pair, modes)), {})

    samples = (
        ((3, 4), (False, False)),
        ((3, 4), (True, False)),
        ((), (False, False)),
        ((3, 4), ("one", False)),
    )
    shapes = st.tuples(_shapes(), _SCALAR_MASKS)
    return OpInfo(name or prim.name, prim, prim.bind, ref, sampler, shapes, sample_shapes=samples,
                  dtypes=dtypes, differentiable=not prim.traits.not_differentiable, **kw)  # fmt: skip


def _pair(gx, gy):
    return lambda rng, shape, dtype: (gx(rng, shape, dtype), gy(rng, shape, dtype))


def _rem_pair(rng, shape, dtype):
    # x / y stays away from integers (rem's kinks): x = y * (k + u), u in [0.2, 0.8].
    y = _away(rng, shape, np.float64, 0.5, 2.0)
    x = y * (rng.integers(-2, 3, shape) + rng.uniform(0.2, 0.8, shape))
    return np.asarray(x, dtype), np.asarray(y, dtype)


def _tie_free_pair(rng, shape, dtype):
    # Real parts at least 0.2 apart, so neither the order of reals nor the lexicographic order of
    # complex values changes under a small perturbation.
    x = _arr(rng, shape, dtype)
    return np.asarray(x, dtype), np.asarray(x + _away(rng, shape, np.float64, 0.2, 1.0), dtype)


def _complex_away_from_cuts(lo, hi, real_lo=-2.0, real_hi=2.0):
    """Complex values with imaginary parts in ``[lo, hi]`` (away from cuts along the imaginary
    axis, as atan's and asinh's, or from poles, as tanh's); real values in ``[real_lo, real_hi]``."""

    def gen(rng, shape, dtype):
        if np.dtype(dtype).kind != "c":
            return _arr(rng, shape, dtype, real_lo, real_hi)
        return np.asarray(rng.uniform(real_lo, real_hi, shape) + 1j * rng.uniform(lo, hi, shape), dtype)

    return gen


def _xla_int_div(x, y):
    q = np.trunc(np.divide(x.astype(np.float64), np.where(y == 0, 1, y))).astype(x.dtype)
    return np.where(y == 0, np.asarray(-1, x.dtype), q)


def _xla_int_rem(x, y):
    return np.where(y == 0, x, x - _xla_int_div(x, y) * y).astype(x.dtype)


def _int_pair(rng, shape, dtype):
    return _arr(rng, shape, dtype, -9, 9), _arr(rng, shape, dtype, -3, 3)  # includes division by 0


def _comparable_pair(rng, shape, dtype):
    return _comparable(rng, shape, dtype), _comparable(rng, shape, dtype)


def _clamp_ref(lo, x, hi):
    return np.minimum(np.maximum(x, lo), hi)


def _round_ref(x, rounding_method):
    if rounding_method == 1:
        return np.round(x)
    return (np.sign(x) * np.floor(np.abs(x) + np.asarray(0.5, np.float64))).astype(x.dtype)


def _specials(rng, shape, dtype):
    x = _arr(rng, shape, dtype, -3, 3)
    flat = x.reshape(-1)
    for i, v in zip(range(min(3, flat.size)), (np.inf, -np.inf, np.nan)):
        flat[i] = v
    return x


def _shift_pair(rng, shape, dtype):
    return _arr(rng, shape, dtype, -1000, 1000), _arr(rng, shape, dtype, -3, 40)


def _shift_ref(kind):
    def ref(x, y):
        bits = x.dtype.itemsize * 8
        out_of_range = (y < 0) | (y >= bits)
        ys = np.where(out_of_range, 0, y)
        if kind == "left":
            return np.where(out_of_range, 0, np.left_shift(x, ys)).astype(x.dtype)
        if kind == "arithmetic":
            return np.where(out_of_range, np.where(x < 0, -1, 0), np.right_shift(x, ys)).astype(x.dtype)
        unsigned = x.astype(np.uint32)
        return np.where(out_of_range, 0, np.right_shift(unsigned, ys.astype(np.uint32))).astype(x.dtype)

    return ref


def _select_sampler(n_cases, scalar_pred):
    def sampler(shape, dtype, rng):
        pred_shape = () if scalar_pred else shape
        pred = rng.integers(0, n_cases, pred_shape)
        pred = np.asarray(pred == 1) if n_cases == 2 else np.asarray(pred, np.int32)
        return Sample((pred, *(_arr(rng, shape, dtype) for _ in range(n_cases))), {})

    return sampler


def _select_ref(pred, *cases):
    return np.choose(pred.astype(np.int64), np.broadcast_arrays(*cases)) if pred.ndim else cases[int(pred)]


def _clamp_sampler(scalar_bounds):
    def sampler(shape, dtype, rng):
        x = _distinct(rng, shape, np.float64) * 0.5 + 0.05  # never exactly on a bound
        bshape = () if scalar_bounds else shape
        lo = np.asarray(rng.uniform(-1.0, -0.5, bshape), dtype)
        hi = np.asarray(rng.uniform(0.5, 1.0, bshape), dtype)
        return Sample((lo, np.asarray(x, dtype), hi), {})

    return sampler


def _convert_sampler(new_dtype):
    def sampler(shape, dtype, rng):
        return Sample((_arr(rng, shape, dtype, -5, 5),), {"new_dtype": np.dtype(new_dtype)})

    return sampler


def _convert_ref(x, new_dtype):
    # complex -> real keeps the real part (XLA's convert, without NumPy's ComplexWarning).
    return (x.real if x.dtype.kind == "c" and np.dtype(new_dtype).kind != "c" else x).astype(new_dtype)


def _polygamma_sampler(shape, dtype, rng):
    m = np.asarray(rng.integers(0, 3, shape), dtype)
    return Sample((m, _arr(rng, shape, dtype, 0.5, 3.0)), {})


# fmt: off
OPS = [
    unary(ew.neg_p, np.negative, dtypes=(F64, F32, I32, C128, C64), linear_argnums=((0,),)),
    unary(ew.sign_p, np.sign, dtypes=(F64, F32, I32, C128, C64)),
    unary(ew.floor_p, np.floor),
    unary(ew.ceil_p, np.ceil),
    unary(ew.round_p, _round_ref, name="round_away_from_zero", params={"rounding_method": 0}),
    unary(ew.round_p, _round_ref, name="round_to_even", params={"rounding_method": 1}),
    unary(ew.is_finite_p, np.isfinite, _specials),
    unary(ew.abs_p, np.abs, lambda rng, s, d: _away(rng, s, d) if d.kind in "fc" else _arr(rng, s, d),
          dtypes=(F64, F32, I32, C128, C64)),
    unary(ew.exp_p, np.exp, dtypes=INEXACT),
    unary(ew.exp2_p, np.exp2, dtypes=INEXACT),
    unary(ew.expm1_p, np.expm1, dtypes=INEXACT),
    unary(ew.log_p, np.log, _uniform(0.1, 3.0), dtypes=INEXACT),
    unary(ew.log1p_p, np.log1p, _uniform(-0.8, 2.0), dtypes=INEXACT),
    unary(ew.sqrt_p, np.sqrt, _uniform(0.1, 3.0), dtypes=INEXACT),
    unary(ew.rsqrt_p, lambda x: 1 / np.sqrt(x), _uniform(0.1, 3.0), dtypes=INEXACT),
    unary(ew.cbrt_p, np.cbrt, lambda rng, s, d: _away(rng, s, d)),
    unary(ew.sin_p, np.sin, dtypes=INEXACT),
    unary(ew.cos_p, np.cos, dtypes=INEXACT),
    unary(ew.tan_p, np.tan, _uniform(-1.2, 1.2), dtypes=INEXACT),
    unary(ew.asin_p, np.arcsin, _uniform(-0.9, 0.9), dtypes=INEXACT),
    unary(ew.acos_p, np.arccos, _uniform(-0.9, 0.9), dtypes=INEXACT),
    unary(ew.atan_p, np.arctan, _complex_away_from_cuts(-0.8, 0.8), dtypes=INEXACT),
    unary(ew.sinh_p, np.sinh, dtypes=INEXACT),
    unary(ew.cosh_p, np.cosh, dtypes=INEXACT),
    unary(ew.tanh_p, np.tanh, _complex_away_from_cuts(-1.2, 1.2), dtypes=INEXACT),
    unary(ew.asinh_p, np.arcsinh, _complex_away_from_cuts(-0.8, 0.8), dtypes=INEXACT),
    unary(ew.acosh_p, np.arccosh, _uniform(1.1, 3.0), dtypes=INEXACT),
    unary(ew.atanh_p, np.arctanh, _uniform(-0.9, 0.9), dtypes=INEXACT),
    unary(ew.logistic_p, sp.expit, _uniform(-5.0, 5.0)),
    unary(ew.logistic_p, lambda x: (1 / (1 + np.exp(-x))).astype(x.dtype), name="logistic_complex",
          dtypes=COMPLEX),  # poles at z = i pi (2k + 1), outside the samples' |Im z| <= 2
    unary(ew.erf_p, sp.erf),
    unary(ew.erfc_p, sp.erfc),
    unary(ew.erf_inv_p, sp.erfinv, _uniform(-0.9, 0.9)),
    unary(ew.lgamma_p, sp.gammaln, _uniform(0.5, 3.0)),
    unary(ew.digamma_p, sp.digamma, _uniform(0.5, 3.0)),
    unary(ew.polygamma1_p, lambda x: sp.polygamma(1, x).astype(x.dtype), _uniform(0.5, 3.0)),
    OpInfo("polygamma", ew.polygamma_p, ew.polygamma_p.bind,
           lambda m, x: sp.polygamma(m.astype(int), x).astype(x.dtype), _polygamma_sampler, _shapes(),
           diff_argnums=(1,), rtol=1e-10),
    unary(ew.square_p, np.square, dtypes=(F64, F32, I32, C128, C64)),
    *(unary(ew.integer_pow_p, lambda x, y: np.power(x, y if np.iscomplexobj(x) else float(y)).astype(x.dtype),
            (lambda rng, s, d: _away(rng, s, d, 0.3, 1.5)) if y < 0 else None, name=f"integer_pow_{y}",
            params={"y": y}, dtypes=INEXACT if y < 0 else (F64, F32, I32, C128, C64), rtol=1e-10)
      for y in (0, 2, 3, -2)),
    unary(ew.not_p, np.invert, dtypes=(BOOL, I32)),
    unary(ew.stop_gradient_p, lambda x: x),
    unary(ew.copy_p, lambda x: x, dtypes=(F64, F32, I32, C128), linear_argnums=((0,),)),
    # optimization_barrier is multi-result; one operand exercises all its rules.
    unary(placement.optimization_barrier_p, lambda x: x, op=lambda x: placement.optimization_barrier(x)[0],
          dtypes=(F64, F32, I32), linear_argnums=((0,),)),  # fmt: skip
    binary(ew.add_p, np.add, dtypes=(F64, F32, I32, C128, C64), linear_argnums=((0, 1),)),
    binary(ew.sub_p, np.subtract, dtypes=(F64, F32, I32, C128, C64), linear_argnums=((0, 1),)),
    binary(ew.add_any_p, np.add, dtypes=INEXACT, linear_argnums=((0, 1),)),
    binary(ew.mul_p, np.multiply, dtypes=(F64, F32, I32, C128, C64), linear_argnums=((0,), (1,))),
    binary(ew.div_p, np.divide, _pair(_arr, _away), dtypes=INEXACT, linear_argnums=((0,),)),
    binary(ew.div_p, _xla_int_div, _int_pair, dtypes=(I32,), name="div_int"),
    binary(ew.rem_p, np.fmod, _rem_pair),
    binary(ew.rem_p, _xla_int_rem, _int_pair, dtypes=(I32,), name="rem_int"),
    binary(ew.pow_p, np.power, _pair(_uniform(0.2, 2.0), _uniform(-2.0, 2.0)), dtypes=INEXACT, rtol=1e-10),
    binary(ew.max_p, np.maximum, _tie_free_pair, dtypes=(F64, F32, I32, C128, C64)),
    binary(ew.min_p, np.minimum, _tie_free_pair, dtypes=(F64, F32, I32, C128, C64)),
    binary(ew.atan2_p, np.arctan2, _pair(_away, _away)),
    binary(ew.nextafter_p, np.nextafter, derivative_error=NotImplementedError),  # (JAX defines no derivative)
    binary(ew.and_p, np.bitwise_and, dtypes=(BOOL, I32)),
    binary(ew.or_p, np.bitwise_or, dtypes=(BOOL, I32)),
    binary(ew.xor_p, np.bitwise_xor, dtypes=(BOOL, I32)),
    binary(ew.shift_left_p, _shift_ref("left"), _shift_pair, dtypes=(I32,)),
    binary(ew.shift_right_arithmetic_p, _shift_ref("arithmetic"), _shift_pair, dtypes=(I32,)),
    binary(ew.shift_right_logical_p, _shift_ref("logical"), _shift_pair, dtypes=(I32,)),
    *(binary(p, f, _comparable_pair, dtypes=(F64, F32, I32, *(COMPLEX if p in (ew.eq_p, ew.ne_p) else ())))
      for p, f in ((ew.eq_p, np.equal), (ew.ne_p, np.not_equal), (ew.lt_p, np.less),
                   (ew.le_p, np.less_equal), (ew.gt_p, np.greater), (ew.ge_p, np.greater_equal))),
    OpInfo("select_n", ew.select_n_p, ew.select_n_p.bind, _select_ref, _select_sampler(2, False), _shapes(),
           dtypes=(F64, F32, I32, C128, C64), diff_argnums=(1, 2), linear_argnums=((1, 2),)),
    OpInfo("select_n_scalar_pred", ew.select_n_p, ew.select_n_p.bind, _select_ref, _select_sampler(2, True),
           _shapes(), diff_argnums=(1, 2), linear_argnums=((1, 2),)),
    OpInfo("select_n_3_cases", ew.select_n_p, ew.select_n_p.bind, _select_ref, _select_sampler(3, False),
           _shapes(), diff_argnums=(1, 2, 3), linear_argnums=((1, 2, 3),)),
    OpInfo("clamp", ew.clamp_p, ew.clamp, _clamp_ref, _clamp_sampler(False), _shapes()),
    OpInfo("clamp_scalar_bounds", ew.clamp_p, ew.clamp, _clamp_ref, _clamp_sampler(True), _shapes()),
    *(OpInfo(f"convert_element_type_{src.name}_to_{dst.name}", ew.convert_element_type_p,
             ew.convert_element_type_p.bind, _convert_ref, _convert_sampler(dst),
             _shapes(), dtypes=(src,), differentiable=src.kind in "fc" and dst.kind in "fc",
             linear_argnums=((0,),) if src.kind in "fc" and dst.kind in "fc" else (),
             check_fd=dst not in (F32, C64))  # a single-precision result is too coarse for differences
      for src, dst in ((F64, F32), (F32, F64), (F64, I32), (I32, F64), (I32, BOOL), (C128, F64), (F64, C128),
                       (C128, C64), (C64, C128), (C128, I32))),
    OpInfo("bitcast_convert_type", bc.bitcast_convert_type_p, bc.bitcast_convert_type_p.bind,
           lambda x, new_dtype: x.view(new_dtype), _one(new_dtype=lambda s: I32), _shapes(), dtypes=(F32,),
           differentiable=False),
    # bfloat16's format (8 exponent, 7 mantissa bits) is ml_dtypes' rounding for normal values; the
    # derivative rounds the tangent the same way (JAX's rule), which differences cannot resolve, and
    # which rounds a Taylor coefficient (jet) and a derivative (nested jvp) differently: float32
    # only here, float64 bit for bit against XLA in tests/surface/api/test_jax_utilities.py.
    OpInfo("reduce_precision", bc.reduce_precision_p, bc.reduce_precision_p.bind,
           lambda x, exponent_bits, mantissa_bits: x.astype(ml_dtypes.bfloat16).astype(x.dtype),
           _one(exponent_bits=lambda s: 8, mantissa_bits=lambda s: 7), _shapes(), dtypes=(F32,),
           check_fd=False),
    # In the operand's own format the rounding is the identity, and JAX's linear rule exact: the
    # dot-product test of the transpose rule holds there.
    OpInfo("reduce_precision_to_own_format", bc.reduce_precision_p, bc.reduce_precision_p.bind,
           lambda x, exponent_bits, mantissa_bits: x,
           _one(exponent_bits=lambda s: 11, mantissa_bits=lambda s: 52), _shapes(), dtypes=(F64,),
           linear_argnums=((0,),)),
]
# fmt: on
