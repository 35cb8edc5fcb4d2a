"""Structured control flow primitives: ``cond`` and ``while`` (``scan`` is in ``primitives/scan.py``),
and the jaxpr helpers the three share.

Layer: primitives. Imports only the funcgrad kernel (core, ad, batching, partial_eval), numpy and
sibling primitive modules. The user-facing functions are in ``funcgrad/_control_flow.py``;
lowering to StableHLO is in ``xla_bridge/rules/control_flow.py`` (``rules/scan.py``).

Each primitive carries closed jaxprs in its params, and every rule is a jaxpr transformation
(``jvp_jaxpr``, ``partial_eval_jaxpr``, ``backward_pass``, ``batch_jaxpr``) followed by a new bind
of the same primitive, like the ``jit`` call primitive (``primitives/call.py``):

- ``cond_p.bind(index, *operands, branches)``: run ``branches[clamp(index)]``. All branches take
  the operands' avals and return the same avals.
- ``while_p.bind(*cond_consts, *body_consts, *init, cond_jaxpr, body_jaxpr, cond_nconsts,
  body_nconsts)``: ``while cond(cc, carry): carry = body(bc, carry)``; a predicate with dimensions
  (a loop batched with a batched predicate, NOTE: [batched while predicates]) means "while any".
- ``scan_p.bind(*consts, *init, *xs, jaxpr, num_consts, num_carry, length, reverse, unroll)``:
  ``jaxpr(consts, carry, x_i) -> (carry, y_i)`` for ``i`` in ``range(length)`` (reversed when
  ``reverse``), ys stacked on a new leading axis.

# NOTE: [control-flow jaxprs have no tracer constants]
# The jaxprs in control-flow params are closed over concrete values only: the surface
# (funcgrad.lax) turns every constant of a traced body into an explicit leading operand
# (``convert_constvars_jaxpr``), so enclosing transformations see all inputs. Jaxprs derived here
# by tracing (jvp, partial eval, transpose, batching) inherit the property: they evaluate those
# jaxprs on fresh staging traces whose only foreign values are concrete constants.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import reductions as red
from funcgrad.primitives import structure as st
from funcgrad.primitives._rules import to_front
from funcgrad.primitives.callbacks import io_callback_in
from funcgrad.primitives.checks import check_p

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import (
    Zero,
    ct_aval,
    defjvp_zero,
    instantiate,
    is_undefined_primal,
    is_zero_series,
    jvp_jaxpr,
    tangent_aval,
    transpose_jaxpr,
    transpose_jaxpr_nonzero,
    zero_series,
)
from funcgrad.kernel.array import Array
from funcgrad.kernel.batching import batch_jaxpr
from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.callkit import derived_jet
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, ShapedArray, Var, abstract_token
from funcgrad.kernel.partial_eval import dce_jaxpr_consts, partial_eval_jaxpr, trace_to_jaxpr

__all__ = ["cond_p", "platform_index_p", "while_p", "ReverseModeWhileLoopError", "any_lane"]

cond_p = Primitive("cond", multiple_results=True)
while_p = Primitive("while", multiple_results=True)
cond_p.def_traits(jaxpr_params=("branches",), sparse="cond")
while_p.def_traits(jaxpr_params=("cond_jaxpr", "body_jaxpr"), sparse="while")
for _p in (cond_p, while_p):
    # Eager impls receive Arrays as they are (device buffers stay there) and run compiled.
    _p.impl_takes_arrays = True

# ----------------------------------------------------------------------------------------------
# Jaxpr helpers


def _split(xs: Sequence, *sizes: int) -> list[list]:
    """``_split([1, 2, 3, 4], 1, 2)`` -> ``[[1], [2, 3], [4]]`` (the rest goes last)."""
    out, i = [], 0
    for n in sizes:
        out.append(list(xs[i : i + n]))
        i += n
    out.append(list(xs[i:]))
    return out


def _scan_layout(n_consts, n_carry, n_xs, n_ys, e_consts, e_carry, e_xs, e_ys):
    """The permutations that turn a transformed body ``(consts, carry, xs, consts', carry', xs') ->
    (carry, ys, carry', ys')`` into scan's layout ``(consts, consts', carry, carry', xs, xs') ->
    (carry, carry', ys, ys')``, where the primed groups (``e_*`` values each) are what the
    transformation adds: tangents (JVP) or Taylor terms (jet)."""
    p = n_consts + n_carry + n_xs
    in_order = [
        *range(n_consts), *range(p, p + e_consts),
        *range(n_consts, n_consts + n_carry), *range(p + e_consts, p + e_consts + e_carry),
        *range(n_consts + n_carry, p), *range(p + e_consts + e_carry, p + e_consts + e_carry + e_xs),
    ]  # fmt: skip
    q = n_carry + n_ys
    out_order = [
        *range(n_carry),
        *range(q, q + e_carry),
        *range(n_carry, q),
        *range(q + e_carry, q + e_carry + e_ys),
    ]
    return in_order, out_order


def _rearrange(closed: ClosedJaxpr, in_order: Sequence[int] | None = None, out_order=None) -> ClosedJaxpr:
    """The same jaxpr with invars/outvars listed in a new order (``new[k] = old[order[k]]``)."""
    j = closed.jaxpr
    invars = j.invars if in_order is None else [j.invars[i] for i in in_order]
    outvars = j.outvars if out_order is None else [j.outvars[i] for i in out_order]
    return ClosedJaxpr(Jaxpr(j.constvars, invars, j.eqns, outvars), closed.consts)


def _with_unused_invars(closed: ClosedJaxpr, avals, at: int) -> ClosedJaxpr:
    """Insert unused inputs of ``avals`` before input ``at``."""
    j = closed.jaxpr
    new = [Var(a) for a in avals]
    invars = [*j.invars[:at], *new, *j.invars[at:]]
    return ClosedJaxpr(Jaxpr(j.constvars, invars, j.eqns, j.outvars), closed.consts)


def _select_outputs(closed: ClosedJaxpr, keep: Sequence[bool]) -> ClosedJaxpr:
    """Keep the outputs marked in ``keep`` and drop the equations only the others needed."""
    j = closed.jaxpr
    outvars = [v for v, k in zip(j.outvars, keep) if k]
    jaxpr, consts = dce_jaxpr_consts(Jaxpr(j.constvars, j.invars, j.eqns, outvars), closed.consts)
    return ClosedJaxpr(jaxpr, consts)


def _fixed_point(step, flags: list[bool]) -> list[bool]:
    """Iterate ``flags = flags | step(flags)`` until nothing changes (carry nonzero-ness,
    unknown-ness, batched-ness only ever grow, so this ends within ``len(flags)`` steps)."""
    while True:
        new = [a or b for a, b in zip(flags, step(flags))]
        if new == flags:
            return flags
        flags = new


def _tangents_out(primals, nonzero_tangents, nonzeros) -> list:
    """One tangent per primal: the next of ``nonzero_tangents`` where ``nonzeros``, else a Zero."""
    it = iter(nonzero_tangents)
    return [next(it) if nz else Zero.from_primal_value(p) for p, nz in zip(primals, nonzeros)]


def _merge_outs(known_vals, unknown_vals, out_uk) -> list:
    it_k, it_u = iter(known_vals), iter(unknown_vals)
    return [next(it_u) if uk else next(it_k) for uk in out_uk]


def _same_type(a: ShapedArray, b: ShapedArray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def _stacked(aval: ShapedArray, length: int) -> ShapedArray:
    if aval is abstract_token:  # (a token has no axis to stack: it is carried; NOTE: [tokens])
        return aval.update(shape=(length, *aval.shape))  # (its error)
    # (in its steps' memory, as JAX's: a scan's stacked residuals offloaded to the host are there)
    return ShapedArray((length, *aval.shape), aval.dtype, aval.weak_type, memory_space=aval.memory_space)


# ----------------------------------------------------------------------------------------------
# Eager evaluation: interpret jaxprs with the NumPy impls directly


def _np(x):
    return x._numpy() if type(x) is Array or isinstance(x, Array) else x


def _bind_numpy(prim, args, params):
    """``eval_jaxpr``'s ``bind`` for the eager loops: call each primitive's NumPy impl directly
    (no Array wrapping, no trace dispatch); primitives whose impl takes Arrays (``jit``, nested
    control flow) are bound on the current (eval) trace."""
    if prim.impl_takes_arrays:
        outs = prim.bind(*args, **params)
        return [_np(o) for o in outs] if prim.multiple_results else _np(outs)
    if core.compiles_half_floats(prim, args):  # (NOTE: [one eager step])
        return core.narrow_step(prim)(*args, **params)
    return prim.impl(*args, **params)


# NOTE: [eager control flow is compiled]
# As JAX's (its impl of cond, while and scan is ``apply_primitive``: one XLA program per primitive,
# parameters and operand types), an eager ``cond``/``while``/``scan`` runs as a compiled program of
# its own, through the bridge's ``eager_compiled`` -- the one route of every eager primitive that
# runs compiled (narrow dtypes, XLA's random bits, operands sharded over several devices, where it
# takes the SPMD route). That route caches the program per (primitive, params, avals), and the
# jaxprs in the params come from the surface's trace cache (NOTE: [control-flow trace cache]), so a
# repeated eager loop is one executable call. What this gives, as JAX: float32 results equal to
# jit's and JAX's bit for bit (XLA fuses and reassociates a loop body; NumPy's op-by-op results
# differ in the last bits, which compound over a loop: optax's L-BFGS), a user primitive inside
# runs through its lowering (``mlir.lower_fun(impl)`` traces its impl on tracers, which have
# ``.at``; equinox's loop primitives), and a long loop runs at XLA's speed. It costs one compile
# per new program (lowering is cached by text too, so a loop of a fresh lambda with the same
# program recompiles nothing). The NumPy interpreter below (``eval_jaxpr_numpy``) remains for a
# loop whose body holds a primitive without a lowering rule (it can run eagerly, as outside a
# loop; JAX refuses it under any compile: NOTE: [eager fallback]) and for the primitives layer on
# its own (no compiler registered).
#
# NOTE: [eager fallback]
# Which programs cannot be compiled is learned once, from the lowering's NotImplementedError
# (raised before anything runs, so nothing happens twice) and remembered per jaxpr (held weakly).

_INTERPRETED = register_cache("control_flow.eager_interpreted", weakref.WeakKeyDictionary())
_NO_LOWERING = "has no XLA lowering rule"


def _jaxprs_of(params) -> list[ClosedJaxpr]:
    out = []
    for v in params.values():
        if isinstance(v, ClosedJaxpr):
            out.append(v)
        elif isinstance(v, tuple):
            out.extend(b for b in v if isinstance(b, ClosedJaxpr))
    return out


def _eager(impl, primitive):
    """The eager impl of a control-flow ``primitive``: compiled (NOTE: [eager control flow is
    compiled]), or ``impl`` (the NumPy interpreter) when there is no compiler or the program
    cannot be lowered. The interpreter runs without NumPy's floating-point warnings: the kernel
    silences them for each primitive it evaluates (NOTE: [IEEE special values]), but loops take
    Arrays and bypass that, so a NaN in an iteration would warn where a primitive outside the loop
    does not."""

    def run(*args, **params):
        if hooks.eager_compiled is not None:
            jaxprs = _jaxprs_of(params)
            if not any(j in _INTERPRETED for j in jaxprs):
                try:
                    return hooks.eager_compiled(primitive, args, params)
                except NotImplementedError as e:
                    if _NO_LOWERING not in str(e):
                        raise
                    for j in jaxprs:
                        _INTERPRETED[j] = True
        with np.errstate(all="ignore"):
            return impl(*args, **params)

    run.__name__ = impl.__name__
    return run


def eval_jaxpr_numpy(jaxpr: Jaxpr, consts: Sequence, args: Sequence) -> list:
    """Interpret ``jaxpr`` with the NumPy impls: the inner loop of the eager control-flow impls."""
    return core.eval_jaxpr(jaxpr, consts, *args, bind=_bind_numpy)


def _wrap(values, avals) -> list:
    out = []
    for v, a in zip(values, avals):
        v = np.asarray(v)
        if v.dtype != a.dtype:
            v = v.astype(a.dtype)
        out.append(core.wrap_result(v, a.weak_type))
    return out


def _run(closed: ClosedJaxpr, args) -> list:
    return eval_jaxpr_numpy(closed.jaxpr, [_np(c) for c in closed.consts], args)


# ----------------------------------------------------------------------------------------------
# cond


def _bp(branches_platforms) -> dict:
    """The ``branches_platforms`` parameter of a cond as a dict of params: none for an ordinary
    cond (NOTE: [platform-dependent conds])."""
    return {} if branches_platforms is None else {"branches_platforms": branches_platforms}


def _cond_impl(index, *args, branches, branches_platforms=None):
    i = min(max(int(np.asarray(_np(index))), 0), len(branches) - 1)
    return _wrap(_run(branches[i], [_np(a) for a in args]), branches[0].out_avals)


def _cond_abstract_eval(index, *avals, branches, branches_platforms=None):
    if index.shape != () or index.dtype.kind not in "iu":
        raise TypeError(f"cond: the branch index must be an integer scalar, got {index.str_short()}")
    for i, b in enumerate(branches):
        if len(b.in_avals) != len(avals) or not all(map(_same_type, b.in_avals, avals)):
            raise TypeError(
                f"cond: branch {i} takes ({', '.join(a.str_short() for a in b.in_avals)}) but the "
                f"operands are ({', '.join(a.str_short() for a in avals)})"
            )
        if len(b.out_avals) != len(branches[0].out_avals) or not all(
            map(_same_type, b.out_avals, branches[0].out_avals)
        ):
            raise TypeError(f"cond: branch {i} returns different types than branch 0")
    # Branch 0's types, weak types included, as JAX's cond (the eager impl wraps with them too):
    # a passthrough false branch keeps a weak operand weak (equinox's error_if on diffrax's
    # direction, with a pure_callback true branch, under jax_numpy_dtype_promotion='strict').
    return list(branches[0].out_avals)


def _cond_jvp(primals, tangents, *, branches, branches_platforms=None):
    index, *ops_ = primals
    nz = [type(t) is not Zero for t in tangents[1:]]
    out_nz = [False] * len(branches[0].out_avals)
    for b in branches:
        out_nz = [a or c for a, c in zip(out_nz, jvp_jaxpr(b, nz, instantiate=False)[1])]
    jvps = tuple(jvp_jaxpr(b, nz, instantiate=out_nz)[0] for b in branches)
    nz_tangents = [t for t in tangents[1:] if type(t) is not Zero]
    outs = cond_p.bind(index, *ops_, *nz_tangents, branches=jvps, **_bp(branches_platforms))
    return outs[: len(out_nz)], _tangents_out(outs[: len(out_nz)], outs[len(out_nz) :], out_nz)


def _merge_residuals(res_avals_per_branch) -> tuple[list, list[list[int]]]:
    """Common residual slots for all branches: a branch's residuals are assigned to slots of the
    same type, so branches share slots; returns the slot avals and each branch's slot indices."""
    slots: list[ShapedArray] = []
    maps = []
    for res_avals in res_avals_per_branch:
        used: set[int] = set()
        m = []
        for a in res_avals:
            k = next((s for s, sa in enumerate(slots) if s not in used and _same_type(sa, a)), None)
            if k is None:
                slots.append(a)
                k = len(slots) - 1
            used.add(k)
            m.append(k)
        maps.append(m)
    return slots, maps


def _cond_partial_eval(trace, args, unknowns, *, branches, branches_platforms=None):
    index_uk, *ops_uk = unknowns
    if index_uk:
        return trace.stage(cond_p, args, dict(branches=branches, **_bp(branches_platforms)))
    n_out = len(branches[0].out_avals)
    out_uk = [False] * n_out
    for b in branches:
        out_uk = [a or c for a, c in zip(out_uk, partial_eval_jaxpr(b, ops_uk, instantiate=False)[2])]
    splits = [partial_eval_jaxpr(b, ops_uk, instantiate=out_uk) for b in branches]
    n_known = n_out - sum(out_uk)
    slots, maps = _merge_residuals([known.out_avals[n_known:] for known, _, _, _ in splits])
    known_avals = [a for a, uk in zip(branches[0].in_avals, ops_uk) if not uk]
    unknown_avals = [a for a, uk in zip(branches[0].in_avals, ops_uk) if uk]

    def known_branch(known, m):
        def fn(*xs):
            outs = core.eval_jaxpr(known.jaxpr, known.consts, *xs)
            slot_vals = [None] * len(slots)
            for k, r in zip(m, outs[n_known:]):
                slot_vals[k] = r
            # As JAX does: a branch fills the residual slots of the other branches with zeros.
            return [*outs[:n_known], *[hooks.zeros(a) if v is None else v for v, a in zip(slot_vals, slots)]]

        return trace_to_jaxpr(fn, known_avals)

    def unknown_branch(unknown, m):
        def fn(*xs):
            res, uk = xs[: len(slots)], xs[len(slots) :]
            return core.eval_jaxpr(unknown.jaxpr, unknown.consts, *[res[k] for k in m], *uk)

        return trace_to_jaxpr(fn, [*slots, *unknown_avals])

    index, *ops_ = args
    known_args = [a for a, uk in zip(ops_, ops_uk) if not uk]
    known_outs = []
    if n_known or slots:
        with core.set_current_trace(trace.parent):
            known_branches = tuple(known_branch(s[0], m) for s, m in zip(splits, maps))
            known_outs = cond_p.bind(index, *known_args, branches=known_branches, **_bp(branches_platforms))
    if not any(out_uk):
        return known_outs
    uk_args = [a for a, uk in zip(ops_, ops_uk) if uk]
    unknown_branches = tuple(unknown_branch(s[1], m) for s, m in zip(splits, maps))
    staged_args = [index, *known_outs[n_known:], *uk_args]
    unknown_outs = trace.stage(
        cond_p, staged_args, dict(branches=unknown_branches, **_bp(branches_platforms))
    )
    return _merge_outs(known_outs[:n_known], unknown_outs, out_uk)


def _cond_transpose(cts, index, *ops_, branches, branches_platforms=None):
    if is_undefined_primal(index):
        raise ValueError("cond is not linear in its branch index")
    linear = [is_undefined_primal(a) for a in ops_]
    ct_zero = [type(ct) is Zero for ct in cts]
    nonlin = [a for a in ops_ if not is_undefined_primal(a)]
    # As JAX's transpose (_cond_transpose_fancy): a linear operand no branch uses gets a symbolic
    # zero, not computed zeros, which the operand's own transpose would multiply: grad of
    # cond(p, lambda a, b: 2 * a, ..., x, cos(x)) at x = inf was 0 * -sin(inf) = NaN (jax: 2; the
    # lax-parameter fuzzer, seed 20016)
    ct_avals = [ct_aval(a.aval) for a in ops_ if is_undefined_primal(a)]
    split = [transpose_jaxpr_nonzero(b, linear, ct_zero) for b in branches]
    used = [any(nz[i] for _, _, nz in split) for i in range(len(ct_avals))]
    if any(items for _, items, _ in split):  # (Refs written by a branch's backward pass: every one)
        transposed, used = (
            tuple(transpose_jaxpr(b, linear, ct_zero) for b in branches),
            [True] * len(ct_avals),
        )
    else:
        transposed = tuple(_widened(t, nz, used, ct_avals) for t, _, nz in split)
    cts_nz = [ct for ct in cts if type(ct) is not Zero]
    outs = cond_p.bind(index, *nonlin, *cts_nz, branches=transposed, **_bp(branches_platforms))
    it, lin_avals = iter(outs), iter(zip(used, ct_avals))
    return [None, *[_next_ct(it, *next(lin_avals)) if lin else None for lin in linear]]


def _next_ct(outs, used, aval):
    return next(outs) if used else Zero(aval)


def _widened(transposed, nonzero, used, ct_avals):
    """A branch's transposed jaxpr (its nonzero cotangents only) giving every cotangent some
    branch gives (``used``): zeros where this branch's is a symbolic zero."""
    if list(nonzero) == list(used):
        return transposed

    def fn(*xs):
        outs = iter(core.eval_jaxpr(transposed.jaxpr, transposed.consts, *xs))
        return [next(outs) if nz else hooks.zeros(a) for nz, u, a in zip(nonzero, used, ct_avals) if u]

    return trace_to_jaxpr(fn, transposed.in_avals)


def _lane_masked_checks(index, branch: int):
    """The ``bind`` of branch ``branch`` of a cond with a batched predicate: its (top-level)
    runtime checks hold in the lanes that take another branch (NOTE: [functionalized checks])."""

    def bind(prim, args, params):
        if prim is check_p:
            pred, *rest = args
            shape = core.get_aval(pred).shape
            other = ew.ne_p.bind(index, np.asarray(branch, core.get_aval(index).dtype))
            other = st.broadcast_in_dim(other, shape, (0,)) if len(shape) > 1 else other
            args = [ew.or_p.bind(pred, other), *rest]
        return prim.bind(*args, **params)

    return bind


def _cond_batch(axis_size, vals, dims, *, branches, branches_platforms=None):
    if any(io_callback_in(b) for b in branches):
        raise NotImplementedError("IO effect not supported in vmap-of-cond.")  # (JAX's refusal)
    index, *ops_ = vals
    index_dim, *op_dims = dims
    if branches_platforms is not None and index_dim is not None:
        # (as JAX's: a platform-dependent cond's index is the platform's, the same in every lane)
        index, index_dim = platform_index_p.bind(platforms=branches_platforms), None
    if index_dim is not None:
        # A batched predicate: every branch runs on the whole batch and a select_n picks each
        # lane's result (no lane can skip a branch in SIMD form).
        index = to_front(index, index_dim, axis_size)
        dt = core.get_aval(index).dtype
        index = ew.clamp_p.bind(np.asarray(0, dt), index, np.asarray(len(branches) - 1, dt))
        # Each branch sees its operands with the gradient stopped in the lanes it does not own
        # (JAX's rule, issue 1052): a lane's unused branch may have an infinite derivative there
        # (sqrt at 0 behind a guard), and 0 * inf would reach the operand's gradient as NaN.
        floats = [_dt.is_inexact(core.get_aval(x).dtype) for x in ops_]
        ops_ = [to_front(x, d, axis_size) if f else x for x, d, f in zip(ops_, op_dims, floats)]
        op_dims = [0 if f else d for d, f in zip(op_dims, floats)]
        outs_per_branch = [
            core.eval_jaxpr(
                bj.jaxpr, bj.consts, *_owned_lanes(index, i, ops_, floats), bind=_lane_masked_checks(index, i)
            )
            for i, bj in enumerate(batch_jaxpr(b, axis_size, op_dims, instantiate=True)[0] for b in branches)
        ]
        outs = []
        for cases in zip(*outs_per_branch):
            shape = core.get_aval(cases[0]).shape
            which = st.broadcast_in_dim(index, shape, (0,)) if len(shape) > 1 else index
            outs.append(ew.select_n_p.bind(which, *cases))
        return outs, [0] * len(outs)
    out_b = [False] * len(branches[0].out_avals)
    for b in branches:
        out_b = [a or d is not None for a, d in zip(out_b, batch_jaxpr(b, axis_size, op_dims, False)[1])]
    batched = tuple(batch_jaxpr(b, axis_size, op_dims, instantiate=out_b)[0] for b in branches)
    outs = cond_p.bind(index, *ops_, branches=batched, **_bp(branches_platforms))
    return outs, [0 if b else None for b in out_b]


def _owned_lanes(index, i, ops_, floats):
    """``ops_`` (floating ones with the batch axis in front) with the gradient stopped in the lanes
    where ``index`` is not ``i``."""
    if not any(floats):
        return ops_
    mine = ew.eq_p.bind(index, np.asarray(i, core.get_aval(index).dtype))
    out = []
    for x, f in zip(ops_, floats):
        if f:
            shape = core.get_aval(x).shape
            which = st.broadcast_in_dim(mine, shape, (0,)) if len(shape) > 1 else mine
            x = ew.select_n_p.bind(which, ew.stop_gradient_p.bind(x), x)
        out.append(x)
    return out


cond_p.def_impl(_eager(_cond_impl, cond_p))
cond_p.def_abstract_eval(_cond_abstract_eval)
cond_p.def_jvp(_cond_jvp)
cond_p.def_partial_eval(_cond_partial_eval)
cond_p.def_transpose(_cond_transpose)
cond_p.def_batch(_cond_batch)
cond_p.def_traits(linear=True)  # may appear in linear programs: its transpose transposes its branches

# NOTE: [platform-dependent conds]
# ``lax.platform_dependent`` stages, as JAX's, ``platform_index[platforms=...]`` (the index of the
# platform being compiled for in ``platforms``, a tuple of platform-name tuples with ``None`` for
# the default) and a ``cond`` on it whose ``branches_platforms`` parameter names each branch's
# platforms. The choice is made when the program is lowered for a platform
# (xla_bridge/rules/control_flow.py keeps only that platform's branch, as JAX's _cond_lowering),
# so an export for several platforms holds each platform's branch. Every cond rule passes the
# parameter on (``_bp``); an ordinary cond has none.
platform_index_p = Primitive("platform_index")
platform_index_p.def_abstract_eval(lambda *, platforms: ShapedArray((), np.dtype(np.int32)))
# (evaluated alone it is compiled for the default platform, as JAX's apply_primitive)
platform_index_p.def_impl(
    lambda *, platforms: hooks.eager_compiled(platform_index_p, (), {"platforms": platforms})
)
platform_index_p.impl_takes_arrays = True
defjvp_zero(platform_index_p)
# (no operands: a batch trace never sees it; the rule exists for completeness, as iota's)
platform_index_p.def_batch(lambda axis_size, vals, dims, **params: (platform_index_p.bind(**params), None))

# ----------------------------------------------------------------------------------------------
# while


class ReverseModeWhileLoopError(ValueError, NotImplementedError):
    """Reverse-mode differentiation reached a ``while_loop`` whose trip count is unbounded (a
    ValueError, JAX's type for it; a NotImplementedError too, as before)."""


_WHILE_REVERSE_MESSAGE = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic "
    "start/stop values: grad, vjp, jacrev and hessian cannot go through "
    "funcgrad.lax.while_loop: its trip count is only known at run time, so the residuals of "
    "each iteration cannot be stored in fixed-shape buffers. Use one of:\n"
    "  - while_loop(cond_fun, body_fun, init_val, max_steps=N): at most N iterations, "
    "differentiable in reverse mode;\n"
    "  - fori_loop(lower, upper, body_fun, init_val) with Python int bounds (it is a scan);\n"
    "  - scan(f, init, xs, length=N).\n"
    "Forward mode (jvp, jacfwd) works through while_loop as it is."
)


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc, bc, carry = _split([_np(a) for a in args], cond_nconsts, body_nconsts)
    while np.asarray(_run(cond_jaxpr, [*cc, *carry])[0]).any():  # NOTE: [batched while predicates]
        carry = _run(body_jaxpr, [*bc, *carry])
    return _wrap(carry, body_jaxpr.out_avals)


def any_lane(cond_jaxpr: ClosedJaxpr) -> ClosedJaxpr:
    """A while loop's condition with its predicate reduced to "any lane" (NOTE: [batched while
    predicates]); ``cond_jaxpr`` itself when the predicate is a scalar."""
    (pred,) = cond_jaxpr.out_avals
    if not pred.shape:
        return cond_jaxpr
    axes = tuple(range(len(pred.shape)))

    def any_of(*xs):
        return [red.reduce_or_p.bind(core.eval_jaxpr(cond_jaxpr.jaxpr, cond_jaxpr.consts, *xs)[0], axes=axes)]

    return trace_to_jaxpr(any_of, cond_jaxpr.in_avals)


def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc, bc, carry = _split(avals, cond_nconsts, body_nconsts)
    (pred,) = cond_jaxpr.out_avals
    # (a boolean of any shape: a batched predicate's lanes, NOTE: [batched while predicates]; the
    # user's cond_fun is checked for a scalar where while_loop traces it, in JAX's words)
    if pred.dtype != np.bool_:
        raise TypeError(f"while_loop: cond_fun must return a boolean, got {pred.str_short()}")
    outs = body_jaxpr.out_avals
    if len(outs) != len(carry) or not all(map(_same_type, outs, carry)):
        raise TypeError(
            "while_loop: body_fun returns ("
            + ", ".join(a.str_short() for a in outs)
            + ") but the carry is ("
            + ", ".join(a.str_short() for a in carry)
            + ")"
        )
    return [a.update(weak_type=a.weak_type and c.weak_type) for a, c in zip(outs, carry)]


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    cc, bc, carry = _split(primals, nc, nb)
    _, bc_t, carry_t = _split(tangents, nc, nb)
    bc_nz = [type(t) is not Zero for t in bc_t]
    carry_nz = _fixed_point(
        lambda nz: jvp_jaxpr(body_jaxpr, bc_nz + nz, instantiate=nz)[1],
        [type(t) is not Zero for t in carry_t],
    )
    body_jvp, _ = jvp_jaxpr(body_jaxpr, bc_nz + carry_nz, instantiate=carry_nz)
    n, nbd, ncd = len(carry), sum(bc_nz), sum(carry_nz)
    # jvp_jaxpr orders inputs (bc, carry, bc_dot, carry_dot); the loop wants (bc, bc_dot, carry, carry_dot).
    order = [
        *range(nb),
        *range(nb + n, nb + n + nbd),
        *range(nb, nb + n),
        *range(nb + n + nbd, nb + n + nbd + ncd),
    ]
    body_jvp = _rearrange(body_jvp, order)
    tan_avals = [tangent_aval(a) for a, z in zip(body_jaxpr.out_avals, carry_nz) if z]
    cond_jvp = _with_unused_invars(cond_jaxpr, tan_avals, len(cond_jaxpr.in_avals))
    bc_dots = [t for t in bc_t if type(t) is not Zero]
    carry_dots = [instantiate(t) for t, z in zip(carry_t, carry_nz) if z]
    outs = while_p.bind(
        *cc, *bc, *bc_dots, *carry, *carry_dots,
        cond_jaxpr=cond_jvp, body_jaxpr=body_jvp, cond_nconsts=nc, body_nconsts=nb + nbd,
    )  # fmt: skip
    return outs[:n], _tangents_out(outs[:n], outs[n:], carry_nz)


def _while_partial_eval(trace, args, unknowns, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    # As JAX's _while_partial_eval: the known carries are computed by a loop over the known part
    # of the body; the unknown outputs by staging the whole loop (recomputing the known carries),
    # since the per-iteration residuals of an unbounded loop cannot be stored.
    params = dict(
        cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr, cond_nconsts=cond_nconsts, body_nconsts=body_nconsts
    )
    cc_uk, bc_uk, carry_uk = _split(unknowns, cond_nconsts, body_nconsts)
    carry_uk = _fixed_point(
        lambda uk: partial_eval_jaxpr(body_jaxpr, bc_uk + uk, instantiate=uk)[2], carry_uk
    )
    cond_out_uk = partial_eval_jaxpr(cond_jaxpr, cc_uk + carry_uk, instantiate=False)[2]
    if cond_out_uk[0] or all(carry_uk):
        return trace.stage(while_p, args, params)
    body_known = partial_eval_jaxpr(body_jaxpr, bc_uk + carry_uk, instantiate=carry_uk)[0]
    n_known = carry_uk.count(False)
    body_known = _select_outputs(body_known, [i < n_known for i in range(len(body_known.out_avals))])
    cond_known = _select_outputs(partial_eval_jaxpr(cond_jaxpr, cc_uk + carry_uk, False)[0], [True])
    cc, bc, carry = _split(args, cond_nconsts, body_nconsts)
    known = [
        [a for a, uk in zip(xs, uks) if not uk] for xs, uks in ((cc, cc_uk), (bc, bc_uk), (carry, carry_uk))
    ]
    with core.set_current_trace(trace.parent):
        known_outs = while_p.bind(
            *known[0], *known[1], *known[2], cond_jaxpr=cond_known, body_jaxpr=body_known,
            cond_nconsts=len(known[0]), body_nconsts=len(known[1]),
        )  # fmt: skip
    unknown_outs = trace.stage(while_p, args, params)
    return _merge_outs(known_outs, [u for u, uk in zip(unknown_outs, carry_uk) if uk], carry_uk)


def _while_transpose(cts, *args, **params):
    raise ReverseModeWhileLoopError(_WHILE_REVERSE_MESSAGE)


# NOTE: [batched while predicates]
# A while loop batched with a batched predicate (``vmap`` of a loop whose condition depends on a
# batched value) runs while any lane's predicate holds, and a lane whose predicate is false keeps
# its carry (the body selects). As in JAX, the condition of such a loop returns the lanes'
# predicates, a boolean with the batch dimension first, and ``while`` means "while any of them":
# its eager impl, its lowering (a reduce_or in the condition's region) and debug_nans' re-run
# reduce it, and checkify refuses such a loop as JAX's does, by the condition's type
# (checkify-of-vmap-of-while). A loop batched again batches the lanes again.


def _while_batch(axis_size, vals, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    cc, bc, carry = _split(vals, nc, nb)
    ccd, bcd, card = _split(dims, nc, nb)

    def step(b):
        return [d is not None for d in batch_jaxpr(body_jaxpr, axis_size, bcd + _dims(b), instantiate=b)[1]]

    def _dims(b):
        return [0 if x else None for x in b]

    carry_b = _fixed_point(step, [d is not None for d in card])
    pred_dim = batch_jaxpr(cond_jaxpr, axis_size, ccd + _dims(carry_b), instantiate=False)[1][0]
    if pred_dim is not None:
        if io_callback_in(body_jaxpr, unordered_only=True) or io_callback_in(cond_jaxpr, unordered_only=True):
            # (JAX's refusal: a lane that has finished would still run the callback)
            raise Exception("Unordered IO effects not supported in while_loop with batched predicate")
        carry_b = [True] * len(carry)  # finished lanes keep their value by select: all carries batched
        carry_b = _fixed_point(step, carry_b)
    carry = [to_front(x, d, axis_size) if b else x for x, d, b in zip(carry, card, carry_b)]
    body_b = batch_jaxpr(body_jaxpr, axis_size, bcd + _dims(carry_b), instantiate=carry_b)[0]
    cond_b = batch_jaxpr(cond_jaxpr, axis_size, ccd + _dims(carry_b), instantiate=False)[0]
    if pred_dim is None:
        outs = while_p.bind(
            *cc, *bc, *carry, cond_jaxpr=cond_b, body_jaxpr=body_b, cond_nconsts=nc, body_nconsts=nb
        )
        return outs, _dims(carry_b)

    # A batched predicate: run while any lane is active; finished lanes keep their carry (NOTE:
    # [batched while predicates]).
    def lanes(*xs):
        return to_front(core.eval_jaxpr(cond_b.jaxpr, cond_b.consts, *xs)[0], pred_dim, axis_size)

    def masked_body(*xs):
        ccs, bcs, cs = _split(xs, nc, nb)
        pred = lanes(*ccs, *cs)
        ndim = len(core.get_aval(pred).shape)
        new = core.eval_jaxpr(body_b.jaxpr, body_b.consts, *bcs, *cs)
        outs = []
        for old, n in zip(cs, new):
            shape = core.get_aval(old).shape
            which = st.broadcast_in_dim(pred, shape, tuple(range(ndim))) if len(shape) > ndim else pred
            outs.append(ew.select_n_p.bind(which, old, n))
        return outs

    cond_new = trace_to_jaxpr(lambda *xs: [lanes(*xs)], cond_b.in_avals)
    body_new = trace_to_jaxpr(masked_body, [*cond_b.in_avals[:nc], *body_b.in_avals])
    outs = while_p.bind(
        *cc, *cc, *bc, *carry, cond_jaxpr=cond_new, body_jaxpr=body_new, cond_nconsts=nc, body_nconsts=nc + nb
    )
    return outs, [0] * len(outs)


while_p.def_impl(_eager(_while_impl, while_p))
while_p.def_abstract_eval(_while_abstract_eval)
while_p.def_jvp(_while_jvp)
while_p.def_partial_eval(_while_partial_eval)
while_p.def_transpose(_while_transpose)
while_p.def_batch(_while_batch)
while_p.def_traits(linear=True)  # reaches the backward pass, whose transpose rule explains the fix


# ----------------------------------------------------------------------------------------------
# Taylor rules (jet) of the loops and branches: each is the JVP rule's twin with ``K`` Taylor terms
# where the JVP has one tangent. The body is replaced by its jet (``kernel.taylor.jet_jaxpr``,
# memoised as ``callkit.derived_jet``) and the same primitive is bound again, so a loop stays a
# loop -- a 100-step ``scan`` carries its series in the carry instead of being unrolled. Which
# carries have nonzero series is a fixed point, as for tangents. (``jax.experimental.jet`` has no
# rules for these.)


def _jet(closed, order: int, nonzeros, instantiate_outs):
    """``derived_jet`` with one flag per input and output (all terms or none)."""
    closed_jet, masks = derived_jet(closed, order, tuple(nonzeros), tuple(instantiate_outs))
    return closed_jet, [any(m) for m in masks]


def _terms(series, nonzeros) -> list:
    return [instantiate(t) for s, nz in zip(series, nonzeros) if nz for t in s]


def _series_out(primals, terms, nonzeros, order: int) -> list:
    it = iter(terms)
    return [
        [next(it) for _ in range(order)] if nz else zero_series(p, order) for p, nz in zip(primals, nonzeros)
    ]


def _cond_taylor(primals, series, *, branches, branches_platforms=None):
    index, *ops = primals
    order = len(series[0])
    nz = [not is_zero_series(s) for s in series[1:]]
    n_out = len(branches[0].out_avals)
    out_nz = [False] * n_out
    for b in branches:
        out_nz = [a or c for a, c in zip(out_nz, _jet(b, order, nz, [False] * n_out)[1])]
    jets = tuple(_jet(b, order, nz, out_nz)[0] for b in branches)
    outs = cond_p.bind(index, *ops, *_terms(series[1:], nz), branches=jets, **_bp(branches_platforms))
    return outs[:n_out], _series_out(outs[:n_out], outs[n_out:], out_nz, order)


def _while_taylor(primals, series, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nc, nb, order = cond_nconsts, body_nconsts, len(series[0])
    cc, bc, carry = _split(primals, nc, nb)
    _, bc_s, carry_s = _split(series, nc, nb)
    bc_nz = [not is_zero_series(s) for s in bc_s]
    carry_nz = _fixed_point(
        lambda nz: _jet(body_jaxpr, order, bc_nz + nz, nz)[1], [not is_zero_series(s) for s in carry_s]
    )
    body_jet, _ = _jet(body_jaxpr, order, bc_nz + carry_nz, carry_nz)
    n, nbt, ncart = len(carry), order * sum(bc_nz), order * sum(carry_nz)
    # jet_jaxpr orders inputs (bc, carry, bc terms, carry terms); the loop wants
    # (bc, bc terms, carry, carry terms).
    in_order = [
        *range(nb), *range(nb + n, nb + n + nbt),
        *range(nb, nb + n), *range(nb + n + nbt, nb + n + nbt + ncart),
    ]  # fmt: skip
    body_jet = _rearrange(body_jet, in_order)
    term_avals = [tangent_aval(a) for a, z in zip(body_jaxpr.out_avals, carry_nz) if z for _ in range(order)]
    cond_jet = _with_unused_invars(cond_jaxpr, term_avals, len(cond_jaxpr.in_avals))
    outs = while_p.bind(
        *cc, *bc, *_terms(bc_s, bc_nz), *carry, *_terms(carry_s, carry_nz),
        cond_jaxpr=cond_jet, body_jaxpr=body_jet, cond_nconsts=nc, body_nconsts=nb + nbt,
    )  # fmt: skip
    return outs[:n], _series_out(outs[:n], outs[n:], carry_nz, order)


cond_p.def_taylor(_cond_taylor)
while_p.def_taylor(_while_taylor)
