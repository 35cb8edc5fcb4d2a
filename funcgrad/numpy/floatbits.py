"""funcgrad.numpy: the floating-point representation functions (``frexp``, ``ldexp``, ``modf``,
``nextafter``, ``spacing``), integer number theory (``gcd``, ``lcm``), bit functions
(``bitwise_count``, the Array API's ``bitwise_invert``/``bitwise_left_shift``/``bitwise_right_shift``,
``packbits``, ``unpackbits``), ``i0`` and ``unwrap``.

Layer: surface. Imports the primitive catalog, ``funcgrad._control_flow`` (``gcd``'s loop) and the
other funcgrad.numpy modules (never the ``funcgrad.lax`` package, which is built on this one).

``frexp``/``ldexp`` read and write the exponent bits directly (``bitcast_convert_type``), as XLA
and JAX do, so subnormals, zeros, infinities and NaN behave as in NumPy. ``gcd`` is Euclid's
algorithm as a ``while_loop`` over all elements; ``bitwise_count`` a SWAR popcount.
"""

from __future__ import annotations

import numpy as np

from funcgrad._control_flow import while_loop
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.library_programs import jitted_eagerly
from funcgrad.numpy import reductions
from funcgrad.numpy._core import (
    asarray,
    broadcast_shapes_as_lax,
    broadcast_to,
    concrete_int,
    normalize_axis,
    promote_args,
    promote_args_inexact,
)
from funcgrad.numpy.creation import zeros
from funcgrad.numpy.indexing import getitem
from funcgrad.numpy.manipulation import concatenate, moveaxis, reshape
from funcgrad.numpy.numeric import diff
from funcgrad.numpy.sorting import cumsum
from funcgrad.numpy.transcendental import copysign, exp, floor
from funcgrad.numpy.ufuncs import (
    abs,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    left_shift,
    remainder,
    right_shift,
    sign,
    where3,
)
from funcgrad.primitives import bitcast as bc
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import special as sp

__all__ = [
    "bitwise_count",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "frexp",
    "gcd",
    "i0",
    "lcm",
    "ldexp",
    "modf",
    "nextafter",
    "packbits",
    "spacing",
    "unpackbits",
    "unwrap",
]

_UINT_OF = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _float_args(name, *args):
    args = promote_args_inexact(*args)
    if np.dtype(args[0].dtype).kind == "c":
        raise TypeError(f"{name} does not support complex inputs, got {args[0].dtype}")
    return args


def nextafter(x1, x2, /):
    """The next representable float after ``x1`` towards ``x2``.

    >>> float(nextafter(1.0, 2.0)) - 1.0 == float(np.finfo(np.float64).eps)
    True
    """
    x1, x2 = _float_args("nextafter", x1, x2)
    shape = broadcast_shapes_as_lax([x1.shape, x2.shape], "nextafter")
    return ew.nextafter_p.bind(broadcast_to(x1, shape), broadcast_to(x2, shape))


def spacing(x, /):
    """The distance from ``x`` to the next float away from zero (``nextafter(x, inf) - x`` for
    positive ``x``), NumPy's ``spacing``.

    >>> float(spacing(1.0)) == float(np.finfo(np.float64).eps)
    True
    """
    (x,) = _float_args("spacing", x)
    inf = broadcast_to(asarray(np.inf, x.dtype), x.shape)
    if np.dtype(x.dtype) == np.float16:  # NumPy's float16 spacing steps up even for x < 0 (JAX's)
        return ew.sub_p.bind(ew.nextafter_p.bind(x, inf), x)
    result = ew.sub_p.bind(ew.nextafter_p.bind(x, copysign(inf, x)), x)
    # The step from a subnormal can flush to 0 (XLA's CPU): it is the smallest subnormal, signed.
    tiny = copysign(broadcast_to(asarray(_dt.finfo(x.dtype).smallest_subnormal, x.dtype), x.shape), x)
    return where3(result == 0, tiny, result)


def frexp(x, /):
    """``(mantissa, exponent)`` with ``x == mantissa * 2**exponent`` and ``0.5 <= |mantissa| < 1``
    (the exponent is int32; zeros, infinities and NaN give ``(x, 0)``).

    >>> [v.tolist() for v in frexp(np.array([8.0, 0.75, 0.0]))]
    [[0.5, 0.75, 0.0], [4, 0, 0]]
    """
    (x,) = _float_args("frexp", x)
    dtype = original = np.dtype(x.dtype)
    if dtype not in (np.float16, np.float32, np.float64):  # (bfloat16, float8: via float32)
        x = x.astype(np.float32)
        dtype = np.dtype(np.float32)
    info = np.finfo(dtype)
    nbits, nmant = info.bits, info.nmant
    uint = np.dtype(_UINT_OF[dtype.itemsize])
    # Scale subnormals into the normal range first (their exponent field is zero).
    subnormal = (x != 0) & (abs(x) < info.tiny)
    scale = nmant + 1
    xs = where3(subnormal, x * float(2.0**scale), x)
    bits = bc.bitcast_convert_type(xs, uint)
    exp_mask = np.asarray(((1 << (nbits - nmant - 1)) - 1) << nmant, uint)
    biased = right_shift(bitwise_and(bits, exp_mask), np.asarray(nmant, uint)).astype(np.int32)
    exponent = biased - (info.maxexp - 2) - where3(subnormal, scale, 0).astype(np.int32)
    # Mantissa: the exponent field set to that of 0.5.
    half_exp = np.asarray((info.maxexp - 2) << nmant, uint)
    m_bits = bitwise_or(bitwise_and(bits, bitwise_not(exp_mask)), half_exp)
    mantissa = bc.bitcast_convert_type(m_bits, dtype)
    special = (x == 0) | ~ew.is_finite_p.bind(x)
    # The mantissa is x / 2**exponent, so its derivative is 2**-exponent (as in jax), which the bit
    # manipulation above lacks: add a zero-valued term that carries it. Exact: x - stop_gradient(x)
    # is 0 for the finite x of this branch, and the ratio a power of two (capped at the largest float
    # for subnormal x, where 2**-exponent overflows and 0 * inf would spoil the value).
    ratio = ew.stop_gradient_p.bind(mantissa / where3(special, 1, x).astype(dtype))
    ratio = where3(special, 1, where3(ew.is_finite_p.bind(ratio), ratio, float(info.max))).astype(dtype)
    mantissa = mantissa + (x - ew.stop_gradient_p.bind(x)) * ratio
    # The mantissa of a value is exact in the value's own format.
    return where3(special, x, mantissa).astype(original), where3(special, 0, exponent).astype(np.int32)


def ldexp(x1, x2, /):
    """``x1 * 2**x2`` (``x2`` integer), exact, as NumPy's ``ldexp``.

    >>> ldexp(np.array([0.5, 3.0]), np.array([4, -1])).tolist()
    [8.0, 1.5]
    """
    x2 = asarray(x2)
    x1_dtype = asarray(x1).dtype
    # (JAX's check and words: a boolean exponent is taken as 0/1, a complex x1 or an inexact
    # exponent is a ValueError)
    if np.issubdtype(x1_dtype, np.complexfloating) or _dt.is_inexact(x2.dtype):
        raise ValueError(f"ldexp not supported for input types {(x1_dtype, x2.dtype)}")
    (x1,) = _float_args("ldexp", x1)
    dtype = original = np.dtype(x1.dtype)
    if dtype not in (np.float16, np.float32, np.float64, _dt.bfloat16):  # (float8: via float32)
        x1, dtype = x1.astype(np.float32), np.dtype(np.float32)
    info = _dt.finfo(dtype)
    # Three steps by normal powers of two (each within [minexp, maxexp - 1]) reach every exponent
    # that leaves a finite nonzero result (a subnormal power of two would be built as 0, and two
    # steps stopped short of overflow: float16 ldexp(1.5, -15) was 0, ldexp(3e-5, 127) 32192).
    e = x2.astype(np.int32)
    lo, hi = info.minexp, info.maxexp - 1
    e1 = _clip(e, lo, hi)
    e2 = _clip(e - e1, lo, hi)
    e3 = _clip(e - e1 - e2, lo, hi)
    scaled = x1 * _pow2(e1, dtype) * _pow2(e2, dtype) * _pow2(e3, dtype)
    # JAX's last step: zeros and infinities pass through as they are, so the derivative there is 1
    # as jax's (whose formula goes through frexp), not 2**x2 (fuzzer find)
    return where3((x1 == 0) | (abs(x1) == np.inf), x1, scaled).astype(original)


def _clip(e, lo, hi):
    return where3(e < lo, np.int32(lo), where3(e > hi, np.int32(hi), e))


def _pow2(e, dtype):
    """``2.0 ** e`` for integer ``e`` in the normal exponent range, built from its bits."""
    info = _dt.finfo(dtype)
    uint = np.dtype(_UINT_OF[np.dtype(dtype).itemsize])
    biased = (asarray(e).astype(_dt.default_int) + (info.maxexp - 1)).astype(uint)
    return bc.bitcast_convert_type(left_shift(biased, np.asarray(info.nmant, uint)), dtype)


def modf(x, /):
    """The fractional and integral parts of ``x``, both with ``x``'s sign.

    >>> [v.tolist() for v in modf(np.array([2.5, -1.25]))]
    [[0.5, -0.25], [2.0, -1.0]]
    """
    (x,) = _float_args("modf", x)
    whole = where3(x < 0, -floor(-x), floor(x))
    frac = where3(ew.is_finite_p.bind(x), x - whole, where3(x != x, x, copysign(0.0, x)))
    return frac, whole


def gcd(x1, x2, /):
    """The greatest common divisor of ``|x1|`` and ``|x2|`` (integers).

    >>> gcd(np.array([12, 20, 0]), np.array([18, 8, 5])).tolist()
    [6, 4, 5]
    """
    x1, x2 = promote_args(x1, x2)
    if not np.issubdtype(x1.dtype, np.integer):
        raise ValueError(f"Arguments to jax.numpy.gcd must be integers (gcd got {x1.dtype})")  # (JAX's type)
    shape = np.broadcast_shapes(x1.shape, x2.shape)
    a, b = abs(broadcast_to(x1, shape)), abs(broadcast_to(x2, shape))

    def cond(ab):
        return reductions.any(ab[1] != 0)

    def body(ab):
        a, b = ab
        safe_b = where3(b == 0, 1, b)
        return where3(b == 0, a, b), where3(b == 0, 0, ew.rem_p.bind(a, safe_b))

    return while_loop(cond, body, (a, b))[0]


def lcm(x1, x2, /):
    """The least common multiple of ``|x1|`` and ``|x2|`` (0 if either is 0).

    >>> lcm(np.array([4, 6, 0]), np.array([6, 4, 3])).tolist()
    [12, 12, 0]
    """
    x1, x2 = promote_args(x1, x2)
    if not np.issubdtype(x1.dtype, np.integer):
        raise ValueError(f"Arguments to jax.numpy.lcm must be integers (lcm got {x1.dtype})")  # (JAX's type)
    # |x1| * (|x2| // gcd), in this order: where the product overflows it wraps as NumPy's and JAX's
    x1, x2 = abs(x1), abs(x2)
    g = gcd(x1, x2)
    safe = where3(g == 0, 1, g)
    return where3(g == 0, 0, x1 * (x2 // safe))


def bitwise_count(x, /):
    """The number of 1 bits in ``|x|`` (uint8), NumPy's ``bitwise_count``.

    >>> bitwise_count(np.array([0, 7, -8, 255])).tolist()
    [0, 3, 1, 8]
    """
    x = asarray(x)
    kind = _dt.kind(x.dtype)
    if kind not in "biu":
        raise TypeError(f"bitwise_count: the argument must be an integer or bool array, got {x.dtype}")
    if kind == "b":
        return x.astype(np.uint8)
    if kind == "i":
        x = abs(x)
    # (The 2- and 4-bit types' patterns are counted as bytes: their values fit one.)
    bits = _dt.int_of_width(_dt.bit_width(x.dtype), signed=False)
    return _popcount_bits(x.astype(bits).astype(np.dtype(f"uint{bits.itemsize * 8}"))).astype(np.uint8)


def _popcount_bits(v):
    """Set bits of each element of an unsigned array (SWAR: bit counts of ever wider fields),
    in its dtype."""
    nbits = v.dtype.itemsize * 8
    mask = (1 << nbits) - 1
    c = lambda n: np.asarray(n & mask, v.dtype)  # noqa: E731
    v = v - ((v >> c(1)) & c(0x5555555555555555))
    v = (v & c(0x3333333333333333)) + ((v >> c(2)) & c(0x3333333333333333))
    v = (v + (v >> c(4))) & c(0x0F0F0F0F0F0F0F0F)
    for shift in (8, 16, 32):
        if shift < nbits:
            v = v + (v >> c(shift))
    return v & c(0xFF)


def bitwise_invert(x, /):
    """Elementwise bitwise NOT (the Array API's name of ``invert``).

    >>> bitwise_invert(np.array([0, 5])).tolist()
    [-1, -6]
    """
    return bitwise_not(x)


def bitwise_left_shift(x1, x2, /):
    """``x1 << x2`` (the Array API's name of ``left_shift``).

    >>> bitwise_left_shift(np.array([1, 3]), 2).tolist()
    [4, 12]
    """
    return left_shift(x1, x2)


def bitwise_right_shift(x1, x2, /):
    """``x1 >> x2`` (the Array API's name of ``right_shift``).

    >>> bitwise_right_shift(np.array([16, -16]), 2).tolist()
    [4, -4]
    """
    return right_shift(x1, x2)


def packbits(a, axis=None, bitorder: str = "big"):
    """Pack the truth values of ``a`` into the bits of uint8 bytes along ``axis`` (flattened if
    None), padding with zeros to a multiple of 8.

    >>> packbits(np.array([1, 0, 1, 1, 0, 0, 0, 1, 1])).tolist()
    [177, 128]
    """
    if bitorder not in ("big", "little"):
        raise ValueError(f"packbits: bitorder must be 'big' or 'little', got {bitorder!r}")
    a = asarray(a)
    if not (np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_):
        raise TypeError(f"packbits: expected an integer or boolean array, got {a.dtype}")
    bits = (a != 0).astype(np.uint8)
    if axis is None:
        bits, axis = reshape(bits, (-1,)), 0
    axis = normalize_axis(axis, bits.ndim)
    bits = moveaxis(bits, axis, -1)
    n = bits.shape[-1]
    pad = (-n) % 8
    if pad:
        bits = concatenate([bits, zeros((*bits.shape[:-1], pad), np.uint8)], -1)
    bits = reshape(bits, (*bits.shape[:-1], -1, 8))
    weights = np.asarray(
        [1 << (7 - i) for i in range(8)] if bitorder == "big" else [1 << i for i in range(8)]
    )
    weights = weights.astype(np.uint16).reshape((1,) * (bits.ndim - 1) + (8,))  # (no rank promotion)
    packed = reductions.sum(bits.astype(np.uint16) * weights, axis=-1).astype(np.uint8)
    return moveaxis(packed, -1, axis)


def unpackbits(a, axis=None, count=None, bitorder: str = "big"):
    """Unpack uint8 bytes into their bits along ``axis`` (flattened if None); ``count`` keeps the
    first ``count`` bits (or drops ``-count`` from the end).

    >>> unpackbits(np.array([177], np.uint8)).tolist()
    [1, 0, 1, 1, 0, 0, 0, 1]
    """
    if bitorder not in ("big", "little"):
        raise ValueError(f"unpackbits: bitorder must be 'big' or 'little', got {bitorder!r}")
    a = asarray(a)
    if a.dtype != np.uint8:
        raise TypeError(f"unpackbits: expected an array of uint8, got {a.dtype}")
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    axis = normalize_axis(axis, a.ndim)
    a = moveaxis(a, axis, -1)
    shifts = np.asarray([7 - i for i in range(8)] if bitorder == "big" else list(range(8)), np.uint8)
    shifts = shifts.reshape((1,) * a.ndim + (8,))  # (no rank promotion: 'raise' refuses one)
    bits = bitwise_and(right_shift(a[..., None], shifts), np.uint8(1))
    bits = reshape(bits, (*a.shape[:-1], a.shape[-1] * 8))
    if count is not None:
        count = concrete_int(count, "unpackbits: count")
        if count > bits.shape[-1]:  # (NumPy's and JAX's: zeros past the bits there are)
            pad = zeros((*bits.shape[:-1], count - bits.shape[-1]), bits.dtype)
            bits = concatenate([bits, pad], -1)
        bits = getitem(bits, (Ellipsis, slice(None, count)))
    return moveaxis(bits, -1, axis)


@jitted_eagerly
def i0(x, /):
    """The modified Bessel function of the first kind of order 0 (``np.i0``), differentiable.

    >>> round(float(i0(1.0)), 12)
    1.266065877752
    """
    (x,) = _float_args("i0", x)
    # |x| as x * sign(x): its derivative is sign(x) (0 at 0), the convention of bessel_i0e's rule,
    # so the two cancel exactly and i0' = i1 everywhere (abs'(0) is 1, as in JAX, which would
    # leave i0'(0) = 1).
    return exp(x * sign(x)) * sp.bessel_i0e_p.bind(x)


@jitted_eagerly(static_argnames=("axis",))
def unwrap(p, discont=None, axis: int = -1, *, period=2 * np.pi):
    """Unwrap phase angles: remove jumps larger than ``discont`` (default ``period / 2``) along
    ``axis`` by adding multiples of ``period``.

    >>> [round(v, 6) for v in unwrap(np.array([0.0, 3.0, 6.5, 0.2])).tolist()]
    [0.0, 3.0, 0.216815, 0.2]
    """
    p = asarray(p)
    integer_period = type(period) is int or _dt.kind(getattr(period, "dtype", np.float64)) in "iu"
    if _dt.kind(p.dtype) in "biu" and integer_period:
        # Integer phases with an integer period stay integers (NumPy's and JAX's: period // 2)
        p, period = promote_args(p, period)
        interval_high = period // 2
    else:
        # (with the period, as JAX's promote_dtypes(p, period): int32 phases and a Python float
        # period compute in the default float)
        p = _float_args("unwrap", p, period)[0]
        interval_high = period / 2
    axis = normalize_axis(axis, p.ndim)
    if p.shape[axis] == 0:  # (JAX's: the promoted phases as they are, weak for bools and ints)
        return p
    dd = diff(p, axis=axis)
    discont = period / 2 if discont is None else discont
    # NumPy's algorithm: map the jumps into [-period/2, period/2), keeping +period/2 for
    # positive jumps that land exactly on the boundary.
    ddmod = remainder(dd + interval_high, period) - interval_high
    ddmod = where3((ddmod == -interval_high) & (dd > 0), interval_high, ddmod)
    ph_correct = where3(abs(dd) < discont, 0, ddmod - dd)  # (0: integer phases wrap as in JAX)
    correction = cumsum(ph_correct, axis=axis)
    first = getitem(p, (slice(None),) * axis + (slice(0, 1),))
    rest = getitem(p, (slice(None),) * axis + (slice(1, None),)) + correction
    return concatenate([first, rest.astype(p.dtype)], axis)
