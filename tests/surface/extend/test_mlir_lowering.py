"""User lowerings (``funcgrad.interpreters.mlir``): rules built with jaxlib's MLIR bindings, spliced
into funcgrad's emitted module, and ``lower_fun`` rules, under jit, vmap and grad; values against
NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from funcgrad.xla_bridge.emitter import LoweringError
from jaxlib.mlir.dialects import stablehlo as hlo

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.interpreters import mlir
from funcgrad.kernel import ad as kad
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ShapedArray

RNG = np.random.default_rng(0)


def _same_aval(*avals, **params):
    return ShapedArray(avals[0].shape, avals[0].dtype)


def _fma_primitive(name: str) -> Primitive:
    """JAX's tutorial primitive ``multiply_add``: x * y + z, with JVP and batch rules."""
    p = Primitive(name)
    p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
    p.def_abstract_eval(_same_aval)
    kad.defjvp(p, lambda t, x, y, z: t * y, lambda t, x, y, z: x * t, lambda t, x, y, z: t)

    @p.def_batch
    def _batch(axis_size, vals, dims):
        moved = [
            fnp.broadcast_to(v, (axis_size, *np.shape(v))) if d is None else fnp.moveaxis(v, d, 0)
            for v, d in zip(vals, dims)
        ]
        return p.bind(*moved), 0

    return p


bindings_p = _fma_primitive("test_mlir_fma_bindings")
mlir.register_lowering(bindings_p, lambda ctx, x, y, z: [hlo.AddOp(hlo.MulOp(x, y), z).result])

lower_fun_p = _fma_primitive("test_mlir_fma_lower_fun")
mlir.register_lowering(lower_fun_p, mlir.lower_fun(lambda x, y, z: x * y + z, multiple_results=False))


def _args(shape=(4,), dtype=np.float64):
    return [RNG.normal(size=shape).astype(dtype) for _ in range(3)]


@pytest.mark.parametrize("prim", [bindings_p, lower_fun_p], ids=["bindings", "lower_fun"])
def test_jit_vmap_grad_against_numpy(prim):
    x, y, z = _args()
    want = x * y + z
    np.testing.assert_allclose(funcgrad.jit(prim.bind)(x, y, z), want, rtol=1e-12)
    # vmap over a batch of rows, under jit (the batch rule binds the primitive on 2-D operands)
    xb, yb, zb = _args((3, 4))
    got = funcgrad.jit(funcgrad.vmap(prim.bind, in_axes=(0, 0, None)))(xb, yb, z)
    np.testing.assert_allclose(got, xb * yb + z, rtol=1e-12)
    # grad under jit: d/dx sum(x*y+z) = y, d/dy = x, d/dz = 1
    g = funcgrad.jit(funcgrad.grad(lambda a, b, c: fnp.sum(prim.bind(a, b, c) ** 2), argnums=(0, 1, 2)))(
        x, y, z
    )
    r = 2 * want
    np.testing.assert_allclose(g[0], r * y, rtol=1e-13)
    np.testing.assert_allclose(g[1], r * x, rtol=1e-13)
    np.testing.assert_allclose(g[2], r, rtol=1e-13)


def test_bindings_rule_is_inlined_as_jaxs():
    # (its operations in the caller's body, as JAX's module prints them: no function of its own)
    x, y, z = _args((2,), np.float32)
    text = funcgrad.jit(bindings_p.bind).lower(x, y, z).as_text()
    assert "func.func private" not in text and "call @" not in text
    assert "stablehlo.multiply %arg0, %arg1" in text and "stablehlo.add" in text
    # the lower_fun rule is emitted inline by funcgrad's own emitter: no function of its own
    text = funcgrad.jit(lower_fun_p.bind).lower(x, y, z).as_text()
    assert "lowering" not in text and "stablehlo.multiply" in text


def test_rule_context_constants_attributes_and_lower_fun_inside_a_bindings_rule():
    # A rule that reads ctx.avals_out, makes constants and attributes, and calls a lower_fun rule
    # with ir.Values (lowered by funcgrad's emitter into the same module).
    p = Primitive("test_mlir_scaled_tanh")
    p.def_impl(lambda x, *, scale: scale * np.tanh(x) + 1.0)
    p.def_abstract_eval(_same_aval)
    seen = {}

    def rule(ctx, x, *, scale):
        seen["avals"] = (ctx.avals_in, ctx.avals_out, ctx.module_context.platforms)
        (t,) = mlir.lower_fun(fnp.tanh, multiple_results=False)(ctx, x)
        aval = ctx.avals_out[0]
        c = mlir.ir_constant(np.full(aval.shape, scale, aval.dtype))
        one = hlo.ConstantOp(mlir.ir.DenseElementsAttr.get(np.ones(aval.shape, aval.dtype))).result
        assert str(mlir.i64_attr(3)) == "3 : i64" and str(mlir.dense_int_array([1, 2])) == "array<i64: 1, 2>"
        assert mlir.aval_to_ir_type(aval) == x.type == mlir.aval_to_ir_type(ctx.module_context, aval)
        return [hlo.AddOp(hlo.MulOp(t, c), one).result]

    mlir.register_lowering(p, rule)
    x = RNG.normal(size=(2, 3))
    got = funcgrad.jit(lambda v: p.bind(v, scale=2.5))(x)
    np.testing.assert_allclose(got, 2.5 * np.tanh(x) + 1.0, rtol=1e-14)
    avals_in, avals_out, platforms = seen["avals"]
    assert (
        [a.shape for a in avals_in] == [(2, 3)] and avals_out[0].dtype == np.float64 and platforms == ("cpu",)
    )


def test_multiple_results_and_platform_specific_rules():
    p = Primitive("test_mlir_sum_diff", multiple_results=True)
    p.def_impl(lambda x, y: [x + y, x - y])
    p.def_abstract_eval(lambda x, y: [_same_aval(x), _same_aval(x)])
    mlir.register_lowering(
        p, lambda ctx, x, y: [hlo.AddOp(x, y).result, hlo.SubtractOp(x, y).result], platform="cpu"
    )
    mlir.register_lowering(p, lambda ctx, x, y: 1 / 0, platform="tpu")  # never used on the CPU
    x, y = RNG.normal(size=3), RNG.normal(size=3)
    s, d = funcgrad.jit(p.bind)(x, y)
    np.testing.assert_allclose(s, x + y)
    np.testing.assert_allclose(d, x - y)


def test_python_callback_from_a_rule():
    p = Primitive("test_mlir_host_square")
    p.def_impl(lambda x: x * x)
    p.def_abstract_eval(_same_aval)
    calls = []

    def host(x):
        calls.append(x.copy())
        return [x * x]

    def rule(ctx, x):
        outs, _, _ = mlir.emit_python_callback(
            ctx, host, None, [x], ctx.avals_in, ctx.avals_out, has_side_effect=False
        )
        return outs

    mlir.register_lowering(p, rule)
    x = np.arange(3.0)
    np.testing.assert_array_equal(funcgrad.jit(p.bind)(x), x * x)
    np.testing.assert_array_equal(calls[0], x)

    # ordered: the call takes a token and returns a new one
    q = Primitive("test_mlir_host_square_ordered")
    q.def_impl(lambda x: x * x)
    q.def_abstract_eval(_same_aval)

    def ordered_rule(ctx, x):
        token = hlo.CreateTokenOp().result
        outs, new_token, _ = mlir.emit_python_callback(
            ctx, host, token, [x], ctx.avals_in, ctx.avals_out, has_side_effect=True
        )
        assert str(new_token.type) == "!stablehlo.token"
        return outs

    mlir.register_lowering(q, ordered_rule)
    np.testing.assert_array_equal(funcgrad.jit(q.bind)(x + 1), (x + 1) ** 2)
    np.testing.assert_array_equal(calls[-1], x + 1)


def test_clear_errors():
    bad_type = Primitive("test_mlir_bad_type")
    bad_type.def_impl(lambda x: x)
    bad_type.def_abstract_eval(_same_aval)
    mlir.register_lowering(
        bad_type,
        lambda ctx, x: [hlo.ConvertOp(mlir.aval_to_ir_type(ShapedArray((3,), np.float32)), x).result],
    )
    with pytest.raises(LoweringError, match=r"test_mlir_bad_type.*tensor<3xf32>.*declares tensor<3xf64>"):
        funcgrad.jit(bad_type.bind)(np.zeros(3))

    wrong_count = Primitive("test_mlir_wrong_count")
    wrong_count.def_impl(lambda x: x)
    wrong_count.def_abstract_eval(_same_aval)
    mlir.register_lowering(wrong_count, lambda ctx, x: [x, x])
    with pytest.raises(LoweringError, match="returned 2 values; its abstract evaluation declares 1"):
        funcgrad.jit(wrong_count.bind)(np.zeros(3))

    tpu_only = Primitive("test_mlir_tpu_only")
    tpu_only.def_impl(lambda x: x)
    tpu_only.def_abstract_eval(_same_aval)
    mlir.register_lowering(tpu_only, lambda ctx, x: [x], platform="tpu")
    with pytest.raises(LoweringError, match="not for 'cpu'"):
        funcgrad.jit(tpu_only.bind)(np.zeros(3))

    wrong_dtype = Primitive("test_mlir_lower_fun_dtype")
    wrong_dtype.def_impl(lambda x: x)
    wrong_dtype.def_abstract_eval(_same_aval)
    mlir.register_lowering(
        wrong_dtype, mlir.lower_fun(lambda x: x.astype(np.float32), multiple_results=False)
    )
    with pytest.raises(
        LoweringError, match=r"lower_fun\(<lambda>\).*computes tensor<3xf32>.*declares tensor<3xf64>"
    ):
        funcgrad.jit(wrong_dtype.bind)(np.zeros(3))

    raises = Primitive("test_mlir_raises")
    raises.def_impl(lambda x: x)
    raises.def_abstract_eval(_same_aval)

    def broken(ctx, x):
        raise KeyError("missing")

    mlir.register_lowering(raises, broken)
    with pytest.raises(KeyError) as info:
        funcgrad.jit(raises.bind)(np.zeros(3))
    assert "lowering rule broken of the primitive 'test_mlir_raises'" in "".join(info.value.__notes__)


def test_module_helpers():
    cj = funcgrad.make_jaxpr(lambda x: fnp.sin(x) * 2.0)(np.zeros(3, np.float32))
    result = mlir.lower_jaxpr_to_module("f", cj)
    text = mlir.module_to_string(result.module)
    assert "stablehlo.sine" in text
    assert mlir.module_to_bytecode(result.module).startswith(b"ML\xefR")
    # merge: the lowered main becomes a private function of another module
    with mlir.make_ir_context() as ctx, mlir.ir.Location.unknown():
        dst = mlir.ir.Module.parse(
            "module {\n func.func private @f(%a: tensor<f32>) -> tensor<f32> {\n"
            " return %a : tensor<f32>\n }\n}"
        )
        src = mlir.ir.Module.parse(text)
        name = mlir.merge_mlir_modules(dst, "f", src)
        assert name == "f_1" and "func.func private @f_1" in mlir.module_to_string(dst)
    del ctx


def test_bindings_rule_inside_control_flow_and_nested_jit():
    def f(x):
        def body(c, xi):
            return c + bindings_p.bind(xi, xi, c), bindings_p.bind(c, c, xi)

        c, ys = lax.scan(body, 0.0, x)
        z = lax.cond(c > 1, lambda v: bindings_p.bind(v, v, v), lambda v: -v, c)
        w = funcgrad.jit(lambda v: bindings_p.bind(v, v, v) + bindings_p.bind(v, 2.0 * v, v))(x)
        return c, ys, z, w

    def ref(x):
        c, ys = 0.0, []
        for xi in x:
            c, y = c + (xi * xi + c), c * c + xi
            ys.append(y)
        z = c * c + c if c > 1 else -c
        return c, np.array(ys), z, x * x + x + 2 * x * x + x

    x = np.arange(4.0) / 3
    for got in (funcgrad.jit(f)(x), f(x)):
        for g, w in zip(got, ref(x)):
            np.testing.assert_allclose(g, w, rtol=1e-12)
    # the rules' operations inlined (as JAX's): the nested jit's function is the only private one
    text = funcgrad.jit(f).lower(x).as_text()
    assert text.count("func.func private") == 1, text


def test_jaxpr_subcomp_lower_jaxpr_to_fun_and_core_call_lowering_inside_a_rule():
    from jaxlib.mlir.dialects import func

    p = Primitive("test_mlir_subcomp")
    p.def_impl(lambda x: np.sin(x) * 3 + np.cos(x) + x)
    p.def_abstract_eval(_same_aval)

    def rule(ctx, x):
        zeros = np.zeros(ctx.avals_in[0].shape)
        sin3 = funcgrad.make_jaxpr(lambda v: fnp.sin(v) * 3.0)(zeros)
        (a,), _ = mlir.jaxpr_subcomp(ctx.module_context, sin3.jaxpr, None, mlir.TokenSet(), sin3.consts, x)
        fn = mlir.lower_jaxpr_to_fun(ctx.module_context, "cosfn", funcgrad.make_jaxpr(fnp.cos)(zeros))
        b = func.CallOp(fn, [x]).results[0]
        (c,) = mlir.core_call_lowering(
            ctx, x, name="ident", call_jaxpr=funcgrad.make_jaxpr(lambda v: v * 1.0)(zeros)
        )
        return [hlo.AddOp(hlo.AddOp(a, b), c).result]

    mlir.register_lowering(p, rule)
    x = np.arange(3.0)
    np.testing.assert_allclose(funcgrad.jit(p.bind)(x), np.sin(x) * 3 + np.cos(x) + x, rtol=1e-14)


def test_custom_call_rule_and_export_refusal_as_jaxs():
    # JAX's export guide: a primitive lowered by mlir.custom_call to a target without
    # compatibility guarantees is refused by export unless DisabledSafetyCheck names it.
    from funcgrad import export

    p = Primitive("test_mlir_custom_call_prim")
    p.def_abstract_eval(lambda x: x)
    mlir.register_lowering(
        p, lambda ctx, o: mlir.custom_call("my_new_prim", operands=[o], result_types=[o.type]).results
    )
    text = funcgrad.jit(p.bind).lower(np.float32(1)).as_text()
    assert 'stablehlo.custom_call @my_new_prim(%arg0) {api_version = 2 : i32, backend_config = ""}' in text
    with pytest.raises(ValueError, match="Cannot serialize code with custom calls whose targets have no"):
        export.export(funcgrad.jit(p.bind))(np.float32(1))
    checks = [export.DisabledSafetyCheck.custom_call("my_new_prim")]
    exp = export.export(funcgrad.jit(p.bind), disabled_checks=checks)(np.float32(1))
    assert "my_new_prim" in exp.mlir_module()


def test_register_lowering_for_an_unknown_platform_is_jax_error():
    """A platform no backend is named by (a typo) is refused at registration, in JAX's words."""
    with pytest.raises(NotImplementedError, match="for an unknown platform cpuu. Known platforms are: cpu, "):
        mlir.register_lowering(Primitive("typo_demo"), lambda ctx, x: [x], platform="cpuu")


def test_custom_call_rule_module_prints_as_jaxs():
    # export.md's new_prim example: the rule's custom call sits in @main, as JAX prints it
    jax = pytest.importorskip("jax")
    from jax._src import core as jcore
    from jax._src.interpreters import mlir as jmlir

    def module(lib_jit, prim_cls, mlir_mod):
        p = prim_cls("test_mlir_new_prim")
        p.def_abstract_eval(lambda x: x)
        mlir_mod.register_lowering(
            p, lambda ctx, o: mlir_mod.custom_call("my_new_prim", operands=[o], result_types=[o.type]).results
        )
        return str(lib_jit(p.bind).lower(np.float32(1.0)).compiler_ir())

    assert module(funcgrad.jit, Primitive, mlir) == module(jax.jit, jcore.Primitive, jmlir)
