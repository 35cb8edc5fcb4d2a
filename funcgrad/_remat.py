"""``checkpoint`` (alias ``remat``): recompute a function's forward pass during backward instead of
saving its residuals.

Layer: surface. Imports the kernel and the primitive catalog (``primitives.remat`` holds the
``checkpoint`` primitive and its saving policies).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.partial_eval import close_over_tracers, trace_to_jaxpr
from funcgrad.primitives.remat import checkpoint_p, checkpoint_policies, resolve_policy

__all__ = ["checkpoint", "remat", "checkpoint_policies", "checkpoint_p"]
# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = ("checkpoint_policies",)


def checkpoint(fun: Callable, *, policy=None, prevent_cse: bool = True, static_argnums=()):
    """Make ``fun`` recompute its forward pass during backward instead of storing residuals.

    ``policy`` chooses what is saved anyway (``checkpoint_policies``). ``static_argnums`` are
    passed to ``fun`` unchanged. ``prevent_cse``: the recomputation always runs behind an
    optimisation barrier (NOTE: [remat barrier]), which is what ``prevent_cse=True`` asks for;
    ``False`` is, as in JAX, only a permission to drop the barrier, so it changes nothing here.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> f = checkpoint(lambda x: fnp.sin(fnp.sin(x)))
    >>> round(float(funcgrad.grad(f)(1.0)), 6)
    0.360039
    """
    resolve_policy(policy)
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        dyn_idx = [i for i in range(len(args)) if i not in statics]
        flat, in_tree = tu.tree_flatten(([args[i] for i in dyn_idx], kwargs))
        out_tree_box = []

        def flat_fun(*leaves):
            d_args, d_kwargs = tu.tree_unflatten(in_tree, leaves)
            full = list(args)
            for i, a in zip(dyn_idx, d_args):
                full[i] = a
            out_leaves, out_tree = tu.tree_flatten(fun(*full, **d_kwargs))
            out_tree_box.append(out_tree)
            return out_leaves

        closed = trace_to_jaxpr(flat_fun, [core.get_aval(x) for x in flat])
        closed, hoisted = close_over_tracers(closed)
        outs = checkpoint_p.bind(*hoisted, *flat, jaxpr=closed, policy=policy, differentiated=False)
        return tu.tree_unflatten(out_tree_box[0], outs)

    return wrapped


remat = checkpoint
