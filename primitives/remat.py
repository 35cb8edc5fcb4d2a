"""The ``checkpoint`` primitive (rematerialisation): a sub-program whose forward pass is recomputed
during backward instead of having its residuals saved.

Layer: primitives. Imports only the funcgrad kernel.

``checkpoint_p`` is a ``CallPrimitive`` of the kernel's call-primitive kit (its JVP and batching
rules are the kit's) carrying a closed jaxpr and a saving ``policy``. Its partial-evaluation rule is
where the trade happens: it splits the jaxpr as usual into known (forward) and unknown (tangent)
parts, then keeps as residuals only the values ``policy`` marks saveable; every other residual is
recomputed inside the tangent program from the checkpoint's inputs. Its transpose is the backward
program -- that recomputation as the non-linear prologue, then the transposed tangent work --
bound as one ``checkpoint`` call with ``differentiated=True`` (the user's checkpoint has
``differentiated=False``), which the compiler keeps apart from the forward pass (NOTE: [remat on
XLA] in xla_bridge/rules/remat.py). The user-facing ``funcgrad.checkpoint`` lives in
``funcgrad/_remat.py``.

Policies: ``None`` or ``"nothing_saveable"`` (save only the inputs), ``"dots_saveable"`` (save
outputs of ``dot_general``), ``"everything_saveable"``, or a predicate
``policy(primitive, *in_avals, **params) -> bool``.
"""

from __future__ import annotations

from collections.abc import Callable

from funcgrad.kernel import ad, core, ir
from funcgrad.kernel.callkit import CallPrimitive
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, Var
from funcgrad.kernel.partial_eval import partial_eval_jaxpr, trace_to_jaxpr


def _nothing_saveable(prim, *avals, **params):
    return False


def _everything_saveable(prim, *avals, **params):
    return True


def _dots_saveable(prim, *avals, **params):
    return prim.traits.contraction


class checkpoint_policies:
    """Named saving policies (``checkpoint(f, policy=checkpoint_policies.dots_saveable)``)."""

    nothing_saveable = staticmethod(_nothing_saveable)
    everything_saveable = staticmethod(_everything_saveable)
    dots_saveable = staticmethod(_dots_saveable)


_NAMED = {
    None: _nothing_saveable,
    "nothing_saveable": _nothing_saveable,
    "everything_saveable": _everything_saveable,
    "dots_saveable": _dots_saveable,
    "dots": _dots_saveable,
}


def resolve_policy(policy) -> Callable:
    if callable(policy):
        return policy
    try:
        return _NAMED[policy]
    except (KeyError, TypeError):
        raise ValueError(
            f"checkpoint: unknown policy {policy!r}; use None, 'nothing_saveable', "
            "'dots_saveable', 'everything_saveable' or a predicate(primitive, *avals, **params)"
        ) from None


checkpoint_p = CallPrimitive("checkpoint")


def _transpose(cts, *args, jaxpr, policy, differentiated):
    linear = tuple(ad.is_undefined_primal(a) for a in args)
    nonlin = [a for a in args if not ad.is_undefined_primal(a)]
    cts = [ad.instantiate(c) for c in cts]
    # NOTE: [remat barrier]: the backward program (the recomputation, then the transposed tangent
    # work) is itself a ``checkpoint`` call, marked ``differentiated``: the lowering keeps it one
    # unit XLA cannot merge with the forward pass (see xla_bridge/rules/remat.py), and inside it the
    # recomputation reads its inputs through a barrier that also takes the incoming cotangents, so
    # it cannot be scheduled before the backward pass reaches this checkpoint.
    backward = _fenced_transpose(jaxpr, linear, bool(nonlin and cts))
    outs = iter(checkpoint_p.bind(*nonlin, *cts, jaxpr=backward, policy=policy, differentiated=True))
    return [next(outs) if lin else None for lin in linear]


def _fenced_transpose(closed: ClosedJaxpr, linear, fence: bool) -> ClosedJaxpr:
    """``(non-linear inputs..., cotangents...) -> cotangents of the linear inputs``, the inputs
    passed through one ``optimization_barrier`` first (when ``fence``)."""
    transposed = ad.transpose_jaxpr(closed, list(linear))

    def backward(*args):
        if fence:
            args = optimization_barrier_p.bind(*args)
        return core.eval_jaxpr(transposed.jaxpr, transposed.consts, *args)

    return trace_to_jaxpr(backward, transposed.in_avals)


def _partial_eval(trace, args, unknowns, *, jaxpr, policy, differentiated):
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(jaxpr, unknowns, instantiate=False)
    saveable = resolve_policy(policy)
    kj = known.jaxpr
    n_known_out = len(kj.outvars) - num_res
    res_vars = kj.outvars[n_known_out:]
    producers = {v: e for e in kj.eqns for v in e.outvars}
    # Residuals that are inputs or constants of the known jaxpr are available anyway; of the
    # others, the policy decides which are saved and which are recomputed.
    saved = [
        v in producers
        and saveable(producers[v].primitive, *[a.aval for a in producers[v].invars], **producers[v].params)
        for v in res_vars
    ]
    # Forward: run the known part now (it computes every residual; unsaved ones are dropped).
    known_args = [a for a, uk in zip(args, unknowns) if not uk]
    with core.set_current_trace(trace.parent):
        known_outs = core.eval_jaxpr(kj, known.consts, *known_args)
    res_vals = known_outs[n_known_out:]
    # Tangent program: recompute the unsaved residuals from the known inputs and saved ones.
    recompute_jaxpr = _recompute_then(known, unknown, res_vars, saved)
    saved_vals = [r for r, s in zip(res_vals, saved) if s]
    staged_args = [*known_args, *saved_vals, *(a for a, uk in zip(args, unknowns) if uk)]
    params = dict(jaxpr=recompute_jaxpr, policy=policy, differentiated=differentiated)
    outs_unknown = trace.stage(checkpoint_p, staged_args, params)
    it_k, it_u = iter(known_outs[:n_known_out]), iter(outs_unknown)
    return [next(it_u) if uk else next(it_k) for uk in out_unknowns]


def _recompute_then(known: ClosedJaxpr, unknown: ClosedJaxpr, res_vars, saved) -> ClosedJaxpr:
    """A jaxpr over (known inputs, saved residuals, unknown inputs) that recomputes the unsaved
    residuals with the known jaxpr's equations, then runs the unknown jaxpr."""
    kj, uj = known.jaxpr, unknown.jaxpr
    saved_vars = [v for v, s in zip(res_vars, saved) if s]
    cut = set(saved_vars) | set(kj.invars) | set(kj.constvars)
    recompute = ir.backward_dependencies(kj.eqns, res_vars, stop=cut)[1]
    # Rename: the unknown jaxpr's residual inputs are the known jaxpr's residual variables.
    n_res = len(res_vars)
    rename = dict(zip(uj.invars[:n_res], res_vars))

    def sub(a):
        return rename.get(a, a) if type(a) is Var else a

    tangent_eqns = [e._replace(invars=[sub(a) for a in e.invars]) for e in uj.eqns]
    jaxpr = Jaxpr(
        [*kj.constvars, *uj.constvars],
        [*kj.invars, *saved_vars, *uj.invars[n_res:]],
        [*recompute, *tangent_eqns],
        [sub(v) for v in uj.outvars],
    )
    closed = ClosedJaxpr(jaxpr, [*known.consts, *unknown.consts])
    return ad.dce(closed)


# optimization_barrier: the identity on any number of values, opaque to XLA's optimisations.
optimization_barrier_p = Primitive("optimization_barrier", multiple_results=True)
optimization_barrier_p.def_traits(forwards_operands=True)  # output i is input i
optimization_barrier_p.def_impl(lambda *args: list(args))
optimization_barrier_p.def_abstract_eval(lambda *avals: list(avals))
optimization_barrier_p.def_jvp(
    lambda primals, tangents: (optimization_barrier_p.bind(*primals), list(tangents))
)
optimization_barrier_p.def_transpose(lambda cts, *args: list(cts))
optimization_barrier_p.def_traits(linear=True)
optimization_barrier_p.def_batch(
    lambda axis_size, vals, dims: (optimization_barrier_p.bind(*vals), list(dims))
)
optimization_barrier_p.def_taylor(ad.linear_taylor(optimization_barrier_p))


def optimization_barrier(*args):
    """Identity that XLA may not optimise across (used by checkpoint's recomputation).

    >>> import numpy as np
    >>> [float(v) for v in optimization_barrier(np.float64(1.0), np.float64(2.0))]
    [1.0, 2.0]
    """
    return optimization_barrier_p.bind(*args)


checkpoint_p.def_transpose(_transpose)
checkpoint_p.def_partial_eval(_partial_eval)
checkpoint_p.def_traits(linear=True)  # may appear in linear programs (its transpose handles recompute)
