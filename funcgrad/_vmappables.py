"""Custom types that ``vmap`` maps (JAX's vmappable protocol, ``jax.interpreters.batching``'s
``register_vmappable``): a registered type is a leaf of ``vmap``'s arguments and results, mapped
along a spec of its own spec type, through its ``to_elt``/``from_elt`` handlers.

Layer: surface, under ``funcgrad._vmap`` (which routes a call here when one of its leaves or axis
specs is of a registered type). Imports the kernel (``batching``, ``core``, pytrees).

# NOTE: [vmappable types]
# ``to_elt(cont, axis_size, value, spec)`` turns one registered value into the element the
# function sees; it calls ``cont(array, spec)`` for each array inside it, which gives that array
# mapped along ``spec`` (an int, or None: unmapped; or a value of a registered type, handled by
# its own ``to_elt``). ``from_elt(cont, axis_size, element, spec)`` turns an element the function
# returned back into a value; ``cont(axis_size, array, axis)`` gives a result array with its
# mapped axis at ``axis``. As in JAX, both run with the vmap's trace current (a handler may
# compute: ``cont(val.data + 1, spec)``), and the function's arguments and results are flattened
# with the registered types as leaves.
"""

from __future__ import annotations

from collections.abc import Callable

from funcgrad._api_util import canonicalize
from funcgrad.kernel import batching, core
from funcgrad.kernel import tree_util as tu

vmappables: dict[type, tuple[type, type]] = {}
_handlers: dict[type, tuple[Callable, Callable, Callable | None]] = {}


def register_vmappable(data_type: type, spec_type: type, axis_size_type: type, to_elt, from_elt, make_iota):
    """Make ``vmap`` map ``data_type`` with the given element handlers (JAX's API; NOTE:
    [vmappable types]).

    >>> class Boxed: pass
    >>> register_vmappable(Boxed, int, int, None, None, None); Boxed in vmappables
    True
    >>> unregister_vmappable(Boxed); Boxed in vmappables
    False
    """
    vmappables[data_type] = (spec_type, axis_size_type)
    _handlers[data_type] = (to_elt, from_elt, make_iota)


def unregister_vmappable(data_type: type) -> None:
    """Forget a type recorded with ``register_vmappable``."""
    vmappables.pop(data_type, None)
    _handlers.pop(data_type, None)


def is_vmappable(x) -> bool:
    return type(x) in vmappables


def spec_types() -> tuple[type, ...]:
    """The spec types of the registered types, ``int`` left out (an int spec is an axis)."""
    return tuple({spec for spec, _ in vmappables.values()} - {int})


def involved(flat_args, in_axes, out_axes) -> bool:
    """Whether a ``vmap`` call needs this path: a registered value among its arguments (flattened
    with the registered types as leaves) or a spec of a registered spec type in its axes."""
    if not vmappables:
        return False
    specs = spec_types()
    is_spec = lambda x: x is None or isinstance(x, specs)  # noqa: E731
    return any(type(x) in vmappables for x in flat_args) or any(
        isinstance(leaf, specs) for axes in (in_axes, out_axes) for leaf in tu.tree_flatten(axes, is_spec)[0]
    )


def _axes_for(axes, tree_def, what: str) -> list:
    """``axes`` (a prefix of the tree ``tree_def`` describes, spec-type values as leaves) repeated
    for each of its leaves (registered values as leaves)."""
    specs = spec_types()
    leaves, prefix = tu.tree_flatten(axes, lambda x: x is None or isinstance(x, specs))
    full = tu.tree_unflatten(tree_def, [0] * tree_def.num_leaves)
    try:
        subs = prefix.flatten_up_to(full)
    except ValueError:
        raise ValueError(
            f"vmap {what} specification must be a tree prefix of the corresponding value, got {axes}"
        ) from None
    out = []
    for leaf, sub in zip(leaves, subs):
        out.extend([leaf] * len(tu.tree_flatten(sub, is_vmappable)[0]))
    return out


def vmap_vmappables(fun, args, kwargs, in_axes, out_axes, axis_size, axis_name):
    """``vmap(fun, in_axes, out_axes, axis_size, axis_name)(*args, **kwargs)`` where registered
    types take part (NOTE: [vmappable types])."""
    flat_args, in_tree = tu.tree_flatten((args, kwargs), is_vmappable)
    in_specs = _axes_for((in_axes, 0), in_tree, "in_axes")
    size = axis_size
    if size is None:
        sizes = {
            core.get_aval(x).shape[s]
            for x, s in zip(flat_args, in_specs)
            if type(s) is int and not is_vmappable(x)
        }
        if len(sizes) != 1:
            raise ValueError("vmap of registered vmappable types needs axis_size= (or one mapped array)")
        (size,) = sizes
    frames = () if axis_name is None else [(axis_name, size)]

    with core.new_trace(batching.BatchTrace, size, axis_name) as trace, batching.extend_axis_env(frames):

        def to_elt(x, spec):
            handler = _handlers.get(type(x))
            if handler is not None:
                return handler[0](to_elt, size, x, spec)
            if spec is None:
                return x
            (x,) = canonicalize([x])
            ndim = core.get_aval(x).ndim
            return batching.BatchTracer(trace, x, int(spec) % max(ndim, 1))

        def from_elt(x, spec):
            handler = _handlers.get(type(x))
            if handler is not None:
                return handler[1](lambda n, elt, axis: from_elt(elt, axis), size, x, spec)
            if type(x) is batching.BatchTracer and x._trace is trace:
                val, dim = x.val, x.batch_dim
            else:
                val, dim = x, None
            with core.set_current_trace(trace.parent):
                return batching.move_batch_dim(val, size, dim, spec)

        elts = [to_elt(x, s) for x, s in zip(flat_args, in_specs)]
        a, k = tu.tree_unflatten(in_tree, elts)
        out = fun(*a, **k)
        flat_out, out_tree = tu.tree_flatten(out, is_vmappable)
        out_specs = _axes_for(out_axes, out_tree, "out_axes")
        results = [from_elt(o, s) for o, s in zip(flat_out, out_specs)]
    core.check_leaks_now()  # (NOTE: [leak checking])
    return tu.tree_unflatten(out_tree, results)
