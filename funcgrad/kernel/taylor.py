"""Taylor mode: propagating truncated power series through a program (``jet``).

Layer: kernel. Imports ``core``, ``ir``, ``dtypes``, ``ad``, ``partial_eval`` and ``hooks`` (the
array operations the catalog registers, NOTE: [kernel registration]).

A ``JetTracer`` carries a primal ``x0`` and the ``K`` coefficients of the series
``x(t) = x0 + x1 t + x2 t^2 + ... + xK t^K``; the ``JetTrace`` maps each primitive ``f`` to the
first ``K`` coefficients of ``f(x(t))``. The cost grows like ``K^2`` (Cauchy products), where nested
``jvp``/``grad`` grows like ``2^K``.

# NOTE: [Taylor coefficients]
# Inside the kernel a series holds *Taylor coefficients*: term ``k`` is ``x^(k)(0) / k!``. Then the
# product of two series is the plain Cauchy product ``(ab)_k = sum_j a_j b_(k-j)`` and linear maps
# act on each term, with no factorials in the generated program. ``funcgrad.jet`` follows
# ``jax.experimental.jet`` at its boundary (term ``k`` is the k-th *derivative*, unless
# ``factorial_scaled=False``) and converts once on the way in and once on the way out. Every
# ``taylor`` rule (``Primitive.def_taylor``) reads and returns Taylor coefficients.

# NOTE: [zero series]
# As with tangents (NOTE: [symbolic zeros]), a term known to be zero is ``ad.Zero(aval)``, never an
# array; a value whose every term is zero is not wrapped in a tracer at all, so constants and
# integer values cost nothing. A common seed, ``(v, 0, 0, ...)``, therefore keeps the Cauchy sums
# short: rules skip every product with a zero factor.

Rules, in the order the trace looks for them:

1. ``primitive.taylor(primals, series, **params) -> (primal_out, series_out)``: ``series`` has
   one list of ``K`` terms per input (``Zero`` allowed), ``series_out`` one list per output. The
   catalog gives the elementwise family its recurrences, bilinear primitives the Cauchy product,
   ``deflinear`` primitives ``linear_taylor`` and control flow the jet of its jaxprs.
2. A not-differentiable primitive (``traits.not_differentiable``, ``defjvp_zero``): zero series out.
3. A primitive whose ``traits.taylor_from_jvp`` gives the reason (NOTE: [primitive traits]), and a
   primitive from outside the catalog (``funcgrad.extend``) with a JVP rule and no statement either
   way: ``taylor_from_jvp``. With ``y = f(x)``,
   ``y'(t) = jvp(f)(x(t), x'(t))``; the series of ``y'`` to order ``K-1`` is the jet, one order
   lower, of the JVP rule itself, and ``y_(k+1) = y'_k / (k + 1)``. The JVP rule binds primitives
   that have rules of their own (recursively), so every differentiable primitive has a correct
   Taylor rule -- polynomial in ``K`` unless its JVP rule calls the primitive several times.
4. Otherwise: an error naming the primitive. (The completeness test holds every catalog
   primitive to 1, 2 or a stated reason for 3.)
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from funcgrad.kernel import core
from funcgrad.kernel.ad import Zero, instantiate, is_zero_series, linear_taylor, tangent_aval, zero_series
from funcgrad.kernel.core import user_source_info
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ClosedJaxpr
from funcgrad.kernel.partial_eval import trace_to_jaxpr

# ----------------------------------------------------------------------------------------------
# Series helpers


def scale(term, c):
    """``term * c`` for a Python number ``c`` (a ``Zero`` stays ``Zero``; ``c == 1`` is free)."""
    if type(term) is Zero or c == 1:
        return term
    return hooks.mul(term, c)


def taylor_from_jvp(primitive: core.Primitive, primals, series, params):
    """The generic Taylor rule of a differentiable primitive: the jet of its JVP rule one order
    lower (the module docstring, rule 3)."""
    order = len(series[0])
    if order == 1:
        tangents = [s[0] for s in series]
        out, t_out = primitive.jvp(primals, tangents, **params)
        outs_t = t_out if primitive.multiple_results else [t_out]
        series_out = [[t] for t in outs_t]
        return out, series_out if primitive.multiple_results else series_out[0]
    out = primitive.bind(*primals, **params)
    with core.new_trace(JetTrace, order - 1, True) as inner:
        xs = [inner.lift(p, s[: order - 1]) for p, s in zip(primals, series)]
        dxs = []
        for p, s in zip(primals, series):
            # x'(t) has Taylor coefficients (k + 1) x_(k+1).
            d = [scale(t, k + 1) for k, t in enumerate(s)]
            if is_zero_series(d):
                dxs.append(Zero.from_primal_value(p))
            else:
                dxs.append(inner.lift(instantiate(d[0]), d[1:]))
        _, t_out = primitive.jvp(xs, dxs, **params)
        outs_t = t_out if primitive.multiple_results else [t_out]
        series_out = []
        for o, t in zip(out if primitive.multiple_results else [out], outs_t):
            if type(t) is Zero:
                series_out.append(zero_series(o, order))
                continue
            (e0,), (es,), _ = inner.unpack([t], JetTracer, _primal_and_series)
            es = [Zero.from_primal_value(e0)] * (order - 1) if es is None else es
            series_out.append([scale(e, 1 / (k + 1)) for k, e in enumerate([e0, *es])])
    return out, series_out if primitive.multiple_results else series_out[0]


# ----------------------------------------------------------------------------------------------
# The trace


_primal_and_series = operator.attrgetter("primal", "series")


class JetTracer(core.PrimalTracer):
    __slots__ = ("series",)

    def __init__(self, trace, primal, series):
        self._trace = trace
        self.primal = primal
        self.series = series
        self._aval = None


class JetTrace(core.Trace):
    """Taylor mode to ``order``: each tracer carries a primal and ``order`` Taylor coefficients
    (NOTE: [Taylor coefficients], NOTE: [current trace])."""

    def __init__(self, parent, order: int, memoize: bool = False):
        super().__init__(parent)
        self.order = order
        # NOTE: [memoised JVP rules under jet] A JVP rule that binds its own primitive twice on
        # the same operands (svd's rule recomputes the thin decomposition) would make the rule
        # from the JVP rule recurse twice per order, 2^K work; the inner traces of
        # ``taylor_from_jvp`` therefore reuse the result of an identical bind (same primitive,
        # the same operand objects, equal parameters). The memo keeps its operands alive, so
        # their ids stay unique while it exists, and dies with the trace.
        self.memo: dict | None = {} if memoize else None

    def process_primitive(self, primitive, args, params):
        memo = self.memo
        if memo is None or primitive.traits.has_side_effects:
            return self._process(primitive, args, params)
        try:
            key = (primitive, tuple(map(id, args)), tuple(sorted(params.items())))
            hash(key)
        except TypeError:  # unhashable parameters (lists, arrays): no memo
            return self._process(primitive, args, params)
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = (self._process(primitive, args, params), args)
        return hit[0]

    def _process(self, primitive, args, params):
        primals, series, own = self.unpack(args, JetTracer, _primal_and_series)
        state = core._state
        prev = state.trace
        state.trace = self.parent
        try:
            if not own:
                return primitive.bind(*primals, **params)
            order = self.order
            series = [zero_series(p, order) if s is None else s for p, s in zip(primals, series)]
            rule = primitive.taylor
            if rule is not None:
                out, series_out = rule(primals, series, **params)
            elif primitive.traits.not_differentiable:
                out = primitive.bind(*primals, **params)
                if primitive.multiple_results:
                    series_out = [zero_series(o, order) for o in out]
                else:
                    series_out = zero_series(out, order)
            elif primitive.jvp is not None:
                out, series_out = taylor_from_jvp(primitive, primals, series, params)
            else:
                raise NotImplementedError(
                    f"Taylor rule (jet) for '{primitive.name}' not implemented: it has neither a "
                    f"Taylor rule nor a JVP rule{_used_at(user_source_info())}. Compute this part "
                    "outside funcgrad.jet, or give the primitive a rule with def_taylor."
                )
        finally:
            state.trace = prev
        if primitive.multiple_results:
            return [self.lift(p, s) for p, s in zip(out, series_out)]
        return self.lift(out, series_out)

    def lift(self, primal, series):
        if is_zero_series(series):
            return primal
        return JetTracer(self, primal, list(series))

    def describe(self):
        return f"a Taylor-mode derivative (jet, order {self.order})"


def _used_at(info) -> str:
    return f" (used at {info})" if info is not None else ""


def jet_flat(f: Callable, primals: Sequence[Any], series: Sequence[Sequence[Any]], order: int):
    """``f`` maps a list of arrays to a list of arrays; ``series[i]`` holds ``order`` Taylor
    coefficients of input ``i`` (``Zero`` allowed). Returns the outputs' primals and series."""
    with core.new_trace(JetTrace, order) as trace:
        args = [trace.lift(p, s) for p, s in zip(primals, series)]
        outs = f(*args)
        out_primals, out_series, _ = trace.unpack(outs, JetTracer, _primal_and_series)
    return out_primals, [zero_series(p, order) if s is None else s for p, s in zip(out_primals, out_series)]


# ----------------------------------------------------------------------------------------------
# Jaxpr-level Taylor mode, for primitives that carry jaxprs (jit, checkpoint, cond, scan, ...)


def jet_jaxpr(
    closed: ClosedJaxpr, order: int, nonzeros: Sequence, instantiate: bool | Sequence[bool]
) -> tuple[ClosedJaxpr, list[tuple[bool, ...]]]:
    """A jaxpr computing ``(primals_out..., the nonzero terms of each output...)`` from
    ``(primals_in..., the nonzero terms of each input...)``.

    ``nonzeros[i]`` says which terms of input ``i`` are nonzero: a bool for all of its ``order``
    terms, or a tuple of ``order`` bools (a seed ``(v, 0, 0)`` passes one term, not three).
    Returns the jaxpr and, per output, the tuple of its nonzero terms; ``instantiate`` forces all
    terms of some outputs to be outputs (their zeros materialised).
    """
    in_avals = closed.in_avals
    n_out = len(closed.out_avals)
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * n_out
    masks = [(nz,) * order if isinstance(nz, bool) else tuple(nz) for nz in nonzeros]
    term_avals = [tangent_aval(a) for a, m in zip(in_avals, masks) for z in m if z]
    out_masks_box: list = []

    def traced(*args):
        primals, terms = args[: len(in_avals)], iter(args[len(in_avals) :])
        series = [[next(terms) if z else Zero(tangent_aval(a)) for z in m] for a, m in zip(in_avals, masks)]
        outs_p, outs_s = jet_flat(
            lambda *xs: core.eval_jaxpr(closed.jaxpr, closed.consts, *xs), primals, series, order
        )
        out_masks = [
            (True,) * order if inst else tuple(type(t) is not Zero for t in s)
            for s, inst in zip(outs_s, instantiate)
        ]
        out_masks_box.append(out_masks)
        # (`instantiate` is the parameter here, so materialise zeros directly.)
        terms_out = [
            hooks.zeros(t.aval) if type(t) is Zero else t
            for s, m in zip(outs_s, out_masks)
            for t, z in zip(s, m)
            if z
        ]
        return [*outs_p, *terms_out]

    return trace_to_jaxpr(traced, [*in_avals, *term_avals]), out_masks_box[0]


__all__ = [
    "JetTrace",
    "JetTracer",
    "is_zero_series",
    "jet_flat",
    "jet_jaxpr",
    "linear_taylor",
    "scale",
    "taylor_from_jvp",
    "zero_series",
]
