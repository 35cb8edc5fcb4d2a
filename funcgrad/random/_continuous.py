"""``funcgrad.random``: continuous distributions beyond the uniform and normal ones.

Layer: surface. Imports funcgrad.numpy, funcgrad.lax, funcgrad.api (``vmap``), the kernel's
``custom_jvp`` and ``funcgrad.random._core`` and ``_basic``.

Each sampler follows JAX's algorithm step by step (``jax/_src/random/core.py``), so that with the
same key it draws the same values (up to float rounding in the last bits where XLA fuses
operations differently from NumPy). Gamma variates use Marsaglia and Tsang's rejection method, one
``while_loop`` per variate batched with ``vmap``, with the reparameterised derivative
``d sample / d alpha = random_gamma_grad(alpha, sample)`` (implicit differentiation of the CDF), so
``beta``, ``dirichlet``, ``chisquare``, ``f``, ``t`` and ``generalized_normal`` are differentiable in
their shape parameters too.
"""

from __future__ import annotations

import functools

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import api, lax
from funcgrad._placement import takes_out_sharding  # out_sharding= (JAX 0.10's explicit sharding)
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.custom_derivatives import custom_jvp
from funcgrad.kernel.library_programs import jitted_eagerly
from funcgrad.numpy._core import call_custom, concrete_int
from funcgrad.random._basic import (
    _float_dtype,
    _to,
    _uniform_for_transform,  # NOTE: [rolled threefry rounds]
    bernoulli,
    check_broadcast_shapes,
    check_safe_cast,
    check_shape,
    exponential,
    normal,
    uniform,
)
from funcgrad.random._core import (
    PRNGKey,  # noqa: F401 - the docstring examples use it
    _shape,
    key_impl,
    split,
)

__all__ = [
    "ball",
    "beta",
    "cauchy",
    "chisquare",
    "dirichlet",
    "double_sided_maxwell",
    "f",
    "gamma",
    "generalized_normal",
    "laplace",
    "loggamma",
    "logistic",
    "lognormal",
    "maxwell",
    "multivariate_normal",
    "orthogonal",
    "pareto",
    "rayleigh",
    "t",
    "triangular",
    "wald",
    "weibull_min",
]


# ----------------------------------------------------------------------------------------------
# Gamma (Marsaglia & Tsang), the base of beta, dirichlet, chisquare, f, t


def _gamma_one(key, alpha, log_space: bool):
    """One Gamma(alpha) variate (its log with ``log_space``) from one key: JAX's ``_gamma_one``."""
    dtype = alpha.dtype
    zero, one, minus_one = (np.asarray(v, dtype) for v in (0.0, 1.0, -1.0))
    boost_mask = alpha >= one
    alpha_orig = alpha
    alpha = fnp.where(boost_mask, alpha, alpha + one)
    d = alpha - np.asarray(1.0 / 3.0, dtype)
    c = np.asarray(1.0 / 3.0, dtype) / fnp.sqrt(d)

    def accept_not(state):
        _, X, V, U = state
        squeeze = U >= one - np.asarray(0.0331, dtype) * (X * X)
        log_test = fnp.log(U) >= X * np.asarray(0.5, dtype) + d * ((one - V) + fnp.log(V))
        return squeeze & log_test

    def draw(state):
        def next_xv(kxv):
            keys = split(kxv[0])
            x = normal(keys[1], (), dtype)
            return keys[0], x, one + x * c

        keys = split(state[0], 3)
        _, x, v = lax.while_loop(lambda kxv: kxv[2] <= zero, next_xv, (keys[1], zero, minus_one))
        U = uniform(keys[2], (), dtype)
        return keys[0], x * x, v * v * v, U

    keys = split(key)
    _, _, V, _ = lax.while_loop(accept_not, draw, (keys[0], zero, one, np.asarray(2.0, dtype)))
    if log_space:
        log_samples = -exponential(keys[1], (), dtype)
        log_boost = fnp.where(boost_mask | (log_samples == 0), zero, log_samples * (one / alpha_orig))
        return fnp.log(d) + fnp.log(V) + log_boost
    samples = 1 - uniform(keys[1], (), dtype)
    boost = fnp.where(boost_mask, one, samples ** (one / alpha_orig))
    return d * V * boost


def _gamma_impl(key, a, log_space):
    if a.size == 0:
        return fnp.zeros(a.shape, a.dtype)
    keys = split(key, a.size)
    one = functools.partial(_gamma_one, log_space=log_space)
    if key_impl(keys) == "threefry2x32":  # vmap draws what the loop draws: one batched program
        return api.vmap(one)(keys, a.reshape(-1)).reshape(a.shape)
    # JAX's loop: a vmapped rbg RngBitGenerator draws the batch from its first key (JAX's rule)
    return lax.map(lambda args: one(*args), (keys, a.reshape(-1))).reshape(a.shape)


_gamma_sample = custom_jvp(_gamma_impl, nondiff_argnums=(2,))


@_gamma_sample.defjvp
def _gamma_sample_jvp(log_space, primals, tangents):
    key, a = primals
    _, ta = tangents
    sample = _gamma_sample(key, a, log_space)
    if log_space:
        x = fnp.exp(sample)
        # (the sample's dtype: a custom rule may see a grad input's raw float64 value in 32-bit
        # mode, whose tiny is 0 in float32, and 0 / 0 gave NaN where jax gives 0)
        x = fnp.where(x == 0, _dt.finfo(x.dtype).tiny, x)
        grad = lax.random_gamma_grad(a, x) / x
    else:
        grad = lax.random_gamma_grad(a, sample)
    return sample, ta * grad


def _gamma(name, key, a, shape, dtype, log_space):
    dtype = _float_dtype(dtype, f"random.{name}")
    a = fnp.asarray(a)
    shape = a.shape if shape is None else _shape(shape)
    check_shape(name, shape, a.shape)
    a = _to(a, dtype, shape)
    return call_custom(_gamma_sample, key, a, log_space)


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def gamma(key, a, shape=None, dtype=None):
    """Gamma(``a``, 1) samples, differentiable in ``a`` (reparameterised: the derivative of each
    sample at fixed CDF value).

    >>> gamma(PRNGKey(0), 2.0, (3,)).shape
    (3,)
    """
    return _gamma("gamma", key, a, shape, dtype, False)


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def loggamma(key, a, shape=None, dtype=None):
    """The logarithm of Gamma(``a``, 1) samples, computed without underflow for small ``a``.

    >>> bool(loggamma(PRNGKey(0), 0.01, (3,)).max() < 0)
    True
    """
    return _gamma("loggamma", key, a, shape, dtype, True)


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def beta(key, a, b, shape=None, dtype=None):
    """Beta(``a``, ``b``) samples from two log-gamma draws (stable for small parameters).

    >>> x = beta(PRNGKey(0), 2.0, 3.0, (100,))
    >>> bool(((x > 0) & (x < 1)).all())
    True
    """
    dtype = _float_dtype(dtype, "random.beta")
    check_safe_cast("beta", dtype, a, b)
    shape = check_broadcast_shapes("beta", shape, a, b)
    keys = split(key)
    a, b = _to(a, dtype, shape), _to(b, dtype, shape)
    log_gamma_a = loggamma(keys[0], a, shape, dtype)
    log_gamma_b = loggamma(keys[1], b, shape, dtype)
    log_max = fnp.maximum(log_gamma_a, log_gamma_b)
    gamma_a, gamma_b = fnp.exp(log_gamma_a - log_max), fnp.exp(log_gamma_b - log_max)
    return gamma_a / (gamma_a + gamma_b)


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet(``alpha``) samples (``alpha``'s last axis is the categories); ``shape`` is the
    batch shape, broadcast with ``alpha.shape[:-1]``.

    >>> x = dirichlet(PRNGKey(0), fnp.array([1.0, 2.0, 3.0]), (4,))
    >>> x.shape, bool(fnp.allclose(x.sum(-1), 1.0))
    ((4, 3), True)
    """
    dtype = _float_dtype(dtype, "random.dirichlet")
    alpha = fnp.asarray(alpha)
    if alpha.ndim < 1:
        raise ValueError(
            f"random.dirichlet: alpha must have at least one dimension, got alpha.ndim == {alpha.ndim}"
        )
    shape = alpha.shape[:-1] if shape is None else _shape(shape)
    check_shape("dirichlet", shape, alpha.shape[:-1])
    log_gamma = loggamma(key, _to(alpha, dtype), (*shape, alpha.shape[-1]), dtype)
    # The softmax of the log-gammas (normalising in log space keeps tiny alphas finite). Written
    # out here: funcgrad.nn imports funcgrad.random for its initializers. (Its maximum starts at
    # -inf, as jax.nn.softmax's: an empty alpha gives an empty sample, not max's ValueError.)
    x_max = fnp.max(log_gamma, axis=-1, keepdims=True, initial=-np.inf)
    e = fnp.exp(log_gamma - lax.stop_gradient(x_max))
    return e / fnp.sum(e, axis=-1, keepdims=True)


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def chisquare(key, df, shape=None, dtype=None):
    """Chi-squared samples with ``df`` degrees of freedom: ``2 Gamma(df / 2)``.

    >>> bool((chisquare(PRNGKey(0), 3.0, (10,)) > 0).all())
    True
    """
    dtype = _float_dtype(dtype, "random.chisquare")
    shape = check_broadcast_shapes("chisquare", shape, df)
    check_safe_cast("chisquare", dtype, df)
    half_df = _to(df, dtype) / 2.0
    return fnp.exp(loggamma(key, half_df, shape, dtype)) * 2.0


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def f(key, dfnum, dfden, shape=None, dtype=None):
    """F-distribution samples: the ratio of two scaled chi-squared variates.

    >>> bool((f(PRNGKey(0), 3.0, 5.0, (10,)) > 0).all())
    True
    """
    dtype = _float_dtype(dtype, "random.f")
    shape = check_broadcast_shapes("f", shape, dfnum, dfden)
    check_safe_cast("f", dtype, dfnum, dfden)
    dfnum, dfden = _to(dfnum, dtype), _to(dfden, dtype)
    keys = split(key)
    chi2_dfn = chisquare(keys[1], dfnum, shape, dtype)
    chi2_dfd = chisquare(keys[0], dfden, shape, dtype)
    return (chi2_dfn / dfnum) / (chi2_dfd / dfden)


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def t(key, df, shape=None, dtype=None):
    """Student's t samples with ``df`` degrees of freedom: ``normal * sqrt(df / 2 / Gamma(df / 2))``.

    >>> t(PRNGKey(0), 3.0, (4,)).shape
    (4,)
    """
    dtype = _float_dtype(dtype, "random.t")
    shape = check_broadcast_shapes("t", shape, df)
    check_safe_cast("t", dtype, df)
    df = _to(df, dtype)
    keys = split(key)
    n = normal(keys[0], shape, dtype)
    half_df = df / 2.0
    g = gamma(keys[1], half_df, shape, dtype)
    return n * fnp.sqrt(half_df / g)


# ----------------------------------------------------------------------------------------------
# Transformations of one uniform or normal draw


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def cauchy(key, shape=(), dtype=None):
    """Standard Cauchy samples ``tan(pi (u - 1/2))``.

    >>> cauchy(PRNGKey(0), (3,)).shape
    (3,)
    """
    dtype = _float_dtype(dtype, "random.cauchy")
    u = _uniform_for_transform(key, shape, dtype, float(_dt.finfo(dtype).eps), 1.0)
    return fnp.tan(np.asarray(np.pi, dtype) * (u - 0.5))


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def laplace(key, shape=(), dtype=None):
    """Standard Laplace samples ``sign(u) log1p(-|u|)``, ``u`` uniform on (-1, 1).

    >>> laplace(PRNGKey(0), (3,)).shape
    (3,)
    """
    dtype = _float_dtype(dtype, "random.laplace")
    u = _uniform_for_transform(key, shape, dtype, -1.0 + float(_dt.finfo(dtype).epsneg), 1.0)
    return fnp.sign(u) * fnp.log1p(-fnp.abs(u))


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def logistic(key, shape=(), dtype=None):
    """Standard logistic samples ``log(u) - log1p(-u)``.

    >>> logistic(PRNGKey(0), (3,)).shape
    (3,)
    """
    dtype = _float_dtype(dtype, "random.logistic")
    x = _uniform_for_transform(key, shape, dtype, float(_dt.finfo(dtype).tiny), 1.0)
    return fnp.log(x) - fnp.log1p(-x)


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def pareto(key, b, shape=None, dtype=None):
    """Pareto samples with shape ``b``: ``exp(E / b)``, ``E`` exponential.

    >>> bool((pareto(PRNGKey(0), 2.0, (5,)) >= 1).all())
    True
    """
    dtype = _float_dtype(dtype, "random.pareto")
    shape = check_broadcast_shapes("pareto", shape, b)
    check_safe_cast("pareto", dtype, b)
    return fnp.exp(exponential(key, shape, dtype) / _to(b, dtype))


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def lognormal(key, sigma=np.float32(1), shape=None, dtype=None):
    """Log-normal samples ``exp(sigma * normal)``.

    >>> bool((lognormal(PRNGKey(0), 0.5, (5,)) > 0).all())
    True
    """
    dtype = _float_dtype(dtype, "random.lognormal")
    shape = check_broadcast_shapes("lognormal", shape, sigma)
    check_safe_cast("lognormal", dtype, sigma)
    return fnp.exp(normal(key, shape, dtype) * _to(sigma, dtype))


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def maxwell(key, shape=(), dtype=None):
    """Maxwell samples: the norm of a 3-D standard normal vector.

    >>> maxwell(PRNGKey(0), (2,)).shape
    (2,)
    """
    dtype = _float_dtype(dtype, "random.maxwell")
    return fnp.linalg.norm(normal(key, (*_shape(shape), 3), dtype), axis=-1)


@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Double-sided Maxwell samples ``loc + scale * sign * maxwell``; the output shape is
    ``shape + broadcast(loc, scale).shape``.

    >>> double_sided_maxwell(PRNGKey(0), 0.0, 1.0, (3,)).shape
    (3,)
    """
    dtype = _float_dtype(dtype, "random.double_sided_maxwell")
    params_shape = tuple(np.broadcast_shapes(np.shape(loc), np.shape(scale)))
    shape = _shape(shape) or params_shape
    shape = shape + params_shape  # JAX's convention: the parameters' shape is appended
    keys = split(key)
    maxwell_rvs = maxwell(keys[0], shape, dtype)
    sign = _rademacher(keys[1], shape, dtype)
    return sign * maxwell_rvs * scale + loc


def _rademacher(key, shape, dtype):
    return (2 * bernoulli(key, 0.5, shape).astype(dtype) - 1).astype(dtype)


@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull samples ``scale * (-log1p(-u)) ** (1 / concentration)``.

    >>> bool((weibull_min(PRNGKey(0), 1.0, 1.5, (5,)) >= 0).all())
    True
    """
    dtype = _float_dtype(dtype, "random.weibull_min")
    u = _uniform_for_transform(key, shape, dtype, 0.0, 1.0)
    return fnp.power(-fnp.log1p(-u), 1.0 / fnp.asarray(concentration)) * scale


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def rayleigh(key, scale, shape=None, dtype=None):
    """Rayleigh samples ``scale * sqrt(-2 log u)``.

    >>> bool((rayleigh(PRNGKey(0), 2.0, (5,)) >= 0).all())
    True
    """
    dtype = _float_dtype(dtype, "random.rayleigh")
    shape = check_broadcast_shapes("rayleigh", shape, scale)
    check_safe_cast("rayleigh", dtype, scale)
    u = _uniform_for_transform(key, shape, dtype)
    return _to(scale, dtype, shape) * fnp.sqrt(fnp.log(u) * -2.0)


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def wald(key, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian) samples with unit scale (Michael, Schucany & Haas).

    >>> bool((wald(PRNGKey(0), 1.5, (5,)) > 0).all())
    True
    """
    dtype = _float_dtype(dtype, "random.wald")
    shape = check_broadcast_shapes("wald", shape, mean)
    check_safe_cast("wald", dtype, mean)
    keys = split(key)
    mean = _to(mean, dtype, shape)
    v = normal(keys[0], shape, dtype)
    z = uniform(keys[1], shape, dtype)
    y = v * v
    y_sq = y * y
    mean_sq = mean * mean
    sqrt_term = fnp.sqrt(4 * mean * y + mean_sq * y_sq)
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return fnp.where(z <= mean / (mean + x), x, mean_sq / x)


@takes_out_sharding
def triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular samples on ``[left, right]`` with peak at ``mode`` (inverse CDF).

    >>> x = triangular(PRNGKey(0), 0.0, 0.3, 1.0, (5,))
    >>> bool(((x >= 0) & (x <= 1)).all())
    True
    """
    dtype = _float_dtype(dtype, "random.triangular")
    shape = check_broadcast_shapes("triangular", shape, left, mode, right)
    check_safe_cast("triangular", dtype, left, mode, right)
    left, mode, right = (_to(v, dtype, shape) for v in (left, mode, right))
    fc = (mode - left) / (right - left)
    u = uniform(key, shape, dtype)
    out1 = left + fnp.sqrt(u * (right - left) * (mode - left))
    out2 = right - fnp.sqrt((1 - u) * (right - left) * (right - mode))
    return fnp.where(u < fc, out1, out2)


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype"), keys=True)  # (JAX jits it)
def generalized_normal(key, p: float, shape=(), dtype=None):
    """Generalized normal samples with density ``p / (2 Gamma(1/p)) exp(-|x|**p)``.

    >>> generalized_normal(PRNGKey(0), 1.5, (3,)).shape
    (3,)
    """
    dtype = _float_dtype(dtype, "random.generalized_normal")
    shape = _shape(shape)
    keys = split(key)
    g = gamma(keys[0], 1 / p, shape, dtype)
    r = _rademacher(keys[1], shape, dtype)
    return r * g ** (1 / p)


@takes_out_sharding
@jitted_eagerly(static_argnames=("d", "shape", "dtype"), keys=True)  # (JAX jits it)
def ball(key, d: int, p: float = 2, shape=(), dtype=None):
    """Points drawn uniformly from the unit ``p``-norm ball in ``d`` dimensions (shape ``(*shape, d)``).

    >>> x = ball(PRNGKey(0), 3, shape=(10,))
    >>> x.shape, bool((fnp.linalg.norm(x, axis=-1) <= 1).all())
    ((10, 3), True)
    """
    dtype = _float_dtype(dtype, "random.ball")
    d = concrete_int(d, "random.ball: d")
    shape = _shape(shape)
    keys = split(key)
    g = generalized_normal(keys[0], p, (*shape, d), dtype)
    e = exponential(keys[1], shape, dtype)
    return g / (((fnp.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]


# ----------------------------------------------------------------------------------------------
# Multivariate


@takes_out_sharding
@jitted_eagerly(static_argnames=("shape", "dtype", "method"), keys=True)  # (JAX jits it)
def multivariate_normal(key, mean, cov, shape=None, dtype=None, method: str = "cholesky"):
    """Multivariate normal samples ``mean + factor @ normal`` with ``cov = factor factor^T``
    (``method``: ``"cholesky"``, ``"eigh"`` or ``"svd"``); ``shape`` is the batch shape, broadcast
    with ``mean.shape[:-1]`` and ``cov.shape[:-2]``. Differentiable in ``mean`` and ``cov``. The
    factorisations are ``funcgrad.numpy.linalg``'s (LAPACK's).

    >>> multivariate_normal(PRNGKey(0), fnp.zeros(2), fnp.eye(2), (5,)).shape
    (5, 2)
    """
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError(
            f"random.multivariate_normal: method must be 'svd', 'eigh' or 'cholesky', got {method!r}"
        )
    mean, cov = fnp.asarray(mean), fnp.asarray(cov)
    if not fnp.issubdtype(mean.dtype, fnp.inexact):
        mean = mean.astype(_dt.default_float)
    dtype = _float_dtype(mean.dtype if dtype is None else dtype, "random.multivariate_normal")
    if mean.ndim < 1:
        raise ValueError(f"random.multivariate_normal requires mean.ndim >= 1, got mean.ndim == {mean.ndim}")
    if cov.ndim < 2:
        raise ValueError(f"random.multivariate_normal requires cov.ndim >= 2, got cov.ndim == {cov.ndim}")
    n = mean.shape[-1]
    if cov.shape[-2:] != (n, n):
        raise ValueError(
            f"random.multivariate_normal requires cov.shape == (..., n, n) for n={n}, but got "
            f"cov.shape == {cov.shape}"
        )
    if shape is None:
        shape = tuple(np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2]))
    else:
        shape = _shape(shape)
        check_shape("multivariate_normal", shape, mean.shape[:-1], cov.shape[:-2])
    cov = cov.astype(mean.dtype) if cov.dtype != mean.dtype else cov
    if method == "svd":
        u, s, _ = fnp.linalg.svd(cov)
        factor = u * fnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = fnp.linalg.eigh(cov)
        factor = v * fnp.sqrt(w[..., None, :])
    else:
        factor = fnp.linalg.cholesky(cov)
    samples = normal(key, (*shape, n), dtype)
    out = fnp.einsum("...ij,...j->...i", factor, samples)
    # (mean's leading axes added explicitly: no implicit rank promotion, which JAX's test default
    # jax_numpy_rank_promotion='raise' refused for a mean of shape (n,) and shape=(k,))
    return fnp.broadcast_to(mean, out.shape) + out


@takes_out_sharding
def orthogonal(key, n: int, shape=(), dtype=None, m: int | None = None):
    """Random matrices with orthonormal columns (rows, if ``n < m``), uniformly distributed (Haar
    measure): the Q of a QR decomposition of a normal matrix, signs fixed by R's diagonal.
    The result has shape ``(*shape, n, m)`` (``m = n`` by default). The QR decomposition is
    ``funcgrad.numpy.linalg.qr`` (LAPACK's).

    >>> q = orthogonal(PRNGKey(0), 3)
    >>> bool(fnp.allclose(q @ q.T, fnp.eye(3)))
    True
    """
    dtype = _float_dtype(dtype, "random.orthogonal")
    n = concrete_int(n, "random.orthogonal: n")
    m = n if m is None else concrete_int(m, "random.orthogonal: m")
    shape = _shape(shape)
    z = normal(key, (*shape, max(n, m), min(n, m)), dtype)
    q, r = fnp.linalg.qr(z)
    d = fnp.diagonal(r, axis1=-2, axis2=-1)
    x = q * fnp.expand_dims(fnp.sign(d), -2)
    return fnp.swapaxes(x, -1, -2) if n < m else x
