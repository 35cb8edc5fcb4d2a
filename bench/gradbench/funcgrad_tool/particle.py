"""GradBench eval ``particle``: steer a charged particle through the origin (benchmark code).

A particle starts at (0, 8) with velocity (0.75, 0) in the field of two unit charges at (10, 0)
and (10, 10 - w); naive Euler steps (dt = 0.1) run until it would cross the x axis, where linear
interpolation gives the crossing ``x_f``. Gradient descent on ``w`` minimises ``x_f^2``. The
force inside each Euler step is a gradient of the potential (the *inner* derivative) and the
descent needs the derivative of the whole trajectory with respect to ``w`` (the *outer* one,
through the inner one and through the data-dependent loop): ``rr``, ``rf``, ``fr``, ``ff`` name
the modes, outer first. All four are one compiled program each: the descent and the Euler loop are
``lax.while_loop``s; where the outer derivative is reverse mode the Euler loop carries a bound
(``max_steps``) so that it can be transposed.
"""

import functools

import numpy as np

import funcgrad
import funcgrad.numpy as jnp
from funcgrad import lax
from funcgrad_tool import solver
from funcgrad_tool.runs import evaluation, to_float

EULER_STEPS_BOUND = 512  # the trajectories here take 350-360 steps; more gives NaN (see below)


def _potential(x, w):
    charges = jnp.stack([jnp.stack([10.0, 10.0 - w]), jnp.array([10.0, 0.0])])
    return jnp.sum(1.0 / jnp.sqrt(jnp.sum((x - charges) ** 2, axis=1)))


def naive_euler(w, inner_grad, max_steps):
    dt = 0.1
    force = inner_grad(lambda x: _potential(x, w))

    def cond(state):
        return state[2]

    def body(state):
        x, xdot, _ = state
        x_new = x + dt * xdot
        above = x_new[1] > 0
        xddot = -force(x)
        return (
            jnp.where(above, x_new, x),
            jnp.where(above, xdot + dt * xddot, xdot),
            above,
        )

    x0 = jnp.array([0.0, 8.0])
    xdot0 = jnp.array([0.75, 0.0])
    x, xdot, flying = lax.while_loop(cond, body, (x0, xdot0, jnp.asarray(True)), max_steps=max_steps)
    dt_f = -x[1] / xdot[1]
    x_f2 = (x[0] + dt_f * xdot[0]) ** 2
    # a bounded loop that stopped before the crossing: NaN rather than a wrong trajectory
    return x_f2 if max_steps is None else jnp.where(flying, jnp.nan, x_f2)


@functools.cache
def _program(outer, inner):
    grads = {"r": solver.grad_reverse, "f": solver.grad_forward}
    value_and_grads = {"r": solver.value_and_grad_reverse, "f": solver.value_and_grad_forward}
    bound = EULER_STEPS_BOUND if outer == "r" else None

    def run(w0):
        objective = lambda w: naive_euler(w[0], grads[inner], bound)  # noqa: E731
        return solver.argmin(value_and_grads[outer], objective, jnp.reshape(w0, (1,)))[0]

    return funcgrad.jit(run)


def _pre(input):
    return (funcgrad.device_put(np.float64(input["w"])),)


def _variant(modes):
    program = _program(modes[0], modes[1])
    return evaluation(pre=_pre, post=to_float)(lambda w0: program(w0))


rr = _variant("rr")
rf = _variant("rf")
fr = _variant("fr")
ff = _variant("ff")
