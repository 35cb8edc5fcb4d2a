"""GradBench's gradient-descent solver for the particle and saddle evals, as one ``lax.while_loop``
(benchmark code).

The rules are GradBench's (``cpp/gradbench/gd.hpp``, ``tools/futhark/solver.fut``): start with step
``eta = 1e-5``; stop when the gradient's norm or the step's length is at most ``1e-5``; after ten
accepted steps double ``eta``; on a step that does not lower the objective halve ``eta``. The
objective and gradient at a trial point run under a ``lax.cond``, so iterations that only change
``eta`` cost nothing. ``grad`` is how the gradient is taken (forward or reverse mode: the evals'
point), as a value-and-gradient function: both modes compute the objective on the way to its
gradient, so the solver takes it from there rather than evaluating the objective again (for
particle that halves the Euler trajectories run per trial point: fr 1.43 -> 0.76 ms, ff 6.3 -> 5.5,
rf 20.1 -> 15.9, rr 16.0 -> 15.4 ms of CPU). ``max_steps`` bounds the loop for the case where an
outer reverse-mode derivative has to go through this solver (funcgrad's ``while_loop`` is
reverse-differentiable only with a bound); a solve still running at its bound returns NaN, which
fails the eval's validation loudly.
"""

import funcgrad
import funcgrad.numpy as jnp
from funcgrad import lax


def argmin(grad, f, x0, *, max_steps=None):
    """The point where gradient descent from ``x0`` on ``f`` stops; ``grad(f)`` gives the
    value-and-gradient function (``value_and_grad_reverse`` or ``value_and_grad_forward``)."""
    vg = grad(f)
    tol = 1e-5

    def cond(state):
        return state[5]

    def body(state):
        x, fx, gx, eta, i, _ = state
        small = jnp.sqrt(jnp.sum(gx * gx)) <= tol
        bump = ~small & (i == 10)
        x_new = x - eta * gx
        close = jnp.sqrt(jnp.sum((x - x_new) ** 2)) <= tol
        trial = ~small & ~bump & ~close
        f_new, g_new = lax.cond(trial, vg, lambda x: (fx, gx), x_new)
        better = trial & (f_new < fx)
        worse = trial & ~(f_new < fx)
        return (
            jnp.where(better, x_new, x),
            jnp.where(better, f_new, fx),
            jnp.where(better, g_new, gx),
            jnp.where(bump, 2.0 * eta, jnp.where(worse, 0.5 * eta, eta)),
            jnp.where(bump | worse, 0, jnp.where(better, i + 1, i)),
            bump | trial,
        )

    init = (x0, *vg(x0), jnp.asarray(1e-5, x0.dtype), jnp.asarray(0), jnp.asarray(True))
    x, *_, running = lax.while_loop(cond, body, init, max_steps=max_steps)
    # a bounded loop that hit its bound has not converged: NaN, never a silently wrong answer
    return x if max_steps is None else jnp.where(running, jnp.nan, x)


def argmax(grad, f, x0, *, max_steps=None):
    return argmin(grad, lambda x: -f(x), x0, max_steps=max_steps)


def max_value(grad, f, x0, *, max_steps=None):
    return f(argmax(grad, f, x0, max_steps=max_steps))


def grad_reverse(f):
    """Gradient of a scalar function by reverse mode (one backward pass)."""
    return funcgrad.grad(f)


def grad_forward(f):
    """Gradient of a scalar function by forward mode (one ``jvp`` per input, batched)."""
    return funcgrad.jacfwd(f)


def value_and_grad_reverse(f):
    """Value and gradient of a scalar function by reverse mode (one forward and one backward
    pass); what ``argmin`` takes as ``grad``."""
    return funcgrad.value_and_grad(f)


def value_and_grad_forward(f):
    """Value and gradient of a scalar function by forward mode: one ``jvp`` per input, batched
    by ``vmap``; the value, the same for every tangent, comes out of it unbatched."""

    def value_and_grad(x):
        basis = jnp.eye(x.size, dtype=x.dtype).reshape((x.size, *x.shape))
        y, dy = funcgrad.vmap(lambda t: funcgrad.jvp(f, (x,), (t,)), out_axes=(None, 0))(basis)
        return y, dy.reshape(x.shape)

    return value_and_grad
