"""GradBench eval ``gmm``: log-likelihood of a Gaussian mixture with a Wishart prior, and its
gradient with respect to all parameters (benchmark code).

Each component ``k`` has precision factor ``Q_k = diag(exp(q_k)) + L_k`` with ``L_k`` strictly
lower triangular, filled column by column from ``l_k``. The points are kept in a
component-major layout ``(k, n, d)`` so that ``L_k (x_i - mu_k)`` for all points is one batched
matrix product with ``k`` as the batch dimension (no transposes in the program); the objective at
``d <= 4`` keeps jax's tool's point-major layout ``(n, k, d)`` instead (see ``_objective``). The gradient is
reverse mode (``grad``) over the four parameter arrays.
"""

import math

import numpy as np

import funcgrad
import funcgrad.numpy as jnp
from funcgrad.scipy.special import logsumexp, multigammaln
from funcgrad_tool.runs import evaluation, to_float


def _lower_index(d):
    """Gather index that places ``l`` (column by column, below the diagonal) in a ``d x d``
    matrix; entries on and above the diagonal point at an extra zero slot."""
    idx = np.full((d, d), d * (d - 1) // 2, dtype=np.int32)
    ii = 0
    for j in range(d):
        for i in range(j + 1, d):
            idx[i, j] = ii
            ii += 1
    return idx


def gmm_objective(alpha, mu, q, l, x, m, gamma, point_major=False):
    k, d = mu.shape
    n = x.shape[0]
    qdiag = jnp.exp(q)
    sum_qs = jnp.sum(q, axis=1)
    l_padded = jnp.concatenate([l, jnp.zeros((k, 1), l.dtype)], axis=1)
    L = l_padded[:, _lower_index(d)]  # (k, d, d)
    if point_major:  # (n, k, d), see _objective
        xc = x[:, None, :] - mu[None, :, :]
        Lxc = qdiag * xc + jnp.einsum("nkj,kij->nki", xc, L)
        inner = (alpha + sum_qs) - 0.5 * jnp.sum(Lxc * Lxc, axis=2)  # (n, k)
        slse = jnp.sum(logsumexp(inner, axis=1))
    else:
        xc = x[None, :, :] - mu[:, None, :]  # (k, n, d)
        Lxc = qdiag[:, None, :] * xc + jnp.einsum("knj,kij->kni", xc, L)
        sq = jnp.sum(Lxc * Lxc, axis=2)  # (k, n)
        inner = (alpha + sum_qs)[:, None] - 0.5 * sq
        slse = jnp.sum(logsumexp(inner, axis=0))
    const = -n * d * 0.5 * math.log(2 * math.pi)
    # Wishart prior
    wn = d + m + 1
    prior = jnp.sum(
        0.5 * gamma * gamma * (jnp.sum(qdiag * qdiag, axis=1) + jnp.sum(l * l, axis=1)) - m * sum_qs
    )
    c = wn * d * math.log(gamma / math.sqrt(2))
    return const + slse - n * logsumexp(alpha) - prior + k * (c - multigammaln(0.5 * wn, d))


# The objective at d <= 4 in the point-major layout (jax's tool's): there XLA fuses the batched
# d x d products, the squares and the sum into one YNNPACK fusion, which runs slowly on the
# component-major layout's (k, n, d) at d = 2 (k = 100: 2.1 ms of CPU against 1.2-1.6 ms; jax
# runs the component-major program in 2.4 ms); from d = 10 the component-major layout is the
# faster (d = 10, k = 100: 3.0 against 4.6 ms), and the gradient is faster in it at every d.
_objective = funcgrad.jit(
    lambda alpha, mu, q, l, x, m, gamma: gmm_objective(alpha, mu, q, l, x, m, gamma, mu.shape[1] <= 4),
    static_argnums=(5, 6),
)
_jacobian = funcgrad.jit(funcgrad.grad(gmm_objective, argnums=(0, 1, 2, 3)), static_argnums=(5, 6))


def _pre(input):
    d, k = input["d"], input["k"]

    def arr(v, *shape):
        return funcgrad.device_put(np.asarray(v, dtype=np.float64).reshape(shape))

    return (
        arr(input["alpha"], k),
        arr(input["mu"], k, d),
        arr(input["q"], k, d),
        arr(input["l"], k, d * (d - 1) // 2),
        arr(input["x"], input["n"], d),
        int(input["m"]),
        float(input["gamma"]),
    )


def _post_jacobian(grads):
    alpha, mu, q, l = (np.asarray(g) for g in grads)
    return {"alpha": alpha.tolist(), "mu": mu.tolist(), "q": q.tolist(), "l": l.tolist()}


@evaluation(pre=_pre, post=to_float)
def objective(alpha, mu, q, l, x, m, gamma):
    return _objective(alpha, mu, q, l, x, m, gamma)


@evaluation(pre=_pre, post=_post_jacobian)
def jacobian(alpha, mu, q, l, x, m, gamma):
    return _jacobian(alpha, mu, q, l, x, m, gamma)
