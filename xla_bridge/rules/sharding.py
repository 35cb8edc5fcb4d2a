"""Lowering rules of sharded programs (primitives/sharding.py): ``shard_map`` becomes a Shardy
``sdy.manual_computation`` over its manual axes (all the mesh's axes, or those ``axis_names=``
chose; a shard_map nested in another is manual over further axes), ``sharding_constraint`` a
``sdy.sharding_constraint``.

Layer: xla_bridge (compiler half). Imports the primitive catalog, ``xla_bridge.emitter`` and
``xla_bridge.meshes`` (the module's ``SpmdLowering``: mesh symbols, the stack of manual bodies the
collectives read). Both need a program compiled for the mesh's devices: the dispatcher lowers any
jaxpr holding a mesh with an ``SpmdLowering`` (xla_bridge/spmd.py).

The manual computation's body is emitted like a control-flow region (``FunctionBuilder.region``:
fresh names, its own constants): it receives each device's block and returns each device's
output block; the in/out shardings say how blocks make the global values (shared/notes/
jaxlib-spmd-facts.md C3, C5). In a program lowered for one device a sharding constraint is the
identity.
"""

from __future__ import annotations

import math

from funcgrad.primitives.sharding import shard_map_p, sharding_constraint_p, xla_metadata_value_p
from funcgrad.xla_bridge.emitter import LoweringError, aval_type, lower_closed, register


def _types(ts) -> str:
    return ts[0] if len(ts) == 1 else "(" + ", ".join(ts) + ")"


@register(shard_map_p)
def _shard_map(ctx, *args, jaxpr, mesh, in_specs, out_specs, manual_axes):
    fb = ctx.fb
    spmd = fb.module.spmd
    if spmd is None:
        raise LoweringError("shard_map: the program must be lowered for its mesh's devices (an SpmdLowering)")
    manual_axes = tuple(mesh.axis_names) if manual_axes is None else tuple(manual_axes)
    outer = set(spmd.manual_axes())
    if outer & set(manual_axes):
        raise LoweringError(
            f"a shard_map manual over {sorted(outer & set(manual_axes))} inside a shard_map (or pmap) that "
            "is already manual over them: the inner one's axis_names must be other mesh axes"
        )
    if math.prod(mesh.shape[n] for n in manual_axes) == 1:
        # Manual axes all of size 1: each block is the whole value, so the body is inlined with no
        # manual computation, as JAX's lowering does (XLA's CPU compiler leaves a one-device
        # program's manual computation holding a host callback unpartitioned, and then refuses
        # its xla.sdy.GlobalToLocalShape custom calls). The collectives still read the axes.
        spmd.manual.append((mesh, manual_axes))
        try:
            return lower_closed(fb, jaxpr, list(args))
        finally:
            spmd.manual.pop()
    # Partially manual over a mesh with automatic axes: every dimension is open, as JAX's lowering
    # marks them, so the partitioner may split the blocks further along those axes (a nested
    # shard_map's or a constraint's layout reaches the results).
    types = [getattr(t, "name", str(t)) for t in (getattr(mesh, "axis_types", None) or ())]
    open_dims = len(manual_axes) < len(mesh.axis_names) and "Auto" in types
    # An argument typed unreduced over manual axes enters as each device's partial sum (JAX's
    # in_specs then name them: P(unreduced={'x'})), not all-reduced first (NOTE: [unreduced values])
    ins = ", ".join(
        spmd.sharding(
            mesh,
            s,
            a.ndim,
            unreduced=(_unreduced(a) | getattr(s, "unreduced", set())) & set(manual_axes),
            open_dims=open_dims,
        )  # (or a cotangent's spec names them: that of a reduced output)
        for s, a in zip(in_specs, ctx.avals_in)
    )
    # (an output whose out_specs name unreduced axes: each device's block is its partial sum)
    outs = ", ".join(
        spmd.sharding(mesh, s, a.ndim, unreduced=getattr(s, "unreduced", ()), open_dims=open_dims)
        for s, a in zip(out_specs, ctx.avals_out)
    )
    manual = "{" + ", ".join(f'"{n}"' for n in manual_axes) + "}"
    r = fb.region()
    block_args = [r.fresh() for _ in args]
    spmd.manual.append((mesh, manual_axes))
    try:
        results = lower_closed(r, jaxpr, block_args)
    finally:
        spmd.manual.pop()
    out_blocks = [aval_type(a) for a in jaxpr.out_avals]
    r.raw(f"sdy.return {', '.join(results)} : {', '.join(out_blocks)}" if results else "sdy.return")
    params = ", ".join(f"{a}: {aval_type(v)}" for a, v in zip(block_args, jaxpr.in_avals))
    global_in = [aval_type(a) for a in ctx.avals_in]
    global_out = [aval_type(a) for a in ctx.avals_out]
    name = fb.fresh()
    n = len(global_out)
    head = f"{name}:{n} = " if n > 1 else (f"{name} = " if n else "")
    fb.lines.append(
        f"{fb.indent}{head}sdy.manual_computation({', '.join(args)}) in_shardings=[{ins}] "
        f"out_shardings=[{outs}] manual_axes={manual} ({params}) {{"
    )
    fb.lines.extend(r.lines)
    fb.lines.append(
        f"{fb.indent}}} : ({', '.join(global_in)}) -> {_types(global_out) if global_out else '()'}"
    )
    return [f"{name}#{i}" for i in range(n)] if n > 1 else [name] * n


def _unreduced(aval) -> set:
    spec = getattr(getattr(aval, "_sharding", None), "spec", None)
    return set(getattr(spec, "unreduced", None) or ())


@register(sharding_constraint_p)
def _sharding_constraint(ctx, x, *, mesh, spec, **ur):
    # (an unreduced result: the typed constraint after it names the axes, NOTE: [unreduced values])
    fb = ctx.fb
    spmd = fb.module.spmd
    if spmd is None:
        return x  # a program on one device: there is nothing to lay out
    if spmd.manual:
        # Inside a partially manual body the axes left automatic may still lay a block out (the
        # body's types name them: f32[4,4@y]); a manual axis may not.
        manual = set(spmd.manual_axes())
        named = [n for d in spec for n in d if n in manual]
        if named:  # (JAX's words, its lowering's add_manual_axes: a ValueError)
            entries = (d[0] if len(d) == 1 else d or None for d in spec)
            shown = ", ".join("None" if e is None else repr(e) for e in entries)
            ordered = tuple(n for n in mesh.axis_names if n in manual)
            raise ValueError(
                f"pspec P({shown}) contains a manual axes {ordered} of mesh which is not allowed. If you "
                "are using a with_sharding_constraint under a shard_map, only use the mesh axis in "
                "PartitionSpec which are not manual."
            )
        if len(manual) == len(mesh.axis_names):
            raise LoweringError(
                "with_sharding_constraint inside a shard_map body: the body's values are per-device "
                "blocks along its manual axes"
            )
    if ur.get("unreduced") or ur.get("reduced") or ur.get("retype"):
        # (its result is typed so: the typed constraint after it is this one, with those axes; a
        # closed replicated one before it would make XLA hold the whole value on every device. A
        # retyping one, JAX's reshard in and out of auto_axes, is its type's constraint alone:
        # none onto a mesh of Auto axes only, as JAX's lower_with_sharding_in_types)
        return x
    t = aval_type(ctx.avals_in[0])
    return fb.emit(f"sdy.sharding_constraint {x} {spmd.sharding(mesh, spec)} : {t}")


@register(xla_metadata_value_p)
def _xla_metadata_value(ctx, x, *, xla_metadata_kvs):
    # The identity, its metadata put on the operation that computed ``x`` (NOTE: [xla metadata]).
    ctx.fb.frontend_attributes(x, xla_metadata_kvs)
    return x
