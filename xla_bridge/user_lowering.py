"""Lowering rules written by users: JAX's ``mlir.register_lowering`` on funcgrad's text emitter.

Layer: xla_bridge (compiler half). May import: stdlib, numpy, jaxlib's MLIR Python bindings
(``jaxlib.mlir``: with ``user_custom_calls``, the custom calls a rule builds, the only modules of
the compiler half that do, and only when a library asks for them: ``funcgrad.interpreters.mlir``
imports them), the funcgrad kernel and the siblings
``emitter``, ``lowering``, ``dtypes`` and ``ffi``. Never the surface, never jax.

# NOTE: [spliced lowering rules]
# funcgrad emits StableHLO as text (xla_bridge/lowering.py says why). A rule written as JAX's
# documentation writes one -- ``lambda ctx, x, y, z: [hlo.AddOp(hlo.MulOp(x, y), z).result]`` --
# builds MLIR objects with jaxlib's bindings instead. Such a rule runs here in a module of its
# own: one private ``func.func`` whose block arguments are the equation's operands (typed from
# ``ctx.avals_in``); the rule's results become its ``return``; the module is verified and printed.
# When that function is the module's only one, its operations are inlined into the body being
# emitted (its parameters renamed to the operands, its other SSA names given a unique prefix), as
# JAX's modules hold a rule's operations; otherwise (a rule that built functions of its own) each
# function is spliced into the module being emitted and the equation becomes a ``func.call`` of
# the rule's (XLA inlines it). The symbols of the rule's functions are made unique first. The
# two directions meet through declarations: ``lower_fun`` and ``jaxpr_subcomp`` called from
# inside a bindings rule lower their jaxpr with funcgrad's own emitter into a private function of
# the *emitted* module and call it from the rule's module through an external declaration, which
# splicing drops.
# A ``lower_fun`` rule registered directly never touches MLIR: its jaxpr is emitted inline.
# Host callbacks of a rule (``emit_python_callback``, in ``user_custom_calls``) join the emitted
# module's list, so the runtime hands them to the compiler as it does for funcgrad's own callbacks.
"""

from __future__ import annotations

import dataclasses
import io
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from funcgrad.xla_bridge import plugins
from funcgrad.xla_bridge.dtypes import attribute_text, dense_attr
from funcgrad.xla_bridge.emitter import (
    LoweringError,
    aval_type,
    element_type,
    lower_closed,
    lowering_rules,
)
from funcgrad.xla_bridge.lowering import lower_jaxpr
from jaxlib.mlir import ir
from jaxlib.mlir._mlir_libs import _jax_mlir_ext
from jaxlib.mlir.dialects import chlo, func, mhlo, sdy
from jaxlib.mlir.dialects import stablehlo as hlo

from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, ShapedArray
from funcgrad.kernel.partial_eval import trace_to_jaxpr

__all__ = [
    "LowerFunRule",
    "LoweringRuleContext",
    "ModuleContext",
    "aval_to_ir_type",
    "dtype_to_ir_type",
    "ir_attribute",
    "ir_constant",
    "jaxpr_subcomp",
    "lower_fun",
    "lower_jaxpr_to_module",
    "make_ir_context",
    "merge_mlir_modules",
    "module_to_bytecode",
    "module_to_string",
    "register_user_lowering",
]

# Platforms a rule may be registered for, and what JAX's aliases among them mean.
_PLATFORM_ALIASES = {"gpu": ("cuda", "rocm")}


# ----------------------------------------------------------------------------------------------
# MLIR contexts


class _BareContext(ir.Context):
    # ``ir.Context.__init__`` loads every dialect linked into jaxlib (~20 ms); the base type's
    # does not, and the registry below adds the few a StableHLO module needs (~4 ms).
    def __init__(self):
        super(ir.Context, self).__init__()


_registry = ir.DialectRegistry()
_jax_mlir_ext.register_dialects(_registry)
_local = threading.local()


def make_ir_context() -> ir.Context:
    """A fresh MLIR context with the dialects of a StableHLO module (func, stablehlo, chlo, mhlo,
    sdy and MLIR's upstream ones) loaded.

    >>> with make_ir_context(), ir.Location.unknown():
    ...     print(ir.Type.parse("tensor<2xf32>"))
    tensor<2xf32>
    """
    context = _BareContext()
    context.append_dialect_registry(_registry)
    context.load_all_available_dialects()
    hlo.register_dialect(context)
    chlo.register_dialect(context)
    mhlo.register_mhlo_dialect(context)
    sdy.register_dialect(context)
    return context


def _context() -> ir.Context:
    """This thread's context for rules (MLIR contexts are not shared across threads)."""
    context = getattr(_local, "context", None)
    if context is None:
        context = _local.context = make_ir_context()
    return context


# ----------------------------------------------------------------------------------------------
# Types, attributes, constants (JAX's helpers; they need an active context)


def dtype_to_ir_type(dtype) -> ir.Type:
    """The MLIR element type of a NumPy dtype.

    >>> with make_ir_context():
    ...     print(dtype_to_ir_type(np.float32), dtype_to_ir_type(np.uint8))
    f32 ui8
    """
    return ir.Type.parse(element_type(np.dtype(dtype)))


def aval_to_ir_type(aval) -> ir.Type:
    """The MLIR tensor type of an abstract value (anything with ``shape`` and ``dtype``)."""
    return ir.Type.parse(aval_type(aval))


def ir_constant(val) -> ir.Value:
    """A ``stablehlo.constant`` of the array ``val``, exact to the bit, at the insertion point."""
    return hlo.ConstantOp(ir.Attribute.parse(dense_attr(np.asarray(val)))).result


def ir_attribute(val) -> ir.Attribute:
    """An MLIR attribute of a Python value, as JAX converts one: ``str`` -> string, ``bool`` ->
    ``i1``, ``int`` -> ``i64``, ``float`` -> ``f64``, NumPy scalars and arrays with their dtype,
    lists and tuples -> arrays, dicts -> dictionaries, an ``ir.Attribute`` as it is (the text of
    ``dtypes.attribute_text``, parsed: NOTE: [attributes as text]).

    >>> with make_ir_context(), ir.Location.unknown():
    ...     print(ir_attribute(3), ir_attribute(np.float32(0.5)), ir_attribute("x"))
    3 : i64 5.000000e-01 : f32 "x"
    """
    return val if isinstance(val, ir.Attribute) else ir.Attribute.parse(attribute_text(val, _binding_text))


def _binding_text(val) -> str | None:
    """The text of a value the MLIR bindings made (an attribute, or a type as a type attribute)."""
    return str(val) if isinstance(val, ir.Attribute | ir.Type) else None


def module_to_string(module, enable_debug_info=None) -> str:
    """The text of an MLIR module (funcgrad's lowered text is returned as it is)."""
    if isinstance(module, str):
        return module
    out = io.StringIO()
    module.operation.print(file=out, enable_debug_info=bool(enable_debug_info))
    return out.getvalue()


def module_to_bytecode(module) -> bytes:
    """The MLIR bytecode of a module (text is parsed first)."""
    if isinstance(module, str):
        with make_ir_context():
            module = ir.Module.parse(module)
            return module_to_bytecode(module)
    out = io.BytesIO()
    module.operation.write_bytecode(file=out)
    return out.getvalue()


def merge_mlir_modules(dst_module, sym_name: str, src_module, dst_symtab=None) -> str:
    """Move the functions of ``src_module`` into ``dst_module`` (same context): its public
    ``main`` becomes the private ``sym_name`` (made unique), the others are renamed when their
    names are taken. Returns the name ``main`` got (JAX's ``merge_mlir_modules``)."""
    dst_symtab = dst_symtab or ir.SymbolTable(dst_module.operation)
    src_symtab = ir.SymbolTable(src_module.operation)
    taken = {
        ir.StringAttr(op.attributes["sym_name"]).value
        for op in dst_module.body.operations
        if "sym_name" in op.attributes
    }
    renamed_main = sym_name
    for op in list(src_module.body.operations):
        if "sym_name" not in op.attributes:
            continue
        old = ir.StringAttr(op.attributes["sym_name"]).value
        base = sym_name if old == "main" else old
        new, i = base, 0
        while new in taken:
            i += 1
            new = f"{base}_{i}"
        taken.add(new)
        if new != old:
            ir.SymbolTable.replace_all_symbol_uses(old, new, src_module.operation)
            src_symtab.set_symbol_name(op, new)
        if old == "main":
            renamed_main = new
            op.attributes["sym_visibility"] = ir.StringAttr.get("private")
    for op in list(src_module.body.operations):
        dst_module.body.append(op)
        dst_symtab.insert(op)
    return renamed_main


# ----------------------------------------------------------------------------------------------
# What a rule sees


@dataclasses.dataclass
class ModuleContext:
    """The module a rule builds into (JAX's ``mlir.ModuleContext``, the fields rules read):
    ``context``, ``module`` (the rule's own MLIR module), ``ip`` (an insertion point at its end),
    ``symbol_table``, ``platforms``, ``backend`` (None: funcgrad compiles later), ``axis_context``,
    ``keepalives``, ``host_callbacks``."""

    context: ir.Context
    module: ir.Module
    ip: ir.InsertionPoint
    symbol_table: ir.SymbolTable
    platforms: tuple[str, ...]
    builder: Any = None  # the emitter's ModuleBuilder of the module being emitted
    backend: Any = None
    axis_context: Any = None
    keepalives: list = dataclasses.field(default_factory=list)
    host_callbacks: list = dataclasses.field(default_factory=list)
    lowering_parameters: Any = None
    cached_primitive_lowerings: dict = dataclasses.field(default_factory=dict)

    @property
    def platform(self) -> str:
        return self.platforms[0]

    def get_backend(self):
        return self.backend

    def add_keepalive(self, keepalive) -> None:
        self.keepalives.append(keepalive)

    def add_host_callback(self, host_callback) -> None:
        self.host_callbacks.append(host_callback)

    def replace(self, **changes) -> ModuleContext:
        return dataclasses.replace(self, **changes)


class TokenSet:
    """Effect tokens threaded through a rule (JAX's ``mlir.TokenSet``); funcgrad's user rules
    carry none, so it is the empty set unless a rule builds one."""

    def __init__(self, *args, **kwargs):
        self._tokens = dict(*args, **kwargs)

    def __len__(self):
        return len(self._tokens)

    def get(self, effect):
        return self._tokens[effect]

    def effects(self):
        return tuple(self._tokens)

    def subset(self, effects) -> TokenSet:
        return TokenSet((e, self._tokens[e]) for e in effects)

    def items(self):
        return tuple(self._tokens.items())

    def update_tokens(self, tokens: TokenSet) -> TokenSet:
        return TokenSet({**self._tokens, **tokens._tokens})


@dataclasses.dataclass
class LoweringRuleContext:
    """What a rule receives as ``ctx`` (JAX's ``mlir.LoweringRuleContext``): ``module_context``,
    ``primitive``, ``avals_in``, ``avals_out``, ``tokens_in``/``tokens_out``, ``platforms``,
    ``name_stack``, ``dim_var_values``, ``axis_size_env``, ``jaxpr_eqn_ctx``, ``const_lowering``."""

    module_context: ModuleContext
    primitive: Any
    avals_in: Sequence[Any]
    avals_out: Sequence[Any]
    tokens_in: TokenSet = dataclasses.field(default_factory=TokenSet)
    tokens_out: TokenSet | None = None
    platforms: tuple[str, ...] | None = None
    name_stack: Any = None
    traceback: Any = None
    axis_size_env: Any = None
    dim_var_values: Sequence[Any] = ()
    jaxpr_eqn_ctx: Any = None
    const_lowering: Any = None

    @property
    def platform(self) -> str:
        return self.module_context.platforms[0]

    def set_tokens_out(self, tokens_out: TokenSet) -> None:
        self.tokens_out = tokens_out

    def replace(self, **changes) -> LoweringRuleContext:
        return dataclasses.replace(self, **changes)

    def is_forward_compat(self) -> bool:
        return False


# ----------------------------------------------------------------------------------------------
# Registration


def register_user_lowering(prim, rule: Callable, platform: str | None = None) -> None:
    """Make ``rule`` (JAX's signature: ``rule(ctx, *operands, **params)``) the lowering of
    ``prim`` on ``platform`` ("cpu", "cuda", "rocm", "gpu", "tpu"; None: every platform without a
    rule of its own). The emitter's table gets one dispatching rule per primitive (NOTE: [spliced
    lowering rules]); a built-in rule of a catalog primitive stays the one of the other platforms.
    A platform no backend could be named (a typo) is JAX's NotImplementedError.
    """
    if platform is not None:
        known = {"cpu", "cuda", "gpu", "oneapi", "rocm", "tpu", *plugins.plugins_from_env()}
        if platform not in known:  # (JAX's words: xla_bridge.known_platforms)
            raise NotImplementedError(
                f"Registering an MLIR lowering rule for primitive {prim} for an unknown platform "
                f"{platform}. Known platforms are: {', '.join(sorted(known))}."
            )
    if not callable(rule):
        raise TypeError(f"register_lowering: the rule for {prim} must be callable, got {rule!r}")
    # The per-platform rules live on the primitive's one entry of the emitter's table (no second
    # registry): a dispatcher holding them, made on the first registration.
    current = lowering_rules.get(prim)
    rules = getattr(current, "platform_rules", None)
    if rules is None:
        rules = {} if current is None else {None: _TextRule(current)}
        lowering_rules[prim] = _dispatcher(prim, rules)
    for p in _PLATFORM_ALIASES.get(platform, (platform,)):
        rules[p] = rule


class _TextRule:
    """A rule of funcgrad's own signature (NOTE: [lowering rule signature]), kept as it is."""

    def __init__(self, rule):
        self.rule = rule


def _dispatcher(prim, rules):
    def user_lowering(fctx, *operands, **params):
        platform = fctx.fb.module.platform
        rule = rules.get(platform, rules.get(None))
        if rule is None:
            raise LoweringError(
                f"primitive '{prim.name}' has lowering rules for {sorted(p for p in rules if p)} but "
                f"not for {platform!r}: register one with mlir.register_lowering({prim.name}_p, rule, "
                f"platform={platform!r}) (or platform=None for every platform)"
            )
        if isinstance(rule, _TextRule):
            return rule.rule(fctx, *operands, **params)
        if isinstance(rule, LowerFunRule):
            outs = rule.emit_inline(fctx, operands, params)
        else:
            outs = splice(fctx, rule, operands, params)
        return outs if prim.multiple_results else outs[0]

    user_lowering.__name__ = f"user_lowering_{prim.name}"
    user_lowering.platform_rules = rules
    return user_lowering


# ----------------------------------------------------------------------------------------------
# Splicing a bindings rule (NOTE: [spliced lowering rules])


def splice(fctx, rule: Callable, operands: Sequence[str], params: dict) -> list[str]:
    """Run ``rule`` in a module of its own, splice its functions into the emitted module and
    call it; returns the SSA names of the equation's results."""
    mb, prim = fctx.fb.module, fctx.primitive
    rule_name = getattr(rule, "__name__", repr(rule))
    in_texts = [aval_type(a) for a in fctx.avals_in]
    out_texts = [aval_type(a) for a in fctx.avals_out]
    sym = mb.symbol(f"{prim.name}_lowering")
    with _context() as context, ir.Location.unknown(context):
        module = ir.Module.create()
        in_types = [ir.Type.parse(t) for t in in_texts]
        out_types = [ir.Type.parse(t) for t in out_texts]
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp(sym, ir.FunctionType.get(in_types, out_types))
        fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
        block = fn.add_entry_block()
        mctx = ModuleContext(
            context=context,
            module=module,
            ip=ir.InsertionPoint(module.body),
            symbol_table=ir.SymbolTable(module.operation),
            platforms=(mb.platform,),
            builder=mb,
        )
        rctx = LoweringRuleContext(
            mctx, prim, list(fctx.avals_in), list(fctx.avals_out), platforms=(mb.platform,)
        )
        with ir.InsertionPoint(block):
            try:
                results = rule(rctx, *block.arguments, **params)
            except Exception as e:
                e.add_note(f"(in the lowering rule {rule_name} of the primitive '{prim.name}')")
                raise
            values = _flat_values(results, prim.name, rule_name)
            _check_results(values, out_types, prim.name, rule_name)
            func.ReturnOp(values)
        _unique_symbols(module, fn, mb)
        try:
            module.operation.verify()
        except ir.MLIRError as e:
            raise LoweringError(
                f"the lowering rule {rule_name} of the primitive '{prim.name}' built invalid MLIR: {e}"
            ) from None
        texts = [
            op.get_asm(enable_debug_info=False) for op in module.body.operations if not _is_declaration(op)
        ]
    if len(texts) == 1:
        # A rule that built one function (no helpers of its own) is inlined, its operations in
        # the caller's body, as JAX's module holds a rule's operations (its printed module shows
        # the custom call itself, not a call of a function holding it).
        inlined = _inline(fctx.fb, texts[0], operands)
        if inlined is not None:
            return inlined
    # An equation lowered to the same functions as an earlier one calls those (the module stays
    # proportional to the distinct code, as for nested jit calls).
    key = tuple(t.replace(f"@{sym}(", "@(") for t in texts)
    seen = mb.__dict__.setdefault("spliced_functions", {})
    if key in seen:
        sym = seen[key]
    else:
        seen[key] = sym
        for text in texts:
            mb.functions.append(["  " + line for line in text.rstrip("\n").splitlines()])
    rhs = f"func.call @{sym}({', '.join(operands)}) : ({', '.join(in_texts)}) -> ({', '.join(out_texts)})"
    return fctx.fb.emit_results(rhs, len(out_texts))


_SSA = re.compile(r"%([\w$.-]+)")


def _inline(fb, text: str, operands: Sequence[str]) -> list[str] | None:
    """The body of the rule's function ``text`` (as MLIR prints it) emitted into ``fb`` in place
    of a call: its parameters ``%argI`` become ``operands``, every other SSA name (block
    arguments of nested regions too) takes a prefix unique in the function being emitted; returns
    the names of its results, or None when the text is not one function ending in ``return``."""
    lines = text.rstrip("\n").splitlines()
    if len(lines) < 3 or not lines[0].lstrip().startswith("func.func") or lines[-1].strip() != "}":
        return None
    body, ret = lines[1:-2], lines[-2].strip()
    if not ret.startswith("return"):
        return None
    prefix = fb.fresh()[1:] + "_"
    n = len(operands)

    def rename(m):
        name = m.group(1)
        if name.startswith("arg") and name[3:].isdigit() and int(name[3:]) < n:
            return operands[int(name[3:])]
        return f"%{prefix}{name}"

    for line in body:
        fb.raw(_SSA.sub(rename, line[2:] if line.startswith("  ") else line))
    values = ret[len("return") :].split(" : ")[0].strip()
    return [_SSA.sub(rename, v.strip()) for v in values.split(",")] if values else []


def _flat_values(results, prim_name: str, rule_name: str) -> list:
    """A rule's results as a flat list of ``ir.Value`` (JAX rules return a sequence of values or of
    sequences of values; an op or a single value is accepted too)."""
    if isinstance(results, ir.Value):
        return [results]
    if isinstance(results, ir.OpView | ir.Operation):
        return list(results.results)
    flat = []
    try:
        items = list(results)
    except TypeError:
        raise LoweringError(
            f"the lowering rule {rule_name} of '{prim_name}' returned {type(results).__name__}; a rule "
            "returns a list of ir.Value (e.g. [hlo.AddOp(x, y).result])"
        ) from None
    for r in items:
        if isinstance(r, ir.Value):
            flat.append(r)
        elif isinstance(r, ir.OpView | ir.Operation):
            flat.extend(r.results)
        elif isinstance(r, list | tuple | ir.OpResultList):
            flat.extend(_flat_values(r, prim_name, rule_name))
        else:
            raise LoweringError(
                f"the lowering rule {rule_name} of '{prim_name}' returned a {type(r).__name__} among "
                "its results; each result must be an ir.Value (e.g. hlo.AddOp(x, y).result)"
            )
    return flat


def _check_results(values, out_types, prim_name: str, rule_name: str) -> None:
    if len(values) != len(out_types):
        raise LoweringError(
            f"the lowering rule {rule_name} of '{prim_name}' returned {len(values)} values; its "
            f"abstract evaluation declares {len(out_types)} ({', '.join(map(str, out_types))})"
        )
    for i, (v, t) in enumerate(zip(values, out_types)):
        if v.type != t:
            raise LoweringError(
                f"the lowering rule {rule_name} of '{prim_name}' returned a value of type {v.type} as "
                f"result {i}; its abstract evaluation declares {t}"
            )


def _is_declaration(op) -> bool:
    """An external function (no body): a function of the emitted module, declared for a call."""
    return op.operation.name == "func.func" and len(op.regions[0].blocks) == 0


def _unique_symbols(module, own, mb) -> None:
    """Rename the functions a rule added beside its own to names free in the emitted module."""
    for op in list(module.body.operations):
        if op == own or _is_declaration(op) or "sym_name" not in op.attributes:
            continue
        old = ir.StringAttr(op.attributes["sym_name"]).value
        new = mb.symbol(old)
        if new != old:
            ir.SymbolTable.replace_all_symbol_uses(old, new, module.operation)
            op.attributes["sym_name"] = ir.StringAttr.get(new)


# ----------------------------------------------------------------------------------------------
# lower_fun and jaxpr_subcomp: funcgrad's emitter inside a rule


class LowerFunRule:
    """The rule ``lower_fun(fun, multiple_results)`` returns: ``fun`` (a function of funcgrad
    operations) traced at the operands' avals and lowered by funcgrad's emitter."""

    def __init__(self, fun: Callable, multiple_results: bool):
        self.fun = fun
        self.multiple_results = multiple_results
        self.__name__ = f"lower_fun({getattr(fun, '__name__', 'fun')})"

    def trace(self, avals_in, params) -> ClosedJaxpr:
        fun, multiple = self.fun, self.multiple_results

        def flat(*args):
            out = fun(*args, **params)
            return list(out) if multiple else [out]

        avals = [ShapedArray(tuple(a.shape), np.dtype(a.dtype)) for a in avals_in]
        return trace_to_jaxpr(flat, avals, None, self.__name__)

    def emit_inline(self, fctx, operands, params) -> list[str]:
        """The text path: registered directly, the jaxpr is emitted inline in the caller."""
        closed = self.trace(fctx.avals_in, params)
        got = [aval_type(a) for a in closed.out_avals]
        want = [aval_type(a) for a in fctx.avals_out]
        if got != want:
            raise LoweringError(
                f"{self.__name__}, the lowering of '{fctx.primitive.name}', computes "
                f"{', '.join(got) or 'nothing'}; its abstract evaluation declares "
                f"{', '.join(want) or 'nothing'}"
            )
        return lower_closed(fctx.fb, closed, operands)

    def __call__(self, ctx: LoweringRuleContext, *args, **params):
        """The bindings path: called from a rule with ``ir.Value`` operands."""
        closed = self.trace(ctx.avals_in, params)
        return _call_emitted(ctx.module_context, closed, list(args), self.__name__)


def lower_fun(fun: Callable, multiple_results: bool = True) -> LowerFunRule:
    """A lowering rule computing ``fun`` (a Python function of funcgrad operations, called with the
    operands and the equation's params as keywords), lowered by funcgrad's own emitter."""
    return LowerFunRule(fun, multiple_results)


def _call_emitted(mctx: ModuleContext, closed: ClosedJaxpr, args: list, name: str) -> list:
    """From inside a bindings rule: lower ``closed`` into a private function of the emitted module,
    declare it in the rule's module and call it; returns the call's results."""
    mb = mctx.builder
    if mb is None:
        raise LoweringError(f"{name} needs the module funcgrad is emitting; call it from a lowering rule")
    sym = mb.private_function(closed, name)
    in_types = [ir.Type.parse(aval_type(v.aval)) for v in closed.jaxpr.invars]
    out_types = [ir.Type.parse(aval_type(a)) for a in closed.jaxpr.out_avals]
    if sym not in mctx.symbol_table:
        with ir.InsertionPoint.at_block_begin(mctx.module.body):
            decl = func.FuncOp(sym, ir.FunctionType.get(in_types, out_types))
        decl.attributes["sym_visibility"] = ir.StringAttr.get("private")
        mctx.symbol_table.insert(decl)
    call = func.CallOp(out_types, ir.FlatSymbolRefAttr.get(sym), args)
    return list(call.results)


def jaxpr_subcomp(ctx: ModuleContext, jaxpr, name_stack, tokens, consts, *args, **kwargs):
    """JAX's ``jaxpr_subcomp``: the values of ``jaxpr`` on ``consts`` and ``args`` (``ir.Value``),
    lowered by funcgrad's emitter into the module; returns ``(outs, tokens)``."""
    if isinstance(jaxpr, ClosedJaxpr):
        jaxpr, consts = jaxpr.jaxpr, [*jaxpr.consts, *consts]
    if not isinstance(jaxpr, Jaxpr):
        raise TypeError(f"jaxpr_subcomp needs a funcgrad Jaxpr, got {type(jaxpr).__name__}")
    values = [c for c in consts if isinstance(c, ir.Value)]
    if len(values) != len(consts):
        consts = [c if isinstance(c, ir.Value) else ir_constant(c) for c in consts]
    # The constvars become leading parameters of the private function.
    flat = Jaxpr([], [*jaxpr.constvars, *jaxpr.invars], jaxpr.eqns, jaxpr.outvars)
    outs = _call_emitted(ctx, ClosedJaxpr(flat, []), [*consts, *args], "jaxpr_subcomp")
    return outs, tokens


def lower_jaxpr_to_module(module_name: str, jaxpr: ClosedJaxpr, *, platforms=("cpu",), **kwargs):
    """The MLIR module of a closed jaxpr (funcgrad's emitter, parsed into a fresh context)."""
    lowered = lower_jaxpr(jaxpr, module_name, platform=platforms[0])
    context = make_ir_context()
    with context:
        module = ir.Module.parse(lowered.text)
    return module, context, lowered
