"""funcgrad.export within funcgrad: export, serialize/deserialize, calling an Exported eagerly,
inside jit, under grad (through the exported VJP) and vmap; symbolic shapes; the pytree-node
registry; errors for bad input. Values against NumPy and closed forms. (Artifacts crossing to and
from JAX: tests/surface/test_export_jax.py.)
"""

from __future__ import annotations

import collections
import re

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import export
from funcgrad import tree_util as ftu


def _f(x, y):
    return fnp.sin(x) * y, {"total": fnp.sum(x * x)}


def _ref(x, y):
    return np.sin(x) * y, {"total": np.sum(x * x)}


X = np.linspace(-1.0, 1.0, 12).reshape(3, 4)


def test_exported_fields_and_module():
    exp = export.export(funcgrad.jit(_f))(funcgrad.ShapeDtypeStruct((3, 4), np.float64), 2.0)
    assert [(a.shape, a.dtype) for a in exp.in_avals] == [((3, 4), np.float64), ((), np.float64)]
    assert [(a.shape, a.dtype) for a in exp.out_avals] == [((3, 4), np.float64), ((), np.float64)]
    assert exp.in_tree == ftu.tree_structure(((0, 0), {}))
    assert exp.out_tree == ftu.tree_structure((0, {"total": 0}))
    assert exp.platforms == (export.default_export_platform(),)
    assert exp.nr_devices == 1 and exp.module_kept_var_idx == (0, 1)
    assert exp.fun_name == "_f"
    v = exp.calling_convention_version
    assert (
        export.minimum_supported_calling_convention_version
        <= v
        <= export.maximum_supported_calling_convention_version
    )
    text = exp.mlir_module()
    assert "func.func public @main" in text and "stablehlo.sine" in text
    assert 'jax.result_info = "result[0]"' in text and "jax.result_info = \"result[1]['total']\"" in text
    assert "jax.uses_shape_polymorphism = false" in text
    module = exp.mlir_module(serialized=False)
    assert "stablehlo.sine" in str(module) and len(module.body.operations) >= 1


def test_roundtrip_values_eager_and_jit():
    exp = export.export(funcgrad.jit(_f))(X, 2.0)
    back = export.deserialize(exp.serialize())
    assert back.in_tree == exp.in_tree and back.out_tree == exp.out_tree
    assert [a.shape for a in back.in_avals] == [a.shape for a in exp.in_avals]
    want = _ref(X, 2.5)
    for e in (exp, back):
        out = e.call(X, 2.5)
        np.testing.assert_allclose(out[0], want[0], rtol=1e-14)
        np.testing.assert_allclose(out[1]["total"], want[1]["total"], rtol=1e-14)
    # Inside jit: the module is embedded in the caller's program (called twice, once per Exported).
    g = funcgrad.jit(lambda x: back.call(x, 2.0)[0] + exp.call(2 * x, 1.0)[1]["total"])
    np.testing.assert_allclose(g(X), np.sin(X) * 2 + np.sum(4 * X * X), rtol=1e-13)
    assert "call @" in g.lower(X).as_text()


def test_python_scalars_take_the_exported_dtype():
    # JAX's documented example: an export for float32 called with Python floats
    exp = export.deserialize(
        export.export(funcgrad.jit(lambda x: 2 * x * x))(
            funcgrad.ShapeDtypeStruct((), np.float32)
        ).serialize()
    )
    out = 3.0 * exp.call(1.0 * 4.0)
    assert out.dtype == np.float32 and float(out) == 96.0
    with pytest.raises(ValueError, match="Dtype mismatch.*float32"):
        exp.call(np.float64(4.0))  # a NumPy float64 is not weakly typed: no silent cast


def test_large_constants_are_embedded_in_the_module():
    table = fnp.asarray(np.arange(5000.0))
    exp = export.export(funcgrad.jit(lambda i: table[i] * 2))(np.int32(0))
    back = export.deserialize(exp.serialize())
    assert back.in_avals[0].shape == () and back.call(np.int32(4321)) == 8642.0


def test_static_arguments_are_baked_in():
    f = funcgrad.jit(lambda x, n: x**n, static_argnums=1)
    exp = export.export(f)(np.ones(3), 3)
    assert len(exp.in_avals) == 1
    np.testing.assert_allclose(exp.call(np.array([1.0, 2.0, 3.0])), [1.0, 8.0, 27.0])


def _check_grads(e, x):
    g = funcgrad.grad(lambda x: e.call(x, 2.0).sum())(x)
    np.testing.assert_allclose(g, 2 * np.cos(x), rtol=1e-14)
    gy = funcgrad.grad(lambda y: e.call(x, y).sum())(2.0)
    np.testing.assert_allclose(gy, np.sin(x).sum(), rtol=1e-14)
    # second order, through the VJP of the VJP
    gg = funcgrad.grad(lambda x: funcgrad.grad(lambda z: e.call(z, 2.0).sum())(x).sum())(x)
    np.testing.assert_allclose(gg, -2 * np.sin(x), rtol=1e-13)


def test_grad_through_exported_vjp_matches_closed_form():
    exp = export.export(funcgrad.jit(lambda x, y: fnp.sin(x) * y))(np.ones(3), 2.0)
    x = np.array([0.1, 0.5, 1.3])
    back = export.deserialize(exp.serialize(vjp_order=2))
    for e in (exp, back):
        _check_grads(e, x)
    np.testing.assert_allclose(
        funcgrad.jit(funcgrad.grad(lambda x: back.call(x, 2.0).sum()))(x), 2 * np.cos(x)
    )
    assert exp.vjp().in_avals[-1].shape == (3,)  # primals, then the output cotangents


def test_grad_against_finite_differences():
    exp = export.export(funcgrad.jit(lambda a: fnp.tanh(a @ a.T).sum()))(np.ones((2, 3)))
    a = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]])
    g = np.asarray(funcgrad.grad(exp.call)(a))
    eps = 1e-6
    fd = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        d = np.zeros_like(a)
        d[idx] = eps
        fd[idx] = (float(exp.call(a + d)) - float(exp.call(a - d))) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)


def test_without_a_serialized_vjp_grad_says_how():
    back = export.deserialize(export.export(funcgrad.jit(fnp.sin))(np.ones(2)).serialize())
    assert not back.has_vjp()
    with pytest.raises(ValueError, match="No VJP is available.*vjp_order"):
        funcgrad.grad(lambda x: back.call(x).sum())(np.ones(2))


def test_vmap_of_an_exported_call_matches_a_loop():
    exp = export.export(funcgrad.jit(lambda x, y: fnp.cos(x) + y))(np.ones(3), np.ones(3))
    xs = np.linspace(0, 1, 12).reshape(4, 3)
    y = np.array([1.0, 2.0, 3.0])
    out = funcgrad.vmap(exp.call, in_axes=(0, None))(xs, y)
    np.testing.assert_allclose(out, np.stack([np.cos(r) + y for r in xs]))


def test_multi_platform_module_runs_here():
    exp = export.export(funcgrad.jit(lambda x: fnp.exp(x) - 1), platforms=["cpu", "cuda"])(np.ones(2))
    assert exp.platforms == ("cpu", "cuda")
    # the same lowering on both platforms: one copy, no case on the index
    assert '"_platform_index"' in exp.mlir_module() and "stablehlo.case" not in exp.mlir_module()
    np.testing.assert_allclose(exp.call(np.array([0.0, 1.0])), [0.0, np.e - 1])
    # LAPACK on the CPU, cuSOLVER on CUDA: a case on the platform index picks the CPU's here
    a = np.array([[4.0, 1.0], [1.0, 3.0]])
    chol = export.export(funcgrad.jit(fnp.linalg.cholesky), platforms=["cpu", "cuda"])(a)
    text = chol.mlir_module()
    assert "stablehlo.case" in text and "@lapack_" in text and "@cusolver" in text
    np.testing.assert_allclose(chol.call(a), np.linalg.cholesky(a), rtol=1e-14)


def test_platform_checks():
    exp = export.export(funcgrad.jit(fnp.sin), platforms=["cuda"])(np.ones(2))
    if export.default_export_platform() != "cuda":
        with pytest.raises(ValueError, match="exported for platforms"):
            exp.call(np.ones(2))
    relaxed = export.export(
        funcgrad.jit(fnp.sin), platforms=["cuda"], disabled_checks=[export.DisabledSafetyCheck.platform()]
    )(np.ones(2))
    np.testing.assert_allclose(relaxed.call(np.full(2, 0.5)), np.sin([0.5, 0.5]))
    back = export.deserialize(relaxed.serialize())
    assert back.disabled_safety_checks == (export.DisabledSafetyCheck.platform(),)
    # JAX's documented example: export for a TPU here, run it with the platform check disabled
    tpu = export.export(funcgrad.jit(fnp.cos), platforms=["tpu"])(1.0)
    with pytest.raises(ValueError, match=r"exported for platforms '\('tpu',\)'"):
        tpu.call(1.0)
    multi = export.export(funcgrad.jit(fnp.cos), platforms=["tpu", "cpu", "cuda"])(1.0)
    np.testing.assert_allclose(multi.call(1.0), np.cos(1.0))
    with pytest.raises(ValueError, match="cannot lower for the platform 'tpu'"):
        export.export(funcgrad.jit(fnp.linalg.cholesky), platforms=["tpu"])(np.eye(2))
    # a platform JAX does not name is lowered with the general rules, as JAX's export does
    other = export.export(funcgrad.jit(fnp.sin), platforms=["tpu", "cpu", "other"])(np.ones(2))
    assert other.platforms == ("tpu", "cpu", "other")
    np.testing.assert_allclose(export.deserialize(other.serialize()).call(np.ones(2)), np.sin(np.ones(2)))


def test_bad_input_errors():
    with pytest.raises(ValueError, match="must be the result of `jit`"):  # (JAX 0.10's type)
        export.export(_f)
    # funcgrad's own functions export as they are, as JAX's (jitted there) do in export's docstring
    exp = export.export(fnp.sin)(funcgrad.ShapeDtypeStruct((2,), np.float32))
    assert exp.fun_name == "sin"
    np.testing.assert_allclose(exp.call(np.array([0.1, 0.2], np.float32)), np.sin([0.1, 0.2]), rtol=1e-6)
    exp = export.export(funcgrad.jit(_f))(X, 2.0)
    with pytest.raises(
        ValueError, match=re.escape("Shape mismatch for args[0].shape[1] (expected same constant)")
    ):
        exp.call(np.ones((3, 5)), 2.0)
    with pytest.raises(
        ValueError, match=re.escape("Rank mismatch for args[0]: expected (3, 4)")
    ):  # (JAX's words)
        exp.call(np.ones(3), 2.0)
    with pytest.raises(ValueError, match="Dtype mismatch.*float64"):  # (JAX's type)
        exp.call(X.astype(np.float32), 2.0)
    with pytest.raises(ValueError, match="same pytree structure"):
        exp.call((X, 2.0))
    # a symbolic export whose lowerings do not merge into one module for all sizes (a LAPACK
    # custom call: NOTE: [one module for all sizes]) runs in this process only
    sym = export.export(funcgrad.jit(fnp.linalg.inv))(
        funcgrad.ShapeDtypeStruct(export.symbolic_shape("b, b"), np.float32)
    )
    with pytest.raises(ValueError, match="Cannot serialize inv.*custom_call"):
        sym.serialize()
    sharded = funcgrad.jit(
        fnp.sin, in_shardings=funcgrad.sharding.SingleDeviceSharding(funcgrad.devices()[0])
    )
    # a one-device sharding exports as no sharding (nr_devices 1), as JAX's
    one = export.deserialize(export.export(sharded)(np.ones(3)).serialize())
    assert one.nr_devices == 1
    np.testing.assert_allclose(one.call(np.ones(3)), np.sin(np.ones(3)))
    with pytest.raises(TypeError, match="ShapeDtypeStruct"):
        export.export(funcgrad.jit(fnp.sin))("not an array")


Point = collections.namedtuple("Point", "x y")


def test_namedtuple_and_custom_node_serialization():
    exp = export.export(funcgrad.jit(lambda p: Point(p.y, p.x * 2)))(Point(np.ones(2), np.zeros(3)))
    with pytest.raises(ValueError, match="register_namedtuple_serialization"):
        exp.serialize()
    export.register_namedtuple_serialization(Point, serialized_name="tests.export.Point")
    with pytest.raises(ValueError, match="Duplicate"):
        export.register_namedtuple_serialization(Point, serialized_name="tests.export.Point2")
    back = export.deserialize(exp.serialize())
    out = back.call(Point(np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])))
    assert type(out) is Point
    np.testing.assert_allclose(out.x, [3.0, 4.0, 5.0])
    np.testing.assert_allclose(out.y, [2.0, 4.0])

    class Scaled:
        def __init__(self, value, scale):
            self.value, self.scale = value, scale

    ftu.register_pytree_node(Scaled, lambda s: ((s.value,), s.scale), lambda scale, ch: Scaled(ch[0], scale))
    export.register_pytree_node_serialization(
        Scaled,
        serialized_name="tests.export.Scaled",
        serialize_auxdata=lambda scale: str(scale).encode(),
        deserialize_auxdata=lambda b: float(b.decode()),
    )
    exp2 = export.export(funcgrad.jit(lambda s: Scaled(s.value * s.scale, s.scale)))(Scaled(np.ones(2), 3.0))
    back2 = export.deserialize(exp2.serialize())
    out2 = back2.call(Scaled(np.array([1.0, 2.0]), 3.0))
    assert isinstance(out2, Scaled) and out2.scale == 3.0
    np.testing.assert_allclose(out2.value, [3.0, 6.0])


def test_symbolic_shapes():
    b, four = export.symbolic_shape("b, 4")
    assert export.is_symbolic_dim(b) and not export.is_symbolic_dim(four) and four == 4
    assert str(2 * b + 1) == "2*b + 1" and str(b * b - b) == "b^2 - b"
    assert (b + 1) - 1 == b and b - b == 0
    assert b >= 1 and b + 1 > b
    with pytest.raises(export._shape_poly.InconclusiveDimensionOperation):
        _ = b >= 2
    assert (3 * b + 2).evaluate({"b": 5}) == 17
    # the non-polynomial operations, printed (and parsed) as JAX writes them
    assert str((b + 1) // 2) == "floordiv(b + 1, 2)" and str(b % 3) == "mod(b, 3)"
    assert (2 * b) // 2 == b and ((b + 1) // 2).evaluate({"b": 6}) == 3
    (m,) = export.symbolic_shape("max(b, 4)")
    assert str(m) == "max(b, 4)" and m.evaluate({"b": 2}) == 4 and m.evaluate({"b": 9}) == 9
    (c,) = export.symbolic_shape("c", scope=export.SymbolicScope(["c >= 2"]))
    with pytest.raises(ValueError, match="mixing of symbolic scopes"):
        _ = b + c
    with pytest.raises(ValueError, match="syntax error"):
        export.symbolic_shape("b, 4 /")
    assert export.symbolic_shape("_, ...", like=(3, 4, 5)) == (3, 4, 5)
    specs = export.symbolic_args_specs(
        {"a": np.ones((3, 4)), "b": np.ones(2, np.float32)}, {"a": "n, 4", "b": None}
    )
    assert specs["b"].shape == (2,) and specs["b"].dtype == np.float32
    n, k = specs["a"].shape
    assert export.is_symbolic_dim(n) and str(n) == "n" and k == 4


def test_integer_arguments_and_results_get_float0_cotangents():
    exp = export.export(funcgrad.jit(lambda x, i: (x * i, i + 1)))(np.ones(3), np.int32(2))
    vjp = exp.vjp()
    assert [a.dtype for a in vjp.in_avals] == [np.float64, np.int32, np.float64, funcgrad.dtypes.float0]
    assert [a.dtype for a in vjp.out_avals] == [np.float64, funcgrad.dtypes.float0]
    back = export.deserialize(exp.serialize(vjp_order=1))
    g = funcgrad.grad(lambda x: back.call(x, np.int32(3))[0].sum())(np.ones(3))
    np.testing.assert_allclose(g, [3.0, 3.0, 3.0])
    assert exp.in_shardings_jax() == (None, None) and exp.out_shardings_jax() == (None, None)


@pytest.mark.parametrize("impl", ["threefry2x32", "rbg"])
def test_typed_keys_round_trip(impl):
    # a typed key array in and out of an export, serialized (its implementation's name travels
    # with its node), gives the keys and draws of the jitted function
    import funcgrad.random as fr

    key = fr.key(42, impl=impl)
    f = funcgrad.jit(lambda k: (k, fr.split(k, 2), fr.normal(k, (2,))))
    back = export.deserialize(export.export(f)(key).serialize())
    want, got = f(key), back.call(key)
    assert got[0] == want[0] and fr.key_impl(got[1]) == fr.key_impl(want[1])
    np.testing.assert_array_equal(fr.key_data(got[1]), fr.key_data(want[1]))
    np.testing.assert_array_equal(got[2], want[2])
