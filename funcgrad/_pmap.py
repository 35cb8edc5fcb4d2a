"""``pmap``: map a function over the leading axis of its arguments, one device per index.

Layer: surface, above ``funcgrad.parallel`` (``shard_map``, which it is built on, and the marker of
a body being traced). Imports the kernel's pytrees, ``primitives.structure`` (axis moves),
``funcgrad._shardings``, ``funcgrad.jitting``, ``funcgrad._vmap`` (what an axis is),
``funcgrad.tree_util``'s prefix errors, ``numpy._core`` and ``xla_bridge`` (devices).

``pmap(f, axis_name=)`` maps ``f`` over the leading axis of its arguments, one device per index,
like ``vmap`` with a named axis: it is ``jit`` of a ``shard_map`` over a one-dimensional mesh of
the local devices, as in JAX 0.10.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable

import numpy as np

from funcgrad import xla_bridge
from funcgrad._api_util import flatten_outputs
from funcgrad._shardings import Mesh, PartitionSpec
from funcgrad._vmap import _is_axis
from funcgrad.jitting import JittedFunction
from funcgrad.kernel import tree_util as tu
from funcgrad.numpy._core import asarray
from funcgrad.parallel import _bodies, _SpecsAfterTrace, shard_map
from funcgrad.primitives import structure as st
from funcgrad.tree_util import _prefix_errors, _structure_error

__all__ = ["pmap"]

_anonymous = itertools.count()


def _is_axis_leaf(a) -> bool:
    return a is None


def _in_axes_error(axes_spec, args: tuple, kwargs: dict) -> ValueError:
    """JAX's error for ``in_axes`` that is not a pytree prefix of the positional arguments: the key
    path of the first mismatch (``pmap in_axes[0][0]``) and its explanation."""
    maker = next(_prefix_errors((axes_spec, 0), (args, kwargs), (), _is_axis_leaf), None)
    msg = maker("pmap in_axes").args[0] if maker is not None else "pmap in_axes is not a pytree prefix"
    msg += (
        "\n\nThe 'full pytree' here is the tuple of arguments passed positionally to the pmapped "
        "function, and the value of `in_axes` must be a tree prefix of that tuple. But it was not a prefix."
    )
    if kwargs:
        msg += (
            "\n\nWhen some arguments are passed by keyword to the pmapped function, they are not included "
            "in the comparison to `in_axes`. Instead, each argument passed by keyword is mapped over its "
            "leading axis. See the description of `in_axes` in the `pmap` docstring: "
            "https://docs.jax.dev/en/latest/_autosummary/jax.pmap.html#jax.pmap"
        )
    msg += (
        "\n\nCheck that the value of the `in_axes` argument to `pmap` is a tree prefix of the tuple of "
        "arguments passed positionally to the pmapped function."
    )
    return ValueError(msg)


def _copy_if_moved(arg, axis):
    """A donated argument as JAX's pmap donates it: an array on one device that the map spreads over
    several is copied there first, and the copy is donated (the original stays alive); one already
    laid out over several devices (a pmap's result) is donated itself, and deleted."""

    def leaf(x):
        devices = getattr(getattr(x, "sharding", None), "device_set", None)
        if devices is None or len(devices) != 1:
            return x
        spread = axis is None or not isinstance(axis, int) or (x.ndim > axis and x.shape[axis] > 1)
        return x.copy() if spread else x

    return tu.tree_map(leaf, arg)


def pmap(
    fun: Callable,
    axis_name=None,
    *,
    in_axes=0,
    out_axes=0,
    static_broadcasted_argnums=(),
    devices=None,
    backend=None,
    axis_size=None,
    donate_argnums=(),
    global_arg_shapes=None,
):
    """Map ``fun`` over the leading axis (``in_axes``) of its arguments with one device per index
    (``devices``: default, the first local devices); ``axis_name`` names that axis for the
    collectives. The mapped size must not exceed the number of devices.

    >>> import funcgrad, numpy as np
    >>> from funcgrad import lax
    >>> pmap(lambda x: x / lax.psum(x, "i"), axis_name="i")(np.array([2.0])).tolist()
    [1.0]
    """
    if not callable(fun):
        raise TypeError(f"pmap expects a callable, got {type(fun).__name__}")
    if global_arg_shapes is not None:
        raise ValueError("pmap: global_arg_shapes is not supported (it was removed from JAX as well)")
    name = getattr(fun, "__name__", type(fun).__name__)
    where = f"pmap({name})"
    if isinstance(static_broadcasted_argnums, int):
        static_broadcasted_argnums = (static_broadcasted_argnums,)
    statics = tuple(static_broadcasted_argnums)
    for axes, what in ((in_axes, "in_axes"), (out_axes, "out_axes")):  # (JAX's check and words)
        if not all(_is_axis(a) for a in tu.tree_leaves(axes)):
            raise TypeError(
                f"pmap {what} must be an int, None, or (nested) container with those types as leaves, "
                f"but got {axes}."
            )
    if devices is not None and not devices:  # (JAX's check and words)
        raise ValueError("'devices' argument to pmap must be non-empty, or None.")
    if axis_name is None:
        axis_name = f"_pmap{next(_anonymous)}"
    if backend is not None and devices is None:
        devices = xla_bridge.devices(backend)

    def run(*flat_args, **kwargs):  # (JAX's pmap names its arguments flat_args[i] in errors)
        args = flat_args
        if _bodies.depth:
            raise ValueError(
                f"{where} is called inside a shard_map or pmap body: a pmap cannot be nested there (JAX 0.10 "
                "refuses it too); map the inner axis with vmap(..., axis_name=...) or use one shard_map over "
                "a mesh with both axes (axis_names= for a partially manual one, nested shard_maps for more)"
            )
        dyn = [a for i, a in enumerate(args) if i not in statics]
        if isinstance(in_axes, list):
            axes_spec = tuple(in_axes)
        else:
            axes_spec = in_axes
        if isinstance(axes_spec, tuple) and len(axes_spec) == len(args) and statics:
            axes_spec = tuple(a for i, a in enumerate(axes_spec) if i not in statics)
        # keyword arguments are mapped over their leading axis, whatever in_axes says (as JAX's)
        try:
            leaf_axes = tu.broadcast_prefix((axes_spec, 0), (tuple(dyn), kwargs))
        except ValueError:
            raise _in_axes_error(axes_spec, tuple(dyn), kwargs) from None
        flat, tree = tu.tree_flatten((tuple(dyn), kwargs))
        flat = [asarray(x) for x in flat]
        sizes = set()
        axes = []
        for x, ax in zip(flat, leaf_axes):
            if ax is None:
                axes.append(None)
                continue
            nd = x.ndim
            if not -nd <= ax < nd:
                raise ValueError(f"{where}: in_axes={ax} is out of range for an argument of shape {x.shape}")
            axes.append(ax % nd)
            sizes.add(x.shape[ax % nd])
        if len(sizes) > 1:
            raise ValueError(f"{where}: the mapped axes have different sizes {sorted(sizes)}")
        n = sizes.pop() if sizes else axis_size
        if n is None:
            raise ValueError(  # (JAX's words first)
                f"pmap requires at least one argument with a mapped axis. ({where}: no argument is "
                "mapped; give axis_size=)"
            )
        devs = list(devices) if devices is not None else xla_bridge.devices()
        local = [d for d in devs if d.process_index == xla_bridge.sharded.process_index()]
        if n > len(local):
            raise ValueError(
                f"{where}: mapping over {n} indices needs {n} devices but {len(local)} are available; on a "
                "CPU start "
                f"with XLA_FLAGS=--xla_force_host_platform_device_count={n} (or funcgrad.config.update("
                f'"jax_num_cpu_devices", {n})) before first use, or use vmap'
            )
        mesh = Mesh(np.array(local[:n], dtype=object), (axis_name,))
        moved = [x if a is None else st.moveaxis(x, a, 0) if a else x for x, a in zip(flat, axes)]
        in_specs = tuple(PartitionSpec() if a is None else PartitionSpec(axis_name) for a in axes)

        def per_device(*blocks):
            vals = [b if a is None else st.reshape(b, b.shape[1:]) for b, a in zip(blocks, axes)]
            rebuilt, named = tu.tree_unflatten(tree, vals)
            rebuilt = list(rebuilt)
            full = []
            it = iter(rebuilt)
            for i in range(len(args)):
                full.append(args[i] if i in statics else next(it))
            out = fun(*full, **named)
            leaves, out_tree = flatten_outputs(out, where)
            outputs = tu.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
            try:
                leaf_out_axes = tu.broadcast_prefix(out_axes, outputs)
            except ValueError as e:
                raise _structure_error(
                    "broadcast_prefix prefix_tree", out_axes, _is_axis_leaf, outputs, e
                ) from None
            box.append((out_tree, leaf_out_axes))
            # An unmapped output (out_axes=None) is each device's own value, unchecked, as JAX's:
            # out_specs P() keeps every device's copy (which may differ: its blocks are read from
            # the first device's), where a stacked output indexed at 0 would copy the first.
            return [
                asarray(o) if ax is None else st.reshape(asarray(o), (1, *asarray(o).shape))
                for o, ax in zip(leaves, leaf_out_axes)
            ]

        box: list = []
        specs = _SpecsAfterTrace(
            lambda: [PartitionSpec() if ax is None else PartitionSpec(axis_name) for ax in box[-1][1]]
        )
        outs = shard_map(per_device, mesh=mesh, in_specs=in_specs, out_specs=specs, check_vma=False)(*moved)
        out_tree, leaf_out_axes = box[-1]
        result = []
        for o, ax in zip(outs, leaf_out_axes):
            if ax is None:
                result.append(o)
            else:
                ax = ax % o.ndim
                result.append(o if ax == 0 else st.moveaxis(o, 0, ax))
        return tu.tree_unflatten(out_tree, result)

    run.__name__ = f"pmap_{name}"
    # (donate_argnums=0 is argument 0: not "or None", which dropped it -- JAX's pmap donates it)
    donated = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums or ())
    jitted = JittedFunction(run, static_argnums=statics, donate_argnums=donated or None)

    def pmapped(*args, **kwargs):
        if statics and max(statics) >= len(args):  # (JAX's check and words)
            n = len(args)
            raise ValueError(
                f"pmapped function has static_broadcasted_argnums={statics} but was called with only "
                f"{n} positional argument{'s' if n > 1 else ''}. All static broadcasted arguments must "
                "be passed positionally."
            )
        if donated:
            args = tuple(
                _copy_if_moved(a, in_axes[i] if isinstance(in_axes, tuple | list) else in_axes)
                if i in donated
                else a
                for i, a in enumerate(args)
            )
        return jitted(*args, **kwargs)

    pmapped = functools.wraps(fun)(pmapped)
    # Ahead of time, as JAX's pmap(f).lower(*args).compile(): the one program over the devices.
    pmapped.lower = jitted.lower
    return pmapped
