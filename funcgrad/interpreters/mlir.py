"""``funcgrad.interpreters.mlir``: JAX's ``jax.interpreters.mlir`` -- lowering rules of primitives.

Layer: surface. Imports ``funcgrad.xla_bridge.user_lowering`` and ``user_custom_calls`` (which hold
the machinery and are the only places that touch jaxlib's MLIR bindings), the kernel and
``funcgrad.sharding``.

A library gives its primitive a lowering the way JAX's documentation does:

- ``register_lowering(p, lower_fun(fun, multiple_results=False))``: ``fun`` is a Python function
  of funcgrad operations, lowered inline by funcgrad's own emitter (no MLIR objects involved);
- ``register_lowering(p, rule)`` with a rule that builds ops with jaxlib's MLIR bindings,
  ``lambda ctx, x, y, z: [hlo.AddOp(hlo.MulOp(x, y), z).result]`` (``hlo`` is
  ``jaxlib.mlir.dialects.stablehlo``, ``jax._src.lib.mlir.dialects.hlo`` under the ``import jax``
  alias): it runs in a function of its own whose printed text funcgrad splices into the module
  it emits (NOTE: [spliced lowering rules] in xla_bridge/user_lowering.py).

Writing a rule sets the emitter's table entry of the primitive (``xla_bridge.emitter.lowering_rules``),
so the primitive runs under ``jit`` and everything jit composes with; there is no second registry.

>>> import numpy as np, funcgrad
>>> from funcgrad.kernel.core import Primitive
>>> from funcgrad.kernel.ir import ShapedArray
>>> from jaxlib.mlir.dialects import stablehlo as hlo
>>> fma_p = Primitive("doc_fma")
>>> _ = fma_p.def_impl(lambda x, y, z: x * y + z)
>>> _ = fma_p.def_abstract_eval(lambda x, y, z: ShapedArray(x.shape, x.dtype))
>>> register_lowering(fma_p, lambda ctx, x, y, z: [hlo.AddOp(hlo.MulOp(x, y), z).result])
>>> funcgrad.jit(fma_p.bind)(np.float32(2), np.float32(3), np.float32(1))
Array(7., dtype=float32)
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, ShapedArray
from funcgrad.sharding import Mesh
from funcgrad.xla_bridge import user_lowering as _ul
from funcgrad.xla_bridge.user_custom_calls import custom_call, emit_python_callback
from funcgrad.xla_bridge.user_lowering import (
    LoweringRuleContext,
    ModuleContext,
    TokenSet,
    dtype_to_ir_type,
    ir,
    ir_attribute,
    jaxpr_subcomp,
    lower_fun,
    make_ir_context,
    merge_mlir_modules,
    module_to_bytecode,
    module_to_string,
)

__all__ = [
    "AxisContext",
    "ConstantHandler",
    "DEVICE_TO_DEVICE_TYPE",
    "LoweringParameters",
    "LoweringResult",
    "LoweringRule",
    "LoweringRuleContext",
    "Mesh",
    "MeshAxisName",
    "ModuleContext",
    "RECV_FROM_HOST_TYPE",
    "SEND_TO_HOST_TYPE",
    "SPMDAxisContext",
    "ShapePolyLoweringState",
    "ShardingContext",
    "Token",
    "TokenSet",
    "Value",
    "aval_to_ir_type",
    "aval_to_ir_types",
    "core_call_lowering",
    "custom_call",
    "dense_int_array",
    "dense_int_elements",
    "dtype_to_ir_type",
    "emit_python_callback",
    "flatten_ir_types",
    "flatten_ir_values",
    "i32_attr",
    "i64_attr",
    "ir_attribute",
    "ir_constant",
    "ir_constants",
    "ir_tree_registry",
    "ir_type_handlers",
    "jaxpr_subcomp",
    "lower_fun",
    "lower_jaxpr_to_fun",
    "lower_jaxpr_to_module",
    "lowerable_effects",
    "make_ir_context",
    "merge_mlir_modules",
    "module_to_bytecode",
    "module_to_string",
    "register_constant_handler",
    "register_lowering",
    "shape_tensor",
    "token_type",
    "unflatten_ir_values_like_types",
]

Value = ir.Value
Token = ir.Value
ConstantHandler = Callable[[Any], Sequence[ir.Value]]
LoweringRule = Callable[..., Sequence[Any]]
MeshAxisName = Any

# Kinds of XLA channels (JAX's constants, used by send/recv lowerings).
DEVICE_TO_DEVICE_TYPE = 1
SEND_TO_HOST_TYPE = 2
RECV_FROM_HOST_TYPE = 3


def register_lowering(
    prim, rule: Callable, platform: str | None = None, inline: bool = True, cacheable: bool = True
):
    """Make ``rule`` the lowering of ``prim`` under ``jit`` on ``platform`` (None: all platforms).

    ``rule(ctx, *operands, **params)`` receives a ``LoweringRuleContext`` and ``ir.Value``
    operands and returns a list of ``ir.Value``, or is made by ``lower_fun``. ``inline`` and
    ``cacheable`` are accepted for JAX's signature (XLA inlines the spliced function anyway).
    See the module docstring for an example.
    """
    del inline, cacheable
    _ul.register_user_lowering(prim, rule, platform)


# ----------------------------------------------------------------------------------------------
# Types and attributes


def _aval_arg(args):
    # JAX 0.10 takes ``(ctx, aval)``; older code passes the aval alone.
    if len(args) not in (1, 2):
        raise TypeError("aval_to_ir_type takes (aval) or (module_context, aval)")
    return args[-1]


def _shaped_ir_type(aval):
    return _ul.aval_to_ir_type(aval)


# JAX's table: aval type -> its IR type(s); funcgrad's avals are ShapedArrays (and subclasses).
ir_type_handlers: dict[type, Callable] = {ShapedArray: _shaped_ir_type}


def _handler(aval):
    for t in type(aval).__mro__:
        h = ir_type_handlers.get(t)
        if h is not None:
            return h
    if hasattr(aval, "shape") and hasattr(aval, "dtype"):
        return _shaped_ir_type
    raise TypeError(f"no MLIR type for the abstract value {aval!r} (register one in ir_type_handlers)")


def aval_to_ir_type(*args) -> ir.Type:
    """The MLIR type of an abstract value: ``aval_to_ir_type([module_ctx,] aval)``.

    >>> from funcgrad.kernel.ir import ShapedArray
    >>> with make_ir_context():
    ...     print(aval_to_ir_type(ShapedArray((2, 3), np.float32)))
    tensor<2x3xf32>
    """
    aval = _aval_arg(args)
    t = _handler(aval)(aval)
    return t[0] if isinstance(t, tuple | list) else t


def aval_to_ir_types(*args) -> tuple[ir.Type, ...]:
    """The MLIR types of an abstract value, as a tuple (one for an array)."""
    aval = _aval_arg(args)
    t = _handler(aval)(aval)
    return tuple(t) if isinstance(t, tuple | list) else (t,)


def token_type() -> ir.Type:
    """``!stablehlo.token``."""
    return _ul.hlo.TokenType.get()


def dense_int_elements(xs) -> ir.DenseElementsAttr:
    """A 1-D ``i64`` dense elements attribute."""
    return ir.DenseIntElementsAttr.get(np.asarray(xs, np.int64))


def dense_int_array(xs) -> ir.DenseI64ArrayAttr:
    """An ``array<i64: ...>`` attribute.

    >>> with make_ir_context():
    ...     print(dense_int_array([1, 2]))
    array<i64: 1, 2>
    """
    return ir.DenseI64ArrayAttr.get([int(x) for x in xs])


def i32_attr(i) -> ir.IntegerAttr:
    """A signless 32-bit integer attribute."""
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(i))


def i64_attr(i) -> ir.IntegerAttr:
    """A signless 64-bit integer attribute.

    >>> with make_ir_context():
    ...     print(i64_attr(5))
    5 : i64
    """
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(i))


# ----------------------------------------------------------------------------------------------
# Constants


def _array_constant(val) -> tuple[ir.Value, ...]:
    return (_ul.ir_constant(np.asarray(val)),)


# JAX's table of ``register_constant_handler``: value type -> its IR constant(s).
_constant_handlers: dict[type, ConstantHandler] = {np.ndarray: _array_constant, np.generic: _array_constant}


def register_constant_handler(type_: type, handler_fun: ConstantHandler) -> None:
    """Teach ``ir_constant(s)`` to lower values of ``type_``: ``handler_fun(val)`` returns the
    ``ir.Value`` s of the constant."""
    _constant_handlers[type_] = handler_fun


def ir_constants(val, **kwargs) -> tuple[ir.Value, ...]:
    """The IR constant(s) of a Python or NumPy value (or of a registered type)."""
    for t in type(val).__mro__:
        handler = _constant_handlers.get(t)
        if handler is not None:
            return tuple(handler(val))
    if hasattr(val, "__array__") or isinstance(val, int | float | complex | bool | list | tuple):
        return _array_constant(val)
    raise TypeError(f"no constant handler for a value of type {type(val).__name__}")


def ir_constant(val, **kwargs) -> ir.Value:
    """The ``stablehlo.constant`` of ``val`` (exact to the bit), at the current insertion point.

    >>> with make_ir_context(), ir.Location.unknown():
    ...     m = ir.Module.create()
    ...     with ir.InsertionPoint(m.body):
    ...         print(ir_constant(np.float32(1.5)).type)
    tensor<f32>
    """
    values = ir_constants(val, **kwargs)
    if len(values) != 1:
        raise TypeError(f"ir_constant: the value lowers to {len(values)} IR values; use ir_constants")
    return values[0]


def shape_tensor(*args) -> ir.Value:
    """A 1-D ``i32`` tensor of the sizes: ``shape_tensor([module_ctx,] sizes)``; a size may be an
    ``ir.Value`` (an i32 scalar or ``tensor<1xi32>``)."""
    sizes = args[-1]
    if all(isinstance(d, int | np.integer) for d in sizes):
        return _ul.ir_constant(np.array(sizes, np.int32))
    int1 = ir.Type.parse("tensor<1xi32>")
    pieces = []
    for d in sizes:
        if isinstance(d, int | np.integer):
            pieces.append(_ul.ir_constant(np.array([d], np.int32)))
        elif ir.RankedTensorType(d.type).rank == 0:
            pieces.append(_ul.hlo.ReshapeOp(int1, d).result)
        else:
            pieces.append(d)
    if len(pieces) == 1:
        return pieces[0]
    return _ul.hlo.ConcatenateOp(pieces, i64_attr(0)).result


# ----------------------------------------------------------------------------------------------
# Trees of IR values


class _IrTreeRegistry:
    """JAX's ``ir_tree_registry``: lists and tuples of ``ir.Value`` / ``ir.Type`` are nodes, the
    values and types leaves (``flatten`` returns the leaves and a function-like treedef)."""

    def flatten(self, tree):
        leaves = []
        shape = _flatten_into(tree, leaves)
        return leaves, _IrTreeDef(shape)


class _IrTreeDef:
    def __init__(self, shape):
        self.shape = shape

    def unflatten(self, leaves):
        it = iter(leaves)
        return _rebuild(self.shape, it)


def _flatten_into(tree, leaves):
    if isinstance(tree, list | tuple | ir.OpResultList):
        return [_flatten_into(t, leaves) for t in tree]
    leaves.append(tree)
    return None


def _rebuild(shape, it):
    if shape is None:
        return next(it)
    return [_rebuild(s, it) for s in shape]


ir_tree_registry = _IrTreeRegistry()


def flatten_ir_values(xs) -> list[ir.Value]:
    """The values of a sequence whose items are values or sequences of values, flat."""
    out = []
    for x in xs:
        out.extend(x if isinstance(x, list | tuple | ir.OpResultList) else [x])
    return out


def flatten_ir_types(xs) -> list[ir.Type]:
    """The types of a sequence whose items are types or sequences of types, flat."""
    return flatten_ir_values(xs)


def unflatten_ir_values_like_types(xs, ys) -> list:
    """Group the flat values ``xs`` like the (possibly nested) types ``ys``."""
    it = iter(xs)
    out = []
    for y in ys:
        out.append([next(it) for _ in y] if isinstance(y, list | tuple) else next(it))
    return out


# ----------------------------------------------------------------------------------------------
# Lowering jaxprs


class ShapePolyLoweringState(NamedTuple):
    """The dimension variables of a shape-polymorphic lowering (funcgrad lowers static shapes)."""

    dim_vars: tuple[str, ...] = ()
    uses_dim_vars: bool = False


@dataclasses.dataclass(frozen=True)
class LoweringParameters:
    """Options of a lowering (JAX's; funcgrad reads ``platforms`` and ``for_export``)."""

    override_lowering_rules: tuple | None = None
    global_constant_computation: bool = False
    for_export: bool = False
    export_ignore_forward_compatibility: bool = False
    hoist_constants_as_args: bool = False


class LoweringResult(NamedTuple):
    """``lower_jaxpr_to_module``'s result: the MLIR ``module``, what must stay alive, the Python
    host callbacks the module calls, and the shape-polymorphism state."""

    module: Any
    keepalive: Any
    host_callbacks: list
    shape_poly_state: ShapePolyLoweringState


@dataclasses.dataclass(frozen=True)
class ShardingContext:
    """The axis context of an automatically partitioned program: its number of devices."""

    num_devices: int
    device_assignment: Any = None
    abstract_mesh: Any = None


@dataclasses.dataclass(frozen=True)
class SPMDAxisContext:
    """The axis context of a program partitioned over ``mesh`` (``manual_axes``: shard_map's)."""

    mesh: Any
    manual_axes: frozenset = frozenset()

    @property
    def axis_env(self):
        return tuple(zip(self.mesh.axis_names, self.mesh.devices.shape))


class _EffectTypeSet:
    """A set of effect types (JAX's ``lowerable_effects``): ``add_type``, ``contains``."""

    def __init__(self):
        self._types: set[type] = set()

    def add_type(self, effect_type: type) -> None:
        self._types.add(effect_type)

    def contains(self, eff) -> bool:
        return any(isinstance(eff, t) for t in self._types)

    def filter_in(self, effects):
        return [e for e in effects if self.contains(e)]

    def filter_not_in(self, effects):
        return [e for e in effects if not self.contains(e)]


lowerable_effects = _EffectTypeSet()
AxisContext = SPMDAxisContext | ShardingContext


def _closed(jaxpr) -> ClosedJaxpr:
    if isinstance(jaxpr, ClosedJaxpr):
        return jaxpr
    if isinstance(jaxpr, Jaxpr):
        return ClosedJaxpr(jaxpr, [])
    raise TypeError(f"expected a funcgrad Jaxpr or ClosedJaxpr, got {type(jaxpr).__name__}")


def lower_jaxpr_to_module(module_name: str, jaxpr, *, platforms=("cpu",), **kwargs) -> LoweringResult:
    """The StableHLO module (an ``ir.Module`` in a fresh context) of a closed jaxpr, emitted by
    funcgrad's lowering.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> cj = funcgrad.make_jaxpr(fnp.sin)(np.float32(1))
    >>> "stablehlo.sine" in module_to_string(lower_jaxpr_to_module("f", cj).module)
    True
    """
    module, context, lowered = _ul.lower_jaxpr_to_module(
        module_name, _closed(jaxpr), platforms=tuple(platforms)
    )
    return LoweringResult(module, context, list(lowered.host_callbacks), ShapePolyLoweringState())


def lower_jaxpr_to_fun(ctx: ModuleContext, name: str, jaxpr, effects=(), **kwargs):
    """Add a private function ``name`` computing ``jaxpr`` to ``ctx.module`` and return its
    ``func.func`` op (emitted by funcgrad, parsed into ``ctx.context``)."""
    closed = _closed(jaxpr)
    lowered = _ul.lower_jaxpr(closed, name, platform=ctx.platforms[0])
    text = lowered.text
    if lowered.host_callbacks:
        if ctx.builder is None:
            raise ValueError("lower_jaxpr_to_fun: a jaxpr with host callbacks needs a rule's module context")
        offset = len(ctx.builder.host_callbacks)
        ctx.builder.host_callbacks.extend(lowered.host_callbacks)
        text = re.sub(r"index = (\d+) : ui64", lambda m: f"index = {int(m.group(1)) + offset} : ui64", text)
    src = ir.Module.parse(text, ctx.context)
    sym = merge_mlir_modules(ctx.module, name, src, ctx.symbol_table)
    return ctx.symbol_table[sym]


def core_call_lowering(ctx: LoweringRuleContext, *args, name, backend=None, call_jaxpr):
    """The lowering of a call primitive: ``call_jaxpr`` on ``args``, through ``jaxpr_subcomp``."""
    closed = _closed(call_jaxpr)
    outs, tokens = jaxpr_subcomp(ctx.module_context, closed, None, ctx.tokens_in, [], *args)
    ctx.set_tokens_out(tokens)
    return outs
