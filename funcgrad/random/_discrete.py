"""``funcgrad.random``: permutations, choices and discrete distributions (Poisson, binomial,
multinomial, geometric, Rademacher).

Layer: surface. Imports funcgrad.numpy, funcgrad.lax and ``funcgrad.random._core`` and ``_basic``.

The algorithms are JAX's step by step (``jax/_src/random/core.py``), so the same key draws the
same values: ``permutation`` sorts by random bits (enough rounds for no collisions), ``choice``
uses cumulative sums (with replacement) or Gumbel top-k (without) for weighted draws, Poisson
counts use Knuth's product of uniforms below a mean of 10 and Hormann's transformed rejection
above (computed in float32, as JAX does), binomial counts use inversion or Hormann's BTRS.
"""

from __future__ import annotations

import math

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad._placement import takes_out_sharding  # out_sharding= (JAX 0.10's explicit sharding)
from funcgrad.jitting import jit
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.numpy._core import concrete_int, normalize_axis
from funcgrad.random._basic import (
    _float_dtype,
    _int_dtype,
    _to,
    bernoulli,
    check_broadcast_shapes,
    check_shape,
    gumbel,
    randint,
    uniform,
)
from funcgrad.random._core import (
    PRNGKey,  # noqa: F401 - the docstring examples use it
    _random_bits,
    _shape,
    split,
)

__all__ = ["binomial", "choice", "geometric", "multinomial", "permutation", "poisson", "rademacher"]


def _constant_size(dims) -> None:
    """JAX's refusal to shuffle an array whose size a symbolic export traces (its round count
    depends on the size)."""
    if any(getattr(d, "traced", False) for d in dims):
        size = 1
        for d in dims:
            size = size * d
        raise NotImplementedError(  # (JAX's words)
            "shape polymorphism for `permutation` or `shuffle` for arrays of non-constant size: "
            f"{getattr(size, 'expr', size)}"
        )


def _shuffle(key, x, axis):
    """Sort ``x`` along ``axis`` by random 32-bit keys, in enough rounds that the chance of two
    equal sort keys is negligible (JAX's ``_shuffle``)."""
    _constant_size(x.shape)
    exponent = 3
    uint32max = np.iinfo(np.uint32).max
    num_rounds = int(np.ceil(exponent * np.log(max(1, x.size)) / np.log(uint32max)))
    for _ in range(num_rounds):
        keys = split(key)
        key, subkey = keys[0], keys[1]
        sort_keys = _random_bits(subkey, 32, x.shape)
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


@takes_out_sharding
def permutation(key, x, axis: int = 0, independent: bool = False):
    """A random permutation of ``arange(x)`` (an int ``x``) or of ``x`` along ``axis``; with
    ``independent=True`` each slice along the other axes is shuffled independently.

    >>> sorted(permutation(PRNGKey(0), 5).tolist())
    [0, 1, 2, 3, 4]
    """
    if not isinstance(x, core.Tracer | fnp.ndarray) and np.ndim(x) == 0:
        _constant_size((x,))
        n = concrete_int(x, "random.permutation: x (an int: the size to permute)")
        return _shuffle(key, fnp.arange(n), 0)
    x = fnp.asarray(x)
    if x.ndim == 0:
        if not fnp.issubdtype(x.dtype, fnp.integer):
            raise TypeError("random.permutation: x must be an integer or at least one-dimensional")
        return _shuffle(key, fnp.arange(concrete_int(x, "random.permutation: x")), 0)
    axis = normalize_axis(axis, x.ndim)
    if independent or x.ndim == 1:
        return _shuffle(key, x, axis)
    _constant_size((x.shape[axis],))
    ind = _shuffle(key, fnp.arange(x.shape[axis]), 0)
    return fnp.take(x, ind, axis, unique_indices=True)


def choice(key, a, shape=(), replace: bool = True, p=None, axis: int = 0, mode: str | None = None):
    """Samples from ``arange(a)`` (an int ``a``) or from ``a`` along ``axis``: uniform, or with
    probabilities ``p``; with or without replacement.

    >>> x = choice(PRNGKey(0), 5, (3,), replace=False)
    >>> len(set(x.tolist()))
    3
    """
    if not isinstance(shape, list | tuple):
        raise TypeError(f"random.choice: shape must be a sequence, got {shape!r}")
    arr = fnp.asarray(a)
    if arr.ndim == 0:
        n_inputs = concrete_int(a, "random.choice: a (an int: the population size)")
    else:
        axis = normalize_axis(axis, arr.ndim)
        n_inputs = arr.shape[axis]
    shape = tuple(shape)
    n_draws = math.prod(shape)
    if n_draws == 0:
        return fnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("random.choice: a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(
            f"random.choice: cannot take a larger sample ({n_draws}) than the population ({n_inputs}) "
            "when replace=False"
        )
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else fnp.take(arr, ind, axis)
        else:
            index = (slice(None),) * axis + (slice(n_draws),)
            result = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)[index]
    else:
        p_arr = fnp.asarray(p)
        if not fnp.issubdtype(p_arr.dtype, fnp.inexact):
            p_arr = p_arr.astype(_dt.default_float)
        if p_arr.shape != (n_inputs,):
            raise ValueError(
                f"random.choice: p must be None or a 1-D vector of the size of a.shape[axis] ({n_inputs}), "
                f"got shape {p_arr.shape}"
            )
        if replace:
            p_cuml = fnp.cumsum(p_arr)
            r = p_cuml[-1] * (1 - uniform(key, shape, dtype=p_cuml.dtype))
            ind = fnp.searchsorted(p_cuml, r).astype(_dt.default_int)
        else:
            g = gumbel(key, (n_inputs,), dtype=p_arr.dtype, mode=mode) + fnp.log(p_arr)
            ind = lax.top_k(g, n_draws)[1].astype(_dt.default_int)
        result = ind if arr.ndim == 0 else fnp.take(arr, ind, axis)
    out_shape = shape if arr.ndim == 0 else arr.shape[:axis] + shape + arr.shape[axis + 1 :]
    return result.reshape(out_shape)


@takes_out_sharding
def rademacher(key, shape=(), dtype=None):
    """Rademacher samples: -1 or +1 with equal probability.

    >>> set(rademacher(PRNGKey(0), (20,)).tolist()) <= {-1, 1}
    True
    """
    dtype = (
        _int_dtype(dtype, "random.rademacher")
        if dtype is None or np.dtype(dtype).kind in "iu"
        else np.dtype(dtype)
    )
    b = bernoulli(key, 0.5, _shape(shape)).astype(dtype)
    return (2 * b - 1).astype(dtype)


@takes_out_sharding
def geometric(key, p, shape=None, dtype=None):
    """Geometric samples: the number of Bernoulli(``p``) trials up to the first success (>= 1).

    >>> bool((geometric(PRNGKey(0), 0.3, (10,)) >= 1).all())
    True
    """
    dtype = _int_dtype(dtype, "random.geometric")
    shape = check_broadcast_shapes("geometric", shape, p)
    p = fnp.asarray(p)
    if not fnp.issubdtype(p.dtype, fnp.inexact):
        p = p.astype(_dt.default_float)
    u = uniform(key, shape, p.dtype)
    u = fnp.where(u == 0, 1, u)
    g = fnp.floor(fnp.log(u) / fnp.broadcast_to(fnp.log1p(-p), shape)) + 1
    return g.astype(dtype)


# ----------------------------------------------------------------------------------------------
# Poisson


def _poisson_knuth(key, lam, shape, dtype, max_iters):
    def body(carry):
        i, k, rng, log_prod = carry
        keys = split(rng)
        rng, subkey = keys[0], keys[1]
        k = fnp.where(log_prod > -lam, k + 1, k)
        u = uniform(subkey, shape, np.float32)
        return i + 1, k, rng, log_prod + fnp.log(u)

    def cond(carry):
        i, log_prod = carry[0], carry[3]
        return fnp.any(log_prod > -lam) & (i < max_iters)

    init = (fnp.asarray(0, dtype), fnp.zeros(shape, dtype), key, fnp.zeros(shape, np.float32))
    k = lax.while_loop(cond, body, init)[1]
    return (k - 1).astype(dtype)


def _poisson_rejection(key, lam, shape, dtype, max_iters):
    log_lam = fnp.log(lam)
    b = 0.931 + 2.53 * fnp.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body(carry):
        i, k_out, accepted, key = carry
        keys = split(key, 3)
        key = keys[0]
        u = uniform(keys[1], shape, lam.dtype) - 0.5
        v = uniform(keys[2], shape, lam.dtype)
        u_shifted = 0.5 - fnp.abs(u)
        k = fnp.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = fnp.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t = -lam + k * log_lam - lax.lgamma(k + 1)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept = accept1 | (~reject & (s <= t))
        return i + 1, fnp.where(accept, k, k_out), accepted | accept, key

    def cond(carry):
        i, _, accepted, _ = carry
        return fnp.any(~accepted) & (i < max_iters)

    init = (fnp.asarray(0, dtype), fnp.full(shape, -1, lam.dtype), fnp.zeros(shape, bool), key)
    return lax.while_loop(cond, body, init)[1].astype(dtype)


@takes_out_sharding
def poisson(key, lam, shape=None, dtype=None):
    """Poisson samples with mean ``lam`` (computed in float32, as JAX does).

    >>> x = poisson(PRNGKey(0), 3.0, (1000,))
    >>> bool(abs(float(x.mean()) - 3.0) < 0.3)
    True
    """
    dtype = _int_dtype(dtype, "random.poisson")
    lam = fnp.asarray(lam)
    shape = lam.shape if shape is None else _shape(shape)
    check_shape("poisson", shape, lam.shape)
    lam = lax.convert_element_type(fnp.broadcast_to(lam, shape), np.float32)
    use_knuth = (lam != lam) | (lam < 10)
    lam_knuth = fnp.where(use_knuth, lam, np.float32(0.0))
    lam_rejection = fnp.where(use_knuth, np.float32(100000.0), lam)
    max_iters = np.iinfo(dtype).max
    result = fnp.where(
        use_knuth,
        _poisson_knuth(key, lam_knuth, shape, dtype, max_iters),
        _poisson_rejection(key, lam_rejection, shape, dtype, max_iters),
    )
    return fnp.where(lam == 0, fnp.zeros_like(result), result)


# ----------------------------------------------------------------------------------------------
# Binomial and multinomial

_STIRLING_TAIL = [0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                  0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.010411265261972,
                  0.00925546218271273, 0.00833056343336287]  # fmt: skip


def _stirling_approx_tail(k):
    tail_values = fnp.asarray(np.asarray(_STIRLING_TAIL, k.dtype))
    use_table = k <= 9
    k = fnp.clip(k, 0.0, 9.0)
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    return fnp.where(use_table, tail_values[fnp.floor(k).astype(np.int32)], approx)


def _binomial_inversion(key, count, prob, shape, dtype, max_iters):
    log1minusprob = fnp.log1p(-prob)

    def body(carry):
        i, num_geom, geom_sum, key = carry
        keys = split(key)
        subkey, key = keys[0], keys[1]
        num_geom_out = fnp.where(geom_sum <= count, num_geom + 1, num_geom)
        u = uniform(subkey, shape, prob.dtype)
        geom = fnp.ceil(fnp.log(u) / log1minusprob)
        return i + 1, num_geom_out, geom_sum + geom, key

    def cond(carry):
        i, geom_sum = carry[0], carry[2]
        return fnp.any(geom_sum <= count) & (i < max_iters)

    zeros = fnp.zeros(shape, prob.dtype)
    k = lax.while_loop(cond, body, (fnp.asarray(0.0, prob.dtype), zeros, zeros, key))[1]
    return (k - 1).astype(dtype)


def _btrs(key, count, prob, shape, dtype, max_iters):
    """Hormann's transformed rejection with squeeze (BTRS) for ``count * prob > 10``."""
    stddev = fnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = fnp.floor((count + 1) * prob)

    def body(carry):
        i, k_out, accepted, key = carry
        keys = split(key, 3)
        key = keys[0]
        u = uniform(keys[1], shape, prob.dtype)
        v = uniform(keys[2], shape, prob.dtype)
        u = u - 0.5
        us = 0.5 - fnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = fnp.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = fnp.log(v * alpha / (a / (us * us) + b))
        ub = (
            (m + 0.5) * fnp.log((m + 1) / (r * (count - m + 1)))
            + (count + 1) * fnp.log((count - m + 1) / (count - k + 1))
            + (k + 0.5) * fnp.log(r * (count - k + 1) / (k + 1))
            + _stirling_approx_tail(m)
            + _stirling_approx_tail(count - m)
            - _stirling_approx_tail(k)
            - _stirling_approx_tail(count - k)
        )
        accept = accept1 | (~reject & (v <= ub))
        return i + 1, fnp.where(accept, k, k_out), accepted | accept, key

    def cond(carry):
        i, accepted = carry[0], carry[2]
        return fnp.any(~accepted) & (i < max_iters)

    init = (fnp.asarray(0.0, prob.dtype), fnp.full(shape, -1.0, prob.dtype), fnp.zeros(shape, bool), key)
    return lax.while_loop(cond, body, init)[1].astype(dtype)


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(``n``, ``p``) samples (floats, as in JAX; NaN for invalid parameters, inf for an
    infinite ``n``).

    >>> x = binomial(PRNGKey(0), 10.0, 0.3, (1000,))
    >>> bool(abs(float(x.mean()) - 3.0) < 0.3)
    True
    """
    dtype = _float_dtype(dtype, "random.binomial")
    shape = check_broadcast_shapes("binomial", shape, n, p)
    prob = fnp.asarray(p)
    if not fnp.issubdtype(prob.dtype, fnp.inexact):
        prob = prob.astype(_dt.default_float)
    count = _to(n, prob.dtype, shape)
    prob = fnp.broadcast_to(prob, shape)
    p_lt_half = prob < 0.5
    q = fnp.where(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = (count != count) | (count < 0.0)
    count_inf = fnp.isinf(count)
    q_is_nan = q != q
    q_l_0 = q < 0.0
    q = fnp.where(q_is_nan | q_l_0, 0.01, q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count = fnp.floor(count)
    count_inv = fnp.where(use_inversion, count, 0.0)
    count_btrs = fnp.where(use_inversion, 10000.0, count)
    q_btrs = fnp.where(use_inversion, 0.5, q)
    max_iters = float(_dt.finfo(dtype).max)
    samples = fnp.where(
        use_inversion,
        _binomial_inversion(key, count_inv, q, shape, dtype, max_iters),
        _btrs(key, count_btrs, q_btrs, shape, dtype, max_iters),
    )
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = fnp.where(invalid, np.nan, samples)
    samples = fnp.where(count_inf & ~invalid, np.inf, samples)
    return fnp.where(
        p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples, count.astype(dtype) - samples
    )


def multinomial(key, n, p, *, shape=None, dtype=None, unroll: int | bool = 1):
    """Multinomial counts of ``n`` trials with category probabilities ``p`` (last axis), drawn as a
    chain of conditional binomials; ``shape`` (including the categories) defaults to ``p.shape``.
    ``unroll`` is the scan's unrolling (accepted: funcgrad's scan unrolls on its own terms).

    >>> x = multinomial(PRNGKey(0), 10.0, fnp.array([0.2, 0.3, 0.5]))
    >>> float(x.sum())
    10.0
    """
    n, p = fnp.asarray(n), fnp.asarray(p)
    if not fnp.issubdtype(p.dtype, fnp.inexact):
        p = p.astype(_dt.default_float)
    n = n.astype(p.dtype)
    shape = p.shape if shape is None else _shape(shape)
    # Compiled as one program: eagerly, the scan of rejection-sampling binomials ran its body op by
    # op (a minute for 1e5 trials, where JAX compiles the scan).
    return _multinomial_program(key, n, p, shape, dtype)


def _multinomial(key, n, p, shape, dtype):
    n = fnp.broadcast_to(n, shape[:-1])
    p = fnp.broadcast_to(p, shape)
    p = fnp.moveaxis(p, -1, 0)
    remaining = lax.cumsum(p, 0, reverse=True)
    ratios = p / fnp.where(remaining == 0, 1, remaining)
    keys = split(key, ratios.shape[0])

    def step(remainder, ratio_key):
        ratio, k = ratio_key
        count = binomial(k, remainder, fnp.clip(ratio, 0, 1), dtype=remainder.dtype)
        return remainder - count, count

    _, counts = lax.scan(step, n, (ratios, keys))
    out = fnp.moveaxis(counts, 0, -1)
    return out if dtype is None else out.astype(dtype)


_multinomial_program = jit(_multinomial, static_argnums=(3, 4))
