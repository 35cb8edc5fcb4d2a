"""GradBench eval ``lse``: log-sum-exp of a vector and its gradient (benchmark code)."""

import numpy as np

import funcgrad
import funcgrad.numpy as jnp
from funcgrad_tool.runs import evaluation, to_float, to_list


def logsumexp(x):
    """Shifted log-sum-exp; the shift is constant for differentiation (its gradient cancels)."""
    m = funcgrad.lax.stop_gradient(jnp.max(x))
    return jnp.log(jnp.sum(jnp.exp(x - m))) + m


_primal = funcgrad.jit(logsumexp)
_gradient = funcgrad.jit(funcgrad.grad(logsumexp))


def _pre(input):
    return (funcgrad.device_put(np.asarray(input["x"], dtype=np.float64)),)


@evaluation(pre=_pre, post=to_float)
def primal(x):
    return _primal(x)


@evaluation(pre=_pre, post=to_list)
def gradient(x):
    return _gradient(x)
