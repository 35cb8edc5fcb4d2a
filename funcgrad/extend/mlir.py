"""``funcgrad.extend.mlir``: JAX's ``jax.extend.mlir`` -- jaxlib's MLIR bindings and StableHLO
portable-artifact helpers, for library authors who read or write modules.

Layer: surface. Everything comes from ``funcgrad.xla_bridge.portable`` (the bridge is the only
importer of jaxlib): ``ir``, ``passmanager`` and ``dialects`` are jaxlib's MLIR Python modules;
``serialize_portable_artifact``, ``deserialize_portable_artifact``, ``refine_polymorphic_shapes``
and ``hlo_to_stablehlo`` are jaxlib's functions with JAX's signatures (deserializing without a
context uses a fresh one with the StableHLO dialects loaded, where jaxlib would raise).
``lower_with_sharding_in_types`` is the helper for funcgrad's text lowering rules.

>>> from funcgrad.extend import mlir
>>> text = '''module {
...   func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
...     %0 = stablehlo.abs %arg0 : tensor<2xf32>
...     return %0 : tensor<2xf32>
...   }
... }'''
>>> blob = mlir.serialize_portable_artifact(text, mlir.portable.target_version())
>>> "stablehlo.abs" in str(mlir.deserialize_portable_artifact(blob))
True
"""

from __future__ import annotations

from funcgrad.xla_bridge import portable
from funcgrad.xla_bridge.emitter import aval_type

# (``ir``, ``passmanager`` and ``dialects`` are jaxlib's MLIR modules, reachable as attributes as in
# JAX; they are not funcgrad's API, so not in ``__all__`` and not documented here.)
__all__ = [
    "deserialize_portable_artifact",
    "hlo_to_stablehlo",
    "lower_with_sharding_in_types",
    "refine_polymorphic_shapes",
    "serialize_portable_artifact",
]

ir = portable.ir
passmanager = portable.passmanager
dialects = portable.dialects
# (a package to the import system, so ``from jax.extend.mlir.dialects import func`` finds the
# dialect modules held here, as JAX's package does; funcgrad has no submodules of its own here)
__path__: list = []


def serialize_portable_artifact(mlir_module, target: str, use_mixed_serialization: bool = False) -> bytes:
    """The StableHLO portable artifact of ``mlir_module`` (text, bytecode or an ``ir.Module``)
    written at the StableHLO version ``target`` (e.g. ``"1.0.0"``)."""
    if isinstance(mlir_module, ir.Module):
        mlir_module = portable.bytecode(mlir_module)
    return portable.raw.serialize_portable_artifact(mlir_module, target, use_mixed_serialization)


def deserialize_portable_artifact(mlir_module: bytes, context=None):
    """The ``ir.Module`` of a portable artifact, in ``context`` (the current one, or a fresh one
    with the StableHLO dialects)."""
    if context is None:
        try:
            context = ir.Context.current
        except ValueError:  # no context is current
            context = None
    if context is None:
        context = portable.make_context()
    with context:
        return portable.raw.deserialize_portable_artifact(bytes(mlir_module), context)


def refine_polymorphic_shapes(
    mlir_module: bytes,
    enable_shape_assertions: bool = True,
    validate_static_shapes: bool = True,
    enable_shardy: bool = False,
) -> bytes:
    """jaxlib's shape refinement: the module (bytecode or text, its ``@main`` with static
    parameter types) with every dynamic shape made static; returns the refined module."""
    if isinstance(mlir_module, str):
        mlir_module = mlir_module.encode()
    return portable.raw.refine_polymorphic_shapes(
        mlir_module,
        enable_shape_assertions=enable_shape_assertions,
        validate_static_shapes=validate_static_shapes,
        enable_shardy=enable_shardy,
    )


def hlo_to_stablehlo(computation: bytes) -> bytes:
    """The StableHLO module (bytecode) of a serialized XLA ``HloModuleProto``."""
    return portable.raw.hlo_to_stablehlo(computation)


def lower_with_sharding_in_types(ctx, op: str, aval, sharding_proto=None) -> str:
    """In a funcgrad lowering rule (``ctx`` the rule's ``LoweringContext``, ``op`` an SSA value):
    ``op`` constrained to the sharding in ``aval``'s type (an ``sdy.sharding_constraint``), or
    ``op`` itself when the aval has no sharding or the program runs on one device.

    >>> from funcgrad.kernel.ir import ShapedArray
    >>> lower_with_sharding_in_types(None, "%v0", ShapedArray((2,), "float32"))
    '%v0'
    """
    sharding = getattr(aval, "_sharding", None)
    if sharding is None or ctx is None:
        return op
    spmd = ctx.fb.module.spmd
    if spmd is None or spmd.manual:
        return op
    return ctx.fb.emit(
        f"sdy.sharding_constraint {op} {spmd.sharding(sharding.mesh, sharding.spec)} : {aval_type(aval)}"
    )
