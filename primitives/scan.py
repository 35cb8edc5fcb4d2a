"""The ``scan`` primitive: a loop over the leading axis of its ``xs`` with a carry.

Layer: primitives. Imports the funcgrad kernel, numpy, sibling primitive modules and the jaxpr helpers
of ``primitives/control_flow.py`` (which ``cond`` and ``while`` share). The user-facing function is
``lax.scan`` (``funcgrad/_control_flow.py``); lowering to StableHLO is in ``xla_bridge/rules/scan.py``.

- ``scan_p.bind(*consts, *init, *xs, jaxpr, num_consts, num_carry, length, reverse, unroll)``:
  ``jaxpr(consts, carry, x_i) -> (carry, y_i)`` for ``i`` in ``range(length)`` (reversed when
  ``reverse``), ys stacked on a new leading axis. Its rules are jaxpr transformations followed by a
  new bind, as for ``cond`` and ``while`` (NOTE: [control-flow jaxprs have no tracer constants]).

# NOTE: [scan residuals]
# ``_scan_partial_eval`` (JAX's ``_scan_partial_eval``) splits the body once the unknown-ness of
# the carries has reached a fixed point. The known scan runs now and emits each iteration's
# residuals as extra ys, stacked along the scan axis. Residuals that do not depend on the carry
# or on xs (``W`` in ``tanh(W @ h)``) are loop invariant: they are computed once outside the loop
# and become consts of the unknown scan instead of ``length`` stacked copies; a residual that is
# just a known xs slice is forwarded from the xs operand instead of being re-stacked. The unknown
# scan runs over (invariant residuals as consts, stacked residuals as xs); the transpose rule turns
# it into a reverse scan whose carry accumulates the consts' cotangents.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import structure as st
from funcgrad.primitives._rules import to_front
from funcgrad.primitives.control_flow import (
    _eager,
    _fixed_point,
    _jet,
    _merge_outs,
    _np,
    _rearrange,
    _same_type,
    _scan_layout,
    _select_outputs,
    _series_out,
    _split,
    _stacked,
    _tangents_out,
    _terms,
    _wrap,
    eval_jaxpr_numpy,
)

from funcgrad.kernel import core, ir
from funcgrad.kernel.ad import (
    Zero,
    ct_aval,
    instantiate,
    is_undefined_primal,
    is_zero_series,
    jvp_jaxpr,
    transpose_jaxpr_with_state,
)
from funcgrad.kernel.batching import batch_jaxpr
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.held_state import WrittenState
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, Var
from funcgrad.kernel.partial_eval import dce_jaxpr_consts, partial_eval_jaxpr, trace_to_jaxpr

__all__ = ["scan_p"]

scan_p = Primitive("scan", multiple_results=True)
scan_p.def_traits(jaxpr_params=("jaxpr",), sparse="scan")
scan_p.impl_takes_arrays = True  # (as cond and while: Arrays pass through, the loop runs compiled)

# ----------------------------------------------------------------------------------------------
# scan


def _scan_impl(*args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, carry, xs = _split([_np(a) for a in args], num_consts, num_carry)
    xs = [np.asarray(x) for x in xs]
    y_avals = jaxpr.out_avals[num_carry:]
    ys = [np.empty((length, *a.shape), a.dtype) for a in y_avals]
    j, jconsts = jaxpr.jaxpr, [_np(c) for c in jaxpr.consts]
    for t in range(length):
        i = length - 1 - t if reverse else t
        outs = eval_jaxpr_numpy(j, jconsts, [*consts, *carry, *[x[i] for x in xs]])
        carry = outs[:num_carry]
        for y, o in zip(ys, outs[num_carry:]):
            y[i] = o
    return _wrap(carry, jaxpr.out_avals[:num_carry]) + _wrap(ys, [_stacked(a, length) for a in y_avals])


def _scan_abstract_eval(*avals, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, carry, xs = _split(avals, num_consts, num_carry)
    body_in = jaxpr.in_avals
    expected = [
        *body_in[: num_consts + num_carry],
        *[_stacked(a, length) for a in body_in[num_consts + num_carry :]],
    ]
    if len(expected) != len(avals) or not all(map(_same_type, expected, avals)):
        raise TypeError(
            f"scan (length {length}): operands ("
            + ", ".join(a.str_short() for a in avals)
            + ") do not match the body's inputs ("
            + ", ".join(a.str_short() for a in expected)
            + ") (consts, carry, stacked xs)"
        )
    outs = jaxpr.out_avals
    if not all(map(_same_type, outs[:num_carry], carry)):
        raise TypeError("scan: the body's carry outputs do not match its carry inputs")
    carry_out = [a.update(weak_type=a.weak_type and c.weak_type) for a, c in zip(outs[:num_carry], carry)]
    return carry_out + [_stacked(a, length) for a in outs[num_carry:]]


def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse, unroll):
    nc, ncar = num_consts, num_carry
    consts, init, xs = _split(primals, nc, ncar)
    consts_t, init_t, xs_t = _split(tangents, nc, ncar)
    const_nz, xs_nz = [type(t) is not Zero for t in consts_t], [type(t) is not Zero for t in xs_t]
    ny = len(jaxpr.out_avals) - ncar

    def step(nz):
        return jvp_jaxpr(jaxpr, const_nz + nz + xs_nz, instantiate=nz + [False] * ny)[1][:ncar]

    carry_nz = _fixed_point(step, [type(t) is not Zero for t in init_t])
    body, out_nz = jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz, instantiate=carry_nz + [False] * ny)
    ys_nz = out_nz[ncar:]
    nx, ncd, ncard, nxd, nyd = len(xs), sum(const_nz), sum(carry_nz), sum(xs_nz), sum(ys_nz)
    body = _rearrange(body, *_scan_layout(nc, ncar, nx, ny, ncd, ncard, nxd, nyd))
    args = [
        *consts, *[t for t in consts_t if type(t) is not Zero],
        *init, *[instantiate(t) for t, z in zip(init_t, carry_nz) if z],
        *xs, *[t for t in xs_t if type(t) is not Zero],
    ]  # fmt: skip
    outs = scan_p.bind(
        *args, jaxpr=body, num_consts=nc + ncd, num_carry=ncar + ncard,
        length=length, reverse=reverse, unroll=unroll,
    )  # fmt: skip
    carry_out, carry_dot, ys, ys_dot = _split(outs, ncar, ncard, ny)
    tangents_out = _tangents_out(carry_out, carry_dot, carry_nz) + _tangents_out(ys, ys_dot, ys_nz)
    return [*carry_out, *ys], tangents_out


def _loop_variant(jaxpr: Jaxpr, variant_in: set) -> set:
    """Variables of ``jaxpr`` that depend on any of ``variant_in``."""
    return ir.forward_dependents(jaxpr, variant_in)[0]


def _scan_partial_eval(trace, args, unknowns, *, jaxpr, num_consts, num_carry, length, reverse, unroll):
    # See NOTE: [scan residuals].
    nc, ncar = num_consts, num_carry
    const_uk, init_uk, xs_uk = _split(unknowns, nc, ncar)
    ny = len(jaxpr.out_avals) - ncar

    def step(uk):
        return partial_eval_jaxpr(jaxpr, const_uk + uk + xs_uk, instantiate=uk + [False] * ny)[2][:ncar]

    carry_uk = _fixed_point(step, list(init_uk))
    body_uk = const_uk + carry_uk + xs_uk
    known, unknown, out_uk, num_res = partial_eval_jaxpr(jaxpr, body_uk, instantiate=carry_uk + [False] * ny)
    consts, init, xs = _split(args, nc, ncar)
    k_consts = [a for a, uk in zip(consts, const_uk) if not uk]
    k_init = [a for a, uk in zip(init, carry_uk) if not uk]
    k_xs = [a for a, uk in zip(xs, xs_uk) if not uk]
    n_kc, n_kcar = len(k_consts), len(k_init)
    kj = known.jaxpr
    n_known_out = len(kj.outvars) - num_res
    res_vars = kj.outvars[n_known_out:]
    variant = _loop_variant(kj, set(kj.invars[n_kc:]))
    const_pos = {v: i for i, v in enumerate(kj.invars[:n_kc])}
    xs_pos = {v: i for i, v in enumerate(kj.invars[n_kc + n_kcar :])}
    reshaped_from = {e.outvars[0]: e.invars[0] for e in kj.eqns if e.primitive is st.reshape_p}
    # Each residual is: a known const, or an xs operand possibly reshaped (forwarded), loop
    # invariant (computed once outside the loop), or loop variant (a ys of the known scan).
    kinds = []
    for v in res_vars:
        src = v
        while type(src) is Var and src in reshaped_from and src not in xs_pos:
            src = reshaped_from[src]
        if type(v) is Var and v in const_pos:
            kinds.append(("const", const_pos[v]))
        elif type(src) is Var and src in xs_pos:
            kinds.append(("xs", xs_pos[src]))
        elif type(v) is Var and v in variant:
            kinds.append(("stacked", None))
        else:
            kinds.append(("invariant", None))
    invariant_idx = [i for i, (k, _) in enumerate(kinds) if k in ("const", "invariant")]
    stacked_idx = [i for i, (k, _) in enumerate(kinds) if k in ("xs", "stacked")]

    with core.set_current_trace(trace.parent):
        inv_vals = _invariant_residuals(known, n_kc, kinds, k_consts)
        emit = [True] * n_known_out + [k == "stacked" for k, _ in kinds]
        known_body = _select_outputs(known, emit)
        known_outs = []
        if known_body.out_avals:
            known_outs = scan_p.bind(
                *k_consts, *k_init, *k_xs, jaxpr=known_body, num_consts=n_kc, num_carry=n_kcar,
                length=length, reverse=reverse, unroll=unroll,
            )  # fmt: skip
        stacked_out = iter(known_outs[n_known_out:])
        res_vals = []
        for (k, i), v in zip(kinds, res_vars):
            if k == "xs":  # a reshape of a slice is a slice of the reshaped stack
                res_vals.append(st.reshape(k_xs[i], (length, *v.aval.shape)))
            else:
                res_vals.append(next(stacked_out) if k == "stacked" else None)
    known_vals = known_outs[:n_known_out]
    if not any(out_uk):
        return _merge_outs(known_vals, [], out_uk)
    # The unknown scan: consts = (invariant residuals, unknown consts), carry = unknown carries,
    # xs = (unknown xs, stacked residuals).
    n_uc, n_ucar = sum(const_uk), sum(carry_uk)
    n_ux = sum(xs_uk)
    base = num_res
    in_order = [
        *invariant_idx, *range(base, base + n_uc + n_ucar + n_ux), *stacked_idx,
    ]  # fmt: skip
    unknown_body = _rearrange(unknown, in_order)
    u_consts = [a for a, uk in zip(consts, const_uk) if uk]
    u_init = [a for a, uk in zip(init, carry_uk) if uk]
    u_xs = [a for a, uk in zip(xs, xs_uk) if uk]
    operands = [
        *[inv_vals[i] for i in invariant_idx], *u_consts, *u_init, *u_xs, *[res_vals[i] for i in stacked_idx],
    ]  # fmt: skip
    params = dict(
        jaxpr=unknown_body, num_consts=len(invariant_idx) + n_uc, num_carry=n_ucar,
        length=length, reverse=reverse, unroll=unroll,
    )  # fmt: skip
    unknown_outs = trace.stage(scan_p, operands, params)
    return _merge_outs(known_vals, unknown_outs, out_uk)


def _invariant_residuals(known: ClosedJaxpr, n_consts: int, kinds, k_consts) -> list:
    """The loop-invariant residuals, computed once from the known consts (on the current trace);
    ``None`` at the positions of the other residuals."""
    kj = known.jaxpr
    n_out = len(kj.outvars) - len(kinds)
    wanted = [i for i, (k, _) in enumerate(kinds) if k == "invariant"]
    vals: list = [k_consts[i] if k == "const" else None for k, i in kinds]
    if wanted:
        outvars = [kj.outvars[n_out + i] for i in wanted]
        sub = Jaxpr(kj.constvars, kj.invars, kj.eqns, outvars)
        sub, sub_consts = dce_jaxpr_consts(sub, known.consts)
        # The carry and xs inputs are unused by construction: evaluate with the consts only.
        sub = Jaxpr(sub.constvars, sub.invars[:n_consts], sub.eqns, sub.outvars)
        for i, v in zip(wanted, core.eval_jaxpr(sub, sub_consts, *k_consts)):
            vals[i] = v
    return vals


def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    nc, ncar = num_consts, num_carry
    consts, _, xs = _split(args, nc, ncar)
    ct_carry, ct_ys = _split(cts, ncar)[:2]
    # A linear const the body never reads gets no cotangent (None, a symbolic zero), as in JAX,
    # whose linearization drops it (scan's DCE rule) before transposing: no zeros carried and
    # added, which would also decide the cotangent's weak type.
    j = jaxpr.jaxpr
    live, _ = ir.backward_dependencies(j.eqns, j.outvars, effects=True)
    dead = [is_undefined_primal(c) and v not in live for c, v in zip(consts, j.invars[:nc])]
    if any(dead):
        invars = [v for v, d in zip(j.invars, dead + [False] * (len(j.invars) - nc)) if not d]
        jaxpr = ClosedJaxpr(Jaxpr(j.constvars, invars, j.eqns, j.outvars), jaxpr.consts)
        consts = [c for c, d in zip(consts, dead) if not d]
        nc = len(consts)
    # (a linear xs the body never reads likewise: grad of scan(lambda c, t: (2 * c, None), x,
    # cos(x)[None]) at x = inf was 0 * -sin(inf) = NaN, jax's 2; the lax-parameter fuzzer, session 18)
    j = jaxpr.jaxpr
    dead_x = [is_undefined_primal(x) and v not in live for x, v in zip(xs, j.invars[nc + ncar :])]
    if any(dead_x):
        invars = [*j.invars[: nc + ncar], *[v for v, d in zip(j.invars[nc + ncar :], dead_x) if not d]]
        jaxpr = ClosedJaxpr(Jaxpr(j.constvars, invars, j.eqns, j.outvars), jaxpr.consts)
        xs = [x for x, d in zip(xs, dead_x) if not d]
    const_lin = [is_undefined_primal(c) for c in consts]
    xs_lin = [is_undefined_primal(x) for x in xs]
    ys_zero = [type(ct) is Zero for ct in ct_ys]
    in_avals = jaxpr.in_avals
    # (cotangents typed as JAX's to_ct_aval: NOTE: [unreduced values])
    lin_const_avals = [ct_aval(a) for a, lin in zip(in_avals[:nc], const_lin) if lin]
    # The cotangents' own weak types (JAX traces the transposed body on the values it gets,
    # _scan_transpose_fancy): a strong cotangent of a weak output makes strong cotangents.
    ct_carry = [instantiate(ct) for ct in ct_carry]
    carry_avals = [
        ct_aval(a).update(weak_type=core.get_aval(ct).weak_type)
        for a, ct in zip(in_avals[nc : nc + ncar], ct_carry)
    ]
    res_consts = [c for c, lin in zip(consts, const_lin) if not lin]
    res_xs = [x for x, lin in zip(xs, xs_lin) if not lin]
    y_avals = [
        ct_aval(a).update(weak_type=core.get_aval(ct).weak_type)
        for a, ct in zip(jaxpr.out_avals[ncar:], ct_ys)
        if type(ct) is not Zero
    ]
    # Carries are linear: the scans in linear programs carry tangents (see NOTE: [scan residuals]).
    linear = [*const_lin, *[True] * ncar, *xs_lin]
    # A custom_vjp bwd in the body may write Refs: they are carried (NOTE: [state written by a
    # backward pass]), their leaves after the cotangent carries.
    body_t, items = transpose_jaxpr_with_state(
        jaxpr, linear, [False] * ncar + ys_zero, [a.weak_type for a in (*carry_avals, *y_avals)]
    )
    written = WrittenState(items)
    state_init = written.leaves
    n_lc, n_st = len(lin_const_avals), len(state_init)

    def body(*a):
        res_c, acc, ct_c, st, ct_y, res_x = _split(a, len(res_consts), n_lc, ncar, n_st, len(y_avals))
        # transpose_jaxpr takes (non-linear consts, non-linear xs, carry cts, nonzero ys cts).
        outs = core.eval_jaxpr(body_t.jaxpr, body_t.consts, *res_c, *res_x, *ct_c, *ct_y, *st)
        ct_consts, ct_carry_in, ct_xs, st_out = _split(outs, n_lc, ncar, len(outs) - n_lc - ncar - n_st)
        return [*[hooks.add_any(x, y) for x, y in zip(acc, ct_consts)], *ct_carry_in, *st_out, *ct_xs]

    res_c_avals = [a for a, lin in zip(in_avals[:nc], const_lin) if not lin]
    res_x_avals = [a for a, lin in zip(in_avals[nc + ncar :], xs_lin) if not lin]
    st_avals = [core.get_aval(x) for x in state_init]
    body_closed = trace_to_jaxpr(
        body, [*res_c_avals, *lin_const_avals, *carry_avals, *st_avals, *y_avals, *res_x_avals]
    )
    outs = scan_p.bind(
        *res_consts,
        *[hooks.zeros(a) for a in lin_const_avals],
        *ct_carry,
        *state_init,
        *[ct for ct in ct_ys if type(ct) is not Zero],
        *res_xs,
        jaxpr=body_closed, num_consts=len(res_consts), num_carry=n_lc + ncar + n_st,
        length=length, reverse=not reverse, unroll=unroll,
    )  # fmt: skip
    ct_consts, ct_init, st_final, ct_xs = _split(outs, n_lc, ncar, n_st)
    written.write(st_final)
    it_c, it_x = iter(ct_consts), iter(ct_xs)
    ct_live = iter([next(it_c) if lin else None for lin in const_lin])
    ct_live_x = iter([next(it_x) if lin else None for lin in xs_lin])
    return [
        *[None if d else next(ct_live) for d in dead],
        *ct_init,
        *[None if d else next(ct_live_x) for d in dead_x],
    ]


def _scan_batch(axis_size, vals, dims, *, jaxpr, num_consts, num_carry, length, reverse, unroll):
    nc, ncar = num_consts, num_carry
    consts, init, xs = _split(vals, nc, ncar)
    cd, initd, xsd = _split(dims, nc, ncar)
    ny = len(jaxpr.out_avals) - ncar
    xs_dims = [None if d is None else 0 for d in xsd]  # a slice's batch dim (see below)

    def step(b):
        dims_in = cd + [0 if x else None for x in b] + xs_dims
        return [
            d is not None
            for d in batch_jaxpr(jaxpr, axis_size, dims_in, instantiate=b + [False] * ny)[1][:ncar]
        ]

    carry_b = _fixed_point(step, [d is not None for d in initd])
    dims_in = cd + [0 if b else None for b in carry_b] + xs_dims
    body, out_dims = batch_jaxpr(jaxpr, axis_size, dims_in, instantiate=carry_b + [False] * ny)
    init = [to_front(x, d, axis_size) if b else x for x, d, b in zip(init, initd, carry_b)]
    # Stacked xs keep the scan axis first and put the batch axis second (a slice's axis 0).
    xs = [x if d is None else st.moveaxis(x, d, 1) for x, d in zip(xs, xsd)]
    outs = scan_p.bind(
        *consts,
        *init,
        *xs,
        jaxpr=body,
        num_consts=nc,
        num_carry=ncar,
        length=length,
        reverse=reverse,
        unroll=unroll,
    )
    return outs, [0 if b else None for b in carry_b] + [None if d is None else 1 for d in out_dims[ncar:]]


scan_p.def_impl(_eager(_scan_impl, scan_p))
scan_p.def_abstract_eval(_scan_abstract_eval)
scan_p.def_jvp(_scan_jvp)
scan_p.def_partial_eval(_scan_partial_eval)
scan_p.def_transpose(_scan_transpose)
scan_p.def_batch(_scan_batch)
scan_p.def_traits(linear=True)  # may appear in linear programs: its transpose is a reverse scan


def _scan_taylor(primals, series, *, jaxpr, num_consts, num_carry, length, reverse, unroll):
    nc, ncar, order = num_consts, num_carry, len(series[0])
    consts, init, xs = _split(primals, nc, ncar)
    consts_s, init_s, xs_s = _split(series, nc, ncar)
    const_nz = [not is_zero_series(s) for s in consts_s]
    xs_nz = [not is_zero_series(s) for s in xs_s]
    ny = len(jaxpr.out_avals) - ncar

    def step(nz):
        return _jet(jaxpr, order, const_nz + nz + xs_nz, nz + [False] * ny)[1][:ncar]

    carry_nz = _fixed_point(step, [not is_zero_series(s) for s in init_s])
    body, out_nz = _jet(jaxpr, order, const_nz + carry_nz + xs_nz, carry_nz + [False] * ny)
    ys_nz = out_nz[ncar:]
    nx = len(xs)
    nct, ncart, nxt, nyt = (order * sum(f) for f in (const_nz, carry_nz, xs_nz, ys_nz))
    body = _rearrange(body, *_scan_layout(nc, ncar, nx, ny, nct, ncart, nxt, nyt))
    args = [
        *consts, *_terms(consts_s, const_nz), *init, *_terms(init_s, carry_nz), *xs, *_terms(xs_s, xs_nz),
    ]  # fmt: skip
    outs = scan_p.bind(
        *args, jaxpr=body, num_consts=nc + nct, num_carry=ncar + ncart,
        length=length, reverse=reverse, unroll=unroll,
    )  # fmt: skip
    carry_out, carry_terms, ys, ys_terms = _split(outs, ncar, ncart, ny)
    series_out = _series_out(carry_out, carry_terms, carry_nz, order) + _series_out(
        ys, ys_terms, ys_nz, order
    )
    return [*carry_out, *ys], series_out


scan_p.def_taylor(_scan_taylor)  # (NOTE in control_flow.py: the loop stays a loop)
