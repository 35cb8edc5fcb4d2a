"""The basic samplers of ``funcgrad.random`` (JAX's ``jax.random`` names): uniform, normal,
truncated normal, Bernoulli, exponential, Gumbel, categorical and randint, and the argument checks
every sampler shares (``check_shape``, ``check_broadcast_shapes``, ``check_safe_cast``, the dtype
rules); ``_continuous`` and ``_discrete`` build the other distributions on them.

Layer: surface. Imports the kernel, the primitive catalog, funcgrad.numpy, funcgrad.lax and
``funcgrad.random._core`` (keys and their bits). Each sampler follows JAX's algorithm on JAX's bit
streams, so it draws JAX's values (NOTE: [random keys are data] in funcgrad/random/_core.py).
"""

from __future__ import annotations

import math

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad._placement import takes_out_sharding  # out_sharding= (JAX 0.10's explicit sharding)
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.library_programs import jitted_eagerly
from funcgrad.numpy._core import TypePromotionError, check_user_dtype, constant
from funcgrad.primitives import complex as cx
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import structure as st
from funcgrad.primitives.bitcast import bitcast_convert_type
from funcgrad.random._cipher import rolled_rounds
from funcgrad.random._core import (  # (PRNGKey: the docstring examples use it)
    _UINT,
    PRNGKey,  # noqa: F401
    _aval,
    _key_of,
    _random_bits,
    _sampler,
    _shape,
    split,
)
from funcgrad.random._eager import eager_draw, keyable_scalar, program, zero_sign

__all__ = [
    "bernoulli",
    "categorical",
    "exponential",
    "gumbel",
    "normal",
    "randint",
    "truncated_normal",
    "uniform",
]


# ----------------------------------------------------------------------------------------------
# Distributions


def _float_dtype(dtype, name="random"):
    dtype = _dt.default_float if dtype is None else check_user_dtype(dtype)  # (JAX names no function here)
    if not _dt.is_float(dtype):
        short = name.rpartition(".")[2]  # (JAX's words: "dtype argument to `normal` ...")
        raise ValueError(
            f"dtype argument to `{short}` must be a float dtype (a floating dtype), got {dtype.name}"
        )
    return dtype


def _int_dtype(dtype, name="random"):
    dtype = _dt.default_int if dtype is None else check_user_dtype(dtype)
    if dtype.kind not in "iu":
        raise ValueError(f"{name}: dtype must be an integer dtype, got {dtype.name}")
    return dtype


def _scalar(value, dtype):
    if isinstance(value, core.Tracer | Array):
        return ew.convert_element_type(value, dtype)
    return np.asarray(value, dtype)


def _broadcast(x, shape):
    return x if _aval(x).shape == shape else st.broadcast_in_dim(x, shape, ())


def check_shape(name, shape, *param_shapes) -> None:
    """``shape`` must be what ``shape`` and the parameters' shapes broadcast to (JAX's rule)."""
    if param_shapes:
        try:
            result = np.broadcast_shapes(shape, *param_shapes)
        except ValueError:
            result = None
        if result != tuple(shape):
            raise ValueError(
                f"random.{name}: parameter shapes {list(param_shapes)} must broadcast with the shape "
                f"argument {tuple(shape)} to that same shape (got {result})"
            )


def check_broadcast_shapes(name, shape, *args):
    """The sample shape: ``shape`` (checked against the parameters') or their broadcast shape."""
    arg_shapes = [np.shape(a) if not isinstance(a, core.Tracer | Array) else _aval(a).shape for a in args]
    if shape is None:
        return tuple(np.broadcast_shapes(*arg_shapes)) if arg_shapes else ()
    shape = _shape(shape)
    check_shape(name, shape, *arg_shapes)
    return shape


def check_safe_cast(name, dtype, *args) -> None:
    """JAX's rule: a parameter must convert to the sample dtype without loss (a float64 array
    into float32 samples is refused; Python scalars are weak and always fit)."""
    for a in args:
        if type(a) in _dt.python_scalar_types:
            continue
        arr = fnp.asarray(a)
        if fnp.result_type(arr, dtype) != dtype:
            raise TypePromotionError(
                f"random.{name}: cannot safely cast an argument of dtype {arr.dtype} to {np.dtype(dtype)}; "
                "convert it first or ask for a wider dtype"
            )


def _to(x, dtype, shape=None):
    """``x`` as an array of ``dtype`` (broadcast to ``shape``)."""
    x = fnp.asarray(x)
    if x.dtype != dtype:
        x = lax.convert_element_type(x, dtype)
    return x if shape is None or x.shape == tuple(shape) else fnp.broadcast_to(x, shape)


@takes_out_sharding
def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform floats in ``[minval, maxval)`` (bounds broadcast against ``shape``).

    >>> x = uniform(PRNGKey(0), (1000,))
    >>> bool((x >= 0).all() and (x < 1).all())
    True
    """
    if keyable_scalar(minval) and keyable_scalar(maxval):  # NOTE: [eager sampler programs]
        out = eager_draw(
            key, _uniform_program, shape, dtype, minval, maxval, zero_sign(minval), zero_sign(maxval)
        )
        if out is not None:
            return out
    dtype = _float_dtype(dtype, "random.uniform")
    return _uniform_compiled(key, _shape(shape), np.dtype(dtype), minval, maxval)  # NOTE: [compiled samplers]


def _uniform_program(impl, shape, dtype, minval, maxval, *_signs):
    dtype, shape = np.dtype(_float_dtype(dtype, "random.uniform")), _shape(shape)
    return program("_uniform", lambda data: _uniform(_key_of(impl, data), shape, dtype, minval, maxval))


def _uniform(key, shape, dtype, minval, maxval):
    finfo = _dt.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    uint = _UINT[nbits]
    # Formats with fewer than 8 mantissa bits (bfloat16) draw 8 random bits, as JAX does, so the
    # samples are JAX's for the same key.
    rng_bits = 8 if nmant < 8 else nbits
    raw = _random_bits(key, rng_bits, shape)
    if rng_bits != nbits:
        raw = ew.convert_element_type(raw, uint)
    # (constants of the draw's own types: 64-bit ones too under jax_explicit_x64_dtypes='allow')
    one_bits = constant(np.array(1.0, dtype).view(uint), uint)
    float_bits = ew.or_p.bind(ew.shift_right_logical_p.bind(raw, constant(rng_bits - nmant, uint)), one_bits)
    floats = ew.sub_p.bind(bitcast_convert_type(float_bits, dtype), constant(1.0, dtype))
    if type(minval) in _dt.python_scalar_types and type(maxval) in _dt.python_scalar_types:
        lo, hi = constant(minval, dtype), constant(maxval, dtype)
        scaled = ew.add(ew.mul(floats, ew.sub(hi, lo)), lo)
        return ew.max_p.bind(_broadcast(lo, shape), scaled)
    lo, hi = _to(minval, dtype), _to(maxval, dtype)
    # JAX's uniform reshapes the scaled draw to ``shape`` and takes its maximum with ``minval``:
    # bounds of more dimensions pass when their broadcast has as many elements as ``shape`` (a
    # vmapped draw of shape () between bounds of shape (1,), flashbax's sum tree), the result
    # taking the bounds' shape
    try:
        full = np.broadcast_shapes(shape, lo.shape, hi.shape)
    except ValueError:
        full = None
    if full is None or math.prod(full) != math.prod(shape):
        check_shape("uniform", shape, lo.shape, hi.shape)
    scaled = floats * (hi - lo) + lo
    return fnp.maximum(lo, scaled if scaled.shape == shape else fnp.reshape(scaled, shape))


_uniform_compiled = _sampler(_uniform, (1, 2))


@takes_out_sharding
def normal(key, shape=(), dtype=None):
    """Standard normal samples (inverse-CDF of a uniform, as JAX does). A complex ``dtype`` gives
    the standard complex normal ``(re + 1j im) / sqrt(2)`` from the two keys of ``split(key)``
    (``E|z|^2 = 1``), as ``jax.random.normal`` computes it.

    >>> normal(PRNGKey(0), (2, 3)).shape
    (2, 3)
    >>> normal(PRNGKey(0), (2,), np.complex64).dtype
    dtype('complex64')
    """
    out = eager_draw(key, _normal_program, shape, dtype)  # NOTE: [eager sampler programs]
    if out is not None:
        return out
    if dtype is not None and np.dtype(dtype).kind == "c":
        dtype = np.dtype(dtype)
        key_re, key_im = split(key)
        part = _dt.real_dtype(dtype)
        re, im = normal(key_re, shape, part), normal(key_im, shape, part)
        return ew.div(cx.complex_p.bind(re, im), np.asarray(np.sqrt(2.0), dtype))
    dtype = _float_dtype(dtype, "random.normal")
    return _normal_compiled(key, _shape(shape), np.dtype(dtype))


def _normal_program(impl, shape, dtype):
    if dtype is not None and np.dtype(dtype).kind == "c":
        return False  # two draws and a complex: the general route
    dtype, shape = np.dtype(_float_dtype(dtype, "random.normal")), _shape(shape)
    return program("_normal", lambda data: _normal(_key_of(impl, data), shape, dtype))


def _normal(key, shape, dtype):
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    if dtype.itemsize == 8:  # NOTE: [rolled threefry rounds]: float64's erf_inv, its own loop
        u = _uniform_rolled_compiled(key, shape, dtype, lo, 1.0)
    else:
        u = uniform(key, shape, dtype, lo, 1.0)
    return ew.mul(ew.erf_inv_p.bind(u), np.asarray(np.sqrt(2.0), dtype))


def _uniform_rolled(key, shape, dtype, minval, maxval):
    with rolled_rounds():
        return _uniform(key, shape, dtype, minval, maxval)


_uniform_rolled.__name__ = _uniform_rolled.__qualname__ = "_uniform"  # (its jaxpr: jax's names)
_uniform_rolled_compiled = _sampler(_uniform_rolled, (1, 2))


def _uniform_for_transform(key, shape, dtype, minval=0.0, maxval=1.0):
    """``uniform(...)`` of a sampler that applies a costly float transform to it (a log, erf_inv):
    while tracing, a float64 one hashes in JAX's loop, out of the transform's fused loop (NOTE:
    [rolled threefry rounds]: exponential 11.5 -> 7.9 ms, gumbel 15.4 -> 12.1, truncated_normal
    17.5 -> 11.3 for 1e6 float64 draws under jit, one core); the same bits either way."""
    dtype = np.dtype(dtype)
    if dtype.itemsize == 8 and type(core.current_trace()) is not core.EvalTrace:
        return _uniform_rolled_compiled(key, _shape(shape), dtype, minval, maxval)
    return uniform(key, shape, dtype, minval, maxval)


# NOTE: [compiled samplers] jax's samplers are jitted functions, and so are these (and bits): XLA's erf_inv
# (and its 16-bit arithmetic, computed in float32 and rounded once) is what gives jax's bits for a
# key -- SciPy's erfinv differs in the last bits and NumPy rounds 16-bit floats after every
# operation -- and the threefry rounds run as one fused XLA loop instead of ~100 NumPy passes
# (2000x2000 normals: several times faster than eagerly). Eager and jitted calls draw the same bits.
_normal_compiled = _sampler(_normal, (1, 2))


@takes_out_sharding
def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Normal samples truncated to ``[lower, upper]`` (bounds broadcast; ``shape`` defaults to theirs).

    >>> x = truncated_normal(PRNGKey(0), -1.0, 1.0, (100,))
    >>> bool((x >= -1).all() and (x <= 1).all())
    True
    """
    dtype = _float_dtype(dtype, "random.truncated_normal")
    shape = check_broadcast_shapes("truncated_normal", shape, lower, upper)
    return _truncated_normal_compiled(key, lower, upper, shape, np.dtype(dtype))  # NOTE: [compiled samplers]


def _truncated_normal(key, lower, upper, shape, dtype):
    sqrt2 = np.asarray(np.sqrt(2.0), dtype)
    lower, upper = _to(lower, dtype), _to(upper, dtype)
    a = lax.erf(lower / sqrt2)
    b = lax.erf(upper / sqrt2)
    u = _uniform_for_transform(key, shape, dtype, a, b)
    out = sqrt2 * lax.erf_inv(u)
    lo = lax.nextafter(lax.stop_gradient(lower), np.asarray(np.inf, dtype))
    hi = lax.nextafter(lax.stop_gradient(upper), np.asarray(-np.inf, dtype))
    return fnp.clip(out, lo, hi)


_truncated_normal_compiled = _sampler(_truncated_normal, (3, 4))


@takes_out_sharding
def bernoulli(key, p=0.5, shape=None, mode: str = "low"):
    """Booleans that are True with probability ``p`` (``mode="high"`` resolves probabilities below
    the float's resolution with a second uniform).

    >>> bernoulli(PRNGKey(0), 0.5, (4,)).dtype
    dtype('bool')
    """
    if mode not in ("high", "low"):
        raise ValueError(f"random.bernoulli: mode must be 'high' or 'low', got {mode!r}")
    p = fnp.asarray(p) if type(p) not in _dt.python_scalar_types else p
    dtype = _dt.default_float if type(p) in _dt.python_scalar_types else p.dtype
    if not _dt.is_float(dtype):
        raise TypeError(
            f"random.bernoulli: the probability p must have a floating dtype, got {np.dtype(dtype).name}"
        )
    p_shape = () if type(p) in _dt.python_scalar_types else p.shape
    shape = p_shape if shape is None else _shape(shape)
    check_shape("bernoulli", shape, p_shape)
    if mode == "high":
        u = uniform(key, (2, *shape), dtype)
        u1, u2 = u[0], u[1] * 2.0 ** (-_dt.finfo(dtype).nmant)
        return u2 < p - u1
    u = uniform(key, shape, dtype)
    if type(p) in _dt.python_scalar_types:
        return ew.lt_p.bind(u, _broadcast(np.asarray(p, dtype), shape))
    return u < p


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def exponential(key, shape=(), dtype=None):
    """Exponential(1) samples: ``-log1p(-u)``.

    >>> bool((exponential(PRNGKey(0), (10,)) >= 0).all())
    True
    """
    dtype = _float_dtype(dtype, "random.exponential")
    u = _uniform_for_transform(key, shape, dtype)
    return ew.neg(ew.log1p_p.bind(ew.neg(u)))


def _clz32(x):
    """Leading zero bits of uint32 values, by halving the window (exact in either x64 mode)."""
    n, y = fnp.zeros_like(x), x
    for s in (16, 8, 4, 2, 1):
        top_empty = lax.shift_right_logical(y, fnp.full_like(y, 32 - s)) == 0
        n = fnp.where(top_empty, n + np.uint32(s), n)
        y = fnp.where(top_empty, lax.shift_left(y, fnp.full_like(y, s)), y)
    return fnp.where(x == 0, np.uint32(32), n)


def _safe_int_to_float32(bits):
    """JAX's conversion of a pair of uint32 words into a float32 in (0, 1) keeping every bit of
    precision near 0 (for ``gumbel(mode="highest")``)."""
    finfo = _dt.finfo(np.float32)
    hi, lo = bits[0], bits[1]
    hiclz, loclz = _clz32(hi), _clz32(lo)
    mantissa = lax.bitwise_or(
        lax.shift_left(hi, hiclz),
        fnp.where(
            hiclz == 32, lax.shift_left(lo, loclz), lax.shift_right_logical(lo, np.uint32(finfo.bits) - hiclz)
        ),
    )
    mantissa = lax.shift_right_logical(
        mantissa, np.full(mantissa.shape, finfo.bits - finfo.nmant - 1, np.uint32)
    )
    mantissa = lax.bitwise_and(mantissa, np.full(mantissa.shape, (1 << finfo.nmant) - 1, np.uint32))
    exp = (-finfo.minexp - fnp.where(hiclz == 32, 32 + loclz, hiclz)).astype(np.uint32)
    exp = lax.shift_left(exp, np.full(exp.shape, finfo.nmant, np.uint32))
    exp = lax.bitwise_and(exp, np.full(exp.shape, (1 << finfo.bits - 2) - (1 << finfo.nmant - 1), np.uint32))
    return lax.bitcast_convert_type(lax.bitwise_or(exp, mantissa), np.float32)


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype", "mode"), keys=True)  # (JAX jits it)
def gumbel(key, shape=(), dtype=None, mode: str | None = None):
    """Standard Gumbel samples ``-log(-log(u))``; ``mode="high"`` (or ``"highest"``, float32) draws
    more random bits to resolve the far tail, as JAX's.

    >>> gumbel(PRNGKey(0), (3,)).shape
    (3,)
    """
    dtype = _float_dtype(dtype, "random.gumbel")
    shape = _shape(shape)
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"random.gumbel: mode must be 'low', 'high' or 'highest', got {mode!r}")
    info = _dt.finfo(dtype)
    if dtype == np.float32 and mode == "highest":
        raw = _random_bits(key, 32, (2, *shape))
        neg = lax.bitwise_not(raw)
        lo_bits = neg[1]
        carry = fnp.stack([(lo_bits == np.uint32(0xFFFFFFFF)).astype(np.uint32), fnp.ones_like(lo_bits)])
        neg = neg + carry
        flip = raw[0] < np.uint32(1 << 31)
        x = _safe_int_to_float32(fnp.where(flip, raw, neg))
        return fnp.where(flip, -fnp.log(-fnp.log1p(-x)), -fnp.log(-fnp.log(x)))
    if mode in ("high", "highest"):
        u = _uniform_for_transform(key, (2, *shape), dtype, 0.0, 1.0)
        high, low = u[0], u[1]
        x = fnp.where(high >= 0.5, high, high + 2.0 ** (-info.nmant) * low + float(info.tiny))
        return -fnp.log(-fnp.log1p(-x))
    u = _uniform_for_transform(key, shape, dtype, info.tiny, 1.0)
    return ew.neg(ew.log_p.bind(ew.neg(ew.log_p.bind(u))))


@takes_out_sharding
def categorical(key, logits, axis: int = -1, shape=None, replace: bool = True, mode: str | None = None):
    """Category indices drawn with probabilities ``softmax(logits)`` along ``axis`` (the Gumbel-max
    trick). ``shape`` must broadcast with the logits' batch shape: leading extra dimensions draw
    several samples per batch entry. ``replace=False`` draws distinct categories (Gumbel top-k).

    >>> categorical(PRNGKey(0), fnp.log(fnp.array([0.2, 0.8])), shape=(5,)).shape
    (5,)
    """
    logits = fnp.asarray(logits)
    if not _dt.is_float(logits.dtype):
        logits = logits.astype(_dt.default_float)
    ndim = logits.ndim
    if not -ndim <= axis < ndim:
        raise ValueError(
            f"random.categorical: axis {axis} is out of bounds for logits of shape {logits.shape}"
        )
    batch_shape = tuple(np.delete(logits.shape, axis))
    shape = batch_shape if shape is None else _shape(shape)
    check_shape("categorical", shape, batch_shape)
    prefix = shape[: len(shape) - len(batch_shape)]
    if replace:
        if axis >= 0:
            axis -= ndim
        logits_shape = list(shape[len(shape) - len(batch_shape) :])
        logits_shape.insert(axis % ndim, logits.shape[axis])
        g = gumbel(key, (*prefix, *logits_shape), logits.dtype, mode=mode)
        return fnp.argmax(g + fnp.expand_dims(logits, tuple(range(len(prefix)))), axis=axis)
    perturbed = logits + gumbel(key, logits.shape, logits.dtype, mode=mode)
    k = math.prod(prefix)
    if k > logits.shape[axis]:
        raise ValueError(
            f"random.categorical: Number of samples without replacement ({k}) cannot exceed number of "
            f"categories ({logits.shape[axis]})"
        )
    _, indices = lax.top_k(fnp.moveaxis(perturbed, axis, -1), k)
    return fnp.moveaxis(indices, -1, 0).reshape(shape)


@takes_out_sharding
def randint(key, shape, minval, maxval, dtype=None):
    """Uniform integers in ``[minval, maxval)`` (bounds broadcast against ``shape``).

    >>> x = randint(PRNGKey(0), (100,), 0, 10)
    >>> bool((x >= 0).all() and (x < 10).all())
    True
    """
    dtype = _int_dtype(dtype, "random.randint")
    shape = _shape(shape)
    info = np.iinfo(dtype)
    if info.bits < 32:
        # Narrow integers are drawn as int32 (as JAX does), then converted.
        lo = fnp.clip(fnp.asarray(minval).astype(np.int32), int(info.min), int(info.max))
        hi = fnp.clip(fnp.asarray(maxval).astype(np.int32), int(info.min), int(info.max) + 1)
        return _randint(key, shape, lo, hi, np.dtype(np.int32)).astype(dtype)
    return _randint(key, shape, minval, maxval, dtype)


def _clip_to(val, dtype):
    """``val`` (integers) clipped to the range of both dtypes, then converted (JAX's helper)."""
    lo = max(np.iinfo(dtype).min, np.iinfo(val.dtype).min)
    hi = min(np.iinfo(dtype).max, np.iinfo(val.dtype).max)
    return fnp.clip(val, constant(lo, val.dtype), constant(hi, val.dtype)).astype(dtype)


def _randint(key, shape, minval, maxval, dtype):
    minval, maxval = fnp.asarray(minval), fnp.asarray(maxval)
    check_shape("randint", shape, minval.shape, maxval.shape)
    if not fnp.issubdtype(minval.dtype, fnp.integer):
        minval = minval.astype(_dt.default_int)
    if not fnp.issubdtype(maxval.dtype, fnp.integer):
        maxval = maxval.astype(_dt.default_int)
    maxval_out_of_range = maxval > _clip_to(fnp.asarray(np.iinfo(dtype).max, dtype), maxval.dtype)
    minval, maxval = _clip_to(minval, dtype), _clip_to(maxval, dtype)
    nbits = np.iinfo(dtype).bits
    uint = _UINT[nbits]
    keys = split(key)
    higher, lower = _random_bits(keys[0], nbits, shape), _random_bits(keys[1], nbits, shape)
    span = lax.convert_element_type(maxval - minval, uint)
    span = fnp.where(maxval <= minval, constant(1, uint), span)
    span = fnp.where(maxval_out_of_range & (maxval > minval), span + constant(1, uint), span)
    multiplier = fnp.remainder(constant(2 ** (nbits // 2) % (2**nbits), uint), span)
    multiplier = lax.rem(multiplier * multiplier, multiplier * 0 + span)
    offset = lax.rem(higher, _to(span, uint, shape)) * _to(multiplier, uint, shape) + lax.rem(
        lower, _to(span, uint, shape)
    )
    offset = lax.rem(offset, _to(span, uint, shape))
    return _to(minval, dtype, shape) + lax.convert_element_type(offset, dtype)
