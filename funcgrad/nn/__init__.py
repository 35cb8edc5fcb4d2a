"""funcgrad.nn: activation functions and their friends, with jax.nn's names, signatures and semantics;
``funcgrad.nn.initializers`` (the weight initializers) and ``dot_product_attention``.

Layer: surface. Imports ``funcgrad.numpy`` (and its ``_core`` helpers), ``funcgrad.custom_derivatives``,
the primitive catalog (elementwise family) and its own ``initializers`` and ``_scaled`` (block-scaled
matmuls) submodules.

Every function is differentiable to any order, batchable and compilable, and numerically stable:

- no overflow for large ``|x|``: ``softplus(x) = logaddexp(x, 0)``, ``log_sigmoid(x) =
  -softplus(-x)``, ``sigmoid`` is the catalog's stable ``logistic``; ``log_softmax`` and
  ``logsumexp`` subtract the (non-differentiated) maximum first.
- derivatives at kinks follow jax.nn: ``relu'(0) = 0``, ``relu6'`` is 0 at 0 and 6; ``custom_jvp``
  states them, and states the derivative of ``softmax``, finite when some inputs are ``-inf``.
  ``logsumexp`` and ``log_softmax`` are JAX's formulas differentiated by the chain rule, so their
  derivatives are JAX's, NaN included (a NaN input; all inputs ``-inf``).
"""

from __future__ import annotations

import warnings

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.kernel import custom_rule_args as _custom_rule_args
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.custom_derivatives import custom_jvp
from funcgrad.kernel.library_programs import jitted_eagerly
from funcgrad.kernel.templates import template_public_functions
from funcgrad.nn import initializers
from funcgrad.nn._scaled import get_scaled_dot_general_config, scaled_dot_general, scaled_matmul
from funcgrad.numpy._core import (
    asarray,
    aval,
    broadcast_to,
    call_custom,
    canonicalize_dtype,
    concrete_int,
    constant,
    normalize_axes,
    normalize_axis,
    promote_args,
    promote_args_inexact,
    select,
)
from funcgrad.primitives import elementwise as ew

__all__ = [
    "celu",
    "dot_product_attention",
    "elu",
    "gelu",
    "get_scaled_dot_general_config",
    "glu",
    "hard_sigmoid",
    "hard_silu",
    "hard_swish",
    "hard_tanh",
    "identity",
    "initializers",
    "leaky_relu",
    "log1mexp",
    "log_sigmoid",
    "log_softmax",
    "logmeanexp",
    "logsumexp",
    "mish",
    "one_hot",
    "relu",
    "relu6",
    "scaled_dot_general",
    "scaled_matmul",
    "selu",
    "sigmoid",
    "silu",
    "soft_sign",
    "softmax",
    "softplus",
    "sparse_plus",
    "sparse_sigmoid",
    "squareplus",
    "standardize",
    "swish",
    "tanh",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


def _inexact(x):
    (x,) = promote_args_inexact(x)
    return x


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


def _const(value, like):
    # weak where ``like`` is: jax.nn's formulas meet Python scalars, which keep a weak value weak
    # (nn.relu(0.0) is weak in JAX)
    a = aval(like)
    c = constant(value, a.dtype)
    return Array._from_owned(c._numpy(), True) if a.weak_type else c


# ----------------------------------------------------------------------------------------------
# Rectifiers


@custom_jvp
def _relu(x):
    return ew.max_p.bind(x, _const(0, x))


def _pass_where(mask, t):
    """``t`` where ``mask`` holds, else 0: a select, not a multiply by a 0/1 mask, so an infinite or
    NaN tangent outside the mask gives 0 rather than NaN (jax.nn's relu rule; issue 33)."""
    return select(mask, t, _const(0, t))


_relu.defjvps(lambda t, ans, x: _pass_where(ew.gt_p.bind(x, _const(0, x)), t))


@jitted_eagerly
def relu(x):
    """Rectified linear unit ``max(x, 0)``; its derivative at 0 is 0 (as in jax.nn).

    >>> relu(np.array([-1.0, 0.0, 2.0])).tolist()
    [0.0, 0.0, 2.0]
    """
    (x,) = promote_args(x)
    return call_custom(_relu, x)


@custom_jvp
def _relu6(x):
    return ew.min_p.bind(ew.max_p.bind(x, _const(0, x)), _const(6, x))


def _relu6_tangent(t, ans, x):
    inside = ew.and_p.bind(ew.gt_p.bind(x, _const(0, x)), ew.lt_p.bind(x, _const(6, x)))
    return _pass_where(inside, t)


_relu6.defjvps(_relu6_tangent)


@jitted_eagerly
def relu6(x):
    """``min(max(x, 0), 6)``; derivative 0 at both kinks (as in jax.nn).

    >>> relu6(np.array([-1.0, 3.0, 7.0])).tolist()
    [0.0, 3.0, 6.0]
    """
    x, _ = promote_args(x, 6.0)  # (as JAX's min(max(x, 0), 6.0): an int array gives a weak float)
    return call_custom(_relu6, x)


@jitted_eagerly(static_argnames=("negative_slope",))
def leaky_relu(x, negative_slope=1e-2):
    """``x`` for ``x >= 0``, ``negative_slope * x`` otherwise.

    >>> leaky_relu(np.array([-2.0, 3.0]), 0.1).tolist()
    [-0.2, 3.0]
    """
    x = _inexact_formula(x)
    return select(fnp.greater_equal(x, _const(0, x)), x, ew.mul_p.bind(x, _const(negative_slope, x)))


@jitted_eagerly(static_argnames=("alpha",))
def elu(x, alpha=1.0):
    """Exponential linear unit: ``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise.

    >>> np.allclose(elu(np.array([-1.0, 2.0])), [np.expm1(-1.0), 2.0], rtol=1e-15)
    True
    """
    x = _inexact_formula(x)
    positive = fnp.greater(x, _const(0, x))  # (complex: lexicographic, as jnp's comparisons)
    # The exponential only sees non-positive inputs (no overflow in the unselected branch).
    safe = select(positive, _const(0, x), x)
    return select(positive, x, ew.mul_p.bind(_const(alpha, x), ew.expm1_p.bind(safe)))


@jitted_eagerly(static_argnames=("alpha",))
def celu(x, alpha=1.0):
    """Continuously differentiable ELU: ``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``.

    >>> np.allclose(celu(np.array([-1.0, 2.0]), alpha=2.0), [2.0 * np.expm1(-0.5), 2.0], rtol=1e-15)
    True
    """
    x = _inexact_formula(x)
    zero = _const(0, x)
    neg = ew.div_p.bind(ew.min_p.bind(x, zero), _const(alpha, x))
    return ew.add_p.bind(ew.max_p.bind(x, zero), ew.mul_p.bind(_const(alpha, x), ew.expm1_p.bind(neg)))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@jitted_eagerly
def selu(x):
    """Scaled ELU with the self-normalising constants (``scale * elu(x, alpha)``).

    >>> round(float(selu(1.0)), 6)
    1.050701
    """
    x = _inexact_formula(x)
    return ew.mul_p.bind(_const(_SELU_SCALE, x), elu(x, _SELU_ALPHA))


def gelu(x, approximate: bool = True):
    """Gaussian error linear unit: the tanh approximation by default (as jax.nn), or exact with erf.

    >>> abs(float(gelu(1.0, approximate=False)) - 0.8413447460685429) < 1e-12
    True
    """
    x = _inexact(x)
    x = ew.convert_element_type(x, aval(x).dtype, weak_type=False)  # (strong, as JAX's gelu)
    half, one = _const(0.5, x), _const(1, x)
    if approximate:
        cube = ew.mul_p.bind(_const(0.044715, x), ew.integer_pow(x, 3))
        inner = ew.mul_p.bind(_const(np.sqrt(2 / np.pi), x), ew.add_p.bind(x, cube))
        return ew.mul_p.bind(ew.mul_p.bind(half, x), ew.add_p.bind(one, ew.tanh_p.bind(inner)))
    # erfc(-x / sqrt(2)), as JAX's: 1 + erf(x / sqrt(2)) cancels for negative x (gelu(-3) in
    # bfloat16 was 45% off, gelu(-10) in float32 was 0)
    cdf = ew.erfc_p.bind(ew.mul_p.bind(ew.neg_p.bind(x), _const(np.sqrt(0.5), x)))
    return ew.mul_p.bind(ew.mul_p.bind(half, x), cdf)


@jitted_eagerly(static_argnames=("axis",))
def glu(x, axis: int = -1):
    """Gated linear unit: split ``x`` in two halves along ``axis``, return ``a * sigmoid(b)``.

    >>> glu(np.array([1.0, 0.0])).item()
    0.5
    """
    x = _inexact(x)
    axis = normalize_axis(axis, x.ndim)
    n = x.shape[axis]
    if n % 2:
        raise ValueError(f"glu: axis {axis} must have an even size, got {n}")
    a, b = fnp.split(x, 2, axis)
    return ew.mul_p.bind(a, ew.logistic_p.bind(b))


# ----------------------------------------------------------------------------------------------
# Sigmoids and smooth rectifiers


@jitted_eagerly
def sigmoid(x):
    """The logistic function ``1 / (1 + exp(-x))``, without overflow.

    >>> sigmoid(np.array([-1000.0, 0.0, 1000.0])).tolist()
    [0.0, 0.5, 1.0]
    """
    return ew.logistic_p.bind(_inexact(x))


@jitted_eagerly
def softplus(x):
    """``log(1 + exp(x))`` computed as ``logaddexp(x, 0)`` (no overflow; derivative ``sigmoid``).

    >>> softplus(np.array([-1000.0, 0.0, 1000.0])).tolist() == [0.0, float(np.log(2)), 1000.0]
    True
    """
    x = _inexact_int_formula(x)
    return fnp.logaddexp(x, _const(0, x))


@jitted_eagerly
def log_sigmoid(x):
    """``log(sigmoid(x)) = -softplus(-x)``, stable for large ``|x|``.

    >>> log_sigmoid(np.array([-1000.0, 1000.0])).tolist()  # -softplus(-x): -0.0, as in JAX
    [-1000.0, -0.0]
    """
    x = _inexact(x)
    return ew.neg_p.bind(softplus(ew.neg_p.bind(x)))


@jitted_eagerly
def soft_sign(x):
    """``x / (|x| + 1)``.

    >>> soft_sign(np.array([-3.0, 1.0])).tolist()
    [-0.75, 0.5]
    """
    x = _inexact_int_formula(x)
    return fnp.true_divide(x, fnp.add(fnp.abs(x), 1))  # (a complex x over a real |x| + 1, as jax's)


@jitted_eagerly
def silu(x):
    """Sigmoid linear unit ``x * sigmoid(x)`` (also called swish).

    >>> silu(np.array([0.0, 1000.0])).tolist()
    [0.0, 1000.0]
    """
    x = _inexact(x)
    return ew.mul_p.bind(x, ew.logistic_p.bind(x))


swish = silu


@jitted_eagerly
def hard_tanh(x):
    """``-1`` below -1, ``1`` above 1, ``x`` in between.

    >>> hard_tanh(np.array([-2.0, 0.5, 2.0])).tolist()
    [-1.0, 0.5, 1.0]
    """
    x, _ = promote_args(x, 1)  # (as JAX's where(x > 1, 1, ...): integers stay, a bool gives a weak int)
    one = _const(1, x)
    return select(fnp.greater(x, one), one, select(fnp.less(x, ew.neg_p.bind(one)), ew.neg_p.bind(one), x))


@jitted_eagerly
def hard_sigmoid(x):
    """Piecewise-linear sigmoid ``relu6(x + 3) / 6``.

    >>> hard_sigmoid(np.array([-4.0, 0.0, 4.0])).tolist()
    [0.0, 0.5, 1.0]
    """
    x = _inexact_formula(x)
    return ew.div_p.bind(relu6(ew.add_p.bind(x, _const(3, x))), _const(6, x))


@jitted_eagerly
def hard_silu(x):
    """``x * hard_sigmoid(x)`` (also called hard_swish).

    >>> hard_silu(np.array([-4.0, 1.0, 4.0])).tolist() == [-0.0, 4.0 / 6.0, 4.0]
    True
    """
    x = _inexact_formula(x)  # (JAX's x * hard_sigmoid(x): an integer array gives a weak float)
    return ew.mul_p.bind(x, hard_sigmoid(x))


hard_swish = hard_silu


@jitted_eagerly
def mish(x):
    """``x * tanh(softplus(x))``.

    >>> abs(float(mish(1.0)) - 0.8650983882673103) < 1e-12
    True
    """
    x = _inexact_int_formula(x)
    return ew.mul_p.bind(x, ew.tanh_p.bind(softplus(x)))


@jitted_eagerly(static_argnames=("b",))
def squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2``, a smooth algebraic rectifier.

    >>> squareplus(np.array([0.0])).tolist()
    [1.0]
    """
    x = _inexact(x)
    root = ew.sqrt_p.bind(ew.add_p.bind(ew.square_p.bind(x), _const(b, x)))
    return ew.div_p.bind(ew.add_p.bind(x, root), _const(2, x))


@jitted_eagerly
def sparse_plus(x):
    """0 below -1, ``(x + 1)**2 / 4`` on ``[-1, 1]``, ``x`` above 1.

    >>> sparse_plus(np.array([-2.0, 0.0, 2.0])).tolist()
    [0.0, 0.25, 2.0]
    """
    x = _inexact_formula(x)
    one = _const(1, x)
    middle = ew.div_p.bind(ew.square_p.bind(ew.add_p.bind(x, one)), _const(4, x))
    below, above = fnp.less_equal(x, ew.neg_p.bind(one)), fnp.greater_equal(x, one)
    return select(below, _const(0, x), select(above, x, middle))


@jitted_eagerly
def sparse_sigmoid(x):
    """0 below -1, ``(x + 1) / 2`` on ``[-1, 1]``, 1 above 1 (the derivative of ``sparse_plus``).

    >>> sparse_sigmoid(np.array([-2.0, 0.0, 2.0])).tolist()
    [0.0, 0.5, 1.0]
    """
    x = _inexact_formula(x)
    _no_complex_clip(x)
    # jax.nn's formula, 0.5 * clip(x + 1, 0, 2): max/min split the derivative at the kinks x = +-1
    # (1/4 there, as in jax; a select would give 0).
    clipped = ew.min_p.bind(ew.max_p.bind(ew.add_p.bind(x, _const(1, x)), _const(0, x)), _const(2, x))
    return ew.mul_p.bind(_const(0.5, x), clipped)


def identity(x):
    """The identity activation.

    >>> identity(np.array([1.0])).tolist()
    [1.0]
    """
    return asarray(x)


# ----------------------------------------------------------------------------------------------
# Normalisations: logsumexp, softmax, log_softmax, standardize


def _reduction_axes(x, axis):
    return normalize_axes(axis, x.ndim)


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False, where=None):
    """``log(sum(b * exp(a)))`` over ``axis`` without overflow (jax.scipy.special.logsumexp).

    ``b`` scales the terms (zeros drop them); with ``return_sign`` the result is ``(log|sum|,
    sign)``, otherwise a negative sum gives NaN. Complex terms give the log of the sum on the
    principal branch (with ``return_sign``: the log of its modulus and its phase ``sum / |sum|``).

    >>> float(logsumexp(np.array([1000.0, 1000.0]))) == 1000.0 + float(np.log(2))
    True
    >>> logsumexp(np.array([[0.0, -np.inf]]), axis=1).tolist()
    [0.0]
    """
    # JAX's formula, step for step, differentiated by the chain rule as JAX's (no custom rule):
    # the maximum is made finite and its gradient stopped, so the derivatives are JAX's everywhere,
    # NaN where JAX's are (a NaN term, all terms -inf: 0 * (1 / 0)), and the derivative program is
    # the formula's own (the saved exponentials times 1 / sum).
    if where is not None:
        a = fnp.where(where, a, 0)
    if b is not None:
        a, b = promote_args_inexact(a, b)
        a = fnp.where(b != 0, a, -np.inf)
    else:
        a = _inexact(a)
    is_complex = fnp.iscomplexobj(a)
    axes = _reduction_axes(a, axis)
    amax = fnp.max(fnp.real(a), axes, keepdims=keepdims, where=where, initial=-np.inf)
    amax = ew.stop_gradient_p.bind(select(ew.is_finite_p.bind(amax), amax, fnp.zeros_like(amax)))
    amax_dims = amax if keepdims or not axes else fnp.expand_dims(amax, axes)
    shift = broadcast_to(ew.convert_element_type(amax_dims, aval(a).dtype), aval(a).shape)
    exp_a = ew.exp_p.bind(ew.sub_p.bind(a, shift))
    if b is not None:
        exp_a, b = fnp.broadcast_arrays(exp_a, b)
        exp_a = ew.mul_p.bind(exp_a, b)
    sumexp = fnp.sum(exp_a, axes, keepdims=keepdims, where=where)
    sign = ew.sign_p.bind(sumexp)
    if return_sign or not is_complex:
        sumexp = fnp.abs(sumexp)
    out = ew.add_p.bind(ew.log_p.bind(sumexp), ew.convert_element_type(amax, aval(sumexp).dtype))
    if return_sign:
        return out, sign
    if b is not None and not is_complex:
        out = fnp.where(ew.lt_p.bind(sign, _const(0, sign)), fnp.asarray(np.nan, aval(out).dtype), out)
    return out


# JAX's flag jax_softmax_custom_jvp (default False; custom_rule_args.softmax_rule): softmax is
# then differentiated through its formula, the maximum's gradient stopped (JAX's
# _softmax_deprecated), as jax computes it; True: the custom rule y * (t - sum(y * t)). The two
# round differently (an ulp in a third of float16's elements: the fuzzer's float16 models).
def _softmax_impl(x, axes, where):
    return _softmax_value(x, axes, where, stop_max=False)


def _softmax_value(x, axes, where, stop_max):
    # JAX's formula: the maximum is not made finite (an all -inf slice, a +inf or NaN entry: the
    # slice is NaN, as jax's); inside the custom rule it is never differentiated.
    x_max = fnp.max(x, axes, keepdims=True, where=where, initial=-np.inf)
    if stop_max:
        x_max = ew.stop_gradient_p.bind(x_max)
    x_safe = x if where is None else select(where, x, _const(-np.inf, x))
    unnormalized = ew.exp_p.bind(ew.sub_p.bind(x_safe, broadcast_to(x_max, aval(x).shape)))
    total = fnp.sum(unnormalized, axes, keepdims=True, where=where)
    # (broadcast by the division itself, as jax's XLA program divides: a product with 1 / total)
    out = ew.div_p.bind(unnormalized, total)
    if where is not None:  # masked-out entries are 0, also in a slice masked out entirely (not 0/0)
        out = select(where, out, _const(0, x))
    return out


# (the mask is an operand, not a non-differentiable argument: it may be traced -- softmax(x,
# where=x > 0) under grad -- and a traced non-differentiable argument leaked out of the rule)
_softmax = custom_jvp(_softmax_impl, nondiff_argnums=(1,))


@_softmax.defjvp
def _softmax_jvp(axes, primals, tangents):
    (x, where), (t, _) = primals, tangents
    y = _softmax(x, axes, where)
    yt = ew.mul_p.bind(y, t)
    if where is not None:
        yt = select(broadcast_to(where, aval(x).shape), yt, _const(0, x))
    total = broadcast_to(fnp.sum(yt, axes, keepdims=True), aval(x).shape)
    return y, ew.mul_p.bind(y, ew.sub_p.bind(t, total))


def softmax(x, axis=-1, where=None, initial=None):
    """``exp(x) / sum(exp(x))`` along ``axis`` (max-shifted); masked-out entries (``where``) are 0.

    >>> softmax(np.array([0.0, np.log(3.0)])).tolist()
    [0.25, 0.75]
    """
    _no_bool_shift(x, where)
    x = _inexact(x)
    axes = _reduction_axes(x, axis)
    mask = None if where is None else broadcast_to(fnp.asarray(where, bool), x.shape)
    if not _custom_rule_args.softmax_rule["custom_jvp"]:
        return _softmax_value(x, axes, mask, stop_max=True)
    return call_custom(_softmax, x, axes, mask)


@jitted_eagerly(static_argnames=("axis",))
def log_softmax(x, axis=-1, where=None, initial=None):
    """``x - logsumexp(x)`` along ``axis`` (max-shifted); masked-out entries are ``-inf``.

    As JAX's: an all ``-inf`` slice (and one holding ``+inf`` or NaN) gives NaN.

    >>> log_softmax(np.array([0.0, 0.0])).tolist() == [-float(np.log(2))] * 2
    True
    """
    # JAX's formula, step for step, differentiated by the chain rule: shifted by the maximum with
    # its gradient stopped (x - logsumexp(x) would cancel the leading digits of the largest entry:
    # log_softmax([5.5, -4.2])[0] lost ~3 of float32's 7 digits), the maximum not made finite.
    _no_bool_shift(x, where)
    x = _inexact(x)
    axes = _reduction_axes(x, axis)
    mask = None if where is None else broadcast_to(fnp.asarray(where, bool), x.shape)
    x_max = fnp.max(x, axes, where=mask, initial=-np.inf, keepdims=True)
    x_safe = x if mask is None else select(mask, x, _const(-np.inf, x))
    shifted = ew.sub_p.bind(x_safe, broadcast_to(ew.stop_gradient_p.bind(x_max), x.shape))
    total = fnp.sum(ew.exp_p.bind(shifted), axes, where=mask, keepdims=True)
    out = ew.sub_p.bind(shifted, broadcast_to(ew.log_p.bind(total), x.shape))
    if mask is not None:
        out = select(mask, out, _const(-np.inf, x))
    return out


@jitted_eagerly(static_argnames=("axis", "algorithm"))
def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, algorithm="fast"):
    """``(x - mean) / sqrt(variance + epsilon)`` along ``axis`` (statistics computed if not given:
    ``algorithm="fast"`` takes ``E[x^2] - E[x]^2`` clipped at 0, ``"stable"`` ``E[(x - E[x])^2]``).

    >>> standardize(np.array([1.0, 3.0]), epsilon=0.0).tolist()
    [-1.0, 1.0]
    """
    if algorithm not in ("fast", "stable"):
        raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    x = _inexact(x)
    axes = _reduction_axes(x, axis)
    if mean is None:
        mean = fnp.mean(x, axes, keepdims=True, where=where)
    if variance is None and algorithm == "stable":
        variance = fnp.mean(ew.square_p.bind(fnp.subtract(x, mean)), axes, keepdims=True, where=where)
    elif variance is None:
        # E[x^2] - E[x]^2, as jax.nn computes it; clipped at 0, where round-off makes it negative
        # (the rsqrt would give NaN), as JAX does.
        # (promoting, as jnp's subtract: a given ``mean`` may be wider than ``x``)
        variance = fnp.subtract(
            fnp.mean(ew.square_p.bind(x), axes, keepdims=True, where=where), fnp.square(mean)
        )
        _no_complex_clip(variance)
        variance = fnp.maximum(variance, fnp.zeros((), variance.dtype))
    centred = fnp.subtract(x, mean)
    return fnp.multiply(centred, ew.rsqrt_p.bind(fnp.add(fnp.asarray(variance, x.dtype), epsilon)))


def one_hot(x, num_classes: int, *, dtype=None, axis=-1):
    """One-hot encoding of the integers ``x``: a new axis of length ``num_classes`` (at ``axis``).
    Indices outside ``[0, num_classes)`` give all-zero rows.

    >>> one_hot(np.array([0, 2, 5]), 3).tolist()
    [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    """
    num_classes = concrete_int(  # (JAX's words for a traced count)
        num_classes, "The error arose in jax.nn.one_hot argument `num_classes`. It"
    )
    x = asarray(x)
    if x.dtype.kind not in "iu":  # (JAX's deprecation, 2024-12: float indices still work)
        warnings.warn(
            f"jax.nn.one_hot input should be integer-typed; got dtype={x.dtype}",
            DeprecationWarning,
            stacklevel=2,
        )
    dtype = _dt.default_float if dtype is None else canonicalize_dtype(dtype)
    out_ndim = x.ndim + 1
    axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
    if len(axes) != 1:
        raise NotImplementedError("one_hot: only a single output axis is supported")
    ax = normalize_axis(axes[0], out_ndim)
    expanded = fnp.expand_dims(x, ax)
    classes_shape = [1] * out_ndim
    classes_shape[ax] = num_classes
    classes = constant(
        np.arange(num_classes).reshape(classes_shape), x.dtype if x.dtype.kind in "iu" else x.dtype
    )
    return fnp.asarray(fnp.equal(expanded, classes), dtype)


# ----------------------------------------------------------------------------------------------
# Attention


def _to_4d(t):
    t = asarray(t)
    return t if t.ndim == 4 else fnp.expand_dims(t, tuple(range(4 - t.ndim)))


def _grouped(t, K, G, N):
    """A (B, N or 1, T, S) bias or mask as (B, K, G, T, S): query head n = k * G + g."""
    if t is None:
        return None
    b, n, tt, ss = t.shape
    if n == 1:
        return broadcast_to(fnp.expand_dims(t, 2), (b, 1, G, tt, ss))
    if n != N:
        raise ValueError(
            f"dot_product_attention: bias/mask head dimension must be 1 or {N}, got shape {t.shape}"
        )
    return fnp.reshape(t, (b, K, G, tt, ss))


def dot_product_attention(
    query,
    key,
    value,
    bias=None,
    mask=None,
    *,
    scale=None,
    is_causal: bool = False,
    query_seq_lengths=None,
    key_value_seq_lengths=None,
    local_window_size=None,
    implementation=None,
    return_residual: bool = False,
):
    """Scaled dot-product attention ``softmax(q k^T * scale + bias, masked) v`` (``jax.nn``'s).

    ``query`` is (B, T, N, H) or (T, N, H); ``key``/``value`` (B, S, K, H) with ``N`` a multiple of
    ``K`` (grouped-query attention); ``bias``/``mask`` broadcast to (B, N, T, S) (``mask`` is
    boolean, True = attend); ``is_causal``, ``local_window_size`` (an int or (left, right)) and the
    per-example sequence lengths add masks. ``scale`` defaults to ``1/sqrt(H)``. The softmax runs in
    at least float32 (float64 stays float64 here; JAX rounds it to float32). Only the ``'xla'``
    implementation exists on the CPU (``None`` means it). With ``return_residual`` the per-query
    ``logsumexp`` of the logits (B, T, N) comes back too, with a stopped gradient.

    >>> q = np.ones((1, 2, 1, 4)); v = np.arange(8.0).reshape(1, 2, 1, 4)
    >>> dot_product_attention(q, q, v)[0, :, 0].tolist()
    [[2.0, 3.0, 4.0, 5.0], [2.0, 3.0, 4.0, 5.0]]
    """
    if implementation not in (None, "xla"):
        raise ValueError(
            f"dot_product_attention: implementation={implementation!r} is not available on funcgrad's "
            "devices; use None or 'xla'"
        )
    out_shape = asarray(query).shape
    q, k, v = _to_4d(query), _to_4d(key), _to_4d(value)
    bias = None if bias is None else _to_4d(bias)
    mask = None if mask is None else _to_4d(mask)
    B, S, K, H = k.shape
    if v.shape != k.shape:
        raise ValueError(f"dot_product_attention: value shape {v.shape} must equal key shape {k.shape}")
    if q.shape[0] != B or q.shape[3] != H:
        raise ValueError(
            f"dot_product_attention: query shape {q.shape} must be (B={B}, T, N, H={H}) for key shape "
            f"{k.shape}"
        )
    if mask is not None and mask.dtype != np.bool_:
        raise ValueError(f"dot_product_attention: mask must be boolean, got dtype {mask.dtype}")
    T, N = q.shape[1], q.shape[2]
    if N % K:
        raise ValueError(
            f"dot_product_attention: the number of query heads must be a multiple of key/value heads, "
            f"but got {N} vs {K}"
        )
    G = N // K
    if isinstance(local_window_size, int | np.integer):
        local_window_size = (int(local_window_size), int(local_window_size))
    scale = 1.0 / np.sqrt(H) if scale is None else scale
    logits_dtype = np.promote_types(q.dtype, np.float32)
    qg = fnp.reshape(q, (B, T, K, G, H))
    # (the operands converted, not preferred_element_type: the product is the same, and the
    # gradients come back in q's and k's dtypes; the transposed product of a float32 cotangent
    # with a bfloat16 operand was refused)
    logits = fnp.einsum("BTKGH,BSKH->BKGTS", fnp.asarray(qg, logits_dtype), fnp.asarray(k, logits_dtype))
    logits = logits * fnp.asarray(scale, logits.dtype)
    if bias is not None:
        logits = fnp.asarray(logits + _grouped(bias, K, G, N), logits.dtype)
    keep = None
    if mask is not None:
        keep = _grouped(mask, K, G, N)
    rows = fnp.arange(T)[:, None]
    cols = fnp.arange(S)[None, :]
    if is_causal:
        keep = _and(keep, rows >= cols)
    if local_window_size is not None:
        left, right = local_window_size
        keep = _and(keep, fnp.logical_and(rows <= cols + left, rows >= cols - right))
    if query_seq_lengths is not None:
        ql = asarray(query_seq_lengths)
        keep = _and(keep, (fnp.arange(T)[None, :] < ql[:, None])[:, None, None, :, None])
    if key_value_seq_lengths is not None:
        kl = asarray(key_value_seq_lengths)
        keep = _and(keep, (fnp.arange(S)[None, :] < kl[:, None])[:, None, None, None, :])
    if keep is not None:
        big_negative = -0.7 * min(float(_dt.finfo(logits.dtype).max), float(_dt.finfo(np.float32).max))
        keep = fnp.broadcast_to(
            fnp.reshape(keep, (1,) * (logits.ndim - keep.ndim) + keep.shape), logits.shape
        )
        logits = fnp.where(keep, logits, fnp.asarray(big_negative, logits.dtype))
    probs = fnp.asarray(softmax(logits, axis=-1), k.dtype)
    encoded = fnp.einsum("BKGTS,BSKH->BTKGH", probs, v)
    encoded = fnp.reshape(encoded, (B, T, N, H))
    if query_seq_lengths is not None:
        valid = fnp.arange(T)[None, :] < asarray(query_seq_lengths)[:, None]
        encoded = encoded * fnp.asarray(valid, encoded.dtype)[:, :, None, None]
    encoded = fnp.reshape(encoded, out_shape)
    if not return_residual:
        return encoded
    lse = fnp.asarray(logsumexp(logits, axis=-1), k.dtype)  # (B, K, G, T)
    lse = fnp.transpose(fnp.reshape(lse, (B, N, T)), (0, 2, 1))
    return encoded, ew.stop_gradient_p.bind(fnp.reshape(lse, out_shape[:-1]))


def _and(mask, other):
    if mask is None:
        return other
    # (leading axes added explicitly: no implicit rank promotion under jax_numpy_rank_promotion)
    rank = mask.ndim if mask.ndim > other.ndim else other.ndim
    mask = fnp.reshape(mask, (1,) * (rank - mask.ndim) + mask.shape)
    other = fnp.reshape(other, (1,) * (rank - other.ndim) + other.shape)
    return fnp.logical_and(mask, other)


def tanh(x):
    """The hyperbolic tangent (``jax.nn.tanh``, the same function as ``funcgrad.numpy.tanh``).

    >>> tanh(np.array([0.0])).tolist()
    [0.0]
    """
    return fnp.tanh(x)


@jitted_eagerly
def log1mexp(x):
    """``log(1 - exp(-x))`` for ``x >= 0``, accurate everywhere: ``log(-expm1(-x))`` below
    ``log 2`` and ``log1p(-exp(-x))`` above (Mächler's choice); its derivative is ``1/expm1(x)``.

    >>> round(float(log1mexp(np.array(1e-10))), 8), round(float(log1mexp(np.array(50.0))), 30)
    (-23.02585093, -1.92874985e-22)
    """
    x = _inexact(x)
    small = ew.lt_p.bind(x, _const(np.log(2.0), x))
    # Double where (NOTE: [no NaN gradients]): each branch sees only arguments where it is finite,
    # else log1p(-exp(-1e-20)) = -inf poisons the derivative of the selected branch with 0 * inf.
    one = _const(1.0, x)
    x_small, x_large = select(small, x, one), select(small, one, x)
    return select(
        small,
        ew.log_p.bind(ew.neg_p.bind(ew.expm1_p.bind(ew.neg_p.bind(x_small)))),
        ew.log1p_p.bind(ew.neg_p.bind(ew.exp_p.bind(ew.neg_p.bind(x_large)))),
    )


@jitted_eagerly(static_argnames=("axis", "keepdims"))
def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
    """``log(mean(exp(x)))`` over ``axis`` without overflow: ``logsumexp(x) - log(n)``, where ``n``
    counts the elements reduced (those selected by ``where``).

    >>> float(logmeanexp(np.array([1000.0, 1000.0])))
    1000.0
    """
    x = _inexact(x)
    lse = logsumexp(x, axis=axis, keepdims=keepdims, where=where)
    ones = fnp.ones_like(x)
    count = fnp.sum(ones, axis=axis, keepdims=keepdims, where=where)
    return ew.sub_p.bind(lse, ew.log_p.bind(fnp.asarray(count, aval(lse).dtype)))


# NOTE: [surface templates]: every public function defined above is templated (the rule, not a mark).
template_public_functions(globals())
