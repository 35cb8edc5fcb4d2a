"""``funcgrad.scipy.stats``: ``mode``, ``rankdata``, ``sem`` and ``gaussian_kde``.

Layer: surface. Imports funcgrad.numpy, funcgrad.lax, funcgrad.api (``vmap``), funcgrad.random
and funcgrad.scipy.special.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import api, lax
from funcgrad import random as _random
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.numpy._core import check_arraylike, normalize_axis
from funcgrad.scipy import special
from funcgrad.scipy.stats._util import promote_args_inexact, promote_dtypes_inexact

__all__ = ["ModeResult", "gaussian_kde", "mode", "rankdata", "sem"]


class ModeResult(NamedTuple):
    """The result of ``mode``: the most frequent values and their counts."""

    mode: object
    count: object


def _check_nan_policy(name, nan_policy):
    # (JAX's errors and words: a ValueError for an unknown policy, NotImplementedError for the two
    # that need to know before compiling whether the data holds NaNs)
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(
            f"Illegal nan_policy value {nan_policy!r}; expected one of {{'propagate', 'omit', 'raise'}}"
        )
    if nan_policy == "omit":
        raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")
    if nan_policy == "raise":
        raise NotImplementedError(
            f"In order to best JIT compile `{name}`, we cannot know whether `x` contains nans. Please "
            f"check if nans exist in `x` outside of the `{name}` function."
        )


def mode(a, axis=0, nan_policy="propagate", keepdims=False):
    """The most common value along ``axis`` (the smallest on ties) and its count.

    >>> r = mode(fnp.array([1, 2, 2, 3, 3]))
    >>> int(r.mode), int(r.count)
    (2, 2)
    """
    check_arraylike("mode", a)
    _check_nan_policy("mode", nan_policy)
    x = fnp.atleast_1d(fnp.asarray(a))
    if axis is None:
        x, axis = x.ravel(), 0
        out_shape = (1,) * fnp.ndim(a) if keepdims else ()
    else:
        axis = normalize_axis(axis, x.ndim)
        out_shape = (
            tuple(1 if i == axis else s for i, s in enumerate(x.shape))
            if keepdims
            else tuple(s for i, s in enumerate(x.shape) if i != axis)
        )
    x = fnp.moveaxis(x, axis, 0)
    n = x.shape[0]
    x = x.reshape(n, math.prod(x.shape[1:]))
    if n == 0:
        nan = fnp.full(out_shape, np.nan)
        return ModeResult(nan, fnp.zeros(out_shape))
    # Sorted columns: a value's count is the length of its run; the first longest run wins.
    s = fnp.sort(x, axis=0)
    idx = fnp.arange(n)[:, None]
    first = fnp.concatenate([fnp.ones((1, s.shape[1]), bool), s[1:] != s[:-1]], axis=0)
    start = lax.cummax(fnp.where(first, idx, 0), axis=0)
    counts = idx - start + 1
    best = fnp.argmax(counts, axis=0)
    cols = fnp.arange(s.shape[1])
    return ModeResult(s[best, cols].reshape(out_shape), counts[best, cols].reshape(out_shape))


def _invert_permutation(i):
    return fnp.empty_like(i).at[i].set(fnp.arange(i.size, dtype=i.dtype))


def _rank_1d(a, method):
    arr, sorter = lax.sort_key_val(a, fnp.arange(a.size))
    inv = _invert_permutation(sorter)
    if method == "ordinal":
        return (inv + 1).astype(_dt.default_float)
    obs = fnp.concatenate([fnp.array([True]), arr[1:] != arr[:-1]])
    dense = fnp.cumsum(obs)[inv]
    if method == "dense":
        return dense.astype(_dt.default_float)
    count = fnp.nonzero(obs, size=arr.size + 1, fill_value=obs.size)[0].astype(_dt.default_float)
    if method == "max":
        return count[dense]
    if method == "min":
        return count[dense - 1] + 1
    return 0.5 * (count[dense] + count[dense - 1] + 1)


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
    """Ranks of the data (1-based, float64), ties resolved by ``method``: ``average``, ``min``,
    ``max``, ``dense`` or ``ordinal``; NaN everywhere if the data holds a NaN.

    >>> rankdata(fnp.array([10, 20, 20, 5])).tolist()
    [2.0, 3.5, 3.5, 1.0]
    """
    check_arraylike("rankdata", a)
    _check_nan_policy("rankdata", nan_policy)
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"scipy.stats.rankdata: unknown method {method!r}")
    if axis is not None:
        a = fnp.asarray(a)
        if a.size == 0:  # (apply_along_axis cannot map over an empty axis; JAX's: empty ranks)
            return fnp.zeros(a.shape, rankdata(fnp.zeros((0,), a.dtype), method).dtype)
        return fnp.apply_along_axis(lambda v: rankdata(v, method), axis, a)
    a = fnp.ravel(fnp.asarray(a))
    ranks = _rank_1d(a, method)
    if fnp.issubdtype(a.dtype, fnp.inexact):
        ranks = fnp.where(fnp.any(fnp.isnan(a)), np.nan, ranks)
    return ranks


def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
    """The standard error of the mean ``std(a, ddof) / sqrt(n)``; ``nan_policy='omit'`` ignores NaNs.

    >>> round(float(sem(fnp.array([1.0, 2.0, 3.0, 4.0]))), 12)
    0.645497224368
    """
    (b,) = promote_args_inexact("sem", a)
    if nan_policy == "propagate":
        size = b.size if axis is None else b.shape[axis]
        # (JAX's divisor, of b's dtype: an integer or boolean array gives a strong result)
        return b.std(axis, ddof=ddof, keepdims=keepdims) / fnp.sqrt(size).astype(b.dtype)
    if nan_policy == "omit":
        count = (~fnp.isnan(b)).sum(axis, keepdims=keepdims)
        return fnp.nanstd(b, axis, ddof=ddof, keepdims=keepdims) / fnp.sqrt(count).astype(b.dtype)
    raise ValueError(f"{nan_policy} is not supported")  # (JAX's words)


# ----------------------------------------------------------------------------------------------
# gaussian_kde


@tu.register_pytree_node_class
class gaussian_kde:
    """A Gaussian kernel density estimate of ``dataset`` (``(d, n)``, or ``(n,)`` for one dimension),
    with Scott's or Silverman's bandwidth, a scalar factor or a callable, and optional weights. It
    is a pytree: it can be passed through ``jit``, ``vmap`` and ``grad``.

    >>> kde = gaussian_kde(fnp.array([0.0, 1.0, 2.0]))
    >>> round(float(kde.integrate_box_1d(-np.inf, np.inf)), 12)
    1.0
    """

    def __init__(self, dataset, bw_method=None, weights=None):
        check_arraylike("gaussian_kde", dataset)
        dataset = fnp.atleast_2d(fnp.asarray(dataset))
        if fnp.iscomplexobj(dataset):
            raise NotImplementedError("gaussian_kde does not support complex data")  # (JAX's)
        if not dataset.size > 1:
            raise ValueError("gaussian_kde: dataset should have multiple elements")
        d, n = dataset.shape
        if weights is not None:
            check_arraylike("gaussian_kde", weights)
            dataset, weights = promote_dtypes_inexact("gaussian_kde", dataset, weights)
            weights = fnp.atleast_1d(weights)
            if weights.ndim != 1 or weights.shape[0] != n:
                raise ValueError(
                    f"gaussian_kde: weights must be one-dimensional of length {n}, got {weights.shape}"
                )
            weights = weights / fnp.sum(weights)
        else:
            (dataset,) = promote_dtypes_inexact("gaussian_kde", dataset)
            weights = fnp.full(n, 1.0 / n, dtype=dataset.dtype)
        self.dataset, self.weights = dataset, weights
        self.neff = 1.0 / fnp.sum(weights**2)
        bw_method = "scott" if bw_method is None else bw_method
        if isinstance(bw_method, str) and bw_method == "scott":
            factor = self.neff ** (-1.0 / (d + 4))
        elif isinstance(bw_method, str) and bw_method == "silverman":
            factor = (self.neff * (d + 2) / 4.0) ** (-1.0 / (d + 4))
        elif callable(bw_method):
            factor = bw_method(self)
        elif not isinstance(bw_method, str) and fnp.ndim(bw_method) == 0:
            factor = bw_method
        else:
            raise ValueError(
                "gaussian_kde: bw_method should be 'scott', 'silverman', a scalar or a callable, "
                f"got {bw_method!r}"
            )
        data_cov = fnp.atleast_2d(fnp.cov(dataset, rowvar=True, bias=False, aweights=weights))
        self.covariance = data_cov * factor**2
        self.inv_cov = fnp.linalg.inv(data_cov) / factor**2

    def tree_flatten(self):
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        kde = cls.__new__(cls)
        kde.neff, kde.dataset, kde.weights, kde.covariance, kde.inv_cov = children
        return kde

    @property
    def d(self):
        """The number of dimensions."""
        return self.dataset.shape[0]

    @property
    def n(self):
        """The number of data points."""
        return self.dataset.shape[1]

    def _points(self, points):
        points = fnp.atleast_2d(fnp.asarray(points))
        if fnp.iscomplexobj(points):
            raise NotImplementedError("gaussian_kde does not support complex coordinates")  # (JAX's)
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                return points.reshape(self.d, 1)
            raise ValueError(f"gaussian_kde: points have dimension {d}, the dataset has dimension {self.d}")
        return points

    def _log_kernel(self, points):
        """``log(weight_i N(x_j; data_i, covariance))`` of shape ``(m, n)``."""
        diff = points.T[:, None, :] - self.dataset.T[None, :, :]
        quad = fnp.einsum("mni,ij,mnj->mn", diff, self.inv_cov, diff)
        _, logdet = fnp.linalg.slogdet(self.inv_cov)
        log_norm = 0.5 * logdet - 0.5 * self.d * float(np.log(2 * np.pi))
        return fnp.log(self.weights)[None, :] + log_norm - 0.5 * quad

    def evaluate(self, points):
        """The estimated density at ``points`` (``(d, m)``).

        >>> kde = gaussian_kde(fnp.array([0.0, 1.0]), bw_method=1.0)
        >>> kde.evaluate(fnp.array([0.5])).shape
        (1,)
        """
        check_arraylike("evaluate", points)
        return fnp.exp(self.logpdf(points))

    __call__ = evaluate

    def pdf(self, x):
        """The estimated density (``evaluate``)."""
        return self.evaluate(x)

    def logpdf(self, x):
        """The log of the estimated density, computed with ``logsumexp``."""
        check_arraylike("logpdf", x)
        return special.logsumexp(self._log_kernel(self._points(x)), axis=1)

    def integrate_gaussian(self, mean, cov):
        """The integral of the density times the Gaussian ``N(mean, cov)``."""
        mean = fnp.atleast_1d(fnp.squeeze(fnp.asarray(mean)))
        cov = fnp.atleast_2d(fnp.asarray(cov))
        if mean.shape != (self.d,) or cov.shape != (self.d, self.d):
            raise ValueError(f"gaussian_kde.integrate_gaussian: mean and cov must have dimension {self.d}")
        return _gaussian_convolve(self.covariance + cov, self.dataset, self.weights, mean)

    def integrate_box_1d(self, low, high):
        """The probability mass between ``low`` and ``high`` (one-dimensional data only)."""
        if self.d != 1:
            raise ValueError("gaussian_kde.integrate_box_1d only handles one-dimensional data")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("gaussian_kde.integrate_box_1d: the limits must be scalars")
        sigma = fnp.squeeze(fnp.sqrt(self.covariance))
        lo = fnp.squeeze((low - self.dataset) / sigma)
        hi = fnp.squeeze((high - self.dataset) / sigma)
        return fnp.sum(self.weights * (special.ndtr(hi) - special.ndtr(lo)))

    def integrate_kde(self, other):
        """The integral of the product of this density and ``other``'s."""
        if other.d != self.d:
            raise ValueError("gaussian_kde.integrate_kde: the KDEs have different dimensions")
        cov = self.covariance + other.covariance
        small, large = (self, other) if self.n < other.n else (other, self)
        per_point = api.vmap(lambda m: _gaussian_convolve(cov, large.dataset, large.weights, m), in_axes=1)
        return fnp.sum(per_point(small.dataset) * small.weights)

    def resample(self, key, shape=()):
        """Draw samples of shape ``(d, *shape)`` from the estimate."""
        ind_key, eps_key = _random.split(key)
        ind = _random.choice(ind_key, self.n, shape=shape, p=self.weights)
        zero = fnp.zeros(self.d, self.covariance.dtype)
        eps = _random.multivariate_normal(
            eps_key, zero, self.covariance, shape=shape, dtype=self.dataset.dtype
        )
        return self.dataset[:, ind] + fnp.moveaxis(eps, -1, 0)

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        """Box integrals in more than one dimension are refused (as in JAX): use ``integrate_box_1d``."""
        raise NotImplementedError("only 1D box integrations are supported; use `integrate_box_1d`")

    def set_bandwidth(self, bw_method=None):
        """Refused (as in JAX): the estimate is immutable; build a new ``gaussian_kde``."""
        raise NotImplementedError("dynamically changing the bandwidth method is not supported")


def _gaussian_convolve(cov, target, weights, mean):
    diff = target - mean[:, None]
    alpha = fnp.linalg.solve(cov, diff)
    _, logdet = fnp.linalg.slogdet(cov)
    d = cov.shape[0]
    norm = fnp.exp(-0.5 * (logdet + d * float(np.log(2 * np.pi))))
    return norm * fnp.sum(fnp.exp(-0.5 * fnp.sum(diff * alpha, axis=0)) * weights)
