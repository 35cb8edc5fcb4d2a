"""Ref scopes: the traces whose Refs (``funcgrad.ref``) and mutable boxes are inputs and outputs of
the jaxpr being built -- a jitted function's (``trace_stateful``), a loop body's discovery trace
(``discover_state``) -- and the lifting of a Ref or box touched inside them (``lift``,
``lift_box``; NOTE: [refs are functionalised at trace time] in funcgrad/ref.py).

Layer: surface, below ``funcgrad.ref`` (which lifts each Ref it reads or writes here) and above
``funcgrad._control_flow_state`` (``LoopState``) and ``funcgrad._ref_errors``. Imports the kernel
(the current trace, the staging trace, pytrees, held state operands); a Ref is reached through its
own attributes and state methods (``_state_read``, ``_state_write``, ``_inner``), never by its
class: this module does not import ``funcgrad.ref``.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any

from funcgrad import kernel
from funcgrad._api_util import fun_sourceinfo
from funcgrad._control_flow_state import LoopState
from funcgrad._ref_errors import aliased_error, refuse_returned_refs
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.held_state import is_state
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr
from funcgrad.kernel.partial_eval import StagingTrace

__all__ = [
    "ACCESSES",
    "HITYPES",
    "RefPlan",
    "box_type",
    "discover_state",
    "is_stateful_arg",
    "lift",
    "hi_values_lowered",
    "lower_hi_values",
    "note_made_boxes",
    "lift_box",
    "stateful_key",
    "trace_stateful",
]


# ----------------------------------------------------------------------------------------------
# Mutable high-level values (jax.experimental.hijax's MutableHiType, e.g. flax's hijax Variables)

# NOTE: [mutable high-level values]
# A class registered with ``register_hitype`` whose type (``to_aval(x)``) has quasi-dynamic data
# (``has_qdd``: its structure is state, ``x.cur_qdd()``) is a mutable box like a Ref, and a jitted
# function treats an argument of that class as it treats a Ref: its low-level values
# (``aval.read_loval(qdd, x)``) are inputs, the function gets a box made from the traced ones
# (``aval.new_from_loval``), and the box's final state -- its structure may have changed -- is
# extra outputs written back with ``aval.update_from_loval``. The box's operations (JAX's
# ``HiPrimitive``s) run their ``to_lojax`` on it while tracing, their ``impl`` eagerly
# (funcgrad/experimental/hijax.py). A box closed over and touched (a ``HiPrimitive`` bound on it
# while tracing: ``lift_box``) is lifted into the ref scopes between there and the trace its values
# belong to, as a closed-over Ref is: its low-level values are new inputs, its final ones extra
# outputs written back (``RefPlan.lifted``). Under grad/vmap a box is not supported; in a scan body
# see NOTE: [state in loop bodies].
HITYPES: dict[type, Any] = {}


class _HiValue:
    """An immutable high-level value (of a registered type with no quasi-dynamic data) as its
    low-level values while it crosses a ``jit`` boundary: flattened, it gives them (its type is
    the tree's static data); unflattened, its type raises them back (``aval.raise_val``), as JAX
    passes such a value into and out of a jitted function.

    >>> import numpy as np
    >>> import funcgrad
    >>> from funcgrad.experimental import hijax
    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> class PairTy(hijax.HiType):
    ...     def __eq__(self, other): return type(other) is PairTy
    ...     def __hash__(self): return hash(PairTy)
    ...     def lo_ty(self): return [funcgrad.core.ShapedArray((), np.float32)] * 2
    ...     def lower_val(self, p): return [p.a, p.b]
    ...     def raise_val(self, a, b): return Pair(a, b)
    >>> hijax.register_hitype(Pair, lambda p: PairTy())
    >>> out = funcgrad.jit(lambda p: Pair(p.b, p.a + p.b))(Pair(np.float32(1), np.float32(2)))
    >>> type(out).__name__, float(out.a), float(out.b)
    ('Pair', 2.0, 3.0)
    """

    __slots__ = ("aval", "lo")

    def __init__(self, aval, lo):
        self.aval, self.lo = aval, lo


tu.register_pytree_node(_HiValue, lambda h: (h.lo, h.aval), lambda aval, lo: aval.raise_val(*lo))


def lower_hi_values(tree):
    """``tree`` with each immutable high-level value in it (``_HiValue``) standing for its
    low-level values: how a jitted function's arguments and results cross its boundary."""
    if not HITYPES:
        return tree

    def lower(x):
        to_aval = HITYPES.get(type(x))
        if to_aval is None:
            return x
        aval = to_aval(x)
        if getattr(aval, "has_qdd", False):
            return x  # (a mutable box: state, NOTE: [mutable high-level values])
        return _HiValue(aval, list(aval.lower_val(x)))

    # (a value already lowered stays so: a tree maps it through its leaves, raising it again)
    return tu.tree_map(lower, tree, is_leaf=lambda x: type(x) in HITYPES or type(x) is _HiValue)


def hi_values_lowered(funs, tree):
    """``(funs, tree)`` for a control-flow operation given immutable high-level values among its
    operands ``tree``: each of them as its low-level values, raised back for the functions
    ``funs`` (their high-level results go out as low-level values where the control-flow trace
    flattens them: ``funcgrad._control_flow_trace._hi_lowered``), as ``jit``'s boundary
    (``lower_hi_values``). The functions keep their identity: the control-flow trace cache
    knows them, and they run once per signature, as JAX's."""
    if not HITYPES or not any(
        type(x) in HITYPES and box_type(x) is None
        for x in tu.tree_leaves(tree, is_leaf=lambda x: type(x) in HITYPES)
    ):
        return funs, tree
    return funs, lower_hi_values(tree)


def box_type(x):
    """``(aval, qdd)`` of a mutable high-level value ``x``, else None."""
    to_aval = HITYPES.get(type(x))
    if to_aval is None:
        return None
    aval = to_aval(x)
    if not getattr(aval, "has_qdd", False):
        return None
    return aval, x.cur_qdd()


def is_stateful_arg(x) -> bool:
    """Whether a jit argument is state the call reads and writes back: a Ref or a mutable box."""
    return is_state(x) or (type(x) in HITYPES and box_type(x) is not None)


def stateful_key(x, first: int):
    if is_state(x):
        return ("ref", x._aval, x._leaf_avals, first)
    aval, qdd = box_type(x)
    return ("box", type(x), aval, qdd, first)


def _lo_aval(a):
    # A box's low-level type as a jaxpr input: shape, dtype, weak type (typeof's default sharding
    # is no part of it).
    return core.ShapedArray(a.shape, a.dtype, getattr(a, "weak_type", False))


@dataclasses.dataclass
class RefPlan:
    """What a jitted program does with Refs (NOTE: [refs are functionalised at trace time]).

    ``arg_positions``: the flat argument positions holding a Ref, and ``aliases``: for each, the
    position of the first argument that is the same Ref (the jaxpr reads each Ref once);
    ``lifted``: the Refs (and mutable boxes, as ``_LiftedBox``) the function closes over and
    touched, read after the arguments;
    ``written``: indices into (distinct argument Refs, then lifted) of the Refs whose final value
    is an extra output of the program, in that order."""

    arg_positions: tuple[int, ...]
    aliases: tuple[int, ...]
    lifted: tuple[Any, ...]
    written: tuple[int, ...]
    # (position, aval, qdd on input, qdd on output, number of low-level outputs) per box argument
    boxes: tuple = ()

    def inputs(self, flat: list) -> list:
        """The program's flat inputs for this call: each Ref replaced by its leaves, each box by its
        low-level values, read now."""
        out, first = [], dict(zip(self.arg_positions, self.aliases))
        boxes = {b[0]: b for b in self.boxes}
        for i, x in enumerate(flat):
            if i in boxes:
                _, aval, qdd, _, _ = boxes[i]
                out.extend(aval.read_loval(qdd, x))
            elif i not in first:
                out.append(x)
            elif first[i] == i:
                out.extend(x._state_read())
        for ref in self.lifted:
            if type(ref) is _LiftedBox:
                out.extend(ref.read())
            else:
                out.extend(ref._state_read())
        return out

    def boxes_unchanged(self) -> bool:
        """Whether every closed-over box still has the structure it was traced with (a box whose
        value changed structure since needs a new trace: NOTE: [mutable high-level values])."""
        return all(type(item) is not _LiftedBox or item.box.cur_qdd() == item.qdd for item in self.lifted)

    def targets(self, flat: list) -> list[Any]:
        distinct = [flat[i] for i, a in zip(self.arg_positions, self.aliases) if a == i]
        every = [*distinct, *(r for r in self.lifted if type(r) is not _LiftedBox)]
        return [every[k] for k in self.written]

    def write_back(self, flat: list, finals: list) -> None:
        it = iter(finals)
        for ref in self.targets(flat):
            ref._state_write([next(it) for _ in ref._leaf_avals])
        for position, aval, _, qdd_out, n in self.boxes:
            aval.update_from_loval(qdd_out, flat[position], *[next(it) for _ in range(n)])
        for lifted in self.lifted:
            if type(lifted) is _LiftedBox:
                _write_box(lifted.aval, lifted.qdd_out, lifted.box, *[next(it) for _ in range(lifted.n_out)])


class _Scope:
    """The refs bound to one staging trace: (ref, the state it had before) in binding order."""

    def __init__(self, trace, fun=None, traced_for: str = "jit"):
        self.trace = trace
        self.fun, self.traced_for = fun, traced_for
        self.arguments: dict[int, str] = {}  # id of each Ref passed in -> its argument's name
        self.bound: list[tuple[Any, Any, Any]] = []
        self.starts: list[list] = []  # the inputs each bound Ref started from
        self.lifted_args: list = []
        self.lifted: list = []  # Refs and _LiftedBoxes, in the order their inputs were added
        self.boxes: list = []  # (_LiftedBox, its low-level values before) per lifted box

    def bind(self, ref: Any, leaves) -> None:
        self.bound.append((ref, ref._value, ref._trace))
        self.starts.append(list(leaves))
        ref._value = tu.tree_unflatten(ref._tree, list(leaves))
        ref._trace = self.trace

    def lift(self, ref: Any) -> None:
        name = self.arguments.get(id(ref))
        if name is not None:  # (JAX's check, on by default: jax_mutable_array_checks)
            raise ValueError(
                f"when tracing {fun_sourceinfo(self.fun)} for {self.traced_for}, a mutable array "
                f"reference of type {ref._aval} was both closed over and passed as the argument {name}"
            )
        args = [self.trace.new_arg(a) for a in ref._leaf_avals]
        self.lifted_args.extend(args)
        self.lifted.append(ref)
        self.bind(ref, args)

    def lift_box(self, box, aval, qdd) -> None:
        """Bind a closed-over mutable box to new inputs (NOTE: [mutable high-level values])."""
        lifted = _LiftedBox(box, aval, qdd)
        start = lifted.read()
        args = [self.trace.new_arg(_lo_aval(a)) for a in aval.lo_ty_qdd(qdd)]
        self.lifted_args.extend(args)
        self.lifted.append(lifted)
        self.boxes.append((lifted, start))
        _write_box(aval, qdd, box, *args)

    def finish_boxes(self) -> list:
        """The final low-level values of the lifted boxes (their extra outputs), in lifting order."""
        finals = []
        for lifted, _ in self.boxes:
            lifted.qdd_out = lifted.box.cur_qdd()
            lo = lifted.read(lifted.qdd_out)
            lifted.n_out = len(lo)
            finals.extend(lo)
        return finals

    def restore(self) -> None:
        for lifted, start in reversed(self.boxes):
            _write_box(lifted.aval, lifted.qdd, lifted.box, *start)
        for ref, value, trace in reversed(self.bound):
            ref._value, ref._trace = value, trace


_SCOPES: dict[Any, _Scope] = {}


# How many times a Ref has been read or written: a traced body that touched one is not reusable
# (funcgrad/_control_flow.py's trace cache compares this before and after a trace).
ACCESSES = [0]


def _scopes_down_to(current, home) -> tuple[list, bool]:
    """The lifting scopes of the traces from ``current`` up to (not including) ``home``, innermost
    first, and whether ``home`` encloses ``current`` at all (``None``: the root encloses all)."""
    scopes, t = [], current
    while t is not None and t is not home:
        scope = _SCOPES.get(t) if _SCOPES else None
        if scope is not None:
            scopes.append(scope)
        t = t.parent
    return scopes, t is home


def lift(ref) -> None:
    """Make ``ref``'s value usable at the current trace: bind it in every ref scope between there
    and its own trace (NOTE: [refs are functionalised at trace time])."""
    ACCESSES[0] += 1
    current = core.current_trace()
    home = ref._trace
    if home is current:
        return
    if home is not None and not home.alive:
        raise core.UnexpectedTracerError(
            f"A Ref of type {ref._aval} made (or written) inside a transformation that has finished "
            "was used after it: a Ref made inside jit cannot be returned from it or kept; return "
            "ref[...] instead (or make the Ref outside and pass it in)."
        )
    scopes, encloses = _scopes_down_to(current, home)
    if not encloses:
        raise core.UnexpectedTracerError(
            f"A Ref of type {ref._aval} belongs to a transformation that does not enclose this one"
        )
    for scope in reversed(scopes):
        scope.lift(ref)


class _LiftedBox:
    """A mutable box a traced function closes over, with its structure (quasi-dynamic data) when
    lifted (``qdd``) and when the trace ended (``qdd_out``, ``n_out`` low-level values)."""

    __slots__ = ("box", "aval", "qdd", "qdd_out", "n_out")

    def __init__(self, box, aval, qdd):
        self.box, self.aval, self.qdd = box, aval, qdd
        self.qdd_out, self.n_out = qdd, 0

    def read(self, qdd=None) -> list:
        return _read_box(self.aval, self.qdd if qdd is None else qdd, self.box)

    # The state methods it shares with a Ref (NOTE: [state in loop bodies]).
    def _state_read(self) -> list:
        lift_box(self.box)
        return self.read()

    def _state_bind(self, values, trace):
        saved = self.read()
        _write_box(self.aval, self.qdd, self.box, *values)
        return saved

    def _state_restore(self, saved) -> None:
        _write_box(self.aval, self.qdd, self.box, *saved)

    def _state_now(self) -> list:
        return self.read(self.box.cur_qdd())

    def _state_write(self, values: list) -> None:
        _write_box(self.aval, self.qdd, self.box, *values)


_QUIET = [False]  # reading a box binds its own primitives, which must not lift it again


def _read_box(aval, qdd, box) -> list:
    quiet, _QUIET[0] = _QUIET[0], True
    try:
        return list(aval.read_loval(qdd, box))
    finally:
        _QUIET[0] = quiet


def _write_box(aval, qdd, box, *values) -> None:
    quiet, _QUIET[0] = _QUIET[0], True
    try:
        aval.update_from_loval(qdd, box, *values)
    finally:
        _QUIET[0] = quiet


def lift_box(box) -> None:
    """Make a mutable box's low-level values usable at the current trace: lift it into every ref
    scope between there and the trace its values belong to, as ``lift`` does for a Ref (a
    ``HiPrimitive`` bound on the box while tracing calls this; NOTE: [mutable high-level values])."""
    if _QUIET[0]:
        return
    found = box_type(box)
    if found is None:
        return
    ACCESSES[0] += 1
    aval, qdd = found
    current = core.current_trace()
    made = _BOX_HOMES.get(id(box))  # (a box made while tracing belongs to that trace)
    home = made[1] if made is not None and made[0]() is box else None
    held = next((x._trace for x in _read_box(aval, qdd, box) if isinstance(x, core.Tracer)), None)
    if home is None or not home.alive:
        home = held
    elif held is not None and held is not home and home.is_ancestor_of(held):
        # (its values bound to an inner trace's: a loop body or branch given the box as state,
        # NOTE: [state in loop bodies]; hijax_test test_cond_box_arg)
        home = held
    if home is current:
        return
    scopes, encloses = _scopes_down_to(current, home)
    if not encloses:
        return  # values of a trace that does not enclose this one: the primitive's rules decide
    for scope in reversed(scopes):
        if not any(type(item) is _LiftedBox and item.box is box for item in scope.lifted):
            scope.lift_box(box, aval, qdd)


# The trace each mutable box made while tracing belongs to (a box a traced function makes is its
# own, not state from outside, whatever it holds: JAX's box made inside jit): id -> (a weak
# reference to the box, the trace). By identity: a box class may define __eq__/__hash__ otherwise.
_BOX_HOMES: dict[int, tuple[Any, Any]] = register_cache("ref_scopes.box_homes", {})


def note_made_boxes(outs) -> None:
    """Record the mutable boxes among a high-level primitive's results ``outs`` (bound while
    tracing) as made by the current trace."""
    trace = core.current_trace()
    for x in outs if isinstance(outs, list | tuple) else (outs,):
        if type(x) in HITYPES and box_type(x) is not None:
            try:
                ref = weakref.ref(x, lambda _, key=id(x): _BOX_HOMES.pop(key, None))
            except TypeError:  # (a class that cannot be weakly referenced: not recorded)
                continue
            _BOX_HOMES[id(x)] = (ref, trace)


class discover_state:
    """Context manager around a loop body's Python call at its trace: raises ``LoopState`` on exit
    when the body touched Refs or boxes from outside (NOTE: [state in loop bodies] in
    funcgrad/_control_flow_state.py); with ``record``, it does not, and the caller completes the
    trace (``finals``, ``completed``)."""

    def __init__(self, record: bool = False):
        self.record = record

    def __enter__(self):
        self.trace = core.current_trace()
        self.scope = _SCOPES[self.trace] = _Scope(self.trace)
        return self

    def items(self) -> list:
        """The Refs and boxes from outside touched in the trace, in lifting order."""
        return list(self.scope.lifted)

    def finals(self, boxes: bool = False) -> list | None:
        """The leaves the touched Refs hold now (their new state), or None when a box was touched
        (with ``boxes``: only when a box changed structure; else its low-level values now)."""
        out = []
        for item in self.scope.lifted:
            if type(item) is not _LiftedBox:
                out.extend(tu.tree_leaves(item._value))
            elif boxes and item.box.cur_qdd() == item.qdd:
                out.extend(item._state_now())
            else:
                return None
        return out

    def completed(self, closed: ClosedJaxpr) -> ClosedJaxpr:
        """``closed``, the trace this discovery was around, with the trace's inputs standing for
        the touched Refs' values (in lifting order) as extra inputs after its own."""
        j = closed.jaxpr
        lifted = [t._var for t in self.scope.lifted_args]
        return ClosedJaxpr(Jaxpr(j.constvars, [*j.invars, *lifted], j.eqns, j.outvars), closed.consts)

    def __exit__(self, kind, value, tb):
        try:
            self.scope.restore()
        finally:
            del _SCOPES[self.trace]
        if kind is None and self.scope.lifted and not self.record:
            raise LoopState(list(self.scope.lifted))
        return False


def _state_discovery() -> discover_state:
    return discover_state(record=True)


kernel.register(state_discovery=_state_discovery)  # (NOTE: [state written by a backward pass])


def trace_stateful(
    f, in_avals, arg_names, description: str, refs: dict[int, Any], fun=None, traced_for="jit", dce=True
):
    """``trace_to_jaxpr`` for a jitted function: the trace is a ref scope. ``refs`` maps the flat
    argument positions that hold a Ref to it (their ``in_avals`` are the Refs' leaf avals, one
    position per Ref); ``f`` gets, for each, a Ref of the trace standing for it (so that one also
    closed over is told apart, as in JAX). Returns ``(closed jaxpr, n_outs, RefPlan or None)``: the
    program's outputs are ``f``'s ``n_outs`` ones, then the final leaves of each written Ref.
    ``fun`` (the user's function) and ``traced_for`` name it in JAX's aliasing errors; ``dce``:
    without the equations nothing reads."""
    with core.new_trace(StagingTrace, None, description) as trace:
        scope = _SCOPES[trace] = _Scope(trace, fun, traced_for)
        try:
            args, leaves, positions, aliases, first, boxes = [], [], [], [], {}, []
            names = list(arg_names or [None] * len(in_avals))
            for i, aval in enumerate(in_avals):
                ref = refs.get(i)
                if ref is not None and not is_state(ref):  # NOTE: [mutable high-level values]
                    box_aval, qdd = box_type(ref)
                    box_args = [trace.new_arg(_lo_aval(a), names[i]) for a in box_aval.lo_ty_qdd(qdd)]
                    args.extend(box_args)
                    inner = box_aval.new_from_loval(qdd, *box_args)
                    boxes.append((i, box_aval, qdd, inner))
                    leaves.append(inner)
                    continue
                if ref is None:
                    arg = trace.new_arg(aval, names[i])
                    args.append(arg)
                    leaves.append(arg)
                    continue
                positions.append(i)
                aliases.append(first.setdefault(id(ref), i))
                if first[id(ref)] != i:  # (JAX's check, on by default: jax_mutable_array_checks)
                    at = names[first[id(ref)]] or "unknown", names[i] or "unknown"
                    raise aliased_error(fun, traced_for, ref, *at)
                ref_args = [trace.new_arg(a, names[i]) for a in ref._leaf_avals]
                args.extend(ref_args)
                inner = ref._inner(None, trace)
                scope.bind(inner, ref_args)
                scope.arguments[id(ref)] = names[i] or "unknown"
                leaves.append(inner)
            outs = list(f(*leaves))
            refuse_returned_refs(outs, description, fun, traced_for, dict(zip(map(id, leaves), names)))
            every = [ref for ref, _, _ in scope.bound]
            written = [k for k, (ref, _, _) in enumerate(scope.bound) if _changed(ref, scope, k)]
            finals = [leaf for k in written for leaf in tu.tree_leaves(every[k]._value)]
            box_plans = []
            for i, box_aval, qdd, inner in boxes:
                qdd_out = inner.cur_qdd()
                lo = list(box_aval.read_loval(qdd_out, inner))
                finals.extend(lo)
                box_plans.append((i, box_aval, qdd, qdd_out, len(lo)))
            finals.extend(scope.finish_boxes())
            closed = trace.builder.build(trace, [*args, *scope.lifted_args], [*outs, *finals], dce)
        finally:
            scope.restore()
            del _SCOPES[trace]
    plan = None
    if scope.bound or boxes or scope.boxes:
        plan = RefPlan(
            tuple(positions), tuple(aliases), tuple(scope.lifted), tuple(written), tuple(box_plans)
        )
    return closed, len(outs), plan


def _changed(ref: Any, scope: _Scope, k: int) -> bool:
    """Whether the bound ``ref`` holds something else than the inputs it was bound to."""
    return [id(x) for x in tu.tree_leaves(ref._value)] != [id(x) for x in scope.starts[k]]
