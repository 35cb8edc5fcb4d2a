"""The ``checkpoint`` primitive (rematerialisation): a sub-program whose forward pass is recomputed
during backward instead of having its residuals saved.

Layer: primitives. Imports the funcgrad kernel, ``primitives._remat_policies`` (the saving policies
and their answers), ``primitives.naming`` (``name``, re-exported), ``primitives.scan`` and
``primitives.control_flow`` (a policy applies inside a scan's body and a cond's branches),
``primitives.callbacks`` (a debug print inside a checkpoint runs again when it is recomputed, as
JAX's), ``primitives.placement`` (an offloaded residual moves by ``device_put``; NOTE: [offloaded
residuals]), ``primitives.bitcast`` (a saved value is rounded to its precision) and
``primitives._remat_log`` (what a split saves, logged as JAX's).

``checkpoint_p`` is a ``CallPrimitive`` of the kernel's call-primitive kit (its JVP and batching
rules are the kit's) carrying a closed jaxpr and a saving ``policy``. Its partial-evaluation rule is
where the trade happens: it splits the jaxpr as usual into known (forward) and unknown (tangent)
parts, then, walking back from each value the tangent part needs, saves a value whose equation
``policy`` marks saveable and recomputes any other inside the tangent program from its operands
(found the same way), down to the checkpoint's inputs -- JAX's rule, so a policy that saves a
named value saves it even where the tangent part needs only values computed from it. Its
transpose is the backward program -- that recomputation as the non-linear prologue, then the
transposed tangent work -- bound as one ``checkpoint`` call with ``differentiated=True`` (the
user's checkpoint has ``differentiated=False``), which the compiler keeps apart from the forward
pass (NOTE: [remat on XLA] in xla_bridge/rules/remat.py). The user-facing ``funcgrad.checkpoint``
lives in ``funcgrad/_remat.py``, ``funcgrad.ad_checkpoint`` gathers JAX's names.

``name_p`` (``checkpoint_name``, ``primitives/naming.py``) is the identity with a ``name``
parameter: the handle by which the name policies pick values. The policies
(``checkpoint_policies``, JAX's names and meanings; ``Saveable``, ``Recompute``, ``Offloadable``)
are ``primitives/_remat_policies.py``'s, re-exported here where they have always been imported.
"""

from __future__ import annotations

from typing import NamedTuple

from funcgrad.primitives._remat_log import log_saved
from funcgrad.primitives._remat_policies import (  # noqa: F401 - re-exported (funcgrad.ad_checkpoint, _remat)
    Offloadable,
    Recompute,
    Saveable,
    checkpoint_policies,
    is_saved,
    resolve_policy,
)
from funcgrad.primitives.bitcast import reduce_precision_p
from funcgrad.primitives.callbacks import debug_callback_p, io_callback_in
from funcgrad.primitives.control_flow import _merge_residuals, cond_p
from funcgrad.primitives.naming import checkpoint_name, name_p  # noqa: F401 - re-exported
from funcgrad.primitives.placement import ArrayCopySemantics, device_put_p
from funcgrad.primitives.scan import scan_p

from funcgrad.kernel import ad, core, ir
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.callkit import CallPrimitive
from funcgrad.kernel.held_state import WrittenState
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, Var
from funcgrad.kernel.partial_eval import partial_eval_jaxpr, trace_to_jaxpr

checkpoint_p = CallPrimitive("remat2")  # (JAX 0.10's name for it, as its jaxprs print it)
# Evaluated eagerly on the Arrays themselves (as jit's call): an offloaded residual arrives in host
# memory beside device-memory cotangents, which only its jaxpr's device_put reconciles (NOTE:
# [offloaded residuals]); an eager primitive would refuse operands in two memories.
checkpoint_p.impl_takes_arrays = True


def _transpose(cts, *args, jaxpr, policy, differentiated):
    linear = tuple(ad.is_undefined_primal(a) for a in args)
    nonlin = [a for a in args if not ad.is_undefined_primal(a)]
    cts = [ad.instantiate(c) for c in cts]
    # NOTE: [remat barrier]: the backward program (the recomputation, then the transposed tangent
    # work) is itself a ``checkpoint`` call, marked ``differentiated``: the lowering keeps it one
    # unit XLA cannot merge with the forward pass, and passes its inputs -- the incoming cotangents
    # among them -- through one optimization barrier, so the recomputation cannot be scheduled
    # before the backward pass reaches this checkpoint (xla_bridge/rules/remat.py; JAX's lowering
    # does the same, and its jaxprs, which JAX's remat tutorial prints, hold no barrier either).
    # (non-linear inputs..., cotangents...), traced on the cotangents' own weak types (as jit's)
    # The backward pass may write Refs (NOTE: [state written by a backward pass]).
    # Its outputs are the cotangents that are not symbolic zeros: an input the body never uses
    # linearly gets Zero, as JAX's (grad of checkpoint(lambda a, b: 2 * a)(x, cos(x)) at x = inf
    # was 0 * -sin(inf) = NaN; the lax-parameter fuzzer, session 18)
    backward, items, nonzero = ad.transpose_jaxpr_nonzero(
        jaxpr, list(linear), None, [core.get_aval(c).weak_type for c in cts]
    )
    written = WrittenState(items)
    outs = checkpoint_p.bind(
        *nonlin,
        *cts,
        *written.leaves,
        jaxpr=backward,
        policy=policy,
        differentiated=True,
    )
    n_nz = sum(nonzero)
    written.write(outs[n_nz:])
    it, nz = iter(outs[:n_nz]), iter(nonzero)
    return [
        (next(it) if next(nz) else ad.Zero(ad.ct_aval(a.aval))) if lin else None
        for a, lin in zip(args, linear)
    ]


def _partial_eval(trace, args, unknowns, *, jaxpr, policy, differentiated):
    if io_callback_in(jaxpr):
        # (JAX's refusal: recomputing would run the side effect again)
        raise NotImplementedError("Effects not supported in partial-eval of `checkpoint`/`remat`: {IO}")
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(jaxpr, unknowns, instantiate=False)
    kj = known.jaxpr
    n_known_out = len(kj.outvars) - num_res
    res_vars = kj.outvars[n_known_out:]
    plan = _plan(kj, res_vars, resolve_policy(policy), rerun_debug=True)
    # Forward: the known outputs and the saved values, nothing else (DCE drops the rest); an
    # offloaded value leaves through a device_put to its memory (NOTE: [offloaded residuals]).
    moves, saved_outs = _offload(plan, "forward")
    fwd = Jaxpr(
        kj.constvars,
        kj.invars,
        _after_producers(plan.forward_eqns, moves),
        [*kj.outvars[:n_known_out], *saved_outs],
    )
    forward = _round_saved(ad.dce(ClosedJaxpr(fwd, known.consts)), len(plan.saved))
    known_args = [a for a, uk in zip(args, unknowns) if not uk]
    with core.set_current_trace(trace.parent):
        if getattr(trace, "of_jaxpr", False):
            # Inside a jaxpr being split (a checkpoint within a checkpoint): the known part stays
            # one undifferentiated checkpoint, as JAX's partial_eval_jaxpr_custom rule keeps it
            # (the gradient-checkpointing tutorial prints it: remat2[differentiated=False]).
            outs = checkpoint_p.bind(*known_args, jaxpr=forward, policy=policy, differentiated=False)
        else:
            outs = core.eval_jaxpr(forward.jaxpr, forward.consts, *known_args)
    known_outs, saved_vals = outs[:n_known_out], outs[n_known_out:]
    # Tangent program: recompute the unsaved residuals from the known inputs and saved values; the
    # known inputs it does not read are not passed (they would be residuals of an enclosing vjp).
    recompute_jaxpr, used_inputs = _recompute_then(known, unknown, res_vars, plan)
    log_saved([v for v, u in zip(kj.invars, used_inputs) if u], plan.forward_eqns, plan.saved)  # (JAX's log)
    used_args = [a for a, used in zip(known_args, used_inputs) if used]
    # (JAX's order: the saved values, then the inputs the tangent program reads)
    staged_args = [*saved_vals, *used_args, *(a for a, uk in zip(args, unknowns) if uk)]
    params = dict(jaxpr=recompute_jaxpr, policy=policy, differentiated=differentiated)
    outs_unknown = trace.stage(checkpoint_p, staged_args, params)
    it_k, it_u = iter(known_outs), iter(outs_unknown)
    return [next(it_u) if uk else next(it_k) for uk in out_unknowns]


def _round_saved(forward: ClosedJaxpr, n_saved: int) -> ClosedJaxpr:
    """``forward`` with each saved floating value that the forward pass also reads computed, then
    rounded to its own precision (``reduce_precision`` to its dtype's bits), the rounded value
    read by both: as JAX's checkpoint does, so XLA's excess precision cannot give the forward pass
    and the recomputing backward pass two different values."""
    j = forward.jaxpr
    saved = j.outvars[len(j.outvars) - n_saved :]
    read = {a for e in j.eqns for a in e.invars if type(a) is Var}
    eqns = list(j.eqns)
    for v in saved:
        if type(v) is not Var or v not in read or not _dt.is_float(v.aval.dtype):
            continue
        at = next((i for i, e in enumerate(eqns) if v in e.outvars), None)
        if at is None:
            continue  # an input or a constant: nothing computed it here
        e = eqns[at]
        if e.primitive is reduce_precision_p:
            continue
        info = _dt.finfo(v.aval.dtype)
        fresh = Var(v.aval)
        eqns[at] = e._replace(outvars=[fresh if o is v else o for o in e.outvars])
        params = dict(exponent_bits=info.nexp, mantissa_bits=info.nmant)
        eqns.insert(at + 1, ir.JaxprEqn(reduce_precision_p, [fresh], params, [v], e.source_info))
    if len(eqns) == len(j.eqns):
        return forward
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, eqns, j.outvars), forward.consts)


class _Plan(NamedTuple):
    saved: list  # the values to save (variables of forward_eqns)
    forward_eqns: list  # the known equations, calls rewritten to also return their saved values
    recompute_eqns: list  # the known equations, calls rewritten to recompute from saved values
    # the saved values the policy offloads: {var: (src, dst) memory kinds} (NOTE: [offloaded residuals])
    offloaded: dict = {}
    rerun: frozenset = frozenset()  # indices of debug callbacks the recomputation runs again


def _rerun_debug_callbacks(kj: Jaxpr, policy) -> frozenset:
    """The indices of ``kj``'s debug callbacks (``debug.print``/``debug.callback``) that the
    backward pass runs again, as JAX's rule for them under ``checkpoint``: one the policy does not
    save is recomputed like any unsaved value; one it saves runs again only when each operand is
    at hand in the recomputation anyway (an input of the checkpoint, or a value the policy
    recomputes). So with ``nothing_saveable`` a print inside the checkpoint prints in the forward
    and again in the backward pass; with ``everything_saveable`` once."""
    if not any(e.primitive is debug_callback_p for e in kj.eqns):
        return frozenset()
    at_hand = set(kj.invars) | set(kj.constvars)
    rerun = set()
    for i, e in enumerate(kj.eqns):
        structured = isinstance(e.primitive, CallPrimitive) or e.primitive in (cond_p, scan_p)
        if structured:  # (its outputs are not taken as at hand: the print is not run again for them)
            continue
        saved = is_saved(policy(e.primitive, *[a.aval for a in e.invars], **e.params))
        if e.primitive is debug_callback_p:
            if not saved or all(type(a) is not Var or a in at_hand for a in e.invars):
                rerun.add(i)
        elif not saved:
            at_hand.update(e.outvars)
    return frozenset(rerun)


def _plan(kj: Jaxpr, needed_outs, policy, rerun_debug: bool = False) -> _Plan:
    """Which values of the known jaxpr ``kj`` to save so that the tangent program can compute
    ``needed_outs``: walking back from each, a value whose equation the policy marks saveable is
    saved; any other is recomputed from its equation's operands, found the same way. Inputs and
    constants are available anyway. (JAX's ``partial_eval_jaxpr_custom``: a policy that saves only
    named values saves the named value a needed ``cos`` is recomputed from.) A call (``jit``) is
    planned inside, with the same policy: it returns the values saved in it as extra outputs, and
    the recomputation calls the rest of it on them."""
    needed = {v for v in needed_outs if type(v) is Var}
    saved: list = []
    offloaded: dict = {}
    forward_eqns, recompute_eqns = list(kj.eqns), list(kj.eqns)
    rerun = _rerun_debug_callbacks(kj, policy) if rerun_debug else frozenset()
    for i in range(len(kj.eqns) - 1, -1, -1):
        e = kj.eqns[i]
        if i in rerun:  # (its operands are needed by the recomputation)
            needed.update(a for a in e.invars if type(a) is Var)
            continue
        wanted = [v in needed for v in e.outvars]
        if not any(wanted):
            continue
        if isinstance(e.primitive, CallPrimitive) and e.primitive is not checkpoint_p:
            inner_needed = _plan_call(e, wanted, policy, i, forward_eqns, recompute_eqns, saved)
            needed.update(a for a in inner_needed if type(a) is Var)
        elif e.primitive is cond_p:
            needed.update(
                a
                for a in _plan_cond(e, wanted, policy, i, forward_eqns, recompute_eqns, saved)
                if type(a) is Var
            )
        elif e.primitive is scan_p:
            needed.update(
                a
                for a in _plan_scan(e, wanted, policy, i, forward_eqns, recompute_eqns, saved, offloaded)
                if type(a) is Var
            )
        elif is_saved(decision := policy(e.primitive, *[a.aval for a in e.invars], **e.params)):
            saved.extend(v for v, w in zip(e.outvars, wanted) if w)
            if isinstance(decision, Offloadable):  # NOTE: [offloaded residuals]
                offloaded.update((v, (decision.src, decision.dst)) for v, w in zip(e.outvars, wanted) if w)
        else:
            needed.update(a for a in e.invars if type(a) is Var)
    saved.reverse()  # (found last to first)
    return _Plan(saved, forward_eqns, recompute_eqns, offloaded, rerun)


def _plan_call(e, wanted, policy, i, forward_eqns, recompute_eqns, saved) -> list:
    """Plan the call equation ``e`` (``kj.eqns[i]``) whose outputs ``wanted`` are needed: rewrite it
    in ``forward_eqns`` and ``recompute_eqns``, add the values it saves to ``saved`` (reversed) and
    return the operands of ``e`` the recomputation reads."""
    inner: ClosedJaxpr = e.params[e.primitive.traits.call_jaxpr_param]
    ij = inner.jaxpr
    inner_outs = [o for o, w in zip(ij.outvars, wanted) if w]
    sub = _plan(ij, inner_outs, policy)
    # The recomputation: the needed outputs from the operands it reads and the saved values.
    cut = set(sub.saved) | set(ij.invars) | set(ij.constvars)
    eqns = ir.backward_dependencies(sub.recompute_eqns, inner_outs, stop=cut)[1]
    read = {a for q in eqns for a in q.invars if type(a) is Var} | {o for o in inner_outs if type(o) is Var}
    used = [v in read for v in ij.invars]
    if not sub.saved:  # nothing saved inside: the recomputation calls it as it is
        return list(e.invars)
    outer_saved = [Var(v.aval) for v in sub.saved]
    fj = Jaxpr(ij.constvars, ij.invars, sub.forward_eqns, [*ij.outvars, *sub.saved])
    fparams = e.primitive.derive_params(e.params, ClosedJaxpr(fj, inner.consts), "known", len(e.invars))
    forward_eqns[i] = e._replace(params=fparams, outvars=[*e.outvars, *outer_saved])
    rj = Jaxpr(ij.constvars, [*(v for v, u in zip(ij.invars, used) if u), *sub.saved], eqns, inner_outs)
    operands = [*(a for a, u in zip(e.invars, used) if u), *outer_saved]
    rparams = e.primitive.derive_params(
        e.params, ad.dce(ClosedJaxpr(rj, inner.consts)), "unknown", len(operands)
    )
    recompute_eqns[i] = e._replace(
        invars=operands, params=rparams, outvars=[v for v, w in zip(e.outvars, wanted) if w]
    )
    saved.extend(reversed(outer_saved))
    return [a for a, u in zip(e.invars, used) if u]


def _plan_scan(e, wanted, policy, i, forward_eqns, recompute_eqns, saved, offloaded) -> list:
    """Plan the scan equation ``e`` (``kj.eqns[i]``) inside its body, as ``_plan_call`` a call: the
    values the policy saves in an iteration leave the forward scan stacked, as extra outputs; the
    recomputation is a scan over them that carries the carries again and returns the needed
    outputs. (JAX's scan rule: a named value inside a checkpointed scan is saved per iteration.)
    Returns the operands of ``e`` the recomputation reads."""
    body: ClosedJaxpr = e.params["jaxpr"]
    bj = body.jaxpr
    n_carry, length = e.params["num_carry"], e.params["length"]
    wanted_ys = [w for w in wanted[n_carry:]]
    needed = [*bj.outvars[:n_carry], *(o for o, w in zip(bj.outvars[n_carry:], wanted_ys) if w)]
    sub = _plan(bj, needed, policy)
    inner_saved = set(sub.saved)
    if not sub.saved or (
        not any(wanted[:n_carry])
        and all(o in inner_saved for o, w in zip(bj.outvars[n_carry:], wanted_ys) if w)
    ):
        # Nothing saved inside (the scan is recomputed as it is), or every needed output is saved
        # inside: the scan's own outputs are those saved values.
        if sub.saved:
            saved.extend(reversed([v for v, w in zip(e.outvars, wanted) if w]))
            return []
        return list(e.invars)
    stacked = [
        Var(ir.ShapedArray((length, *v.aval.shape), v.aval.dtype, v.aval.weak_type)) for v in sub.saved
    ]
    fj = Jaxpr(bj.constvars, bj.invars, sub.forward_eqns, [*bj.outvars, *sub.saved])
    forward_eqns[i] = e._replace(
        params={**e.params, "jaxpr": ClosedJaxpr(fj, body.consts)}, outvars=[*e.outvars, *stacked]
    )
    cut = inner_saved | set(bj.invars) | set(bj.constvars)
    eqns = ir.backward_dependencies(sub.recompute_eqns, needed, stop=cut)[1]
    rj = Jaxpr(bj.constvars, [*bj.invars, *sub.saved], eqns, needed)
    carries = [v if w else Var(v.aval) for v, w in zip(e.outvars[:n_carry], wanted[:n_carry])]
    recompute_eqns[i] = e._replace(
        invars=[*e.invars, *stacked],
        params={**e.params, "jaxpr": ad.dce(ClosedJaxpr(rj, body.consts))},
        outvars=[*carries, *(v for v, w in zip(e.outvars[n_carry:], wanted_ys) if w)],
    )
    saved.extend(reversed(stacked))
    # A value offloaded in an iteration is offloaded stacked, after the scan (JAX's f32<host>[n,...]).
    offloaded.update((s, sub.offloaded[v]) for s, v in zip(stacked, sub.saved) if v in sub.offloaded)
    return list(e.invars)


def _plan_cond(e, wanted, policy, i, forward_eqns, recompute_eqns, saved) -> list:
    """Plan the cond equation ``e`` (``kj.eqns[i]``) inside each branch, as ``_plan_call`` a call:
    the values a branch saves leave the forward cond in residual slots shared by type across
    branches (a branch fills the other branches' slots with zeros, as the cond's own partial
    evaluation does); the recomputation is a cond over them. Returns the operands of ``e`` the
    recomputation reads."""
    branches = e.params["branches"]
    outs = [[o for o, w in zip(b.jaxpr.outvars, wanted) if w] for b in branches]
    subs = [_plan(b.jaxpr, o, policy) for b, o in zip(branches, outs)]
    if not any(sub.saved for sub in subs):
        return list(e.invars)  # nothing saved inside: the recomputation runs the cond as it is
    if all(all(v in set(sub.saved) for v in o) for sub, o in zip(subs, outs)):
        saved.extend(reversed([v for v, w in zip(e.outvars, wanted) if w]))  # its outputs are saved
        return []
    slots, maps = _merge_residuals([[v.aval for v in sub.saved] for sub in subs])
    in_avals = branches[0].in_avals

    def forward_branch(b, sub, m):
        fj = ClosedJaxpr(
            Jaxpr(b.jaxpr.constvars, b.jaxpr.invars, sub.forward_eqns, [*b.jaxpr.outvars, *sub.saved]),
            b.consts,
        )

        def fn(*xs):
            vals = core.eval_jaxpr(fj.jaxpr, fj.consts, *xs)
            slot_vals = [None] * len(slots)
            for k, r in zip(m, vals[len(b.jaxpr.outvars) :]):
                slot_vals[k] = r
            zeros = [ad.instantiate(ad.Zero(a)) if v is None else v for v, a in zip(slot_vals, slots)]
            return [*vals[: len(b.jaxpr.outvars)], *zeros]

        return trace_to_jaxpr(fn, in_avals)

    def recompute_branch(b, sub, m, o):
        cut = set(sub.saved) | set(b.jaxpr.invars) | set(b.jaxpr.constvars)
        eqns = ir.backward_dependencies(sub.recompute_eqns, o, stop=cut)[1]
        rj = Jaxpr(b.jaxpr.constvars, [*b.jaxpr.invars, *sub.saved], eqns, o)

        def fn(*xs):
            ops, res = xs[: len(in_avals)], xs[len(in_avals) :]
            return core.eval_jaxpr(rj, b.consts, *ops, *[res[k] for k in m])

        return trace_to_jaxpr(fn, [*in_avals, *slots])

    stacked = [Var(a) for a in slots]
    fwd = tuple(forward_branch(b, sub, m) for b, sub, m in zip(branches, subs, maps))
    forward_eqns[i] = e._replace(params={**e.params, "branches": fwd}, outvars=[*e.outvars, *stacked])
    rec = tuple(recompute_branch(b, sub, m, o) for b, sub, m, o in zip(branches, subs, maps, outs))
    recompute_eqns[i] = e._replace(
        invars=[*e.invars, *stacked],
        params={**e.params, "branches": rec},
        outvars=[v for v, w in zip(e.outvars, wanted) if w],
    )
    saved.extend(reversed(stacked))
    return list(e.invars)


def _recompute_then(known: ClosedJaxpr, unknown: ClosedJaxpr, res_vars, plan: _Plan):
    """A jaxpr over (the known inputs it reads, saved values, unknown inputs) that recomputes the
    unsaved residuals with the known jaxpr's equations, then runs the unknown jaxpr; and which known
    inputs it reads."""
    kj, uj = known.jaxpr, unknown.jaxpr
    cut = set(plan.saved) | set(kj.invars) | set(kj.constvars)
    again = [plan.recompute_eqns[i] for i in sorted(plan.rerun)]
    roots = [*res_vars, *(a for e in again for a in e.invars)]
    recompute = ir.backward_dependencies(plan.recompute_eqns, roots, stop=cut)[1]
    if again:  # the debug callbacks run again, in their places (_rerun_debug_callbacks)
        keep = {id(e) for e in recompute} | {id(e) for e in again}
        recompute = [e for e in plan.recompute_eqns if id(e) in keep]
    # Rename: the unknown jaxpr's residual inputs are the known jaxpr's residual variables.
    n_res = len(res_vars)
    rename = dict(zip(uj.invars[:n_res], res_vars))

    def sub(a):
        return rename.get(a, a) if type(a) is Var else a

    tangent_eqns = [e._replace(invars=[sub(a) for a in e.invars]) for e in uj.eqns]
    outvars = [sub(v) for v in uj.outvars]
    recompute, subst = _inline_undifferentiated(recompute)
    if subst:  # (a value an inlined checkpoint passed through: read where it came from)
        tangent_eqns = [
            e._replace(invars=[subst.get(a, a) if type(a) is Var else a for a in e.invars])
            for e in tangent_eqns
        ]
        outvars = [subst.get(v, v) if type(v) is Var else v for v in outvars]
    jaxpr = Jaxpr([*kj.constvars, *uj.constvars], [], [*recompute, *tangent_eqns], outvars)
    closed = ad.dce(ClosedJaxpr(jaxpr, [*known.consts, *unknown.consts]))
    j = closed.jaxpr
    read = {a for e in j.eqns for a in e.invars if type(a) is Var} | set(outvars)
    used_inputs = [v in read for v in kj.invars]
    moves, saved_ins = _offload(plan, "backward")
    inputs = [*saved_ins, *(v for v, used in zip(kj.invars, used_inputs) if used), *uj.invars[n_res:]]
    return ClosedJaxpr(Jaxpr(j.constvars, inputs, [*moves, *j.eqns], j.outvars), closed.consts), used_inputs


def _inline_undifferentiated(eqns: list) -> tuple[list, dict]:
    """The known equations ``eqns`` with each undifferentiated checkpoint in them (the known part
    of one inside the checkpoint being split: ``_partial_eval``'s ``of_jaxpr`` case) replaced by
    its equations, which write its results: recomputing, the backward pass runs them as they are,
    as JAX's prints them. Also the substitution for results it passed through unchanged."""
    if not any(e.primitive is checkpoint_p and not e.params["differentiated"] for e in eqns):
        return eqns, {}
    subst: dict = {}

    def sub(a):
        return subst.get(a, a) if type(a) is Var else a

    out = []
    for e in eqns:
        body = e.params.get("jaxpr") if e.primitive is checkpoint_p else None
        if body is None or e.params["differentiated"] or body.consts:
            out.append(e._replace(invars=[sub(a) for a in e.invars]))
            continue
        inner, inner_subst = _inline_undifferentiated(list(body.jaxpr.eqns))
        env = dict(zip(body.jaxpr.invars, [sub(a) for a in e.invars]))
        result_of = dict(zip(body.jaxpr.outvars, e.outvars))
        for be in inner:
            outs = [result_of.pop(v, None) or Var(v.aval) for v in be.outvars]
            out.append(
                be._replace(invars=[env.get(a, a) if type(a) is Var else a for a in be.invars], outvars=outs)
            )
            env.update(zip(be.outvars, outs))
        for bv, v in result_of.items():  # results no inner equation computes (an input passed on)
            bv = inner_subst.get(bv, bv)
            subst[v] = env.get(bv, bv) if type(bv) is Var else bv
    return out, subst


def _after_producers(eqns: list, moves: list) -> list:
    """``eqns`` with each move right after the equation computing its operand (as JAX's forward
    program places an offload); a move of an input or constant first."""
    if not moves:
        return eqns
    by_operand = {m.invars[0]: m for m in moves}
    out = [m for m in moves if not any(m.invars[0] in e.outvars for e in eqns)]
    for e in eqns:
        out.append(e)
        out.extend(by_operand[v] for v in e.outvars if v in by_operand)
    return out


def _offload(plan: _Plan, side: str):
    """The ``device_put`` equations moving the offloaded saved values, and the saved values as the
    forward program returns them / the backward program receives them (NOTE: [offloaded
    residuals]): forward, each offloaded value is moved to its destination's memory space;
    backward, it arrives there and is moved back to its source's before anything reads it."""
    if not plan.offloaded:
        return [], list(plan.saved)
    eqns, outs = [], []
    for v in plan.saved:
        kinds = plan.offloaded.get(v)
        if kinds is None:
            outs.append(v)
            continue
        src, dst = (_SPACES.get(k, ir.MemorySpace.Device) for k in kinds)
        moved = Var(v.aval.update(memory_space=dst))
        if side == "forward":
            params = dict(devices=(dst,), srcs=(None,), copy_semantics=(ArrayCopySemantics.ALWAYS_COPY,))
            eqns.append(ir.JaxprEqn(device_put_p, [v], params, [moved], None))
        else:
            params = dict(devices=(src,), srcs=(None,), copy_semantics=(ArrayCopySemantics.ALWAYS_COPY,))
            eqns.append(ir.JaxprEqn(device_put_p, [moved], params, [v], None))
        outs.append(moved)
    return eqns, outs


checkpoint_p.def_transpose(_transpose)
checkpoint_p.def_partial_eval(_partial_eval)
checkpoint_p.def_traits(linear=True)  # may appear in linear programs (its transpose handles recompute)


# An Offloadable's memory kinds as memory spaces (JAX's mem_kind_to_space: "device" and the
# others are the device's memory).
_SPACES = {"pinned_host": ir.MemorySpace.Host}
