"""The jaxpr surgery of control flow: a ``cond``'s traced branches joined into one signature
(every branch taking every branch's constants) without the outputs all of them forward, and a
loop body's read-only carries made constants (NOTE: [read-only carries]).

Layer: surface, under ``funcgrad._control_flow`` (which traces the user's functions and binds the
primitives). Imports only the kernel (the IR, the cache registry): these functions take and give
jaxprs, nothing of the user's.
"""

from __future__ import annotations

import weakref

from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, Var, has_effects

# The joined branches of a cond, per tuple of traced branches (held weakly by the first): the same
# branches from the trace cache give the same jaxprs, so an eager cond called again finds its
# compiled program (NOTE: [eager control flow is compiled]), as JAX's common-consts cache.
_JOINED = register_cache("control_flow.joined_branches", weakref.WeakKeyDictionary())


def joined_branches(branches: list[ClosedJaxpr], n_operands: int):
    """Each branch (taking its constants, then the ``n_operands`` operands) taking every branch's
    constants, its own where they were and the others' ignored, then without the outputs every
    branch forwards (``forwarded_outputs``); returns (branches, forwarded positions). Memoised
    on the branches' identities."""
    per_first = _JOINED.get(branches[0])
    hit = per_first.get(tuple(id(b) for b in branches[1:])) if per_first is not None else None
    if hit is not None and all(a is b for a, b in zip(hit[0], branches[1:])):
        return hit[1], hit[2]
    const_avals = [a for b in branches for a in b.in_avals[: len(b.in_avals) - n_operands]]
    joined = []
    offset = 0
    for b in branches:
        j = b.jaxpr
        n = len(j.invars) - n_operands
        before = [Var(a) for a in const_avals[:offset]]
        after = [Var(a) for a in const_avals[offset + n :]]
        invars = [*before, *j.invars[:n], *after, *j.invars[n:]]
        joined.append(ClosedJaxpr(Jaxpr([], invars, j.eqns, j.outvars), []))
        offset += n
    joined, forwarded = forwarded_outputs(joined, len(const_avals))
    _JOINED.setdefault(branches[0], {})[tuple(id(b) for b in branches[1:])] = (
        tuple(branches[1:]),
        tuple(joined),
        forwarded,
    )
    return tuple(joined), forwarded


def forwarded_outputs(branches, n_consts: int):
    """As JAX's cond: an output that every branch returns as the same operand, unchanged, is that
    operand, not an output of the cond (so vmap keeps an unbatched operand unbatched through a
    batched predicate: flax's nnx.cond under nnx.vmap). Returns the branches without those
    outputs (at least one output is kept) and, per output, the operand index or None."""
    positions = []
    for k in range(len(branches[0].jaxpr.outvars)):
        found = None
        for b in branches:
            v = b.jaxpr.outvars[k]
            p = (
                next((i for i, w in enumerate(b.jaxpr.invars) if w is v), None)
                if isinstance(v, Var)
                else None
            )
            if p is None or p < n_consts or (found is not None and p != found):
                found = None
                break
            found = p
        positions.append(None if found is None else found - n_consts)
    if positions and all(p is not None for p in positions):
        if any(has_effects(e) for b in branches for e in b.jaxpr.eqns):
            positions[-1] = None  # keep one output: a cond with none would be dropped with its effects
        # (else nothing is left to compute: the cond is its operands, as JAX's)
    if all(p is None for p in positions):
        return branches, positions
    kept = [k for k, p in enumerate(positions) if p is None]
    pruned = [
        ClosedJaxpr(
            Jaxpr(b.jaxpr.constvars, b.jaxpr.invars, b.jaxpr.eqns, [b.jaxpr.outvars[k] for k in kept]),
            b.consts,
        )
        for b in branches
    ]
    return pruned, positions


# NOTE: [read-only carries]
# A loop carry that the body returns unchanged (its output is the very input variable) is a
# constant: ``scan`` and ``while_loop`` pass it to the body as one, and the loop's result for it
# is the initial value, as JAX 0.10's loops do. This matters under ``vmap``: a constant stays
# unbatched where a carry would be batched with a batched predicate or a batched carry (flax's
# issues 4700 and 4709: ``vmap(..., out_axes=None)`` of such a carry).


def forwarded_carries(jaxpr: Jaxpr, n_consts: int, n_carry: int) -> list[bool]:
    """Which carries ``jaxpr`` (inputs: consts, carries, ...; outputs: carries, ...) returns as
    they came in."""
    carries = jaxpr.invars[n_consts : n_consts + n_carry]
    return [o is v for o, v in zip(jaxpr.outvars[:n_carry], carries)]


def reads(jaxpr: Jaxpr, var) -> bool:
    return var in jaxpr.outvars or any(var in e.invars for e in jaxpr.eqns)


def carries_to_consts(closed: ClosedJaxpr, n_consts: int, move: list[bool]) -> ClosedJaxpr:
    """The loop body with the ``move`` carries as leading constant inputs and without their
    outputs."""
    j, n = closed.jaxpr, len(move)
    carries = j.invars[n_consts : n_consts + n]
    ins = [
        *[v for v, m in zip(carries, move) if m], *j.invars[:n_consts],
        *[v for v, m in zip(carries, move) if not m], *j.invars[n_consts + n :],
    ]  # fmt: skip
    outs = [*[o for o, m in zip(j.outvars[:n], move) if not m], *j.outvars[n:]]
    return ClosedJaxpr(Jaxpr(j.constvars, ins, j.eqns, outs), closed.consts)


def merge_moved(move: list[bool], outs: list, moved: list) -> list:
    """The loop's carry results with the moved carries' initial values put back in place."""
    if not moved:
        return list(outs)
    kept, moved = iter(outs), iter(moved)
    return [*[next(moved) if m else next(kept) for m in move], *kept]
