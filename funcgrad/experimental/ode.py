"""``funcgrad.experimental.ode``: ``odeint``, adaptive Dormand-Prince integration of ordinary
differential equations with the adjoint method as its reverse-mode derivative (``jax.experimental.ode``).

Layer: surface. Imports funcgrad.numpy, funcgrad.lax, funcgrad.api, funcgrad.jitting,
funcgrad.flatten_util, funcgrad.tree_util and funcgrad.custom_derivatives.

The algorithm is JAX's (Apache-2.0): the 5th-order Dormand-Prince Runge-Kutta pair with its 4th-order
error estimate and step-size control, dense output by a 4th-order interpolating polynomial at the
requested times, and, as the ``custom_vjp``, the adjoint ODE integrated backwards in time (Appendix C
of Chen et al. 2018, "Neural Ordinary Differential Equations"), which costs memory independent of
the number of steps. Values the dynamics close over are hoisted by ``closure_convert``, so gradients
flow to them as well.

>>> import funcgrad.numpy as fnp
>>> ys = odeint(lambda y, t: -y, 1.0, fnp.array([0.0, 1.0]))
>>> round(float(ys[1]), 6)   # exp(-1)
0.367879
"""

from __future__ import annotations

import collections
import functools
import operator
from collections.abc import Callable

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import api, lax
from funcgrad.custom_derivatives import convert_closure, custom_vjp
from funcgrad.flatten_util import ravel_pytree
from funcgrad.jitting import jit
from funcgrad.kernel import core
from funcgrad.kernel.caches import register_cache
from funcgrad.tree_util import tree_leaves, tree_map

__all__ = ["odeint"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


# Dormand-Prince 5(4) tableau.
_ALPHA = [1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0, 0.0]
_BETA = [
    [1 / 5, 0, 0, 0, 0, 0, 0],
    [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
    [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
    [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0],
]
_C_SOL = [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]
_C_ERROR = [
    35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
    -2187 / 6784 - -12231 / 42400, 11 / 84 - 649 / 6300, -1.0 / 60.0,
]  # fmt: skip
_C_MID = [
    6025192743 / 30085553152 / 2, 0, 51252292925 / 65400821598 / 2, -2691868925 / 45128329728 / 2,
    187940372067 / 1594534317056 / 2, -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2,
]  # fmt: skip


def _interp_fit_dopri(y0, y1, k, dt):
    """Coefficients of the 4th-order polynomial through the step (for output between steps)."""
    dt = dt.astype(y0.dtype)
    y_mid = y0 + dt * fnp.dot(np.asarray(_C_MID, y0.dtype), k)
    dy0, dy1 = k[0], k[-1]
    a = -2.0 * dt * dy0 + 2.0 * dt * dy1 - 8.0 * y0 - 8.0 * y1 + 16.0 * y_mid
    b = 5.0 * dt * dy0 - 3.0 * dt * dy1 + 18.0 * y0 + 14.0 * y1 - 32.0 * y_mid
    c = -4.0 * dt * dy0 + dt * dy1 - 11.0 * y0 - 5.0 * y1 + 16.0 * y_mid
    return fnp.stack([a, b, c, dt * dy0, y0])


def _initial_step_size(fun, t0, y0, order, rtol, atol, f0):
    """Hairer, Norsett & Wanner's starting step (Solving ODEs I, II.4)."""
    scale = atol + fnp.abs(y0) * rtol
    d0 = fnp.linalg.norm(y0 / scale)
    d1 = fnp.linalg.norm(f0 / scale)
    h0 = fnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
    y1 = y0 + h0.astype(y0.dtype) * f0
    f1 = fun(y1, t0 + h0)
    d2 = fnp.linalg.norm((f1 - f0) / scale) / h0
    h1 = fnp.where(
        (d1 <= 1e-15) & (d2 <= 1e-15),
        fnp.maximum(1e-6, h0 * 1e-3),
        (0.01 / fnp.maximum(d1, d2)) ** (1.0 / (order + 1.0)),
    )
    return fnp.minimum(100.0 * h0, h1)


def _runge_kutta_step(func, y0, f0, t0, dt):
    alpha = np.asarray(_ALPHA, fnp.result_type(dt))
    beta = np.asarray(_BETA, f0.dtype)

    def stage(i, k):
        ti = t0 + dt * alpha[i - 1]
        yi = y0 + dt.astype(f0.dtype) * fnp.dot(beta[i - 1, :], k)
        return k.at[i, :].set(func(yi, ti))

    k = fnp.zeros((7, f0.shape[0]), f0.dtype).at[0, :].set(f0)
    # The stages are unrolled (a Python loop): each needs the previous ones, and unrolled they
    # compile into one straight-line step.
    for i in range(1, 7):
        k = stage(i, k)
    y1 = dt.astype(f0.dtype) * fnp.dot(np.asarray(_C_SOL, f0.dtype), k) + y0
    y1_error = dt.astype(f0.dtype) * fnp.dot(np.asarray(_C_ERROR, f0.dtype), k)
    return y1, k[-1], y1_error, k


def _mean_error_ratio(error_estimate, rtol, atol, y0, y1):
    err_tol = atol + rtol * fnp.maximum(fnp.abs(y0), fnp.abs(y1))
    ratio = error_estimate / err_tol.astype(error_estimate.dtype)
    return fnp.sqrt(fnp.mean(fnp.abs(ratio) ** 2))


def _optimal_step_size(last_step, mean_error_ratio, safety=0.9, ifactor=10.0, dfactor=0.2, order=5.0):
    dfactor = fnp.where(mean_error_ratio < 1, 1.0, dfactor)
    factor = fnp.minimum(ifactor, fnp.maximum(mean_error_ratio ** (-1.0 / order) * safety, dfactor))
    return fnp.where(mean_error_ratio == 0, last_step * ifactor, last_step * factor)


def odeint(func: Callable, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=np.inf, hmax=np.inf):
    """Solve ``dy/dt = func(y, t, *args)`` from ``y(t[0]) = y0``; returns ``y`` at every time of
    ``t`` (an increasing 1-D float array), stacked along a new leading axis.

    ``y0`` may be any pytree of arrays (``func`` returns the same structure). ``rtol``/``atol`` are
    the error tolerances, ``mxstep`` the most steps between two output times (the integration then
    stops where it got to), ``hmax`` the largest step. Differentiable with respect to ``y0``, ``t``,
    ``args`` and whatever ``func`` closes over, by the adjoint method; compiled with ``jit``.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> decay = lambda y, t, k: -k * y
    >>> g = funcgrad.grad(lambda k: odeint(decay, 1.0, fnp.array([0.0, 2.0]), k)[1])(0.5)
    >>> round(float(g), 6)   # d exp(-2k)/dk at k = 0.5
    -0.735759
    """
    for arg in tree_leaves(args):
        if not core.is_array_like(arg):
            raise TypeError(f"odeint: the *args must be arrays or scalars (pytrees of them), got {arg!r}")
    t = fnp.asarray(t)
    if not fnp.issubdtype(t.dtype, fnp.floating) or t.ndim != 1:
        raise TypeError(f"odeint: t must be a 1-D array of floats, got {t.dtype}{list(t.shape)}")
    # Eagerly, the arrays ``func`` closes over are arguments of the compiled integrator, not
    # constants of it (NOTE: [one compiled integrator per problem]).
    eager = type(core.current_trace()) is core.EvalTrace
    converted, consts = convert_closure(func, (y0, t[0], *args), hoist_arrays=eager)
    return _wrapper(converted, float(rtol), float(atol), float(mxstep), float(hmax))(y0, t, *args, *consts)


def _odeint_wrapper_impl(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    y0, unravel = ravel_pytree(y0)

    def flat_func(y, t, *args):
        return ravel_pytree(func(unravel(y), t, *args))[0]

    out = _odeint(flat_func, rtol, atol, mxstep, hmax, y0, ts, *args)
    return api.vmap(unravel)(out)


# NOTE: [one compiled integrator per problem]
# Each (dynamics, tolerances) gets its own jitted integrator, kept in a small LRU: a program with
# several ODEs compiles each once, and the retrace warning of one jit shared by unrelated problems
# (which would count their first compilations as retraces) cannot fire. An eager call hoists the
# floating-point arrays the dynamics close over as arguments (``convert_closure(hoist_arrays=)``),
# as eager loops pass theirs as operands (NOTE: [eager loops keep only what their trace made]):
# dynamics re-created over new values (a lambda made at every call) are then the same conversion
# (equal by program) and reuse the compiled integrator, where JAX compiles again; under a
# transformation only tracers are hoisted, as JAX's ``closure_convert`` does, so the adjoint
# computes no cotangents for captured constants.
_WRAPPERS: collections.OrderedDict = register_cache("experimental.ode_integrators", collections.OrderedDict())
_MAX_WRAPPERS = 64


def _wrapper(func, rtol, atol, mxstep, hmax):
    key = (func, rtol, atol, mxstep, hmax)
    fn = _WRAPPERS.pop(key, None)
    if fn is None:
        fn = jit(functools.partial(_odeint_wrapper_impl, func, rtol, atol, mxstep, hmax))
    _WRAPPERS[key] = fn
    while len(_WRAPPERS) > _MAX_WRAPPERS:
        _WRAPPERS.popitem(last=False)
    return fn


def _odeint_impl(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    def func_(y, t):
        return func(y, t, *args)

    def scan_fun(carry, target_t):
        def cond_fun(state):
            i, _, _, t, dt, _, _ = state
            return (t < target_t) & (i < mxstep) & (dt > 0)

        def body_fun(state):
            i, y, f, t, dt, last_t, interp_coeff = state
            next_y, next_f, next_y_error, k = _runge_kutta_step(func_, y, f, t, dt)
            next_t = t + dt
            error_ratio = _mean_error_ratio(next_y_error, rtol, atol, y, next_y)
            new_interp_coeff = _interp_fit_dopri(y, next_y, k, dt)
            dt = fnp.clip(_optimal_step_size(dt, error_ratio), 0.0, hmax)
            accept = error_ratio <= 1.0
            new = [next_y, next_f, next_t, dt, t, new_interp_coeff]
            old = [y, f, t, dt, last_t, interp_coeff]
            return [i + 1, *[fnp.where(accept, n, o) for n, o in zip(new, old)]]

        _, *carry = lax.while_loop(cond_fun, body_fun, [fnp.asarray(0.0), *carry])
        _, _, t, _, last_t, interp_coeff = carry
        relative_time = (target_t - last_t) / (t - last_t)
        y_target = fnp.polyval(interp_coeff, relative_time.astype(interp_coeff.dtype))
        return carry, y_target

    f0 = func_(y0, ts[0])
    dt = fnp.clip(_initial_step_size(func_, ts[0], y0, 4, rtol, atol, f0), 0.0, hmax)
    interp_coeff = fnp.stack([y0] * 5)
    init_carry = [y0, f0, ts[0], dt, ts[0], interp_coeff]
    _, ys = lax.scan(scan_fun, init_carry, ts[1:])
    return fnp.concatenate((y0[None], ys))


_odeint = custom_vjp(_odeint_impl, nondiff_argnums=(0, 1, 2, 3, 4))


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
    return ys, (ys, ts, args)


def _odeint_rev(func, rtol, atol, mxstep, hmax, res, g):
    """The adjoint method: integrate the state, its cotangent and the parameters' cotangents
    backwards between consecutive output times."""
    ys, ts, args = res

    def aug_dynamics(augmented_state, t, *args):
        y, y_bar, *_ = augmented_state
        y_dot, vjpfun = api.vjp(func, y, -t, *args)
        return (-y_dot, *vjpfun(y_bar))

    def scan_fun(carry, i):
        y_bar, t0_bar, args_bar = carry
        # The cotangent of ts[i]: the dynamics there dotted with the output cotangent (its real
        # part, as JAX's: a time is real, also for a complex state).
        t_bar = fnp.real(fnp.dot(func(ys[i], ts[i], *args), g[i]))
        t0_bar = t0_bar - t_bar
        _, y_bar, t0_bar, args_bar = odeint(
            aug_dynamics, (ys[i], y_bar, t0_bar, args_bar), fnp.stack([-ts[i], -ts[i - 1]]), *args,
            rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax,
        )  # fmt: skip
        y_bar, t0_bar, args_bar = tree_map(operator.itemgetter(1), (y_bar, t0_bar, args_bar))
        return (y_bar + g[i - 1], t0_bar, args_bar), t_bar

    init_carry = (g[-1], fnp.zeros((), ts.dtype), tree_map(fnp.zeros_like, args))
    (y_bar, t0_bar, args_bar), rev_ts_bar = lax.scan(scan_fun, init_carry, fnp.arange(len(ts) - 1, 0, -1))
    ts_bar = fnp.concatenate([t0_bar[None], rev_ts_bar[::-1]])
    return (y_bar, ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_rev)
