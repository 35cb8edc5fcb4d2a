"""jit(f).trace/lower take ShapeDtypeStructs and avals for arguments, as JAX's ahead-of-time API
(flax's summary tables lower modules over abstract parameters); calling still needs arrays; the
shape helpers read a ShapeDtypeStruct's shape as jax.numpy's do."""

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp


def test_lower_over_abstract_arguments_matches_jax_and_compiles():
    import jax

    def f(x, y):
        return fnp.tanh(x @ y) + 1 if isinstance(x, funcgrad.Array) else jax.numpy.tanh(x @ y) + 1

    x, y = np.ones((2, 3), np.float32), np.full((3, 4), 0.5, np.float32)
    jitted = funcgrad.jit(f)
    lowered = jitted.lower(
        funcgrad.ShapeDtypeStruct((2, 3), np.float32), funcgrad.core.ShapedArray((3, 4), np.float32)
    )
    want = jax.jit(f).lower(
        jax.ShapeDtypeStruct((2, 3), np.float32), jax.ShapeDtypeStruct((3, 4), np.float32)
    )
    assert (lowered.out_info.shape, lowered.out_info.dtype) == (want.out_info.shape, want.out_info.dtype)
    assert lowered.cost_analysis()["flops"] > 0
    np.testing.assert_allclose(
        np.asarray(lowered.compile()(x, y)), np.asarray(want.compile()(x, y)), rtol=1e-6
    )
    assert jitted._hits == 0 and float(jitted(x, y)[0, 0]) == pytest.approx(
        np.tanh(1.5) + 1
    )  # shares the trace
    assert jitted._misses == 1
    with pytest.raises(TypeError) as want_error:
        jax.jit(f)(jax.ShapeDtypeStruct((2, 3), np.float32), y)
    with pytest.raises(TypeError) as got_error:
        jitted(funcgrad.ShapeDtypeStruct((2, 3), np.float32), y)
    assert str(got_error.value).replace("funcgrad._aot", "jax") == str(want_error.value)


def test_shape_ndim_size_of_a_shape_dtype_struct():
    import jax

    s, js = funcgrad.ShapeDtypeStruct((2, 3), np.float32), jax.ShapeDtypeStruct((2, 3), np.float32)
    assert (fnp.shape(s), fnp.ndim(s), fnp.size(s), fnp.size(s, 1)) == (
        jax.numpy.shape(js),
        jax.numpy.ndim(js),
        js.size,
        3,
    )


def test_static_argnums_and_argnames_both_given_are_used_as_given():
    # As JAX: given both, argnums do not add names nor names add numbers (flax's lifted jit: its
    # wrapper's argument 0 static by number, the wrapped method's keyword by name).
    import jax

    def f(a, b, c=1):
        return b * c

    traced = []
    g = funcgrad.jit(lambda a, b, c=1: traced.append(1) or f(a, b, c), static_argnums=0, static_argnames="c")
    j = jax.jit(f, static_argnums=0, static_argnames="c")
    for c in (4.0, 5.0):  # c by position: dynamic, one trace
        assert float(g("key", 3.0, c)) == float(j("key", 3.0, c))
    assert len(traced) == 1
    assert float(g("key", 3.0, c=[2][0])) == 6.0 and len(traced) == 2  # c by keyword: static


def _aot_guide(lib, jnp):
    """JAX's ahead-of-time guide (docs/aot.md): a compiled function takes the dynamic arguments
    only, its static ones fixed at lowering; the wrong arguments are a TypeError."""

    def f(x, y):
        return 2 * x + y

    i32 = lib.ShapeDtypeStruct((), np.int32)
    out = [lib.jit(f, static_argnums=0).lower(7, 8).compile()(5)]
    out.append(lib.jit(f, static_argnums=0).trace(10, i32).lower().compile()(5))
    g = lib.jit(lambda a, b, c=1: a * b + c, static_argnames="c", donate_argnums=0)
    compiled = g.lower(jnp.ones(3, np.float32), np.float32(2.0), c=3).compile()
    out.append(compiled(jnp.ones(3, np.float32), np.float32(4.0)))
    with pytest.raises(TypeError, match="Function compiled with input pytree does not match"):
        compiled(jnp.ones(3, np.float32), np.float32(4.0), c=3)  # a static argument given again
    with pytest.raises(TypeError, match="Function compiled with input pytree does not match"):
        lib.jit(f, static_argnums=0).lower(7, 8).compile()(7, 5)
    return [np.asarray(o) for o in out]


def test_compiled_takes_the_dynamic_arguments_as_jaxs_aot_guide():
    import jax
    from jax._src import config as jax_config

    # The guide runs in JAX's default 32-bit mode, where a Python int matches an int32 argument;
    # the suite's oracle modules turn jax's 64-bit mode on for the process (at their import), where
    # jax refuses that call. jax's side is run in the guide's mode whatever ran before (scoped).
    with jax_config.enable_x64(False):
        want = _aot_guide(jax, jax.numpy)
    for a, b in zip(_aot_guide(funcgrad, fnp), want, strict=True):
        np.testing.assert_array_equal(a, b)
