"""The layout engine behind the jaxpr printer: documents of text, breaks, groups and nesting, laid
out to a width the way JAX's printer lays out its jaxprs.

Layer: kernel. Imports only numpy (``ir`` imports it for ``pp_jaxpr``). The first half lays out
documents; the second builds the document of a jaxpr as JAX's printer does (NOTE: [printed
jaxprs]).

A document is a tree of five kinds of node (plain tuples, tagged by their first item):

- ``text(s, annotation=None)``: the characters ``s``; an annotation (a source line, a name
  stack) is printed after the end of its line, behind ``" # "``, all annotations of a text
  aligned in one column;
- ``brk(s=" ")``: ``s`` where its group is laid out flat, a newline (and the indentation in
  force) where it is broken;
- ``group(d)``: ``d`` flat (every break its text) when ``d`` fits in the rest of the line,
  broken otherwise; groups inside a broken group decide for themselves;
- ``nest(n, d)``: ``d`` with its newlines indented ``n`` more;
- ``concat(docs)``.

This is Wadler's "prettier printer" in Lindig's strict form, as JAX's printer implements it: a
group fits when the group alone (not the rest of its line) fits in what is left of the width,
and the whole document starts broken. Laying the same document structure out with the same rule
is what makes a jaxpr break where JAX's does.

>>> d = group(nest(2, concat([text("["), brk(""), join(brk(), [text("a=1"), text("b=2")])])))
>>> layout(concat([d, text("]")]))
'[a=1 b=2]'
>>> print(layout(concat([d, text("]")]), width=6))
[
  a=1
  b=2]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_TEXT, _BRK, _GROUP, _NEST, _CONCAT = range(5)
NIL = (_CONCAT, ())


def text(s: str, annotation: str | None = None) -> tuple:
    """Literal text (optionally annotated: the annotation is printed at the end of its line)."""
    return (_TEXT, s, annotation)


def brk(s: str = " ") -> tuple:
    """A break: ``s`` in a flat group, a newline in a broken one."""
    return (_BRK, s)


def group(doc) -> tuple:
    """Flat if it fits in the rest of the line, broken otherwise."""
    return (_GROUP, doc)


def nest(n: int, doc) -> tuple:
    """``doc`` with ``n`` more columns of indentation after each of its newlines."""
    return (_NEST, n, doc)


def concat(docs: Sequence) -> tuple:
    """The documents one after the other."""
    return (_CONCAT, tuple(docs))


def join(sep, docs: Sequence) -> tuple:
    """The documents with ``sep`` between each two."""
    out = []
    for i, d in enumerate(docs):
        if i:
            out.append(sep)
        out.append(d)
    return concat(out)


def _fits(doc, room: int) -> bool:
    """Whether ``doc`` laid out flat takes at most ``room`` columns."""
    stack = [doc]
    while stack and room >= 0:
        d = stack.pop()
        kind = d[0]
        if kind == _TEXT or kind == _BRK:
            room -= len(d[1])
        elif kind == _CONCAT:
            stack.extend(reversed(d[1]))
        else:  # group, nest
            stack.append(d[-1])
    return room >= 0


def layout(doc, width: int = 80, annotation_prefix: str = " # ") -> str:
    """The text of ``doc`` laid out to ``width`` columns (see the module docstring)."""
    lines: list[tuple[str, list[str]]] = []
    parts: list[str] = []
    notes: list[str] = []
    col = 0
    # The agenda: (indentation, flat?, document), the next one last.
    agenda = [(0, False, doc)]
    while agenda:
        indent, flat, d = agenda.pop()
        kind = d[0]
        if kind == _TEXT:
            parts.append(d[1])
            col += len(d[1])
            if d[2] is not None:
                notes.append(d[2])
        elif kind == _CONCAT:
            agenda.extend((indent, flat, c) for c in reversed(d[1]))
        elif kind == _BRK:
            if flat:
                parts.append(d[1])
                col += len(d[1])
            else:
                lines.append(("".join(parts), notes))
                parts, notes, col = [" " * indent], [], indent
        elif kind == _GROUP:
            agenda.append((indent, flat or _fits(d[1], width - col), d[1]))
        else:  # nest
            agenda.append((indent + d[1], flat, d[2]))
    lines.append(("".join(parts), notes))
    if not any(n for _, n in lines):
        return "\n".join(line for line, _ in lines)
    # Annotations line up one column past the longest line (as JAX prints them).
    column = max(len(line) for line, _ in lines)
    out = []
    for line, line_notes in lines:
        for j, note in enumerate(line_notes):
            line += (
                ("\n" if j else "") + " " * (column - (len(line) if j == 0 else 0)) + annotation_prefix + note
            )
        out.append(line)
    return "\n".join(out)


# ----------------------------------------------------------------------------------------------
# Jaxprs as documents (the structure of JAX's, so that they break where JAX's break)
#
# NOTE: [printed jaxprs]
# ``str(jaxpr)`` is meant to read exactly as JAX 0.10 prints the same program: the same layout
# (the documents below have the shape of JAX's), the same names (``a``, ``b``, ... continuing into
# inner jaxprs; an output no later equation or the result reads is ``_``; a ``jit``'s inner jaxpr
# takes the names of the call's arguments and results) and the same parameters: ``PRINTED_PARAMS``
# maps a primitive's name to what JAX prints for it where funcgrad's equation carries other
# parameters (JAX's printing rules hide the trivial ones; JAX carries some funcgrad has no use for,
# such as a reduction's ``out_sharding=None``). The equations themselves are funcgrad's: a program
# that funcgrad stages differently from JAX prints differently.

# The printer reads the IR by its fields (a jaxpr's constvars/invars/eqns/outvars, a closed
# jaxpr's ``jaxpr``, a literal's ``val``), so that ``ir`` can import this module for ``pp_jaxpr``.


def _jaxpr_of(value):
    """The jaxpr ``value`` is (or closes), else None."""
    j = getattr(value, "jaxpr", value)
    return j if hasattr(j, "eqns") and hasattr(j, "constvars") else None


def _is_var(a) -> bool:
    return not hasattr(a, "val")


def _inner_jaxprs(params) -> list:
    out = []
    for v in params.values():
        for item in v if isinstance(v, tuple | list) else (v,):
            j = _jaxpr_of(item)
            if j is not None:
                out.append(j)
    return out


class _Names:
    """Names in order of first appearance (``a`` ... ``z``, ``ba``, ...), as JAX's printer."""

    def __init__(self, preset=None):
        self.names: dict = dict(preset or {})
        self.count = 0
        self.taken: set[str] = set()  # the names of hoisted (shared) jaxprs

    def __call__(self, v) -> str:
        name = self.names.get(v)
        if name is None:
            name = _nth_name(self.count)
            self.count += 1
            while name in self.taken:
                name = _nth_name(self.count)
                self.count += 1
            self.names[v] = name
        return name

    def suggest(self, for_vars, like_vars) -> None:
        """Name ``for_vars`` like ``like_vars`` (an inner jaxpr's binders like the call's)."""
        if len(for_vars) != len(like_vars):
            return
        used = set()
        for f, like in zip(for_vars, like_vars):
            if _is_var(like) and like not in used and _is_var(f) and f not in self.names:
                used.add(like)
                self.names[f] = self(like)


def _nth_name(n: int) -> str:
    s = ""
    while True:
        s = chr(97 + n % 26) + s
        n //= 26
        if n == 0:
            return s  # after 'z' comes 'ba' (not 'aa'), as in JAX


def literal_str(val) -> str:
    """A literal as JAX prints it: the scalar's Python ``str`` (``1.0``, ``(1+0j)``, ``True``)."""
    return str(np.asarray(val).item()) if not np.shape(val) else "[...]"


def _var(names, a) -> tuple:
    if not _is_var(a):
        return text(f"{literal_str(a.val)}:{a.aval.str_short()}")
    return text(names(a))


def _vars(names, vs, sep: str = "", shapes: bool = False) -> tuple:
    items = [
        concat([text(names(v)), text(":" + v.aval.str_short())]) if shapes else _var(names, v) for v in vs
    ]
    return nest(2, group(join(concat([text(sep), group(brk())]), items)))


def _param_doc(value, ctx) -> tuple:
    jaxpr = _jaxpr_of(value)
    if jaxpr is not None:
        return _jaxpr_doc(jaxpr, ctx)
    if type(value) is tuple and value and all(_jaxpr_of(v) is not None for v in value):
        inner = [_param_doc(v, ctx) for v in value]
        return group(concat([nest(2, concat([text("("), brk(""), join(brk(), inner)])), brk(""), text(")")]))
    if isinstance(value, frozenset):
        return text(f"frozenset({{{', '.join(repr(e) for e in sorted(value))}}})")
    if isinstance(value, np.dtype):
        return text(value.name)
    if isinstance(value, type) and issubclass(value, np.generic):
        return text(np.dtype(value).name)
    if callable(value) and hasattr(value, "__name__") and not isinstance(value, type):
        return text(value.__name__)
    return text(str(value))


def _params_doc(pairs, ctx) -> tuple:
    if not pairs:
        return NIL
    kvs = [concat([text(f"{k}="), _param_doc(v, ctx)]) for k, v in pairs]
    return group(concat([nest(2, concat([text("["), brk(""), join(brk(), kvs)])), brk(""), text("]")]))


def _eqn_doc(eqn, ctx) -> tuple:
    names, settings = ctx[0], ctx[1]
    rule = PRINTED_PARAMS.get(eqn.primitive.name)
    pairs = rule(eqn, names) if rule is not None else sorted(eqn.params.items())
    info = eqn.source_info
    src = None
    if settings[0]:
        src = "" if info is None else str(info._replace(name_stack=""))
    scope = f"[{'' if info is None else info.name_stack}]" if settings[1] else None
    # (In JAX's order: the results are named before the inner jaxprs' variables.)
    lhs = _vars(names, eqn.outvars, shapes=True) if eqn.outvars else None
    named = PRINTED_NAMES.get(eqn.primitive.name)
    rhs = [text(named(eqn) if named is not None else eqn.primitive.name, scope), _params_doc(pairs, ctx)]
    rhs.append(concat([text(" "), _vars(names, eqn.invars)]))
    return concat(rhs) if lhs is None else concat([lhs, text(" = ", src), *rhs])


def _jaxpr_doc(jaxpr, ctx, hoisted: bool = False) -> tuple:
    names = ctx[0]
    shared = None if hoisted else ctx[2].get(jaxpr)
    if shared is not None:
        return text(shared)
    # Binders first, then the body, then the results: names are given in reading order.
    consts = _vars(names, jaxpr.constvars, shapes=True)
    ins = _vars(names, jaxpr.invars, shapes=True)
    eqns = join(brk("; "), [_eqn_doc(e, ctx) for e in jaxpr.eqns])
    n = len(jaxpr.outvars)
    outs = concat([text("("), _vars(names, jaxpr.outvars, sep=","), text(")" if n != 1 else ",)")])
    body = [text("{ "), text("lambda "), consts, text("; "), ins, text(". "), text("let")]
    body += [nest(2, concat([brk(), eqns])), brk(), text("in "), outs]
    return group(concat([nest(2, concat(body)), text(" }")]))


def _dropped(jaxpr) -> dict:
    """The top-level equations' outputs nothing reads, named ``_`` (as JAX prints them)."""
    used = {a for a in jaxpr.outvars if _is_var(a)}
    out = {}
    for eqn in reversed(jaxpr.eqns):
        for v in eqn.outvars:
            if v not in used:
                out[v] = "_"
        used.update(a for a in eqn.invars if _is_var(a))
    return out


def _shared(top) -> dict:
    """JAX hoists an inner jaxpr used more than once, or of more than 10 equations, in front of
    the program as ``let name = { ... } in``: which ones, and their names (a ``name`` parameter's
    value, else ``jaxpr``; repeated names numbered)."""
    counts: dict = {}
    named: dict = {}
    order = []
    queue = [top]
    while queue:
        jaxpr = queue.pop(0)
        if jaxpr not in counts:
            order.append(jaxpr)
        counts[jaxpr] = counts.get(jaxpr, 0) + (2 if jaxpr is not top and len(jaxpr.eqns) > 10 else 1)
        for eqn in jaxpr.eqns:
            name = eqn.params.get("name")
            inner = _inner_jaxprs(eqn.params)
            queue.extend(inner)
            if isinstance(name, str):
                for j in inner:
                    named.setdefault(j, name.strip("<>"))
    out, used = {}, {}
    for jaxpr in order:
        if counts[jaxpr] == 1:
            continue
        name = named.get(jaxpr, "jaxpr")
        if used.get(name, 0):
            used[name] += 1
            name += str(used[name] - 1)
        used[name] = used.get(name, 0) + 1
        out[jaxpr] = name
    return out


def pp_jaxpr_text(jaxpr, *, source_info: bool = False, name_stack: bool = False, width: int = 80) -> str:
    """The text of ``jaxpr`` as JAX prints it (NOTE: [printed jaxprs]); ``ir.pp_jaxpr``."""
    names = _Names(_dropped(jaxpr))
    shared = _shared(jaxpr)
    names.taken.update(shared.values())
    ctx = (names, (source_info, name_stack), shared)
    docs = []
    for j, name in shared.items():
        docs.append(concat([text(f"let {name} = "), _jaxpr_doc(j, ctx, hoisted=True), text(" in"), brk()]))
    docs.append(_jaxpr_doc(jaxpr, ctx))
    return layout(concat(docs), width)


# ----------------------------------------------------------------------------------------------
# What JAX prints of an equation's parameters, where it differs from funcgrad's parameters


def _shown(eqn, *, extra=None, hide=(), hide_if=None, first=None):
    """The (name, value) pairs to print, sorted by name (``first`` in front, as JAX's rules put a
    name): funcgrad's parameters, with JAX's ``extra`` ones where funcgrad has none, less those
    in ``hide`` and those whose value ``hide_if(name, value)`` calls trivial."""
    params = {**(extra or {}), **eqn.params}
    for k in hide:
        params.pop(k, None)
    if hide_if is not None:
        params = {k: v for k, v in params.items() if not hide_if(k, v)}
    head = [(first, params.pop(first))] if first in params else []
    return head + sorted(params.items())


def _dot_general(eqn, names):
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    # (as JAX's: out_sharding, unreduced axes included, is implied by the binder's type)
    pairs = _shown(eqn, hide=("out_sharding", "out_unreduced"), hide_if=lambda k, v: v is None)
    dims = ((list(lc), list(rc)), (list(lb), list(rb)))
    return [(k, dims if k == "dimension_numbers" else v) for k, v in pairs]


def _any_given(values) -> bool:
    return any(v is not None for v in values) if isinstance(values, (tuple, list)) else bool(values)


def _jit(eqn, names):
    inner = _jaxpr_of(eqn.params["jaxpr"])
    names.suggest(inner.invars, eqn.invars)
    names.suggest(inner.outvars, eqn.outvars)
    return _shown(
        eqn,
        hide=("inline", "keep_unused"),
        # as JAX's pjit printer: shardings only when some are given, the device when one is
        hide_if=lambda k, v: (
            (k == "donated_invars" and not any(v))
            or (k in ("in_shardings", "out_shardings") and not _any_given(v))
            or (k == "device" and v is None)
        ),
        first="name",
    )


def _custom_call(eqn, names):
    # JAX prints the function's name first, no num_consts when zero, symbolic_zeros=False.
    return _shown(
        eqn, extra={"symbolic_zeros": False}, hide_if=lambda k, v: k == "num_consts" and not v, first="name"
    )


def _accuracy(eqn, names):
    return _shown(eqn, hide_if=lambda k, v: k == "accuracy" and v is None)


_UNARY_WITH_ACCURACY = "exp exp2 log expm1 log1p tanh logistic sin cos tan sqrt rsqrt cbrt".split()

PRINTED_PARAMS = {
    "broadcast_in_dim": lambda eqn, names: _shown(
        eqn, hide=("shape", "sharding"), hide_if=lambda k, v: k == "broadcast_dimensions" and not v
    ),
    "convert_element_type": lambda eqn, names: _shown(eqn, hide=("sharding",)),
    "mul": lambda eqn, names: _shown(eqn, hide_if=lambda k, v: k == "out_dtype" and v is None),
    "dot_general": _dot_general,
    "reduce_sum": lambda eqn, names: _shown(eqn, extra={"out_sharding": None}),
    "reshape": lambda eqn, names: _shown(eqn, extra={"dimensions": None, "sharding": None}),
    "iota": lambda eqn, names: _shown(eqn, extra={"sharding": None}),
    "conv_general_dilated": lambda eqn, names: _shown(eqn, extra={"out_sharding": None}),
    "scatter": lambda eqn, names: _shown(eqn, extra={"update_consts": (), "update_jaxpr": None}),
    "conj": lambda eqn, names: _shown(eqn, extra={"input_dtype": eqn.invars[0].aval.dtype}),
    "jit": _jit,
    # (funcgrad's recomputation always runs behind a barrier: prevent_cse=True, NOTE: [remat barrier])
    "remat2": lambda eqn, names: _shown(eqn, extra={"prevent_cse": True}),
    "custom_jvp_call": _custom_call,
    "custom_vjp_call": _custom_call,
    **dict.fromkeys(_UNARY_WITH_ACCURACY, _accuracy),
    # (a cast to varying is JAX's pvary primitive, its axes named ``axes``)
    "pcast": lambda eqn, names: (
        [("axes", eqn.params["axis_name"])] if eqn.params.get("to") == "varying" else _shown(eqn)
    ),
}
# The name JAX prints for a funcgrad primitive that stands for several of JAX's.
PRINTED_NAMES = {"pcast": lambda eqn: "pvary" if eqn.params.get("to") == "varying" else "pcast"}
