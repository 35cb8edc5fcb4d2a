"""GradBench eval ``llsq``: linear least squares of a polynomial fit to ``sign(t)`` (benchmark code).

The objective is ``0.5 * sum_i (sign(t_i) - sum_j x_j t_i**j)**2`` over ``n`` points ``t_i`` in
[-1, 1]. Written as a matrix of powers times ``x`` (the powers are a cumulative product along the
degree axis), the primal is one matrix-vector product and the gradient one more.
"""

import numpy as np

import funcgrad
import funcgrad.numpy as jnp
from funcgrad_tool.runs import evaluation, to_float, to_list


def llsq(x, n):
    m = x.shape[0]
    t = -1.0 + jnp.arange(n, dtype=x.dtype) * (2.0 / (n - 1.0))
    # powers[i, j] = t_i ** j, built by a cumulative product as the reference does
    powers = jnp.cumprod(
        jnp.concatenate([jnp.ones((n, 1), x.dtype), jnp.broadcast_to(t[:, None], (n, m - 1))], axis=1),
        axis=1,
    )
    r = jnp.sign(t) - powers @ x
    return 0.5 * jnp.sum(r * r)


_primal = funcgrad.jit(llsq, static_argnums=1)
_gradient = funcgrad.jit(funcgrad.grad(llsq), static_argnums=1)


def _pre(input):
    return funcgrad.device_put(np.asarray(input["x"], dtype=np.float64)), int(input["n"])


@evaluation(pre=_pre, post=to_float)
def primal(x, n):
    return _primal(x, n)


@evaluation(pre=_pre, post=to_list)
def gradient(x, n):
    return _gradient(x, n)
