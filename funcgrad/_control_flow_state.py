"""Refs and mutable boxes threaded through control flow: ``cond``/``switch`` branches,
``while_loop`` functions and ``scan`` bodies that touch them carry their values as state.

Layer: surface, between ``funcgrad._control_flow`` (below: this module calls its ``cond``,
``while_loop`` and ``scan`` again, over ``(operands, state)``) and ``funcgrad._ref_scopes`` (above:
it imports this module, and ``funcgrad.ref`` imports it, so control flow finds this module in
``sys.modules`` exactly when a Ref or a mutable box can exist). Imports the kernel (current
trace, pytrees, jaxpr evaluation, held state operands), ``funcgrad._control_flow`` and
``funcgrad._control_flow_trace``, ``funcgrad._ref_errors``, ``funcgrad._api_util`` (names for
errors) and ``funcgrad._sharding_types``; not ``funcgrad.ref``: Refs and boxes are reached through
the state methods both define (``_state_read``, ``_state_bind``, ``_state_restore``,
``_state_now``, ``_state_write``; a Ref's ``_row`` and ``_inner``).

# NOTE: [state in loop bodies]
# A scan body that touches a Ref or a mutable box from outside (``ref[...] += 1`` in the body;
# flax's hijax Variable written in a loop) carries its value, as JAX's discharge does. The body is
# first traced with its trace as a *discovery* scope (``_ref_scopes.discover_state``): what it
# touches from outside is lifted there, and the trace is abandoned (``LoopState``). scan then runs
# over ``(carry, state)``, the state being the current low-level values of those Refs and boxes,
# with a body that binds them to the state carry while the user's body runs and returns their
# final values as the new state (``bound_loop_state``); the final state is written back after the
# loop. Where the discovery trace touched only Refs it is kept (``LoopState.recorded``) and
# replayed instead of calling the body again (``call_with_state``): the body's Python runs once,
# as JAX traces it once. A body that touches none is traced once, as before. ``cond``'s branches
# carry state the same way (their values in as extra operands, their final values out as extra
# results), and so do ``while_loop``'s functions (a second carry; ``cond_fun`` runs before the
# loop and after each body step, so its writes are kept); so does ``checkpoint``
# (NOTE: [state in checkpointed functions]). Refs passed as operands are taken out and closed
# over (NOTE: [held state operands]): a cond's branches get a stand-in for each, written back into
# it after the cond (a branch touching both is JAX's error: closed over and passed), a Ref
# scanned over gives the body its rows, a Ref in scan's initial carry is refused as JAX's. A
# write of a constant from a staged function that is no ref scope is refused
# (``funcgrad.ref._staged_below``): it would happen once, at trace time.
"""

from __future__ import annotations

import functools
import weakref

import numpy as np

from funcgrad import _control_flow as cf
from funcgrad._api_util import fun_sourceinfo, signature_arg_names
from funcgrad._control_flow_trace import trace
from funcgrad._ref_errors import refuse_aliased_refs, refuse_returned_refs
from funcgrad._sharding_types import scan_step_avals
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.held_state import is_state
from funcgrad.kernel.jaxpr_eval import eval_closed

__all__ = [
    "LoopState",
    "bound_loop_state",
    "cond_with_state",
    "grouped_state",
    "held_cond_operands",
    "loop_state_values",
    "scan_with_state",
    "scanned_refs",
    "while_with_state",
    "write_loop_state",
]


class LoopState(Exception):
    """Raised out of a loop body's discovery trace: the Refs and boxes it touched from outside, in
    the order it touched them; ``recorded``: where they are all Refs, the trace itself, completed
    with their values as extra inputs and final values as extra outputs (the body's jaxpr,
    replayed instead of calling the body again: JAX traces it once)."""

    def __init__(self, items: list, recorded=None):
        super().__init__(f"the loop body touches {len(items)} Ref(s)/mutable value(s) from outside")
        self.items = items
        self.recorded = recorded


# ----------------------------------------------------------------------------------------------
# The state: a list of leaves per Ref or box


def loop_state_values(items: list) -> list:
    """The current low-level values of each item of a ``LoopState`` (a list of leaves per item),
    read at the loop's own trace."""
    return [item._state_read() for item in items]


class bound_loop_state:
    """Context manager inside a loop body's trace: each item bound to its state carry ``values``;
    ``finals()`` gives their values now (the body's new state). Restores them on exit."""

    def __init__(self, items: list, values: list):
        self.items, self.values = items, values

    def __enter__(self):
        trace = core.current_trace()
        self.saved = [item._state_bind(vals, trace) for item, vals in zip(self.items, self.values)]
        return self

    def finals(self) -> list:
        return [item._state_now() for item in self.items]

    def __exit__(self, *exc):
        for item, saved in reversed(list(zip(self.items, self.saved))):
            item._state_restore(saved)
        return False


def grouped_state(flat, state: list) -> list:
    """The leaves ``flat`` in lists of the lengths of ``state``'s (a list of leaves per item, as
    ``loop_state_values`` gives): a program's final state outputs, per item."""
    rest = iter(flat)
    return [[next(rest) for _ in vals] for vals in state]


def write_loop_state(items: list, finals: list) -> None:
    """Write a loop's final state back into its Refs and boxes, at the loop's trace."""
    for item, vals in zip(items, finals):
        item._state_write(list(vals))


def _add_items(items: list, e: LoopState) -> None:
    """Add to ``items`` the Refs and boxes of ``e`` that it does not hold yet."""
    items.extend(i for i in e.items if not any(i is j for j in items))


def _replayable(e: LoopState | None, items: list):
    """The trace ``call_with_state`` may replay for a function whose discovery trace raised ``e``
    (None: it raised none): ``e.recorded`` where that trace touched exactly ``items``, in that
    order; else None (the function is called again)."""
    if e is None or len(e.items) != len(items) or not all(a is b for a, b in zip(e.items, items)):
        return None
    return e.recorded


def call_with_state(fun, args: tuple, items: list, state: list, recorded):
    """``fun(*args)`` with the Refs and boxes ``items`` bound to ``state`` (a list of leaves per
    item): ``(its result, their final values)``. Where the discovery trace of ``fun`` was kept
    (``recorded``, for these items and these argument types), that jaxpr is replayed instead of
    calling ``fun`` again (NOTE: [state in loop bodies])."""
    if recorded is not None:
        closed, in_tree, in_avals, out_tree, n_out = recorded
        leaves, tree = tu.tree_flatten(args)
        flat_state = [x for vals in state for x in vals]
        if tree == in_tree and [core.get_aval(x) for x in [*leaves, *flat_state]] == [
            *in_avals,
            *closed.in_avals[len(closed.in_avals) - len(flat_state) :],
        ]:
            outs = eval_closed(closed, *leaves, *flat_state)
            return tu.tree_unflatten(out_tree, outs[:n_out]), grouped_state(outs[n_out:], state)
    with bound_loop_state(items, state) as bound:
        out = fun(*args)
        return out, bound.finals()


# ----------------------------------------------------------------------------------------------
# cond and switch


# The stand-in Ref a cond's branches get for a Ref passed as an operand -> (that Ref, its leaf
# position among the operands, the operands), while the cond runs: a branch touching both the
# stand-in and the Ref itself closes over what it was also passed (JAX's error).
_STAND_INS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def held_cond_operands(branches: list, operands: tuple, what: str):
    """Refs among a cond's operands, checked for aliasing, are closed over by the branches instead
    (NOTE: [held state operands]; their values are then carried as state): each branch gets a
    stand-in for each (``_STAND_INS``), written back into the Ref after the cond. Returns the
    branches and the remaining operands (one tuple of leaves)."""
    # (JAX names true_fun's parameters)
    held = refuse_aliased_refs(branches[-1], operands, what)
    leaves, tree = tu.tree_flatten(operands)
    for i, ref in held.at.items():
        stand_in = ref._inner(ref._value, ref._trace)
        _STAND_INS[stand_in] = (ref, i, operands)
        held.at[i] = stand_in

    def closing(branch):
        @functools.wraps(branch)
        def closed(*kept_leaves):
            return branch(*tu.tree_unflatten(tree, held.full(kept_leaves)))

        return closed

    return [closing(b) for b in branches], tuple(held.kept(leaves))


def _stand_in(item):
    """``_STAND_INS``' entry for ``item`` (a Ref or a lifted box), or None."""
    return _STAND_INS.get(item) if is_state(item) else None


def _refuse_closed_over_operands(branches, found: dict, what: str) -> None:
    """JAX's error for a branch that touched a Ref both as an operand (its stand-in) and closed
    over (``_check_no_aliased_closed_over_refs``)."""
    for k, e in found.items():
        for item in e.items:
            entry = _stand_in(item)
            if entry is not None and any(x is entry[0] for x in e.items):
                ref, i, operands = entry
                name = signature_arg_names(branches[k], operands, {})[i]
                raise ValueError(
                    f"when tracing {fun_sourceinfo(branches[k])} for {what}, a mutable array reference "
                    f"of type {ref.aval} was both closed over and passed as the argument {name}"
                )


def cond_with_state(index, branches, operands, names, what, found: dict):
    """A cond whose branches touch Refs or mutable boxes from outside: each branch takes their
    values as extra operands and returns their final values, written back after the cond (a
    stand-in's into its Ref). ``found``: per branch that touched them, its ``LoopState`` (a
    branch that touched all of them, in that order, is replayed, not called again)."""
    _refuse_closed_over_operands(branches, found, what)
    items: list = []
    for e in found.values():
        _add_items(items, e)

    def with_state(k, branch):
        recorded = _replayable(found.get(k), items)

        def stateful(state, ops):
            return call_with_state(branch, tuple(ops), items, state, recorded)

        return stateful

    state = loop_state_values(items)
    stateful = [with_state(k, b) for k, b in enumerate(branches)]
    out, finals = cf._bind_cond(index, stateful, (state, list(operands)), names, what)
    write_loop_state(items, finals)
    for item in items:
        entry = _stand_in(item)
        if entry is not None:
            entry[0]._state_write(item._state_now())
    return out


# ----------------------------------------------------------------------------------------------
# while_loop


def while_with_state(cond_fun, body_fun, init_val, found: dict):
    """A while loop whose functions touch Refs or mutable boxes from outside: their values are a
    second carry, written back after the loop. ``cond_fun`` may write them too (as in JAX): it
    runs once before the loop and after each body step, its predicate carried with the state.
    ``found``: the ``LoopState`` of the function (``"body"`` or ``"cond"``) whose discovery trace
    raised it; the other is traced here."""
    items, avals = [], [core.get_aval(x) for x in tu.tree_leaves(init_val)]
    for stage, fun in (("body", body_fun), ("cond", cond_fun)):
        if stage in found:
            e = found[stage]
        else:
            try:
                trace(fun, tu.tree_structure((init_val,)), avals, f"while_loop {stage}_fun", True)
                continue
            except LoopState as caught:
                e = found[stage] = caught
        _add_items(items, e)

    on_body, on_cond = _replayable(found.get("body"), items), _replayable(found.get("cond"), items)

    def tested(val, state):  # (val, state after cond_fun, its predicate)
        pred, state = call_with_state(cond_fun, (val,), items, state, on_cond)
        return val, state, pred

    def body(carry):
        val, state, _ = carry
        val, state = call_with_state(body_fun, (val,), items, state, on_body)
        _refuse_type_changes(items, state, "while_loop body")
        return tested(val, state)

    init = tested(init_val, loop_state_values(items))
    val, finals, _ = cf.while_loop(lambda carry: carry[2], body, init)
    write_loop_state(items, finals)
    return val


def _refuse_type_changes(items: list, state: list, where: str) -> None:
    """JAX's TypeError for a loop step that changed the structure of a box it carries (its
    quasi-dynamic data: ``box.cur_qdd()`` or the number of its low-level values after the step)."""

    def types(vals):
        return [(core.get_aval(v).shape, core.get_aval(v).dtype) for v in vals]

    for item, vals in zip(items, state):
        if getattr(item, "qdd", None) is not None and types(vals) != types(item.read()):
            raise TypeError(f"type-changing mutations not allowed in {where}")


# ----------------------------------------------------------------------------------------------
# scan


def scanned_refs(f, init, xs, length: int):
    """Refs among scan's operands: checked for aliasing; a Ref scanned over (in ``xs``) gives the
    body row ``i`` of it (a Ref's ``_row``: JAX's transformed Ref), reading and writing that row
    of the Ref (closed over, so its value is carried), through an index scanned over in its
    place. Returns the body and ``xs``."""
    n_init = len(tu.tree_leaves(init))
    held = refuse_aliased_refs(f, (init, xs), "scan")
    sliced = {i - n_init: x for i, x in held.at.items() if i >= n_init}
    if sliced:
        f, xs = _rows_of(f, xs, sliced, length)
    carried = {i: x for i, x in held.at.items() if i < n_init}
    if carried:
        _refuse_carried_refs(f, init, xs, carried)
    return f, xs


def _rows_of(f, xs, sliced: dict, length: int):
    """The body and ``xs`` where the Refs ``sliced`` (by leaf position in ``xs``) are scanned over:
    an index is, and the body gets the Ref's row at it."""
    xs_leaves, xs_tree = tu.tree_flatten(xs)
    index = np.arange(length, dtype=np.int32)
    xs = tu.tree_unflatten(xs_tree, [index if i in sliced else x for i, x in enumerate(xs_leaves)])
    body = f

    @functools.wraps(body)
    def rows(c, x):
        leaves = tu.tree_leaves(x)
        leaves = [sliced[i]._row(v) if i in sliced else v for i, v in enumerate(leaves)]
        return body(c, tu.tree_unflatten(xs_tree, leaves))

    return rows, xs


def _refuse_carried_refs(f, init, xs, carried: dict) -> None:
    """A Ref in scan's initial carry is refused, as in JAX (a loop carry's type is an array's):
    with JAX's error for a body that closes over it too or returns it (the body is traced once,
    given a stand-in for it, to tell which), else with funcgrad's words."""
    leaves, tree = tu.tree_flatten(init)
    names = signature_arg_names(f, (init, xs), {})
    stand_ins = {}
    for i, ref in carried.items():
        stand_ins[i] = ref._inner(ref._value, ref._trace)
        _STAND_INS[stand_ins[i]] = (ref, i, (init, xs))
    kept = [x for i, x in enumerate(leaves) if i not in carried]

    def given(kept_leaves, x):
        it = iter(kept_leaves)
        c = tu.tree_unflatten(
            tree, [stand_ins[i] if i in stand_ins else next(it) for i in range(len(leaves))]
        )
        out = f(c, x)
        refuse_returned_refs(out, "scan body", f, "scan", {id(r): names[i] for i, r in stand_ins.items()})
        return 0

    xs_avals = scan_step_avals([core.get_aval(x) for x in tu.tree_leaves(xs)])
    try:
        trace(
            given, tu.tree_structure((kept, xs)), [*map(core.get_aval, kept), *xs_avals], "scan body f", True
        )
    except LoopState as e:
        _refuse_closed_over_operands([f], {0: e}, "scan")
    i, ref = next(iter(carried.items()))
    raise ValueError(  # (JAX's type; its words come from a conversion that meets the Ref)
        f"scan got a mutable array reference of type {ref.aval} in its initial carry (as {names[i]}): a "
        "loop carry is an array; close over the Ref in the body (or scan over it in xs) instead"
    )


def scan_with_state(f, init, xs, e: LoopState, length: int, reverse: bool, unroll: int):
    """scan over ``(carry, state)``: the Refs and mutable boxes the body touches from outside
    (``e.items``) are bound to the state carry in each step, and written back after the loop."""
    items = e.items

    def body(carry, x):
        c, state = carry
        (c, y), new = call_with_state(f, (c, x), items, state, e.recorded)
        return (c, new), y

    init_state = loop_state_values(items)
    (carry, state), ys = cf.scan(body, (init, init_state), xs, length=length, reverse=reverse, unroll=unroll)
    write_loop_state(items, state)
    return carry, ys
