"""JAX's examples/spmd_mnist_classifier_fromscratch.py, line for line with funcgrad's names (on
synthetic data: no download): an explicit-axis mesh, replicated parameters, a data-sharded batch,
a jitted train step that donates the parameters, ``use_mesh`` and ``reshard``."""

from __future__ import annotations

from functools import partial

import numpy as np
import numpy.random as npr
import pytest

import funcgrad as jax
import funcgrad.numpy as jnp
from funcgrad import NamedSharding, grad, jit
from funcgrad.scipy.special import logsumexp
from funcgrad.sharding import AxisType, reshard
from funcgrad.sharding import PartitionSpec as P

step_size = 0.001


def init_random_params(scale, layer_sizes, rng=npr.RandomState(0)):
    return [
        (scale * rng.randn(m, n), scale * rng.randn(n)) for m, n in zip(layer_sizes[:-1], layer_sizes[1:])
    ]


def predict(params, inputs):
    activations = inputs
    for w, b in params[:-1]:
        outputs = jnp.dot(activations, w) + b
        activations = jnp.tanh(outputs)
    final_w, final_b = params[-1]
    logits = jnp.dot(activations, final_w) + final_b
    return logits - logsumexp(logits, axis=1, keepdims=True)


def loss(params, batch):
    inputs, targets = batch
    preds = predict(params, inputs)
    return -jnp.mean(jnp.sum(preds * targets, axis=1))


@partial(jax.jit, donate_argnums=0)
def train_step(params, batch):
    grads = grad(loss)(params, batch)
    return [(w - step_size * dw, b - step_size * db) for (w, b), (dw, db) in zip(params, grads)]


@jit
def accuracy(params, batch):
    inputs, targets = batch
    target_class = jnp.argmax(targets, axis=1)
    predicted_class = jnp.argmax(predict(params, inputs), axis=1)
    return jnp.mean(predicted_class == target_class)


def test_the_spmd_example_program():
    rng = npr.RandomState(1)
    train_images = rng.rand(512, 64)
    train_labels = np.eye(10)[rng.randint(0, 10, 512)]
    layer_sizes, param_scale, batch_size = [64, 32, 32, 10], 0.1, 128

    mesh = jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(AxisType.Explicit,))
    replicated_sharding = NamedSharding(mesh, P())
    data_sharding = NamedSharding(mesh, P("batch"))

    params = init_random_params(param_scale, layer_sizes)
    replicated_params = jax.device_put(params, replicated_sharding)
    reference = [(np.asarray(w), np.asarray(b)) for w, b in params]
    reference_step = jax.jit(train_step.__wrapped__)
    for i in range(4):
        idx = slice(i * batch_size, (i + 1) * batch_size)
        images = jax.device_put(train_images[idx], data_sharding)
        labels = jax.device_put(train_labels[idx], data_sharding)
        old = replicated_params
        with jax.sharding.use_mesh(mesh):
            replicated_params = train_step(replicated_params, (images, labels))
        with pytest.raises(Exception, match="donated"):
            np.asarray(old[0][0])  # the donated parameters were consumed by the step
        reference = reference_step(reference, (train_images[idx], train_labels[idx]))
    for (w, b), (rw, rb) in zip(replicated_params, reference):
        np.testing.assert_allclose(w, rw, rtol=1e-10)
        np.testing.assert_allclose(b, rb, rtol=1e-10)
        assert w.sharding == replicated_sharding
    sharded_train_images = reshard(train_images, data_sharding)
    sharded_train_labels = reshard(train_labels, data_sharding)
    assert sharded_train_images.sharding == data_sharding
    train_acc = accuracy(replicated_params, (sharded_train_images, sharded_train_labels))
    assert float(train_acc) == pytest.approx(float(accuracy(reference, (train_images, train_labels))))
