"""Named axes on one device: vmap(axis_name=) gives collectives their meaning, unbound names are
NameErrors naming the axis and the names in scope, jitted and control-flow code inside a named
vmap, make_jaxpr(axis_env=), and the one-device corners of shardings, shard_map, pmap and config.
(Values, derivatives and transposes of each collective: tests/primitives/op_db/collectives.py; on 8 devices:
tests/surface/spmd/.)"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.sharding import AxisType, Mesh, NamedSharding, P, make_mesh


def vmap_i(f, **kw):
    return funcgrad.vmap(f, axis_name="i", **kw)


def test_unbound_axis_names_are_name_errors_naming_the_names_in_scope():
    with pytest.raises(
        NameError,
        match=r"unbound axis name: j\. To fix this, please call psum under `jax\.shard_map`\. "
        r"psum: The names in scope are \['i'\]",
    ):
        vmap_i(lambda x: lax.psum(x, "j"))(np.ones(3))
    with pytest.raises(NameError, match="unbound axis name: i. psum: No named axis is in scope"):
        lax.psum(1.0, "i")
    # (traced, JAX 0.10.2 says 'Found an unbound axis name: i. To fix this, please call psum
    # under `jax.shard_map`.' also with no name in scope; eagerly only 'unbound axis name: i')
    with pytest.raises(NameError, match=r"^Found an unbound axis name: i\. To fix this, please call psum"):
        funcgrad.jit(lambda x: lax.psum(x, "i"))(np.ones(3))
    with pytest.raises(NameError, match="unbound axis name: k. To fix this, please call axis_index"):
        funcgrad.jit(vmap_i(lambda x: x * lax.axis_index("k")))(np.ones(3))
    with pytest.raises(NameError, match="unbound axis name: q"):
        lax.axis_size("q")


def test_nested_names_and_tuples_of_names():
    x = np.arange(6.0).reshape(2, 3)
    f = funcgrad.vmap(vmap_i(lambda v: lax.psum(v, ("i", "j")) + 10 * lax.psum(v, "j")), axis_name="j")
    np.testing.assert_allclose(f(x), x.sum() + 10 * np.broadcast_to(x.sum(0), (2, 3)))
    idx = funcgrad.vmap(vmap_i(lambda v: lax.axis_index(("j", "i"))), axis_name="j")(x)
    np.testing.assert_array_equal(idx, np.arange(6).reshape(2, 3))
    size = funcgrad.vmap(vmap_i(lambda v: v * 0 + lax.axis_size(("i", "j"))), axis_name="j")(x)
    assert np.all(np.asarray(size) == 6)


def test_unbatched_operands_and_psum_of_one():
    x = np.arange(4.0)
    np.testing.assert_allclose(vmap_i(lambda v: lax.psum(1, "i") + 0 * v)(x), np.full(4, 4.0))
    np.testing.assert_allclose(vmap_i(lambda v, c: lax.psum(c, "i") * v, in_axes=(0, None))(x, 2.0), 8 * x)
    np.testing.assert_allclose(vmap_i(lambda v: lax.all_gather(7.0, "i") + 0 * v)(x), np.full((4, 4), 7.0))
    # An unbatched operand's psum is JAX's lax._const(x, n) * x: a weak scalar of the default type
    # stays weak (the zero gradient of an unused weak input, centred by pmean), an array is strong
    # (jax 0.10.2: True, True, False; funcgrad's constant was strong)
    w = fnp.stack([fnp.asarray(0.5), fnp.asarray(1.5)])  # (weak)
    weak = [
        vmap_i(lambda v: lax.pmean(fnp.zeros_like(v), "i"))(w).weak_type,
        vmap_i(lambda v: lax.psum(fnp.asarray(3), "i"))(np.arange(2)).weak_type,
        vmap_i(lambda v: lax.psum(fnp.full((2,), 0.5), "i"))(w).weak_type,
    ]
    assert weak == [True, True, False]


@pytest.mark.parametrize("x64", [True, False])
def test_psum_of_booleans_counts_them_in_int32(x64):
    # JAX's psum converts booleans to int32 first (in both modes); funcgrad summed them as bools.
    x = np.array([[0.5, -1.0], [2.0, 0.0], [1.0, 3.0]])
    with funcgrad.enable_x64(x64):
        count = vmap_i(lambda v: lax.psum(v > 0, "i"))(x)
        mean = vmap_i(lambda v: lax.pmean(v > 0, "i"))(x)
    assert count.dtype == np.int32 and count.tolist() == [[3, 1]] * 3
    np.testing.assert_allclose(mean, np.full((3, 2), [1.0, 1 / 3]))


def test_ppermute_over_an_empty_axis():
    # vmap over a size-0 axis: nothing to permute (a concatenate of no pieces raised; jax gives it)
    out = vmap_i(lambda v: lax.ppermute(v, "i", []) * v)(np.zeros((0, 2)))
    assert out.shape == (0, 2)


def test_jit_and_control_flow_inside_a_named_vmap():
    x = np.arange(4.0)
    f = funcgrad.jit(lambda v: v / lax.psum(v, "i"))
    np.testing.assert_allclose(vmap_i(f)(x + 1), (x + 1) / (x + 1).sum())
    # the jitted function's trace knows the axis size: another size retraces
    g = funcgrad.jit(lambda v: lax.all_gather(v, "i"))
    assert vmap_i(g)(x).shape == (4, 4) and vmap_i(g)(np.ones(2)).shape == (2, 2)
    # a jitted collective over unbatched operands still sees the axis
    h = funcgrad.jit(lambda c: lax.psum(c, "i"))
    np.testing.assert_allclose(vmap_i(lambda v: h(3.0) + 0 * v)(x), np.full(4, 12.0))
    loop = vmap_i(lambda v: lax.fori_loop(0, 3, lambda k, c: c + lax.psum(c, "i"), v))
    want = x.copy()
    for _ in range(3):
        want = want + want.sum()
    np.testing.assert_allclose(loop(x), want)
    cond = vmap_i(lambda v: lax.cond(v > 1, lambda u: lax.pmax(u, "i"), lambda u: lax.pmin(u, "i"), v))
    np.testing.assert_allclose(cond(x), [0.0, 0.0, 3.0, 3.0])


def test_grad_through_collectives_matches_jax_semantics():
    x = np.arange(3.0)
    # per-lane gradient of a psum: psum transposes to psum (as JAX's vmap and pmap)
    np.testing.assert_allclose(vmap_i(funcgrad.grad(lambda v: lax.psum(v, "i")))(x), [3.0, 3.0, 3.0])
    np.testing.assert_allclose(vmap_i(funcgrad.grad(lambda v: lax.pmean(v, "i")))(x), [1.0, 1.0, 1.0])
    # gradient of the whole vmapped function
    g = funcgrad.grad(lambda v: fnp.sum(vmap_i(lambda u: u * lax.psum(u, "i"))(v)))(x)
    np.testing.assert_allclose(g, 2 * x.sum() * np.ones(3))
    # pmax/pmin have no derivative in JAX (its error, vmapped or not, grad inside or outside); a
    # value not being differentiated passes
    for f in (
        lambda x: funcgrad.hessian(lambda v: fnp.sum(vmap_i(lambda u: lax.pmax(u, "i") * u)(v)))(x),
        lambda x: vmap_i(funcgrad.grad(lambda u: lax.pmin(u, "i") * u))(x),
        funcgrad.jit(lambda x: funcgrad.grad(lambda v: fnp.sum(vmap_i(lambda u: lax.pmin(u, "i"))(v)))(x)),
    ):
        with pytest.raises(NotImplementedError, match="Differentiation rule for 'pm(ax|in)' not implemented"):
            f(np.array([1.0, 3.0, 2.0]))
    g = vmap_i(funcgrad.grad(lambda u: lax.pmax(2.0, "i") * u))(x)
    np.testing.assert_allclose(g, [2.0, 2.0, 2.0])


def test_make_jaxpr_with_an_axis_env_and_the_jaxpr_of_a_named_vmap():
    closed = funcgrad.make_jaxpr(lambda x: lax.all_gather(x, "i", axis=0), axis_env=[("i", 4)])(np.ones(3))
    assert "all_gather" in str(closed) and closed.out_avals[0].shape == (4, 3)
    staged = funcgrad.make_jaxpr(vmap_i(lambda v: lax.psum(v, "i")))(np.ones(3))
    assert "psum" not in str(staged) and "reduce_sum" in str(staged)


def test_bad_arguments():
    # axis_index_groups work under shard_map and pmap; under vmap jax raises NotImplementedError too
    with pytest.raises(NotImplementedError, match="axis_index_groups is not supported under vmap"):
        vmap_i(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1]]))(np.ones(2))
    with pytest.raises(ValueError, match="must equal the axis size 3"):
        vmap_i(lambda v: lax.psum_scatter(v, "i"))(np.ones((3, 2)))
    with pytest.raises(ValueError, match="repeats a source or a destination"):
        vmap_i(lambda v: lax.ppermute(v, "i", [(0, 1), (0, 2)]))(np.ones(3))
    with pytest.raises(ValueError, match="permutation"):
        vmap_i(lambda v: lax.pshuffle(v, "i", [0, 0, 1]))(np.ones(3))


def test_one_device_mesh_shard_map_and_pmap():
    mesh = make_mesh((1,), ("x",))
    # (On an Explicit mesh a NumPy argument is typed replicated, so in_specs=P("x") would be
    # JAX's ValueError: the shard_map runs over the same device as an Auto mesh.)
    auto = make_mesh((1,), ("x",), (AxisType.Auto,))
    f = funcgrad.shard_map(
        lambda b: lax.psum(b, "x") * lax.axis_size("x"), mesh=auto, in_specs=P("x"), out_specs=P("x")
    )
    np.testing.assert_allclose(f(np.arange(4.0)), np.arange(4.0))
    np.testing.assert_allclose(
        funcgrad.grad(lambda v: fnp.sum(f(v) ** 2))(np.arange(4.0)), 2 * np.arange(4.0)
    )
    np.testing.assert_allclose(
        funcgrad.pmap(lambda v: lax.psum(v, "d"), axis_name="d")(np.ones((1, 2))), [[1.0, 1.0]]
    )
    with pytest.raises(ValueError, match="needs 2 devices but 1 are available"):
        funcgrad.pmap(lambda v: v)(np.ones(2))
    y = funcgrad.device_put(np.arange(6.0).reshape(2, 3), NamedSharding(mesh, P(None, "x")))
    assert y.sharding == NamedSharding(mesh, P(None, "x")) and np.asarray(y).sum() == 15.0
    assert str(mesh) == "Mesh('x': 1, axis_types=(Explicit,))"
    assert repr(mesh) == "Mesh(axis_sizes=(1,), axis_names=('x',), axis_types=(Explicit,))"  # as JAX's
    with pytest.raises(ValueError, match="one name per dimension"):
        Mesh(np.array(funcgrad.devices()), ("a", "b"))


def test_trace_state_clean_as_jax():
    # (JAX's core.trace_state_clean(), one function in funcgrad serving as_jax's core and set_mesh's
    # refusal: eager, under debug_nans' checking evaluator (a dispatch mode in JAX, so clean), and
    # not under shard_map, a named vmap or jvp)
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax._src import core as jax_core

    from funcgrad.kernel.batching import trace_state_clean  # (as_jax's core.trace_state_clean)

    def seen(lib, np_, clean):
        out = []

        def rec(x):
            out.append(clean())
            return x

        rec(1.0)
        lib.config.update("jax_debug_nans", True)
        try:
            rec(1.0)
        finally:
            lib.config.update("jax_debug_nans", False)
        mesh = lib.sharding.Mesh(lib.devices()[:1], ("i",))
        spec = lib.sharding.PartitionSpec("i")
        lib.shard_map(rec, mesh=mesh, in_specs=spec, out_specs=spec)(np_.ones(2))
        lib.vmap(rec, axis_name="i")(np_.ones(2))
        lib.jvp(rec, (1.0,), (1.0,))
        return out

    theirs = seen(jax, jnp, jax_core.trace_state_clean)
    assert theirs == [True, True, False, False, False]
    assert seen(funcgrad, fnp, trace_state_clean) == theirs


def test_config_and_distributed_refuse_too_late_or_bad_values():
    from funcgrad import config

    assert config.jax_enable_x64 is True
    assert config.read("jax_cpu_collectives_implementation") == "gloo"
    funcgrad.devices()  # the CPU backend exists now
    with pytest.raises(RuntimeError, match="must be set before the first computation"):
        config.update("jax_num_cpu_devices", 8)
    with pytest.raises(AttributeError, match="unknown flag 'jax_bogus'"):
        config.update("jax_bogus", 1)
    with pytest.raises(ValueError, match="coordinator_address"):
        funcgrad.distributed.initialize()
    with pytest.raises(RuntimeError, match="before any computation"):
        funcgrad.distributed.initialize("127.0.0.1:1234", 2, 0)
    assert not funcgrad.distributed.is_initialized()


@pytest.mark.slow
def test_num_cpu_devices_from_config_in_a_fresh_process():
    import subprocess
    import sys

    code = (
        "import funcgrad; funcgrad.config.update('jax_num_cpu_devices', 4); "
        "print(funcgrad.device_count(), funcgrad.local_device_count())"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "XLA_FLAGS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.split() == ["4", "4"], out.stderr


@pytest.mark.parametrize("split_axis, concat_axis, vmap_axis", [(0, 0, 0), (1, 0, 2), (0, 1, 1), (1, 1, 0)])
def test_all_to_all_over_two_vmapped_names_as_jax(split_axis, concat_axis, vmap_axis):
    # JAX's batching_test testAllToAllSplitAxis: the group is the product of the names (row-major);
    # the expected value is that test's own reference.
    x = np.arange(64).reshape(4, 4, 4)
    f = funcgrad.vmap(
        funcgrad.vmap(
            lambda v: funcgrad.lax.all_to_all(v, ("i", "j"), split_axis, concat_axis),
            in_axes=vmap_axis,
            axis_name="j",
        ),
        in_axes=vmap_axis,
        axis_name="i",
    )
    shape = [4, 4, 4]
    shape[vmap_axis : vmap_axis + 1] = (2, 2)
    y = np.asarray(f(x.reshape(shape))).reshape(4, 4, 4)
    s = split_axis + 1 if vmap_axis <= split_axis else split_axis
    np.testing.assert_array_equal(y, np.moveaxis(x, (vmap_axis, s), (concat_axis + 1, 0)))


@pytest.mark.parametrize("tiled", [False, True])
def test_psum_scatter_of_booleans_is_refused_as_jax(tiled):
    # (the lax-parameter fuzzer's collectives probe) JAX's TypeError in its words
    jax = pytest.importorskip("jax")
    x = np.ones((2, 2), bool)
    for T in (funcgrad, jax):
        with pytest.raises(TypeError, match="reduce_sum does not accept dtype bool"):
            T.vmap(
                lambda r, T=T: T.lax.psum_scatter(r, "i", scatter_dimension=0, tiled=tiled), axis_name="i"
            )(x)
