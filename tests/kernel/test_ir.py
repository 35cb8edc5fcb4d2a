"""Kernel: the IR (printer, type checker, eval_jaxpr), pytrees, errors, leaked tracers and import
order."""

from __future__ import annotations

import collections
import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest
from _checks import typecheck

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.kernel import core, ir
from funcgrad.kernel import tree_util as tu

# ----------------------------------------------------------------------------------------------
# The printer and the type checker


def test_printer_reads_like_jax():
    j = funcgrad.make_jaxpr(lambda x: fnp.sum(fnp.sin(x)))(np.ones(3))
    # 100 characters on one line: over JAX's width of 80, so one equation per line, as JAX prints it
    assert str(j) == (
        "{ lambda ; a:f64[3]. let\n    b:f64[3] = sin a\n"
        "    c:f64[] = reduce_sum[axes=(0,) out_sharding=None] b\n  in (c,) }"
    )
    assert str(funcgrad.make_jaxpr(lambda x: fnp.sin(x) * 2.0)(1.0)) == (
        "{ lambda ; a:f64[]. let b:f64[] = sin a; c:f64[] = mul b 2.0:f64[] in (c,) }"
    )


def test_printer_multiline_and_deterministic():
    f = lambda x, y: fnp.tanh(x @ y).sum() * 2.0 + fnp.exp(x).mean()
    x, y = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    text = str(funcgrad.make_jaxpr(funcgrad.grad(f))(x, y))
    assert text == str(funcgrad.make_jaxpr(funcgrad.grad(f))(x, y))
    assert text.startswith("{ lambda ; a:f32[2,3] b:f32[3,4]. let\n")
    assert text.rstrip().endswith("}")
    assert "dot_general" in text and "tanh" in text and "in (" in text


def test_printer_literals_and_consts():
    c = np.arange(3.0)
    j = funcgrad.make_jaxpr(lambda x: x * 2.0 + c)(np.ones(3))
    text = str(j)
    assert text.startswith("{ lambda a:f64[3]; b:f64[3]. let")
    assert "2.0:f64[]" in text
    assert len(j.consts) == 1 and np.array_equal(j.consts[0], c)


def test_higher_order_equation_prints_inner_jaxpr_indented():
    inner = funcgrad.jit(lambda x: fnp.sin(x) * 2.0)
    text = str(funcgrad.make_jaxpr(lambda x: inner(x) + 1.0)(1.0))
    assert "jit[" in text
    assert "jaxpr={ lambda ; " in text
    assert "name=<lambda>" in text


def test_typecheck_catches_a_wrong_jaxpr():
    j = funcgrad.make_jaxpr(lambda x: fnp.sin(x))(np.ones(3))
    typecheck(j)
    bad_var = ir.Var(ir.ShapedArray((4,), np.float64))
    eqn = j.jaxpr.eqns[0]
    broken = ir.Jaxpr([], j.jaxpr.invars, [eqn._replace(outvars=[bad_var])], [bad_var])
    with pytest.raises(TypeError, match="sin output is f64\\[4\\]"):
        ir.typecheck_jaxpr(broken)
    unbound = ir.Jaxpr([], [], [eqn], eqn.outvars)
    with pytest.raises(TypeError, match="before it is defined"):
        ir.typecheck_jaxpr(unbound)


def test_eval_jaxpr_roundtrip(rng):
    f = lambda x, y: fnp.tanh(x @ y) * 3.0
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    j = funcgrad.make_jaxpr(f)(x, y)
    out = core.eval_jaxpr(j.jaxpr, j.consts, x, y)[0]
    np.testing.assert_allclose(np.asarray(out), np.tanh(x @ y) * 3.0)


# ----------------------------------------------------------------------------------------------
# Values and dtypes


def test_array_basics():
    x = fnp.array([[1.0, 2.0], [3.0, 4.0]])
    assert isinstance(x, funcgrad.Array)
    assert x.shape == (2, 2) and x.ndim == 2 and x.size == 4 and x.dtype == np.float64
    assert repr(fnp.array([1.0, 2.0], dtype=np.float32)) == "Array([1., 2.], dtype=float32)"
    np.testing.assert_array_equal(np.asarray(x.T), [[1.0, 3.0], [2.0, 4.0]])
    assert float(x.sum()) == 10.0 and float(x.mean()) == 2.5
    assert x.reshape(4).shape == (4,) and x.astype(np.float32).dtype == np.float32
    view = np.asarray(x)
    with pytest.raises(ValueError):
        view[0, 0] = 5.0  # immutable
    src = np.ones(3)
    y = fnp.asarray(src)
    src[0] = 7.0
    assert float(y.sum()) == 3.0  # took a copy


@pytest.mark.parametrize(
    "a, b, expected",
    [
        (np.ones(2, np.float32), 2.0, np.float32),
        (np.ones(2, np.int32), 2.5, np.float64),
        (np.ones(2, np.int32), 2, np.int32),
        (np.ones(2, np.float32), np.ones(2, np.float64), np.float64),
        (np.ones(2, np.int32), np.ones(2, np.float32), np.float64),
        (np.ones(2, np.bool_), 1, np.int64),
        (np.ones(2, np.uint8), np.ones(2, np.int8), np.int16),
    ],
)
def test_nep50_promotion_matches_numpy(a, b, expected):
    got = fnp.add(fnp.asarray(a), b if np.isscalar(b) else fnp.asarray(b))
    assert got.dtype == np.dtype(expected) == (np.asarray(a) + b).dtype


def test_float32_stays_float32_under_transformations():
    x = np.ones(3, np.float32)
    f = lambda x: (fnp.sin(x) * 2.0).sum()
    assert funcgrad.grad(f)(x).dtype == np.float32
    assert funcgrad.vmap(lambda v: v * 2.0)(x).dtype == np.float32
    assert funcgrad.grad(lambda s: s * np.float32(2.0))(np.float32(1.0)).dtype == np.float32


# ----------------------------------------------------------------------------------------------
# Pytrees


Point = collections.namedtuple("Point", ["x", "y"])


@dataclasses.dataclass
class Params:
    w: object
    b: object
    name: str = dataclasses.field(default="layer", metadata={"static": True})


tu.register_dataclass(Params)


def test_pytrees_through_transformations():
    p = Params(w=fnp.array([1.0, 2.0]), b=3.0)
    loss = lambda p, pt: (p.w * pt.x).sum() + p.b * pt.y
    g = funcgrad.grad(loss)(p, Point(fnp.array([3.0, 4.0]), 5.0))
    assert isinstance(g, Params) and g.name == "layer"
    np.testing.assert_allclose(np.asarray(g.w), [3.0, 4.0])
    assert float(g.b) == 5.0
    leaves, tree = tu.tree_flatten({"b": [1, 2], "a": (3, None)})
    assert leaves == [3, 1, 2]
    assert tu.tree_unflatten(tree, [30, 10, 20]) == {"a": (30, None), "b": [10, 20]}
    assert tu.tree_map(lambda a, b: a + b, {"x": 1}, {"x": 2}) == {"x": 3}
    paths = [tu.keystr(p) for p, _ in tu.tree_leaves_with_path({"w": [5, 6]})]
    assert paths == ["['w'][0]", "['w'][1]"]


def test_register_pytree_node():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    tu.register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    g = funcgrad.grad(lambda p: p.a * p.b)(Pair(2.0, 5.0))
    assert (float(g.a), float(g.b)) == (5.0, 2.0)


# ----------------------------------------------------------------------------------------------
# Errors


def test_grad_errors():
    # (JAX's first sentence: JAX's api_test matches it)
    with pytest.raises(
        TypeError, match="^Gradient only defined for scalar-output functions. Output had shape: \\(3,\\)"
    ):
        funcgrad.grad(lambda x: x * 2.0)(fnp.ones(3))
    with pytest.raises(TypeError, match="^Gradient only defined for scalar-output functions. .*2 leaves"):
        funcgrad.grad(lambda x: (x, x))(1.0)
    with pytest.raises(TypeError, match="int64 for args\\[0\\]"):
        funcgrad.grad(lambda x: x * 2)(3)
    with pytest.raises(TypeError, match="bool for args\\[1\\]\\['m'\\]"):
        funcgrad.grad(lambda a, d: a, argnums=1)(1.0, {"m": np.array([True])})
    with pytest.raises(TypeError, match="argnums=3 requires at least 4 positional arguments.*only 2"):
        funcgrad.grad(lambda a, b: a, argnums=3)(1.0, 2.0)
    assert funcgrad.grad(lambda x: x * 2.0, allow_int=True)(3).dtype == funcgrad.dtypes.float0


def test_vmap_errors():
    # (JAX's message: each size with an argument that has it, by parameter name and key path)
    with pytest.raises(
        ValueError,
        match=r"(?s)inconsistent sizes.*size 3: axis 0 of argument a.*size 4: axis 0 of argument b",
    ):
        funcgrad.vmap(lambda a, b: a + b)(fnp.ones(3), fnp.ones(4))
    with pytest.raises(
        ValueError,
        match=r"the `axis_size` argument was 2;\n  \* one axis had size 3: axis 0 of kwargs\['y'\]",
    ):
        funcgrad.vmap(lambda y: y, axis_size=2)(y=fnp.ones(3))
    with pytest.raises(ValueError, match="in_axes must have one entry per positional argument"):
        funcgrad.vmap(lambda a, b: a + b, in_axes=(0,))(fnp.ones(3), fnp.ones(3))
    with pytest.raises(ValueError, match="axis 2.*rank should be at least 3"):
        funcgrad.vmap(lambda a: a, in_axes=2)(fnp.ones((3, 4)))
    with pytest.raises(ValueError, match="tree prefix"):
        funcgrad.vmap(lambda p: p["a"], in_axes=({"b": 0},))({"a": fnp.ones(3)})


def test_leaked_tracer_is_an_error_not_a_wrong_answer():
    leaked = []

    def f(x):
        leaked.append(x)
        return x * 2.0

    funcgrad.grad(f)(1.0)
    with pytest.raises(core.UnexpectedTracerError, match="escaped"):
        fnp.sin(leaked[0])
    funcgrad.vmap(f)(fnp.ones(2))
    with pytest.raises(core.UnexpectedTracerError):
        funcgrad.grad(lambda y: leaked[-1] * y)(1.0)


def test_concretization_error_names_the_argument():
    def f(x, threshold):
        if x.sum() > threshold:
            return x
        return -x

    with pytest.raises(core.ConcretizationTypeError, match="threshold"):
        funcgrad.make_jaxpr(f)(fnp.ones(3), 2.0)
    with pytest.raises(core.ConcretizationTypeError, match="static_argnums"):
        funcgrad.jit(f)(fnp.ones(3), 2.0)


# ----------------------------------------------------------------------------------------------
# Import order (each package may be imported first)


_FIRSTS = [
    "funcgrad.primitives",
    "funcgrad.xla_bridge",
    "funcgrad",
    "funcgrad.numpy",
    "funcgrad.core",
    "funcgrad.kernel",
]

# One interpreter loads the third-party dependencies, then each forked child imports one package
# of funcgrad first (as tests/integration/test_layers.py's test_every_public_module_imports_first):
# a child costs funcgrad's import, not a Python start-up and NumPy/SciPy/jaxlib's (6 interpreters
# were about 3 CPU-s).
_IMPORT_FIRST = """
import os, sys
import numpy, scipy, jaxlib._jax, ml_dtypes, opt_einsum
failed = []
for first in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        try:
            __import__(first)
            import funcgrad, funcgrad.numpy as fnp
            assert float(funcgrad.grad(fnp.sin)(0.0)) == 1.0
        except BaseException as e:
            print(f"{first} first: {type(e).__name__}: {e}", file=sys.stderr)
            os._exit(1)
        os._exit(0)
    if os.waitpid(pid, 0)[1]:
        failed.append(first)
print(failed)
"""


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_import_order():
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORT_FIRST, *_FIRSTS], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0 and proc.stdout.strip().splitlines()[-1] == "[]", proc.stderr


def test_pretty_print_takes_jaxs_use_color():
    # JAX's custom_api_test test_pretty_print calls jaxpr.pretty_print(use_color=False)
    cj = funcgrad.make_jaxpr(lambda x: x + 1.0)(np.ones(1, np.float32))
    assert cj.pretty_print(use_color=False) == str(cj) == cj.jaxpr.pretty_print(use_color=False)


def test_closed_jaxpr_shows_its_jaxprs_variables():
    # As JAX's ClosedJaxpr: constvars/invars/outvars/eqns are its jaxpr's, so
    # core.eval_jaxpr(closed, (), *args) runs a closed jaxpr without constants (pjit_test
    # test_config_remove_size_one_mesh_axis_roundtrip).
    closed = funcgrad.make_jaxpr(lambda x, y: x + y)(1.0, 2.0)
    j = closed.jaxpr
    assert (closed.constvars, closed.invars, closed.outvars, closed.eqns) == (
        j.constvars,
        j.invars,
        j.outvars,
        j.eqns,
    )
    assert float(funcgrad.core.eval_jaxpr(closed, (), 1.0, 2.0)[0]) == 3.0
