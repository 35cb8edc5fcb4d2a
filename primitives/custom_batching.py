"""``custom_vmap_call``: a sub-program with a user-defined batching rule (``jax.custom_batching``).

Layer: primitives. Imports only the funcgrad kernel.

Parameters: ``call`` (the ``ClosedJaxpr`` of the function's body over its flattened arguments,
closed-over tracers first), ``rule`` (a *flat rule*, below), ``num_consts`` (how many leading
arguments are closed-over values rather than the function's arguments) and ``name``.

A flat rule is ``rule(axis_size, in_batched, args) -> (outs, out_batched)``: ``args`` are the
call's arguments (lists of arrays, batched ones with the batch at axis 0), ``in_batched`` one flag
per argument, and it returns one array per output of ``call`` and one flag per output saying
whether that output carries the batch (at axis 0). The surface (``funcgrad/custom_batching.py``)
wraps the user's pytree rule into one; the rules below derive new flat rules from old ones.

- impl, lowering: the body (the rule only matters under ``vmap``).
- batch: the rule, run on the parent trace, so an enclosing ``vmap`` batches the rule's own
  operations (or meets another ``custom_vmap`` inside it: the rule of each level is applied).
- jvp: one call over (primals, tangents) whose rule is the rule's JVP; partial eval splits it
  (NOTE: [differentiating custom_vmap]); transpose: the transposed body, the rule's VJP.

# NOTE: [differentiating custom_vmap]
# JAX's JVP of a custom_vmap call is one custom_vmap call over (primals, nonzero tangents), its
# body the body's JVP, its rule the JVP of the rule (``_JointRule``): the user's rule sees an
# argument as batched where its primal and its tangent both are, and values batched alone (the
# tangents of ``jacfwd``, primals under a fixed tangent) are an ordinary vmap around the rule's JVP
# (the rule sees them unbatched, as in JAX); so under ``vmap`` of ``jvp`` the primal outputs too
# come from the rule, as JAX's. Where both kinds meet in one call (JAX then batches the outputs
# twice: a (5, 5) result of a 5-lane vmap), the values batched alone are broadcast instead.
# JAX cannot linearize that call (its primal outputs depend on unknown tangents), so its ``grad``
# fails; funcgrad's partial-evaluation rule splits a JVP call whose primals are known into the
# original call for the primal outputs (same body, same rule, run now) and a *tangent call* over
# (primals, nonzero tangents) that returns only the output tangents (body: the body's JVP, rule:
# the rule's JVP), staged with the primals as residuals. The tangent call is linear in its tangent
# inputs, so its transpose is again a custom_vmap call: the transposed body, with the VJP of the
# rule as its rule. Hence ``vmap(grad(f))`` runs the rule for the primal outputs and the rule's
# VJP for the cotangents, ``grad(grad(f))`` differentiates those again, and without vmap the rule
# is never called (the price: the tangent call recomputes the primal part of the body eagerly;
# XLA shares it under ``jit``). Transposed rules broadcast an unbatched operand to batched where
# it meets a batched one (the linear inputs of a transpose are always batched): the rule sees
# more batched inputs than strictly needed, never fewer.
"""

from __future__ import annotations

from funcgrad.kernel import ad, batching, core
from funcgrad.kernel.ad import Zero
from funcgrad.kernel.callkit import check_call_avals
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, ShapedArray

__all__ = ["custom_vmap_call_p", "check_rule_outputs"]


def _batched_aval(aval: ShapedArray, axis_size: int) -> ShapedArray:
    return ShapedArray((axis_size, *aval.shape), aval.dtype, aval.weak_type)


def _to_batched(x, batched: bool, axis_size: int):
    """``x`` with the batch at axis 0 (broadcast when it has none)."""
    return x if batched else hooks.broadcast_batch(x, axis_size, 0)


def check_rule_outputs(name: str, outs, out_batched, out_avals, axis_size: int) -> None:
    """A vmap rule returns one output and one flag per output of the function, and each output it
    calls batched has the batch (a leading ``axis_size`` dimension). As JAX's, the rest of an
    output's shape and its dtype are the rule's business (a rule of a function closing over an
    array may return a value of another shape than the body's).

    >>> import numpy as np
    >>> check_rule_outputs("f", [np.zeros(2)], [True], [ShapedArray((), np.float64)], 3)
    Traceback (most recent call last):
    ...
    ValueError: custom_vmap rule of f: output 0 is f64[2], but as a batched (the batch at axis 0) ...
    """
    if len(outs) != len(out_avals) or len(out_batched) != len(out_avals):
        raise ValueError(
            f"custom_vmap rule of {name} returned {len(outs)} outputs and {len(out_batched)} "
            f"batching flags; the function has {len(out_avals)} outputs"
        )
    for i, (o, b, aval) in enumerate(zip(outs, out_batched, out_avals)):
        got = core.get_aval(o)
        if b and got.shape[:1] != (axis_size,):
            want = _batched_aval(aval, axis_size)
            raise ValueError(
                f"custom_vmap rule of {name}: output {i} is {got.str_short()}, but as "
                f"a batched (the batch at axis 0) output of the function it must be {want.str_short()} "
                f"(axis_size={axis_size})"
            )


# ----------------------------------------------------------------------------------------------
# The primitive's rules


def _impl(*args, call, **_):
    return core.eval_jaxpr(call.jaxpr, call.consts, *args)


def _abstract_eval(*avals, call, name, **_):
    check_call_avals(f"custom_vmap call of {name}", avals, call.in_avals)
    return call.out_avals


def _batch(axis_size, vals, dims, *, call, rule, num_consts, name):
    args = [x if d in (None, 0) else hooks.moveaxis(x, d, 0) for x, d in zip(vals, dims)]
    in_batched = [d is not None for d in dims]
    outs, out_batched = rule(axis_size, in_batched, args)
    outs, out_batched = list(outs), [bool(b) for b in out_batched]
    check_rule_outputs(name, outs, out_batched, call.out_avals, axis_size)
    return outs, [0 if b else None for b in out_batched]


def _jvp(primals, tangents, *, call, rule, num_consts, name):
    nonzeros = [type(t) is not Zero for t in tangents]
    nz_tangents = [t for t in tangents if type(t) is not Zero]
    joint = _JointRule(call, rule, nonzeros, num_consts, name)
    outs = custom_vmap_call_p.bind(
        *primals, *nz_tangents, call=_joint_body(call, nonzeros), rule=joint, num_consts=num_consts, name=name
    )
    n = len(call.out_avals)
    return outs[:n], outs[n:]


class _JointRule:
    """The flat rule of a JVP call (NOTE: [differentiating custom_vmap]): JAX's JVP of ``rule``,
    giving the primal outputs and the output tangents; it keeps what partial evaluation needs to
    split the call into the primal call and the tangent call."""

    def __init__(self, call, rule, nonzeros, num_consts, name):
        self.call, self.rule, self.nonzeros, self.num_consts, self.name = (
            call,
            rule,
            nonzeros,
            num_consts,
            name,
        )
        self._rule = _jvp_of_rule(rule, nonzeros, call.out_avals, num_consts, name, with_primals=True)
        self.__name__ = self._rule.__name__

    def __call__(self, axis_size, in_batched, args):
        return self._rule(axis_size, in_batched, args)


def _joint_body(call: ClosedJaxpr, nonzeros) -> ClosedJaxpr:
    """``(primals..., nonzero tangents...) -> (outputs..., tangents of every output...)``."""
    return ad.jvp_jaxpr(call, nonzeros, instantiate=True)[0]


def _partial_eval(trace, args, unknowns, *, call, rule, num_consts, name):
    """A JVP call with known primals (linearize, ``grad``) splits into the primal call (the body
    and the rule, run now) and the tangent call (staged; the primals are its residuals): NOTE:
    [differentiating custom_vmap]. Any other call with an unknown input is staged whole (JAX
    stages every one, so its ``grad`` fails)."""
    params = dict(call=call, rule=rule, num_consts=num_consts, name=name)
    if not isinstance(rule, _JointRule):
        return trace.stage(custom_vmap_call_p, args, params)
    n = len(rule.nonzeros)
    if any(unknowns[:n]):
        return trace.stage(custom_vmap_call_p, args, params)
    primals = args[:n]
    with core.set_current_trace(trace.parent):
        outs = custom_vmap_call_p.bind(
            *primals, call=rule.call, rule=rule.rule, num_consts=num_consts, name=name
        )
    tangent_call = _tangent_body(rule.call, rule.nonzeros)
    tangent_rule = _jvp_of_rule(rule.rule, rule.nonzeros, rule.call.out_avals, num_consts, name)
    out_tangents = trace.stage(
        custom_vmap_call_p,
        list(args),
        dict(call=tangent_call, rule=tangent_rule, num_consts=num_consts, name=name),
    )
    return [*outs, *out_tangents]


def _tangent_body(call: ClosedJaxpr, nonzeros) -> ClosedJaxpr:
    """``(primals..., nonzero tangents...) -> tangents of every output`` (NOTE: [differentiating
    custom_vmap])."""
    jvp_closed, _ = ad.jvp_jaxpr(call, nonzeros, instantiate=True)
    j, n = jvp_closed.jaxpr, len(call.out_avals)
    return ad.dce(ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.eqns, j.outvars[n:]), jvp_closed.consts))


def _jvp_of_rule(rule, nonzeros, out_avals, num_consts, name, with_primals=False):
    """The flat rule of a tangent call: the JVP of ``rule`` (NOTE: [differentiating custom_vmap]);
    ``with_primals``: of a JVP call, the primal outputs first."""
    n = len(nonzeros)
    nz_index = [i for i, nz in enumerate(nonzeros) if nz]
    if any(i < num_consts for i in nz_index):
        # The user's rule cannot see a closed-over value, so it cannot differentiate with respect
        # to one. Without vmap the body's JVP is right; under vmap it is an error.
        def unsupported(axis_size, in_batched, args):
            raise TypeError(
                f"custom_vmap function {name} closes over a value that is being differentiated, "
                "and its vmap rule cannot see it: pass that value as an argument of the function."
            )

        return unsupported

    def tangent_rule(axis_size, in_batched, args):
        # JAX's JVP of a rule: the user's rule sees an argument as batched only where its primal
        # and its tangent both are (a zero tangent is unbatched); a primal or tangent batched alone
        # ("extra-batched", jacfwd's tangents) is an ordinary vmap around the rule's JVP.
        primals, tangents = list(args[:n]), list(args[n:])
        p_batched, t_batched = list(in_batched[:n]), list(in_batched[n:])
        t_flag = dict.fromkeys(range(n), False)
        for t_index, i in enumerate(nz_index):
            t_flag[i] = bool(t_batched[t_index])
        mutual = [bool(p_batched[i]) and t_flag[i] for i in range(n)]
        extra_p = [0 if p_batched[i] and not mutual[i] else None for i in range(n)]
        extra_t = [0 if t_batched[k] and not p_batched[i] else None for k, i in enumerate(nz_index)]
        if any(mutual) and any(d is not None for d in (*extra_p, *extra_t)):
            # Both kinds at once: JAX's vmap around a rule that batches too gives its outputs the
            # batch twice (a (5, 5) result of a 5-lane vmap); here the extra-batched values are
            # broadcast instead, and the rule sees every value that meets a batched one as batched.
            mutual = [bool(b) for b in p_batched]
            for t_index, i in enumerate(nz_index):
                both = bool(p_batched[i]) or t_flag[i]
                primals[i] = _to_batched(primals[i], p_batched[i] or not both, axis_size)
                tangents[t_index] = _to_batched(tangents[t_index], t_batched[t_index] or not both, axis_size)
                mutual[i] = both
            extra_p, extra_t = [None] * n, [None] * len(nz_index)
        out_batched_box = []

        def jvp_of_rule(*ps_ts):
            ps, ts = list(ps_ts[:n]), list(ps_ts[n:])

            def primal_fun(*nz_primals):
                full = list(ps)
                for i, v in zip(nz_index, nz_primals):
                    full[i] = v
                outs, out_batched = rule(axis_size, mutual, full)
                out_batched_box.append([bool(b) for b in out_batched])
                check_rule_outputs(name, list(outs), out_batched_box[-1], out_avals, axis_size)
                return list(outs)

            outs, out_tangents = ad.jvp_flat(primal_fun, [ps[i] for i in nz_index], ts)
            out_tangents = [
                ad.instantiate(Zero(ad.tangent_aval(core.get_aval(o)))) if type(t) is Zero else t
                for t, o in zip(out_tangents, outs)
            ]
            return [*outs, *out_tangents] if with_primals else out_tangents

        if any(d is not None for d in (*extra_p, *extra_t)):
            vals, dims = batching.vmap_with_dims(
                jvp_of_rule, axis_size, [*extra_p, *extra_t], [*primals, *tangents]
            )
            results = [
                v if d is None else batching.move_batch_dim(v, axis_size, d, 0) for v, d in zip(vals, dims)
            ]
            flags = out_batched_box[-1] * 2 if with_primals else out_batched_box[-1]
            out_batched = [b or d is not None for b, d in zip(flags, dims)]
        else:
            results = jvp_of_rule(*primals, *tangents)
            out_batched = out_batched_box[-1] * 2 if with_primals else out_batched_box[-1]
        return results, out_batched

    tangent_rule.__name__ = f"jvp({getattr(rule, '__name__', 'rule')})"
    return tangent_rule


def _transpose(cts, *args, call, rule, num_consts, name):
    linear = [ad.is_undefined_primal(a) for a in args]
    ct_zero = [type(c) is Zero for c in cts]
    transposed = ad.transpose_jaxpr(call, linear, ct_zero)
    nonlin = [a for a in args if not ad.is_undefined_primal(a)]
    nz_cts = [c for c in cts if type(c) is not Zero]
    t_rule = _transpose_of_rule(rule, linear, ct_zero, call, name)
    outs = iter(
        custom_vmap_call_p.bind(
            *nonlin,
            *nz_cts,
            call=transposed,
            rule=t_rule,
            num_consts=sum(not lin for lin in linear[:num_consts]),
            name=name,
        )
    )
    return [next(outs) if lin else None for lin in linear]


def _transpose_of_rule(rule, linear, ct_zero, call, name):
    """The flat rule of a transposed call: the VJP of ``rule`` with respect to its linear inputs,
    which are always batched (NOTE: [differentiating custom_vmap])."""
    in_avals, out_avals = call.in_avals, call.out_avals
    n_nonlin = sum(not lin for lin in linear)

    def transposed_rule(axis_size, in_batched, args):
        nonlin, cts = list(args[:n_nonlin]), iter(args[n_nonlin:])
        nonlin_batched = iter(in_batched[:n_nonlin])
        ct_batched = iter(in_batched[n_nonlin:])
        nonlin_it = iter(nonlin)
        full_batched = [True if lin else next(nonlin_batched) for lin in linear]
        fixed = [None if lin else next(nonlin_it) for lin in linear]

        def linear_fun(*lin_vals):
            it = iter(lin_vals)
            full = [next(it) if lin else v for lin, v in zip(linear, fixed)]
            outs, out_batched = rule(axis_size, full_batched, full)
            out_batched = [bool(b) for b in out_batched]
            check_rule_outputs(name, list(outs), out_batched, out_avals, axis_size)
            return [_to_batched(o, b, axis_size) for o, b in zip(outs, out_batched)]

        lin_points = [
            ad.instantiate(Zero(ad.tangent_aval(_batched_aval(a, axis_size))))
            for a, lin in zip(in_avals, linear)
            if lin
        ]
        _, lin_fn = ad.linearize_flat(linear_fun, lin_points)
        cts_full = [
            Zero(ad.tangent_aval(_batched_aval(a, axis_size)))
            if z
            else _to_batched(next(cts), next(ct_batched), axis_size)
            for a, z in zip(out_avals, ct_zero)
        ]
        cts_in = lin_fn.transpose(cts_full)
        return [ad.instantiate(c) for c in cts_in], [True] * len(cts_in)

    transposed_rule.__name__ = f"transpose({getattr(rule, '__name__', 'rule')})"
    return transposed_rule


custom_vmap_call_p = Primitive("custom_vmap_call", multiple_results=True)
custom_vmap_call_p.def_traits(
    call_jaxpr_param="call",
    jaxpr_params=("call",),
    taylor_from_jvp="its JVP rule binds calls whose rule is the vmap rule's JVP: jet keeps the rule",
)
custom_vmap_call_p.def_traits(runs_user_rules=True)
custom_vmap_call_p.def_impl(_impl)
custom_vmap_call_p.def_abstract_eval(_abstract_eval)
custom_vmap_call_p.def_batch(_batch)
custom_vmap_call_p.def_jvp(_jvp)
custom_vmap_call_p.def_partial_eval(_partial_eval)
custom_vmap_call_p.def_transpose(_transpose)
