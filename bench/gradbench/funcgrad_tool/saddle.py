"""GradBench eval ``saddle``: a saddle point by nested gradient descent (benchmark code).

``f(x, y) = (x_0^2 + x_1^2) - (y_0^2 + y_1^2)``. Step 1: ``x* = argmin_x max_y f(x, y)``, where
each evaluation of the outer objective runs an inner gradient ascent on ``y`` and the outer
gradient differentiates through that inner solver. Step 2: ``y* = argmax_y f(x*, y)``. Both from
the given start point; the answer is ``x*`` and ``y*`` concatenated. ``rr``, ``rf``, ``fr``,
``ff`` name the outer and inner modes of differentiation; step 2 uses the outer mode. Each
variant is one compiled program of nested ``lax.while_loop``s; with an outer reverse mode the inner
ascent carries a bound (``max_steps``) so that it can be transposed.
"""

import functools

import numpy as np

import funcgrad
import funcgrad.numpy as jnp
from funcgrad_tool import solver
from funcgrad_tool.runs import evaluation, to_list

INNER_STEPS_BOUND = 1000  # the inner ascent here takes ~200 iterations


def f(x, y):
    return (x[0] ** 2 + x[1] ** 2) - (y[0] ** 2 + y[1] ** 2)


@functools.cache
def _program(outer, inner):
    grads = {"r": solver.value_and_grad_reverse, "f": solver.value_and_grad_forward}
    bound = INNER_STEPS_BOUND if outer == "r" else None

    def run(start):
        def outer_cost(x):
            return solver.max_value(grads[inner], lambda y: f(x, y), start, max_steps=bound)

        x = solver.argmin(grads[outer], outer_cost, start)
        y = solver.argmax(grads[outer], lambda y: f(x, y), start)
        return jnp.concatenate([x, y])

    return funcgrad.jit(run)


def _pre(input):
    return (funcgrad.device_put(np.asarray(input["start"], np.float64)),)


def _variant(modes):
    program = _program(modes[0], modes[1])
    return evaluation(pre=_pre, post=to_list)(lambda start: program(start))


rr = _variant("rr")
rf = _variant("rf")
fr = _variant("fr")
ff = _variant("ff")
