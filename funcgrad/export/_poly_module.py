"""One StableHLO module for every size of a symbolic export: the lowerings at a few sizes of the
dimension variables merged into a module with dynamic dimensions, as JAX's symbolic exports are.

Layer: surface. Imports ``funcgrad.xla_bridge.portable`` (jaxlib's MLIR bindings), the
symbolic dimensions of ``_shape_poly`` and pytree key paths (``_aot.leaf_key_paths``);
``_polymorphic`` calls ``generalize``, ``_exported`` calls ``check_call``.

# NOTE: [one module for all sizes]
# funcgrad traces with concrete shapes (NOTE: [exporting with symbolic dimensions]), so it has no
# lowering with symbolic shapes. ``generalize`` takes the lowerings of one program at several sets
# of sizes (the samples), inlines their private functions, and walks them side by side: every
# operation must be the same in all of them (else the export has no portable module). A value
# whose dimension differs between samples gets a dynamic dimension (``?``); an integer that
# differs (a dimension in a type or attribute, a constant such as the ``n`` of a mean) is fitted
# as a polynomial of the variables (``_polymorphic._fit_dim``) and computed in the module from the
# variables. As in JAX's modules, ``@main`` computes the variables from its arguments' sizes
# (``get_dimension_size``), checks them, and calls ``@_wrapped_jax_export_main``, the program,
# with the variables first (each a ``jax.global_constant``, which refinement specializes). The
# operations whose result shapes come from attributes become their dynamic forms
# (``broadcast_in_dim`` -> ``dynamic_broadcast_in_dim``, ``reshape``, ``iota``, ``slice`` ->
# ``real_dynamic_slice``, ``pad``, splat constants); every other operation only takes the
# dynamic types. The shape checks are JAX's ``shape_assertion`` custom calls, with JAX's messages:
# jaxlib's refinement (the caller's, NOTE: [embedding an exported module]) checks them and turns the
# module back into a static one. The merged module is refined at the last sample's sizes and must
# give that sample's result types, else it is not used.
"""

from __future__ import annotations

from funcgrad._aot import leaf_key_paths
from funcgrad.export._shape_poly import _ATOMS, DimExpr, InconclusiveDimensionOperation
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.ir import ShapedArray  # noqa: F401 - (the examples)
from funcgrad.xla_bridge import portable
from funcgrad.xla_bridge.portable import ir

__all__ = ["Ints", "NotGeneral", "arg_names", "check_call", "generalize", "solve_dims"]

_I64 = "tensor<i64>"
_HELP = (
    ". Please see https://docs.jax.dev/en/latest/export/shape_poly.html#shape-assertion-errors for "
    "more details."
)


class NotGeneral(Exception):
    """The samples' lowerings cannot be merged into one module (their structure differs, or an
    operation has no dynamic form here)."""


def _blocks(block) -> list:
    """``block`` and every block nested in it, in the order of ``portable.walk``."""
    return [block, *(b for op in portable.walk(block) for b in portable.nested_blocks(op))]


def _attrs(op) -> dict:
    attrs = op.attributes
    return {attrs[i].name: str(attrs[i].attr) for i in range(len(attrs))}


def _dynamic(types: list[str]) -> tuple[str, list[int]]:
    """The type of a value typed ``types`` in the samples, and the indices of its dimensions that
    differ (``?`` in the type)."""
    ts = [ir.RankedTensorType(ir.Type.parse(t)) for t in types]
    shapes = [list(t.shape) for t in ts]
    if len({len(s) for s in shapes}) != 1 or len({str(t.element_type) for t in ts}) != 1:
        raise NotGeneral(f"types {types[0]} and {types[1]}")
    differ = [k for k in range(len(shapes[0])) if len({s[k] for s in shapes}) > 1]
    dims = ["?" if k in differ else str(d) for k, d in enumerate(shapes[0])]
    return f"tensor<{'x'.join([*dims, str(ts[0].element_type)])}>", differ


class _Emitter:
    """Integer scalars (``tensor<i64>``) computed from the dimension variables, at the start of
    ``@main``; one value per expression."""

    def __init__(self, ip, loc):
        self.ip, self.loc = ip, loc
        self.vars: dict = {}
        self.cache: dict = {}

    def op(self, name, operands, result=_I64, attrs=None):
        with self.ip, self.loc:
            attributes = {k: ir.Attribute.parse(v) for k, v in (attrs or {}).items()}
            return ir.Operation.create(
                name, results=[ir.Type.parse(result)], operands=list(operands), attributes=attributes
            ).result

    def const(self, k: int, t: str = _I64):
        key = ("const", int(k), t)
        if key not in self.cache:
            self.cache[key] = self.op("stablehlo.constant", [], t, {"value": f"dense<{int(k)}> : {t}"})
        return self.cache[key]

    def binary(self, name, a, b, result=_I64):
        return self.op(f"stablehlo.{name}", [a, b], result)

    def expr(self, e):
        """The value of ``e`` (an int or a ``DimExpr``)."""
        if not isinstance(e, DimExpr):
            return self.const(int(e))
        key = ("expr", str(e))
        if key in self.cache:
            return self.cache[key]
        total = None
        for mono, coeff in sorted(e.terms.items()):
            v = self.const(coeff)
            for name in mono:
                v = self.binary("multiply", v, self.atom(name))
            total = v if total is None else self.binary("add", total, v)
        self.cache[key] = total if total is not None else self.const(0)
        return self.cache[key]

    def atom(self, name):
        if name in self.vars:
            return self.vars[name]
        if name not in _ATOMS:
            raise NotGeneral(f"dimension variable {name} is not known")
        op, args = _ATOMS[name]
        a, b = (self.expr(x) for x in args)
        if op == "floordiv":  # (floor division: sizes may be negative in intermediate terms)
            q = self.binary("divide", a, b)
            r = self.binary("remainder", a, b)
            zero = self.const(0)
            neg = self.op("stablehlo.compare", [r, zero], "tensor<i1>",
                          {"comparison_direction": "#stablehlo<comparison_direction NE>"})  # fmt: skip
            sign = self.op("stablehlo.compare", [self.binary("multiply", r, b), zero], "tensor<i1>",
                           {"comparison_direction": "#stablehlo<comparison_direction LT>"})  # fmt: skip
            fix = self.binary("and", neg, sign, "tensor<i1>")
            return self.op("stablehlo.select", [fix, self.binary("subtract", q, self.const(1)), q])
        if op == "mod":
            r = self.binary("remainder", a, b)
            return self.binary("remainder", self.binary("add", r, b), b)
        return self.binary("maximum" if op == "max" else "minimum", a, b)

    def shape(self, dims):
        """A ``tensor<Nxi64>`` of the dimensions ``dims`` (ints or ``DimExpr``)."""
        parts = [self.op("stablehlo.reshape", [self.expr(d)], "tensor<1xi64>") for d in dims]
        if not parts:
            return self.op("stablehlo.constant", [], "tensor<0xi64>", {"value": "dense<> : tensor<0xi64>"})
        if len(parts) == 1:
            return parts[0]
        with self.ip, self.loc:
            return ir.Operation.create(
                "stablehlo.concatenate",
                results=[ir.Type.parse(f"tensor<{len(parts)}xi64>")],
                operands=parts,
                attributes={"dimension": ir.Attribute.parse("0 : i64")},
            ).result


def _inlined(text: str, ctx) -> ir.Module:
    """The module with every ``func.call`` of ``@main`` replaced by the callee's body (jaxlib's
    context has no inliner for ``func``), private functions dropped."""
    module = ir.Module.parse(text, context=ctx)
    funcs = {ir.StringAttr(op.attributes["sym_name"]).value: op for op in module.body.operations
             if op.operation.name == "func.func"}  # fmt: skip
    main = funcs["main"]
    while True:
        calls = [op for op in portable.walk(main.regions[0].blocks[0]) if op.operation.name == "func.call"]
        if not calls:
            break
        for call in calls:
            callee = funcs[ir.FlatSymbolRefAttr(call.attributes["callee"]).value]
            block = callee.regions[0].blocks[0]
            mapping = {a: v for a, v in zip(block.arguments, call.operands)}
            results = None
            for op in block.operations:
                if op.operation.name == "func.return":
                    results = [mapping.get(v, v) for v in op.operands]
                    break
                new = op.clone(ir.InsertionPoint(call))
                for inner in [new, *(x for b in portable.nested_blocks(new) for x in portable.walk(b))]:
                    for i, v in enumerate(inner.operands):
                        if v in mapping:
                            inner.operands[i] = mapping[v]
                for old, r in zip(op.results, new.results):
                    mapping[old] = r
            for r, v in zip(call.results, results):
                r.replace_all_uses_with(v)
            call.erase()
    for name, op in funcs.items():
        if name != "main":
            op.erase()
    return module


def generalize(texts, fit, in_avals, arg_offset: int, scope_constraints=(), names=None) -> str:
    """The module for all sizes from the lowerings ``texts`` at the samples (NOTE: [one module
    for all sizes]). ``fit(values)``: the expression (int or ``DimExpr``) that gives the samples'
    ``values``, or None. ``in_avals``: the symbolic argument avals; ``arg_offset``: parameters of
    ``@main`` before the arguments (the platform index). ``scope_constraints``: parsed
    ``(op, lhs, rhs, text)`` constraints to assert. Raises ``NotGeneral``."""
    ctx = portable.make_context()
    with ctx:
        modules = [_inlined(t, ctx) for t in texts]
        mains = [portable.main_function(m, NotGeneral) for m in modules]
        entry = [m.regions[0].blocks[0] for m in mains]
        ops = [list(portable.walk(b)) for b in entry]
        blocks = [_blocks(b) for b in entry]
        if len({len(o) for o in ops}) != 1 or len({len(b) for b in blocks}) != 1:
            raise NotGeneral("the lowerings at different sizes have different operations")
        # -- the values whose types differ ------------------------------------------------------
        dyn: dict = {}  # value of sample 0 -> (dynamic type, [expr per dim])

        def note(values):
            types = [str(v.type) for v in values]
            if len(set(types)) == 1:
                return
            t, differ = _dynamic(types)
            shapes = [list(ir.RankedTensorType(v.type).shape) for v in values]
            dims = []
            for k, d in enumerate(shapes[0]):
                if k in differ:
                    e = fit([s[k] for s in shapes])
                    if e is None:
                        raise NotGeneral(f"a dimension {[s[k] for s in shapes]} is not a polynomial")
                    dims.append(e)
                else:
                    dims.append(d)
            dyn[values[0]] = (t, dims)

        for bs in zip(*blocks):
            if len({len(b.arguments) for b in bs}) != 1:
                raise NotGeneral("blocks differ")
            for args in zip(*(b.arguments for b in bs)):
                note(args)
        for os_ in zip(*ops):
            kinds = {o.operation.name for o in os_}
            if len(kinds) != 1 or len({len(o.results) for o in os_}) != 1:
                raise NotGeneral(f"operations {sorted(kinds)} differ")
            for rs in zip(*(o.results for o in os_)):
                note(rs)
        # -- the program moves to @_wrapped_jax_export_main, which takes the dimension variables
        # first (JAX's calling convention: each a ``jax.global_constant``), then the arguments ----
        main = mains[0]
        body = entry[0]
        for v, (t, _) in dyn.items():
            v.set_type(ir.Type.parse(t))
        variables = sorted(
            set().union(*(d.variables() for a in in_avals for d in a.shape if isinstance(d, DimExpr)))
        )
        i64 = ir.Type.parse(_I64)
        arg_types = [a.type for a in body.arguments]
        old_attrs = list(ir.ArrayAttr(main.attributes["arg_attrs"])) if "arg_attrs" in main.attributes else []
        old_attrs += [ir.DictAttr.get({})] * (len(arg_types) - len(old_attrs))
        with ir.InsertionPoint(modules[0].body), ir.Location.unknown():
            wrapped = ir.Operation.create(
                "func.func",
                regions=1,
                attributes={
                    "sym_name": ir.StringAttr.get("_wrapped_jax_export_main"),
                    "sym_visibility": ir.StringAttr.get("private"),
                    "function_type": ir.TypeAttr.get(
                        ir.FunctionType.get([i64] * len(variables) + arg_types, [])
                    ),
                    "arg_attrs": ir.ArrayAttr.get(
                        [ir.DictAttr.get({"jax.global_constant": ir.StringAttr.get(v)}) for v in variables]
                        + old_attrs
                    ),
                },
            )
        with ir.Location.unknown():
            block = wrapped.regions[0].blocks.append(*([i64] * len(variables) + arg_types))
        # (the computations go after an anchor of their own at the top: an operation of the
        # program may be replaced, and an insertion point must not outlive its operation)
        with ir.InsertionPoint(block), ir.Location.unknown():
            anchor = ir.Operation.create(
                "stablehlo.constant",
                results=[i64],
                attributes={"value": ir.Attribute.parse(f"dense<0> : {_I64}")},
            )
        last = anchor
        for op in list(body.operations):
            op.move_after(last)
            last = op
        for old, new in zip(body.arguments, list(block.arguments)[len(variables) :]):
            old.replace_all_uses_with(new)
        em = _Emitter(ir.InsertionPoint(anchor), ir.Location.unknown())
        em.vars = {v: block.arguments[i] for i, v in enumerate(variables)}
        # -- operations -------------------------------------------------------------------------
        for os_ in zip(*ops):
            op = os_[0]
            attrs = [_attrs(o) for o in os_]
            differ = {k for k in attrs[0] if len({str(a.get(k)) for a in attrs}) > 1}
            name = op.operation.name
            out = dyn.get(op.results[0]) if len(op.results) == 1 else None
            if name == "stablehlo.constant" and (differ or out):
                _constant(em, os_, out, fit)
            elif name in _REWRITES and (differ or out):
                _REWRITES[name](em, os_, out, differ, fit)
            elif differ:
                raise NotGeneral(f"{name} has attributes {sorted(differ)} that depend on the sizes")
            elif any(r in dyn for r in op.results) and name in _FIXED_RESULT:
                raise NotGeneral(f"{name} has a result shape that depends on the sizes")
        anchor.erase()
        ret = block.operations[len(block.operations) - 1]
        outs = [v.type for v in ret.operands]
        wrapped.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get([i64] * len(variables) + arg_types, outs)
        )
        # -- @main: the variables from its arguments' sizes, JAX's shape assertions, the call ------
        em_main = _Emitter(ir.InsertionPoint(body), ir.Location.unknown())
        _solve(em_main, body, in_avals, arg_offset, scope_constraints, names)
        with ir.InsertionPoint(body), ir.Location.unknown():
            call = ir.Operation.create(
                "func.call",
                results=outs,
                operands=[em_main.vars[v] for v in variables] + list(body.arguments),
                attributes={"callee": ir.FlatSymbolRefAttr.get("_wrapped_jax_export_main")},
            )
            ir.Operation.create("func.return", operands=list(call.results))
        main.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(arg_types, outs))
        module = modules[0]
        module.operation.attributes["jax.uses_shape_polymorphism"] = ir.BoolAttr.get(True)
        if not module.operation.verify():
            raise NotGeneral("the merged module does not verify")
        return module.operation.get_asm(enable_debug_info=True)


# Operations whose result shape is an attribute or a custom call's: no dynamic form here.
_FIXED_RESULT = frozenset(
    {"stablehlo.custom_call", "stablehlo.rng_bit_generator", "stablehlo.rng", "stablehlo.dynamic_slice",
     "stablehlo.infeed", "stablehlo.recv", "stablehlo.reduce_window", "stablehlo.convolution",
     "stablehlo.fft", "stablehlo.gather"}
)  # fmt: skip


def _replace(em, op, name, operands, result_type, attrs):
    with ir.InsertionPoint(op), op.location:
        new = ir.Operation.create(
            name, results=[ir.Type.parse(result_type)], operands=list(operands), attributes=attrs
        )
    op.results[0].replace_all_uses_with(new.result)
    op.erase()


def _dims(op, out):
    if out is not None:
        return out
    t = ir.RankedTensorType(op.results[0].type)
    return str(t), list(t.shape)


def _broadcast(em, os_, out, differ, fit):
    op = os_[0]
    t, dims = _dims(op, out)
    attrs = {"broadcast_dimensions": op.attributes["broadcast_dimensions"]}
    _replace(em, op, "stablehlo.dynamic_broadcast_in_dim", [op.operands[0], em.shape(dims)], t, attrs)


def _reshape(em, os_, out, differ, fit):
    op = os_[0]
    t, dims = _dims(op, out)
    _replace(em, op, "stablehlo.dynamic_reshape", [op.operands[0], em.shape(dims)], t, {})


def _iota(em, os_, out, differ, fit):
    op = os_[0]
    t, dims = _dims(op, out)
    _replace(em, op, "stablehlo.dynamic_iota", [em.shape(dims)], t,
             {"iota_dimension": op.attributes["iota_dimension"]})  # fmt: skip


def _fitted_array(os_, key, fit):
    values = [list(ir.DenseI64ArrayAttr(o.attributes[key])) for o in os_]
    out = []
    for k in range(len(values[0])):
        col = [v[k] for v in values]
        e = col[0] if len(set(col)) == 1 else fit(col)
        if e is None:
            raise NotGeneral(f"{key} {col} is not a polynomial of the sizes")
        out.append(e)
    return out


def _slice(em, os_, out, differ, fit):
    op = os_[0]
    t, _ = _dims(op, out)
    start, limit, strides = (
        _fitted_array(os_, k, fit) for k in ("start_indices", "limit_indices", "strides")
    )
    _replace(em, op, "stablehlo.real_dynamic_slice",
             [op.operands[0], em.shape(start), em.shape(limit), em.shape(strides)], t, {})  # fmt: skip


def _pad(em, os_, out, differ, fit):
    op = os_[0]
    t, _ = _dims(op, out)
    low, high, interior = (_fitted_array(os_, k, fit) for k in ("edge_padding_low", "edge_padding_high",
                                                                  "interior_padding"))  # fmt: skip
    operands = [op.operands[0], op.operands[1], em.shape(low), em.shape(high), em.shape(interior)]
    _replace(em, op, "stablehlo.dynamic_pad", operands, t, {})


_REWRITES = {
    "stablehlo.broadcast_in_dim": _broadcast,
    "stablehlo.reshape": _reshape,
    "stablehlo.iota": _iota,
    "stablehlo.slice": _slice,
    "stablehlo.pad": _pad,
}


def _splat(op):
    attr = ir.DenseElementsAttr(op.attributes["value"])
    if not attr.is_splat:
        return None
    v = attr.get_splat_value()
    for kind in (ir.FloatAttr, ir.IntegerAttr, ir.BoolAttr):
        try:
            return kind(v).value
        except (ValueError, TypeError):
            continue
    return None


def _constant(em, os_, out, fit):
    op = os_[0]
    values = [_splat(o) for o in os_]
    if any(v is None for v in values):
        raise NotGeneral("a constant array whose shape or value depends on the sizes")
    t = ir.RankedTensorType(op.results[0].type)
    elem = str(t.element_type)
    scalar_type = f"tensor<{elem}>"
    if len(set(values)) == 1:
        with ir.InsertionPoint(op), op.location:
            scalar = ir.Operation.create(
                "stablehlo.constant",
                results=[ir.Type.parse(scalar_type)],
                attributes={
                    "value": ir.DenseElementsAttr.get_splat(ir.Type.parse(scalar_type), _splat_attr(op))
                },
            ).result
    else:
        scalar = _fitted_scalar(em, op, values, scalar_type, fit)
    if out is None:  # (a scalar whose value depends on the sizes)
        op.results[0].replace_all_uses_with(scalar)
        op.erase()
        return
    rt, dims = out
    _replace(em, op, "stablehlo.dynamic_broadcast_in_dim", [scalar, em.shape(dims)], rt,
             {"broadcast_dimensions": ir.Attribute.parse("array<i64>")})  # fmt: skip


def _splat_attr(op):
    return ir.DenseElementsAttr(op.attributes["value"]).get_splat_value()


def _fitted_scalar(em, op, values, scalar_type, fit):
    """A scalar constant whose value is a polynomial of the sizes (or its reciprocal)."""
    ints = all(float(v) == round(float(v)) for v in values)
    recip = not ints and all(v and float(1 / v) == round(float(1 / v)) for v in values)
    if not (ints or recip):
        raise NotGeneral(f"constants {values[:3]} depend on the sizes")
    e = fit([round(float(1 / v) if recip else float(v)) for v in values])
    if e is None:
        raise NotGeneral(f"constants {values[:3]} are not a polynomial of the sizes")
    with ir.InsertionPoint(op), op.location:
        v = em.expr(e)
        x = ir.Operation.create(
            "stablehlo.convert", results=[ir.Type.parse(scalar_type)], operands=[v]
        ).result
        if recip:
            one = ir.Operation.create(
                "stablehlo.constant",
                results=[ir.Type.parse(scalar_type)],
                attributes={"value": ir.Attribute.parse(f"dense<1.0> : {scalar_type}")},
            ).result
            x = ir.Operation.create("stablehlo.divide", results=[x.type], operands=[one, x]).result
    # (a recomputed value must equal the samples' constant exactly; checked by the caller's
    # refinement at a sample)
    return x


def _solve(em, block, in_avals, offset, constraints, names):
    """The dimension variables from ``@main``'s argument sizes, with JAX's shape assertions."""
    args = list(block.arguments)
    sizes: dict = {}
    for i, a in enumerate(in_avals):
        for k, d in enumerate(a.shape):
            if isinstance(d, DimExpr):
                s = em.op(
                    "stablehlo.get_dimension_size",
                    [args[offset + i]],
                    "tensor<i32>",
                    {"dimension": f"{k} : i64"},
                )
                sizes[(i, k)] = em.op("stablehlo.convert", [s])
    asserts = solve_dims(em, sizes, in_avals, constraints, names)
    for kind, lhs, rhs, pieces in asserts:
        direction = {"eq": "EQ", "ge": "GE", "le": "LE"}[kind]
        ok = em.op("stablehlo.compare", [lhs, rhs], "tensor<i1>",
                   {"comparison_direction": f"#stablehlo<comparison_direction {direction}>"})  # fmt: skip
        inputs, message = [], ""
        for p in pieces:
            if isinstance(p, str):
                message += p.replace("{", "{{").replace("}", "}}")
            else:
                message += "{" + str(len(inputs)) + "}"
                inputs.append(p)
        with em.ip, em.loc:
            ir.Operation.create(
                "stablehlo.custom_call",
                results=[],
                operands=[ok, *inputs],
                attributes={
                    "call_target_name": ir.StringAttr.get("shape_assertion"),
                    "has_side_effect": ir.BoolAttr.get(True),
                    "api_version": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 2),
                    "error_message": ir.StringAttr.get(message),
                },
            )


class Ints:
    """``solve_dims``'s arithmetic on Python ints (a call's checks, as JAX's at tracing)."""

    _OPS = {"add": int.__add__, "subtract": int.__sub__, "multiply": int.__mul__,
            "divide": int.__floordiv__, "remainder": int.__mod__}  # fmt: skip

    def __init__(self):
        self.vars: dict = {}

    def const(self, k):
        return int(k)

    def binary(self, name, a, b):
        return self._OPS[name](int(a), int(b))

    def expr(self, e):
        return e.evaluate(self.vars) if isinstance(e, DimExpr) else int(e)


class Exprs(Ints):
    """``solve_dims``'s arithmetic on dimension expressions: the checks of a call made while a
    symbolic export traces (its arguments' sizes carry their expressions), decided for every size
    as JAX's ``check_statically``: ``a`` is ``c - 4``, and ``c - 4 >= 1`` is not known."""

    _OPS = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b, "multiply": lambda a, b: a * b,
            "divide": lambda a, b: a // b, "remainder": lambda a, b: a % b}  # fmt: skip

    def binary(self, name, a, b):
        return self._OPS[name](a, b)

    @staticmethod
    def holds(kind, lhs, rhs) -> bool:
        try:
            return bool(lhs == rhs if kind == "eq" else lhs >= rhs if kind == "ge" else lhs <= rhs)
        except InconclusiveDimensionOperation:
            return False


def _size(d, traced: bool):
    e = getattr(d, "expr", None)
    return e if traced and isinstance(e, DimExpr) else int(d)


def check_call(in_avals, shapes, constraints=(), names=None) -> dict:
    """JAX's checks of a call's argument shapes against symbolic ``in_avals`` (its
    ``solve_dim_vars`` and ``check_statically``): the dimension variables' values, or the first
    failing check's ``ValueError`` in JAX's words.

    >>> import numpy as np
    >>> from funcgrad.export import symbolic_shape
    >>> (b,) = symbolic_shape("b")
    >>> check_call([ShapedArray((2 * b, 4), np.dtype("float32"))], [(6, 4)])
    {'b': 3}
    >>> try:
    ...     check_call([ShapedArray((2 * b, 4), np.dtype("float32"))], [(5, 4)])
    ... except ValueError as e:
    ...     print(str(e).split(". ")[1])
    Division had remainder 1 when computing the value of 'b'
    """
    # (sizes traced by a symbolic export carry their expressions: the checks hold for all sizes)
    traced = any(isinstance(getattr(s[k], "expr", None), DimExpr) for s in shapes for k in range(len(s)))
    ints = Exprs() if traced else Ints()
    sizes = {(i, k): _size(s[k], traced) for i, (a, s) in enumerate(zip(in_avals, shapes))
             for k, d in enumerate(a.shape) if isinstance(d, DimExpr)}  # fmt: skip
    try:
        asserts = solve_dims(ints, sizes, in_avals, constraints, names)
    except NotGeneral as e:
        raise ValueError(str(e)) from None
    for kind, lhs, rhs, pieces in asserts:
        if not Exprs.holds(kind, lhs, rhs):
            raise ValueError("".join(p if isinstance(p, str) else str(p) for p in pieces))
    return ints.vars


def arg_names(in_tree) -> list[str]:
    """Each flat argument's name in JAX's messages (``args[0]``, ``kwargs['b']``, ``args[1][0]``):
    its key path in ``(args, kwargs)``, as JAX's ``pretty_print_dimension_descriptor``.

    >>> arg_names(tu.tree_structure(((1, (2, 3)), {"b": 4})))
    ['args[0]', 'args[1][0]', 'args[1][1]', "kwargs['b']"]
    """
    out = []
    for path in leaf_key_paths(in_tree):
        s = tu.keystr(path)
        out.append("args" + s[3:] if s.startswith("[0]") else "kwargs" + s[3:] if s.startswith("[1]") else s)
    return out


def solve_dims(em, sizes, in_avals, constraints, names=None) -> list:
    """The dimension variables (into ``em.vars``) from the arguments' symbolic dimensions and
    their ``sizes`` (``{(arg, dim): value}``), solving JAX's linear uni-variate equations, and
    JAX's shape assertions ``(kind, lhs, rhs, message pieces)``. ``em``: the arithmetic (MLIR
    values or ``Ints``)."""
    names = names or [f"args[{i}]" for i in range(len(in_avals))]
    eqs = [(i, k, d) for i, a in enumerate(in_avals) for k, d in enumerate(a.shape) if isinstance(d, DimExpr)]
    specs = ",".join(
        f"{names[i]}.shape = ({', '.join(map(str, a.shape))}{',' if len(a.shape) == 1 else ''})"
        for i, a in enumerate(in_avals)
        if any(isinstance(d, DimExpr) for d in a.shape)
    )
    specs_msg = f" Using the following polymorphic shapes specifications: {specs}."
    # Message pieces (str or value); each assertion reports the solution found before it, as JAX's.
    solution: list = [" Obtained dimension variables: "]
    asserts: list = []
    pending = list(eqs)
    while pending:
        progress = False
        for eq in list(pending):
            i, k, d = eq
            dim_name = f"{names[i]}.shape[{k}]"
            unknown = [m for m in d.terms if not _known(m, em.vars)]
            if len(unknown) == 0:
                pending.remove(eq)
                progress = True
                asserts.append((
                    "eq", sizes[(i, k)], em.expr(d),
                    ["Input shapes do not match the polymorphic shapes specification. "
                     f"Found inconsistency between dimension size {dim_name} (= ", sizes[(i, k)],
                     f") and the specification '{d}' (= ", em.expr(d), ")." + specs_msg, *solution],
                ))  # fmt: skip
                continue
            if len(unknown) != 1 or len(unknown[0]) != 1 or unknown[0][0] in _ATOMS:
                continue
            (var,) = unknown[0]
            coeff = d.terms[unknown[0]]
            rest = em.expr(DimExpr.normalize({m: c for m, c in d.terms.items() if m != unknown[0]}, d.scope))
            value = em.binary("subtract", sizes[(i, k)], rest)
            if coeff != 1:
                rem = em.binary("remainder", value, em.const(coeff))
                asserts.append((
                    "eq", rem, em.const(0),
                    ["Input shapes do not match the polymorphic shapes specification. "
                     "Division had remainder ",
                     rem, f" when computing the value of '{var}'." + specs_msg, *solution],
                ))  # fmt: skip
                value = em.binary("divide", value, em.const(coeff))
            em.vars[var] = value
            solution += [f"'{var}' = ", value, f" from specification '{d}' for dimension {dim_name} (= ",
                         sizes[(i, k)], "), "]  # fmt: skip
            asserts.append((
                "ge", value, em.const(1),
                ["Input shapes do not match the polymorphic shapes specification. "
                 f"Expected value >= 1 for dimension variable '{var}'." + specs_msg, *solution],
            ))  # fmt: skip
            pending.remove(eq)
            progress = True
        if not progress:
            raise NotGeneral("dimension variables that the argument sizes do not give")
    for op, lhs, rhs, text in constraints:
        diff = em.binary("subtract", em.expr(lhs), em.expr(rhs))
        asserts.append((
            "ge" if op == ">=" else "le" if op == "<=" else "eq", diff, em.const(0),
            [f"Input shapes do not match the symbolic shape constraint {text}. "
             f"Expected '{_diff_str(lhs, rhs)}' to be "
             f"{'equal' if op == '==' else 'greater or equal'} to 0, but found ", diff, ". " + specs_msg,
             *solution],
        ))  # fmt: skip
    return [(kind, lhs, rhs, [*pieces, _HELP]) for kind, lhs, rhs, pieces in asserts]


def _known(mono, known) -> bool:
    """Whether every variable of a monomial (inside operations too) is in ``known``."""
    for name in mono:
        if name in _ATOMS:
            args = _ATOMS[name][1]
            if not all(a.variables() <= set(known) for a in args if isinstance(a, DimExpr)):
                return False
        elif name not in known:
            return False
    return True


def _diff_str(lhs, rhs) -> str:
    d = lhs - rhs
    return str(d)
