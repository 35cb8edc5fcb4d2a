"""See inside reverse mode: which residuals a ``vjp`` keeps (``memory_report``) and the forward and
backward programs as a picture (``graph``).

Layer: surface. Imports the kernel (core, ad, ir, partial_eval, tree_util), the catalog's
``reduce_precision`` primitive (a checkpoint's rounding of a saved value) and the argument
handling shared with ``funcgrad.api`` (``funcgrad._api_util``); ``graphviz`` is an optional
dependency, imported only when a picture is rendered.

Both tools trace ``vjp(f, *args)`` abstractly — nothing is computed, so they are cheap even for a
large model — by running ``linearize`` *inside* a staging trace whose outputs are the primal
outputs followed by the residuals (see NOTE: [residuals are constvars]). The staged forward
program therefore says, for each residual, which equation produced it and on which line of the
user's code; transposing the linear program (under a second staging trace) gives the backward
program, whose equations inherit the source lines of the forward equations they differentiate
(NOTE: [source info of re-interpreted equations]).

# NOTE: [scalar residuals are literals]
# When ``vjp`` runs eagerly, a 0-d Array read by the linear program is a residual, as JAX's (NOTE:
# [vjp residuals]); only Python and NumPy scalars are inlined into it as literals, and those are
# literals under staging too. So every residual of the staged trace is one ``vjp(...)[1].residuals``
# keeps, and ``memory_report``'s total is exactly their bytes; its ``scalars`` list stays empty
# (kept for callers that read it).
"""

from __future__ import annotations

import html
import math
import os
import shutil
import subprocess
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from funcgrad._api_util import arg_paths, canonicalize, check_array_leaves
from funcgrad.kernel import ad, core, ir
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.core import source_info_config
from funcgrad.kernel.ir import (
    ClosedJaxpr,
    Literal,
    Var,
    typecheck_jaxpr,  # noqa: F401 - funcgrad.typecheck_jaxpr
)
from funcgrad.kernel.partial_eval import trace_to_jaxpr
from funcgrad.primitives.bitcast import reduce_precision_p

__all__ = ["memory_report", "print_saved_residuals", "graph", "MemoryReport", "Residual", "Graph"]
# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = ("memory_report", "print_saved_residuals", "graph", "typecheck_jaxpr")

# ----------------------------------------------------------------------------------------------
# Tracing vjp abstractly


class VJPPrograms(NamedTuple):
    """The programs of ``vjp(fun, *args)``, staged without computing anything.

    ``forward`` maps the flat arguments to the primal outputs followed by the residuals;
    ``backward`` maps the residuals followed by one cotangent per output to one cotangent per
    argument.
    """

    forward: ClosedJaxpr
    backward: ClosedJaxpr
    n_out: int
    arg_names: list[str]
    residual_avals: list[ir.ShapedArray]


def trace_vjp(fun: Callable, *args, **kwargs) -> VJPPrograms:
    """Stage the forward (with residuals as outputs) and backward programs of ``vjp(fun, *args)``.

    ``kwargs`` are passed to ``fun`` unchanged (not differentiated).

    >>> import funcgrad.numpy as fnp
    >>> p = trace_vjp(lambda x: fnp.sin(x) * x, fnp.array([1.0, 2.0]))
    >>> [e.primitive.name for e in p.forward.eqns], p.n_out
    (['sin', 'cos', 'mul'], 1)
    """
    return _trace_vjp(fun, args, kwargs, literal_scalars=False)


def _trace_vjp(fun: Callable, args, kwargs, literal_scalars: bool) -> VJPPrograms:
    """``trace_vjp``; with ``literal_scalars``, an argument given as a Python scalar is a literal
    of the backward program, as ``vjp`` at that value makes it (NOTE: [vjp residuals]), where
    JAX's ``saved_residuals`` (``print_saved_residuals``) lists it as a residual."""
    flat, in_tree = tu.tree_flatten(args)
    names = arg_paths(args)
    check_array_leaves("trace_vjp", flat, names)
    # A Python scalar argument: a weak 0-d Array, exactly as vjp makes it (and, literal_scalars,
    # a literal of the backward pass, as vjp at that value makes it).
    scalars = [x if literal_scalars and type(x) in _dt.python_scalar_types else None for x in flat]
    flat = canonicalize(flat)
    in_avals = [core.get_aval(x) for x in flat]
    box: dict[str, Any] = {}

    def flat_fun(*leaves):
        out = fun(*tu.tree_unflatten(in_tree, leaves), **kwargs)
        out_leaves, box["out_tree"] = tu.tree_flatten(out)
        return out_leaves

    def forward(*xs):
        outs, lin = ad.linearize_flat(flat_fun, xs)
        if any(v is not None for v in scalars):
            lin = ad.literal_primals(lin, xs, scalars)
        box["lin"] = lin
        box["n_out"] = len(outs)
        return [*outs, *lin.residuals]

    prev = source_info_config.in_linearize
    source_info_config.in_linearize = True
    try:
        fwd = trace_to_jaxpr(forward, in_avals, names, "memory_report")
        lin, n_out = box["lin"], box["n_out"]
        res_avals = [core.get_aval(r) for r in lin.residuals]
        linear_jaxpr = lin.closed.jaxpr

        def backward(*xs):
            res, cts = xs[: len(res_avals)], xs[len(res_avals) :]
            staged = ad.LinearFunction(
                ClosedJaxpr(linear_jaxpr, list(res)), lin.in_avals, lin.out_avals, lin.out_zeros
            )
            return [ad.instantiate(ct) for ct in staged.transpose(list(cts))]

        # The backward program of a checkpoint is one call (``differentiated``, NOTE: [remat
        # barrier]); the picture steps into it, so its recomputed forward work shows equation by
        # equation.
        bwd = _inline_differentiated_calls(
            trace_to_jaxpr(backward, [*res_avals, *lin.out_avals], description="backward pass")
        )
    finally:
        source_info_config.in_linearize = prev
    return VJPPrograms(fwd, bwd, n_out, names, res_avals)


def _inline_differentiated_calls(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``closed`` with each call marked ``differentiated`` replaced by the equations it calls."""

    def bind(prim, args, params):
        if prim.traits.call_jaxpr_param is not None and params.get("differentiated"):
            inner = params[prim.traits.call_jaxpr_param]
            return core.eval_jaxpr(inner.jaxpr, inner.consts, *args, bind=bind)
        return prim.bind(*args, **params)

    def inline(*args):
        return core.eval_jaxpr(closed.jaxpr, closed.consts, *args, bind=bind)

    if not any(e.params.get("differentiated") for e in closed.eqns):
        return closed
    return trace_to_jaxpr(inline, closed.in_avals, description="backward pass")


# ----------------------------------------------------------------------------------------------
# Where a value came from


class Origin(NamedTuple):
    kind: str  # "argument", "constant" or "computed"
    description: str  # "argument args[0]", "constant", "tanh", "sin (in jit(f))"
    primitive: str | None
    source_info: ir.SourceInfo | None


def _origin(jaxpr: ir.Jaxpr, var, arg_names, via: tuple[str, ...] = ()) -> Origin:
    """The equation (or argument, or constant) that produced ``var``; looks inside call primitives
    (jit, checkpoint) and loops (scan), whose outputs an equation of their inner jaxpr produces."""
    suffix = f" (in {' in '.join(reversed(via))})" if via else ""
    if type(var) is Literal:
        return Origin("constant", "literal" + suffix, None, None)
    if var in jaxpr.invars:
        i = jaxpr.invars.index(var)
        name = arg_names[i] if arg_names is not None and i < len(arg_names) else f"input {i}"
        return Origin("argument", f"argument {name}", None, None)
    if var in jaxpr.constvars:
        return Origin("constant", "constant" + suffix, None, None)
    for eqn in jaxpr.eqns:
        if var not in eqn.outvars:
            continue
        if eqn.primitive is reduce_precision_p and eqn.params.get("mantissa_bits") == _mantissa(var):
            # a checkpoint's rounding of a saved value to its own precision: its producer is before
            return _origin(jaxpr, eqn.invars[0], arg_names, via)
        here = Origin("computed", eqn.primitive.name + suffix, eqn.primitive.name, eqn.source_info)
        # A call primitive's outputs are its inner jaxpr's outputs on its inputs. (A loop's outputs
        # are stacked per-iteration values instead: inside one only a computing equation is followed.)
        is_call = eqn.primitive.traits.call_jaxpr_param is not None
        inner = eqn.params.get(eqn.primitive.traits.call_jaxpr_param or "jaxpr")
        if not isinstance(inner, ClosedJaxpr) or len(inner.jaxpr.outvars) != len(eqn.outvars):
            return here
        sub = inner.jaxpr.outvars[eqn.outvars.index(var)]
        call = eqn.params.get("name", eqn.primitive.name)
        call = call if call == eqn.primitive.name else f"{eqn.primitive.name}({call})"
        o = _origin(inner.jaxpr, sub, None, (*via, call))
        if o.kind == "computed":
            return o if o.source_info is not None else o._replace(source_info=eqn.source_info)
        if not is_call:
            return here  # a loop's stacked carries or inputs
        if o.kind == "argument" and len(eqn.invars) == len(inner.jaxpr.invars):
            # An input of the call passed straight through: look where it came from.
            return _origin(jaxpr, eqn.invars[inner.jaxpr.invars.index(sub)], arg_names, via)
        return o
    return Origin("constant", "unknown" + suffix, None, None)


def _mantissa(var):
    dtype = var.aval.dtype
    return np.finfo(dtype).nmant if np.issubdtype(dtype, np.floating) else None


# ----------------------------------------------------------------------------------------------
# memory_report


class Residual(NamedTuple):
    """One value the backward pass keeps."""

    index: int
    shape: tuple[int, ...]
    dtype: np.dtype
    nbytes: int
    kind: str  # "argument", "constant" or "computed"
    origin: str  # what produced it, for people
    primitive: str | None
    source_info: ir.SourceInfo | None
    literal: bool  # inlined as a literal when vjp runs eagerly: never now (NOTE: [scalar residuals ...])


def format_bytes(n: int) -> str:
    """``1536`` -> ``'1.5 KiB'``.

    >>> format_bytes(1536), format_bytes(12)
    ('1.5 KiB', '12 B')
    """
    if n < 1024:
        return f"{n} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}"
    raise AssertionError


def _short_source(info: ir.SourceInfo | None) -> str:
    if info is None:
        return ""
    return f"{os.path.basename(info.file)}:{info.line} ({info.function})"


class MemoryReport:
    """The residuals ``vjp(fun, *args)`` keeps for the backward pass, one row each.

    ``rows`` are the stored residuals (``Residual``), ``scalars`` the 0-d ones inlined as literals,
    ``total_bytes`` the sum of ``rows``' bytes — exactly the bytes of ``vjp(...)[1].residuals``.
    ``str()`` is a table; in Jupyter it renders as an HTML table.
    """

    def __init__(self, name: str, rows: list[Residual], scalars: list[Residual], programs: VJPPrograms):
        self.name = name
        self.rows = rows
        self.scalars = scalars
        self.programs = programs

    @property
    def total_bytes(self) -> int:
        return sum(r.nbytes for r in self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def by_source(self) -> list[tuple[str, int, int]]:
        """``(source line, number of residuals, bytes)`` per line of user code, largest first."""
        groups: dict[str, list[int]] = {}
        for r in self.rows:
            key = str(r.source_info) if r.source_info else r.origin
            g = groups.setdefault(key, [0, 0])
            g[0] += 1
            g[1] += r.nbytes
        return sorted(((k, n, b) for k, (n, b) in groups.items()), key=lambda t: -t[2])

    def _table(self) -> list[list[str]]:
        rows = sorted(self.rows, key=lambda r: (-r.nbytes, r.index))
        return [
            [
                str(r.index),
                str(r.shape),
                r.dtype.name,
                format_bytes(r.nbytes),
                r.origin,
                _short_source(r.source_info),
            ]
            for r in rows
        ]

    _HEADER = ["#", "shape", "dtype", "bytes", "produced by", "source"]

    def table(self, max_rows: int | None = None) -> str:
        """The report as text, largest residuals first; ``max_rows`` cuts the listing short (the
        rest is summarised, with the bytes per source line)."""
        head = (
            f"Residuals kept for the backward pass of {self.name}: {len(self.rows)} array"
            f"{'' if len(self.rows) == 1 else 's'}, {format_bytes(self.total_bytes)} "
            f"({self.total_bytes:,} bytes)"
        )
        body = self._table()
        shown = body if max_rows is None else body[:max_rows]
        table = [self._HEADER, *shown]
        widths = [max(len(row[i]) for row in table) for i in range(len(self._HEADER))]
        lines = [head]
        for row in table:
            lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if len(shown) < len(body):
            lines.append(f"  ... {len(body) - len(shown)} more (report.table() lists all); bytes per line:")
            for where, n, nbytes in self.by_source()[:10]:
                lines.append(f"    {format_bytes(nbytes):>10}  {n:>4} residuals  {where}")
        if self.scalars:
            lines.append(
                f"  + {len(self.scalars)} scalar value{'s' if len(self.scalars) > 1 else ''} inlined into "
                "the backward program as literals (not stored residuals)"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table(max_rows=40)

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))

    def _repr_html_(self) -> str:
        esc = html.escape
        cells = "".join(f"<th>{esc(h)}</th>" for h in self._HEADER)
        body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in self._table())
        note = f"<p>+ {len(self.scalars)} scalar literal(s)</p>" if self.scalars else ""
        return (
            f"<p><b>Residuals kept for the backward pass of {esc(self.name)}</b>: {len(self.rows)} "
            f"arrays, {esc(format_bytes(self.total_bytes))} ({self.total_bytes:,} bytes)</p>"
            f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>{note}"
        )


def _residual_rows(programs: VJPPrograms) -> list[Residual]:
    fj = programs.forward.jaxpr
    rows = []
    for i, (var, aval) in enumerate(zip(fj.outvars[programs.n_out :], programs.residual_avals)):
        o = _origin(fj, var, programs.arg_names)
        nbytes = int(aval.size) * aval.dtype.itemsize
        rows.append(
            Residual(
                i,
                aval.shape,
                aval.dtype,
                nbytes,
                o.kind,
                o.description,
                o.primitive,
                o.source_info,
                False,  # (NOTE: [scalar residuals are literals])
            )
        )
    return rows


def memory_report(fun: Callable, *args, **kwargs) -> MemoryReport:
    """What ``vjp(fun, *args)`` keeps for the backward pass: one row per residual with its shape,
    dtype, bytes, the primitive that produced it (or ``argument args[i]`` / ``constant``) and the
    line of your code, and the total. Nothing is computed: the forward pass is traced abstractly.

    With ``checkpoint``/``remat`` the report shrinks: checkpointed functions keep only their inputs
    (and what their policy saves) and recompute the rest during the backward pass.

    >>> import funcgrad.numpy as fnp
    >>> r = memory_report(lambda x: fnp.sin(x).sum(), fnp.ones(1000))
    >>> len(r), r.total_bytes
    (1, 8000)
    >>> r.rows[0].origin
    'cos'
    """
    programs = _trace_vjp(fun, args, kwargs, literal_scalars=True)  # (the bytes vjp keeps)
    rows = _residual_rows(programs)
    name = getattr(fun, "__name__", type(fun).__name__)
    return MemoryReport(name, [r for r in rows if not r.literal], [r for r in rows if r.literal], programs)


def print_saved_residuals(fun: Callable, *args, **kwargs) -> None:
    """Print ``memory_report(fun, *args)`` (the name of JAX's ``print_saved_residuals``).

    >>> import funcgrad.numpy as fnp
    >>> print_saved_residuals(lambda x: fnp.exp(x).sum(), fnp.ones(3))  # doctest: +ELLIPSIS
    Residuals kept for the backward pass of <lambda>: 1 array, 24 B (24 bytes)
      #  shape  dtype    bytes  produced by  source
      0  (3,)   float64  24 B   exp          <doctest ...>:1 (<lambda>)
    """
    print(memory_report(fun, *args, **kwargs))


# ----------------------------------------------------------------------------------------------
# graph


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _literal_label(a: Literal) -> str:
    v = np.asarray(a.val)
    return str(v.item()) if v.size == 1 else str(v)


class _DotWriter:
    """Lays out one jaxpr as nodes (equations) and edges (values) inside a cluster."""

    def __init__(self, prefix: str, lines: list[str]):
        self.prefix = prefix
        self.lines = lines
        self.producer: dict[Var, str] = {}
        self.count = 0

    def node(self, label: str, **attrs) -> str:
        nid = f"{self.prefix}{self.count}"
        self.count += 1
        extra = "".join(f", {k}={_q(str(v))}" for k, v in attrs.items())
        self.lines.append(f"    {nid} [label={_q(label)}{extra}];")
        return nid

    def equations(self, jaxpr: ir.Jaxpr, linear_inputs=None) -> list[tuple[Any, str]]:
        """Nodes for the equations; returns the (input atom, consumer node) pairs to connect.

        With ``linear_inputs`` (the cotangent inputs of a backward program), equations that do not
        depend on them are forward work redone during the backward pass (checkpointing): they are
        drawn in the forward colour and listed in ``recomputed``.
        """
        uses = []
        # Which equations read the cotangents (directly or not). A barrier passes each value
        # through: its output i depends on the cotangents only if input i does (checkpoint fences
        # its recomputation inputs together with the cotangents, NOTE: [remat barrier]).
        reads = ir.forward_dependents(jaxpr, linear_inputs or ())[1]
        self.recomputed: list[str] = []
        for eqn, reads_linear in zip(jaxpr.eqns, reads):
            lits = [_literal_label(a) for a in eqn.invars if type(a) is Literal]
            label = eqn.primitive.name + (f"\n({', '.join(lits)})" if lits else "")
            tip = str(eqn.source_info) if eqn.source_info else eqn.primitive.name
            attrs = {}
            if linear_inputs is not None and not reads_linear and not eqn.primitive.traits.forwards_operands:
                attrs = {"fillcolor": _FWD_COLOR}
                tip = f"recomputed forward work: {tip}"
            nid = self.node(label, tooltip=tip, **attrs)
            if attrs:
                self.recomputed.append(nid)
            for v in eqn.outvars:
                self.producer[v] = nid
            uses.extend((a, nid) for a in eqn.invars if type(a) is Var)
        return uses


class Graph:
    """The forward and backward programs of ``vjp(fun, *args)`` as a Graphviz picture.

    ``source`` (alias ``dot``) is the DOT text; ``render``/``pipe`` draw it (needs the ``graphviz``
    Python package or the ``dot`` program); in Jupyter it shows inline. ``residual_edges`` lists
    ``(residual index, forward node, backward node, bytes)`` for the highlighted edges, and
    ``recomputed`` the backward nodes that redo forward work (checkpointing), drawn in blue.
    """

    def __init__(
        self,
        source: str,
        programs: VJPPrograms,
        residuals: list[Residual],
        residual_edges,
        backward,
        recomputed=(),
    ):
        self.recomputed = list(recomputed)
        self.source = source
        self.programs = programs
        self.residuals = residuals
        self.residual_edges = residual_edges
        self.has_backward = backward

    @property
    def dot(self) -> str:
        return self.source

    @property
    def forward(self) -> ClosedJaxpr:
        return self.programs.forward

    @property
    def backward(self) -> ClosedJaxpr:
        return self.programs.backward

    def pipe(self, format: str = "svg") -> bytes:
        """The rendered picture as bytes (``format``: svg, png, pdf, ...)."""
        try:
            import graphviz  # optional dependency
        except ImportError:
            graphviz = None
        if graphviz is not None and shutil.which("dot"):
            return graphviz.Source(self.source).pipe(format=format, quiet=True)
        if shutil.which("dot"):
            return subprocess.run(
                ["dot", f"-T{format}"], input=self.source.encode(), capture_output=True, check=True
            ).stdout
        raise RuntimeError(f"Rendering needs Graphviz's `dot` program. {RENDER_HINT}")

    def render(self, filename: str = "funcgrad_graph", format: str = "svg") -> str:
        """Write the picture to ``filename.format`` and return its path."""
        path = filename if filename.endswith(f".{format}") else f"{filename}.{format}"
        with open(path, "wb") as f:
            f.write(self.pipe(format))
        return path

    def _repr_svg_(self):
        if not shutil.which("dot"):
            return None  # Jupyter falls back to _repr_html_
        return self.pipe("svg").decode()

    def _repr_html_(self) -> str:
        svg = self._repr_svg_()
        if svg is not None:
            return svg
        return (
            f"<p>{html.escape(self._summary())}</p><p>{html.escape(RENDER_HINT)}</p>"
            f"<pre>{html.escape(self.source)}</pre>"
        )

    def _summary(self) -> str:
        n_res = sum(r.nbytes for r in self.residuals if not r.literal)
        back = f" + {len(self.backward.eqns)} backward" if self.has_backward else ""
        return (
            f"funcgrad graph: {len(self.forward.eqns)} forward{back} equations, {len(self.residuals)} "
            f"residuals ({format_bytes(n_res)})"
        )

    def __repr__(self) -> str:
        if shutil.which("dot"):
            return f"<{self._summary()}; .render('graph') writes an SVG>"
        return f"<{self._summary()}; .source is the DOT text. {RENDER_HINT}>"

    def __str__(self) -> str:
        return self.source


RENDER_HINT = (
    "To draw it: `pip install graphviz` and `apt-get install graphviz` (or brew install graphviz), "
    "then graph.render('graph') or display it in Jupyter; or paste graph.source into an online "
    "Graphviz viewer."
)

_FWD_COLOR, _BWD_COLOR, _RES_COLOR = "#dbe9f6", "#fde3cf", "#d62728"


def graph(fun: Callable, *args, backward: bool = True, **kwargs) -> Graph:
    """The forward and (with ``backward=True``) backward programs of ``vjp(fun, *args)`` as a
    Graphviz graph: nodes are primitives, edges are values labelled with their shape/dtype, and the
    residual edges from the forward to the backward program are red, thicker the more bytes they
    carry. Hover a node (SVG) to see its source line.

    >>> import funcgrad.numpy as fnp
    >>> g = graph(lambda x: fnp.sin(x).sum(), fnp.ones(3))
    >>> g.source.startswith("digraph")
    True
    >>> sorted({e.primitive.name for e in g.backward.eqns})
    ['broadcast_in_dim', 'mul']
    """
    programs = _trace_vjp(fun, args, kwargs, literal_scalars=True)  # (vjp's backward program)
    residuals = _residual_rows(programs)
    fj, bj = programs.forward.jaxpr, programs.backward.jaxpr
    name = getattr(fun, "__name__", type(fun).__name__)
    lines = [
        "digraph funcgrad {",
        f"  label={_q(f'vjp of {name}')}; labelloc=t; rankdir=TB; newrank=true;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11, fillcolor="#f7f7f7"];',
        '  edge [fontname="Helvetica", fontsize=9, color="#555555"];',
    ]
    edges: list[str] = []

    def connect(writer: _DotWriter, uses):
        for a, nid in uses:
            src = writer.producer.get(a)
            if src is not None:
                edges.append(f"  {src} -> {nid} [label={_q(a.aval.str_short())}];")

    # Forward program.
    lines.append(f'  subgraph cluster_forward {{ label="forward"; style=filled; color="{_FWD_COLOR}";')
    fw = _DotWriter("f", lines)
    for v, n in zip(fj.invars, programs.arg_names):
        fw.producer[v] = fw.node(f"{n}\n{v.aval.str_short()}", shape="ellipse", fillcolor="white")
    for v in fj.constvars:
        fw.producer[v] = fw.node(f"constant\n{v.aval.str_short()}", shape="ellipse", fillcolor="#eeeeee")
    connect(fw, fw.equations(fj))
    for i, v in enumerate(fj.outvars[: programs.n_out]):
        out = fw.node(f"output {i}\n{v.aval.str_short()}", shape="ellipse", fillcolor="white")
        connect(fw, [(v, out)] if type(v) is Var else [])
    lines.append("  }")

    residual_edges = []
    if backward:
        lines.append(f'  subgraph cluster_backward {{ label="backward"; style=filled; color="{_BWD_COLOR}";')
        bw = _DotWriter("b", lines)
        n_res = len(residuals)
        res_vars = bj.invars[:n_res]
        for i, v in enumerate(bj.invars[n_res:]):
            bw.producer[v] = bw.node(
                f"cotangent of output {i}\n{v.aval.str_short()}", shape="ellipse", fillcolor="white"
            )
        uses = bw.equations(bj, linear_inputs=bj.invars[n_res:])
        out_nodes = []
        for v, n in zip(bj.outvars, programs.arg_names):
            out = bw.node(f"grad {n}\n{v.aval.str_short()}", shape="ellipse", fillcolor="white")
            out_nodes.append((v, out))
        lines.append("  }")
        connect(bw, [u for u in uses + out_nodes if u[0] not in res_vars])
        # Residual edges: from the forward node that produced each residual to its backward users.
        res_index = {v: i for i, v in enumerate(res_vars)}
        biggest = max([r.nbytes for r in residuals] + [1])
        for a, nid in uses + out_nodes:
            i = res_index.get(a) if type(a) is Var else None
            if i is None:
                continue
            r = residuals[i]
            src = fw.producer.get(fj.outvars[programs.n_out + i])
            if src is None:
                continue
            width = 1.5 + 4.5 * math.log1p(r.nbytes) / math.log1p(biggest)
            label = f"{a.aval.str_short()} · {format_bytes(r.nbytes)}"
            edges.append(
                f"  {src} -> {nid} [label={_q(label)}, color={_q(_RES_COLOR)}, fontcolor={_q(_RES_COLOR)}, "
                f'penwidth={width:.2f}, style=bold, constraint=false, class="residual", '
                f"tooltip={_q(f'residual {i}: {r.origin}, {format_bytes(r.nbytes)}')}];"
            )
            residual_edges.append((i, src, nid, r.nbytes))
    lines.extend(edges)
    lines.append("}")
    recomputed = bw.recomputed if backward else []
    return Graph("\n".join(lines) + "\n", programs, residuals, residual_edges, backward, recomputed)
