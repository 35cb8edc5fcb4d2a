"""``checkpoint`` (alias ``remat``): recompute a function's forward pass during backward instead of
saving its residuals.

Layer: surface. Imports the kernel and the primitive catalog (``primitives.remat`` holds the
``checkpoint`` primitive and its saving policies).
"""

from __future__ import annotations

import functools
import inspect
import sys
import weakref
from collections.abc import Callable

from funcgrad._api_util import canonical_numpy
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.held_state import Held
from funcgrad.kernel.partial_eval import close_over_tracers, trace_to_jaxpr
from funcgrad.primitives.remat import checkpoint_p, checkpoint_policies, resolve_policy

__all__ = ["checkpoint", "remat", "checkpoint_policies", "checkpoint_p"]
# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = ("checkpoint_policies",)


# NOTE: [checkpoint trace cache]
# ``checkpoint`` stages ``fun`` once per (argument structure, avals, static arguments) when the
# staged program closes over no tracer, as JAX caches its checkpoint's trace per function: an eager
# call does not re-trace, and the programs derived from the staged one (JVP, partial evaluation)
# are found again by identity (NOTE: [derived jaxpr cache]). As in JAX, a function that reads a
# global changed since its first call with those types keeps that first call's program (JAX's
# gradient-checkpointing tutorial shows it). A trace that hoisted tracers belongs to its trace:
# never cached. fun -> {key: (closed jaxpr, out_tree)}
_TRACES: weakref.WeakKeyDictionary = register_cache("remat.traces", weakref.WeakKeyDictionary())

# NOTE: [state in checkpointed functions]
# A checkpointed function that touches Refs from outside (closed over, or passed in: those are
# closed over, NOTE: [held state operands]) carries their values as NOTE: [state in loop bodies]
# does: its one trace is a discovery scope, completed with the Refs' values as extra inputs and
# their final values as extra outputs, written back after the call. Recomputed during backward, it
# does not write them again (JAX's ``kind='no_grad_no_remat'`` Refs).


def checkpoint(
    fun: Callable, *, prevent_cse: bool = True, policy=None, static_argnums=(), static_argnames=()
):
    """Make ``fun`` recompute its forward pass during backward instead of storing residuals.

    ``policy`` chooses what is saved anyway (``checkpoint_policies``, JAX's policies; a predicate
    ``policy(primitive, *avals, **params)``). ``static_argnums``/``static_argnames`` are passed to
    ``fun`` unchanged. ``prevent_cse``: the recomputation always runs behind an optimisation
    barrier (NOTE: [remat barrier]), which is what ``prevent_cse=True`` asks for; ``False`` is, as
    in JAX, only a permission to drop the barrier, so it changes nothing here.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> f = checkpoint(lambda x: fnp.sin(fnp.sin(x)))
    >>> round(float(funcgrad.grad(f)(1.0)), 6)
    0.360039
    """
    resolve_policy(policy)
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    static_names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    if static_names:
        try:
            params = list(inspect.signature(fun).parameters)
        except (TypeError, ValueError):
            params = []
        statics += tuple(
            params.index(n) for n in static_names if n in params and params.index(n) not in statics
        )

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        dyn_idx = [i for i in range(len(args)) if i not in statics]
        static_kw = {k: v for k, v in kwargs.items() if k in static_names}
        dyn_kw = {k: v for k, v in kwargs.items() if k not in static_names}
        flat, in_tree = tu.tree_flatten(([args[i] for i in dyn_idx], dyn_kw))
        # NOTE: [state in checkpointed functions]: Refs among the arguments are closed over
        scopes = sys.modules.get("funcgrad._ref_scopes")  # (loaded with funcgrad.ref: else no Ref)
        held = Held(flat)  # (NOTE: [held state operands])
        flat = held.kept(flat)
        # 64-bit NumPy values become 32-bit ones when x64 is off, as JAX's checkpoint hands them on
        # (checkpoint(lambda x: x) of a float64 array is float32 there; NOTE: [x64 mode])
        flat = canonical_numpy(flat)
        found: list = []

        def call(leaves):
            d_args, d_kwargs = tu.tree_unflatten(in_tree, held.full(leaves))
            full = list(args)
            for i, a in zip(dyn_idx, d_args):
                full[i] = a
            out_leaves, out_tree = tu.tree_flatten(fun(*full, **d_kwargs, **static_kw))
            out_tree_box.append(out_tree)
            return out_leaves

        def flat_fun(*leaves):
            if scopes is None:
                return call(leaves)
            with scopes.discover_state(record=True) as discovery:
                out_leaves = call(leaves)
                if not discovery.scope.lifted:
                    return out_leaves
                finals = discovery.finals()
                if finals is None:
                    raise NotImplementedError("checkpoint of a function that touches a mutable box")
                found.append((discovery, len(out_leaves)))
                return [*out_leaves, *finals]

        avals = tuple(core.get_aval(x) for x in flat)
        key = _cache_key(in_tree, avals, [args[i] for i in statics if i < len(args)], static_kw)
        if held:
            key = None  # (a trace that touched Refs is not kept: NOTE: [state in checkpointed functions])
        try:
            per_fun = _TRACES.setdefault(fun, {}) if key is not None else None
        except TypeError:  # a function that cannot be weakly referenced
            per_fun = None
        hit = per_fun.get(key) if per_fun is not None else None
        if hit is not None:
            closed, out_tree, hoisted = hit[0], hit[1], []
        else:
            out_tree_box: list = []
            touched = scopes.ACCESSES[0] if scopes is not None else 0
            closed = trace_to_jaxpr(flat_fun, list(avals))
            if found:  # the Refs' values are extra inputs, their final values extra outputs
                closed = found[0][0].completed(closed)
            closed, hoisted = close_over_tracers(closed)
            out_tree = out_tree_box[0]
            if per_fun is not None and not hoisted and (scopes is None or touched == scopes.ACCESSES[0]):
                per_fun[key] = (closed, out_tree)
        if not found:
            outs = checkpoint_p.bind(*hoisted, *flat, jaxpr=closed, policy=policy, differentiated=False)
            return tu.tree_unflatten(out_tree, outs)
        discovery, n_out = found[0]
        items = list(discovery.scope.lifted)
        threading = sys.modules["funcgrad._control_flow_state"]  # (loaded with funcgrad.ref)
        state = threading.loop_state_values(items)
        outs = checkpoint_p.bind(
            *hoisted, *flat, *(x for vals in state for x in vals), jaxpr=closed, policy=policy,
            differentiated=False,
        )  # fmt: skip
        threading.write_loop_state(items, threading.grouped_state(outs[n_out:], state))
        return tu.tree_unflatten(out_tree, outs[:n_out])

    return wrapped


def _cache_key(in_tree, avals, static_args, static_kw):
    """The trace cache key (NOTE: [checkpoint trace cache]), or None for unhashable statics."""
    key = (in_tree, avals, tuple(static_args), tuple(sorted(static_kw.items())))
    try:
        hash(key)
    except TypeError:
        return None
    return key


remat = checkpoint
