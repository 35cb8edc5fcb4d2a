"""``funcgrad.scipy.optimize``: ``minimize`` with BFGS or L-BFGS (``jax.scipy.optimize``'s API).

Layer: surface. Imports funcgrad.numpy, funcgrad.lax and funcgrad.api.

The algorithm is JAX's (``jax/_src/scipy/optimize``, Apache-2.0, after SciPy and Nocedal & Wright):
BFGS with the inverse-Hessian update, or L-BFGS (JAX's experimental
``"l-bfgs-experimental-do-not-rely-on-this"``: a history of ``maxcor`` steps, complex ``x`` too),
a line search satisfying the strong Wolfe conditions (Algorithm 3.5) with cubic/quadratic
interpolation in its zoom phase (Algorithm 3.6). Every loop is a ``lax.while_loop``, so
``minimize`` runs eagerly, under ``jit`` (the whole optimisation is one compiled program) and under
``vmap`` (a batch of problems at once). Differentiating through the iterations is not supported (as
in JAX): differentiate the optimum implicitly instead.

>>> import funcgrad.numpy as fnp
>>> res = minimize(lambda x: fnp.sum((x - 3.0) ** 2), fnp.zeros(2), method="BFGS")
>>> [round(v, 6) for v in res.x.tolist()], bool(res.success)
([3.0, 3.0], True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import api, lax
from funcgrad.kernel import dtypes as _dt

__all__ = ["OptimizeResults", "minimize"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


class OptimizeResults(NamedTuple):
    """The result of ``minimize``.

    ``x``: the solution; ``success``: whether it converged; ``status``: 0 converged, 1 the
    iteration limit was reached, 3 the zoom failed, 4 a saddle point, 5 the line search's
    iteration limit, -1 undefined; ``fun``/``jac``: the objective and its gradient at ``x``;
    ``hess_inv``: the final inverse-Hessian estimate; ``nfev``/``njev``: objective and gradient
    evaluations; ``nit``: iterations.
    """

    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def minimize(
    fun: Callable,
    x0,
    args: tuple = (),
    *,
    method: str,
    tol: float | None = None,
    options: Mapping | None = None,
) -> OptimizeResults:
    """Minimise the scalar function ``fun(x, *args)`` of a one-dimensional ``x`` from ``x0``.

    ``method`` is ``"BFGS"`` or JAX's experimental L-BFGS, ``"l-bfgs-experimental-do-not-rely-on-this"``
    (case-insensitive; it also minimises over complex ``x``, and its ``hess_inv`` is None). ``tol``
    sets the gradient tolerance ``gtol`` (as in SciPy); ``options`` may hold ``maxiter`` (default
    ``200 * x0.size``), ``norm`` (of the gradient in the convergence test, default ``inf``), ``gtol``
    (default ``1e-5``) and, for BFGS, ``line_search_maxiter`` (default 10); for L-BFGS ``maxcor``
    (the history's length, 10), ``ftol`` (stop when ``f`` falls by less, 2.2e-9), ``maxfun``,
    ``maxgrad`` (evaluation limits) and ``maxls`` (line-search steps, 20).

    >>> import funcgrad.numpy as fnp
    >>> rosen = lambda x: fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    >>> res = minimize(rosen, fnp.array([0.5, 0.8, 1.2]), method="BFGS")
    >>> [round(v, 4) for v in res.x.tolist()], int(res.status)
    ([1.0, 1.0, 1.0], 0)
    """
    options = dict(options or {})
    if not isinstance(args, tuple):  # (JAX's words and type)
        raise TypeError(f"args argument to jax.scipy.optimize.minimize must be a tuple, got {args}")
    kind = method.lower() if isinstance(method, str) else None
    if kind not in _OPTIONS:
        raise ValueError(  # (JAX's words, then funcgrad's)
            f"Method {method} not recognized (jax.scipy.optimize.minimize has 'BFGS' and {_LBFGS!r})"
        )
    unknown = set(options) - set(_OPTIONS[kind])
    if unknown:
        raise TypeError(
            f"scipy.optimize.minimize: unknown {'BFGS' if kind == 'bfgs' else 'L-BFGS'} options "
            f"{sorted(unknown)}; accepted: {', '.join(_OPTIONS[kind])}"
        )
    if tol is not None:
        options.setdefault("gtol", tol)
    x0 = fnp.asarray(x0)
    if x0.ndim != 1:
        raise ValueError(f"scipy.optimize.minimize: x0 must be one-dimensional, got shape {x0.shape}")
    if not fnp.issubdtype(x0.dtype, fnp.inexact):
        x0 = x0.astype(_dt.default_float)
    if kind == _LBFGS:
        res = _minimize_lbfgs(lambda x: fun(x, *args), x0, **options)
        hess_inv = None  # (L-BFGS keeps only its history, as JAX's)
    else:
        res = _minimize_bfgs(lambda x: fun(x, *args), x0, **options)
        hess_inv = res.H_k
    return OptimizeResults(
        x=res.x_k,
        success=res.converged & ~res.failed,
        status=res.status,
        fun=res.f_k,
        jac=res.g_k,
        hess_inv=hess_inv,
        nfev=res.nfev,
        njev=res.ngev,
        nit=res.k,
    )


_LBFGS = "l-bfgs-experimental-do-not-rely-on-this"  # (JAX's name: its own L-BFGS is experimental)
_OPTIONS = {
    "bfgs": ("maxiter", "norm", "gtol", "line_search_maxiter"),
    _LBFGS: ("maxiter", "norm", "maxcor", "ftol", "gtol", "maxfun", "maxgrad", "maxls"),
}


# ----------------------------------------------------------------------------------------------
# BFGS


class _BFGSState(NamedTuple):
    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    x_k: Any
    f_k: Any
    g_k: Any
    H_k: Any
    old_old_fval: Any
    status: Any
    line_search_status: Any


def _i(v):
    return fnp.asarray(v, _dt.default_int)


def _minimize_bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
    maxiter = np.size(x0) * 200 if maxiter is None else int(maxiter)
    d = x0.shape[0]
    f_0, g_0 = api.value_and_grad(fun)(x0)
    state = _BFGSState(
        converged=fnp.linalg.norm(g_0, ord=norm) < gtol, failed=fnp.asarray(False), k=_i(0), nfev=_i(1),
        ngev=_i(1), x_k=x0, f_k=f_0, g_k=g_0, H_k=fnp.eye(d, dtype=x0.dtype),
        old_old_fval=f_0 + fnp.linalg.norm(g_0) / 2, status=_i(0), line_search_status=_i(0),
    )  # fmt: skip

    def cond(state):
        return ~state.converged & ~state.failed & (state.k < maxiter)

    def body(state):
        p_k = -(state.H_k @ state.g_k)
        ls = _line_search(fun, state.x_k, p_k, state.f_k, state.old_old_fval, state.g_k, line_search_maxiter)
        s_k = ls.a_k * p_k
        y_k = ls.g_k - state.g_k
        rho_k = 1.0 / fnp.dot(y_k, s_k)
        w = fnp.eye(d, dtype=rho_k.dtype) - rho_k * s_k[:, None] * y_k[None, :]
        H_kp1 = w @ state.H_k @ w.T + rho_k * s_k[:, None] * s_k[None, :]
        H_kp1 = fnp.where(fnp.isfinite(rho_k), H_kp1, state.H_k)
        return state._replace(
            nfev=state.nfev + ls.nfev, ngev=state.ngev + ls.ngev, failed=ls.failed,
            line_search_status=ls.status,
            converged=fnp.linalg.norm(ls.g_k, ord=norm) < gtol, k=state.k + 1, x_k=state.x_k + s_k,
            f_k=ls.f_k, g_k=ls.g_k, H_k=H_kp1, old_old_fval=state.f_k,
        )  # fmt: skip

    state = lax.while_loop(cond, body, state)
    status = fnp.where(
        state.converged,
        0,
        fnp.where(state.k == maxiter, 1, fnp.where(state.failed, 2 + state.line_search_status, -1)),
    )
    return state._replace(status=status)


# ----------------------------------------------------------------------------------------------
# L-BFGS (JAX's _lbfgs.py: Nocedal & Wright's Algorithm 7.5, over complex x after Sorber et al.)


class _LBFGSState(NamedTuple):
    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    x_k: Any
    f_k: Any
    g_k: Any
    s_history: Any
    y_history: Any
    rho_history: Any
    gamma: Any
    status: Any
    ls_status: Any


def _hdot(a, b):
    return fnp.dot(a, b, precision=lax.Precision.HIGHEST)  # (JAX's: full precision on accelerators)


def _minimize_lbfgs(
    fun, x0, maxiter=None, norm=np.inf, maxcor=10, ftol=2.220446049250313e-09, gtol=1e-5, maxfun=None,
    maxgrad=None, maxls=20,
):  # fmt: skip
    d, dtype = x0.shape[0], x0.dtype
    if maxiter is None and maxfun is None and maxgrad is None:
        maxiter = d * 200  # (at least one limit, as JAX's)
    f_0, g_0 = api.value_and_grad(fun)(x0)
    state = _LBFGSState(
        converged=fnp.asarray(False), failed=fnp.asarray(False), k=_i(0), nfev=_i(1), ngev=_i(1), x_k=x0,
        f_k=f_0, g_k=g_0, s_history=fnp.zeros((maxcor, d), dtype), y_history=fnp.zeros((maxcor, d), dtype),
        rho_history=fnp.zeros((maxcor,), dtype), gamma=fnp.asarray(1.0, g_0.dtype), status=_i(0),
        ls_status=_i(0),
    )  # fmt: skip

    def body(state):
        p_k = _two_loop_recursion(state)
        ls = _line_search(fun, state.x_k, p_k, state.f_k, None, state.g_k, maxls)
        s_k = fnp.asarray(ls.a_k).astype(p_k.dtype) * p_k
        y_k = ls.g_k - state.g_k
        rho_k_inv = fnp.real(_hdot(y_k, s_k))
        rho_k = fnp.reciprocal(rho_k_inv).astype(y_k.dtype)
        gamma = rho_k_inv / fnp.real(_hdot(fnp.conj(y_k), y_k))
        # the reasons to stop, the later ones first (JAX's order of precedence)
        status = fnp.where(state.f_k - ls.f_k < ftol, 4, 0)
        for limit, count, code in ((maxgrad, state.ngev, 3), (maxfun, state.nfev, 2), (maxiter, state.k, 1)):
            if limit is not None:
                status = fnp.where(count >= limit, code, status)
        status = _i(fnp.where(ls.failed, 5, status))
        converged = fnp.linalg.norm(ls.g_k, ord=norm) < gtol
        return state._replace(
            converged=converged, failed=(status > 0) & ~converged, k=state.k + 1,
            nfev=state.nfev + ls.nfev, ngev=state.ngev + ls.ngev, x_k=(state.x_k + s_k).astype(dtype),
            f_k=ls.f_k.astype(state.f_k.dtype), g_k=ls.g_k.astype(state.g_k.dtype),
            s_history=_push(state.s_history, s_k), y_history=_push(state.y_history, y_k),
            rho_history=_push(state.rho_history, rho_k), gamma=gamma.astype(state.g_k.dtype),
            status=fnp.where(converged, 0, status), ls_status=_i(ls.status),
        )  # fmt: skip

    return lax.while_loop(lambda s: ~s.converged & ~s.failed, body, state)


def _two_loop_recursion(state):
    """The search direction ``-H_k g_k`` from the last ``min(k, maxcor)`` steps (Algorithm 7.4)."""
    dtype = state.rho_history.dtype
    size = state.rho_history.shape[0]
    used = fnp.minimum(state.k, size)

    def first(j, carry):
        q, a_his = carry
        i = size - 1 - j
        a_i = state.rho_history[i] * _hdot(fnp.conj(state.s_history[i]), q).real.astype(dtype)
        return q - a_i * fnp.conj(state.y_history[i]), a_his.at[i].set(a_i)

    q, a_his = lax.fori_loop(0, used, first, (-fnp.conj(state.g_k), fnp.zeros_like(state.rho_history)))
    q = state.gamma * q

    def second(j, q):
        i = size - used + j
        b_i = state.rho_history[i] * _hdot(state.y_history[i], q).real.astype(dtype)
        return q + (a_his[i] - b_i) * state.s_history[i]

    return lax.fori_loop(0, used, second, q)


def _push(history, new):
    """``history`` with its oldest entry dropped and ``new`` last."""
    return fnp.roll(history, -1, axis=0).at[-1].set(new)


# ----------------------------------------------------------------------------------------------
# Line search (strong Wolfe conditions)


def _cubicmin(a, fa, fpa, b, fb, c, fc):
    """The minimiser of the cubic through ``(a, fa)``, ``(b, fb)``, ``(c, fc)`` with slope ``fpa``."""
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    r1, r2 = fb - fa - fpa * db, fc - fa - fpa * dc
    A = (dc**2 * r1 - db**2 * r2) / denom
    B = (-(dc**3) * r1 + db**3 * r2) / denom
    return a + (-B + fnp.sqrt(B * B - 3.0 * A * fpa)) / (3.0 * A)


def _quadmin(a, fa, fpa, b, fb):
    """The minimiser of the quadratic through ``(a, fa)``, ``(b, fb)`` with slope ``fpa`` at ``a``."""
    db = b - a
    B = (fb - fa - fpa * db) / db**2
    return a - fpa / (2.0 * B)


def _replace(state, cond, **new):
    """``state`` with the fields in ``new`` taken where ``cond`` holds."""
    return state._replace(**{k: fnp.where(cond, v, getattr(state, k)) for k, v in new.items()})


class _ZoomState(NamedTuple):
    done: Any
    failed: Any
    j: Any
    a_lo: Any
    phi_lo: Any
    dphi_lo: Any
    a_hi: Any
    phi_hi: Any
    dphi_hi: Any
    a_rec: Any
    phi_rec: Any
    a_star: Any
    phi_star: Any
    dphi_star: Any
    g_star: Any
    nfev: Any
    ngev: Any


def _zoom(phi_dphi, wolfe_one, wolfe_two, a_lo, phi_lo, dphi_lo, a_hi, phi_hi, dphi_hi, g_0, pass_through):
    """Algorithm 3.6 of Nocedal & Wright: shrink ``[a_lo, a_hi]`` to a point satisfying both Wolfe
    conditions (skipped where ``pass_through``)."""
    dtype = fnp.result_type(phi_lo)
    state = _ZoomState(
        done=fnp.asarray(False), failed=fnp.asarray(False), j=_i(0), a_lo=a_lo, phi_lo=phi_lo,
        dphi_lo=dphi_lo,
        a_hi=a_hi, phi_hi=phi_hi, dphi_hi=dphi_hi, a_rec=(a_lo + a_hi) / 2.0, phi_rec=(phi_lo + phi_hi) / 2.0,
        a_star=fnp.asarray(1.0, dtype), phi_star=phi_lo, dphi_star=dphi_lo, g_star=g_0, nfev=_i(0),
        ngev=_i(0),
    )  # fmt: skip
    threshold = 1e-5 if np.finfo(dtype).bits < 64 else 1e-10

    def body(state):
        dalpha = state.a_hi - state.a_lo
        a, b = fnp.minimum(state.a_hi, state.a_lo), fnp.maximum(state.a_hi, state.a_lo)
        cchk, qchk = 0.2 * dalpha, 0.1 * dalpha
        state = state._replace(failed=state.failed | (dalpha <= threshold))
        a_cubic = _cubicmin(
            state.a_lo, state.phi_lo, state.dphi_lo, state.a_hi, state.phi_hi, state.a_rec, state.phi_rec
        )
        use_cubic = (state.j > 0) & (a_cubic > a + cchk) & (a_cubic < b - cchk)
        a_quad = _quadmin(state.a_lo, state.phi_lo, state.dphi_lo, state.a_hi, state.phi_hi)
        use_quad = ~use_cubic & (a_quad > a + qchk) & (a_quad < b - qchk)
        use_bisection = ~use_cubic & ~use_quad
        a_j = fnp.where(use_cubic, a_cubic, state.a_rec)
        a_j = fnp.where(use_quad, a_quad, a_j)
        a_j = fnp.where(use_bisection, (state.a_lo + state.a_hi) / 2.0, a_j)
        phi_j, dphi_j, g_j = phi_dphi(a_j)
        state = state._replace(nfev=state.nfev + 1, ngev=state.ngev + 1)
        hi_to_j = wolfe_one(a_j, phi_j) | (phi_j >= state.phi_lo)
        star_to_j = wolfe_two(dphi_j) & ~hi_to_j
        hi_to_lo = (dphi_j * (state.a_hi - state.a_lo) >= 0.0) & ~hi_to_j & ~star_to_j
        lo_to_j = ~hi_to_j & ~star_to_j
        state = _replace(
            state, hi_to_j, a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j, a_rec=state.a_hi, phi_rec=state.phi_hi
        )
        state = _replace(state, star_to_j, a_star=a_j, phi_star=phi_j, dphi_star=dphi_j, g_star=g_j)
        state = state._replace(done=star_to_j | state.done)
        state = _replace(
            state, hi_to_lo, a_hi=state.a_lo, phi_hi=state.phi_lo, dphi_hi=state.dphi_lo, a_rec=state.a_hi,
            phi_rec=state.phi_hi,
        )  # fmt: skip
        state = _replace(state, lo_to_j & ~hi_to_lo, a_rec=state.a_lo, phi_rec=state.phi_lo)
        state = _replace(state, lo_to_j, a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j)
        state = state._replace(j=state.j + 1)
        return state._replace(failed=state.failed | (state.j >= 30))

    return lax.while_loop(lambda s: ~s.done & ~pass_through & ~s.failed, body, state)


class _LineSearchState(NamedTuple):
    done: Any
    failed: Any
    i: Any
    a_i1: Any
    phi_i1: Any
    dphi_i1: Any
    nfev: Any
    ngev: Any
    a_star: Any
    phi_star: Any
    dphi_star: Any
    g_star: Any


class _LineSearchResults(NamedTuple):
    failed: Any
    nfev: Any
    ngev: Any
    a_k: Any
    f_k: Any
    g_k: Any
    status: Any


def _line_search(f, xk, pk, phi_0, old_old_fval, gfk, maxiter, c1=1e-4, c2=0.9):
    """Algorithm 3.5 of Nocedal & Wright: a step along ``pk`` satisfying the strong Wolfe
    conditions."""
    dtype = fnp.finfo(fnp.result_type(pk)).dtype  # (the step's: real for a complex direction)

    def phi_dphi(t):
        t = fnp.asarray(t, pk.dtype)  # (JAX's: the step in the direction's dtype, strict promotion too)
        phi, g = api.value_and_grad(f)(xk + t * pk)
        return phi, fnp.real(_hdot(g, pk)), g

    dphi_0 = fnp.real(_hdot(gfk, pk))
    if old_old_fval is None:  # (L-BFGS: the first trial step is 1)
        start = fnp.asarray(1.0, dtype)
    else:
        candidate = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
        start = fnp.where(candidate > 1, 1.0, candidate)

    def wolfe_one(a_i, phi_i):
        return phi_i > phi_0 + c1 * a_i * dphi_0

    def wolfe_two(dphi_i):
        return fnp.abs(dphi_i) <= -c2 * dphi_0

    zero = fnp.asarray(0.0, dtype)
    state = _LineSearchState(
        done=fnp.asarray(False), failed=fnp.asarray(False), i=_i(1), a_i1=zero, phi_i1=phi_0, dphi_i1=dphi_0,
        nfev=_i(0), ngev=_i(0), a_star=zero, phi_star=phi_0, dphi_star=dphi_0, g_star=gfk,
    )  # fmt: skip

    def body(state):
        a_i = fnp.where(state.i == 1, start, state.a_i1 * 2.0)
        phi_i, dphi_i, g_i = phi_dphi(a_i)
        state = state._replace(nfev=state.nfev + 1, ngev=state.ngev + 1)
        star_to_zoom1 = wolfe_one(a_i, phi_i) | ((phi_i >= state.phi_i1) & (state.i > 1))
        star_to_i = wolfe_two(dphi_i) & ~star_to_zoom1
        star_to_zoom2 = (dphi_i >= 0.0) & ~star_to_zoom1 & ~star_to_i
        previous = (state.a_i1, state.phi_i1, state.dphi_i1)
        zoom1 = _zoom(phi_dphi, wolfe_one, wolfe_two, *previous, a_i, phi_i, dphi_i, gfk, ~star_to_zoom1)
        state = state._replace(nfev=state.nfev + zoom1.nfev, ngev=state.ngev + zoom1.ngev)
        zoom2 = _zoom(phi_dphi, wolfe_one, wolfe_two, a_i, phi_i, dphi_i, *previous, gfk, ~star_to_zoom2)
        state = state._replace(nfev=state.nfev + zoom2.nfev, ngev=state.ngev + zoom2.ngev)
        for cond, zoom in ((star_to_zoom1, zoom1), (None, None), (star_to_zoom2, zoom2)):
            if cond is None:
                state = _replace(state, star_to_i, a_star=a_i, phi_star=phi_i, dphi_star=dphi_i, g_star=g_i)
                state = state._replace(done=star_to_i | state.done)
                continue
            state = _replace(
                state,
                cond,
                a_star=zoom.a_star,
                phi_star=zoom.phi_star,
                dphi_star=zoom.dphi_star,
                g_star=zoom.g_star,
            )
            state = state._replace(done=cond | state.done, failed=(cond & zoom.failed) | state.failed)
        return state._replace(i=state.i + 1, a_i1=a_i, phi_i1=phi_i, dphi_i1=dphi_i)

    state = lax.while_loop(lambda s: ~s.done & (s.i <= maxiter) & ~s.failed, body, state)
    status = fnp.where(state.failed, 1, fnp.where(state.i > maxiter, 3, 0))
    a_k = state.a_star
    if np.finfo(dtype).bits != 64:
        a_k = fnp.where(fnp.abs(a_k) < 1e-8, fnp.sign(a_k) * 1e-8, a_k)
    return _LineSearchResults(
        failed=state.failed | ~state.done, nfev=state.nfev, ngev=state.ngev, a_k=a_k, f_k=state.phi_star,
        g_k=state.g_star, status=status,
    )  # fmt: skip
