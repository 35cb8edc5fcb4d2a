"""funcgrad.export against jax.export (the oracle): an artifact exported by funcgrad deserializes
and runs in JAX, and one exported by JAX deserializes and runs in funcgrad -- eagerly, inside
jit, under grad (the serialized VJPs) -- with the same values; JAX's shape-polymorphic artifacts
run here for several sizes (jaxlib's shape refinement), their shape assertions included.
"""

from __future__ import annotations

import collections
import contextlib
import re

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import export

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
pytest.importorskip("flatbuffers", reason="JAX serializes Exported with flatbuffers")
import jax.numpy as jnp  # noqa: E402
from jax import export as jexport  # noqa: E402

jax.config.update("jax_enable_x64", True)

X = np.linspace(-1.0, 1.0, 12).reshape(3, 4)


def test_funcgrad_artifact_runs_in_jax():
    exp = export.export(funcgrad.jit(lambda x, y: (fnp.sin(x) * y, {"s": fnp.sum(x * x)})))(X, 2.0)
    blob = exp.serialize(vjp_order=1)
    jexp = jexport.deserialize(bytearray(blob))
    assert jexp.fun_name == "<lambda>" and jexp.platforms == exp.platforms
    assert [(a.shape, a.dtype) for a in jexp.in_avals] == [(a.shape, a.dtype) for a in exp.in_avals]
    assert jexp.out_tree == jax.tree_util.tree_structure((0, {"s": 0}))
    got = jexp.call(X, 1.5)
    want = exp.call(X, 1.5)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-15)
    np.testing.assert_allclose(got[1]["s"], np.sum(X * X), rtol=1e-15)
    # embedded in a JAX program, and differentiated by JAX through funcgrad's exported VJP
    np.testing.assert_allclose(jax.jit(lambda x: jexp.call(x, 2.0)[0] * 3)(X), np.sin(X) * 6, rtol=1e-14)
    g = jax.grad(lambda x: jexp.call(x, 2.0)[1]["s"] + jexp.call(x, 2.0)[0].sum())(X)
    np.testing.assert_allclose(g, 2 * X + 2 * np.cos(X), rtol=1e-14)


def test_jax_artifact_runs_in_funcgrad():
    def f(x, y):
        return {"a": jnp.tanh(x) @ y, "b": (x.sum(), jnp.exp(y))}

    y = np.arange(8.0).reshape(4, 2) / 8
    jexp = jexport.export(jax.jit(f))(X, y)
    exp = export.deserialize(jexp.serialize(vjp_order=1))
    assert exp.fun_name == "f" and exp.calling_convention_version == jexp.calling_convention_version
    assert exp.in_tree == funcgrad.tree_util.tree_structure(((0, 0), {}))
    want = jax.jit(f)(X, y)
    for got in (exp.call(X, y), funcgrad.jit(exp.call)(X, y)):
        np.testing.assert_allclose(got["a"], want["a"], rtol=1e-14)
        np.testing.assert_allclose(got["b"][0], want["b"][0], rtol=1e-14)
        np.testing.assert_allclose(got["b"][1], want["b"][1], rtol=1e-14)

    # grad (JAX's serialized VJP) against jax.grad of the function
    def loss_fg(x):
        return exp.call(x, y)["a"].sum()

    def loss_jax(x):
        return f(x, y)["a"].sum()

    np.testing.assert_allclose(funcgrad.grad(loss_fg)(X), jax.grad(loss_jax)(X), rtol=1e-13)


@pytest.mark.slow
def test_second_order_grad_through_jax_serialized_vjps():
    y = np.arange(8.0).reshape(4, 2) / 8

    def loss_jax(x):
        return (jnp.tanh(x) @ y).sum()

    exp = export.deserialize(jexport.export(jax.jit(loss_jax))(X).serialize(vjp_order=2))
    hvp_fg = funcgrad.grad(lambda x: (funcgrad.grad(exp.call)(x) ** 2).sum())(X)
    hvp_jax = jax.grad(lambda x: (jax.grad(loss_jax)(x) ** 2).sum())(X)
    np.testing.assert_allclose(hvp_fg, hvp_jax, rtol=1e-12)


def test_jax_shape_polymorphic_artifact_with_two_batch_sizes():
    def f(x):
        return jnp.sin(x).sum(axis=1) * x.shape[0]

    spec = jax.ShapeDtypeStruct(jexport.symbolic_shape("b, 4"), np.float32)
    jexp = jexport.export(jax.jit(f))(spec)
    exp = export.deserialize(jexp.serialize())
    (b, four) = exp.in_avals[0].shape
    assert export.is_symbolic_dim(b) and str(b) == "b" and four == 4
    assert str(exp.out_avals[0].shape[0]) == "b"
    for n in (2, 7):
        x = np.linspace(0, 1, 4 * n, dtype=np.float32).reshape(n, 4)
        want = np.sin(x).sum(axis=1) * n
        np.testing.assert_allclose(exp.call(x), want, rtol=1e-6)
        np.testing.assert_allclose(funcgrad.jit(lambda x: exp.call(x) + 1)(x), want + 1, rtol=1e-6)
        assert exp.call(x).shape == (n,)
    with pytest.raises(
        ValueError, match=re.escape("Shape mismatch for args[0].shape[1] (expected same constant)")
    ):
        exp.call(np.ones((3, 5), np.float32))


def test_jax_artifact_with_non_polynomial_dimensions():
    spec = jax.ShapeDtypeStruct(jexport.symbolic_shape("b, c"), np.float32)
    jexp = jexport.export(jax.jit(lambda x: (x[::2], jnp.concatenate([x, x], axis=1))))(spec)
    exp = export.deserialize(jexp.serialize())
    assert [str(d) for d in exp.out_avals[0].shape] == [str(d) for d in jexp.out_avals[0].shape]
    assert str(exp.out_avals[0].shape[0]) == "floordiv(b + 1, 2)" and str(exp.out_avals[1].shape[1]) == "2*c"
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    halves, doubled = exp.call(x)
    np.testing.assert_allclose(halves, x[::2])
    np.testing.assert_allclose(doubled, np.concatenate([x, x], axis=1))
    env = {"b": 5, "c": 3}
    assert tuple(d.evaluate(env) for d in exp.out_avals[0].shape) == halves.shape == (3, 3)


def test_jax_shape_assertions_are_checked():
    spec = jax.ShapeDtypeStruct(jexport.symbolic_shape("2*b"), np.float32)
    jexp = jexport.export(jax.jit(lambda x: x.reshape(2, -1).sum(0)))(spec)
    exp = export.deserialize(jexp.serialize())
    np.testing.assert_allclose(exp.call(np.arange(6, dtype=np.float32)), [3.0, 5.0, 7.0])
    with pytest.raises(ValueError) as fg:
        exp.call(np.arange(5, dtype=np.float32))
    with pytest.raises(ValueError) as jx:
        jexp.call(np.arange(5, dtype=np.float32))
    assert str(fg.value).startswith(
        "Input shapes do not match the polymorphic shapes specification. Division had"
    )
    assert str(fg.value).split("\n")[0] == str(jx.value).split("\n")[0]  # (JAX's words)
    # a constraint of the symbolic scope, checked by the module's own assertion at refinement
    spec = jax.ShapeDtypeStruct(jexport.symbolic_shape("b", constraints=["b >= 4"]), np.float32)
    bounded = export.deserialize(jexport.export(jax.jit(lambda x: x * 2))(spec).serialize())
    np.testing.assert_allclose(bounded.call(np.ones(5, np.float32)), np.full(5, 2.0))
    with pytest.raises(ValueError, match="symbolic shape constraint b >= 4"):
        bounded.call(np.ones(2, np.float32))
    # two arguments that disagree on a dimension variable
    specs = jexport.symbolic_args_specs((np.ones(3), np.ones(3)), "n")
    jexp2 = jexport.export(jax.jit(lambda a, b: a * b))(*specs)
    exp2 = export.deserialize(jexp2.serialize())
    np.testing.assert_allclose(exp2.call(np.full(4, 2.0), np.full(4, 3.0)), np.full(4, 6.0))
    with pytest.raises(ValueError, match="'n'"):
        exp2.call(np.ones(4), np.ones(5))


def test_jax_multi_platform_and_dropped_arguments():
    jexp = jexport.export(jax.jit(lambda a, unused, c: a * c), platforms=["cuda", "cpu"])(
        np.ones(3), np.ones(2), np.ones(3)
    )
    exp = export.deserialize(jexp.serialize(vjp_order=1))
    assert exp.platforms == ("cuda", "cpu") and exp.module_kept_var_idx == (0, 2)
    a = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(exp.call(a, np.ones(2), a), a * a)
    np.testing.assert_allclose(funcgrad.grad(lambda a: exp.call(a, np.ones(2), a).sum())(a), 2 * a)


def test_funcgrad_multi_platform_artifact_in_jax():
    exp = export.export(funcgrad.jit(lambda x: fnp.cos(x) * 2), platforms=["cpu", "cuda"])(np.ones(3))
    jexp = jexport.deserialize(bytearray(exp.serialize()))
    assert jexp.platforms == ("cpu", "cuda")
    np.testing.assert_allclose(jexp.call(np.array([0.0, 1.0, 2.0])), 2 * np.cos([0.0, 1.0, 2.0]))


Pair = collections.namedtuple("Pair", "first second")


def test_namedtuples_cross_with_one_serialized_name():
    export.register_namedtuple_serialization(Pair, serialized_name="tests.export_jax.Pair")
    jexport.register_namedtuple_serialization(Pair, serialized_name="tests.export_jax.Pair")
    exp = export.export(funcgrad.jit(lambda p: Pair(p.second, p.first + 1)))(Pair(np.ones(2), np.zeros(3)))
    jexp = jexport.deserialize(bytearray(exp.serialize()))
    out = jexp.call(Pair(np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])))
    assert type(out) is Pair
    np.testing.assert_allclose(out.first, [3.0, 4.0, 5.0])
    np.testing.assert_allclose(out.second, [2.0, 3.0])
    back = export.deserialize(
        jexport.export(jax.jit(lambda p: p.first * 2))(Pair(np.ones(2), 1.0)).serialize()
    )
    np.testing.assert_allclose(back.call(Pair(np.array([1.0, 4.0]), 1.0)), [2.0, 8.0])


@pytest.mark.slow
def test_jax_artifact_with_lapack_fft_and_rng_runs_in_a_process_without_jax(tmp_path):
    import os
    import subprocess
    import sys

    a = np.array([[4.0, 1.0], [1.0, 3.0]])

    def f(m):
        return (
            jnp.linalg.cholesky(m),
            jnp.linalg.inv(m),
            jnp.fft.fft(m),
            jax.random.normal(jax.random.key(0), (2,)),
        )

    jexp = jexport.export(jax.jit(f))(a)
    path = tmp_path / "f.bin"
    path.write_bytes(jexp.serialize(vjp_order=1))
    want = [np.asarray(w) for w in jax.jit(f)(a)]
    np.save(tmp_path / "want.npy", np.concatenate([w.ravel().astype(np.complex128) for w in want]))
    code = f"""
import sys, numpy as np, funcgrad
from funcgrad import export
e = export.deserialize(open({str(path)!r}, "rb").read())
a = np.array([[4.0, 1.0], [1.0, 3.0]])
got = np.concatenate([np.asarray(o).ravel().astype(np.complex128) for o in e.call(a)])
want = np.load({str(tmp_path / "want.npy")!r})
np.testing.assert_allclose(got, want, rtol=1e-12)
inv = np.linalg.inv(a)
g = funcgrad.grad(lambda m: e.call(m)[1].sum())(a)
np.testing.assert_allclose(g, -inv.T @ np.ones((2, 2)) @ inv.T, rtol=1e-12)
assert "jax" not in sys.modules
print("ok")
"""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": root}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


@contextlib.contextmanager
def _calling_convention(version):
    previous = funcgrad.config.read("jax_export_calling_convention_version")
    funcgrad.config.update("jax_export_calling_convention_version", version)
    try:
        yield
    finally:
        funcgrad.config.update("jax_export_calling_convention_version", previous)


def test_calling_convention_version_flag_as_jaxs():
    # export.md: ``with config.jax_export_calling_convention_version(10): ...``, JAX's range check
    for version in (9, 10):
        with _calling_convention(version):
            assert export.export(fnp.cos)(1.0).calling_convention_version == version
    with (
        _calling_convention(3),
        pytest.raises(ValueError, match=r"outside the range of supported versions \[9..10\]"),
    ):
        export.export(fnp.cos)(1.0)


def _error(fn):
    with pytest.raises(Exception) as e:
        fn()
    return type(e.value), str(e.value).split("\n")[0]


def test_export_details_as_jax():
    # an OrderedDict argument serializes (JAX registers it) and JAX reads funcgrad's tree
    od = collections.OrderedDict(b=np.ones(2), a=np.zeros(2))
    blob = export.export(funcgrad.jit(lambda d: d["b"] * 2 + d["a"]))(od).serialize()
    np.testing.assert_allclose(export.deserialize(blob).call(od), [2.0, 2.0])
    np.testing.assert_allclose(jexport.deserialize(bytearray(blob)).call(od), [2.0, 2.0])
    # a namedtuple is not a registered node: a serialization without from_children is refused
    T = collections.namedtuple("T", "a b")
    regs = [
        lambda m: m.register_pytree_node_serialization(
            T, serialized_name="t.T", serialize_auxdata=lambda a: b"", deserialize_auxdata=lambda b: None
        )
        for m in (export, jexport)
    ]
    assert _error(lambda: regs[0](export)) == _error(lambda: regs[1](jexport))
    # exporting inside a jit takes the traced values' types
    x = np.arange(4, dtype=np.float32)

    def twice(mod, jit, m):
        @jit
        def f1(x):
            e = mod.export(jit(m.sin))(x)
            return e.call(x) + e.call(x)

        return f1(x)

    np.testing.assert_allclose(twice(export, funcgrad.jit, fnp), twice(jexport, jax.jit, jnp), rtol=1e-6)
    # keyword arguments are named as JAX names them; a platform JAX does not know is lowered
    e1 = export.export(funcgrad.jit(lambda a, b: a + b))(x, b=x)
    j1 = jexport.export(jax.jit(lambda a, b: a + b))(x, b=x)
    assert _error(lambda: e1.call(x, b=np.ones(6, np.float32))) == _error(
        lambda: j1.call(x, b=np.ones(6, np.float32))
    )
    assert export.export(funcgrad.jit(fnp.sin), platforms=("cpu", "other"))(x).platforms == ("cpu", "other")
    # donation needs every platform to support it, or none
    f, jf = funcgrad.jit(fnp.sin, donate_argnums=0), jax.jit(jnp.sin, donate_argnums=0)
    fe = _error(lambda: export.export(f, platforms=["cpu", "tpu", "other"])(x))
    je = _error(lambda: jexport.export(jf, platforms=["cpu", "tpu", "other"])(x))
    assert fe[0] is je[0] is NotImplementedError and fe[1].split(".")[0] == je[1].split(".")[0]


def test_global_constants_and_int_cotangents_as_jax():
    x = np.arange(4, dtype=np.float32)
    # a module for several platforms takes the platform index: refined before compiling, as JAX's
    e = export.export(funcgrad.jit(fnp.sin), platforms=("cpu", "tpu"))(x)
    j = jexport.export(jax.jit(jnp.sin), platforms=("cpu", "tpu"))(x)
    assert e.uses_global_constants == j.uses_global_constants is True
    for m in (e.mlir_module(), j.mlir_module()):
        assert "jax.uses_shape_polymorphism = true" in m
    # the VJP of a symbolic export with an integer input takes float0 cotangents of its sizes
    xi, xf = np.arange(6, dtype=np.int32).reshape(2, 3), np.arange(12, dtype=np.float32).reshape(3, 4)

    exp = export.deserialize(
        export.export(funcgrad.jit(lambda a, b: (2 * a.T, b.T * b.T)))(
            *export.symbolic_args_specs([xi, xf], shapes_specs=["2, a", "a, 4"])
        ).serialize(vjp_order=1)
    )
    g = funcgrad.grad(lambda b: fnp.sum(exp.call(xi, b)[1]))(xf)
    np.testing.assert_allclose(g, 2 * xf)  # (d/db sum(b.T * b.T))


def test_symbolic_args_specs_list_for_tuple_as_jax():
    args = (np.ones((2, 3)), np.ones((3, 4)))
    got = export.symbolic_args_specs(args, ["2, a", "a, 4"])
    want = jexport.symbolic_args_specs(args, ["2, a", "a, 4"])
    assert [str(s.shape) for s in got] == [str(s.shape) for s in want]


class _Described:
    """A pytree node whose unflatten checks its leaf (JAX's export_test CustomType2)."""

    def __init__(self, array, names):
        assert len(names) == array.shape[0]
        self.array, self.names = array, names

    def tree_flatten(self):
        return (self.array,), self.names

    @classmethod
    def tree_unflatten(cls, names, children):
        return cls(children[0], names)


funcgrad.tree_util.register_pytree_node_class(_Described)
jax.tree_util.register_pytree_node_class(_Described)


def test_node_checking_its_leaves_as_jax():
    # jit names the results without rebuilding such a node from placeholders, and export
    # serializes it with its registered auxiliary data
    x = np.arange(2.0)
    f = lambda x: _Described(x * 2, ("a", "b"))  # noqa: E731
    text = funcgrad.jit(f).lower(x).as_text()
    want = jax.jit(f).lower(x).as_text()
    infos = lambda t: re.findall(r'jax.result_info = "[^"]*"', t)  # noqa: E731
    assert infos(text) == infos(want)
    # (a node rebuilt from placeholders: its positions are named [0] too, as JAX's)
    g = lambda x: [_Described(x, ("a", "b")), {"k": x}]  # noqa: E731
    assert infos(funcgrad.jit(g).lower(x).as_text()) == infos(jax.jit(g).lower(x).as_text())
    export.register_pytree_node_serialization(
        _Described,
        serialized_name="test_export_jax._Described",
        serialize_auxdata=lambda names: "/".join(names).encode(),
        deserialize_auxdata=lambda b: tuple(b.decode().split("/")),
    )
    back = export.deserialize(export.export(funcgrad.jit(f))(x).serialize())
    out = back.call(x)
    assert out.names == ("a", "b")
    np.testing.assert_allclose(out.array, x * 2)


def test_ignore_forward_compatibility_flag_as_jaxs():
    # (shape_poly_test exports linalg.inv under it: funcgrad had no such flag)
    name = "jax_export_ignore_forward_compatibility"
    assert funcgrad.config.read(name) is getattr(jax.config, name) is False
    funcgrad.config.update(name, True)
    try:
        assert funcgrad.config.read(name) is True
        assert export.export(funcgrad.jit(fnp.cos))(1.0).call(0.0) == 1.0
    finally:
        funcgrad.config.update(name, False)


def test_an_export_of_an_older_calling_convention_is_called_as_jax():
    """JAX calls an Exported of an older calling convention as it is (its stored exports of
    versions 4 and 6 in export_back_compat_test); only a newer one than funcgrad reads is refused."""
    import dataclasses

    exp = jexport.export(jax.jit(jnp.sin))(jax.ShapeDtypeStruct((3,), np.float32))
    x = np.arange(3, dtype=np.float32)
    for version in (4, 6):
        old = dataclasses.replace(export.deserialize(exp.serialize()), calling_convention_version=version)
        want = dataclasses.replace(exp, calling_convention_version=version).call(x)
        np.testing.assert_array_equal(old.call(x), want)
        np.testing.assert_array_equal(funcgrad.jit(old.call)(x), want)
    newer = dataclasses.replace(export.deserialize(exp.serialize()), calling_convention_version=99)
    with pytest.raises(ValueError, match="calling convention version 99"):
        newer.call(x)
