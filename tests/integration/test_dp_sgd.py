"""Differentially private SGD on a small CNN: JAX's ``examples/differentially_private_sgd.py`` model
written with funcgrad (synthetic MNIST-shaped data).

conv 16 8x8 stride 2 SAME, tanh, max-pool 2x2 stride 1, conv 32 4x4 stride 2 VALID, tanh, max-pool
2x2 stride 1, dense 32, tanh, dense 10; cross-entropy of log-softmax. Per-example gradients by
``vmap(grad)`` equal a Python loop of single-example gradients, eagerly and under ``jit``; the
clipped, summed, noised DP-SGD step equals the same step assembled from the loop; the vmapped
gradient keeps one convolution per convolution of a single example's gradient; and the
gradients agree with JAX's for the same parameters.
"""

from __future__ import annotations

import numpy as np
import pytest
from funcgrad.primitives.conv import conv_general_dilated_p

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax, nn, random
from funcgrad import tree_util as tu

# every test here starts processes or runs a whole program: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

DN = ("NHWC", "HWIO", "NHWC")
L2_CLIP, NOISE = 1.5, 1.1


def init_params(key):
    """Parameters as stax would make them: glorot-normal kernels, tiny normal biases."""
    keys = random.split(key, 8)
    conv_init = nn.initializers.glorot_normal(in_axis=2, out_axis=3)
    dense_init = nn.initializers.glorot_normal()
    bias_init = nn.initializers.normal(1e-6)
    return [
        (conv_init(keys[0], (8, 8, 1, 16), np.float32), bias_init(keys[1], (16,), np.float32)),
        (conv_init(keys[2], (4, 4, 16, 32), np.float32), bias_init(keys[3], (32,), np.float32)),
        (dense_init(keys[4], (512, 32), np.float32), bias_init(keys[5], (32,), np.float32)),
        (dense_init(keys[6], (32, 10), np.float32), bias_init(keys[7], (10,), np.float32)),
    ]


def predict(params, x, mod_lax=lax, mod_np=fnp):
    (w1, b1), (w2, b2), (w3, b3), (w4, b4) = params
    y = mod_np.tanh(mod_lax.conv_general_dilated(x, w1, (2, 2), "SAME", dimension_numbers=DN) + b1)
    y = mod_lax.reduce_window(y, -np.inf, mod_lax.max, (1, 2, 2, 1), (1, 1, 1, 1), "VALID")
    y = mod_np.tanh(mod_lax.conv_general_dilated(y, w2, (2, 2), "VALID", dimension_numbers=DN) + b2)
    y = mod_lax.reduce_window(y, -np.inf, mod_lax.max, (1, 2, 2, 1), (1, 1, 1, 1), "VALID")
    y = mod_np.reshape(y, (y.shape[0], -1))
    y = mod_np.tanh(y @ w3 + b3)
    return y @ w4 + b4


def loss(params, batch):
    inputs, targets = batch
    logits = nn.log_softmax(predict(params, inputs))
    return -fnp.mean(fnp.sum(logits * targets, axis=1))


def clipped_grad(params, single_example_batch):
    grads = funcgrad.grad(loss)(params, single_example_batch)
    leaves, tree = tu.tree_flatten(grads)
    total = fnp.linalg.norm(fnp.stack([fnp.linalg.norm(g.ravel()) for g in leaves]))
    divisor = fnp.maximum(total / L2_CLIP, 1.0)
    return tu.tree_unflatten(tree, [g / divisor for g in leaves])


def private_grad(params, batch, key, batch_size):
    clipped = funcgrad.vmap(clipped_grad, (None, 0))(params, batch)
    leaves, tree = tu.tree_flatten(clipped)
    summed = [g.sum(0) for g in leaves]
    keys = random.split(key, len(summed))
    noised = [g + L2_CLIP * NOISE * random.normal(k, g.shape, g.dtype) for k, g in zip(keys, summed)]
    return tu.tree_unflatten(tree, [g / batch_size for g in noised])


def _data(batch_size, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.uniform(0, 1, (batch_size, 1, 28, 28, 1)).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch_size)][:, None, :]
    return images, labels


def _loop(params, images, labels, fn):
    per = [fn(params, (images[i], labels[i])) for i in range(images.shape[0])]
    return [
        np.stack([np.asarray(tu.tree_leaves(p)[j]) for p in per]) for j in range(len(tu.tree_leaves(per[0])))
    ]


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_per_example_gradients_equal_a_loop(jitted):
    params = init_params(random.PRNGKey(0))
    images, labels = _data(6)
    per_example = funcgrad.vmap(funcgrad.grad(loss), in_axes=(None, 0))
    if jitted:
        per_example = funcgrad.jit(per_example)
    got = tu.tree_leaves(per_example(params, (images, labels)))
    want = _loop(params, images, labels, funcgrad.grad(loss))
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == np.float32
        np.testing.assert_allclose(np.asarray(g), w, rtol=2e-4, atol=2e-6)


def test_dp_sgd_step_equals_the_loop_version():
    params = init_params(random.PRNGKey(1))
    images, labels = _data(5, seed=1)
    key = random.PRNGKey(7)
    step = funcgrad.jit(private_grad, static_argnums=3)
    got = tu.tree_leaves(step(params, (images, labels), key, 5))
    clipped = _loop(params, images, labels, clipped_grad)
    keys = random.split(key, len(clipped))
    for g, c, k in zip(got, clipped, keys):
        noise = np.asarray(random.normal(k, c.shape[1:], np.float32))
        want = (c.sum(0) + L2_CLIP * NOISE * noise) / 5
        np.testing.assert_allclose(np.asarray(g), want, rtol=2e-4, atol=2e-6)


def test_vmapped_gradient_keeps_one_convolution_per_convolution():
    params = init_params(random.PRNGKey(0))
    images, labels = _data(4)
    per_example = funcgrad.make_jaxpr(funcgrad.vmap(funcgrad.grad(loss), in_axes=(None, 0)))(
        params, (images, labels)
    )
    single = funcgrad.make_jaxpr(funcgrad.grad(loss))(params, (images[0], labels[0]))

    def count(closed):
        return sum(e.primitive is conv_general_dilated_p for e in closed.jaxpr.eqns)

    assert count(per_example) == count(single) == 5  # 2 forward, 2 kernel grads, 1 input grad


def test_gradients_match_jax():
    jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    params = init_params(random.PRNGKey(2))
    images, labels = _data(3, seed=2)
    np_params = [(np.asarray(w), np.asarray(b)) for w, b in params]

    def jax_loss(p, batch):
        inputs, targets = batch
        logits = jax.nn.log_softmax(predict(p, inputs, jax.lax, jnp))
        return -jnp.mean(jnp.sum(logits * targets, axis=1))

    want = jax.tree_util.tree_leaves(
        jax.vmap(jax.grad(jax_loss), in_axes=(None, 0))(np_params, (images, labels))
    )
    got = tu.tree_leaves(funcgrad.vmap(funcgrad.grad(loss), in_axes=(None, 0))(params, (images, labels)))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-4, atol=2e-6)
