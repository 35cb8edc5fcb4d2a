"""Custom calls that a user's lowering rule builds with jaxlib's MLIR bindings: JAX's
``mlir.custom_call``, ``mlir.emit_python_callback`` and the op of ``ffi.ffi_lowering``.

Layer: xla_bridge (compiler half). May import: stdlib, numpy, jaxlib's MLIR Python bindings (only
when a library asks for them, as ``user_lowering``, whose types, attributes and contexts these
build on) and the sibling ``user_lowering``. Never the surface, never jax.

A rule running under NOTE: [spliced lowering rules] builds its operations in the rule's own MLIR
module; the ops here are that module's custom calls. A host callback joins the emitted module's
list of callbacks, so the runtime hands it to the compiler as it does funcgrad's own callbacks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from funcgrad.xla_bridge.user_lowering import LoweringRuleContext, aval_to_ir_type, ir_attribute
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["custom_call", "emit_python_callback", "ffi_custom_call"]

# Python callbacks on each platform (as xla_bridge/rules/callbacks.py).
_CALLBACK_TARGETS = {"cpu": "xla_ffi_python_cpu_callback", "cuda": "xla_ffi_python_gpu_callback"}


# ----------------------------------------------------------------------------------------------
# Host callbacks from a rule


def emit_python_callback(
    ctx: LoweringRuleContext,
    callback: Callable,
    token,
    operands: Sequence,
    operand_avals: Sequence,
    result_avals: Sequence,
    *,
    has_side_effect: bool,
    returns_token: bool = True,
    partitioned: bool = False,
    sharding=None,
):
    """A custom call running ``callback`` (NumPy arrays in, a sequence of arrays out) in Python;
    returns ``(results, token, keepalive)`` as JAX's does. With a ``token`` the call is ordered:
    it takes the token first and returns a new one."""
    mctx = ctx.module_context
    mb = mctx.builder
    platform = mctx.platforms[0]
    if mb is None or platform not in _CALLBACK_TARGETS:
        raise ValueError(f"emit_python_callback is not supported on {platform!r} in funcgrad")
    if partitioned:
        raise NotImplementedError("funcgrad's emit_python_callback has no partitioned form")
    n_out = len(result_avals)

    def host(*arrays):
        tok = None
        if token is not None:
            tok, arrays = arrays[0], arrays[1:]
        outs = callback(*[np.array(a) for a in arrays])
        outs = [np.asarray(o, dtype=a.dtype).reshape(a.shape) for o, a in zip(outs or (), result_avals)]
        if len(outs) != n_out:
            raise RuntimeError(f"the callback returned {len(outs)} values, declared {n_out}")
        return (tok, *outs) if token is not None else tuple(outs)

    index = len(mb.host_callbacks)
    mb.host_callbacks.append(host)
    out_types = [aval_to_ir_type(a) for a in result_avals]
    operands = list(operands)
    if token is not None:
        operands = [token, *operands]
        out_types = [hlo.TokenType.get(), *out_types]
    op = hlo.CustomCallOp(
        out_types,
        operands,
        call_target_name=ir.StringAttr.get(_CALLBACK_TARGETS[platform]),
        has_side_effect=ir.BoolAttr.get(bool(has_side_effect)),
        api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4),
        backend_config=ir.DictAttr.get({"index": ir.IntegerAttr.get(ir.IntegerType.get_unsigned(64), index)}),
    )
    results = list(op.results)
    new_token = None
    if token is not None:
        new_token, results = results[0], results[1:]
    return results, new_token, host


# ----------------------------------------------------------------------------------------------
# FFI custom calls from a rule (funcgrad.ffi.build_ffi_lowering_function)


def _default_layouts(avals):
    return [tuple(reversed(range(len(a.shape)))) for a in avals]


def _minor_to_major(layout, default) -> tuple:
    """A lowering rule's layout as XLA's minor-to-major order: a tuple is one already, a ``Layout``
    (``major_to_minor``) is reversed, None is ``default`` (row-major), as JAX's ffi_lowering."""
    if layout is None:
        return default
    major_to_minor = getattr(layout, "major_to_minor", None)
    if major_to_minor is None:
        return tuple(layout)
    if getattr(layout, "tiling", None):
        raise ValueError("The FFI does not support layouts with tiling")
    return tuple(major_to_minor)[::-1]


def custom_call(
    call_target_name: str,
    *,
    result_types,
    operands,
    backend_config="",
    has_side_effect: bool = False,
    result_shapes=None,
    called_computations=(),
    api_version: int = 2,
    operand_output_aliases=None,
    operand_layouts=None,
    result_layouts=None,
    extra_attributes=None,
):
    """A ``stablehlo.custom_call`` operation built in the current MLIR context and insertion point
    (a lowering rule's), with JAX's ``mlir.custom_call`` signature and attributes: a string or
    bytes ``backend_config`` (a dict goes to ``mhlo.backend_config`` with ``api_version`` 1, as
    JAX's), ``operand_output_aliases`` ``{operand: result}``, layouts as dimension orders.
    ``result_shapes`` (dynamic result shapes) are appended to the operands as JAX does.

    >>> from funcgrad.xla_bridge.user_lowering import func, make_ir_context
    >>> ctx = make_ir_context()
    >>> with ctx, ir.Location.unknown():
    ...     module = ir.Module.create()
    ...     with ir.InsertionPoint(module.body):
    ...         f32 = ir.RankedTensorType.get((), ir.F32Type.get())
    ...         fn = func.FuncOp("main", ir.FunctionType.get([f32], [f32]))
    ...         with ir.InsertionPoint(fn.add_entry_block()):
    ...             op = custom_call("my_new_prim", result_types=[f32], operands=[fn.arguments[0]])
    ...             _ = func.ReturnOp(op.results)
    >>> print(str(op).split(" : (")[0])
    %0 = stablehlo.custom_call @my_new_prim(%arg0) {api_version = 2 : i32, backend_config = ""}
    """
    operands = list(operands)
    i32 = ir.IntegerType.get_signless(32)
    if backend_config is None:
        config = ir.StringAttr.get("")
    elif isinstance(backend_config, str | bytes):
        config = ir.StringAttr.get(backend_config)
    elif isinstance(backend_config, dict):
        config, api_version = ir.StringAttr.get(""), 1  # (JAX's: the dict rides in mhlo.backend_config)
    else:
        raise ValueError("custom_call backend_config unexpected type: " + str(backend_config))
    attributes = dict(
        call_target_name=ir.StringAttr.get(call_target_name),
        has_side_effect=ir.BoolAttr.get(has_side_effect),
        backend_config=config,
        api_version=ir.IntegerAttr.get(i32, int(api_version)),
        called_computations=ir.ArrayAttr.get([ir.FlatSymbolRefAttr.get(n) for n in called_computations]),
    )
    if operand_output_aliases is not None:
        attributes["output_operand_aliases"] = ir.ArrayAttr.get(
            [
                hlo.OutputOperandAlias.get(
                    output_tuple_indices=[out] if len(result_types) > 1 else [],
                    operand_index=inp,
                    operand_tuple_indices=[],
                )
                for inp, out in operand_output_aliases.items()
            ]
        )
    if extra_attributes is not None:
        attributes.update(extra_attributes)
    if result_shapes is not None:
        n = len(operands)
        attributes["indices_of_shape_operands"] = ir.DenseIntElementsAttr.get(
            np.arange(n, n + len(result_shapes), dtype=np.int64)
        )
        if operand_layouts is not None:
            operand_layouts = list(operand_layouts) + [(0,)] * len(result_shapes)
        operands = operands + list(result_shapes)

    def layouts(ls):
        return ir.ArrayAttr.get(
            [
                ir.DenseIntElementsAttr.get(np.atleast_1d(np.asarray(x, np.int64)), type=ir.IndexType.get())
                for x in ls
            ]
        )

    if operand_layouts is not None:
        attributes["operand_layouts"] = layouts(operand_layouts)
    if result_layouts is not None:
        attributes["result_layouts"] = layouts(result_layouts)
    op = hlo.CustomCallOp.build_generic(results=list(result_types), operands=operands, attributes=attributes)
    if isinstance(backend_config, dict):
        op.operation.attributes["mhlo.backend_config"] = ir.DictAttr.get(backend_config)
    return op


def ffi_custom_call(
    ctx: LoweringRuleContext,
    target: str,
    operands: Sequence,
    params: dict,
    *,
    operand_layouts=None,
    result_layouts=None,
    backend_config=None,
    api_version: int = 4,
    has_side_effect: bool = False,
    operand_output_aliases: dict | None = None,
    result_types=None,
    extra_attributes=None,
    **unused,
):
    """The ``stablehlo.custom_call`` op of an FFI target, built with the bindings (the attributes
    as in NOTE: [FFI custom call form]: JAX's ``ffi_lowering`` through ``mlir.custom_call``);
    ``params`` become the handler's attributes, ``extra_attributes`` (``mhlo.frontend_attributes``
    of a batch-partitionable call, ...) are set on the op."""
    if result_types is None:
        result_types = [aval_to_ir_type(a) for a in ctx.avals_out]
    if api_version >= 4:
        if backend_config is not None and not isinstance(backend_config, dict):
            raise ValueError("When api_version > 4, backend_config must be a dictionary.")
        config = {k: ir_attribute(v) for k, v in {**(backend_config or {}), **params}.items()}
    else:
        if params:
            raise ValueError(
                "The use of ffi_call attributes requires a custom call API version of at least 4; "
                f"got api_version={api_version}."
            )
        config = backend_config or ""
    in_layouts = operand_layouts if operand_layouts is not None else _default_layouts(ctx.avals_in)
    out_layouts = result_layouts if result_layouts is not None else _default_layouts(ctx.avals_out)
    return custom_call(
        target,
        result_types=list(result_types),
        operands=list(operands),
        backend_config=config,
        has_side_effect=bool(has_side_effect),
        api_version=api_version,
        operand_output_aliases=dict(sorted((operand_output_aliases or {}).items())),
        operand_layouts=[
            _minor_to_major(lay, d) for lay, d in zip(in_layouts, _default_layouts(ctx.avals_in))
        ],
        result_layouts=[
            _minor_to_major(lay, d) for lay, d in zip(out_layouts, _default_layouts(ctx.avals_out))
        ],
        extra_attributes=extra_attributes,
    )
