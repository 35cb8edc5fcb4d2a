"""Implicit differentiation of solvers: ``custom_linear_solve`` and ``custom_root``, primitives
that carry the jaxprs of user functions (the surface functions are in
``funcgrad/lax/implicit.py``; lowering inlines the solver, ``xla_bridge/rules/implicit.py``).

Layer: primitives. Imports the funcgrad kernel (core, ad, batching, callkit, taylor) and the elementwise
family.

- ``custom_linear_solve_p.bind(*consts, *b, const_lengths, jaxprs)``: ``jaxprs`` is
  ``(matvec, vecmat, solve, transpose_solve)`` (``vecmat``/``transpose_solve`` may be ``None``),
  each closed over nothing and taking its own constants first (``const_lengths`` counts them),
  then a value shaped like ``b``. The result is ``solve(b)`` (plus the solver's auxiliary
  outputs). Derivatives come from the linear equation ``A x = b`` at the solution, never from the
  solver's steps: ``dx = solve(db - dA x)`` (one more solve, the same primitive), and the transpose
  is the same primitive on the transposed operator (``vecmat``, ``transpose_solve``).
- ``custom_root_p.bind(*consts, *guess, const_lengths, jaxprs)``: ``jaxprs`` is ``(f, solve,
  tangent_solve)``; the result is ``solve(guess)``, a root of ``f``. The implicit function theorem
  gives its tangent: ``dx = -tangent_solve(x, df/dtheta . dtheta)``, with ``tangent_solve`` the
  user's solver of the linearised ``f`` at ``x`` (staged when the primitive was bound).

# NOTE: [implicit-differentiation rules]
# These primitives carry jaxprs like the call primitives of ``funcgrad.kernel.callkit`` but their
# derivative semantics differ -- the derivative of the *equation*, not of the jaxpr that solves it
# -- so they have their own JVP and transpose rules. Their batch rule is the kit's: each jaxpr is
# batched once per (axis size, batch dims) and memoised (NOTE: [derived jaxpr cache]), with every
# right-hand side (or guess) batched so the operator, the solver and the result agree.
"""

from __future__ import annotations

from collections.abc import Sequence

from funcgrad.primitives import elementwise as ew
from funcgrad.primitives._rules import JET_OF_SUBPROGRAM, to_front

from funcgrad.kernel import core
from funcgrad.kernel.ad import Zero, instantiate, is_undefined_primal, is_zero_series, jvp_flat, zero_series
from funcgrad.kernel.batching import batch_jaxpr
from funcgrad.kernel.callkit import DerivedJaxprs
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.taylor import jet_flat

__all__ = ["custom_linear_solve_p", "custom_root_p", "split_consts"]

_batched_all = DerivedJaxprs(
    lambda closed, axis_size, dims: batch_jaxpr(closed, axis_size, list(dims), instantiate=True)
)


def split_consts(args: Sequence, const_lengths: Sequence[int]) -> tuple[list[list], list]:
    """``(per-jaxpr constants, the remaining operands)``."""
    groups, i = [], 0
    for n in const_lengths:
        groups.append(list(args[i : i + n]))
        i += n
    return groups, list(args[i:])


def _run(closed, *args):
    return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)


# ----------------------------------------------------------------------------------------------
# custom_linear_solve


def _ls_abstract_eval(*avals, const_lengths, jaxprs):
    _, b = split_consts(avals, const_lengths)
    solve = jaxprs[2]
    outs = solve.out_avals
    for i, (o, a) in enumerate(zip(outs, b)):
        if (o.shape, o.dtype) != (a.shape, a.dtype):
            raise TypeError(
                f"custom_linear_solve: solve's output {i} is {o.str_short()} but b's is {a.str_short()}"
            )
    # The solution has b's types, weak ones included, as JAX's (a staged solve of a Python-scalar
    # b is weak; eagerly the solver's own result is returned, in JAX as here).
    return [o.update(weak_type=a.weak_type) for o, a in zip(outs, b)] + list(outs[len(b) :])


def _ls_impl(*args, const_lengths, jaxprs):
    consts, b = split_consts(args, const_lengths)
    return _run(jaxprs[2], *consts[2], *b)


def _ls_jvp(primals, tangents, *, const_lengths, jaxprs):
    params = dict(const_lengths=const_lengths, jaxprs=jaxprs)
    outs = custom_linear_solve_p.bind(*primals, **params)
    consts, b = split_consts(primals, const_lengths)
    consts_dot, b_dot = split_consts(tangents, const_lengths)
    x = outs[: len(b)]
    rhs = list(b_dot)
    if any(type(t) is not Zero for t in consts_dot[0]):
        # dA x: the matvec's tangent with respect to its constants, at the solution.
        _, mv_dot = jvp_flat(
            lambda *a: _run(jaxprs[0], *a),
            [*consts[0], *x],
            [*consts_dot[0], *(Zero.from_primal_value(xi) for xi in x)],
        )
        rhs = [
            r if type(m) is Zero else ew.neg(m) if type(r) is Zero else hooks.add_any(r, ew.neg(m))
            for r, m in zip(rhs, mv_dot)
        ]
    aux_zeros = [Zero.from_primal_value(o) for o in outs[len(b) :]]
    if all(type(r) is Zero for r in rhs):
        return outs, [Zero.from_primal_value(xi) for xi in x] + aux_zeros
    rhs = [instantiate(r) for r in rhs]
    flat_consts = [c for group in consts for c in group]
    x_dot = custom_linear_solve_p.bind(*flat_consts, *rhs, **params)
    return outs, [*x_dot[: len(b)], *aux_zeros]


def _ls_transpose(cts, *args, const_lengths, jaxprs):
    matvec, vecmat, solve, transpose_solve = jaxprs
    if transpose_solve is None:
        raise TypeError(
            "transpose_solve required for backwards mode automatic differentiation of "
            "custom_linear_solve (pass transpose_solve=, or symmetric=True)"
        )
    consts, b = split_consts(args, const_lengths)
    if any(is_undefined_primal(c) for group in consts for c in group):
        raise ValueError("custom_linear_solve is linear in b only, not in the operator's constants")
    x_cts = [instantiate(ct) for ct in cts[: len(b)]]
    if any(type(ct) is not Zero for ct in cts[len(b) :]):
        raise ValueError("custom_linear_solve: the solver's auxiliary outputs cannot carry cotangents")
    lengths = (const_lengths[1], const_lengths[0], const_lengths[3], const_lengths[2])
    flat = [*consts[1], *consts[0], *consts[3], *consts[2]]
    outs = custom_linear_solve_p.bind(
        *flat, *x_cts, const_lengths=lengths, jaxprs=(vecmat, matvec, transpose_solve, solve)
    )
    return [None] * sum(const_lengths) + list(outs[: len(b)])


def _batch_rule(primitive):
    """Batch every operand jaxpr with its constants' batch dims and the right-hand side (or guess)
    batched at 0, every output batched at 0 (NOTE: [implicit-differentiation rules])."""

    def rule(axis_size, vals, dims, *, const_lengths, jaxprs):
        consts, rhs = split_consts(vals, const_lengths)
        const_dims, rhs_dims = split_consts(dims, const_lengths)
        rhs = [to_front(x, d, axis_size) for x, d in zip(rhs, rhs_dims)]
        new = []
        for closed, cdims in zip(jaxprs, const_dims):
            if closed is None:
                new.append(None)
                continue
            in_dims = (*cdims, *([0] * (len(closed.in_avals) - len(cdims))))
            new.append(_batched_all(closed, axis_size, in_dims)[0])
        flat = [c for group in consts for c in group]
        outs = primitive.bind(*flat, *rhs, const_lengths=const_lengths, jaxprs=tuple(new))
        return outs, [0] * len(outs)

    primitive.def_batch(rule)


custom_linear_solve_p = Primitive("custom_linear_solve", multiple_results=True)
custom_linear_solve_p.def_traits(jaxpr_params=("jaxprs",), may_produce_nan=True)
custom_linear_solve_p.def_impl(_ls_impl)
# (eagerly the solve runs on the Arrays as they are, weak types included: a solver of a Python-scalar
# b returns what its own computation types, as JAX's eager custom_linear_solve)
custom_linear_solve_p.impl_takes_arrays = True
custom_linear_solve_p.def_abstract_eval(_ls_abstract_eval)
custom_linear_solve_p.def_jvp(_ls_jvp)
custom_linear_solve_p.def_transpose(_ls_transpose)
_batch_rule(custom_linear_solve_p)


# ----------------------------------------------------------------------------------------------
# custom_root


def _root_abstract_eval(*avals, const_lengths, jaxprs):
    return list(jaxprs[1].out_avals)


def _root_impl(*args, const_lengths, jaxprs):
    consts, guess = split_consts(args, const_lengths)
    return _run(jaxprs[1], *consts[1], *guess)


def _root_jvp(primals, tangents, *, const_lengths, jaxprs):
    f, _, tangent_solve = jaxprs
    outs = custom_root_p.bind(*primals, const_lengths=const_lengths, jaxprs=jaxprs)
    consts, guess = split_consts(primals, const_lengths)
    consts_dot, _ = split_consts(tangents, const_lengths)
    solution = outs[: len(guess)]
    aux_zeros = [Zero.from_primal_value(o) for o in outs[len(guess) :]]
    if all(type(t) is Zero for t in consts_dot[0]):
        return outs, [Zero.from_primal_value(x) for x in solution] + aux_zeros
    # Implicit function theorem: f(theta, x(theta)) = 0, so df/dx dx = -df/dtheta dtheta.
    _, rhs = jvp_flat(
        lambda *a: _run(f, *a),
        [*consts[0], *solution],
        [*consts_dot[0], *(Zero.from_primal_value(x) for x in solution)],
    )
    rhs = [instantiate(r) for r in rhs]
    dx = _run(tangent_solve, *consts[2], *solution, *rhs)
    return outs, [ew.neg(d) for d in dx] + aux_zeros


custom_root_p = Primitive("custom_root", multiple_results=True)
custom_root_p.def_traits(jaxpr_params=("jaxprs",), taylor_from_jvp=JET_OF_SUBPROGRAM)
custom_root_p.def_impl(_root_impl)
custom_root_p.def_abstract_eval(_root_abstract_eval)
custom_root_p.def_jvp(_root_jvp)
_batch_rule(custom_root_p)


def _linear_solve_taylor(primals, series, *, const_lengths, jaxprs):
    """``M(c) x = b`` with ``M`` linear in ``x``: ``x_k = solve(b_k - sum_(j=1..k) M_j x_(k-j))``,
    where ``M_j v`` is term ``j`` of ``t -> matvec(c(t), v)`` (a jet of the matvec jaxpr, one per
    solution term). One solve per term, where the rule from the JVP rule solves ``2^K`` times."""
    params = dict(const_lengths=const_lengths, jaxprs=jaxprs)
    order = len(series[0])
    outs = custom_linear_solve_p.bind(*primals, **params)
    consts, b = split_consts(primals, const_lengths)
    consts_s, b_s = split_consts(series, const_lengths)
    flat_consts = [c for group in consts for c in group]
    n = len(b)
    x = [list(outs[:n])]  # x[k]: the k-th terms of the solution (None where zero)
    matvec_terms: list[dict] = []  # matvec_terms[m][j]: M_j x_m, for j >= 1
    operator_varies = any(not is_zero_series(s) for s in consts_s[0])

    def run_matvec(*cs, v):
        return core.eval_jaxpr(jaxprs[0].jaxpr, jaxprs[0].consts, *cs, *v)

    for k in range(1, order + 1):
        m = k - 1
        if operator_varies and any(xi is not None for xi in x[m]):
            v = [_instantiate_zero(xi, p) for xi, p in zip(x[m], outs[:n])]
            _, mv = jet_flat(
                lambda *cs, v=v: run_matvec(*cs, v=v),
                consts[0],
                [s[: order - m] for s in consts_s[0]],
                order - m,
            )
            matvec_terms.append({j: [t[j - 1] for t in mv] for j in range(1, order - m + 1)})
        else:
            matvec_terms.append({})
        rhs = []
        for i in range(n):
            r = None if type(b_s[i][k - 1]) is Zero else b_s[i][k - 1]
            for j in range(1, k + 1):
                t = matvec_terms[k - j].get(j)
                if t is not None and type(t[i]) is not Zero:
                    r = ew.neg(t[i]) if r is None else ew.sub(r, t[i])
            rhs.append(r)
        if all(r is None for r in rhs):
            x.append([None] * n)
            continue
        rhs = [_instantiate_zero(r, p) for r, p in zip(rhs, b)]
        x.append(list(custom_linear_solve_p.bind(*flat_consts, *rhs, **params)[:n]))
    series_out = [
        [Zero.from_primal_value(p) if x[k][i] is None else x[k][i] for k in range(1, order + 1)]
        for i, p in enumerate(outs[:n])
    ]
    return outs, series_out + [zero_series(o, order) for o in outs[n:]]


def _instantiate_zero(t, like):
    return hooks.zeros(Zero.from_primal_value(like).aval) if t is None else t


custom_linear_solve_p.def_taylor(_linear_solve_taylor)
