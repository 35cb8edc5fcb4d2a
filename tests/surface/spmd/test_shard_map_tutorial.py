"""The neural-network section of JAX's shard_map tutorial: data parallelism, FSDP (parameters
gathered per layer) and tensor parallelism (psum_scatter), each checked against the unsharded
loss and gradient."""

from __future__ import annotations

from functools import partial

import numpy as np

import funcgrad as jax
import funcgrad.numpy as jnp
from funcgrad.sharding import AxisType, P

MESH = jax.make_mesh((8,), ("batch",), (AxisType.Auto,))  # the tutorial's Auto-mode mesh


def init_layer(rng, n_in, n_out):
    return rng.standard_normal((n_in, n_out)) / np.sqrt(n_in), rng.standard_normal(n_out) * 0.1


def init(rng, layer_sizes, batch_size):
    params = [init_layer(rng, m, n) for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]
    batch = (
        rng.standard_normal((batch_size, layer_sizes[0])),
        rng.standard_normal((batch_size, layer_sizes[-1])),
    )
    return params, batch


def predict(params, inputs):
    for W, b in params:
        outputs = jnp.dot(inputs, W) + b
        inputs = jax.nn.relu(outputs)
    return outputs


def loss(params, batch):
    inputs, targets = batch
    predictions = predict(params, inputs)
    return jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))


def close(a, b):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)


def test_data_parallelism(rng):
    params, batch = init(rng, [16, 32, 32, 8], 32)

    @partial(jax.shard_map, mesh=MESH, in_specs=(P(), P("batch")), out_specs=P())
    def loss_dp(params, batch):
        return jax.lax.pmean(loss(params, batch), "batch")

    close(jax.jit(loss_dp)(params, batch), loss(params, batch))
    close(jax.jit(jax.grad(loss_dp))(params, batch), jax.grad(loss)(params, batch))


def test_fsdp(rng):
    params, batch = init(rng, [16, 32, 32, 8], 32)

    def predict_fsdp(params_frag, inputs):
        for W_frag, b_frag in params_frag:
            W = jax.lax.all_gather(W_frag, "batch", tiled=True)
            b = jax.lax.all_gather(b_frag, "batch", tiled=True)
            outputs = jnp.dot(inputs, W) + b
            inputs = jax.nn.relu(outputs)
        return outputs

    @partial(jax.shard_map, mesh=MESH, in_specs=(P("batch"), P("batch")), out_specs=P())
    def loss_fsdp(local_params, local_batch):
        inputs, targets = local_batch
        predictions = predict_fsdp(local_params, inputs)
        return jax.lax.pmean(jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1)), "batch")

    close(jax.jit(loss_fsdp)(params, batch), loss(params, batch))
    close(jax.jit(jax.grad(loss_fsdp))(params, batch), jax.grad(loss)(params, batch))


def test_tensor_parallelism(rng):
    mesh = jax.make_mesh((8,), ("feats",), (AxisType.Auto,))
    params, batch = init(rng, [16, 32, 32, 8], 4)

    @partial(
        jax.shard_map,
        mesh=mesh,
        in_specs=(P(None, "feats"), P("feats", None), P("feats")),
        out_specs=P(None, "feats"),
    )
    def gemm_tp(inputs, W, b):
        block_result = jnp.dot(inputs, W)
        return jax.lax.psum_scatter(block_result, "feats", scatter_dimension=1, tiled=True) + b

    def predict_tp(params, inputs):
        for W, b in params:
            outputs = gemm_tp(inputs, W, b)
            inputs = jax.nn.relu(outputs)
        return outputs

    def loss_tp(params, batch):
        inputs, targets = batch
        predictions = predict_tp(params, inputs)
        return jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))

    close(jax.jit(loss_tp)(params, batch), loss(params, batch))
    close(jax.jit(jax.grad(loss_tp))(params, batch), jax.grad(loss)(params, batch))


def test_collective_matmul_with_ppermute_in_a_loop(rng):
    # the tutorial's all-gather matmul, overlapped with ppermute in a fori_loop (pvary on the
    # accumulator, as JAX's check_vma requires)
    a, b = rng.standard_normal((8, 16)), rng.standard_normal((16, 8))
    size = 8

    @partial(
        jax.shard_map, mesh=MESH, in_specs=(P(None, "batch"), P("batch", None)), out_specs=P(None, "batch")
    )
    def matmul_allgather_overlapped(lhs_block, rhs_block):
        idx = jax.lax.axis_index("batch")
        shift = partial(jax.lax.ppermute, axis_name="batch", perm=[(i, (i - 1) % size) for i in range(size)])
        lhs_blk = lhs_block  # (8, 2): columns idx*2:(idx+1)*2 of a
        full_rhs = jax.lax.all_gather(rhs_block, "batch", tiled=True)  # (16, 8)
        out = jax.lax.pvary(jnp.zeros((lhs_block.shape[0], full_rhs.shape[1])), "batch")

        def body(i, carry):
            out, lhs_blk = carry
            j = (idx + i) % size
            rows = jax.lax.dynamic_slice_in_dim(full_rhs, j * 2, 2, axis=0)
            return out + lhs_blk @ rows, shift(lhs_blk)

        out, _ = jax.lax.fori_loop(0, size, body, (out, lhs_blk))
        return jax.lax.dynamic_slice_in_dim(out, idx, 1, axis=1)

    np.testing.assert_allclose(matmul_allgather_overlapped(a, b), a @ b, rtol=1e-10)
