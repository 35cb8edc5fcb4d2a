"""Emitting StableHLO text: types, the function and module builders, and the lowering-rule registry.

Layer: xla_bridge (compiler half). May import: stdlib, numpy, the funcgrad kernel (``core``,
``dtypes``, ``ir``) and the sibling ``xla_bridge.dtypes`` (pure string formatting). It never
imports jaxlib (producing text needs no XLA), the rule modules or the surface.

The rule modules (``xla_bridge/rules/<family>.py``) import this module and register their rules
here; ``xla_bridge.lowering`` imports the rules package and assembles whole modules
(``lower_jaxpr``). Imports point one way: emitter <- rules <- lowering.

# NOTE: [lowering rule signature]
# ``rule(ctx, *operands, **params) -> str | list[str]``: ``operands`` are SSA value names
# (``%v3``), ``ctx.avals_in``/``ctx.avals_out`` the equation's avals, ``ctx.fb`` the function
# being emitted (use its helpers: ``emit``, ``const``, ``broadcast``, ``convert``, ...). A
# primitive with ``multiple_results`` returns a list. Register with ``@register(primitive)``
# in ``rules/<family>.py``, the family file of the primitive (tests/bridge/test_lowering.py checks that
# the rule modules mirror the catalog); ``lowering_rules`` is the registry and ``rule_modules``
# records which module registered each rule.
"""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from funcgrad.xla_bridge.dtypes import (
    SUB_BYTE_WIDE,
    attribute_key,
    dense_attr,
    mlir_element_type,
    string_literal,
)

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _fdt
from funcgrad.kernel import extended as _ext
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, Literal, abstract_token, backward_dependencies

__all__ = [
    "FunctionBuilder",
    "LoweringContext",
    "LoweringError",
    "ModuleBuilder",
    "aval_type",
    "compare_type",
    "const_value",
    "create_token",
    "element_type",
    "escaped",
    "i64_array",
    "ints",
    "lower_closed",
    "lower_jaxpr_body",
    "lowering_rules",
    "register",
    "return_line",
    "rule_modules",
    "slice_attrs",
    "tensor_type",
    "xla_dtype",
]

lowering_rules: dict[Primitive, Callable] = {}
# The module that registered each rule (``xla_bridge.rules.<family>``), checked against the
# catalog's family of the primitive by tests/bridge/test_lowering.py.
rule_modules: dict[Primitive, str] = {}


class LoweringError(NotImplementedError):
    """A primitive has no lowering rule, or a rule cannot lower these operands."""


def register(*primitives: Primitive):
    """Decorator: register ``rule`` as the lowering of each primitive (NOTE: [lowering rule
    signature]); the calling module is recorded in ``rule_modules``.

    >>> import funcgrad.xla_bridge.lowering  # imports every rule module
    >>> from funcgrad.primitives.elementwise import neg_p
    >>> lowering_rules[neg_p].__name__, rule_modules[neg_p]
    ('_neg', 'funcgrad.xla_bridge.rules.elementwise')
    """
    module = sys._getframe(1).f_globals.get("__name__", "?")

    def deco(rule):
        for p in primitives:
            lowering_rules[p] = rule
            rule_modules[p] = module
        return rule

    return deco


def widen_sub_byte(rule):
    """``rule`` run on byte-wide values when an operand or result is of a sub-byte type (int4,
    uint2, float4_e2m1fn...): the operands are converted to the type that holds each of their
    values exactly (``SUB_BYTE_WIDE``), the rule lowers the widened equation, and the results of
    sub-byte types are converted back.

    For the rules XLA's CPU backend mishandles on sub-byte types (it aborts the process on a
    concatenation of 2-bit integers and rejects sub-byte dots with a wider result, sorts and
    arg-reductions of them). Exact for order and value operations, whose results are values of
    the operands (or, for a dot, are computed in the wider result type anyway); not for bit
    operations, which therefore keep their own rules.
    """

    def widened(ctx, *args, **params):
        wide = [SUB_BYTE_WIDE.get(np.dtype(a.dtype)) for a in (*ctx.avals_in, *ctx.avals_out)]
        if not any(wide):
            return rule(ctx, *args, **params)
        fb, n = ctx.fb, len(ctx.avals_in)
        args = [fb.convert(x, a, w) if w is not None else x for x, a, w in zip(args, ctx.avals_in, wide)]
        avals_in = [a.update(dtype=w) if w is not None else a for a, w in zip(ctx.avals_in, wide)]
        avals_out = [a.update(dtype=w) if w is not None else a for a, w in zip(ctx.avals_out, wide[n:])]
        out = rule(LoweringContext(fb, ctx.primitive, avals_in, avals_out), *args, **params)
        outs = [out] if isinstance(out, str) else list(out)
        outs = [
            fb.convert(x, wa, a.dtype) if w is not None else x
            for x, a, wa, w in zip(outs, ctx.avals_out, avals_out, wide[n:])
        ]
        return outs[0] if isinstance(out, str) else outs

    widened.__name__ = rule.__name__
    return widened


# ----------------------------------------------------------------------------------------------
# Types


def element_type(dtype) -> str:
    """MLIR element type; funcgrad's float0 (tangents of integers) is lowered as ``i1`` zeros."""
    dtype = xla_dtype(dtype) if _ext.is_extended(dtype) else np.dtype(dtype)
    if dtype == _fdt.float0:
        return "i1"
    return mlir_element_type(dtype)


def tensor_type(shape, dtype) -> str:
    """``tensor<2x3xf32>`` / ``tensor<f32>``.

    >>> tensor_type((2, 3), np.float32)
    'tensor<2x3xf32>'
    """
    et = element_type(dtype)
    if not shape:
        return f"tensor<{et}>"
    return "tensor<" + "x".join(str(int(d)) for d in shape) + "x" + et + ">"


def aval_type(aval) -> str:
    """The MLIR type of a value of ``aval``: a tensor type, or ``!stablehlo.token`` for a token
    (NOTE: [tokens] in funcgrad/kernel/ir.py).

    >>> from funcgrad.kernel.ir import ShapedArray, abstract_token
    >>> aval_type(ShapedArray((2,), np.float32)), aval_type(abstract_token)
    ('tensor<2xf32>', '!stablehlo.token')
    """
    if aval is abstract_token:
        return "!stablehlo.token"
    return tensor_type(aval.shape, aval.dtype)


def xla_dtype(dtype) -> np.dtype:
    """The dtype a buffer of ``dtype`` has on the device (float0 -> bool; an extended dtype's
    representation, NOTE: [extended dtypes])."""
    if _ext.is_extended(dtype):
        shape, dtype = _ext.physical_shape_dtype((), dtype)
        if shape:
            raise NotImplementedError(
                f"funcgrad compiles arrays of an extended dtype whose element is one scalar; {dtype} has "
                f"representation shape {shape}"
            )
    dtype = np.dtype(dtype)
    return np.dtype(np.bool_) if dtype == _fdt.float0 else dtype


def ints(xs) -> str:
    """``[1, 2]`` (a list of dimensions in an op's pretty form)."""
    return "[" + ", ".join(str(int(x)) for x in xs) + "]"


def i64_array(xs) -> str:
    """``array<i64: 1, 2>`` (dense i64 array attribute)."""
    return "array<i64" + "".join(f", {int(x)}" if i else f": {int(x)}" for i, x in enumerate(xs)) + ">"


def slice_attrs(starts, limits, strides) -> str:
    """Attributes of a generic ``stablehlo.slice``."""
    lo, hi, st = i64_array(starts), i64_array(limits), i64_array(strides)
    return f"limit_indices = {hi}, start_indices = {lo}, strides = {st}"


# ----------------------------------------------------------------------------------------------
# Emitting one function


class FunctionBuilder:
    """Lines of one ``func.func`` being emitted, with fresh SSA names and helpers for rules."""

    def __init__(self, module: ModuleBuilder, embed_all_consts: bool):
        self.module = module
        self.lines: list[str] = []
        self._counter = itertools.count()
        self._consts: dict[Any, str] = {}
        # NOTE: [one broadcast per operand]
        # An n-ary elementwise primitive broadcasts its size-1 and 0-d operands inside its
        # lowering (NOTE: [elementwise operand contract]), so a value used by several of them --
        # layer norm's 1/sqrt(var), softmax's 1/sum, and their JVPs' and transposes' uses --
        # would get one identical ``broadcast_in_dim`` per use. XLA's CPU pipeline (jaxlib
        # 0.10.2) fuses before it deduplicates these, and materialises the copies that feed its
        # XNNPACK fusions: the GPT-style step of bench/bench_transformer.py kept 8.4 MB more
        # temporaries per call (134.6 against 126.2 MB, ``memory_analysis()``; jax's program
        # 133.6 MB), about 2k more page faults. So ``broadcast`` emits each distinct broadcast
        # once per body, keyed by its text, as ``const`` does constants; a region has its own
        # builder and so its own table (a value defined inside it does not dominate code after).
        # A half-precision division's divisor is the exception (``shared=False``): XLA rewrites
        # ``a / broadcast(b)`` into ``a * broadcast(1 / b)`` only where that broadcast is the
        # division's own (as in jax's program, which broadcasts per use), and the two round
        # differently: with a shared one softmax's gradient under jit was up to 15 float16 ulps
        # from jax's (the program fuzzer's leftover). In float32 and float64 the divisor stays
        # shared, which keeps most of the 8.4 MB above (per-use divisors: 133.6 MB, jax's): the
        # last bit of about a quarter of softmax's jitted gradient differs from jax's there.
        self._broadcasts: dict[str, str] = {}
        self.broadcast_names: set[str] = set()  # (the names those broadcasts were emitted as)
        # NOTE: [a broadcast last in a cotangent sum] (xla_bridge/rules/_cotangent_sums.py): the
        # sums ``x + y`` of two full-size values that ``add_any`` emitted here, name -> (x, y).
        self.cotangent_sums: dict[str, tuple[str, str]] = {}
        self.embed_all_consts = embed_all_consts
        self.indent = "    "
        # The token of the last ordered host callback in this body (xla_bridge/rules/callbacks.py).
        self.effect_token: str | None = None
        # NOTE: [operation locations]: the name stack this body's equations are named under
        # (``jit(f)`` in ``@main``, empty in a private function) and the location suffix
        # (`` loc("jit(f)/sin")``) of the equation being lowered, appended to each operation.
        self.scope = ""
        self.loc = ""

    def fresh(self) -> str:
        return f"%v{next(self._counter)}"

    def region(self) -> FunctionBuilder:
        """A builder for a region body (reduce/sort comparator): shares SSA names, not constants
        (a constant defined inside a region does not dominate code after it)."""
        child = FunctionBuilder(self.module, True)
        child._counter = self._counter
        child.indent = self.indent + "    "
        child.scope, child.loc = self.scope, self.loc
        return child

    def emit(self, rhs: str, nres: int = 1):
        """Emit ``%vN = rhs``; returns the name (or ``nres`` names ``%vN#i``)."""
        name = self.fresh()
        if nres == 1:
            self.lines.append(f"{self.indent}{name} = {rhs}{self.loc}")
            return name
        self.lines.append(f"{self.indent}{name}:{nres} = {rhs}{self.loc}")
        return [f"{name}#{i}" for i in range(nres)]

    def emit_results(self, rhs: str, nres: int) -> list[str]:
        """Emit an op with ``nres`` results (any number, none included); returns their names."""
        if nres == 0:
            self.raw(rhs)
            return []
        outs = self.emit(rhs, nres=nres)
        return outs if isinstance(outs, list) else [outs]

    def raw(self, line: str) -> None:
        self.lines.append(f"{self.indent}{line}")

    def frontend_attributes(self, value: str, metadata) -> None:
        """Put ``metadata`` (``(key, value)`` pairs) on the operation of this body that computed
        ``value`` as ``mhlo.frontend_attributes``; attributes it already has win (NOTE: [xla
        metadata]). A value this body did not compute (an argument) is left alone.

        >>> fb = FunctionBuilder(ModuleBuilder("m"), True)
        >>> v = fb.emit("stablehlo.sine %arg0 : tensor<f32>")
        >>> fb.frontend_attributes(v, (("a", True), ("b", 1)))
        >>> fb.lines[0].strip()
        '%v0 = stablehlo.sine %arg0 {mhlo.frontend_attributes = {a = "true", b = "1"}} : tensor<f32>'
        """
        if type(value) is not str:
            return
        base = value.split("#", 1)[0]
        heads = (f"{base} = ", f"{base}:")
        lines = self.lines
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].lstrip().startswith(heads):
                break
        else:
            return
        line = lines[i]
        if "= sdy.sharding_constraint " in line:  # (the value it constrains, as JAX's owner lookup)
            self.frontend_attributes(line.split("sdy.sharding_constraint ", 1)[1].split(" ", 1)[0], metadata)
            return
        if "\n" in line:  # an operation with regions, emitted whole: its attributes follow them
            head, _, last = line.rpartition("\n")
            if last.lstrip().startswith("})"):
                lines[i] = f"{head}\n{_with_frontend_attributes(last, metadata, last.index('})') + 2)}"
            return
        if line.rstrip().endswith("{"):  # an operation with regions: its attributes follow them
            indent = len(line) - len(line.lstrip())
            for j in range(i + 1, len(lines)):
                text = lines[j]
                if len(text) - len(text.lstrip()) == indent and text.lstrip().startswith("})"):
                    lines[j] = _with_frontend_attributes(text, metadata, text.index("})") + 2)
                    return
            return
        lines[i] = _with_frontend_attributes(line, metadata, line.index("=") + 1)

    # -- constants ---------------------------------------------------------------------------

    def const(self, value, dtype, shape=()) -> str:
        """A constant of ``dtype``/``shape`` (``value`` broadcast to ``shape``); deduplicated."""
        dtype = xla_dtype(dtype)
        arr = np.asarray(value)
        if arr.dtype != dtype:
            arr = arr.astype(dtype)
        shape = tuple(shape)
        if arr.shape != shape:
            arr = np.broadcast_to(arr, shape)
        small = arr.size <= 16
        key = (dtype, shape, arr.tobytes()) if small else None
        if key is not None:
            name = self._consts.get(key)
            if name is not None:
                return name
        name = self.emit(f"stablehlo.constant {dense_attr(arr)}")
        if key is not None:
            self._consts[key] = name
        return name

    # -- common ops --------------------------------------------------------------------------

    def broadcast(self, x: str, aval, shape, dims=None, shared: bool = True) -> str:
        """``broadcast_in_dim`` of ``x`` (of ``aval``) to ``shape``; trailing-dims by default;
        emitted once per value, shape and dimensions in this body (NOTE: [one broadcast per
        operand]), or once per call where not ``shared`` (a divisor's)."""
        shape = tuple(shape)
        if tuple(aval.shape) == shape and dims is None:
            return x
        if dims is None:
            dims = range(len(shape) - len(aval.shape), len(shape))
        op = (
            f"stablehlo.broadcast_in_dim {x}, dims = {ints(dims)} : "
            f"({aval_type(aval)}) -> {tensor_type(shape, aval.dtype)}"
        )
        name = self._broadcasts.get(op) if shared else None
        if name is None:
            name = self.emit(op)
            if shared:
                self._broadcasts[op] = name
            self.broadcast_names.add(name)
        return name

    def convert(self, x: str, aval, dtype) -> str:
        """Convert ``x`` to ``dtype`` with NumPy's semantics (``!= 0`` for bool targets,
        real part for complex -> real)."""
        src, dst = xla_dtype(aval.dtype), xla_dtype(dtype)
        if src == dst:
            return x
        shape = aval.shape
        if dst == np.bool_:
            zero = self.const(0, src, shape)
            return self.compare("NE", x, zero, src, shape)
        if src.kind == "c" and dst.kind != "c":
            real_dtype = np.dtype(np.float32 if src == np.complex64 else np.float64)
            x = self.emit(
                f"stablehlo.real {x} : ({tensor_type(shape, src)}) -> {tensor_type(shape, real_dtype)}"
            )
            src = real_dtype
            if src == dst:
                return x
        return self.emit(f"stablehlo.convert {x} : ({tensor_type(shape, src)}) -> {tensor_type(shape, dst)}")

    def unary(self, op: str, x: str, aval, out_dtype=None) -> str:
        t_in = aval_type(aval)
        if out_dtype is None or xla_dtype(out_dtype) == xla_dtype(aval.dtype):
            return self.emit(f"{op} {x} : {t_in}")
        return self.emit(f'"{op}"({x}) : ({t_in}) -> {tensor_type(aval.shape, out_dtype)}')

    def binary(self, op: str, a: str, b: str, aval) -> str:
        return self.emit(f"{op} {a}, {b} : {aval_type(aval)}")

    def generic(self, op: str, operands: Sequence[str], in_types, out_types, attrs: str = "") -> Any:
        """An op in MLIR's generic form; returns one name or a list (``len(out_types) > 1``)."""
        attrs = f" {{{attrs}}}" if attrs else ""
        outs = out_types[0] if len(out_types) == 1 else "(" + ", ".join(out_types) + ")"
        rhs = f'"{op}"({", ".join(operands)}){attrs} : ({", ".join(in_types)}) -> {outs}'
        return self.emit(rhs, nres=len(out_types))

    def compare(self, direction: str, a: str, b: str, dtype, shape) -> str:
        dtype = xla_dtype(dtype)
        t = tensor_type(shape, dtype)
        return self.emit(
            f"stablehlo.compare {direction}, {a}, {b}, {compare_type(dtype)} : ({t}, {t}) -> "
            f"{tensor_type(shape, np.bool_)}"
        )

    def select(self, pred: str, on_true: str, on_false: str, pred_aval_shape, aval) -> str:
        return self.emit(
            f"stablehlo.select {pred}, {on_true}, {on_false} : "
            f"{tensor_type(pred_aval_shape, np.bool_)}, {aval_type(aval)}"
        )


# NOTE: [xla metadata]
# ``set_xla_metadata`` (funcgrad/experimental/xla_metadata.py) gives XLA frontend attributes to
# operations, as JAX does: as a context manager or decorator, the metadata in force is recorded
# in each equation staged meanwhile (``SourceInfo.xla_metadata``, read by JAX's ``eqn.ctx``), and
# equations a transformation makes by re-interpreting one (jvp, transpose, vmap of a jaxpr)
# inherit it with the source line (NOTE: [source info of re-interpreted equations]); on a value,
# an identity equation (``xla_metadata_value``) carries it. Lowering puts an equation's metadata
# on the operations that compute its results (``FunctionBuilder.frontend_attributes``: the
# operation defining each result, as JAX's ``wrap_xla_metadata_in_place`` tags each result's
# owner) as ``mhlo.frontend_attributes = {key = "value"}``: JAX's text, values as strings, bools
# in lower case, keys sorted as MLIR prints a dictionary. The attribute dictionary goes where
# MLIR's formats put it: before the `` : `` of the types (pretty and generic forms), after the
# ``})`` closing the regions of an operation that has them, after the name of the two whose
# formats start with it (``stablehlo.constant``, ``stablehlo.optimization_barrier``); an existing
# dictionary is extended (every catalog entry's lowering under metadata parses: checked with
# tests/primitives/op_db by tests/surface/experimental/test_xla_metadata.py). The metadata in
# force is also part of ``jit``'s trace cache key (a user context), so a function traced under
# other metadata is traced again, as in JAX. (HLO instruction names are JAX's, ``sin.1``: NOTE:
# [operation locations].)

_FRONTEND = "mhlo.frontend_attributes = {"


def _attr_string(v) -> str:
    return string_literal(str(v).lower() if isinstance(v, bool) else str(v))


def _with_frontend_attributes(line: str, metadata, start: int) -> str:
    """``line`` (one operation, or the last line of one with regions; its text after ``start``
    holds the attribute dictionary and types) with ``metadata`` among its frontend attributes."""
    pairs = {attribute_key(str(k)): _attr_string(v) for k, v in metadata}
    # Scan the top level for the `` : `` before the types and the last ``{...}`` before it.
    depth, quoted, i, colon, last_dict = 0, False, start, -1, None
    while i < len(line):
        c = line[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c in "([{<":
            if c == "{" and depth == 0:
                last_dict = [i, -1]
            depth += 1
        elif c in ")]}" or (c == ">" and line[i - 1] != "-"):
            depth -= 1
            if c == "}" and depth == 0 and last_dict is not None:
                last_dict[1] = i
        elif depth == 0 and line.startswith(" : ", i):
            colon = i
            break
        i += 1
    if colon < 0:
        return line  # (no types: not an operation's line this knows how to annotate)
    for op in _DICT_FIRST:
        if line[start:].lstrip().startswith(op) and last_dict is None:
            at = line.index(op, start) + len(op) - 1
            return f"{line[:at]} {{{_FRONTEND}{_pairs(pairs)}}}}}{line[at:]}"
    if last_dict is not None and last_dict[1] >= 0 and line[last_dict[1] + 1 : colon].strip() == "":
        lo, hi = last_dict
        inner = line[lo + 1 : hi]
        k = inner.find(_FRONTEND)
        if k >= 0:  # already annotated: merge (the attributes it has win)
            a = b = k + len(_FRONTEND)
            have = {}
            while (m := _PAIR.match(inner, b)) is not None:
                have[m.group(1)] = m.group(2)
                b = m.end() + (2 if inner.startswith(", ", m.end()) else 0)
            inner = inner[:a] + _pairs({**pairs, **have}) + inner[b:]
        else:
            inner = f"{_FRONTEND}{_pairs(pairs)}}}" + (", " + inner if inner.strip() else "")
        return line[: lo + 1] + inner + line[hi:]
    return f"{line[:colon]} {{{_FRONTEND}{_pairs(pairs)}}}}}{line[colon:]}"


# Pretty forms whose attribute dictionary comes first, right after the operation's name.
_DICT_FIRST = ("stablehlo.constant ", "stablehlo.optimization_barrier ")
_PAIR = re.compile(r'("(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_$.]*) = ("(?:[^"\\]|\\.)*")')


def _pairs(pairs: dict) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sorted(pairs.items(), key=lambda kv: kv[0].strip('"')))


def compare_type(dtype) -> str:
    """StableHLO compare type: FLOAT for inexact, SIGNED for signed ints, UNSIGNED otherwise."""
    dtype = xla_dtype(dtype)
    if _fdt.is_inexact(dtype):
        return "FLOAT"
    if _fdt.kind(dtype) == "i":
        return "SIGNED"
    return "UNSIGNED"  # unsigned ints and bool (i1), as JAX does


class LoweringContext:
    """What a rule sees of its equation (NOTE: [lowering rule signature])."""

    __slots__ = ("fb", "avals_in", "avals_out", "primitive")

    def __init__(self, fb, primitive, avals_in, avals_out):
        self.fb = fb
        self.primitive = primitive
        self.avals_in = avals_in
        self.avals_out = avals_out

    @property
    def aval_out(self):
        return self.avals_out[0]

    def operands(self, args: Sequence[str], shape=None, shared=(True, True)) -> list[str]:
        """Operands broadcast to ``shape`` (default: the output's): scalars become arrays
        (``shared[i]``: operand i's broadcast is deduplicated, NOTE: [one broadcast per operand])."""
        shape = self.avals_out[0].shape if shape is None else tuple(shape)
        return [
            self.fb.broadcast(a, av, shape, shared=i >= len(shared) or shared[i])
            if tuple(av.shape) != shape
            else a
            for i, (a, av) in enumerate(zip(args, self.avals_in))
        ]


# ----------------------------------------------------------------------------------------------
# The module


class ModuleBuilder:
    """A module under construction: ``@main`` plus private functions of nested jit calls."""

    def __init__(self, name: str, spmd=None, platform: str = "cpu"):
        self.name = name
        # The platform the module is compiled for ("cpu", "cuda"): the few rules whose kernels
        # differ per platform (LAPACK vs cuSOLVER, NOTE: [LAPACK custom calls]) read it.
        self.platform = platform
        # An SPMD program's meshes, manual bodies and channels (``xla_bridge.meshes.SpmdLowering``);
        # None for a program on one device.
        self.spmd = spmd
        self.functions: list[list[str]] = []
        self._private: dict[int, tuple[str, ClosedJaxpr]] = {}
        self._symbols: set[str] = {"main"}
        # The Python functions the module's host-callback custom calls run, by index (passed to
        # the compiler with the module; xla_bridge/rules/callbacks.py).
        self.host_callbacks: list = []

    def symbol(self, base: str, dotted: bool = False) -> str:
        """A fresh symbol from ``base`` (``dotted``: keeping its dots, as a composite's
        decomposition is named ``@my.square``)."""
        base = re.sub(r"[^A-Za-z0-9_.]" if dotted else r"[^A-Za-z0-9_]", "_", base) or "fn"
        if not re.match(r"[A-Za-z_]", base):
            base = "_" + base  # (an MLIR symbol starts with a letter or an underscore)
        name = base
        for i in itertools.count(1):
            if name not in self._symbols:
                break
            name = f"{base}_{i}"
        self._symbols.add(name)
        return name

    def private_function(self, closed: ClosedJaxpr, name: str, dotted: bool = False) -> str:
        """The symbol of a private function computing ``closed`` (lowered once per object)."""
        hit = self._private.get(id(closed))
        if hit is not None and hit[1] is closed:
            return hit[0]
        sym = self.symbol(name, dotted)
        # Record before lowering the body, so recursion on the same object is impossible to loop.
        self._private[id(closed)] = (sym, closed)
        fb = FunctionBuilder(self, embed_all_consts=True)
        args = [f"%arg{i}" for i in range(len(closed.jaxpr.invars))]
        outs = lower_closed(fb, closed, args)
        in_sig = ", ".join(f"{a}: {aval_type(v.aval)}" for a, v in zip(args, closed.jaxpr.invars))
        out_types = [aval_type(a) for a in closed.jaxpr.out_avals]
        self.functions.append(
            [
                f"  func.func private @{sym}({in_sig}) -> ({', '.join(out_types)}) {{",
                *fb.lines,
                return_line(outs, out_types),
                "  }",
            ]
        )
        return sym


def return_line(outs, out_types) -> str:
    """The ``return`` line closing a function."""
    if not outs:
        return "    return"
    return f"    return {', '.join(outs)} : {', '.join(out_types)}"


def const_value(c) -> np.ndarray:
    """The host value of a jaxpr constant."""
    if isinstance(c, core.Tracer):
        raise LoweringError("a jaxpr to be compiled closes over a tracer (internal error)")
    return c._numpy() if isinstance(c, core.Array) else np.asarray(c)


def lower_jaxpr_body(
    fb: FunctionBuilder, jaxpr: Jaxpr, consts: Sequence[str], args: Sequence[str]
) -> list[str]:
    """Emit the equations of ``jaxpr`` into ``fb``; returns the SSA names of its outputs."""
    env: dict = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))
    outer_loc = fb.loc  # (an inlined body's operations are named by its equations; then the caller's again)
    scope = fb.scope
    # A literal is a constant of the function, not of the equation reading it (JAX's location:
    # XLA names an instruction from its operands' locations too, ``mul_jit_f_`` for ``2 * x``)
    literal_loc = f' loc("{escaped(scope)}")' if scope else ""

    def read(a):
        if type(a) is Literal:
            loc, fb.loc = fb.loc, literal_loc
            name = fb.const(a.val, a.aval.dtype, a.aval.shape)
            fb.loc = loc
            return name
        return env[a]

    eqns = jaxpr.eqns
    if any(e.primitive.traits.kept_when_dead for e in eqns):
        # Traced programs keep a dead pure_callback/ffi_call so that transformations refuse it
        # (NOTE: [primitive traits]); JAX's lowering removes it, and so does this one.
        eqns = backward_dependencies(eqns, jaxpr.outvars, effects=True, refused=False)[1]
    for eqn in eqns:
        prim = eqn.primitive
        info = eqn.source_info
        fb.loc = _eqn_loc(scope, info.name_stack if info is not None else "", prim.name)
        rule = lowering_rules.get(prim)
        if rule is None:
            # Exactly NotImplementedError, as JAX raises it for a primitive without a lowering (its
            # primitives tutorial checks the type with ``is``).
            raise NotImplementedError(  # (JAX's words, then funcgrad's)
                f"MLIR translation rule for primitive '{prim.name}' not found for platform "
                f"{fb.module.platform} (it has no XLA lowering rule in xla_bridge.emitter.lowering_rules: "
                "it can run eagerly but not under jit)"
            )
        avals_in = [a.aval for a in eqn.invars]
        avals_out = [v.aval for v in eqn.outvars]
        ctx = LoweringContext(fb, prim, avals_in, avals_out)
        outs = rule(ctx, *[read(a) for a in eqn.invars], **eqn.params)
        if not prim.multiple_results:
            outs = [outs]
        if len(outs) != len(eqn.outvars):
            raise LoweringError(
                f"lowering of {prim.name} returned {len(outs)} values, expected {len(eqn.outvars)}"
            )
        if info is not None and info.xla_metadata:
            for o in outs:
                fb.frontend_attributes(o, info.xla_metadata)
        spmd = fb.module.spmd
        if spmd is not None and not spmd.manual:
            outs = list(outs)
            untyped = _untyped_in_body(eqn)
            for i, v in enumerate(eqn.outvars):
                if v.aval._sharding is not None and i not in untyped:
                    outs[i] = typed_constraint(fb, outs[i], v.aval)
        env.update(zip(eqn.outvars, outs))
    fb.loc = outer_loc
    return [read(a) for a in jaxpr.outvars]


# NOTE: [operation locations]
# Each operation of a lowered equation carries JAX's location, an MLIR NameLoc of the equation's
# name stack and primitive (``loc("jit(f)/blk/sin")``: ``jit(<name>)`` in ``@main``, then the
# equation's ``named_scope`` names, then the primitive), as JAX's ``source_info_to_location``
# writes it. XLA names each HLO instruction from it (the part after the last ``/``: ``sin.2``
# where an unnamed ``stablehlo.sine`` became ``sine.2``) and keeps it as the instruction's
# ``op_name`` metadata, so ``compile().as_text()``, profiles and XLA dumps read as JAX's; the
# parameters of ``@main`` carry the argument names (``loc("x")``: ``x.1 = parameter(0)``) and its
# results JAX's ``jax.result_info`` (``xla_bridge.lowering``). Operations a rule emits get its
# equation's location (a broadcast of ``mul``'s operand is ``mul`` too, as in JAX); a private
# function (a nested ``jit``) names its equations without the caller's ``jit(f)``, as JAX lowers
# a function out of line; its ``func.call`` is ``jit(g)`` (``call.py``). Not written: JAX's
# transformation wrappers (``jvp(...)``, ``transpose(...)``, ``vmap(...)``: funcgrad's name
# stack holds the ``named_scope`` names only) and the Python file/line child locations JAX nests
# inside (its ``stack_frame_id`` metadata); the last path component, the instruction's name, is
# the primitive's either way. One f-string per equation: the transformer step's lowering
# (1107 equations) measured within noise of the text without locations.


def _eqn_loc(scope: str, name_stack: str, prim_name: str) -> str:
    """`` loc("jit(f)/blk/sin")``: the location suffix of an equation's operations (NOTE:
    [operation locations]).

    >>> _eqn_loc("jit(f)", "blk", "sin"), _eqn_loc("", "", "cos")
    (' loc("jit(f)/blk/sin")', ' loc("cos")')
    """
    path = f"{scope}/{name_stack}/{prim_name}" if name_stack else f"{scope}/{prim_name}"
    if not scope:
        path = path[1:]
    return f' loc("{escaped(path)}")'


def escaped(text: str) -> str:
    """``text`` inside an MLIR string literal.

    >>> print(escaped('say "hi"'))
    say \\"hi\\"
    """
    return text.replace("\\", "\\\\").replace('"', '\\"') if '"' in text or "\\" in text else text


def _untyped_in_body(eqn) -> frozenset:
    """The results of a call (jit, checkpoint, ...) that its body leaves untyped, in Auto axes (a
    residual computed inside ``auto_axes``, through any depth of nested calls): typed replicated
    outside, they are not constrained so, as JAX's call lowering does not (a replicated index of a
    scatter whose updates are split and whose result is unreduced is a Shardy CHECK failure)."""
    param = eqn.primitive.traits.call_jaxpr_param
    body = eqn.params.get(param) if param is not None else None
    jaxpr = getattr(body, "jaxpr", body)
    outvars = getattr(jaxpr, "outvars", None)
    if outvars is None or len(outvars) != len(eqn.outvars):
        return frozenset()
    made = {}
    for e in jaxpr.eqns:
        for i, v in enumerate(e.outvars):
            made[v] = (e, i)
    out = set()
    for i, v in enumerate(outvars):
        if getattr(v.aval, "_sharding", 0) is None:
            out.add(i)
        elif v in made and made[v][1] in _untyped_in_body(made[v][0]):
            out.add(i)
    return frozenset(out)


def typed_constraint(fb: FunctionBuilder, x: str, aval) -> str:
    """``x`` constrained to the sharding of its type (NOTE: [sharding in types]): an
    ``sdy.sharding_constraint`` on the program's mesh, so XLA's partitioner lays each value out
    as the sharding rules typed it. A dimension is closed (``{"x"}``, ``{}``) on a mesh whose axes
    are all explicit, open (``{"x", ?}``) where auto axes may still split it, the explicit axes the
    type leaves unused then ``replicated`` (JAX's ``modify_wrt_axis_types``). The axis types are
    the type's (inside ``auto_axes`` some are Auto), not the program mesh's."""
    spmd = fb.module.spmd
    mesh, am = spmd.mesh, aval._sharding.mesh
    if mesh is None or (tuple(mesh.axis_names), tuple(mesh.devices.shape)) != (am.axis_names, am.axis_sizes):
        return x  # the program's devices carry another mesh: the partitioner decides
    is_open = any(t.name != "Explicit" for t in am.axis_types)
    spec = aval._sharding.spec
    dims = []
    for d in range(aval.ndim):
        p = spec[d] if d < len(spec) else None
        dims.append(() if p is None else (p if isinstance(p, tuple) else (p,)))
    # An unreduced type (NOTE: [unreduced values]): each device holds a partial sum along those axes.
    unreduced = getattr(spec, "unreduced", None) or ()
    replicated = ()
    if is_open:
        used = {n for dim in dims for n in dim} | set(unreduced) | set(getattr(spec, "reduced", None) or ())
        explicit = (n for n, t in zip(am.axis_names, am.axis_types) if t.name == "Explicit")
        replicated = tuple(n for n in explicit if n not in used)
    sharding = spmd.sharding(mesh, dims, unreduced=unreduced, open_dims=is_open, replicated=replicated)
    return fb.emit(f"sdy.sharding_constraint {x} {sharding} : {aval_type(aval)}")


def lower_closed(fb: FunctionBuilder, closed: ClosedJaxpr, args: Sequence[str]) -> list[str]:
    """Emit ``closed`` into ``fb`` on ``args`` with its constants embedded (an inlined call, a
    control-flow region, a private function); returns the SSA names of its outputs."""
    consts = [
        create_token(fb) if v.aval is abstract_token else fb.const(const_value(c), v.aval.dtype, v.aval.shape)
        for v, c in zip(closed.jaxpr.constvars, closed.consts)
    ]
    return lower_jaxpr_body(fb, closed.jaxpr, consts, list(args))


def create_token(fb: FunctionBuilder) -> str:
    """A fresh token: also what a captured ``Token`` constant lowers to, as JAX's constant
    handler of tokens (NOTE: [tokens] in funcgrad/kernel/ir.py)."""
    return fb.emit("stablehlo.create_token : !stablehlo.token")
