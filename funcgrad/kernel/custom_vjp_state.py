"""A ``custom_vjp`` called with Refs among its arguments (NOTE: [Refs through custom_vjp]).

Layer: kernel, under ``custom_derivatives.py`` (whose ``custom_vjp.__call__`` calls
``with_state_args`` when a Ref is among the arguments). Imports the kernel's ``core``, pytrees and
``held_state`` (NOTE: [held state operands]).
"""

from __future__ import annotations

import inspect

from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.held_state import Held, is_state

# NOTE: [Refs through custom_vjp]
# A Ref is state, not an array (NOTE: [held state operands] in kernel/held_state.py): a custom_vjp
# called with one (JAX's "gradient statistics plumbing": ``fwd`` saves the Ref as a residual,
# ``bwd`` writes the cotangent into it) is called as a custom_vjp of the other arguments that
# closes over the Refs, and whose ``fwd`` keeps the Refs among its residuals aside, as Python
# objects, for ``bwd`` (``_with_state_args``). ``bwd`` returns a cotangent per argument, ``None``
# for a Ref, and the Refs' entries are dropped. A differentiable Ref holding a traced value
# (``jax.new_ref(x)`` of a differentiated ``x``) is passed as that value instead, rebuilt as a Ref
# where the function runs, and its cotangent from ``bwd`` is its value's (JAX's differentiated
# Refs, mutable_array_test test_custom_vjp_differentiated_ref).


def with_state_args(custom, args: tuple, name: str):
    """``custom(*args)``, ``custom`` a ``custom_vjp``, where some top-level ``args`` are Refs (NOTE:
    [Refs through custom_vjp]): a ``custom_vjp`` of the other arguments, of ``custom``'s class."""
    n = len(args)
    held = Held(args).refuse_aliased(lambda: _param_names(custom.fun, n), custom.fun, "custom_vjp")
    nondiff = custom.nondiff_argnums
    # A differentiable Ref holding a traced value (made from a differentiated value) is passed as
    # that value and rebuilt as a Ref of the trace it reaches: ``bwd``'s cotangent for it is its
    # value's (JAX's differentiated Refs)
    valued = {
        i: r
        for i, r in held.at.items()
        if i not in nondiff and any(isinstance(x, core.Tracer) for x in tu.tree_leaves(r._value))
    }
    for i in valued:
        del held.at[i]
    args = tuple(valued[i]._value if i in valued else a for i, a in enumerate(args))
    refs = held.at
    kept = [i for i in range(n) if i not in refs]
    made: list = []  # the Refs rebuilt for ``valued``

    def full(reduced):
        full = held.full(reduced)
        for i, r in valued.items():
            full[i] = r._inner(full[i], core.current_trace())
            made.append(full[i])
        return full

    dyn_positions = [i for i in range(n) if i not in nondiff]
    fun, fwd, bwd = custom.fun, custom.fwd, custom.bwd
    saved: list = []  # (the Refs among the residual leaves of the last fwd, its residual tree)

    def refuse_returned(out, what: str):
        if any(is_state(x) for x in tu.tree_leaves(out)):
            raise ValueError(
                f"custom_vjp {what} {name} returned a mutable array reference, but mutable array "
                "references cannot be returned"
            )

    def fun_closing(*reduced):
        out = fun(*full(reduced))
        refuse_returned(out, "function")
        return out

    def fwd_closing(*reduced):
        y, res = fwd(*full(reduced))
        refuse_returned(y, "fwd function")
        leaves, tree = tu.tree_flatten(res)
        in_res = Held(leaves)
        for x in in_res.at.values():
            if not any(x is r for r in [*refs.values(), *made]):  # (JAX's words: a Ref made in fwd)
                raise ValueError(
                    f"custom_vjp fwd function of {name} returned a mutable array reference among its "
                    "residuals that is not one of its arguments"
                )
        saved.append((in_res, tree))
        return y, in_res.kept(leaves)

    def bwd_closing(*args_res_ct):
        *nondiff_vals, res_kept, ct = args_res_ct
        in_res, tree = saved[-1]
        res = tu.tree_unflatten(tree, in_res.full(res_kept))
        given = iter(nondiff_vals)
        nondiff_full = [refs[i] if i in refs else next(given) for i in sorted(nondiff)]
        cts = bwd(*nondiff_full, res, ct)
        if isinstance(cts, tuple | list) and len(cts) == len(dyn_positions):
            cts = tuple(c for c, i in zip(cts, dyn_positions) if i not in refs)
        return cts

    for f, g in ((fun_closing, fun), (fwd_closing, fwd), (bwd_closing, bwd)):
        f.__name__ = getattr(g, "__name__", f.__name__)
    inner = type(custom)(fun_closing, nondiff_argnums=tuple(kept.index(i) for i in nondiff if i in kept))
    inner.defvjp(fwd_closing, bwd_closing, symbolic_zeros=custom.symbolic_zeros)
    return inner(*held.kept(args))


def _param_names(fun, n: int) -> list[str]:
    try:
        names = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"args[{i}]" for i in range(n)]
