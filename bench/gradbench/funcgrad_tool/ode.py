"""GradBench eval ``ode``: fourth-order Runge-Kutta on ``y_0' = x_0, y_i' = x_i y_{i-1}`` from
``y = 0`` over ``t in [0, 2]`` in ``s`` steps; the gradient of the last component of ``y(2)``
with respect to ``x`` (benchmark code). The steps are a ``lax.scan``; the gradient is reverse mode
through it. Like GradBench's jax tool (which does not enable x64), it computes in float32: the
eval's validation tolerance holds there, and the comparison with jax is like for like."""

import numpy as np

import funcgrad
import funcgrad.numpy as jnp
from funcgrad import lax
from funcgrad_tool.runs import evaluation, to_list


def _rhs(x, y):
    # z_0 = x_0, z_i = x_i * y_{i-1}: shift y right by one and put a 1 in front
    return x * jnp.concatenate([jnp.ones((1,), y.dtype), y[:-1]])


def ode(x, s):
    h = 2.0 / s

    def step(y, _):
        k1 = _rhs(x, y)
        k2 = _rhs(x, y + (h / 2) * k1)
        k3 = _rhs(x, y + (h / 2) * k2)
        k4 = _rhs(x, y + h * k3)
        return y + (h / 6) * (k1 + 2 * k2 + 2 * k3 + k4), None

    y, _ = lax.scan(step, jnp.zeros_like(x), None, length=s)
    return y


_primal = funcgrad.jit(ode, static_argnums=1)
_gradient = funcgrad.jit(funcgrad.grad(lambda x, s: ode(x, s)[-1]), static_argnums=1)


def _pre(input):
    return funcgrad.device_put(np.asarray(input["x"], dtype=np.float32)), int(input["s"])


@evaluation(pre=_pre, post=to_list)
def primal(x, s):
    return _primal(x, s)


@evaluation(pre=_pre, post=to_list)
def gradient(x, s):
    return _gradient(x, s)
