"""Portable StableHLO artifacts: the serialized modules of ``funcgrad.export`` and JAX's
``jax.export``, and the module surgery that lets one be called from another program.

Layer: xla_bridge (compiler half that needs jaxlib's MLIR bindings). May import: stdlib and jaxlib
(``jaxlib.mlir`` and ``jaxlib._jax.mlir``). It never imports the kernel, the catalog or the surface:
it takes and returns module text, bytes and plain tuples.

- ``serialize``/``deserialize``: StableHLO's portable artifact (versioned MLIR bytecode, the
  ``mlir_module_serialized`` of an ``Exported``), written at the version StableHLO guarantees for
  four weeks of consumers, as JAX writes it.
- ``annotate_for_export``: the attributes JAX's callers read on an exported module
  (``jax.uses_shape_polymorphism`` on the module, ``jax.result_info`` on ``@main``'s results).
- ``embeddable``: an artifact prepared to be called from funcgrad's module text (NOTE: [embedding
  an exported module]).
- ``refine``: jaxlib's shape refinement pass (``jax.extend.mlir.refine_polymorphic_shapes``).

# NOTE: [embedding an exported module]
# An exported module is called from a funcgrad program as private functions of the caller's
# module plus one ``func.call`` (xla_bridge/rules/exported.py). ``embeddable`` prepares the callee
# once per (artifact, concrete argument types): when ``@main`` has dynamic dimensions (shape
# polymorphism) it is wrapped in a ``@main`` of the concrete types and jaxlib's refinement pass
# specialises every function (checking and removing the shape assertions, as JAX does before it
# compiles); then every function is renamed with a prefix unique in the process, so that two
# embedded modules, or one embedded twice with different types, never share a symbol; the text
# is printed without locations. The caller's rule only appends the functions and emits the call.

>>> text = ("module @m {\\n  func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {\\n"
...         "    %0 = stablehlo.negate %arg0 : tensor<2xf32>\\n    return %0 : tensor<2xf32>\\n  }\\n}\\n")
>>> blob = serialize(text)
>>> "stablehlo.negate" in deserialize(blob)
True
"""

from __future__ import annotations

import itertools
import re
import threading

from jaxlib import _jax
from jaxlib.mlir import dialects, ir, passmanager
from jaxlib.mlir._mlir_libs import _jax_mlir_ext
from jaxlib.mlir.dialects import chlo, mhlo, sdy, stablehlo

__all__ = [
    "Embedded",
    "dialects",
    "ir",
    "passmanager",
    "raw",
    "annotate_for_export",
    "annotate_shardings",
    "bytecode",
    "deserialize",
    "embeddable",
    "hlo_to_stablehlo",
    "main_function",
    "make_context",
    "multi_platform",
    "nested_blocks",
    "parse",
    "refine",
    "serialize",
    "target_version",
    "walk",
]

_registry = None
_lock = threading.Lock()
_prefixes = itertools.count()


def make_context() -> ir.Context:
    """An MLIR context with the dialects exported modules use (func, stablehlo, chlo, mhlo, sdy)."""
    global _registry
    with _lock:
        if _registry is None:
            _registry = ir.DialectRegistry()
            _jax_mlir_ext.register_dialects(_registry)
    ctx = ir.Context()
    ctx.append_dialect_registry(_registry)
    ctx.load_all_available_dialects()
    sdy.register_dialect(ctx)
    mhlo.register_mhlo_dialect(ctx)
    chlo.register_dialect(ctx)
    stablehlo.register_dialect(ctx)
    return ctx


def target_version() -> str:
    """The StableHLO version artifacts are written at: one every consumer of the last four weeks
    reads (``jax.export`` writes the same).

    >>> target_version().count(".")
    2
    """
    return stablehlo.get_version_from_compatibility_requirement(
        stablehlo.StablehloCompatibilityRequirement.WEEK_4
    )


def parse(module: str | bytes, ctx: ir.Context) -> ir.Module:
    """``module`` (text or MLIR bytecode, not a portable artifact) parsed in ``ctx``."""
    with ctx:
        return ir.Module.parse(module)


def bytecode(module: ir.Module) -> bytes:
    """MLIR bytecode of ``module`` (the form jaxlib's passes take)."""
    import io

    out = io.BytesIO()
    module.operation.write_bytecode(file=out)
    return out.getvalue()


def serialize(module_text: str, with_sdy: bool = False) -> bytes:
    """The portable artifact of a StableHLO module given as text (``with_sdy``: its Shardy
    meshes and shardings kept as such, as JAX writes partitioned modules)."""
    if with_sdy:
        return _jax.mlir.serialize_portable_artifact(module_text, target_version(), True)
    return _jax.mlir.serialize_portable_artifact(module_text, target_version())


def annotate_shardings(module_text: str, axes, in_dims, out_dims) -> str:
    """``module_text`` (a one-device program) annotated as JAX's partitioned exports are: a
    Shardy mesh ``@mesh`` of ``axes`` (``[(name, size)]``), ``mhlo.num_partitions``, and an
    ``sdy.sharding`` on each of ``@main``'s parameters and results whose entry of ``in_dims`` /
    ``out_dims`` is not None (per dimension, the mesh axes it is split over)."""
    n = 1
    for _, size in axes:
        n *= int(size)
    mesh = ", ".join(f'"{a}"={int(size)}' for a, size in axes)

    def attr(dims):
        return (
            "#sdy.sharding<@mesh, ["
            + ", ".join("{" + ", ".join(f'"{a}"' for a in d) + "}" for d in dims)
            + "]>"
        )

    ctx = make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(module_text)
        module.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(32), n
        )
        module.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(32), 1
        )
        meshes = [op for op in module.body.operations if op.operation.name == "sdy.mesh"]
        have = next((op for op in meshes if ir.StringAttr(op.attributes["sym_name"]).value == "mesh"), None)
        if have is None:
            mesh_op = ir.Operation.parse(f"sdy.mesh @mesh = <[{mesh}]>")
            first = module.body.operations[0]
            module.body.append(mesh_op)
            mesh_op.move_before(first)
        elif str(have.attributes["mesh"]) != f"#sdy.mesh<[{mesh}]>":
            # (a program lowered over its shard_map's mesh: the annotations must use that mesh)
            raise ValueError(
                f"the program's mesh {have.attributes['mesh']} is not the mesh of the export's "
                f"shardings <[{mesh}]>: export with shardings over the shard_map's mesh"
            )
        main = main_function(module)
        for key, dims_list in (("arg_attrs", in_dims), ("res_attrs", out_dims)):
            old = list(ir.ArrayAttr(main.attributes[key])) if key in main.attributes else []
            old += [ir.DictAttr.get({})] * (len(dims_list) - len(old))
            new = []
            for d, dims in zip(old, dims_list):
                d = ir.DictAttr(d)
                entries = {d[i].name: d[i].attr for i in range(len(d))}
                if dims is not None:
                    entries["sdy.sharding"] = ir.Attribute.parse(attr(dims))
                new.append(ir.DictAttr.get(entries))
            main.attributes[key] = ir.ArrayAttr.get(new)
        return text(module, debug_info=True)


def deserialize(blob: bytes, debug_info: bool = False) -> str:
    """The text of a portable artifact (or of plain MLIR bytecode)."""
    ctx = make_context()
    with ctx:
        module = _load(blob, ctx)
        return module.operation.get_asm(enable_debug_info=debug_info)


def load(blob: bytes) -> ir.Module:
    """The ``ir.Module`` of a portable artifact, in a fresh context with the dialects loaded."""
    ctx = make_context()
    with ctx:
        return _load(blob, ctx)


def _load(blob: bytes, ctx: ir.Context) -> ir.Module:
    try:
        return stablehlo.deserialize_portable_artifact(ctx, bytes(blob))
    except Exception:  # not a portable artifact: plain bytecode or text
        return ir.Module.parse(bytes(blob))


def annotate_for_export(module_text: str, result_infos, uses_shape_polymorphism: bool = False) -> str:
    """``module_text`` with the attributes JAX's ``Exported.call`` and tools read: the module's
    ``jax.uses_shape_polymorphism`` and a ``jax.result_info`` (the result's pytree path) per result
    of ``@main``."""
    ctx = make_context()
    with ctx:
        module = ir.Module.parse(module_text)
        module.operation.attributes["jax.uses_shape_polymorphism"] = ir.BoolAttr.get(uses_shape_polymorphism)
        main = main_function(module)
        old = main.attributes["res_attrs"] if "res_attrs" in main.attributes else None
        dicts = []
        for i, info in enumerate(result_infos):
            entries = {} if old is None else {a.name: a.attr for a in ir.DictAttr(old[i])}
            entries["jax.result_info"] = ir.StringAttr.get(info)
            dicts.append(ir.DictAttr.get(entries))
        if dicts:
            main.attributes["res_attrs"] = ir.ArrayAttr.get(dicts)
        # With the operations' locations, as JAX's artifacts keep them (NOTE: [operation
        # locations] in xla_bridge/emitter.py).
        return text(module, debug_info=True)


def text(module: ir.Module, debug_info: bool = False) -> str:
    """``module`` as MLIR prints it; with ``debug_info``, with its operations' locations, where
    the position the parser gave an operation emitted without one (the text's own line, file
    ``"-"``) is an unknown location, as in JAX's texts."""
    printed = module.operation.get_asm(enable_debug_info=debug_info)
    return _TEXT_POSITION.sub("loc(unknown)", printed) if debug_info else printed


_TEXT_POSITION = re.compile(r'loc\("-":\d+:\d+\)')


def main_function(module: ir.Module, error=ValueError):
    """The ``@main`` function of ``module`` (``error`` is raised when it has none)."""
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
            return op
    raise error("the module has no @main function")


class Embedded:
    """An exported module prepared to be called from a funcgrad module (NOTE: [embedding an
    exported module]): ``main`` (the symbol to call), ``functions`` (text of the module's top-level
    operations, each a list of lines, to append to the caller's module), ``symbols`` (every symbol
    they define), ``in_types``/``out_types`` (MLIR types of ``main``'s parameters and results,
    static) and ``out_shapes`` (``(shape, element type)`` per result)."""

    __slots__ = ("main", "functions", "symbols", "in_types", "out_types", "out_shapes")

    def __init__(self, main, functions, symbols, in_types, out_types, out_shapes):
        self.main = main
        self.functions = functions
        self.symbols = symbols
        self.in_types = in_types
        self.out_types = out_types
        self.out_shapes = out_shapes

    def __repr__(self):
        return f"Embedded(@{self.main})"


def embeddable(
    blob: bytes, arg_types, shape_assertions: bool = True, strip_shardings: bool = False
) -> Embedded:
    """Prepare the artifact ``blob`` to be called with arguments of the MLIR types ``arg_types``
    (strings such as ``"tensor<3x4xf32>"``, one per parameter of its ``@main``, the platform
    index included; None takes the parameter's type). Raises ``ValueError`` when the types do not
    fit (a wrong rank or a static dimension that differs) or shape refinement fails (a shape
    assertion of the module; ``shape_assertions=False`` skips those checks). ``strip_shardings``:
    drop the module's sharding annotations (a multi-device export called inside a program that
    the caller partitions with the export's shardings); a module with manual (``shard_map``)
    regions keeps them, per device, over its own mesh."""
    ctx = make_context()
    with ctx:
        module = _load(blob, ctx)
        if strip_shardings and not _has_manual_regions(module):
            _strip_shardings(module)
        main = main_function(module)
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        params = [str(t) for t in ftype.inputs]
        if len(params) != len(arg_types):
            raise ValueError(f"the module's @main takes {len(params)} arguments, {len(arg_types)} were given")
        # None: the parameter's own type (the platform index is i32, or i64 under JAX's x64).
        arg_types = [p if t is None else t for p, t in zip(params, arg_types)]
        for i, (have, want) in enumerate(zip(params, arg_types)):
            if not _fits(have, want):
                raise ValueError(
                    f"argument {i} of type {want} does not fit the module's parameter type {have}"
                )
        dynamic = any("?" in p for p in params) or any("?" in str(t) for t in ftype.results)
        if dynamic:
            module = _refined(module, ctx, arg_types, shape_assertions)
        prefix = f"_fg_exported{next(_prefixes)}_"
        symbols = []
        table_op = module.operation
        for op in list(module.body.operations):
            if "sym_name" not in op.attributes:
                continue
            old = ir.StringAttr(op.attributes["sym_name"]).value
            new = prefix + old
            ir.SymbolTable.replace_all_symbol_uses(old, new, table_op)
            op.attributes["sym_name"] = ir.StringAttr.get(new)
            if op.operation.name == "func.func":
                op.attributes["sym_visibility"] = ir.StringAttr.get("private")
            symbols.append(new)
        main = next(
            op
            for op in module.body.operations
            if ir.StringAttr(op.attributes["sym_name"]).value == prefix + "main"
        )
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        out_types = [str(t) for t in ftype.results]
        out_shapes = []
        for t in ftype.results:
            rt = ir.RankedTensorType(t)
            out_shapes.append((tuple(rt.shape), str(rt.element_type)))
        functions = [
            op.operation.get_asm(enable_debug_info=False).rstrip("\n").split("\n")
            for op in module.body.operations
        ]
        return Embedded(
            prefix + "main", functions, tuple(symbols), [str(t) for t in ftype.inputs], out_types, out_shapes
        )


_SHARDING_ATTRS = ("mhlo.sharding", "mhlo.frontend_attributes", "sdy.sharding", "mhlo.layout_mode")
_ANNOTATIONS = ("Sharding", "xla.sdy.FuncResultSharding", "xla.sdy.Sharding", "annotate_device_placement")


def nested_blocks(op) -> list:
    """The blocks of ``op``'s regions, in order."""
    return [b for region in op.regions for b in region.blocks]


def walk(block):
    """Every operation of ``block`` and of its regions' blocks, in order (the one walk over a
    module's operations). The caller may erase an operation it is given (one without regions):
    its nested blocks are listed before it is yielded, never read after (an erased operation is
    invalidated)."""
    for op in list(block.operations):
        nested = nested_blocks(op)
        yield op
        for b in nested:
            yield from walk(b)


def _has_manual_regions(module: ir.Module) -> bool:
    for op in module.body.operations:
        if op.operation.name != "func.func":
            continue
        for inner in walk(op.regions[0].blocks[0]):
            iname = inner.operation.name
            if iname.startswith("sdy.manual_computation"):
                return True
            if iname == "stablehlo.custom_call":
                target = ir.StringAttr(inner.attributes["call_target_name"]).value
                if "Manual" in target or "ShardShape" in target or "LocalShape" in target:
                    return True
    return False


def _strip_shardings(module: ir.Module) -> None:
    """Remove the sharding annotations of a partitioned module (arguments' and results'
    ``mhlo.sharding``/``sdy.sharding``, ``@Sharding`` custom calls, sharding constraints, meshes):
    what is left is the program's one-device semantics. Raises ``ValueError`` for manual
    (``shard_map``) regions, whose bodies are per device."""
    for op in list(module.body.operations):
        name = op.operation.name
        if name == "sdy.mesh":
            op.operation.erase()
            continue
        if name != "func.func":
            continue
        for key in ("arg_attrs", "res_attrs"):
            if key not in op.attributes:
                continue
            dicts = []
            for d in ir.ArrayAttr(op.attributes[key]):
                d = ir.DictAttr(d)
                kept = {d[i].name: d[i].attr for i in range(len(d)) if d[i].name not in _SHARDING_ATTRS}
                dicts.append(ir.DictAttr.get(kept))
            op.attributes[key] = ir.ArrayAttr.get(dicts)
        for inner in walk(op.regions[0].blocks[0]):
            iname = inner.operation.name
            target = (
                ir.StringAttr(inner.attributes["call_target_name"]).value
                if iname == "stablehlo.custom_call"
                else None
            )
            if iname.startswith("sdy.manual_computation") or (
                target is not None
                and ("Manual" in target or "ShardShape" in target or "LocalShape" in target)
            ):
                raise ValueError(
                    "the module has manual (shard_map) regions, whose bodies are per device: funcgrad "
                    "calls multi-device exports through their one-device semantics"
                )
            if iname == "sdy.sharding_constraint" or target in _ANNOTATIONS:
                inner.results[0].replace_all_uses_with(inner.operands[0])
                inner.operation.erase()
            elif "mhlo.sharding" in inner.attributes or "mhlo.frontend_attributes" in inner.attributes:
                for a in ("mhlo.sharding", "mhlo.frontend_attributes"):
                    if a in inner.attributes:
                        del inner.attributes[a]


def multi_platform(texts: list[str]) -> str:
    """One module from the lowerings ``texts`` of one program for several platforms (NOTE: [the
    exported calling convention] in funcgrad/export/_exported.py): a ``@main`` taking the platform
    index first that runs the lowering of that index (``stablehlo.case``). Platforms whose
    lowerings are the same text share one copy (most programs: then there is no ``case``)."""
    unique = list(dict.fromkeys(texts))
    owner = [unique.index(t) for t in texts]
    ctx = make_context()
    with ctx:
        bodies, in_types, out_types, attrs = [], None, None, ""
        for k, text in enumerate(unique):
            module = ir.Module.parse(text)
            if k == 0 and "mhlo.num_partitions" in module.operation.attributes:
                attrs = " attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}"
            ftype = ir.FunctionType(ir.TypeAttr(main_function(module).attributes["function_type"]).value)
            ins, outs = [str(t) for t in ftype.inputs], [str(t) for t in ftype.results]
            if in_types is None:
                in_types, out_types = ins, outs
            elif (ins, outs) != (in_types, out_types):
                raise ValueError("the lowerings for the platforms have different signatures (internal error)")
            prefix = f"_platform{k}_"
            for op in list(module.body.operations):
                old = ir.StringAttr(op.attributes["sym_name"]).value
                ir.SymbolTable.replace_all_symbol_uses(old, prefix + old, module.operation)
                op.attributes["sym_name"] = ir.StringAttr.get(prefix + old)
                op.attributes["sym_visibility"] = ir.StringAttr.get("private")
            # (printed after every rename: a function's body refers to symbols renamed later)
            bodies.extend(op.operation.get_asm(enable_debug_info=False) for op in module.body.operations)
    if not out_types and len(unique) > 1:
        raise ValueError("a program without results cannot be exported for several platforms")
    params = ", ".join(f"%arg{i + 1}: {t}" for i, t in enumerate(in_types))
    call_args = ", ".join(f"%arg{i + 1}" for i in range(len(in_types)))
    sig = f"({', '.join(in_types)}) -> ({', '.join(out_types)})"
    n = len(out_types)
    branches = []
    results = ", ".join(f"%a#{j}" for j in range(n))
    out_sig = ", ".join(out_types)
    for k in owner:
        branches.append(
            "\n".join(
                [
                    "{",
                    f"      %a:{n} = func.call @_platform{k}_main({call_args}) : {sig}",
                    f'      "stablehlo.return"({results}) : ({out_sig}) -> ()',
                    "    }",
                ]
            )
        )
    lines = [
        f"module @jit_multi_platform{attrs} {{",
        '  func.func public @main(%arg0: tensor<i32> {jax.global_constant = "_platform_index"}'
        + (", " + params if params else "")
        + f") -> ({', '.join(out_types)}) {{",
        *(
            [f'    %r:{n} = "stablehlo.case"(%arg0) ({", ".join(branches)}) : (tensor<i32>) -> ({out_sig})']
            if len(unique) > 1
            else [f"    %r:{n} = func.call @_platform0_main({call_args}) : {sig}" if n else ""]
        ),
        f"    return {', '.join(f'%r#{j}' for j in range(n))} : {', '.join(out_types)}"
        if n
        else "    return",
        "  }",
        *bodies,
        "}",
    ]
    return "\n".join(lines) + "\n"


def _fits(param: str, arg: str) -> bool:
    """Whether an argument of type ``arg`` may be passed for a parameter of type ``param`` (equal,
    or equal up to the parameter's dynamic ``?`` dimensions)."""
    if param == arg:
        return True
    if not (param.startswith("tensor<") and arg.startswith("tensor<")):
        return False
    p, a = param[7:-1].split("x"), arg[7:-1].split("x")
    return len(p) == len(a) and all(x == "?" or x == y for x, y in zip(p, a))


def _refined(module: ir.Module, ctx: ir.Context, arg_types, shape_assertions: bool) -> ir.Module:
    """``module`` specialised to arguments of ``arg_types``: its ``@main`` becomes a private
    ``@_fg_poly_main`` called from a new ``@main`` of the concrete types, then jaxlib's refinement
    pass runs (checking the shape assertions)."""
    main = main_function(module)
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    ir.SymbolTable.replace_all_symbol_uses("main", "_fg_poly_main", module.operation)
    main.attributes["sym_name"] = ir.StringAttr.get("_fg_poly_main")
    main.attributes["sym_visibility"] = ir.StringAttr.get("private")
    body = [op.operation.get_asm(enable_debug_info=False) for op in module.body.operations]
    args = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(arg_types))
    results = [str(t) for t in ftype.results]
    # The callee takes its declared (dynamic) types: a convert makes each static argument one.
    lines = []
    operands = []
    for i, (t, want) in enumerate(zip(arg_types, [str(t) for t in ftype.inputs])):
        if t == want:
            operands.append(f"%arg{i}")
        else:
            lines.append(f"    %c{i} = stablehlo.convert %arg{i} : ({t}) -> {want}")
            operands.append(f"%c{i}")
    call = (
        f"func.call @_fg_poly_main({', '.join(operands)}) : ({', '.join(str(t) for t in ftype.inputs)})"
        f" -> ({', '.join(results)})"
    )
    if results:
        lines.append(f"    %r:{len(results)} = {call}")
        ret = f"    return {', '.join(f'%r#{j}' for j in range(len(results)))} : {', '.join(results)}"
    else:
        lines.append(f"    {call}")
        ret = "    return"
    text = "\n".join(
        [
            "module @fg_refine {",
            f"  func.func public @main({args}) -> ({', '.join(results)}) {{",
            *lines,
            ret,
            "  }",
            *body,
            "}",
        ]
    )
    refined = refine(text, shape_assertions)
    return ir.Module.parse(refined, context=ctx)


def refine(module: str | bytes, shape_assertions: bool = True) -> str:
    """jaxlib's shape refinement of a module whose ``@main`` has static parameter types: every
    dynamic shape inside becomes static, and the shape assertions are checked and removed.
    Returns the refined module's text; raises ``ValueError`` naming the failure."""
    ctx = make_context()
    with ctx:
        m = ir.Module.parse(module)
        try:
            out = _jax.mlir.refine_polymorphic_shapes(
                bytecode(m), enable_shape_assertions=shape_assertions, validate_static_shapes=True
            )
        except Exception as e:
            raise ValueError(f"shape refinement of the exported module failed: {e}") from None
        return ir.Module.parse(out).operation.get_asm(enable_debug_info=False)


# jaxlib's functions themselves, JAX's ``jax.extend.mlir`` names (funcgrad.extend.mlir re-exports them).
raw = _jax.mlir


def hlo_to_stablehlo(hlo_module_proto: bytes) -> str:
    """The StableHLO text of an XLA ``HloModuleProto`` (serialized)."""
    out = _jax.mlir.hlo_to_stablehlo(hlo_module_proto)
    return deserialize(out)
