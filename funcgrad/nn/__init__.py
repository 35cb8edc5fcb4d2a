"""funcgrad.nn: activation functions and their friends, with jax.nn's names, signatures and semantics;
``funcgrad.nn.initializers`` (the weight initializers) and ``dot_product_attention``.

Layer: surface. Imports ``funcgrad.numpy`` (and its ``_core`` helpers), ``funcgrad.custom_derivatives``,
the primitive catalog (elementwise family) and its own submodules: ``initializers``, ``_scaled``
(block-scaled matmuls), ``_normalizations`` (logsumexp, softmax, log_softmax, standardize),
``_attention`` (dot_product_attention) and ``_helpers`` (the formulas' shared steps).

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
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.custom_derivatives import custom_jvp
from funcgrad.kernel.library_programs import jitted_eagerly
from funcgrad.kernel.templates import template_public_functions
from funcgrad.nn import initializers
from funcgrad.nn._attention import dot_product_attention
from funcgrad.nn._helpers import (
    _const,
    _inexact,
    _inexact_formula,
    _inexact_int_formula,
    _logistic_operand,
    _no_complex_clip,
)
from funcgrad.nn._normalizations import log_softmax, logsumexp, softmax, standardize
from funcgrad.nn._scaled import get_scaled_dot_general_config, scaled_dot_general, scaled_matmul
from funcgrad.numpy._core import (
    asarray,
    aval,
    call_custom,
    concrete_int,
    constant,
    normalize_axis,
    promote_args,
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
    x = _logistic_operand(x)
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
    return ew.logistic_p.bind(_logistic_operand(x))


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
    x = _logistic_operand(x)
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
    dtype = _dt.default_float if dtype is None else dtype  # (astype canonicalises: JAX's x64 warning)
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
    return fnp.equal(expanded, classes).astype(dtype)


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
    # (jnp's x < log 2: complex operands compare lexicographically, as JAX's log1mexp does)
    small = fnp.less(x, _const(np.log(2.0), x))
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
