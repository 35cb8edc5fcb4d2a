"""Source lines through transformations, memory_report and graph (funcgrad/introspect.py)."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import introspect
from funcgrad.api import checkpoint, grad, jit, make_jaxpr, vjp
from funcgrad.kernel.ir import pp_jaxpr

_THIS = open(__file__).read().splitlines()


def line_of(marker: str) -> int:
    """The line number of the line of this file that ends with ``# marker``."""
    (n,) = [i + 1 for i, text in enumerate(_THIS) if text.rstrip().endswith(f"# {marker}")]
    return n


def lines_of(closed) -> set[int]:
    out = set()
    for eqn in closed.jaxpr.eqns:
        assert eqn.source_info is not None, eqn.primitive
        assert eqn.source_info.file == __file__, eqn.source_info
        out.add(eqn.source_info.line)
    return out


def f(x):
    y = fnp.sin(x)  # f:sin
    return (y * x).sum()  # f:mul-sum


def mlp(params, x):
    for w, b in params:
        x = fnp.tanh(x @ w + b)  # mlp:layer
    return (x**2).sum()  # mlp:loss


def make_params(rng, sizes=(8, 16, 4), dtype=np.float32):
    return [
        ((rng.standard_normal((m, n)) / np.sqrt(m)).astype(dtype), rng.standard_normal(n).astype(dtype))
        for m, n in zip(sizes[:-1], sizes[1:])
    ]


def residual_nbytes(fun, *args) -> int:
    return sum(np.asarray(r).nbytes for r in vjp(fun, *args)[1].residuals)


# ----------------------------------------------------------------------------------------------
# Source lines


def test_every_staged_equation_records_the_user_line():
    closed = make_jaxpr(f)(np.ones(3))
    assert lines_of(closed) == {line_of("f:sin"), line_of("f:mul-sum")}
    text = pp_jaxpr(closed.jaxpr, source_info=True)
    # file:line:column, the column where the call starts (0-based), as JAX prints it
    assert f"test_introspect.py:{line_of('f:sin')}:8 (f)" in text


def test_backward_equations_point_at_the_forward_line_they_differentiate():
    # The transposed (backward) equations are staged from inside backward_pass, far from user
    # code on the stack; they inherit the source line of the linear equation they transpose.
    closed = make_jaxpr(grad(f))(np.ones(3))
    assert lines_of(closed) == {line_of("f:sin"), line_of("f:mul-sum")}
    cos = [e for e in closed.jaxpr.eqns if e.primitive.name == "cos"]
    assert cos and cos[0].source_info.line == line_of("f:sin")


def test_source_lines_survive_jit_and_nested_grad():
    for fun, x in ((grad(jit(f)), np.ones(3)), (grad(grad(lambda x: f(x) * 1.0)), 1.0)):
        closed = make_jaxpr(fun)(x)
        seen = set()
        for eqn in closed.jaxpr.eqns:
            stack = [eqn]
            while stack:
                e = stack.pop()
                if e.source_info is not None and e.source_info.file == __file__:
                    seen.add(e.source_info.line)
                for sub in funcgrad.kernel.ir.jaxprs_in_params(e.params):
                    stack.extend(sub.eqns)
        assert line_of("f:sin") in seen, fun


# ----------------------------------------------------------------------------------------------
# memory_report


@pytest.mark.parametrize(
    "name",
    ["mlp", "closure_constant", "jit", "scalars", "pytree_output", "checkpoint", "float32", "int_arg"],
)
def test_report_total_is_exactly_the_bytes_vjp_keeps(name, rng):
    w = rng.standard_normal((4, 4))
    cases = {
        "mlp": (mlp, (make_params(rng), rng.standard_normal((5, 8)).astype(np.float32))),
        "closure_constant": (lambda x: fnp.tanh(x @ w).sum(), (rng.standard_normal((3, 4)),)),
        "jit": (jit(lambda x: fnp.sin(fnp.cos(x)) * x), (rng.standard_normal(5),)),
        "scalars": (lambda x, y: fnp.sin(x) * y, (1.0, 2.0)),
        "pytree_output": (
            lambda d: {"a": fnp.exp(d["x"]), "b": d["x"] * d["y"]},
            ({"x": np.ones(3), "y": np.ones(3)},),
        ),
        "checkpoint": (lambda x: checkpoint(lambda z: fnp.sin(fnp.sin(z)))(x).sum(), (np.ones(7),)),
        "float32": (lambda x: (fnp.log1p(x * x) / (1 + x)).mean(), (np.ones(6, np.float32),)),
        "int_arg": (lambda x, n: (x * n).sum(), (np.ones(3), np.arange(3))),
    }
    fun, args = cases[name]
    report = introspect.memory_report(fun, *args)
    _, f_vjp = vjp(fun, *args)
    assert report.total_bytes == sum(np.asarray(r).nbytes for r in f_vjp.residuals)
    assert len(report.rows) == len(f_vjp.residuals)


def test_report_rows_name_the_producer_and_the_line(rng):
    params, x = make_params(rng), rng.standard_normal((5, 8)).astype(np.float32)
    report = introspect.memory_report(mlp, params, x)
    by_origin = {r.origin for r in report.rows}
    assert {"argument args[0][0][0]", "argument args[1]", "argument args[0][1][0]"} <= by_origin
    computed = [r for r in report.rows if r.kind == "computed"]
    assert computed and all(r.source_info.file == __file__ for r in computed)
    assert {r.source_info.line for r in computed} <= {line_of("mlp:layer"), line_of("mlp:loss")}
    for r in report.rows:
        assert r.nbytes == int(np.prod(r.shape)) * r.dtype.itemsize
    text = str(report)
    assert f"{report.total_bytes:,} bytes" in text and "produced by" in text
    assert f"test_introspect.py:{line_of('mlp:layer')} (mlp)" in text
    html = report._repr_html_()
    assert html.count("<tr>") == len(report.rows) + 1 and "<table>" in html
    assert sum(n for _, n, _ in report.by_source()) == len(report.rows)


def test_report_looks_inside_jit(rng):
    @jit
    def g(x):
        y = fnp.cos(x)  # g:cos
        return fnp.sin(y) * x  # g:sin

    report = introspect.memory_report(g, rng.standard_normal(5))
    inner = [r for r in report.rows if r.kind == "computed"]
    assert inner and all("(in jit(" in r.origin for r in inner)
    assert {r.source_info.line for r in inner} == {line_of("g:cos"), line_of("g:sin")}


def test_long_reports_are_cut_short_with_bytes_per_line():
    def deep(x):
        for _ in range(60):
            x = fnp.tanh(x)  # deep:tanh
        return x.sum()

    report = introspect.memory_report(deep, np.ones(10))
    assert len(report.rows) == 60 and report.total_bytes == 60 * 80
    text = str(report)
    assert "... 20 more" in text and f"4.7 KiB    60 residuals  {__file__}:{line_of('deep:tanh')}" in text
    assert len(report.table().splitlines()) == 62


def test_scalar_residuals_are_residuals():
    # 0-d Arrays the backward pass reads are kept as residuals, as JAX's vjp keeps them (NOTE:
    # [vjp residuals]): the report lists them with the others; an argument given as a Python
    # scalar is a literal of the backward pass instead, as in JAX (y: 2.0, not a residual).
    jax = pytest.importorskip("jax")
    fun = lambda x, y: fnp.sin(x) * y  # noqa: E731
    report = introspect.memory_report(fun, 1.0, 2.0)
    _, f_vjp = funcgrad.vjp(fun, 1.0, 2.0)
    _, j_vjp = jax.vjp(lambda x, y: jax.numpy.sin(x) * y, 1.0, 2.0)
    assert len(report.rows) == len(f_vjp.residuals) == len(jax.tree_util.tree_leaves(j_vjp)) == 2
    assert report.total_bytes == 16 and not report.scalars and "inlined" not in str(report)
    report = introspect.memory_report(fun, 1.0, fnp.asarray(2.0))  # (an Array: a residual)
    assert len(report.rows) == len(funcgrad.vjp(fun, 1.0, fnp.asarray(2.0))[1].residuals) == 3


def test_print_saved_residuals(capsys):
    introspect.print_saved_residuals(f, np.ones(4))
    out = capsys.readouterr().out
    assert out.startswith("Residuals kept for the backward pass of f")
    assert funcgrad.print_saved_residuals is introspect.print_saved_residuals


# ----------------------------------------------------------------------------------------------
# graph

_NODE = re.compile(r'^\s+(\w+) \[label="((?:[^"\\]|\\.)*)"')
_EDGE = re.compile(r"^\s+(\w+) -> (\w+) \[(.*)\];$")


def parse_dot(source: str):
    nodes, edges = {}, []
    for line in source.splitlines():
        if m := _EDGE.match(line):
            edges.append((m[1], m[2], m[3]))
        elif m := _NODE.match(line):
            nodes[m[1]] = m[2].split("\\n")[0]
    return nodes, edges


def test_graph_of_an_mlp_shows_both_programs_and_the_residual_edges(rng):
    params, x = make_params(rng), rng.standard_normal((5, 8)).astype(np.float32)
    g = funcgrad.graph(mlp, params, x)
    assert g.source.startswith("digraph") and g.source.rstrip().endswith("}") and g.dot == g.source
    nodes, edges = parse_dot(g.source)
    fwd_nodes = sorted(v for k, v in nodes.items() if k.startswith("f"))
    bwd_nodes = sorted(v for k, v in nodes.items() if k.startswith("b"))
    fwd_prims = sorted(e.primitive.name for e in g.forward.eqns)
    bwd_prims = sorted(e.primitive.name for e in g.backward.eqns)
    # The backward program: products for the cotangents (dot_general's transpose rule swaps its
    # operands, so no transpose equation), and the reduction of the bias's cotangent.
    assert {"dot_general", "tanh", "add"} <= set(fwd_prims) and {"dot_general", "reduce_sum"} <= set(
        bwd_prims
    )
    # One node per equation (plus argument/output nodes, which are named after the values).
    assert sorted(n for n in fwd_nodes if n in fwd_prims) == fwd_prims
    assert sorted(n for n in bwd_nodes if n in bwd_prims) == bwd_prims
    # Every edge joins known nodes; residual edges go from the forward to the backward program.
    assert all(a in nodes and b in nodes for a, b, _ in edges)
    residual = [(a, b, attrs) for a, b, attrs in edges if 'class="residual"' in attrs]
    assert len(residual) == len(g.residual_edges) > 0
    assert all(a.startswith("f") and b.startswith("b") for a, b, _ in residual)
    assert {i for i, *_ in g.residual_edges} == set(range(len(g.residuals)))
    # The thickest residual edge carries the most bytes.
    widths = {float(re.search(r"penwidth=([\d.]+)", attrs)[1]): a for a, _, attrs in residual}
    biggest = max(g.residual_edges, key=lambda e: e[3])
    assert widths[max(widths)] == biggest[1]
    # Ordinary edges are labelled with shape/dtype.
    assert any('label="f32[5,16]"' in attrs for _, _, attrs in edges)


def test_graph_without_graphviz_still_gives_dot_and_says_how_to_render(monkeypatch):
    g = funcgrad.graph(f, np.ones(3), backward=False)
    assert "cluster_backward" not in g.source and not g.residual_edges
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert "pip install graphviz" in repr(g) and "apt-get install graphviz" in repr(g)
    assert g._repr_svg_() is None
    assert "<pre>" in g._repr_html_() and "digraph" in g._repr_html_()
    with pytest.raises(RuntimeError, match="dot"):
        g.pipe("svg")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
def test_graph_renders_svg_and_png(tmp_path):
    g = funcgrad.graph(f, np.ones(3))
    assert g._repr_svg_().lstrip().startswith("<?xml") or "<svg" in g._repr_svg_()
    path = g.render(str(tmp_path / "f"), format="png")
    assert open(path, "rb").read(4) == b"\x89PNG"


# ----------------------------------------------------------------------------------------------
# Error messages name the user's line


def _toy_primitive(name, linear_jvp=False):
    p = funcgrad.kernel.core.Primitive(name)
    p.def_impl(lambda x: np.asarray(x) * 2.0)
    p.def_abstract_eval(lambda a: a)
    if linear_jvp:  # applies itself to tangents without being declared linear: no transpose rule
        p.def_jvp(lambda primals, tangents: (p.bind(*primals), p.bind(*tangents)))
    return p


def test_missing_rule_errors_name_the_source_line():
    no_jvp = _toy_primitive("toy_no_jvp")
    with pytest.raises(NotImplementedError, match=rf"test_introspect.py:{line_of('toy:jvp')}"):
        grad(lambda x: no_jvp.bind(x))(1.0)  # toy:jvp
    no_transpose = _toy_primitive("toy_no_transpose", linear_jvp=True)

    def g(x):
        return no_transpose.bind(x)  # toy:transpose

    # (The toy's JVP rule lives in this file, so the innermost user frame may be the rule's line.)
    with pytest.raises(NotImplementedError, match=r"used at .*test_introspect.py:\d+"):
        make_jaxpr(grad(g))(1.0)


def test_graph_marks_forward_work_recomputed_in_the_backward_pass(rng):
    params, x = make_params(rng), rng.standard_normal((5, 8)).astype(np.float32)

    def layer(p, h):
        return fnp.tanh(h @ p[0] + p[1])

    def ckpt_mlp(params, x):
        for p in params:
            x = checkpoint(layer)(p, x)
        return (x**2).sum()

    assert funcgrad.graph(mlp, params, x).recomputed == []
    g = funcgrad.graph(ckpt_mlp, params, x)
    nodes, _ = parse_dot(g.source)
    assert "tanh" in {nodes[n] for n in g.recomputed}  # the layers' forward pass, redone
    assert all(n.startswith("b") for n in g.recomputed)
