"""``funcgrad.custom_batching``: functions with a user-defined ``vmap`` rule (JAX's
``jax.custom_batching``: ``custom_vmap`` and ``sequential_vmap``).

Layer: surface. Imports the kernel (tracing, pytrees), the primitive catalog (``custom_vmap_call``,
primitives/custom_batching.py, where the rules and NOTE: [differentiating custom_vmap] live) and
``funcgrad._control_flow`` (``lax.map`` for ``sequential_vmap``).

A ``custom_vmap`` function traces its body to a jaxpr and binds ``custom_vmap_call`` with it and
its rule. Eagerly, under ``jit`` and under differentiation the body runs; under ``vmap`` the rule
does, on arguments whose batch is at axis 0. Values the body closes over are passed to the call as
leading arguments (so every transformation sees them) but never to the user's rule: one that is
batched by the ``vmap`` is an error that says to pass it as an argument (as in JAX).

Unlike JAX, ``grad`` of a ``custom_vmap`` function works, and so does ``vmap(grad(f))``: the
cotangents then come from the VJP of the rule (NOTE: [differentiating custom_vmap]).

>>> import funcgrad, funcgrad.numpy as fnp
>>> @custom_vmap
... def f(x):
...     return fnp.sin(x)
>>> @f.def_vmap
... def f_rule(axis_size, in_batched, xs):
...     return fnp.cos(xs), in_batched[0]
>>> float(f(0.0)), funcgrad.vmap(f)(fnp.zeros(2)).tolist()
(0.0, [1.0, 1.0])
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from funcgrad import _control_flow
from funcgrad._api_util import canonicalize
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.custom_rule_args import _defaults_signature, _resolve_args
from funcgrad.kernel.partial_eval import close_over_tracers, trace_to_jaxpr
from funcgrad.primitives.custom_batching import custom_vmap_call_p

__all__ = ["custom_vmap", "sequential_vmap"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


class custom_vmap:
    """A function with a custom ``vmap`` rule, usable as a decorator; define the rule with
    ``def_vmap``. The rule ``rule(axis_size, in_batched, *args) -> (out, out_batched)`` gets the
    batch size, a list with one pytree of bools per argument (which leaves are batched) and the
    arguments, batched leaves with the batch at axis 0; it returns the batched output and a pytree
    of bools of the output's structure (which output leaves carry the batch at axis 0; the others
    are the same for every element of the batch).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> @custom_vmap
    ... def f(x, y):
    ...     return x + y
    >>> @f.def_vmap
    ... def f_vmap_rule(axis_size, in_batched, xs, ys):
    ...     assert all(in_batched) and xs.shape[0] == axis_size
    ...     return xs * ys, True
    >>> funcgrad.vmap(f)(fnp.arange(3), fnp.arange(1, 4)).tolist()   # xs * ys, not xs + ys
    [0, 2, 6]
    >>> int(f(2, 3))
    5
    """

    def __init__(self, fun: Callable[..., Any]):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule: Callable | None = None
        self._signature = _defaults_signature(fun)  # (calls are bound as JAX binds them)

    def __getattr__(self, name):
        """Other attributes come from the wrapped function, so a custom_vmap wrapping a custom_jvp
        exposes ``defjvp`` (JAX forwards the ``def*`` methods of stacked custom decorators)."""
        if name.startswith("__") or name == "fun":
            raise AttributeError(name)
        return getattr(self.fun, name)

    def def_vmap(self, vmap_rule: Callable[..., tuple[Any, Any]]) -> Callable[..., tuple[Any, Any]]:
        """Set the vmap rule ``vmap_rule(axis_size, in_batched, *args) -> (out, out_batched)``;
        returns it unchanged, so it works as a decorator.

        >>> g = custom_vmap(lambda x: x)
        >>> rule = g.def_vmap(lambda axis_size, in_batched, xs: (xs, True))
        >>> g.vmap_rule is rule
        True
        """
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "custom_vmap")
        if self.vmap_rule is None:
            raise AttributeError(f"No batching rule defined for custom_vmap function {name} using def_vmap.")
        args = _resolve_args(self, args, kwargs)
        flat, in_tree = tu.tree_flatten(tuple(args))
        # The bound arguments are Arrays (Python scalars weak), as JAX's custom_vmap binds them:
        # the rule never sees a raw Python value, whatever vmap passed through unmapped.
        flat = canonicalize(flat)
        out_tree_box: list = []

        def flat_fun(*leaves):
            out = self.fun(*tu.tree_unflatten(in_tree, list(leaves)))
            out_leaves, out_tree = tu.tree_flatten(out)
            out_tree_box.append(out_tree)
            return out_leaves

        avals = [core.get_aval(x) for x in flat]
        closed = trace_to_jaxpr(flat_fun, avals, description=f"custom_vmap function {name}")
        closed, consts = close_over_tracers(closed)
        out_tree = out_tree_box[0]
        rule = _flat_rule(self.vmap_rule, name, len(consts), in_tree, out_tree)
        outs = custom_vmap_call_p.bind(
            *consts, *flat, call=closed, rule=rule, num_consts=len(consts), name=name
        )
        return tu.tree_unflatten(out_tree, outs)


def _flat_rule(user_rule, name, num_consts, in_tree, out_tree):
    """The user's pytree rule as the flat rule ``custom_vmap_call`` takes (see
    primitives/custom_batching.py)."""
    rule_name = getattr(user_rule, "__name__", "<unnamed rule>")

    def rule(axis_size, in_batched, args):
        if any(in_batched[:num_consts]):
            raise ValueError(
                f"custom_vmap function {name} closes over a value that this vmap batches, and its "
                f"rule {rule_name} cannot see it: pass that value as an argument of the function."
            )
        args_tree = tu.tree_unflatten(in_tree, list(args[num_consts:]))
        batched_tree = tu.tree_unflatten(in_tree, [bool(b) for b in in_batched[num_consts:]])
        result = user_rule(axis_size, list(batched_tree), *args_tree)
        if not (isinstance(result, tuple | list) and len(result) == 2):
            raise TypeError(
                f"the vmap rule {rule_name} of custom_vmap function {name} must return a pair "
                f"(batched output, output batching flags); got {type(result).__name__}"
            )
        out, out_batched = result
        out_leaves, tree = tu.tree_flatten(out)
        flag_leaves, flag_tree = tu.tree_flatten(out_batched)
        if tree != flag_tree:
            raise ValueError(
                "structure of output value and output batching specification returned by custom "
                f"vmap rule ({rule_name}) do not match.\n"
                f"Output values: {tree}\nBatching spec: {flag_tree}"
            )
        if tree != out_tree:
            raise ValueError(
                f"structure of output returned by custom vmap rule ({rule_name}) does not match that "
                f"of original custom-vmapped function.\nOriginal output: {out_tree}\nRule output: {tree}"
            )
        for i, b in enumerate(flag_leaves):
            if not isinstance(b, bool) and not (hasattr(b, "dtype") and getattr(b, "shape", None) == ()):
                raise TypeError(
                    f"the vmap rule {rule_name} of custom_vmap function {name} must give a bool "
                    f"for each output leaf; leaf {i} of its batching spec is {b!r}"
                )
        return out_leaves, [bool(b) for b in flag_leaves]

    rule.__name__ = rule_name
    return rule


def _split(mask, args):
    mapped = tu.tree_map(lambda m, x: x if m else None, mask, args)
    unmapped = tu.tree_map(lambda m, x: None if m else x, mask, args)
    return mapped, unmapped


def _merge(mask, mapped, unmapped):
    return tu.tree_map(lambda m, a, b: a if m else b, mask, mapped, unmapped)


def sequential_vmap(f: Callable) -> custom_vmap:
    """``f`` as a ``custom_vmap`` whose rule runs ``f`` on one element of the batch at a time
    (``lax.map``, one compiled loop): for functions that cannot be batched, such as a
    ``pure_callback`` without a ``vmap_method``. Unbatched arguments are passed to every step
    as they are; every output is batched.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> @sequential_vmap
    ... def f(x):
    ...     assert x.ndim == 0          # one element at a time
    ...     return x + 1
    >>> funcgrad.vmap(f)(fnp.arange(3)).tolist()
    [1, 2, 3]
    """
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        mapped, unmapped = _split(in_batched, list(args))

        def step(one):
            return f(*_merge(in_batched, one, unmapped))

        out = _control_flow.map(step, mapped)
        return out, tu.tree_map(lambda _: True, out)

    return f
