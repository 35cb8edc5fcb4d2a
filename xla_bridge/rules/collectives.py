"""Lowering rules of the collectives (primitives/collectives.py): StableHLO collectives over the
axes of the enclosing shard_map/pmap body.

Layer: xla_bridge (compiler half). Imports the primitive catalog, numpy and
``xla_bridge.emitter``; reads the module's ``SpmdLowering`` (``xla_bridge/meshes.py``) for the
partition ids of the named axes and fresh channel handles.

Inside a ``sdy.manual_computation`` each device runs the body on its block; the ops are jax's
(shared/notes/jaxlib-spmd-facts.md C6): ``all_reduce`` (psum/pmax/pmin), ``all_gather``,
``reduce_scatter`` (psum_scatter), ``all_to_all``, ``collective_permute`` (ppermute) and
``partition_id`` (axis_index, through a table from partition id to axis index). The untiled forms
reshape around the tiled op: all_gather inserts a unit dimension and gathers along it,
psum_scatter drops the scattered unit dimension, all_to_all inserts a unit dimension where the
gathered one goes and drops the split one.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import collectives as co
from funcgrad.xla_bridge.emitter import LoweringError, aval_type, register, tensor_type, xla_dtype
from funcgrad.xla_bridge.rules.complex import complex_of

from funcgrad.kernel import dtypes as _dt


def _spmd(ctx, what):
    spmd = ctx.fb.module.spmd
    if spmd is None or not spmd.manual:
        raise LoweringError(
            f"{what}: a collective can only be compiled inside a shard_map or pmap body (under vmap it is "
            "computed by the batching rule of its axis)"
        )
    return spmd


def _groups(spmd, axis_name, what, axis_index_groups=None) -> np.ndarray:
    """``[n_groups, group_size]`` partition ids of a collective over ``axis_name``; with
    ``axis_index_groups`` (NOTE: [axis_index_groups] in primitives/collectives.py) each row of the
    axis is split into those groups of its indices."""
    try:
        g = spmd.groups(axis_name, what)
    except ValueError as e:
        raise LoweringError(str(e)) from None
    if axis_index_groups is None:
        return g
    rows = [row[list(grp)] for row in g for grp in axis_index_groups]
    width = max(map(len, rows))  # (groups of several sizes: rows padded with -1, as XLA reads them)
    return np.array([np.pad(r, (0, width - len(r)), constant_values=-1) for r in rows], np.int64)


def _attrs(spmd, axis_name, what, global_ids=True, axis_index_groups=None) -> str:
    g = _groups(spmd, axis_name, what, axis_index_groups)
    rows = ", ".join("[" + ", ".join(map(str, r)) + "]" for r in g)
    groups = f"dense<[{rows}]> : tensor<{g.shape[0]}x{g.shape[1]}xi64>"
    ids = ", use_global_device_ids" if global_ids else ""
    handle = f"#stablehlo.channel_handle<handle = {spmd.channel()}, type = 1>"
    return f"replica_groups = {groups}, channel_handle = {handle}{ids}"


def _reducer(fb, op, dtype) -> str:
    r = fb.region()
    t = tensor_type((), dtype)
    a, b = r.fresh(), r.fresh()
    out = r.emit(f"{op} {a}, {b} : {t}")
    r.raw(f"stablehlo.return {out} : {t}")
    return f"{fb.indent}  ^bb0({a}: {t}, {b}: {t}):\n" + "\n".join(r.lines)


def _reshape(fb, x, aval, shape):
    return fb.emit(f"stablehlo.reshape {x} : ({aval_type(aval)}) -> {tensor_type(shape, aval.dtype)}")


def _all_reduce(ctx, x, axis_name, op, what, axis_index_groups=None, aval=None):
    spmd = _spmd(ctx, what)
    fb = ctx.fb
    a = ctx.avals_in[0] if aval is None else aval
    dtype = xla_dtype(a.dtype)
    region = _reducer(fb, op, dtype)
    t = aval_type(a)
    return fb.emit(
        f'"stablehlo.all_reduce"({x}) ({{\n{region}\n{fb.indent}}}) '
        f"{{{_attrs(spmd, axis_name, what, axis_index_groups=axis_index_groups)}}} : ({t}) -> {t}"
    )


def _psum(ctx, x, *, axis_name, axis_index_groups=None):
    a = ctx.avals_in[0]
    if _dt.kind(a.dtype) == "c":
        # A complex sum over devices is the sums of its two parts: XLA's CPU compiler aborted the
        # process on an all-reduce of a broadcast complex constant (its algebraic simplifier's
        # HandleBroadcast, 'Check failed: buffer != nullptr': jit(grad) of a shard_map whose body
        # psums a complex value, seed 17019 of the sharded-program fuzzer; jax aborts too), and
        # its runtime has no complex reduction (JAX's 'Unsupported reduction computation').
        part = a.update(dtype=_dt.real_dtype(a.dtype))
        t_in, t_part = aval_type(a), aval_type(part)
        re = ctx.fb.emit(f"stablehlo.real {x} : ({t_in}) -> {t_part}")
        im = ctx.fb.emit(f"stablehlo.imag {x} : ({t_in}) -> {t_part}")
        sums = [
            _all_reduce(ctx, v, axis_name, "stablehlo.add", "psum", axis_index_groups, part) for v in (re, im)
        ]
        return complex_of(ctx.fb, *sums, a)
    op = "stablehlo.or" if a.dtype == np.bool_ else "stablehlo.add"
    return _all_reduce(ctx, x, axis_name, op, "psum", axis_index_groups)


def _pmax(ctx, x, *, axis_name, axis_index_groups=None):
    return _all_reduce(ctx, x, axis_name, "stablehlo.maximum", "pmax", axis_index_groups)


def _pmin(ctx, x, *, axis_name, axis_index_groups=None):
    return _all_reduce(ctx, x, axis_name, "stablehlo.minimum", "pmin", axis_index_groups)


def _all_gather(ctx, x, *, axis_name, axis, tiled, axis_index_groups=None):
    spmd = _spmd(ctx, "all_gather")
    fb = ctx.fb
    a, out = ctx.avals_in[0], ctx.avals_out[0]
    if not tiled:
        shape = (*a.shape[:axis], 1, *a.shape[axis:])
        x = _reshape(fb, x, a, shape)
        a = a.update(shape=shape)
    attrs = f"all_gather_dim = {axis} : i64, {_attrs(spmd, axis_name, 'all_gather', True, axis_index_groups)}"
    return fb.emit(f'"stablehlo.all_gather"({x}) {{{attrs}}} : ({aval_type(a)}) -> {aval_type(out)}')


def _psum_scatter(ctx, x, *, axis_name, scatter_dimension, tiled, axis_index_groups=None):
    spmd = _spmd(ctx, "psum_scatter")
    fb = ctx.fb
    a, out = ctx.avals_in[0], ctx.avals_out[0]
    s = scatter_dimension
    dtype = xla_dtype(a.dtype)
    op = "stablehlo.or" if a.dtype == np.bool_ else "stablehlo.add"
    region = _reducer(fb, op, dtype)
    scattered = out.shape if tiled else (*out.shape[:s], 1, *out.shape[s:])
    attrs = (
        f"scatter_dimension = {s} : i64, {_attrs(spmd, axis_name, 'psum_scatter', True, axis_index_groups)}"
    )
    y = fb.emit(
        f'"stablehlo.reduce_scatter"({x}) ({{\n{region}\n{fb.indent}}}) {{{attrs}}} : '
        f"({aval_type(a)}) -> {tensor_type(scattered, a.dtype)}"
    )
    return y if tiled else _reshape(fb, y, out.update(shape=scattered), out.shape)


def _all_to_all(ctx, x, *, axis_name, split_axis, concat_axis, tiled, axis_index_groups=None):
    spmd = _spmd(ctx, "all_to_all")
    fb = ctx.fb
    a, out = ctx.avals_in[0], ctx.avals_out[0]
    n = len(_groups(spmd, axis_name, "all_to_all", axis_index_groups)[0])
    s, c = split_axis, concat_axis
    if not tiled:
        # A unit dimension where the gathered axis goes (c in the output, which lacks s).
        at = c if c <= s else c + 1
        shape = (*a.shape[:at], 1, *a.shape[at:])
        x = _reshape(fb, x, a, shape)
        a = a.update(shape=shape)
        s = s + 1 if at <= s else s
        c = at
    mid = list(a.shape)
    mid[s] //= n
    mid[c] *= n
    attrs = (
        f"split_dimension = {s} : i64, concat_dimension = {c} : i64, split_count = {n} : i64, "
        f"{_attrs(spmd, axis_name, 'all_to_all', False, axis_index_groups)}"
    )
    y = fb.emit(f'"stablehlo.all_to_all"({x}) {{{attrs}}} : ({aval_type(a)}) -> {tensor_type(mid, a.dtype)}')
    return y if tiled else _reshape(fb, y, out.update(shape=tuple(mid)), out.shape)


def _ppermute(ctx, x, *, axis_name, perm):
    spmd = _spmd(ctx, "ppermute")
    fb = ctx.fb
    t = aval_type(ctx.avals_in[0])
    try:
        pairs = spmd.permute_pairs(axis_name, perm)
    except ValueError as e:
        raise LoweringError(str(e)) from None
    handle = f"#stablehlo.channel_handle<handle = {spmd.channel()}, type = 1>"
    return fb.emit(
        f'"stablehlo.collective_permute"({x}) {{source_target_pairs = {pairs}, channel_handle = {handle}}} : '
        f"({t}) -> {t}"
    )


def _axis_index(ctx, *, axis_name):
    spmd = _spmd(ctx, "axis_index")
    fb = ctx.fb
    try:
        table = spmd.coordinates(axis_name)
    except ValueError as e:
        raise LoweringError(str(e)) from None
    i32 = tensor_type((), np.int32)
    mesh = spmd.manual[-1][0] if spmd.manual else None
    free = [] if mesh is None else [n for n in mesh.axis_names if n not in set(spmd.manual_axes())]
    if not free:
        return _index_from_partition_id(fb, table)
    # A partially manual body (axis_names=): XLA's partitioner refuses partition_id where some
    # axes are still automatic, so the index is computed in a nested body manual over those too
    # (as JAX's lowering does), replicated over them.
    r = fb.region()
    r.raw(f"sdy.return {_index_from_partition_id(r, table)} : {i32}")
    name = fb.fresh()
    manual = "{" + ", ".join(f'"{n}"' for n in free) + "}"
    fb.lines.append(
        f"{fb.indent}{name} = sdy.manual_computation() in_shardings=[] "
        f"out_shardings=[<{spmd.mesh_symbol(mesh)}, []>] manual_axes={manual} () {{"
    )
    fb.lines.extend(r.lines)
    fb.lines.append(f"{fb.indent}}} : () -> {i32}")
    return name


def _index_from_partition_id(fb, table) -> str:
    """This device's entry of ``table`` (one per partition id)."""
    u32, i32 = tensor_type((), np.uint32), tensor_type((), np.int32)
    pid = fb.emit(f"stablehlo.partition_id : {u32}")
    pid = fb.emit(f"stablehlo.convert {pid} : ({u32}) -> {i32}")
    n = len(table)
    tab = fb.const(table, np.int32, (n,))
    one = tensor_type((1,), np.int32)
    picked = fb.emit(
        f"stablehlo.dynamic_slice {tab}, {pid}, sizes = [1] : ({tensor_type((n,), np.int32)}, {i32}) -> {one}"
    )
    return fb.emit(f"stablehlo.reshape {picked} : ({one}) -> {i32}")


register(co.psum_p)(_psum)
register(co.pmax_p)(_pmax)
register(co.pmin_p)(_pmin)
register(co.all_gather_p)(_all_gather)
register(co.all_gather_invariant_p)(_all_gather)  # (the same collective; invariant in types)
register(co.all_gather_reduced_p)(_all_gather)  # (the same collective; reduced in types)
register(co.pcast_p)(lambda ctx, x, **params: x)  # (a change of type only)
register(co.psum_scatter_p)(_psum_scatter)
register(co.all_to_all_p)(_all_to_all)
register(co.ppermute_p)(_ppermute)
register(co.axis_index_p)(_axis_index)
