"""autograd.misc.fixed_points.fixed_point: iterate ``x <- f(a)(x)`` from ``x0`` until
``distance(x, x_prev) <= tol``; differentiable in ``a`` by the implicit function theorem: the
cotangent ``w`` of the fixed point solves ``w = g + (df/dx)^T w`` -- itself a fixed point, found
by this same function, so derivatives of every order exist -- and ``a``'s cotangent is
``(df/da)^T w``. The iteration is a ``lax.while_loop`` (it also runs under ``jit``)."""

import functools

import funcgrad
import funcgrad.numpy as np
from funcgrad import lax


def _iterate(step, x0, distance, tol):
    def cond(carry):
        x_prev, x = carry
        return distance(x, x_prev) > tol

    def body(carry):
        _, x = carry
        return x, step(x)

    return lax.while_loop(cond, body, (x0, step(x0)))[1]


@functools.partial(funcgrad.custom_vjp, nondiff_argnums=(0, 3, 4))
def _fixed_point(f, a, x0, distance, tol):
    return _iterate(f(a), x0, distance, tol)


def _fwd(f, a, x0, distance, tol):
    x_star = _fixed_point(f, a, x0, distance, tol)
    return x_star, (a, x_star)


def _adjoint_map(f):
    def adjoint(params):
        a, x_star, g = params
        _, vjp_x = funcgrad.vjp(f(a), x_star)
        return lambda w: g + vjp_x(w)[0]

    return adjoint


def _bwd(f, distance, tol, res, g):
    a, x_star = res
    w = _fixed_point(_adjoint_map(f), (a, x_star, g), np.zeros_like(x_star), distance, tol)
    _, vjp_a = funcgrad.vjp(lambda a: f(a)(x_star), a)
    return vjp_a(w)[0], np.zeros_like(x_star)


_fixed_point.defvjp(_fwd, _bwd)


def fixed_point(f, a, x0, distance, tol):
    """The fixed point of ``f(a)`` reached from ``x0``; differentiable in ``a``."""
    return _fixed_point(f, a, np.asarray(x0, dtype=np.result_type(x0, float)), distance, tol)
