"""Small surface additions that JAX libraries (equinox, flax, optax) rely on, found by running them
through ``funcgrad.as_jax`` (issue 28): vmap passes unmapped non-array leaves through to the
function, as JAX does; ``funcgrad.lax`` exports the primitive objects under JAX's names;
``funcgrad.custom_derivatives`` exports its call primitives; ``funcgrad.experimental.layout``.
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.experimental import layout


def test_vmap_unmapped_leaf_may_be_a_function():
    # equinox vmaps a model whose activation is a leaf, with in_axes=None for the model
    model = {"w": fnp.array([2.0, 3.0]), "act": fnp.tanh}
    x = np.linspace(-1.0, 1.0, 4)
    got = funcgrad.vmap(lambda m, xi: m["act"](m["w"] * xi), in_axes=(None, 0))(model, x)
    want = np.stack([np.tanh(np.array([2.0, 3.0]) * xi) for xi in x])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # per-example gradients of such a model: vmap(grad) vs a loop of grads
    g = funcgrad.vmap(funcgrad.grad(lambda w, act, xi: act(w * xi).sum()), in_axes=(None, None, 0))
    per = g(model["w"], fnp.tanh, x)
    loop = np.stack([funcgrad.grad(lambda w, xi=xi: fnp.tanh(w * xi).sum())(model["w"]) for xi in x])
    np.testing.assert_allclose(per, loop, rtol=1e-12)


def test_vmap_mapped_leaf_must_still_be_an_array():
    with pytest.raises(TypeError, match=r"args\[0\] is a function"):
        funcgrad.vmap(lambda f, x: f(x), in_axes=(0, 0))(fnp.sin, fnp.arange(3.0))


def test_lax_primitive_objects_are_the_catalogs():
    from funcgrad.extend.core import primitives

    assert lax.stop_gradient_p is primitives.stop_gradient_p
    assert lax.scatter_add_p.name == "scatter-add"
    assert lax.add_p.bind(np.float64(1.5), np.float64(2.0)) == 3.5
    assert all(getattr(lax, n).name.replace("-", "_") + "_p" == n for n in lax.__all__ if n.endswith("_p"))


def test_custom_derivatives_call_primitives():
    from funcgrad import custom_derivatives as cd

    f = cd.custom_jvp(lambda x: fnp.sin(x))
    f.defjvps(lambda t, ans, x: 2.0 * t)
    jaxpr = funcgrad.make_jaxpr(f)(1.0)
    assert cd.custom_jvp_call_p in {e.primitive for e in jaxpr.eqns}
    assert cd.custom_vjp_call_p.name == "custom_vjp_call"


def test_layout_records():
    # (JAX's rules: a concrete layout needs a concrete sharding; XLA's default is (0, 1, ...))
    s = funcgrad.sharding.SingleDeviceSharding(funcgrad.devices()[0])
    fmt = layout.Format(layout.Layout((1, 0)), s)
    assert fmt == layout.Format(layout.Layout((1, 0)), s) and hash(fmt) == hash(
        layout.Format(layout.Layout((1, 0)), s)
    )
    with pytest.raises(ValueError, match="Sharding has to be concrete"):
        layout.Format(layout.Layout((1, 0)))
    assert repr(layout.Format(layout.Layout.AUTO)) == "Format(layout=AUTO, sharding=None)"
    assert layout.Layout((1, 0)).update(major_to_minor=(0, 1)).major_to_minor == (0, 1)
    x = np.ones((2, 3))
    assert layout.with_layout_constraint(x, layout.Layout((1, 0))) is x  # (a hint: no number changes)
    with pytest.raises(ValueError, match="rank of the value"):
        layout.with_layout_constraint(x, layout.Layout((0,)))


def test_dtypes_prng_key_and_extended_categories():
    # optax's canonicalize_key asks issubdtype(key.dtype, jax.dtypes.prng_key)
    from funcgrad import dtypes, random

    typed = random.key(0, impl="rbg")
    assert dtypes.issubdtype(typed.dtype, dtypes.prng_key) and dtypes.issubdtype(typed.dtype, dtypes.extended)
    assert not dtypes.issubdtype(typed.dtype, np.floating)
    for t in (np.float32, np.int32, np.uint32, np.bool_):
        assert not dtypes.issubdtype(t, dtypes.prng_key) and not dtypes.issubdtype(t, dtypes.extended)
    assert issubclass(dtypes.prng_key, dtypes.extended) and issubclass(dtypes.extended, np.generic)


def test_typed_keys_as_optax_canonicalize_key_sees_them():
    # optax's canonicalize_key keeps a key whose dtype is under prng_key and calls key(seed)
    # otherwise; as in JAX, key() of a key (typed or raw data) is refused
    from funcgrad import dtypes, random

    k = random.key(3)
    assert isinstance(k, funcgrad.Array) and dtypes.issubdtype(k.dtype, dtypes.prng_key)
    assert not dtypes.issubdtype(random.PRNGKey(3).dtype, dtypes.prng_key)
    for bad in (k, random.PRNGKey(3), np.zeros((3,), np.uint32)):
        with pytest.raises(TypeError, match="scalar seed"):
            random.key(bad)


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like"])
def test_like_functions_take_a_shape_dtype_struct(name):
    # optax's factorized init calls jnp.zeros_like on ShapeDtypeStructs, as jax allows
    spec = funcgrad.ShapeDtypeStruct((2, 3), np.float32)
    args = (spec, 2.5) if name == "full_like" else (spec,)
    out = getattr(fnp, name)(*args)
    assert out.shape == (2, 3) and out.dtype == np.float32
    if name != "empty_like":
        np.testing.assert_array_equal(out, {"zeros_like": 0.0, "ones_like": 1.0, "full_like": 2.5}[name])
    assert getattr(fnp, name)(*args, dtype=np.int32, shape=(4,)).dtype == np.int32
    with pytest.raises(TypeError):
        fnp.zeros_like(object())


def test_eval_shape_takes_an_abstract_value():
    # flax's ConvLocal asks eval_shape about a kernel given as a ShapedArray, as jax allows
    from funcgrad.core import ShapedArray

    out = funcgrad.eval_shape(lambda x, w: x @ w, np.ones((2, 3)), ShapedArray((3, 5), np.float32))
    assert out.shape == (2, 5) and out.dtype == np.float64


def test_eval_shape_of_a_function_returning_structs_as_jax():
    # lineax's structure_equal asks eval_shape about the result of another eval_shape
    import jax

    def f(mod):
        s = mod.ShapeDtypeStruct((2,), np.float32)
        return lambda: {"s": s, "y": mod.numpy.ones((3,), np.int32) * 2, "t": (s, s)}

    ours, theirs = funcgrad.eval_shape(f(funcgrad)), jax.eval_shape(f(jax))
    assert str(ours) == str(theirs)
    assert ours["t"][0] == funcgrad.ShapeDtypeStruct((2,), np.float32)


def test_abstract_entry_points_take_avals_and_structs_as_jax():
    # equinox's noinline/filter_primitive transposes with ShapedArrays, its closure_convert and
    # optax's init(ShapeDtypeStruct) ask result_type/iscomplexobj about structs: compare with jax.
    import jax

    from funcgrad.core import ShapedArray

    f = lambda x, y: (3.0 * x + y.sum()).astype(np.float32)  # noqa: E731
    ours = (ShapedArray((2,), np.float32), funcgrad.ShapeDtypeStruct((3,), np.float32))
    theirs = (jax.core.ShapedArray((2,), np.float32), jax.ShapeDtypeStruct((3,), np.float32))
    assert str(funcgrad.make_jaxpr(f)(*ours)) == str(jax.make_jaxpr(f)(*theirs))
    assert str(funcgrad.eval_shape(f, *ours)) == str(jax.eval_shape(f, *theirs))
    t = funcgrad.linear_transpose(lambda x: 3.0 * x, ShapedArray((2,), np.float32))
    want = jax.linear_transpose(lambda x: 3.0 * x, jax.core.ShapedArray((2,), np.float32))
    (got,), (exp,) = t(np.ones(2, np.float32)), want(np.ones(2, np.float32))
    assert got.dtype == exp.dtype and np.array_equal(got, exp)
    for dt in (np.float32, np.int16, np.complex64):
        ours, theirs = funcgrad.ShapeDtypeStruct((2,), dt), jax.ShapeDtypeStruct((2,), dt)
        assert fnp.result_type(ours, 2) == jax.numpy.result_type(theirs, 2)
        assert fnp.iscomplexobj(ours) == jax.numpy.iscomplexobj(theirs)
    assert fnp.iscomplexobj(None) is jax.numpy.iscomplexobj(None) is False
    # optax asserts JAX's message for shapes that do not broadcast
    for bs in (lax.broadcast_shapes, fnp.broadcast_shapes):
        with pytest.raises(
            ValueError, match=r"^Incompatible shapes for broadcasting: shapes=\[\(2,\), \(3,\)\]$"
        ):
            bs((2,), (3,))


def test_jvp_refuses_a_tangent_of_another_kind_as_jax():
    # equinox's filter_jvp test passes an integer tangent for a float primal and expects TypeError
    import jax

    f = lambda x: 2.0 * x  # noqa: E731
    for bad in (fnp.array(5), 5):
        with pytest.raises(TypeError):
            jax.jvp(f, (jax.numpy.array(1.0),), (bad,))
        with pytest.raises(TypeError, match="dtypes must be equal.*got tangent dtype int64"):
            funcgrad.jvp(f, (fnp.array(1.0),), (bad,))
    # a Python float's (weak) tangent of a float primal is taken, at the primal's width
    out = funcgrad.jvp(f, (fnp.array(1.0, np.float32),), (1.0,))
    assert [o.dtype for o in out] == [np.float32, np.float32] and float(out[1]) == 2.0


def test_with_path_is_leaf_takes_the_node_unless_asked():
    # optax and flax pass a one-argument is_leaf to tree_*_with_path, as jax's API defines it
    import jax.tree_util as jtu

    from funcgrad import tree_util as ftu

    tree = {"a": (1, 2), "b": [3, {"c": 4}]}
    node = lambda x: isinstance(x, tuple)  # noqa: E731
    with_path = lambda p, x: len(p) == 2  # noqa: E731
    for name in ("tree_flatten_with_path", "tree_leaves_with_path"):
        got, want = getattr(ftu, name)(tree, is_leaf=node), getattr(jtu, name)(tree, is_leaf=node)
        assert str(got) == str(want)
        kw = dict(is_leaf=with_path, is_leaf_takes_path=True)
        assert str(getattr(ftu, name)(tree, **kw)) == str(getattr(jtu, name)(tree, **kw))
    f = lambda p, x: len(p)  # noqa: E731
    assert ftu.tree_map_with_path(f, tree, is_leaf=node) == jtu.tree_map_with_path(f, tree, is_leaf=node)


def test_linearize_function_is_a_pytree_of_residuals():
    # As JAX's (a tree_util.Partial): equinox's checkpointed while_loop returns it from jit/vmap
    x = np.linspace(0.1, 1.0, 3)
    y, f_jvp = funcgrad.linearize(fnp.sin, x)
    assert isinstance(f_jvp, funcgrad.tree_util.Partial) and len(funcgrad.tree_util.tree_leaves(f_jvp)) >= 1
    out, f2 = funcgrad.jit(funcgrad.vmap(lambda v: funcgrad.linearize(fnp.sin, v)))(x)
    np.testing.assert_allclose(out, np.sin(x), rtol=1e-15)
    # vmapped residuals, one tangent each: applied under vmap (called directly with a batched tangent it
    # raises JAX's "tangent values inconsistent with the original primal values", as jax's does)
    np.testing.assert_allclose(funcgrad.vmap(lambda f, t: f(t))(f2, np.ones(3)), np.cos(x), rtol=1e-15)
    with pytest.raises(ValueError, match="tangent values inconsistent with the original primal values"):
        f2(np.ones(3))
    np.testing.assert_allclose(
        funcgrad.jit(lambda f, t: f(t))(f_jvp, 2 * np.ones(3)), 2 * np.cos(x), rtol=1e-15
    )


def test_custom_vjp_symbolic_zeros_and_none_cotangents_as_jax():
    # equinox's filter_custom_vjp: an integer argument is never perturbed; a bwd may return None
    # for a subtree, also where the argument itself holds a None (equinox's partitioned trees)
    import jax

    seen = {}
    for lib in (funcgrad, jax):

        @lib.custom_vjp
        def f(x, n):
            return x[0] * n

        def fwd(x, n, name=lib.__name__):
            seen[name] = (x[0].perturbed, x[1], n.perturbed)
            return x[0].value * n.value, n.value

        def bwd(n, g):
            return ((g * n, None), None)

        f.defvjp(fwd, bwd, symbolic_zeros=True)
        grads = lib.grad(lambda a: f((a, None), 3))(2.0)
        assert float(grads) == 3.0
    assert seen["funcgrad"] == seen["jax"] == (True, None, False)


def test_bfloat16_is_the_scalar_type_and_survives_save_load():
    # equinox's serialisation: isinstance(x, jax.dtypes.bfloat16), then jnp.save/jnp.load
    import io

    import jax

    assert funcgrad.dtypes.bfloat16 is jax.dtypes.bfloat16 and isinstance(
        funcgrad.dtypes.bfloat16(1.5), type(jax.dtypes.bfloat16(1.5))
    )
    for lib in (fnp, jax.numpy):
        buf = io.BytesIO()
        lib.save(buf, lib.asarray(np.array([1.5, -2.0], jax.dtypes.bfloat16)))
        buf.seek(0)
        out = lib.load(buf)
        assert out.dtype == np.dtype(jax.dtypes.bfloat16) and out.tolist() == [1.5, -2.0]


def test_cond_and_switch_take_the_older_operand_keyword_as_jax():
    # optax's schedules and transforms call lax.cond(pred, f, g, operand=x)
    import jax

    for lib in (lax, jax.lax):
        assert float(lib.cond(True, lambda x: x * 2.0, lambda x: x, operand=3.0)) == 6.0
        assert float(lib.switch(1, [lambda x: x, lambda x: -x], operand=2.0)) == -2.0
        with pytest.raises(TypeError, match="if 'operand' keyword is passed then no positional operands"):
            lib.cond(True, lambda x: x, lambda x: x, 1.0, operand=2.0)
    g = funcgrad.grad(lambda x: lax.cond(x > 0, lambda y: y * y, lambda y: -y, operand=x))
    assert float(g(3.0)) == 6.0


def test_transformations_wrap_a_callable_whose_name_is_not_a_string():
    # equinox issue 1172: jax.vmap(module) where the Module instance's __name__ is no str
    class Odd:
        __name__ = None

        def __call__(self, x):
            return 2.0 * x

    x = np.arange(3.0)
    np.testing.assert_array_equal(funcgrad.vmap(Odd())(x), 2.0 * x)
    assert float(funcgrad.grad(Odd())(1.0)) == 2.0


def test_pmap_lowers_and_compiles_ahead_of_time():
    # equinox's filter_pmap(f).lower(x, y).compile(): JAX's pmap(f).lower
    f = funcgrad.pmap(lambda x, y: 2.0 * x + y, in_axes=(0, None))
    x = np.array([3.0])
    lowered = f.lower(x, 4.0)
    assert "func.func" in lowered.as_text()
    np.testing.assert_array_equal(lowered.compile()(x, 4.0), f(x, 4.0))
    np.testing.assert_array_equal(f(x, 4.0), [10.0])


def test_matmul_with_a_vector_is_one_dot_general_as_jax():
    # equinox counts the primitives of an MLP's jaxpr: matrix @ vector is one dot_general in JAX
    import jax

    for sa, sb in (((2, 3), (3,)), ((3,), (3, 4)), ((3,), (3,)), ((5, 2, 3), (3,)), ((3,), (5, 3, 4))):
        a, b = np.ones(sa, np.float32), np.ones(sb, np.float32)
        ours = [e.primitive.name for e in funcgrad.make_jaxpr(fnp.matmul)(a, b).jaxpr.eqns]
        theirs = [e.primitive.name for e in jax.make_jaxpr(jax.numpy.matmul)(a, b).jaxpr.eqns]
        assert ours == theirs == ["dot_general"], (sa, sb, ours, theirs)
        np.testing.assert_array_equal(fnp.matmul(a, b), np.matmul(a, b))


def test_grad_of_logsumexp_with_a_mask_as_jax():
    # optax's softmax_cross_entropy(where=mask) under grad: the mask escaped its trace
    import jax

    x = np.array([[0.3, -1.2, 2.0], [1.0, 0.5, -0.7]])
    m = np.array([[True, False, True], [True, True, False]])
    ours = funcgrad.grad(lambda v: fnp.sum(funcgrad.nn.logsumexp(v, axis=-1, where=m)))(x)
    theirs = jax.grad(lambda v: jax.numpy.sum(jax.nn.logsumexp(v, axis=-1, where=m)))(x)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(ours)[~m], 0.0)


def test_a_jitted_function_has_the_signature_of_its_function_as_jax():
    # chex's fake_pmap reads inspect.signature(jitted, follow_wrapped=False)
    import inspect

    import jax

    def f(x, y=2, *, z):
        return x

    for follow in (True, False):
        got = inspect.signature(funcgrad.jit(f), follow_wrapped=follow)
        assert got == inspect.signature(jax.jit(f), follow_wrapped=follow) == inspect.signature(f)


def test_ordered_and_default_dicts_are_pytree_nodes_as_jax():
    # numpyro ravels OrderedDicts of parameters (HMC's momentum generator)
    import collections

    import jax

    from funcgrad.flatten_util import ravel_pytree

    trees = [collections.OrderedDict(b=1.0, a=[2.0, 3.0]), collections.defaultdict(list, b=1.0, a=2.0)]
    for tree in trees:
        for name in ("tree_structure", "tree_leaves", "tree_flatten_with_path"):
            ours, theirs = getattr(funcgrad.tree_util, name), getattr(jax.tree_util, name)
            assert str(ours(tree)) == str(theirs(tree))
        doubled = funcgrad.tree_util.tree_map(lambda x: x, tree)
        assert type(doubled) is type(tree) and doubled == tree
        assert list(doubled) == list(jax.tree_util.tree_map(lambda x: x, tree))  # (key order)
    assert ravel_pytree(trees[0])[0].tolist() == [1.0, 2.0, 3.0]
    assert trees[1].default_factory is funcgrad.tree_util.tree_map(lambda x: x, trees[1]).default_factory


def test_a_missing_backend_is_named_as_jax_names_it():
    # chex's assert_devices_available matches "(failed to initialize)|(Unknown backend)"
    import jax

    for platform in ("tpu", "no_such_platform"):
        with pytest.raises(RuntimeError, match="(failed to initialize)|(Unknown backend)"):
            jax.devices(platform)
        with pytest.raises(RuntimeError, match="Unknown backend 'no_such_platform|Unknown backend 'tpu"):
            funcgrad.devices(platform)


def test_enable_custom_prng_is_a_context_manager_and_decorator_as_jax():
    # numpyro's test_distributions decorates a test with @jax.enable_custom_prng()
    import jax

    for lib in (funcgrad, jax):

        @lib.enable_custom_prng()
        def inside(lib=lib):
            return bool(lib.config.jax_enable_custom_prng)

        assert inside() is True and bool(lib.config.jax_enable_custom_prng) is False


def test_the_var_method_under_every_transformation_as_jax():
    # a staging/recording tracer's IR variable was its attribute `var`, hiding the array method
    # x.var() under jit, eager grad and cond (blackjax's diagnostics: "'Var' object is not callable")
    import jax

    x = np.arange(6.0).reshape(2, 3)
    for lib in (funcgrad, jax):
        f = lambda v: v.var(axis=0, ddof=1).sum() + v.std()  # noqa: E731
        got = [lib.jit(f)(x), lib.grad(f)(x), lib.vmap(f)(x), lib.lax.cond(True, f, f, x)]
        if lib is funcgrad:
            ours = got
    for a, b in zip(ours, got):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def test_iscomplexobj_of_a_typed_key_as_jax():
    # diffrax's diffeqsolve asks iscomplexobj of every leaf, a VirtualBrownianTree's key included
    import jax

    assert fnp.iscomplexobj(funcgrad.random.key(0)) is jax.numpy.iscomplexobj(jax.random.key(0)) is False
    assert not funcgrad.jit(lambda k: fnp.iscomplexobj(k))(funcgrad.random.key(0))


def test_core_pytype_aval_mappings_as_jax():
    # TensorFlow Probability's JAX substrate (rlax, distrax) maps its array proxy to ndarray's entry
    # of jax.core.pytype_aval_mappings at import; the entries give an aval of the value's type.
    jax = pytest.importorskip("jax")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (deprecated in JAX, still there)
        jax_map = jax.core.pytype_aval_mappings
    for value in (np.ones((2, 3), np.float32), True, np.int16(3)):  # (no 64-bit: jax runs in x32 here)
        got = funcgrad.core.pytype_aval_mappings[type(value)](value)
        want = jax_map[type(value)](value)
        assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype, want.weak_type)


def test_typing_array_like_has_jax_members():
    # jaxtyping builds one annotation per member of jax.typing.ArrayLike (Float32[ArrayLike, ""]); a
    # traced value is an Array, so the union has JAX's members and no Tracer of its own.
    import typing

    jax = pytest.importorskip("jax")
    got = typing.get_args(funcgrad.typing.ArrayLike)
    want = typing.get_args(jax.typing.ArrayLike)
    assert got[0] is funcgrad.Array and want[0] is jax.Array  # (the public Array type)
    assert [t.__name__ for t in got[1:]] == [t.__name__ for t in want[1:]]
    assert funcgrad.jit(lambda x: isinstance(x, typing.get_args(funcgrad.typing.ArrayLike)))(1.0)
