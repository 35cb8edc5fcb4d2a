"""shard_map and pmap on 8 devices: JAX's documented examples, composition with jit, grad and vmap,
replication checks (check_vma) and errors."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.sharding import AxisType, NamedSharding, P, make_mesh
from funcgrad.testing import check_grads

MESH = make_mesh((8,), ("x",), (AxisType.Auto,))  # the Auto mode: XLA decides
MESH2 = make_mesh((4, 2), ("x", "y"), (AxisType.Auto,) * 2)


def test_the_shard_map_tutorial_matmul():
    # JAX's shard_map tutorial: a (8, 16) @ (16, 4) matmul, rows over x, contraction over y
    a = np.arange(8 * 16.0).reshape(8, 16)
    b = np.arange(16 * 4.0).reshape(16, 4)

    @funcgrad.jit
    def matmul_basic(a, b):
        @funcgrad.shard_map(mesh=MESH2, in_specs=(P("x", "y"), P("y", None)), out_specs=P("x", None))
        def inner(a_block, b_block):
            assert a_block.shape == (2, 8) and b_block.shape == (8, 4)
            return lax.psum(a_block @ b_block, "y")

        return inner(a, b)

    c = matmul_basic(a, b)
    np.testing.assert_allclose(c, a @ b)
    assert c.sharding == NamedSharding(MESH2, P("x", None))
    text = matmul_basic.lower(a, b).as_text()
    assert "sdy.manual_computation" in text and "stablehlo.all_reduce" in text


def test_blocks_and_out_specs():
    x = np.arange(16.0)
    f = funcgrad.shard_map(
        lambda b: b * (lax.axis_index("x") + 1), mesh=MESH, in_specs=P("x"), out_specs=P("x")
    )
    np.testing.assert_allclose(f(x), x * np.repeat(np.arange(1, 9), 2))
    total = funcgrad.shard_map(lambda b: lax.psum(fnp.sum(b), "x"), mesh=MESH, in_specs=P("x"), out_specs=P())
    assert float(total(x)) == x.sum()
    # out_specs naming an axis concatenates the (equal) blocks of every device
    rep = funcgrad.shard_map(lambda b: lax.psum(b, "x"), mesh=MESH, in_specs=P("x"), out_specs=P("x"))
    np.testing.assert_allclose(rep(x), np.tile(x.reshape(8, 2).sum(0), 8))


def test_data_parallel_loss_and_gradient_equal_the_unsharded_ones(rng):
    # JAX's shard_map tutorial, "data parallelism": the loss of a sharded batch, grad outside
    params = [
        (rng.standard_normal((6, 5)), rng.standard_normal(5)),
        (rng.standard_normal((5, 2)), np.zeros(2)),
    ]
    x, y = rng.standard_normal((32, 6)), rng.standard_normal((32, 2))

    def predict(params, inputs):
        for w, b in params:
            inputs = fnp.tanh(inputs @ w + b)
        return inputs

    def loss(params, batch):
        inputs, targets = batch
        return fnp.mean(fnp.sum((predict(params, inputs) - targets) ** 2, axis=-1))

    @funcgrad.shard_map(mesh=MESH, in_specs=(P(), P("x")), out_specs=P())
    def loss_dp(params, batch):
        return lax.pmean(loss(params, batch), "x")

    np.testing.assert_allclose(funcgrad.jit(loss_dp)(params, (x, y)), loss(params, (x, y)), rtol=1e-12)
    g_dp = funcgrad.jit(funcgrad.grad(loss_dp))(params, (x, y))
    g = funcgrad.grad(loss)(params, (x, y))
    for p, q in zip(funcgrad.tree_util.tree_leaves(g_dp), funcgrad.tree_util.tree_leaves(g)):
        np.testing.assert_allclose(p, q, rtol=1e-10, atol=1e-12)
    # eagerly (no jit) too, and forward mode
    for p, q in zip(
        funcgrad.tree_util.tree_leaves(funcgrad.grad(loss_dp)(params, (x, y))),
        funcgrad.tree_util.tree_leaves(g),
    ):
        np.testing.assert_allclose(p, q, rtol=1e-10, atol=1e-12)
    check_grads(
        lambda w: loss_dp([(w, params[0][1]), params[1]], (x, y)),
        (params[0][0],),
        order=1,
        modes=("fwd", "rev"),
    )


def test_gradient_of_a_replicated_input_used_without_collectives():
    # an input left whole over the mesh is broadcast: its cotangent is the psum of the devices'
    w = 1.5
    f = funcgrad.shard_map(lambda w, b: b * w, mesh=MESH, in_specs=(P(), P("x")), out_specs=P("x"))
    x = np.arange(8.0)
    assert float(funcgrad.grad(lambda w: fnp.sum(f(w, x)))(w)) == x.sum()
    g = funcgrad.shard_map(lambda w: w * 2, mesh=MESH, in_specs=P(), out_specs=P())
    assert float(funcgrad.grad(g)(w)) == 2.0


def test_vmap_of_shard_map_and_shard_map_of_vmap(rng):
    x = rng.standard_normal((3, 16, 2))
    f = funcgrad.shard_map(lambda b: lax.psum(b, "x"), mesh=MESH, in_specs=P("x"), out_specs=P())
    np.testing.assert_allclose(funcgrad.vmap(f)(x), x.reshape(3, 8, 2, 2).sum(1))
    z = rng.standard_normal((16, 5))
    np.testing.assert_allclose(funcgrad.vmap(f, in_axes=1, out_axes=1)(z), z.reshape(8, 2, 5).sum(0))
    g = funcgrad.shard_map(
        funcgrad.vmap(lambda r: lax.psum(r, "x")), mesh=MESH, in_specs=P(None, "x"), out_specs=P()
    )
    np.testing.assert_allclose(g(x[0].T), x[0].T.reshape(2, 8, 2).sum(1))
    jg = funcgrad.jit(funcgrad.vmap(funcgrad.grad(lambda b: fnp.sum(f(b) ** 2))))(x)
    want = np.stack([2 * np.tile(xi.reshape(8, 2, 2).sum(0), (8, 1)) for xi in x])
    np.testing.assert_allclose(jg, want)


def test_check_vma_refuses_an_output_that_differs_between_devices():
    with pytest.raises(ValueError, match="could not infer replication"):
        funcgrad.shard_map(lambda b: b, mesh=MESH, in_specs=P("x"), out_specs=P())(np.arange(8.0))
    with pytest.raises(ValueError, match="could not infer replication"):
        funcgrad.shard_map(lambda b: b * lax.axis_index("x"), mesh=MESH, in_specs=P(), out_specs=P())(1.0)
    # check_vma=False: the output is any device's block (device 0's here)
    out = funcgrad.shard_map(lambda b: b, mesh=MESH, in_specs=P("x"), out_specs=P(), check_vma=False)(
        np.arange(8.0)
    )
    assert np.asarray(out).tolist() == [0.0]


def _out_vma_errors(lib, np_, mesh):
    P = lib.sharding.PartitionSpec  # noqa: N806 (each library's own)
    cases = [
        (lambda b: (b * 2, b), (P("x"), P())),  # two bad outputs: eagerly JAX names the first only
        (lambda b: {"a": lib.lax.psum(b, "x"), "b": b}, {"a": P("y"), "b": P("y")}),
    ]
    texts = []
    for k, (f, out_specs) in enumerate(cases):
        for wrap in (lambda g: g, lib.jit)[: 2 - k]:  # (staged once: its words were JAX's already)
            g = lib.shard_map(f, mesh=mesh, in_specs=P("x", "y"), out_specs=out_specs)
            with pytest.raises(ValueError) as e:
                wrap(g)(np_.arange(8.0).reshape(4, 2))
            texts.append(str(e.value))
    return texts


def test_check_vma_refusal_in_jaxs_words_eagerly_and_staged():
    # shard_map.md: eagerly JAX checks each output as it moves it into place, through a shard_map
    # of its helper '_rem_singleton' (the name its message gives), one output at a time; under jit
    # the user's function with every bad output's path
    jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
    theirs = _out_vma_errors(
        jax, jax.numpy, jax.make_mesh((4, 2), ("x", "y"), (jax.sharding.AxisType.Auto,) * 2)
    )
    assert _out_vma_errors(funcgrad, fnp, MESH2) == theirs


def test_shard_map_errors():
    with pytest.raises(ValueError, match="not divisible by 8"):
        funcgrad.shard_map(lambda b: b, mesh=MESH, in_specs=P("x"), out_specs=P("x"))(np.ones(12))
    with pytest.raises(ValueError, match="which the mesh lacks"):
        funcgrad.shard_map(lambda b: b, mesh=MESH, in_specs=P("z"), out_specs=P("x"))(np.ones(8))
    with pytest.raises(NameError, match="unbound axis name: z"):
        funcgrad.shard_map(lambda b: lax.psum(b, "z"), mesh=MESH, in_specs=P("x"), out_specs=P("x"))(
            np.ones(8)
        )
    with pytest.raises(ValueError, match="no mesh"):
        funcgrad.shard_map(lambda b: b, in_specs=P("x"), out_specs=P("x"))(np.ones(8))
    with MESH:
        assert funcgrad.shard_map(lambda b: b + 1, in_specs=P("x"), out_specs=P("x"))(np.ones(8)).shape == (
            8,
        )


def test_pmap_basics():
    x = np.arange(8.0)
    out = funcgrad.pmap(lambda v: v / lax.psum(v, "i"), axis_name="i")(x + 1)
    np.testing.assert_allclose(out, (x + 1) / (x + 1).sum())
    assert out.sharding.num_devices == 8
    two = funcgrad.pmap(lambda a, b: a @ b, in_axes=(0, None))(np.ones((4, 3, 2)), np.ones((2, 5)))
    assert two.shape == (4, 3, 5)
    moved = funcgrad.pmap(lambda a: a * 2, in_axes=1, out_axes=1)(np.ones((3, 4)))
    assert moved.shape == (3, 4)
    static = funcgrad.pmap(lambda a, n: a * n, static_broadcasted_argnums=1)(np.ones(2), 3)
    np.testing.assert_allclose(static, [3.0, 3.0])
    idx = funcgrad.pmap(lambda a: a + lax.axis_index("i"), axis_name="i")(np.zeros(8))
    np.testing.assert_allclose(idx, np.arange(8))
    gathered = funcgrad.pmap(lambda a: lax.all_gather(a, "i"), axis_name="i")(x)
    np.testing.assert_allclose(gathered, np.tile(x, (8, 1)))
    with pytest.raises(ValueError, match="needs 9 devices"):
        funcgrad.pmap(lambda a: a)(np.ones(9))


def test_pmap_of_grad_and_grad_of_pmap_like_jax():
    x = np.arange(8.0)
    # as in JAX's pmap, psum transposes to psum: each device's gradient of its own output
    g = funcgrad.pmap(funcgrad.grad(lambda v: lax.psum(v**2, "i")), axis_name="i")(x)
    np.testing.assert_allclose(g, 2 * x * 8)
    # the classic data-parallel update: local gradients, then pmean
    w = np.ones(3)
    xs = np.arange(8 * 5 * 3.0).reshape(8, 5, 3) / 100

    def update(w, xb):
        grads = funcgrad.grad(lambda w: fnp.mean((xb @ w) ** 2))(w)
        return w - 0.1 * lax.pmean(grads, "batch")

    new = funcgrad.pmap(update, axis_name="batch", in_axes=(None, 0))(w, xs)
    full = w - 0.1 * funcgrad.grad(lambda w: fnp.mean((xs.reshape(40, 3) @ w) ** 2))(w)
    np.testing.assert_allclose(new, np.tile(full, (8, 1)))
    gp = funcgrad.grad(
        lambda v: fnp.sum(funcgrad.pmap(lambda y: fnp.sin(y) * lax.axis_index("i"), axis_name="i")(v))
    )(x)
    np.testing.assert_allclose(gp, np.cos(x) * np.arange(8))


def test_vmap_and_jit_compose_with_pmap():
    out = funcgrad.vmap(funcgrad.pmap(lambda y: lax.psum(y, "i"), axis_name="i"))(np.ones((3, 8)))
    np.testing.assert_allclose(out, np.full((3, 8), 8.0))
    inner = funcgrad.pmap(
        funcgrad.vmap(lambda y: lax.psum(y, "i") + lax.psum(y, "v"), axis_name="v"), axis_name="i"
    )
    np.testing.assert_allclose(inner(np.ones((8, 3))), np.full((8, 3), 11.0))
    jitted = funcgrad.jit(funcgrad.pmap(lambda y: y * 2))
    np.testing.assert_allclose(jitted(np.arange(4.0)), np.arange(4.0) * 2)


def test_gradients_inside_a_checked_shard_map_mean_what_they_mean_in_jax():
    # jax 0.10.2 (check_vma=True) gives these numbers; with check_vma=False, pmap's
    x = np.arange(8.0)

    def mean_loss(w, xb):
        return funcgrad.grad(lambda w: lax.pmean(fnp.sum(w * xb), "x"))(w)[None]

    def local_loss(w, xb):
        return funcgrad.grad(lambda w: fnp.sum(w * xb))(w)

    def psum_inside(xb):
        return funcgrad.grad(lambda v: lax.psum(v**2, "x").sum())(xb)

    def run(f, in_specs, out_specs, check, *args):
        return np.asarray(
            funcgrad.shard_map(f, mesh=MESH, in_specs=in_specs, out_specs=out_specs, check_vma=check)(*args)
        )

    np.testing.assert_allclose(run(mean_loss, (P(), P("x")), P("x"), True, 1.0, x), np.full(8, 3.5))
    np.testing.assert_allclose(run(mean_loss, (P(), P("x")), P("x"), False, 1.0, x), x)
    assert float(run(local_loss, (P(), P("x")), P(), True, 1.0, x)) == 28.0
    np.testing.assert_allclose(run(psum_inside, P("x"), P("x"), True, x), 2 * x)
    np.testing.assert_allclose(run(psum_inside, P("x"), P("x"), False, x), 16 * x)
    # jit of the whole thing and second order inside
    jitted = funcgrad.jit(funcgrad.shard_map(mean_loss, mesh=MESH, in_specs=(P(), P("x")), out_specs=P("x")))
    np.testing.assert_allclose(jitted(1.0, x), np.full(8, 3.5))

    def curvature(w, xb):
        return funcgrad.grad(funcgrad.grad(lambda w: lax.pmean(fnp.sum(w**3 * xb), "x")))(w)[None]

    got = run(curvature, (P(), P("x")), P("x"), True, 2.0, x)
    np.testing.assert_allclose(got, np.full(8, 6 * 2.0 * x.mean()))


def test_checkify_of_shard_map_and_pmap_keeps_the_first_failing_device():
    # JAX's shard_map checkify rule: each device checks its block; JAX's error lists every failing
    # device ("at mapped index 2: too big [4. 5.]", then 5); funcgrad keeps the first's message.
    from funcgrad.experimental import checkify as C

    def body(x):
        C.check(fnp.all(x < 4), "too big {}", x)
        return x * 2

    g = funcgrad.shard_map(body, mesh=MESH, in_specs=P("x"), out_specs=P("x"))
    xs = np.arange(16.0)
    xs[10:12] = -1.0  # device 5's block passes; 2, 3, 4, 6, 7 fail
    for wrap in (lambda f: f, funcgrad.jit):
        err, out = wrap(C.checkify(g))(xs)
        np.testing.assert_array_equal(out, xs * 2)
        assert err.get() == "too big [4. 5.] (`check` failed)"
        assert wrap(C.checkify(g))(np.zeros(16))[0].get() is None
    err, out = C.checkify(funcgrad.pmap(body))(xs.reshape(8, 2))
    assert err.get() == "too big [4. 5.] (`check` failed)"
