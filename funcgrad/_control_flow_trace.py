"""Tracing the functions of structured control flow (``cond``/``switch`` branches,
``while_loop`` functions, ``scan`` bodies): the trace cache, the constants their traces made,
loop bodies whose carries keep their types.

Layer: surface, below ``funcgrad._control_flow`` (and ``funcgrad.lax.implicit``), which trace
their functions here. Imports the kernel (tracing, pytrees, the trace cache's keys), the
catalog's ``convert_element_type``, the control-flow errors and ``funcgrad._ref_errors``; Refs and
mutable boxes are seen through ``funcgrad.ref`` and ``funcgrad._control_flow_state`` when loaded
(found in ``sys.modules``: no Ref exists before), never imported.
"""

from __future__ import annotations

import builtins
import sys
import weakref
from collections.abc import Callable

import numpy as np

from funcgrad import _key_reuse
from funcgrad._api_util import flatten_outputs
from funcgrad._control_flow_errors import carry_structure_error, carry_type_error
from funcgrad._ref_errors import refuse_returned_refs
from funcgrad._sharding_types import check_carry_types
from funcgrad.kernel import batching, core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr
from funcgrad.kernel.partial_eval import convert_constvars_jaxpr, trace_to_jaxpr
from funcgrad.primitives import elementwise as ew

__all__ = [
    "at_the_top",
    "leaf_paths",
    "made_by",
    "state_module",
    "subtrees",
    "trace",
    "trace_loop_body",
    "with_constants",
]


# NOTE: [control-flow trace cache]
# As JAX's (its ``trace_to_jaxpr`` is a weakref LRU cache on the function), a body, branch or loop
# function traced again for the same input tree and types is not traced again: ``scan(f, ...)``
# called twice with the same ``f`` runs ``f``'s Python once (flax's nnx.scan counts its traces).
# Keyed weakly on the function object, then on (input tree, avals, named axes in scope, the
# thread's modes: x64, promotion flags, matmul precision, NOTE: [x64 mode per thread]);
# a trace whose constants hold tracers of an enclosing transformation, or that read or wrote a
# Ref (funcgrad.ref), is not kept. Like JAX's, a closure over a concrete array that is rebound
# between calls keeps the value of the first trace.
_TRACES = register_cache("control_flow.traces", weakref.WeakKeyDictionary())


def _scopes():
    """``funcgrad._ref_scopes`` (loaded with ``funcgrad.ref``); None while no Ref or box exists."""
    return sys.modules.get("funcgrad._ref_scopes")


def _hi_lowered(out):
    """A traced function's result with its immutable high-level values as their low-level values
    (raised back when its tree is unflattened: ``_ref_scopes.lower_hi_values``), as a jitted
    function's: a loop body may make such values of what it closes over (hijax_test
    test_hitypes_as_scan_captured)."""
    scopes = _scopes()
    return out if scopes is None or not scopes.HITYPES else scopes.lower_hi_values(out)


def _ref_accesses() -> int:
    scopes = _scopes()
    return scopes.ACCESSES[0] if scopes is not None else 0


def state_module():
    """``funcgrad._control_flow_state`` (Refs and boxes threaded through control flow), loaded
    with ``funcgrad.ref``; None while no Ref or mutable box can exist."""
    return sys.modules.get("funcgrad._control_flow_state")


def trace(fun: Callable, in_tree, in_avals, what: str, state: bool = False):
    """Trace ``fun(*unflatten(in_tree, leaves))``; returns (closed jaxpr without constants, the
    constants as leading operands, output tree). Cached (NOTE: [control-flow trace cache]).
    ``state``: raise ``LoopState`` when ``fun`` touches Refs or mutable boxes from outside (NOTE:
    [state in loop bodies] in funcgrad/_control_flow_state.py)."""
    key = (in_tree, tuple(in_avals), batching.axis_env(), hooks.mode_key())
    try:
        entries = _TRACES.get(fun)
        hit = entries.get(key) if entries is not None else None
    except TypeError:  # an unhashable callable, or one that cannot be referenced weakly
        entries, hit = False, None
    if hit is not None and not _key_reuse.active():  # (NOTE: [key reuse]: checked, it runs again)
        jaxpr, consts, out_tree = hit
        return jaxpr, list(consts), out_tree
    touched = _ref_accesses()
    jaxpr, consts, out_tree = _trace_now(fun, in_tree, in_avals, what, state)
    if (
        entries is not False
        and touched == _ref_accesses()
        and not any(isinstance(c, core.Tracer) for c in consts)
    ):
        try:
            _TRACES.setdefault(fun, {})[key] = (jaxpr, tuple(consts), out_tree)
        except TypeError:
            pass
    return jaxpr, consts, out_tree


# JAX's names of what a function is traced for (its errors say "traced for while_body")
_TRACED_FOR = {"while_loop body_fun": "while_body", "while_loop cond_fun": "while_cond"}


def _trace_now(fun: Callable, in_tree, in_avals, what: str, state: bool = False):
    box = []
    scopes = _scopes() if state else None
    found = []

    def flat(*leaves):
        if scopes is None:
            out = _hi_lowered(_key_reuse.traced_body(fun, tu.tree_unflatten(in_tree, leaves)))
            out_leaves, out_tree = flatten_outputs(out, what)
            box.append(out_tree)
            return out_leaves
        with scopes.discover_state(record=True) as discovery:
            out = _hi_lowered(_key_reuse.traced_body(fun, tu.tree_unflatten(in_tree, leaves)))
            refuse_returned_refs(out, what, fun, _TRACED_FOR.get(what, what.split(" ")[0]))
            out_leaves, out_tree = flatten_outputs(out, what)
            box.append(out_tree)
            if not discovery.scope.lifted:
                return out_leaves
            finals = discovery.finals()
            if finals is None:  # (a mutable box: its state may change structure; traced again)
                raise state_module().LoopState(list(discovery.scope.lifted))
            found.append((discovery, len(out_leaves)))
            return [*out_leaves, *finals]

    made: list[bool] = []
    closed = trace_to_jaxpr(flat, in_avals, description=what, made=made)
    if found:
        # NOTE: [state in loop bodies]: the trace, with the Refs' values as extra inputs, is kept
        discovery, n_out = found[0]
        recorded = (discovery.completed(closed), in_tree, list(in_avals), box[0], n_out)
        raise state_module().LoopState(list(discovery.scope.lifted), recorded)
    jaxpr, consts = convert_constvars_jaxpr(closed)
    traced = ClosedJaxpr(jaxpr, [])
    if any(made):  # (NOTE: [eager loops keep only what their trace made])
        _MADE[traced] = frozenset(id(c) for c, m in zip(consts, made) if m)
    return traced, consts, box[0]


# NOTE: [eager loops keep only what their trace made]
# A loop bound at the top (plain eager evaluation, NOTE: [eager control flow is compiled]) passes
# the arrays its traced functions close over as operands, as JAX's (``cond_nconsts``,
# ``body_nconsts``, scan's ``num_consts``): the compiled program does not depend on their values,
# so a loop whose body is a fresh closure over new arrays at every call (``scipy.special.hyp2f1``'s
# series, an optimiser's step) finds its compiled program by the lowered text instead of compiling
# again. What the trace itself computed from no inputs (NOTE: [constants a trace made]: a
# ``linspace`` inside the body, which JAX stages as equations XLA folds; ``arange``, ``eye`` and
# ``tri`` stage JAX's ``iota`` equations themselves) is bound as a constant of the loop's jaxprs
# instead, so XLA sees and simplifies it as under ``jit`` (whose program holds the constants of the
# enclosing function as constants): the eager loop gives jit's bits, and JAX's (optax's L-BFGS
# notebook).
# Captured arrays are operands in JAX's eager loops and constants under its ``jit`` as in
# funcgrad's, so eager and jit compare as JAX's do. Python scalars are literals either way. The
# constants of a cached trace are the same objects at every call (NOTE: [control-flow trace
# cache]), so the rewritten jaxpr is memoised on them and a repeated loop finds its program. Under
# a transformation every constant stays an operand, which the transformation sees (NOTE:
# [control-flow jaxprs have no tracer constants]).
# Per traced jaxpr (the result of ``_trace_now``, held weakly): the ids of the constants its trace
# made (held by the trace's constants, so the ids stay theirs).
_MADE = register_cache("control_flow.made_constants", weakref.WeakKeyDictionary())
_WITH_CONSTANTS = register_cache("control_flow.with_constants", weakref.WeakKeyDictionary())


def at_the_top() -> bool:
    return type(core.current_trace()) is core.EvalTrace


def made_by(*traced: ClosedJaxpr) -> frozenset:
    """The ids of the constants the traces of ``traced`` made (NOTE: [eager loops keep only what
    their trace made])."""
    return frozenset().union(*(_MADE.get(j, ()) for j in traced))


def with_constants(closed: ClosedJaxpr, consts: list, made: frozenset):
    """``(closed, consts)`` for a loop's bind: at the top, ``closed`` with the leading inputs whose
    constants its trace made (ids in ``made``) bound to them as its own constants, and the other
    constants as operands (NOTE: [eager loops keep only what their trace made]); elsewhere as they
    are."""
    if not consts or not made or not at_the_top():
        return closed, consts
    keep = tuple(id(c) in made for c in consts)
    if not any(keep):
        return closed, consts
    bound_consts = tuple(c for c, k in zip(consts, keep) if k)
    operands = [c for c, k in zip(consts, keep) if not k]
    hit = _WITH_CONSTANTS.get(closed)
    if hit is not None and hit[0] == keep and all(a is b for a, b in zip(hit[1], bound_consts)):
        return hit[2], operands
    j, n = closed.jaxpr, len(consts)
    constvars = [v for v, k in zip(j.invars[:n], keep) if k]
    invars = [v for v, k in zip(j.invars[:n], keep) if not k]
    bound = ClosedJaxpr(
        Jaxpr([*j.constvars, *constvars], [*invars, *j.invars[n:]], j.eqns, j.outvars),
        [*closed.consts, *bound_consts],
    )
    _WITH_CONSTANTS[closed] = (keep, bound_consts, bound)
    return bound, operands


def leaf_paths(tree_def) -> list[str]:
    example = tu.tree_unflatten(tree_def, builtins.range(tree_def.num_leaves))
    return [tu.keystr(p) or "(the value)" for p, _ in tu.tree_leaves_with_path(example)]


def subtrees(out_tree, out_avals):
    """Split the tree of a ``(carry, y)`` pair (JAX's error for another output, with its types)."""
    # (split by the tree's nodes: a high-level value's node raises its leaves when unflattened)
    node = out_tree.node_data()
    kids = out_tree.children()
    if node is None or not issubclass(node[0], tuple | list) or len(kids) != 2:
        raise TypeError(f"scan body output must be a pair, got {tu.tree_unflatten(out_tree, out_avals)}.")
    return kids[0], kids[1]


def _convert_init(x, dtype, weak: bool):
    """A promoted initial carry: a concrete value (a Python scalar) converted now, as JAX does (no
    equation: it is a literal of the new type); a traced one by ``convert_element_type``."""
    if not isinstance(x, core.Tracer):
        value = core.concrete_value(x)
        if value is not None:
            return Array._from_owned(np.asarray(value, dtype), weak)
    return ew.convert_element_type(x, dtype, weak)


def _promoted_carry(a, o):
    """The dtype a weakly typed input carry ``a`` is promoted to beside the body's output ``o``."""
    try:
        return _dt.result_type((a.dtype, True), (o.dtype, o.weak_type))[0]
    except (TypeError, ValueError):  # (an extended dtype promotes with nothing)
        return None


def trace_loop_body(fun, init, extra_avals, in_tree_of, what: str, carry_tree_of, state: bool = False):
    """Trace a loop body whose carry must keep its type; weakly typed carries take the body's
    dtype (the body is traced again then). Returns (jaxpr, consts, out_tree, carry leaves)."""
    init_flat, carry_tree = tu.tree_flatten(init)
    carry_avals = [core.get_aval(x) for x in init_flat]
    paths = leaf_paths(carry_tree)
    jax_name = "scan body" if what.startswith("scan") else "while_loop body"  # (JAX's words)
    for _ in builtins.range(3):
        jaxpr, consts, out_tree = trace(
            fun, in_tree_of(carry_avals), [*carry_avals, *extra_avals], what, state
        )
        out_carry_tree = carry_tree_of(out_tree, jaxpr.out_avals)
        if out_carry_tree != carry_tree:
            n = out_carry_tree.num_leaves  # (the carry's leaves lead the outputs)
            raise carry_structure_error(
                jax_name, fun, carry_tree, carry_avals, out_carry_tree, jaxpr.out_avals[:n]
            )
        outs = jaxpr.out_avals[: len(carry_avals)]
        # (a weakly typed carry is promoted with the body's output, JAX's _promote_weak_typed_inputs:
        # a weak float carry that the body makes an int32 stays float32, a mismatch; a weak int
        # carry made float32 becomes float32)
        bad = [
            i
            for i, (a, o) in enumerate(zip(carry_avals, outs))
            if a.shape != o.shape
            or (a.dtype != o.dtype and (not a.weak_type or _promoted_carry(a, o) != o.dtype))
        ]
        if bad:
            keys = [p for p, _ in tu.tree_leaves_with_path(tu.tree_unflatten(carry_tree, carry_avals))]
            ins, got = [carry_avals[i] for i in bad], [outs[i] for i in bad]
            raise carry_type_error(jax_name, fun, [keys[i] for i in bad], ins, got)
        new_avals = []
        for a, o in zip(carry_avals, outs):
            # As JAX: only a weakly typed carry whose dtype the body changes is promoted (and the
            # body traced again), converted to a strong value of the body's dtype (JAX's
            # convert_element_type); a weak input carry with an output of its dtype stays.
            new_avals.append(
                a.update(dtype=o.dtype, weak_type=False) if a.weak_type and a.dtype != o.dtype else a
            )
        # On explicit mesh axes a sharding is part of the type (NOTE: [sharding in types]).
        check_carry_types(
            what.rsplit(" ", 1)[0], fun, paths, carry_avals, jaxpr.out_avals[: len(carry_avals)]
        )
        if new_avals == carry_avals:
            break
        carry_avals = new_avals
    init_flat = [
        x if core.get_aval(x) == a else _convert_init(x, a.dtype, a.weak_type)
        for x, a in zip(init_flat, carry_avals)
    ]
    return jaxpr, consts, out_tree, init_flat
