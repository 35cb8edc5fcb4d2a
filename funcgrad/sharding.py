"""``funcgrad.sharding``: JAX's sharding names (``jax.sharding``).

Layer: surface. Re-exports the sharding values of ``funcgrad/_shardings.py`` and ``reshard`` from the
placement functions of ``funcgrad/_placement.py`` (which build on those values), and defines
``auto_axes``/``explicit_axes``, which switch mesh axes between JAX 0.10's ``Explicit`` and ``Auto``
modes inside a function (NOTE: [sharding in types] in kernel/ir.py): eagerly the values keep their
layout and are typed as the switched mesh says; under a trace, calls of ``reshard`` retype them.
It also registers with the placement functions the two operations on unreduced values that are
built on ``shard_map`` (``funcgrad.parallel``) and ``psum`` (``funcgrad.lax``): NOTE: [unreduced
values] in funcgrad/_sharding_unreduced.py.

>>> from funcgrad.sharding import Mesh, NamedSharding, PartitionSpec, reshard
>>> callable(reshard)
True
"""

from __future__ import annotations

import functools

import numpy as np

from funcgrad import _placement, parallel, xla_bridge
from funcgrad._placement import recast, reshard, retyped
from funcgrad._shardings import (
    AbstractDevice,
    AbstractMesh,
    AxisType,
    ManualAxisType,
    Mesh,
    NamedSharding,
    P,
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
    get_abstract_mesh,
    make_mesh,
    make_single_device_sharding,
    set_mesh,
    use_abstract_mesh,
    use_mesh,
)
from funcgrad._shardings import get_mesh as _get_mesh  # (None when no mesh is in scope)
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array

__all__ = [
    "AbstractDevice",
    "AbstractMesh",
    "AxisType",
    "ManualAxisType",
    "Mesh",
    "NamedSharding",
    "P",
    "PartitionSpec",
    "Sharding",
    "SingleDeviceSharding",
    "auto_axes",
    "explicit_axes",
    "get_abstract_mesh",
    "get_mesh",
    "make_mesh",
    "make_single_device_sharding",
    "reshard",
    "set_mesh",
    "use_abstract_mesh",
    "use_mesh",
]
# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = ("P", "NamedSharding", "make_mesh", "set_mesh")


_EMPTY_MESH = Mesh(np.empty((), dtype=object), ())  # (JAX's empty_concrete_mesh)


def get_mesh() -> Mesh:
    """The mesh set with ``set_mesh`` or the innermost ``use_mesh`` / ``with mesh:`` block, else
    an empty mesh (``.empty``, no axes, no devices), as JAX's ``get_mesh``.

    >>> get_mesh().empty
    True
    """
    mesh = _get_mesh()
    return _EMPTY_MESH if mesh is None else mesh


def _mesh_for(where: str, shardings=None) -> Mesh | None:
    """The mesh ``auto_axes``/``explicit_axes`` switch axes of, as JAX's ``_get_new_mesh``: the
    mesh in scope, else the one ``shardings`` (``out_sharding=``) are over, which must be the same
    when both are given; ``None`` when there is neither (JAX's ``auto_axes`` then calls ``f``)."""
    mesh = _get_mesh()
    given = None
    for s in tu.tree_leaves(shardings, is_leaf=lambda x: isinstance(x, PartitionSpec | NamedSharding)):
        if isinstance(s, NamedSharding):
            if given is not None and given.abstract_mesh != s.mesh.abstract_mesh:
                raise ValueError(
                    f"Shardings passed to {where} should have the same mesh. Got one mesh {given} and "
                    f"another {s.mesh}"
                )
            given = s.mesh
    # (the abstract mesh in scope: in a shard_map body, with its manual axes Manual)
    scope = get_abstract_mesh() if mesh is not None else None
    scope = mesh.abstract_mesh if mesh is not None and (scope is None or scope.empty) else scope
    if given is not None and mesh is not None and given.abstract_mesh != scope:
        raise ValueError(
            f"Context mesh {scope} must match the mesh passed to shardings "
            f"{given.abstract_mesh}. Recommended approach is to use `jax.set_mesh` context manager."
        )
    if mesh is None and isinstance(given, Mesh):
        return given
    if mesh is None and where == "explicit_axes":
        raise ValueError(
            "Context mesh cannot be empty. Please use `jax.set_mesh` API to enter into a mesh context "
            "when using `explicit_axes` API."
        )
    return mesh


def _axes(axes, mesh: Mesh, default: tuple, where: str) -> tuple:
    axes = default if axes is None else ((axes,) if isinstance(axes, str) else tuple(axes))
    missing = [a for a in axes if a not in mesh.axis_names]
    if missing:
        raise ValueError(f"{where}: {missing[0]!r} is not an axis of the mesh in scope {mesh!r}")
    return axes


def _switched(f, types: AxisType, axes, arg_spec, out_spec, where: str):
    """``f`` run with the mesh's ``axes`` of type ``types``: arguments are recast onto that mesh
    (as ``arg_spec`` says, else as they are), results back onto the caller's mesh."""

    given = "out_sharding" if types is AxisType.Auto else "in_sharding"

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        spec = kwargs.pop(given, None)  # as in JAX: also a keyword of the call
        ins, outs = arg_spec, out_spec
        if spec is not None:
            ins, outs = (ins, spec) if types is AxisType.Auto else (spec, outs)
        if (outs if types is AxisType.Auto else ins) is None:
            raise TypeError(f"{where}: Missing required keyword argument: '{given}'")
        outer = _mesh_for(where, outs if types is AxisType.Auto else None)
        if outer is None:  # (no mesh in scope nor in out_sharding: JAX's auto_axes calls f)
            return f(*args, **kwargs)
        scope = get_abstract_mesh()  # (inside a shard_map body its axes are Manual)
        types_now = scope.axis_types if scope.axis_names == outer.axis_names else outer.axis_types
        # (by default the axes not Manual here: naming a Manual one is JAX's NotImplementedError)
        default = tuple(n for n, t in zip(outer.axis_names, types_now) if t is not AxisType.Manual)
        chosen = _axes(axes, outer, default, where)
        if any(t is AxisType.Manual for n, t in zip(outer.axis_names, types_now) if n in chosen):
            raise NotImplementedError(
                "Going from `Manual` AxisType to `Auto` or `Explicit` AxisType is not allowed. Please "
                "file a bug at https://github.com/jax-ml/jax/issues with your use case"
            )
        if all(t is types for n, t in zip(outer.axis_names, outer.axis_types) if n in chosen):
            if types is AxisType.Explicit:  # already in that mode: the arguments still take in_sharding
                args = reshard(args, ins)
            return f(*args, **kwargs)
        inner = outer.update_axis_types({a: types for a in chosen})

        def body(*args):
            args = recast(args, inner, ins, where)
            with use_mesh(inner):
                out = f(*args, **kwargs)
            return recast(out, outer, outs, where)

        if any(isinstance(x, core.Tracer) for x in tu.tree_leaves(args)):
            return body(*args)
        # Eagerly, as JAX: the values keep their layout (``x.sharding``) and are typed as the
        # switched mesh's axes are (``typeof(x).sharding``) inside.
        with use_mesh(inner):
            if ins is None:
                args = tu.tree_map(retyped, args)
            else:
                args = tu.tree_map(retyped, reshard(args, ins))
            out = f(*args, **kwargs)
        if outs is not None:
            with use_mesh(outer):
                return reshard(out, outs)
        return tu.tree_map(lambda x: _on_mesh(retyped(x), outer), out)

    return wrapped


def _on_mesh(x, mesh):
    """An eager result of ``explicit_axes``'s function laid out as it is over ``mesh``, the
    caller's (its axis types), as JAX's: it was over the switched mesh (``Explicit`` axes)."""
    s = x.sharding if isinstance(x, Array) and x._buffer is not None else None
    if (
        not isinstance(s, NamedSharding)
        or not isinstance(mesh, Mesh)
        or s.mesh == mesh
        or s.mesh.axis_names != mesh.axis_names
        or s.mesh.devices.tolist() != mesh.devices.tolist()
    ):
        return x
    return _placement.device_put_sharded(x, NamedSharding(mesh, s.spec, memory_kind=s.memory_kind))


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
    """``f`` with the mesh axes ``axes`` (default: all) in ``Auto`` mode: inside, XLA's
    partitioner decides their shardings; the results come back typed as ``out_sharding`` (a
    ``PartitionSpec`` or sharding over the mesh in scope, here or as a keyword of the call).
    JAX's ``jax.sharding.auto_axes``.

    >>> import funcgrad, funcgrad.numpy, numpy as np
    >>> with set_mesh(make_mesh((1,), ("x",))):
    ...     y = auto_axes(lambda a: a * 2, out_sharding=P("x"))(np.arange(2.0))
    >>> y.tolist()
    [0.0, 2.0]
    """
    if f is None:
        return functools.partial(auto_axes, axes=axes, out_sharding=out_sharding)
    return _switched(f, AxisType.Auto, axes, None, out_sharding, "auto_axes")


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
    """``f`` with the mesh axes ``axes`` (default: all) in ``Explicit`` mode: its arguments are
    typed as ``in_sharding`` (a ``PartitionSpec``, or a pytree prefix of them; here or as a
    keyword of the call) and its results go back to the caller's (``Auto``) mode. JAX's
    ``jax.sharding.explicit_axes``.

    >>> import funcgrad, funcgrad.numpy, numpy as np
    >>> with set_mesh(make_mesh((1,), ("x",), (AxisType.Auto,))):
    ...     y = explicit_axes(lambda a: a * 2, in_sharding=P("x"))(np.arange(2.0))
    >>> y.tolist()
    [0.0, 2.0]
    """
    if f is None:
        return functools.partial(explicit_axes, axes=axes, in_sharding=in_sharding)
    return _switched(f, AxisType.Explicit, axes, in_sharding, None, "explicit_axes")


def _unreduced_result(f, name: str, s: NamedSharding, args, kwargs):
    """``f(*args, out_sharding=s)`` with ``s`` unreduced (a contraction over the unreduced axes,
    as JAX's ``dot(..., out_sharding=P('x', None, unreduced={'y'}))``): each device's result on
    its own blocks, left unsummed (NOTE: [unreduced values]). Eagerly (a traced one is typed so:
    ``_placement._unreduced_traced``)."""
    # (only the arrays are split: the other arguments, reduce_sum's axes, say, are closed over)
    mapped = [isinstance(a, Array | np.ndarray) for a in args]
    specs = []
    for a in (a for a, m in zip(args, mapped) if m):
        t = core.get_aval(a)._sharding if isinstance(a, Array) else None
        specs.append(PartitionSpec() if t is None else PartitionSpec(*t.spec))

    def on_blocks(*blocks):
        it = iter(blocks)
        return f(*(next(it) if m else a for a, m in zip(args, mapped)), **kwargs)

    plain = PartitionSpec(*s.spec)
    local = parallel.shard_map(
        on_blocks, mesh=s.mesh, in_specs=tuple(specs), out_specs=plain, check_vma=False
    )(*(a for a, m in zip(args, mapped) if m))
    b = local._buffer
    blocks, devices = [], []
    for device, _, arr in xla_bridge.sharded.shards(b):
        blocks.append(xla_bridge.sharded.block_numpy(arr))
        devices.append(device)
    buf = xla_bridge.sharded.put_blocks(blocks, devices, local.shape, local.dtype, s._bridge(local.ndim))
    return Array._from_buffer(buf, local.weak_type)


_placement.unreduced_ops.update(result=_unreduced_result)
_placement.switched_ops.update(auto_axes=auto_axes)


def __dir__():  # the public names only
    return list(__all__)
