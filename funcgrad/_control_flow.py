"""Structured control flow: ``cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``, ``map``.

Layer: surface. Imports the kernel (core, tree_util, partial_eval), the primitive catalog
(``primitives.control_flow`` and a few array primitives), ``funcgrad._remat`` and
``funcgrad._control_flow_trace`` (the tracing of its functions: trace cache, constants) and
``funcgrad._control_flow_jaxprs`` (joining a cond's branches, read-only carries). Refs and
mutable boxes its functions touch are threaded by ``funcgrad._control_flow_state``, which calls
back into these functions and is found in ``sys.modules`` when loaded (with ``funcgrad.ref``).

Signatures and semantics are ``jax.lax``'s. Each function traces its Python callables to closed
jaxprs (every constant they capture becomes an explicit operand, see NOTE: [control-flow jaxprs
have no tracer constants]) and binds one primitive, so control flow is differentiable (jvp, grad,
hessian), batchable (vmap) and compiled as one StableHLO loop/conditional under ``jit``; without
``jit`` each primitive runs as a compiled program of its own, as JAX's (NOTE: [eager control flow is
compiled] in primitives/control_flow.py).

Beyond JAX:

- ``while_loop(..., max_steps=N)`` is differentiable in reverse mode: it is a scan of N steps
  whose body is ``cond(cond_fun(c), body_fun, identity, c)``, so finished iterations are identity
  steps (gradients pass through them unchanged) and the result is the state after at most N
  iterations; the steps are checkpointed and, from N = 64, run in chunks that are skipped once the
  loop has stopped (NOTE: [bounded while loops run in checkpointed chunks]).
- ``scan(..., checkpoint=True)`` (or a policy name/predicate of ``funcgrad.checkpoint``)
  recomputes each iteration's forward pass during backward: only the carries (and the xs) are
  stored per step. ``checkpoint="sqrt"`` nests two scans (chunks of ~sqrt(length) steps, each
  chunk checkpointed), storing O(sqrt(length)) carries plus one chunk's residuals at a time.

Carries keep their type across iterations; as in JAX, a weakly typed initial carry (a Python
scalar) takes the dtype the body gives it.

Caveat (as in JAX): under ``vmap`` a ``cond`` with a batched predicate runs every branch on every
lane and selects; in a backward pass the untaken branch then runs on the zero-filled residuals
of the taken one (its results are discarded by the select, but e.g. a division can warn).
"""

from __future__ import annotations

import builtins
import functools
import math
import operator
import sys
import weakref
from collections.abc import Callable, Sequence

import numpy as np

from funcgrad import _control_flow_eager as _eager  # (disable_jit: Python's branches and loops)
from funcgrad import _key_reuse
from funcgrad._control_flow_errors import branch_error
from funcgrad._control_flow_jaxprs import (
    carries_to_consts,
    forwarded_carries,
    joined_branches,
    merge_moved,
    reads,
)
from funcgrad._control_flow_trace import (
    at_the_top,
    leaf_paths,
    made_by,
    state_module,
    subtrees,
    trace,
    trace_loop_body,
    with_constants,
)
from funcgrad._disable_jit import jit_disabled  # NOTE: [disable_jit]
from funcgrad._remat import checkpoint as _checkpoint
from funcgrad._remat import checkpoint_policies
from funcgrad._sharding_types import scan_step_avals
from funcgrad.kernel import batching, core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.held_state import is_state
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr
from funcgrad.kernel.traceback_util import api_boundary as _api_boundary
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import structure as st
from funcgrad.primitives.control_flow import ReverseModeWhileLoopError, cond_p, while_p
from funcgrad.primitives.scan import scan_p

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map", "ReverseModeWhileLoopError"]

# ----------------------------------------------------------------------------------------------
# cond and switch


_NO_OPERAND = object()


def _operands(operands: tuple, operand, what: str) -> tuple:
    """JAX's older single ``operand=`` keyword (still accepted by JAX 0.10's cond and switch)."""
    if operand is _NO_OPERAND:
        return operands
    if operands:
        raise TypeError(
            f"{what}: if 'operand' keyword is passed then no positional operands can be passed, got "
            f"operand={operand!r} and positional operands {operands}"
        )
    return (operand,)


@_api_boundary  # NOTE: [traceback boundaries]
def cond(pred, true_fun: Callable, false_fun: Callable, *operands, operand=_NO_OPERAND):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, as one ``cond``
    primitive: both branches are traced (they must return the same types), only one runs.
    ``operand=x`` (JAX's older form) is ``cond(pred, true_fun, false_fun, x)``.

    >>> import funcgrad
    >>> f = lambda x: cond(x > 0, lambda y: y * 2.0, lambda y: -y, x)
    >>> float(f(3.0)), float(f(-1.0)), float(funcgrad.grad(f)(3.0))
    (6.0, 1.0, 2.0)
    """
    if not (callable(true_fun) and callable(false_fun)):
        # JAX's older convention, which it still accepts (blackjax's NUTS uses it):
        # cond(pred, true_operand, true_fun, false_operand, false_fun)
        if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
            x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
            return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x), x_true, x_false)
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    operands = _operands(operands, operand, "cond")
    if pred is None:
        raise TypeError("cond predicate is None")
    if isinstance(pred, Sequence):
        raise TypeError(f"Pred must be a scalar, got {pred} of type {type(pred)}")
    pred = _predicate(pred, _pred_error)
    if not isinstance(pred, core.Tracer) and jit_disabled():
        return true_fun(*operands) if pred else false_fun(*operands)  # (JAX's, under disable_jit)
    index = np.int32(pred) if isinstance(pred, bool | np.bool_) else ew.convert_element_type(pred, np.int32)
    return _bind_cond(index, [false_fun, true_fun], operands, ["false_fun", "true_fun"], "cond")


def _predicate(pred, refuse):
    """``pred`` as a boolean scalar: a number means ``pred != 0``, as in JAX's ``cond``. What is not
    a scalar boolean or number raises ``refuse(pred, aval)``, the caller's error (``aval`` None:
    ``pred`` is not an array)."""
    try:
        aval = core.get_aval(pred)
    except TypeError as e:
        raise refuse(pred, None) from e
    if aval.shape != () or aval.dtype.kind not in "biuf":
        raise refuse(pred, aval)
    if aval.dtype != np.bool_:
        pred = ew.ne_p.bind(pred, np.zeros((), aval.dtype))
    return pred


def _pred_error(pred, aval) -> TypeError:  # (cond's, JAX's words)
    if aval is not None and aval.shape != ():
        return TypeError(
            f"Pred must be a scalar, got {pred} of shape {aval.shape}. "
            "(To select elementwise use funcgrad.numpy.where.)"
        )
    return TypeError(
        f"Pred type must be either boolean or number, got {pred if aval is None else aval.dtype}."
    )


@_api_boundary  # NOTE: [traceback boundaries]
def switch(index, branches: Sequence[Callable], *operands, operand=_NO_OPERAND):
    """``branches[index](*operands)`` with ``index`` clamped to ``[0, len(branches) - 1]``
    (``operand=x``, JAX's older form, is one operand ``x``).

    >>> float(switch(5, [lambda x: x, lambda x: x * 10.0], 2.0))
    20.0
    """
    branches = list(branches)
    if not all(callable(b) for b in branches):
        raise TypeError("lax.switch: branches argument should be a sequence of callables.")
    operands = _operands(operands, operand, "switch")
    if np.ndim(index) != 0:
        raise TypeError(f"Branch index must be scalar, got {index} of shape {np.shape(index)}.")
    try:
        aval = core.get_aval(index)
    except TypeError as e:
        raise TypeError(f"Index type must be an integer, got {index}.") from e
    if aval.dtype.kind not in "iu":
        raise TypeError(f"Index type must be an integer, got {index} as {aval.dtype}")
    if not branches:
        raise ValueError("Empty branch sequence")
    if len(branches) == 1:
        return branches[0](*operands)
    index = ew.convert_element_type(index, np.int32)
    index = ew.clamp_p.bind(np.int32(0), index, np.int32(len(branches) - 1))
    if not isinstance(index, core.Tracer) and jit_disabled():
        return branches[int(index)](*operands)  # (JAX's, under disable_jit)
    names = [f"branches[{i}]" for i in builtins.range(len(branches))]
    return _bind_cond(index, branches, operands, names, "switch")


def _hi_values_lowered(funs, tree):
    """``funcgrad._ref_scopes.hi_values_lowered`` (a module above this one, loaded by then)."""
    scopes = sys.modules.get("funcgrad._ref_scopes")
    return (funs, tree) if scopes is None else scopes.hi_values_lowered(funs, tree)


def _boxes_closed_over(branches, operands):
    """``(branches, operands)`` with the mutable high-level operands (hijax boxes, flax's hijax
    Variables) taken out of the operands and closed over by the branches, which then thread them
    as the boxes they close over (NOTE: [state in loop bodies]), as JAX's cond does its box
    operands (hijax_test test_cond_box_arg)."""
    scopes = sys.modules.get("funcgrad._ref_scopes")
    if scopes is None or not scopes.HITYPES:
        return branches, operands
    leaves, tree = tu.tree_flatten(operands)
    boxes = {
        i: x for i, x in enumerate(leaves) if type(x) in scopes.HITYPES and scopes.box_type(x) is not None
    }
    if not boxes:
        return branches, operands
    rest = [x for i, x in enumerate(leaves) if i not in boxes]

    def closing(branch):
        @functools.wraps(branch)
        def closed(*given):
            it = iter(given)
            return branch(
                *tu.tree_unflatten(
                    tree, [boxes[i] if i in boxes else next(it) for i in builtins.range(len(leaves))]
                )
            )

        return closed

    return [closing(b) for b in branches], tuple(rest)


def platform_switch(index, branches, operands, branches_platforms):
    """``switch`` on a staged ``platform_index`` whose cond records the branches' platforms
    (``lax.platform_dependent``; NOTE: [platform-dependent conds] in primitives/control_flow.py)."""
    names = [f"branches[{i}]" for i in builtins.range(len(branches))]
    return _bind_cond(index, branches, operands, names, "switch", branches_platforms)


def _bind_cond(index, branches, operands, names, what, branches_platforms=None):
    branches, operands = _boxes_closed_over(branches, operands)
    # (immutable high-level operands as their low-level values: hijax_test's tuples and boxes)
    branches, operands = _hi_values_lowered(branches, operands)
    state = state_module()
    if state is not None and any(is_state(x) for x in tu.tree_leaves(operands)):
        branches, operands = state.held_cond_operands(branches, operands, what)
    flat_ops, ops_tree = tu.tree_flatten(operands)
    avals = [core.get_aval(x) for x in flat_ops]
    traced, found, key_effects = [], {}, []
    for k, (b, n) in enumerate(zip(branches, names)):
        try:
            traced.append(trace(b, ops_tree, avals, f"{what} {n}", state=state is not None))
            key_effects.append(_key_reuse.take_effects())
        except Exception as e:
            if state is None or not isinstance(e, state.LoopState):
                raise
            found[k] = e
    if found:
        return state.cond_with_state(index, branches, operands, names, what, found)
    _key_reuse.check_branches(key_effects, _key_reuse.keys_in(operands))  # NOTE: [key reuse]
    _check_branch_outputs(traced, branches, what)
    all_consts = [c for _, consts, _ in traced for c in consts]
    joined, forwarded = joined_branches([jaxpr for jaxpr, _, _ in traced], len(flat_ops))
    made = made_by(*(jaxpr for jaxpr, _, _ in traced))
    if all_consts and made and at_the_top():
        bound = [with_constants(b, all_consts, made) for b in joined]
        joined, all_consts = tuple(b for b, _ in bound), bound[0][1]
    computed = any(p is None for p in forwarded) or not forwarded
    bp = {} if branches_platforms is None else {"branches_platforms": branches_platforms}
    outs = iter(cond_p.bind(index, *all_consts, *flat_ops, branches=joined, **bp) if computed else ())
    outs = [next(outs) if p is None else _as_array(flat_ops[p], avals[p]) for p in forwarded]
    return tu.tree_unflatten(traced[0][2], outs)


def _as_array(x, aval):
    """A forwarded operand as the Array JAX's ``lax.asarray`` makes of it (a Python scalar or a
    NumPy array given to ``cond`` comes back an Array, as from any computation)."""
    if isinstance(x, Array | core.Tracer):
        return x
    return Array._from_owned(np.array(x, aval.dtype), aval.weak_type)


def _check_branch_outputs(traced, branches, what):
    """JAX's check that the branches return one structure and one type, in its words: ``cond``
    compares true_fun's outputs (``branches[1]``) with false_fun's, ``switch`` each branch's with
    branch 0's."""
    if what == "cond":
        pairs = [(1, 0, "true_fun", "false_fun")]
    else:
        pairs = [(0, i, "branch 0", f"branch{i}") for i in builtins.range(1, len(traced))]
    for a, b, name1, name2 in pairs:
        (ja, _, ta), (jb, _, tb) = traced[a], traced[b]
        err = branch_error(what, name1, name2, branches[a], branches[b], ta, ja.out_avals, tb, jb.out_avals)
        if err is not None:
            raise err


# ----------------------------------------------------------------------------------------------
# while_loop and fori_loop


@_api_boundary  # NOTE: [traceback boundaries]
def while_loop(cond_fun: Callable, body_fun: Callable, init_val, *, max_steps: int | None = None):
    """``val = init_val; while cond_fun(val): val = body_fun(val)`` as one ``while`` primitive.

    Forward mode (jvp) and vmap work as they are. Reverse mode needs a bound: with
    ``max_steps=N`` the loop runs at most N iterations as a scan and is differentiable.

    >>> import funcgrad
    >>> float(while_loop(lambda x: x < 10.0, lambda x: x * 2.0, 1.0))
    16.0
    >>> step = lambda a: (lambda x: abs(x * x - a) > 1e-12, lambda x: 0.5 * (x + a / x))
    >>> newton = lambda a: while_loop(*step(a), a, max_steps=50)
    >>> round(float(funcgrad.grad(newton)(4.0)), 6)  # d sqrt(a)/da = 1 / (2 sqrt(a))
    0.25
    """
    if not (callable(body_fun) and callable(cond_fun)):
        raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
    if max_steps is not None:
        return _bounded_while(cond_fun, body_fun, init_val, int(max_steps))
    if jit_disabled():
        out = _eager.while_loop(cond_fun, body_fun, init_val)  # (JAX's, under disable_jit)
        if out is not _eager.NO_RESULT:
            return out
    # (immutable high-level values in the carry as their low-level values: hijax_test's QArray)
    (cond_fun, body_fun), init_val = _hi_values_lowered((cond_fun, body_fun), init_val)
    carry_tree = tu.tree_structure(init_val)
    state = state_module()
    stage = "body"
    try:
        body, body_consts, _, init_flat = trace_loop_body(
            body_fun,
            init_val,
            [],
            lambda avals: tu.tree_structure((init_val,)),
            "while_loop body_fun",
            lambda t, _: t,
            state=state is not None,
        )
        body_keys = _key_reuse.take_effects()
        carry_avals = body.in_avals[len(body_consts) :]
        stage = "cond"
        cond_j, cond_consts, pred_tree = trace(
            cond_fun, tu.tree_structure((init_val,)), carry_avals, "while_loop cond_fun", state is not None
        )
    except Exception as e:
        if state is None or not isinstance(e, state.LoopState):
            raise
        return state.while_with_state(cond_fun, body_fun, init_val, {stage: e})
    # (NOTE: [key reuse]: JAX's rules for the keys of the carry and of the functions' closures)
    _key_reuse.check_while(body_keys, _key_reuse.take_effects(), _key_reuse.keys_in(init_val))
    made = made_by(body, cond_j)
    pred_avals = cond_j.out_avals
    if not tu.treedef_is_leaf(pred_tree) or len(pred_avals) != 1:  # (JAX's words)
        raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {pred_tree}.")
    if pred_avals[0].shape != () or pred_avals[0].dtype != np.bool_:
        raise TypeError(f"cond_fun must return a boolean scalar, but got output type(s) {list(pred_avals)}.")
    # A carry the body returns unchanged and the condition does not read is a constant of the body
    # (NOTE: [read-only carries]).
    nc = len(cond_consts)
    move = [
        f and not reads(cond_j.jaxpr, v)
        for f, v in zip(
            forwarded_carries(body.jaxpr, len(body_consts), len(init_flat)), cond_j.jaxpr.invars[nc:]
        )
    ]
    moved = [x for x, m in zip(init_flat, move) if m]
    if moved:
        body = carries_to_consts(body, len(body_consts), move)
        j = cond_j.jaxpr
        kept = [v for v, m in zip(j.invars[nc:], move) if not m]
        cond_j = ClosedJaxpr(Jaxpr(j.constvars, [*j.invars[:nc], *kept], j.eqns, j.outvars), cond_j.consts)
        body_consts = [*moved, *body_consts]
        init_flat = [x for x, m in zip(init_flat, move) if not m]
    cond_j, cond_consts = with_constants(cond_j, cond_consts, made)
    body, body_consts = with_constants(body, body_consts, made)
    outs = while_p.bind(
        *cond_consts, *body_consts, *init_flat, cond_jaxpr=cond_j, body_jaxpr=body,
        cond_nconsts=len(cond_consts), body_nconsts=len(body_consts),
    )  # fmt: skip
    return tu.tree_unflatten(carry_tree, merge_moved(move, outs, moved))


def _bounded_while(cond_fun, body_fun, init_val, max_steps: int):
    """``while_loop(..., max_steps=N)``: at most N iterations, differentiable in reverse mode
    (NOTE: [bounded while loops run in checkpointed chunks])."""
    # each step's residuals are recomputed in the backward pass, but products (kept)
    policy = checkpoint_policies.dots_saveable

    def step(state, _):
        carry, _, i = state
        running = _and_below(cond_fun(carry), i, max_steps)
        return (cond(running, body_fun, lambda c: c, carry), running, i + 1), None

    init = (init_val, np.bool_(True), np.int32(0))
    if max_steps < _CHUNKED_FROM:
        return scan(step, init, None, length=max_steps, checkpoint=policy)[0][0]
    k = math.isqrt(max_steps)

    def chunk(state, _):
        steps = lambda s: scan(step, s, None, length=k, checkpoint=policy)[0]  # noqa: E731
        return cond(state[1], steps, lambda s: s, state), None

    return scan(chunk, init, None, length=-(-max_steps // k))[0][0]


_CHUNKED_FROM = 64  # below, one scan of max_steps steps (chunks cost more compile time than they save)


def _and_below(pred, i, bound: int):
    """``pred and i < bound``, a boolean scalar (a number ``pred`` means ``pred != 0``, as in
    ``cond``)."""
    pred = _predicate(pred, _cond_fun_error)
    return ew.and_p.bind(
        np.asarray(pred) if isinstance(pred, bool) else pred, ew.lt_p.bind(i, np.int32(bound))
    )


def _cond_fun_error(pred, aval) -> TypeError:  # (while_loop's words)
    got = f"{pred!r}" if aval is None else f"output type(s) [{aval}]"
    return TypeError(f"cond_fun must return a boolean scalar, but got {got}.")


# NOTE: [bounded while loops run in checkpointed chunks]
# ``while_loop(..., max_steps=N)`` runs steps ``cond(cond_fun(c) and i < N, body_fun, identity)``,
# so its result is the state after at most N iterations and finished steps pass gradients through
# unchanged. Each step is checkpointed (products kept, the rest recomputed in the backward pass):
# the backward pass reads the carries instead of every intermediate, and on XLA's CPU runtime a
# small body's cost is mostly one dynamic slice or update per stored value per step. From N = 64
# the steps run in ceil(N / k) chunks of k = isqrt(N) (a scan of ``cond``s): a chunk runs only
# while the loop was still running at the end of the previous one, so a loop that stops after n
# steps costs about n + k steps and N / k skipped chunks, forward and backward, instead of N of
# each. ``cond_fun`` and ``body_fun`` are traced once each, as in ``while_loop``. GradBench's
# particle (reverse mode over a 512-bound Euler loop of ~355 steps, inside a descent): 76 -> 26 ms
# checkpointed, 12 ms in chunks; the chunks' program compiles in about twice the time.


def _static_int(x, message: str) -> int:
    """``int(x)`` of a parameter that must be known while tracing; a traced ``x`` is JAX's
    ConcretizationTypeError with ``message`` first."""
    try:
        return int(x)
    except core.ConcretizationTypeError as e:
        raise type(e)(f"{message}\n{e}") from None


def _concrete_int(x):
    """A concrete bound as a Python int (JAX's ``int(lower)``: a float bound is truncated), else None."""
    if isinstance(x, core.Tracer):
        return None
    v = core.concrete_value(x)
    return None if v is None else int(v)


def _bound_type(x):
    """(dtype, weak) of a fori_loop bound: a real scalar (JAX takes float bounds too)."""
    aval = core.get_aval(x)
    if aval.shape != () or aval.dtype.kind not in "biuf":
        raise TypeError(f"fori_loop: bounds must be real scalars, got {aval.str_short()}")
    return aval.dtype, aval.weak_type


@_api_boundary  # NOTE: [traceback boundaries]
def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll: int | bool | None = None):
    """``for i in range(lower, upper): val = body_fun(i, val)``.

    As in JAX: with concrete bounds it is a ``scan`` over ``upper - lower`` steps whose counter
    starts at the Python int ``lower`` (reverse-mode differentiable); with traced bounds a
    ``while_loop`` over ``(i, upper, val)``. The bounds' dtypes must agree, except that a weakly
    typed bound (a Python int) takes the other's.

    >>> import funcgrad
    >>> f = lambda x: fori_loop(0, 3, lambda i, v: v * x, 1.0)
    >>> float(f(2.0)), float(funcgrad.grad(f)(2.0))
    (8.0, 12.0)
    """
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    (lo_dtype, lo_weak), (hi_dtype, hi_weak) = _bound_type(lower), _bound_type(upper)
    signed = lo_dtype.kind == "i" and hi_dtype.kind == "i"  # (JAX: only signed ints promote weakly)
    if lo_dtype == hi_dtype:
        dtype = lo_dtype
    elif signed and lo_weak and not hi_weak:
        dtype = hi_dtype
    elif signed and hi_weak and not lo_weak:
        dtype = lo_dtype
    else:
        raise TypeError(
            f"lower and upper arguments to fori_loop must have equal types, got {lo_dtype.name} and "
            f"{hi_dtype.name}"
        )
    lo, hi = _concrete_int(lower), _concrete_int(upper)
    scan_body, while_body = _fori_bodies(body_fun)
    if lo is not None and hi is not None:
        if hi <= lo and jit_disabled():
            return init_val  # (JAX's: its Python scan refuses no step)
        (_, out), _ = scan(scan_body, (lo, init_val), None, length=max(0, hi - lo), unroll=unroll or 1)
        return out
    if unroll not in (None, False, 1):
        raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are statically known.")
    if lo_dtype != dtype:
        lower = ew.convert_element_type(lower, dtype)
    if hi_dtype != dtype:
        upper = ew.convert_element_type(upper, dtype)

    _, _, out = while_loop(_fori_cond, while_body, (lower, upper, init_val))
    return out


# The loop bodies fori_loop makes of a ``body_fun``, one pair per function (held weakly), so that
# the trace cache knows them again (NOTE: [control-flow trace cache]), as JAX's.
_FORI_BODIES = register_cache("control_flow.fori_bodies", weakref.WeakKeyDictionary())


def _fori_bodies(body_fun):
    try:
        pair = _FORI_BODIES.get(body_fun)
    except TypeError:
        pair, body_ref = None, lambda: body_fun  # not hashable: a fresh pair each time
    else:
        body_ref = weakref.ref(body_fun) if pair is None else None
    if pair is not None:
        return pair

    def scan_body(loop_carry, _):  # (JAX's parameter names, which its carry errors print)
        i, val = loop_carry
        return (i + 1, body_ref()(i, val)), None

    def while_body(loop_carry):
        i, hi_, val = loop_carry
        return ew.add(i, np.ones((), core.get_aval(i).dtype)), hi_, body_ref()(i, val)

    pair = (scan_body, while_body)
    try:
        _FORI_BODIES[body_fun] = pair
    except TypeError:
        pass
    return pair


def _fori_cond(c):
    return ew.lt_p.bind(c[0], c[1])


# ----------------------------------------------------------------------------------------------
# scan and map


@_api_boundary  # NOTE: [traceback boundaries]
def scan(
    f: Callable,
    init,
    xs=None,
    length: int | None = None,
    reverse: bool = False,
    unroll: int | bool = 1,
    *,
    checkpoint: bool | str | Callable = False,
    _split_transpose: bool = False,
):
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns
    ``(final carry, stacked ys)``, like ``jax.lax.scan``.

    ``_split_transpose`` is JAX's private hint on how to split the transposed loop (flax passes
    it); it changes no value, so it is accepted and has no effect.

    ``checkpoint=True`` (or a ``funcgrad.checkpoint`` policy) stores only the carries per step and
    recomputes each step's forward pass during backward; ``checkpoint="sqrt"`` stores
    ~sqrt(length) carries (chunks of ~sqrt(length) steps, each recomputed once).

    >>> import numpy as np
    >>> carry, ys = scan(lambda c, x: (c + x, c * 1.0), 0.0, np.arange(4.0))
    >>> float(carry), ys.tolist()
    (6.0, [0.0, 0.0, 1.0, 3.0])
    """
    if not callable(f):
        raise TypeError("lax.scan: f argument should be a callable.")
    # (immutable high-level values in the carry or xs as their low-level values, each step's
    # raised back for ``f``: hijax_test's tuples)
    given = (init, xs)  # (as given, for the loop Python runs under disable_jit)
    (f,), (init, xs2) = _hi_values_lowered((f,), (init, xs))
    if xs2 is not xs and length is None and _hi_values_lowered((), xs)[1] is not xs:
        raise ValueError("must provide `length` to `scan`")  # (JAX's, for high-level xs)
    xs = xs2
    xs_flat, xs_tree = tu.tree_flatten(xs)
    xs_avals = [x.aval if is_state(x) else core.get_aval(x) for x in xs_flat]
    paths = leaf_paths(xs_tree)
    for path, a in zip(paths, xs_avals):
        if a.ndim == 0:
            raise ValueError(  # (JAX's words and type)
                f"scan got value with no leading axis to scan over: xs{path} is a scalar "
                f"({a.str_short()}); scanned arrays need a leading axis"
            )
    lengths = {a.shape[0] for a in xs_avals}
    if length is not None:
        length = _static_int(
            length,
            "The `length` argument to `scan` expects a concrete `int` value. For scan-like iteration "
            "with a dynamic length, use `while_loop` or `fori_loop`.",
        )
        if len(lengths) == 1 and length not in lengths:  # (JAX's words)
            raise ValueError(
                f"scan got `length` argument of {length} which disagrees with leading axis sizes "
                f"{sorted(lengths)}."
            )
        lengths.add(length)
    if len(lengths) > 1:
        found = ", ".join(f"xs{p}: {a.str_short()}" for p, a in zip(paths, xs_avals))
        raise ValueError(
            "scan: every xs leaf needs the same leading axis size "
            f"(and length={length} if given); got {found}"
        )
    if not lengths:
        raise ValueError("scan: length must be given when xs is None (or has no leaves)")
    (length,) = lengths
    state = state_module()
    refs = state is not None and any(is_state(x) for x in tu.tree_leaves((init, xs)))
    if not refs and jit_disabled():
        return _eager.scan_loop(f, *given, length, reverse)  # (JAX's, under disable_jit)
    if refs:
        f, xs = state.scanned_refs(f, init, xs, length)
        xs_flat, xs_tree = tu.tree_flatten(xs)
        xs_avals = [core.get_aval(x) for x in xs_flat]
    if not isinstance(unroll, bool):
        unroll = _static_int(
            unroll, "The `unroll` argument to `scan` expects a concrete `int` or `bool` value."
        )
    if not isinstance(unroll, bool) and unroll < 0:
        raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
    unroll = length if unroll is True else 1 if unroll is False else max(1, unroll)
    if isinstance(checkpoint, str) and checkpoint == "sqrt":
        return _scan_sqrt(f, init, xs, length, reverse, unroll)
    if checkpoint is not False and checkpoint is not None:
        f = _checkpoint(f, policy=None if checkpoint is True else checkpoint)
    x_avals = scan_step_avals(xs_avals)
    trees = {}

    def carry_tree_of(out_tree, out_avals):
        trees["carry"], trees["y"] = subtrees(out_tree, out_avals)
        return trees["carry"]

    in_tree = tu.tree_structure((init, xs))
    try:
        body, consts, _, init_flat = trace_loop_body(
            f, init, x_avals, lambda _: in_tree, "scan body f", carry_tree_of, state=True
        )
    except Exception as e:
        state = state_module()
        if state is None or not isinstance(e, state.LoopState):
            raise
        return state.scan_with_state(f, init, xs, e, length, reverse, unroll)
    # (NOTE: [key reuse]: JAX's rules for the keys of the carry and of the body's closure)
    carried = _key_reuse.keys_in(init)
    _key_reuse.check_scan(_key_reuse.take_effects(), len(carried), [*carried, *_key_reuse.keys_in(xs)])
    made = made_by(body)
    move = forwarded_carries(body.jaxpr, len(consts), len(init_flat))  # (NOTE: [read-only carries])
    moved = [x for x, m in zip(init_flat, move) if m]
    if moved:
        body = carries_to_consts(body, len(consts), move)
        consts = [*moved, *consts]
        init_flat = [x for x, m in zip(init_flat, move) if not m]
    body, consts = with_constants(body, consts, made)
    outs = scan_p.bind(
        *consts, *init_flat, *xs_flat, jaxpr=body, num_consts=len(consts), num_carry=len(init_flat),
        length=length, reverse=bool(reverse), unroll=unroll,
    )  # fmt: skip
    outs = merge_moved(move, outs, moved)
    n = len(move)
    return tu.tree_unflatten(trees["carry"], outs[:n]), tu.tree_unflatten(trees["y"], outs[n:])


def _scan_sqrt(f, init, xs, length: int, reverse: bool, unroll: int):
    """sqrt(length) checkpointing: an outer scan over chunks whose body (a checkpointed inner scan
    of ``k`` steps) is recomputed during backward; a remainder of ``length % k`` steps runs as a
    plain scan."""
    k = max(1, math.isqrt(length))
    n_outer = length // k
    main = n_outer * k
    rest = length - main

    def chunked(x):
        shape = core.get_aval(x).shape
        return st.reshape(st.slice_in_dim(x, 0, main), (n_outer, k, *shape[1:]))

    xs_main = tu.tree_map(chunked, xs)
    xs_rest = tu.tree_map(lambda x: st.slice_in_dim(x, main, length), xs)
    inner = _checkpoint(lambda c, chunk: scan(f, c, chunk, length=k, reverse=reverse, unroll=unroll))

    def run_main(c):
        c, ys = scan(inner, c, xs_main, length=n_outer, reverse=reverse)
        return c, tu.tree_map(lambda y: st.reshape(y, (main, *core.get_aval(y).shape[2:])), ys)

    def run_rest(c):
        return scan(f, c, xs_rest, length=rest, reverse=reverse, unroll=unroll)

    if not rest:
        return run_main(init)
    if reverse:
        c, ys_rest = run_rest(init)
        c, ys_main = run_main(c)
    else:
        c, ys_main = run_main(init)
        c, ys_rest = run_rest(c)
    return c, tu.tree_map(lambda a, b: st.concatenate([a, b], 0), ys_main, ys_rest)


@_api_boundary  # NOTE: [traceback boundaries]
def map(f: Callable, xs, *, batch_size: int | None = None):  # noqa: A001 - jax.lax.map's name
    """``stack([f(x) for x in xs])`` as a scan (one compiled loop; memory of one step at a time).
    With ``batch_size``, each step applies ``vmap(f)`` to ``batch_size`` elements, and the
    remainder (``len(xs) % batch_size``) is one more ``vmap(f)`` after the loop, as in JAX.

    >>> map(lambda x: x * 2.0, np.arange(3.0)).tolist()
    [0.0, 2.0, 4.0]
    >>> map(lambda x: x * 2.0, np.arange(5.0), batch_size=2).tolist()
    [0.0, 2.0, 4.0, 6.0, 8.0]
    """
    if batch_size is None:
        _, ys = scan(lambda c, x: (c, f(x)), (), xs)
        return ys
    leaves = tu.tree_leaves(xs)
    batch_size = operator.index(batch_size)
    if batch_size < 0:
        raise ValueError(f"lax.map: batch_size must be a non-negative integer, got {batch_size}")
    if not leaves:
        raise ValueError("lax.map: xs holds no arrays to map over")
    n = core.get_aval(leaves[0]).shape[0]

    def vmap(g):  # (funcgrad.api's vmap of a pytree function, from the kernel's batching)
        def mapped(x):
            flat_x, x_tree = tu.tree_flatten(x)
            size = core.get_aval(flat_x[0]).shape[0]
            trees = []

            def flat(*v):
                leaves_out, tree = tu.tree_flatten(g(tu.tree_unflatten(x_tree, v)))
                trees.append(tree)
                return leaves_out

            outs = batching.vmap_flat(
                flat, size, [0] * len(flat_x), lambda: [0] * trees[0].num_leaves, flat_x
            )
            return tu.tree_unflatten(trees[0], outs)

        return mapped

    num_batches, rest = divmod(n, batch_size) if batch_size else (0, n)
    whole = num_batches * batch_size

    def batched(x):
        tail = core.get_aval(x).shape[1:]
        return st.reshape(
            st.slice_(x, (0,) * (1 + len(tail)), (whole, *tail)), (num_batches, batch_size, *tail)
        )

    def remainder(x):
        shape = core.get_aval(x).shape
        return st.slice_(x, (whole,) + (0,) * (len(shape) - 1), shape)

    ys_main = ys_rest = None
    if num_batches:
        _, ys_main = scan(lambda c, x: (c, vmap(f)(x)), (), tu.tree_map(batched, xs))
        ys_main = tu.tree_map(lambda y: st.reshape(y, (whole, *core.get_aval(y).shape[2:])), ys_main)
    if rest or not num_batches:  # (JAX's: with no whole batch, the remainder -- even empty -- is one vmap)
        ys_rest = vmap(f)(tu.tree_map(remainder, xs))
    if ys_main is None:
        return ys_rest
    if ys_rest is None:
        return ys_main
    return tu.tree_map(lambda a, b: st.concatenate([a, b], 0), ys_main, ys_rest)
