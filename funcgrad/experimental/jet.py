"""Taylor-mode higher-order differentiation: ``jet`` (as ``jax.experimental.jet``) and
``taylor_derivatives``.

Layer: surface. Imports the kernel (``taylor``, ``ad``, ``core``, ``tree_util``, ``dtypes``), the
surface's argument helpers and ``primitives`` (for the factorial scalings).

``jet(f, primals, series)`` pushes a truncated power series through ``f`` once (the kernel's
``JetTrace``, ``funcgrad/kernel/taylor.py``): the ``K``-th derivative costs ``O(K^2)`` operations,
where ``K`` nested ``grad``/``jvp`` cost ``O(2^K)``. It composes with ``jit``, ``vmap``, ``grad``
and itself, and -- unlike ``jax.experimental.jet`` -- goes through ``cond``, ``scan``,
``while_loop``, ``custom_jvp`` functions (by their JVP rule), ``checkpoint`` and ``jit``.

Conventions are JAX's: with ``factorial_scaled=True`` (the default) term ``k`` (1-based) of a series
is the ``k``-th derivative along the path, ``x(t) = x0 + sum_k x_k t^k / k!``; with
``factorial_scaled=False`` it is the Taylor coefficient ``x_k`` of ``x0 + sum_k x_k t^k``. The kernel
works in Taylor coefficients (NOTE: [Taylor coefficients]); the conversion happens here, once.
A term that is a concrete zero (``0.0``, ``np.zeros(...)``) becomes a symbolic zero (NOTE: [zero
series]), so the common seed ``(v, 0, 0, ...)`` costs only what it must.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from funcgrad._api_util import canonicalize, check_array_leaves, flat_fun, to_public
from funcgrad.kernel import ad, core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.taylor import jet_flat
from funcgrad.primitives import elementwise as _ew
from funcgrad.primitives import structure as _st

__all__ = ["fact", "jet", "jet2", "taylor_derivatives", "zero_series", "zero_term"]
# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = ("jet", "taylor_derivatives")


class _ZeroTerm:
    """``zero_term``: a term known to be zero (as ``jax.experimental.jet.zero_term``)."""

    def __repr__(self):
        return "zero_term"


class _ZeroSeries:
    """``zero_series``: a whole series known to be zero, in place of an argument's terms."""

    def __repr__(self):
        return "zero_series"


zero_term = _ZeroTerm()
zero_series = _ZeroSeries()


def fact(n):
    """``n!`` as a weakly typed float scalar (``jax.experimental.jet.fact``): like a Python float,
    it takes the dtype of the array it scales (``x32 / fact(3)`` stays float32).

    >>> float(fact(5))
    120.0
    """
    return to_public(float(math.factorial(int(n))))


def jet(fun: Callable, primals, series, factorial_scaled: bool = True):
    """Taylor-mode derivatives: ``(fun(*primals), series_out)``.

    ``primals`` is a tuple of arguments (pytrees of arrays); ``series[i]`` is a sequence of ``K``
    terms for ``primals[i]``, each with its structure (or an array holding the ``K`` terms along
    its leading axis; a scalar term of an array primal is that value everywhere). Integer and
    boolean arguments do not vary: their terms are ignored. ``series_out`` has ``fun``'s output structure
    with a list of ``K`` terms at each leaf. With ``x(t)`` the input path described by the series,
    ``series_out`` describes ``fun(x(t))`` (module docstring for the scaling).

    >>> import funcgrad.numpy as fnp
    >>> y, (y1, y2, y3) = jet(fnp.sin, (0.0,), ((1.0, 0.0, 0.0),))
    >>> [round(float(v), 6) for v in (y, y1, y2, y3)]  # sin, cos, -sin, -cos at 0
    [0.0, 1.0, -0.0, -1.0]
    """
    if not isinstance(primals, tuple | list) or not isinstance(series, tuple | list):
        raise TypeError(
            "jet: primals and series must be tuples or lists with one entry per argument, got "
            f"{type(primals).__name__} and {type(series).__name__}; write jet(f, (x,), ((x1, x2),))"
        )
    if len(primals) != len(series):
        raise ValueError(
            f"jet: got {len(primals)} primals but {len(series)} series; give one sequence of terms "
            "per argument (jet(f, (x, y), ((x1, x2), (y1, y2))))"
        )
    series = [_terms_of(terms) for terms in series]
    for i, terms in enumerate(series):
        if terms is zero_series:
            continue
        if not isinstance(terms, tuple | list):
            raise TypeError(
                f"jet: series[{i}] must be a tuple or list of terms, got {type(terms).__name__}; "
                "write jet(f, (x,), ((x1, x2),))"
            )
    orders = {len(terms) for terms in series if terms is not zero_series}
    if len(orders) > 1:
        raise ValueError(
            "jet terms have inconsistent lengths for different arguments: "
            + ", ".join(f"series[{i}] has {len(t)}" for i, t in enumerate(series) if t is not zero_series)
        )
    order = orders.pop() if orders else 0
    series = [
        [tu.tree_map(lambda _: zero_term, x) for _ in range(order)] if terms is zero_series else terms
        for x, terms in zip(primals, series)
    ]
    flat_p, in_tree = tu.tree_flatten(tuple(primals))
    check_array_leaves("jet", flat_p, lambda: _leaf_names(primals), "primal")
    flat_p = canonicalize(flat_p)
    # One list of terms per primal leaf: term k of argument i has argument i's structure.
    flat_s: list[list] = [[] for _ in flat_p]
    start = 0
    for i, (x, terms) in enumerate(zip(primals, series)):
        tree_x = tu.tree_structure(x)
        n = tree_x.num_leaves
        for k, term in enumerate(terms):
            leaves, tree_t = tu.tree_flatten(term, is_leaf=lambda v: v is zero_term)
            if tree_t != tree_x:
                raise ValueError(
                    f"jet: term {k} for argument {i} has structure {tree_t}, but the primal has "
                    f"structure {tree_x}; each term must have its argument's structure"
                )
            for j, leaf in enumerate(leaves):
                flat_s[start + j].append(leaf)
        start += n
    scales = [1.0 / math.factorial(k + 1) if factorial_scaled else 1.0 for k in range(order)]
    names = _leaf_names(primals)
    kernel_series = [
        [_term_in(t, p, c, names[i], k) for k, (t, c) in enumerate(zip(terms, scales))]
        for i, (p, terms) in enumerate(zip(flat_p, flat_s))
    ]
    flat, store = flat_fun(fun, in_tree, transform="jet")
    out_p, out_s = jet_flat(flat, flat_p, kernel_series, order)
    out_tree = store["out_tree"]
    scales_out = [float(math.factorial(k + 1)) if factorial_scaled else 1.0 for k in range(order)]
    primals_out = tu.tree_unflatten(out_tree, [to_public(p) for p in out_p])
    series_out = tu.tree_unflatten(
        out_tree, [[_term_out(t, p, c) for t, c in zip(s, scales_out)] for p, s in zip(out_p, out_s)]
    )
    return primals_out, series_out


def jet2(fun: Callable, primals, series):
    """``jet`` with plain Taylor coefficients (``factorial_scaled=False``), as JAX's ``jet2``.

    >>> import funcgrad.numpy as fnp
    >>> y, (c1, c2) = jet2(fnp.exp, (0.0,), ((1.0, 0.0),))
    >>> float(c1), float(c2)  # exp(t) = 1 + t + t^2/2 + ...
    (1.0, 0.5)
    """
    return jet(fun, primals, series, factorial_scaled=False)


def _terms_of(terms):
    """An argument's terms as a list: as JAX's ``jet`` does, an array of terms (``K`` along its
    leading axis, e.g. ``np.stack([x1, x2, x3])``) is the list of its rows."""
    if terms is zero_series or isinstance(terms, tuple | list) or not core.is_array_like(terms):
        return terms
    if np.ndim(terms) == 0:
        return terms  # not a sequence: the error below names it
    return [terms[k] for k in range(np.shape(terms)[0])]


def _leaf_names(primals) -> list[str]:
    return [f"primals{tu.keystr(path)}" for path, _ in tu.tree_leaves_with_path(tuple(primals))]


def _term_in(term, primal, c: float, name: str, k: int):
    """A user's term as the kernel's Taylor coefficient (a concrete zero becomes ``Zero``)."""
    aval = core.get_aval(primal)
    if term is zero_term:
        return ad.Zero(ad.tangent_aval(aval))
    if not core.is_array_like(term):
        raise TypeError(f"jet: term {k} of {name} is a {type(term).__name__}, which is not an array")
    t_aval = core.get_aval(term)
    # A scalar term stands for that value everywhere (as jax's jet broadcasts it): a seed
    # ``(1.0, 0.0)`` for an array primal is the direction of all ones.
    scalar = t_aval.shape == () and aval.shape != ()
    if t_aval.shape != aval.shape and not scalar:
        raise ValueError(
            f"jet: term {k} of {name} has shape {t_aval.shape} but the primal has shape {aval.shape}; "
            "every term must have its primal's shape (or be a scalar)"
        )
    if not _dt.is_inexact(aval.dtype):
        # Integer and boolean inputs do not vary along a path (they have float0 tangents).
        return ad.Zero(ad.tangent_aval(aval))
    value = core.concrete_value(term)
    if value is not None and not np.any(value):
        return ad.Zero(ad.tangent_aval(aval))
    if t_aval.dtype != aval.dtype:
        term = _ew.convert_element_type(term, aval.dtype)
    if scalar:
        term = _st.broadcast_in_dim(term, aval.shape, ())
    return term if c == 1.0 else _ew.mul(term, c)


def _term_out(term, primal, c: float):
    if type(term) is ad.Zero:
        aval = core.get_aval(primal)
        return to_public(_st.broadcast_in_dim(np.zeros((), aval.dtype), aval.shape, ()))
    return to_public(term if c == 1.0 else _ew.mul(term, c))


def taylor_derivatives(fun: Callable, x, order: int, direction=None):
    """All derivatives of ``fun`` at ``x`` up to ``order``, by one Taylor-mode pass.

    For a scalar ``x``: ``[f(x), f'(x), f''(x), ..., f^(order)(x)]``. For an array ``x``, the
    directional derivatives along ``direction`` (required then):
    ``[f(x), D f(x)[v], D^2 f(x)[v, v], ...]``, the derivatives of ``t -> f(x + t v)`` at 0.
    Each entry has ``fun``'s output structure. Wrap it in ``funcgrad.jit`` (with ``order`` static)
    to compile the ``O(order^2)`` program once per shape and order.

    >>> import funcgrad.numpy as fnp
    >>> [round(float(d), 6) for d in taylor_derivatives(fnp.exp, 0.0, 3)]
    [1.0, 1.0, 1.0, 1.0]
    """
    if not isinstance(order, int) or order < 0:
        raise ValueError(f"taylor_derivatives: order must be a non-negative int, got {order!r}")
    aval = core.get_aval(x)
    if direction is None:
        if aval.shape != ():
            raise ValueError(
                f"taylor_derivatives: x has shape {aval.shape}; give a direction v of that shape for "
                "the directional derivatives along v (or pass a scalar x)"
            )
        direction = np.ones((), aval.dtype if _dt.is_inexact(aval.dtype) else np.float64)
    zero = np.zeros(np.shape(direction), core.get_aval(direction).dtype)
    terms = (direction, *[zero] * (order - 1)) if order else ()
    y, ys = jet(fun, (x,), (terms,))
    leaves, tree = tu.tree_flatten(y)
    series_leaves = tree.flatten_up_to(ys)
    return [y] + [tu.tree_unflatten(tree, [s[k] for s in series_leaves]) for k in range(order)]
