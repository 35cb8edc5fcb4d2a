"""JAX's top-level utilities in funcgrad: typeof, named_scope/named_call (scopes recorded in the
staged equations), ensure_compile_time_eval, clear_caches, live_arrays, print_environment_info,
float0, and custom_gradient (checked against jax.custom_gradient)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp


def test_typeof():
    assert str(funcgrad.typeof(np.zeros((2, 3), np.float32))) == "float32[2,3]"  # as print(jax.typeof(x))
    assert funcgrad.typeof(1.0).weak_type
    seen = []
    funcgrad.jit(lambda x: seen.append(funcgrad.typeof(x)) or x)(np.arange(3))
    assert seen[0].shape == (3,) and seen[0].dtype == np.int64


def test_named_scopes_nest_and_show_in_jaxprs():
    def f(x):
        with funcgrad.named_scope("block"):
            y = fnp.sin(x)
            with funcgrad.named_scope("inner"):
                y = y * 2.0
        return funcgrad.named_call(fnp.exp, name="head")(y) + 1.0

    jaxpr = funcgrad.make_jaxpr(f)(1.0)
    scopes = [e.source_info.name_stack for e in jaxpr.eqns]
    assert scopes == ["block", "block/inner", "head", ""]
    text = jaxpr.pretty_print(name_stack=True)
    assert "# [block/inner]" in text and "# [head]" in text
    assert "[block]" not in str(jaxpr)  # plain printing is unchanged
    assert "# [block]\n" in jaxpr.pretty_print(source_info=True, name_stack=True)
    assert "[block]" not in jaxpr.pretty_print(source_info=True)
    # The scope is left on exit, also when the block raises.
    with pytest.raises(ZeroDivisionError), funcgrad.named_scope("x"):
        _ = 1 / 0
    assert funcgrad.make_jaxpr(fnp.sin)(1.0).eqns[0].source_info.name_stack == ""
    with pytest.raises(TypeError, match="string"), funcgrad.named_scope(3):
        pass


def test_named_call_keeps_the_function_and_default_name():
    def layer(x):
        return fnp.tanh(x)

    named = funcgrad.named_call(layer)
    assert named.__name__ == "layer" and float(named(0.0)) == 0.0
    assert funcgrad.make_jaxpr(named)(1.0).eqns[0].source_info.name_stack == "layer"
    assert float(funcgrad.grad(named)(0.0)) == 1.0


def test_named_scope_in_check_finite_errors():
    def f(x):
        with funcgrad.named_scope("loss"):
            return fnp.log(x)

    with pytest.raises(FloatingPointError) as info, funcgrad.debug_nans():
        funcgrad.jit(f)(-1.0)
    assert info.value.source_info.name_stack == "loss"  # (the message is JAX's one line)
    with pytest.raises(FloatingPointError, match=r"\[loss\]"):
        funcgrad.check_finite(funcgrad.jit(f))(-1.0)


def test_ensure_compile_time_eval():
    @funcgrad.jit
    def f(x):
        with funcgrad.ensure_compile_time_eval():
            y = fnp.sin(np.arange(3.0))
            n = int(fnp.sum(fnp.arange(4)))
        assert not isinstance(y, funcgrad.core.Tracer)
        return fnp.zeros(n) + x + fnp.sum(y)

    out = f(1.0)
    assert out.shape == (6,)
    np.testing.assert_allclose(np.asarray(out), 1.0 + np.sin(np.arange(3.0)).sum())

    # A traced operand is traced as outside the block (JAX 0.10's eager constant folding).
    def g(x):
        with funcgrad.ensure_compile_time_eval():
            return fnp.sin(x) + fnp.cos(np.float64(0.0))

    assert float(funcgrad.jit(g)(1.0)) == np.sin(1.0) + 1.0
    staged = [e.primitive.name for e in funcgrad.make_jaxpr(g)(1.0).eqns]
    assert "sin" in staged and "cos" not in staged, staged  # cos(0) was computed at trace time
    assert float(funcgrad.grad(g)(1.0)) == np.cos(1.0)


def test_clear_caches_and_live_arrays():
    f = funcgrad.jit(lambda x: x * 3)
    f(1.0)
    assert f.cache_info().currsize == 1
    funcgrad.clear_caches()
    assert f.cache_info().currsize == 0
    assert float(f(2.0)) == 6.0
    x = fnp.arange(5.0)
    assert any(a is x for a in funcgrad.live_arrays())
    assert any(a is x for a in funcgrad.live_arrays(funcgrad.default_backend()))
    on_cpu = funcgrad.jit(lambda v: v + 1, device=funcgrad.devices("cpu")[0])(x)
    assert any(a is on_cpu for a in funcgrad.live_arrays("cpu"))
    with pytest.raises(ValueError, match="backend"):
        funcgrad.live_arrays("tpu")
    # a donated argument is deleted, not live (as jax's list): waiting on every live array works
    donated = funcgrad.device_put(fnp.ones(3))
    funcgrad.jit(lambda v: v * 2, donate_argnums=0)(donated)
    assert donated.is_deleted() and not any(a is donated for a in funcgrad.live_arrays())
    funcgrad.block_until_ready(funcgrad.live_arrays())


def test_print_environment_info(capsys):
    # (JAX's api_test test_print_environment_info: its lines, in its layout, after funcgrad's own)
    import jax
    import jaxlib

    from funcgrad._utilities import JAX_API_VERSION

    text = funcgrad.print_environment_info(return_string=True)
    assert text.startswith(f"funcgrad: {funcgrad.__version__}\n")
    mine = text.splitlines()[1:]
    theirs = jax.print_environment_info(return_string=True).splitlines()
    assert [line.split(":")[0] for line in mine] == [line.split(":")[0] for line in theirs]
    for line in (
        f"jax:    {JAX_API_VERSION}",
        f"jaxlib: {jaxlib.__version__}",
        f"numpy:  {np.__version__}",
    ):
        assert line in mine and line.replace(JAX_API_VERSION, jax.__version__) in theirs
    assert funcgrad.print_environment_info() is None
    assert "device info" in capsys.readouterr().out


def test_float0_is_the_integer_tangent_dtype():
    assert funcgrad.float0 == funcgrad.dtypes.float0
    _, tangent = funcgrad.jvp(lambda n: n * 2, (np.int32(3),), (np.zeros((), funcgrad.float0),))
    assert np.asarray(tangent).dtype == funcgrad.float0


def _custom_gradient_pair(lib, np_mod):
    @lib.custom_gradient
    def f(x, y):
        z = np_mod.sin(x) * y
        return z, lambda ct: (ct * 100.0 * np_mod.cos(x), ct * z)

    @lib.custom_gradient
    def clip(x):
        return x, lambda g: (np_mod.clip(g, -1.0, 1.0),)

    @lib.custom_gradient
    def pytree(d):
        out = {"a": d["x"] * 2.0, "b": d["y"] ** 2}
        return out, lambda ct: ({"x": ct["a"] * 10.0, "y": ct["b"] * d["y"]},)

    return f, clip, pytree


@pytest.mark.slow
def test_custom_gradient_matches_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)
    if True:
        ours = _custom_gradient_pair(funcgrad, fnp)
        theirs = _custom_gradient_pair(jax, jnp)
        x, y = np.array([0.3, -1.2]), np.array([2.0, 0.5])

        def check(a, b):
            for u, v in zip(funcgrad.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
                np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-12)

        f1, clip1, tree1 = ours
        f2, clip2, tree2 = theirs
        loss1 = lambda x, y: fnp.sum(f1(x, y))  # noqa: E731
        loss2 = lambda x, y: jnp.sum(f2(x, y))  # noqa: E731
        check(funcgrad.grad(loss1, argnums=(0, 1))(x, y), jax.grad(loss2, argnums=(0, 1))(x, y))
        check(funcgrad.jit(funcgrad.grad(loss1))(x, y), jax.jit(jax.grad(loss2))(x, y))
        check(funcgrad.vmap(funcgrad.grad(f1))(x, y), jax.vmap(jax.grad(f2))(x, y))
        check(
            funcgrad.grad(lambda x: fnp.sum(clip1(x) * 5.0))(x),
            jax.grad(lambda x: jnp.sum(clip2(x) * 5.0))(x),
        )
        d = {"x": x, "y": y}
        check(
            funcgrad.grad(lambda d: fnp.sum(tree1(d)["a"] + tree1(d)["b"]))(d),
            jax.grad(lambda d: jnp.sum(tree2(d)["a"] + tree2(d)["b"]))(d),
        )
        np.testing.assert_allclose(np.asarray(f1(x, y)), np.asarray(f2(x, y)), rtol=1e-12)


def test_custom_gradient_rule_closing_over_an_outer_value_differentiates():
    def outer(a):
        @funcgrad.custom_gradient
        def k(x):
            return x * x, lambda g: (g * a * 10.0,)

        return funcgrad.grad(k)(2.0)

    assert float(outer(3.0)) == 30.0 and float(funcgrad.grad(outer)(3.0)) == 10.0


def test_custom_gradient_errors():
    bad = funcgrad.custom_gradient(lambda x: x)
    with pytest.raises(TypeError, match="pair"):
        funcgrad.grad(bad)(1.0)


@pytest.mark.slow
@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_fwd_and_bwd_match_jax_and_compile_once(argnums):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(0)
    x, w, ct = rng.random((4, 3)), rng.random((3, 2)), rng.random((4, 2))
    fwd, bwd = funcgrad.fwd_and_bwd(lambda x, w: fnp.tanh(x @ w), argnums)
    jfwd, jbwd = jax.fwd_and_bwd(lambda x, w: jax.numpy.tanh(x @ w), argnums)
    for step in range(3):
        y, res = fwd(x * step, w)
        jy, jres = jfwd(x * step, w)
        np.testing.assert_allclose(np.asarray(y), np.asarray(jy), rtol=1e-12)
        got, want = bwd(res, ct), jbwd(jres, ct)
        for g, e in zip(funcgrad.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-12)
    assert fwd.cache_info().misses == 1 and bwd.cache_info().misses == 1


def test_fwd_and_bwd_has_aux_and_unjitted():
    fwd, bwd = funcgrad.fwd_and_bwd(lambda x: (x**2, {"norm": fnp.sum(x)}), 0, has_aux=True, jitted=False)
    y, res, aux = fwd(np.arange(3.0))
    assert float(aux["norm"]) == 3.0 and bwd(res, np.ones(3)).tolist() == [0.0, 2.0, 4.0]
    # The residuals are a pytree: the values the backward pass keeps.
    assert [np.asarray(r).shape for r in funcgrad.tree_util.tree_leaves(res)] == [(3,)]
    with pytest.raises(ValueError, match="out of range"):
        funcgrad.fwd_and_bwd(lambda x: x, 2)[0](1.0)
