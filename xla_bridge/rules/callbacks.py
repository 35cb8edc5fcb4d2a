"""Lowering rules of the host callbacks (primitives/callbacks.py): a custom call of XLA's Python
callback target, ``xla_ffi_python_cpu_callback`` (``xla_ffi_python_gpu_callback`` in a module for
the GPU, registered by the CUDA extension: NOTE: [CUDA extension]), whose
``index`` attribute picks the Python function among the module's ``host_callbacks``; the runtime
hands that list to the compiler with the module (``runtime.compile(host_callbacks=...)``).

The function XLA calls receives NumPy arrays (copied here: XLA may reuse their memory after the
call returns) and must return exactly the declared results. An ordered debug callback takes and
returns a token, chained through the function body, so ordered callbacks run in program order;
an ordered ``io_callback`` joins the same chain.

Layer: xla_bridge (compiler half). Imports the primitive catalog, the kernel (staging: a debug
callback in a partially manual shard_map body lowers as a small program of primitives, through
``rules._lapack.lower_fun``) and ``xla_bridge.emitter``.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import collectives as co
from funcgrad.primitives import control_flow as cf
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import sharding as shp
from funcgrad.primitives.callbacks import check_results, debug_callback_p, io_callback_p, pure_callback_p
from funcgrad.xla_bridge.emitter import aval_type, register
from funcgrad.xla_bridge.rules._lapack import lower_fun

from funcgrad.kernel import batching
from funcgrad.kernel.ir import ShapedArray
from funcgrad.kernel.partial_eval import trace_to_jaxpr

# XLA's Python callback handler per platform.
CALLBACK_TARGETS = {"cpu": "xla_ffi_python_cpu_callback", "cuda": "xla_ffi_python_gpu_callback"}
# XLA's handler of callbacks on buffers (``jax.experimental.buffer_callback``): the function gets an
# FFI ExecutionContext and the operands' and results' buffers (jaxlib's ``ffi.Buffer``), in place.
BUFFER_CALLBACK_TARGETS = {"cpu": "xla_buffer_python_cpu_callback", "cuda": "xla_buffer_python_gpu_callback"}


def _custom_call(
    ctx, args, host, out_types, side_effect: bool, token: str | None = None, sharding=None, partitioned=False,
    targets=CALLBACK_TARGETS, aliases=(),
):  # fmt: skip
    mb = ctx.fb.module
    index = len(mb.host_callbacks)
    mb.host_callbacks.append(host)
    in_types = [aval_type(a) for a in ctx.avals_in]
    if token is not None:
        args, in_types, out_types = (
            [token, *args],
            ["!stablehlo.token", *in_types],
            ["!stablehlo.token", *out_types],
        )
    attrs = (
        f"api_version = 4 : i32, has_side_effect = {'true' if side_effect else 'false'}, "
        f"backend_config = {{index = {index} : ui64}}"
    )
    if mb.spmd is not None and mb.spmd.manual and sharding is not None:
        raise NotImplementedError("callbacks do not support specifying sharding inside spmd computations")
    if mb.spmd is not None and not mb.spmd.manual:
        # A program over several devices runs the callback once, on its first device or the one
        # its ``sharding`` names, as JAX's (maximal sharding; XLA's partitioner refuses a
        # side-effecting custom call without one). In a shard_map body (manual axes) each device
        # runs it on its own block.
        attrs += f", sdy.sharding = {mb.spmd.on_device(_device_index(mb.spmd, sharding), len(out_types))}"
    if aliases:
        many = len(out_types) > 1
        attrs += (
            ", output_operand_aliases = ["
            + ", ".join(
                f"#stablehlo.output_operand_alias<output_tuple_indices = [{o if many else ''}], "
                f"operand_index = {i}, operand_tuple_indices = []>"
                for i, o in aliases
            )
            + "]"
        )
    target = targets.get(mb.platform, targets["cpu"])
    if partitioned:
        # (XLA's partitioner runs this target on each device, on its local blocks of the operands,
        # whatever the custom call's own sharding: JAX's debug callbacks with partitioned=True; its
        # partitioner needs the operands' layouts written, as JAX's lowering writes them)
        target = target.replace("xla_ffi_", "xla_ffi_partitioned_")
        layouts = [_layout(a.ndim) for a in ctx.avals_in]
        attrs += f", operand_layouts = [{', '.join(layouts)}], result_layouts = []"
    rhs = (
        f"stablehlo.custom_call @{target}({', '.join(args)}) {{{attrs}}} : "
        f"({', '.join(in_types)}) -> ({', '.join(out_types)})"
    )
    return ctx.fb.emit_results(rhs, len(out_types))


def _layout(ndim: int) -> str:
    """The row-major layout of an operand of rank ``ndim`` (minor-to-major), as an attribute."""
    if ndim == 0:
        return "dense<> : tensor<0xindex>"
    dims = ", ".join(str(d) for d in reversed(range(ndim)))
    return f"dense<[{dims}]> : tensor<{ndim}xindex>"


def _device_index(spmd, sharding) -> int:
    """The position in the program's device assignment of the device ``sharding`` names (0: none)."""
    if sharding is None:
        return 0
    (device,) = sharding.device_set
    try:
        return spmd.device_ids.index(device.id)
    except ValueError:
        raise ValueError(
            f"Sharding provided to pure_callback specifies a device {device} that is not in the device "
            f"assignment ({list(spmd.device_ids)})"
        ) from None


def _results_host(name: str, callback, result_avals):
    """The host function of a callback with declared results: copies in, checked results out."""

    def host(*arrays):
        return tuple(check_results(name, callback(*[np.array(a) for a in arrays]), result_avals))

    return host


@register(pure_callback_p)
def _pure_callback(ctx, *args, callback, result_avals, vmap_method, sharding=None):
    host = _results_host("pure_callback", callback, result_avals)
    out_types = [aval_type(a) for a in ctx.avals_out]
    return _custom_call(ctx, args, host, out_types, side_effect=False, sharding=sharding)


@register(debug_callback_p)
def _debug_callback(ctx, *args, callback, ordered, partitioned=False):
    spmd = ctx.fb.module.spmd
    auto = _auto_axes(spmd)
    if auto and not ordered:
        # In a partially manual shard_map body, as JAX's lowering: a shard_map manual over the
        # automatic axes too, whose device 0 along them runs the callback (XLA's partitioner
        # refuses a side-effecting custom call it would have to replicate).
        mesh = spmd.manual[-1][0]
        params = {"callback": callback, "ordered": ordered, "partitioned": partitioned}
        return lower_fun(
            ctx.fb, lambda *xs: _on_first_auto_device(mesh, auto, xs, params), ctx.avals_in, args
        )
    if not ordered:

        def host(*arrays):
            callback(*[np.array(a) for a in arrays])
            return ()

        _custom_call(ctx, args, host, [], side_effect=True, partitioned=partitioned)
        return []

    def ordered_host(token, *arrays):
        callback(*[np.array(a) for a in arrays])
        return (token,)

    _chain(ctx, args, ordered_host, [], partitioned=partitioned)
    return []


def _auto_axes(spmd) -> tuple:
    """The automatic mesh axes of the partially manual shard_map body being lowered (none
    outside one, or in a fully manual one)."""
    if spmd is None or not spmd.manual:
        return ()
    manual = set(spmd.manual_axes())
    return tuple(n for n in spmd.manual[-1][0].axis_names if n not in manual)


def _on_first_auto_device(mesh, auto, xs, params) -> list:
    avals = [ShapedArray(np.shape(x), x.dtype) for x in xs]

    def body(*ys):
        first = ew.eq_p.bind(co.axis_index_p.bind(axis_name=auto), np.int32(0))
        index = ew.convert_element_type(first, np.int32)
        skip = trace_to_jaxpr(lambda *zs: [], avals)
        run = trace_to_jaxpr(lambda *zs: list(debug_callback_p.bind(*zs, **params)), avals)
        cf.cond_p.bind(index, *ys, branches=(skip, run))
        return []

    with batching.extend_axis_env(shp.mesh_frames(mesh, auto)):
        inner = trace_to_jaxpr(body, avals)
    in_specs = tuple(((),) * a.ndim for a in avals)
    shp.shard_map_p.bind(*xs, jaxpr=inner, mesh=mesh, in_specs=in_specs, out_specs=(), manual_axes=auto)
    return []


def _chain(ctx, args, host, out_types, sharding=None, partitioned=False):
    """A side-effecting custom call threaded on the function body's token chain; its results."""
    fb = ctx.fb
    if fb.effect_token is None:
        fb.effect_token = fb.emit("stablehlo.after_all : !stablehlo.token")
    token, *outs = _custom_call(
        ctx,
        args,
        host,
        out_types,
        side_effect=True,
        token=fb.effect_token,
        sharding=sharding,
        partitioned=partitioned,
    )
    fb.effect_token = token
    return outs


@register(io_callback_p)
def _io_callback(ctx, *args, callback, result_avals, ordered, sharding=None):
    out_types = [aval_type(a) for a in ctx.avals_out]
    host = _results_host("io_callback", callback, result_avals)
    if not ordered:
        return _custom_call(ctx, args, host, out_types, side_effect=True, sharding=sharding)
    return _chain(ctx, args, lambda token, *arrays: (token, *host(*arrays)), out_types, sharding)


def lower_buffer_callback(
    ctx,
    *args,
    callback,
    result_avals,
    has_side_effect,
    input_output_aliases,
    command_buffer_compatible,
    **params,
):
    """The custom call of a ``buffer_callback`` equation (funcgrad/experimental/buffer_callback.py,
    whose primitives are outside the catalog): XLA's buffer-callback handler calls ``callback``
    with its execution context and the operand, then result, buffers; results alias the operands
    ``input_output_aliases`` names."""
    platform = ctx.fb.module.platform
    if platform not in BUFFER_CALLBACK_TARGETS:
        raise ValueError(f"`buffer_callback` not supported on {platform} backend.")  # (JAX's words)
    targets = BUFFER_CALLBACK_TARGETS
    if command_buffer_compatible and platform == "cuda":  # (replayed from a CUDA graph, as JAX's)
        targets = {**targets, platform: targets[platform] + "_cmd_buffer"}
    out_types = [aval_type(a) for a in ctx.avals_out]
    return _custom_call(
        ctx,
        args,
        callback,
        out_types,
        side_effect=has_side_effect,
        targets=targets,
        aliases=input_output_aliases,
    )
