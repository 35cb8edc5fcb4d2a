"""GradBench eval ``kmeans``: the k-means cost and one Newton direction (benchmark code).

``cost = sum_i min_k |p_i - c_k|^2``; ``dir = grad / (H 1)``, the gradient divided by the
Hessian-vector product with a vector of ones. The Hessian is diagonal here (each point pulls only
its nearest centroid), so ``H 1`` is the Hessian's diagonal: one forward-over-reverse ``jvp`` of
the gradient, as the eval's reference does.
"""

import numpy as np

import funcgrad
import funcgrad.numpy as jnp
from funcgrad_tool.runs import evaluation, to_float, to_list


def kmeans_cost(points, centroids):
    # |p - c|^2 = |p|^2 + |c|^2 - 2 p.c, one matrix product for all pairs
    d2 = (
        jnp.sum(points * points, axis=1)[:, None]
        + jnp.sum(centroids * centroids, axis=1)[None, :]
        - 2.0 * points @ centroids.T
    )
    return jnp.sum(jnp.min(d2, axis=1))


def _cost_by_centroid(points, centroids):
    # The same cost with the pairs laid out (k, n), the minimum over the centroids' axis 0, as
    # jax's tool writes it: XLA runs the derivative's program 0.83x the time of the (n, k)
    # layout's (10.7 against 12.8 ms of CPU, n=10000, k=100, d=32, one thread, load 13), but the
    # cost alone 5.5x slower (13.7 against 2.5 ms; jax's program of it 14.5 ms), so each keeps
    # its faster layout.
    d2 = (
        jnp.sum(points * points, axis=1)[None, :]
        + jnp.sum(centroids * centroids, axis=1)[:, None]
        - 2.0 * (points @ centroids.T).T
    )
    return jnp.sum(jnp.min(d2, axis=0))


def direction(points, centroids):
    g = funcgrad.grad(_cost_by_centroid, argnums=1)
    grad, hess_ones = funcgrad.jvp(lambda c: g(points, c), (centroids,), (jnp.ones_like(centroids),))
    return grad / hess_ones


_cost = funcgrad.jit(kmeans_cost)
_dir = funcgrad.jit(direction)


def _pre(input):
    points = funcgrad.device_put(np.asarray(input["points"], dtype=np.float64))
    centroids = funcgrad.device_put(np.asarray(input["centroids"], dtype=np.float64))
    return points, centroids


@evaluation(pre=_pre, post=to_float)
def cost(points, centroids):
    return _cost(points, centroids)


@evaluation(pre=_pre, post=to_list)
def dir(points, centroids):  # noqa: A001 (the eval's function name)
    return _dir(points, centroids)
