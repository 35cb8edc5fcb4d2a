"""funcgrad.nn's normalisations: ``logsumexp``, ``softmax``, ``log_softmax`` and ``standardize``
(jax.nn's names, signatures and semantics; funcgrad.nn re-exports them).

Layer: surface. Imports ``funcgrad.numpy`` (and its ``_core`` helpers), the kernel's custom
derivatives, rule switches and eager programs, the primitive catalog (elementwise family) and
funcgrad.nn's ``_helpers``.
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.kernel import custom_rule_args as _custom_rule_args
from funcgrad.kernel.custom_derivatives import custom_jvp
from funcgrad.kernel.library_programs import jitted_eagerly
from funcgrad.kernel.templates import template_public_functions
from funcgrad.nn._helpers import _const, _inexact, _no_bool_shift, _no_complex_clip
from funcgrad.numpy._core import (
    aval,
    broadcast_to,
    call_custom,
    normalize_axes,
    promote_args_inexact,
    select,
)
from funcgrad.primitives import elementwise as ew


def _reduction_axes(x, axis):
    return normalize_axes(axis, x.ndim)


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False, where=None):
    """``log(sum(b * exp(a)))`` over ``axis`` without overflow (jax.scipy.special.logsumexp).

    ``b`` scales the terms (zeros drop them); with ``return_sign`` the result is
    ``(log|sum|, sign)``, otherwise a negative sum gives NaN. Complex terms give the log of the sum on the
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


# NOTE: [surface templates]: every public function defined above is templated (the rule, not a mark).
template_public_functions(globals())
