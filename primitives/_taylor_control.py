"""Taylor rules (``jet``) of the primitives that carry jaxprs: ``cond``, ``scan``, ``while`` and
``custom_vjp_call`` (``jit`` and ``checkpoint`` get theirs from the call-primitive kit).

Layer: primitives. Imports the funcgrad kernel and ``primitives.control_flow``.

Each rule is the JVP rule's twin with ``K`` Taylor terms where the JVP has one tangent: the body is
replaced by its jet (``kernel.taylor.jet_jaxpr``, memoised as ``callkit.derived_jet``) and the
same primitive is bound again, so a loop stays a loop -- a 100-step ``scan`` carries its series in
the carry instead of being unrolled. Which carries have nonzero series is a fixed point, as for
tangents. (``jax.experimental.jet`` has no rules for these.)

``custom_vjp_call``: forward-mode derivatives of a custom_vjp function are those of its primal
function (as JAX's jet does), since only its reverse-mode rule is given. ``custom_jvp_call`` uses
its JVP rule, through the kernel's rule from the JVP rule (``taylor_from_jvp``).
"""

from __future__ import annotations

from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import implicit
from funcgrad.primitives.control_flow import (
    _fixed_point,
    _rearrange,
    _scan_layout,
    _split,
    _with_unused_invars,
    cond_p,
    scan_p,
    while_p,
)

from funcgrad.kernel import core
from funcgrad.kernel.ad import Zero, instantiate, is_zero_series, tangent_aval, zero_series
from funcgrad.kernel.callkit import derived_jet
from funcgrad.kernel.custom_derivatives import custom_vjp_call_p
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.taylor import jet_flat


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


def _cond_taylor(primals, series, *, branches):
    index, *ops = primals
    order = len(series[0])
    nz = [not is_zero_series(s) for s in series[1:]]
    n_out = len(branches[0].out_avals)
    out_nz = [False] * n_out
    for b in branches:
        out_nz = [a or c for a, c in zip(out_nz, _jet(b, order, nz, [False] * n_out)[1])]
    jets = tuple(_jet(b, order, nz, out_nz)[0] for b in branches)
    outs = cond_p.bind(index, *ops, *_terms(series[1:], nz), branches=jets)
    return outs[:n_out], _series_out(outs[:n_out], outs[n_out:], out_nz, order)


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


def _custom_vjp_call_taylor(primals, series, *, call_jaxpr, num_consts, **_):
    run = lambda *xs: core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *xs)  # noqa: E731
    return jet_flat(run, primals, series, len(series[0]))


def _linear_solve_taylor(primals, series, *, const_lengths, jaxprs):
    """``M(c) x = b`` with ``M`` linear in ``x``: ``x_k = solve(b_k - sum_(j=1..k) M_j x_(k-j))``,
    where ``M_j v`` is term ``j`` of ``t -> matvec(c(t), v)`` (a jet of the matvec jaxpr, one per
    solution term). One solve per term, where the rule from the JVP rule solves ``2^K`` times."""
    params = dict(const_lengths=const_lengths, jaxprs=jaxprs)
    order = len(series[0])
    outs = implicit.custom_linear_solve_p.bind(*primals, **params)
    consts, b = implicit.split_consts(primals, const_lengths)
    consts_s, b_s = implicit.split_consts(series, const_lengths)
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
            v = [instantiate_zero(xi, p) for xi, p in zip(x[m], outs[:n])]
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
        rhs = [instantiate_zero(r, p) for r, p in zip(rhs, b)]
        x.append(list(implicit.custom_linear_solve_p.bind(*flat_consts, *rhs, **params)[:n]))
    series_out = [
        [Zero.from_primal_value(p) if x[k][i] is None else x[k][i] for k in range(1, order + 1)]
        for i, p in enumerate(outs[:n])
    ]
    return outs, series_out + [zero_series(o, order) for o in outs[n:]]


def instantiate_zero(t, like):
    return hooks.zeros(Zero.from_primal_value(like).aval) if t is None else t


cond_p.def_taylor(_cond_taylor)
implicit.custom_linear_solve_p.def_taylor(_linear_solve_taylor)
scan_p.def_taylor(_scan_taylor)
while_p.def_taylor(_while_taylor)
custom_vjp_call_p.def_taylor(_custom_vjp_call_taylor)
