"""The MNIST and DP-SGD examples of equinox's, flax's and optax's documentation, on jax and on funcgrad
(through ``funcgrad.as_jax``), in float64 on both sides, on synthetic data of MNIST's shapes (no
download): each prints its losses (and accuracy), and ``--compare`` runs every example on both
backends and reports the largest relative difference.

    python tests/integration/suites/ecosystem/doc_examples.py --compare [--steps 5]
    python tests/integration/suites/ecosystem/doc_examples.py jax|funcgrad EXAMPLE   # one side

- ``equinox_mnist``: equinox's "MNIST" example (docs/examples/mnist.ipynb): a CNN of ``eqx.nn.Conv2d``,
  ``MaxPool2d`` and ``Linear`` layers, ``optax.adamw(3e-4)``, ``eqx.filter_jit`` /
  ``eqx.filter_value_and_grad``, cross-entropy by ``jnp.take_along_axis``.
- ``flax_nnx_mnist``: flax's "MNIST tutorial" (docs_nnx/mnist_tutorial): a CNN of ``nnx.Conv`` /
  ``nnx.Linear`` with ``avg_pool``, ``nnx.Optimizer(model, optax.adamw(0.005, 0.9), wrt=nnx.Param)``,
  ``nnx.jit`` / ``nnx.value_and_grad``, ``nnx.MultiMetric`` accuracy and loss.
- ``optax_dpsgd``: optax's "Differentially private SGD" example
  (examples/contrib/differentially_private_sgd.ipynb): the same CNN (written with flax.linen, since
  the example's ``jax.example_libraries.stax`` is JAX's source, not an API funcgrad provides),
  ``optax.contrib.dpsgd(0.25, l2_norm_clip=1.5, noise_multiplier=1.3, seed=1337)``, per-example
  gradients by ``jax.vmap(jax.grad(...), in_axes=(None, 0))`` over the batch with an inserted axis.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

EXAMPLES = ("equinox_mnist", "flax_nnx_mnist", "optax_dpsgd")


def data(n, channels_last):
    rng = np.random.default_rng(0)
    x = rng.random((n, 28, 28, 1) if channels_last else (n, 1, 28, 28))
    y = rng.integers(0, 10, n)
    return x, y


def equinox_mnist(jax, steps):
    import equinox as eqx
    import jax.numpy as jnp
    import optax

    class CNN(eqx.Module):
        layers: list

        def __init__(self, key):
            k1, k2, k3, k4 = jax.random.split(key, 4)
            self.layers = [
                eqx.nn.Conv2d(1, 3, kernel_size=4, key=k1),
                eqx.nn.MaxPool2d(kernel_size=2),
                jax.nn.relu,
                jnp.ravel,
                eqx.nn.Linear(1728, 512, key=k2),
                jax.nn.sigmoid,
                eqx.nn.Linear(512, 64, key=k3),
                jax.nn.relu,
                eqx.nn.Linear(64, 10, key=k4),
                jax.nn.log_softmax,
            ]

        def __call__(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    def cross_entropy(y, pred_y):
        return -jnp.mean(jnp.take_along_axis(pred_y, jnp.expand_dims(y, 1), axis=1))

    def loss(model, x, y):
        return cross_entropy(y, jax.vmap(model)(x))

    model = CNN(jax.random.PRNGKey(5678))
    optim = optax.adamw(3e-4)
    opt_state = optim.init(eqx.filter(model, eqx.is_array))

    @eqx.filter_jit
    def make_step(model, opt_state, x, y):
        loss_value, grads = eqx.filter_value_and_grad(loss)(model, x, y)
        updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
        return eqx.apply_updates(model, updates), opt_state, loss_value

    x, y = data(64, channels_last=False)
    losses = []
    for _ in range(steps):
        model, opt_state, value = make_step(model, opt_state, x, y)
        losses.append(float(value))
    accuracy = float(jnp.mean(jnp.argmax(jax.vmap(model)(x), axis=1) == y))
    return {"losses": losses, "accuracy": accuracy}


def flax_nnx_mnist(jax, steps):
    from functools import partial

    import optax
    from flax import nnx

    class CNN(nnx.Module):
        def __init__(self, *, rngs):
            self.conv1 = nnx.Conv(1, 32, kernel_size=(3, 3), rngs=rngs)
            self.conv2 = nnx.Conv(32, 64, kernel_size=(3, 3), rngs=rngs)
            self.avg_pool = partial(nnx.avg_pool, window_shape=(2, 2), strides=(2, 2))
            self.linear1 = nnx.Linear(3136, 256, rngs=rngs)
            self.linear2 = nnx.Linear(256, 10, rngs=rngs)

        def __call__(self, x):
            x = self.avg_pool(nnx.relu(self.conv1(x)))
            x = self.avg_pool(nnx.relu(self.conv2(x)))
            x = x.reshape(x.shape[0], -1)
            return self.linear2(nnx.relu(self.linear1(x)))

    model = CNN(rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(0.005, 0.9), wrt=nnx.Param)
    metrics = nnx.MultiMetric(accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average("loss"))

    def loss_fn(model, batch):
        logits = model(batch["image"])
        loss = optax.softmax_cross_entropy_with_integer_labels(logits=logits, labels=batch["label"]).mean()
        return loss, logits

    @nnx.jit
    def train_step(model, optimizer, metrics, batch):
        grad_fn = nnx.value_and_grad(loss_fn, has_aux=True)
        (loss, logits), grads = grad_fn(model, batch)
        metrics.update(loss=loss, logits=logits, labels=batch["label"])
        optimizer.update(model, grads)
        return loss

    x, y = data(32, channels_last=True)
    batch = {"image": x, "label": y}
    losses = [float(train_step(model, optimizer, metrics, batch)) for _ in range(steps)]
    computed = {k: float(v) for k, v in metrics.compute().items()}
    return {"losses": losses, "metrics": computed}


def optax_dpsgd(jax, steps):
    import flax.linen as nn
    import optax
    from optax import contrib, losses

    class CNN(nn.Module):  # the example's stax.serial(...), layer for layer
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Conv(16, (8, 8), strides=(2, 2), padding="SAME")(x))
            x = nn.max_pool(x, (2, 2), strides=(1, 1))
            x = nn.relu(nn.Conv(32, (4, 4), strides=(2, 2), padding="VALID")(x))
            x = nn.max_pool(x, (2, 2), strides=(1, 1))
            x = x.reshape(x.shape[0], -1)
            return nn.Dense(10)(nn.relu(nn.Dense(32)(x)))

    model = CNN()
    params = model.init(jax.random.PRNGKey(1337), np.zeros((1, 28, 28, 1)))

    def loss_fn(params, batch):
        images, labels = batch
        logits = model.apply(params, images)
        return losses.softmax_cross_entropy_with_integer_labels(logits, labels).mean(), logits

    tx = contrib.dpsgd(learning_rate=0.25, l2_norm_clip=1.5, noise_multiplier=1.3, seed=1337)
    opt_state = tx.init(params)

    @jax.jit
    def train_step(params, opt_state, batch):
        grad_fn = jax.grad(loss_fn, has_aux=True)
        batch = jax.tree.map(lambda x: x[:, None], batch)  # the example's inserted axis
        grads, _ = jax.vmap(grad_fn, in_axes=(None, 0))(params, batch)
        updates, new_opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), new_opt_state

    x, y = data(32, channels_last=True)
    out = []
    for _ in range(steps):
        params, opt_state = train_step(params, opt_state, (x, y))
        out.append(float(loss_fn(params, (x, y))[0]))
    return {"losses": out}


def run_one(backend, example, steps):
    if backend == "funcgrad":
        import funcgrad.as_jax  # noqa: F401
    import jax

    jax.config.update("jax_enable_x64", True)
    return globals()[example](jax, steps)


def _flat(result):
    values = []
    for v in result.values():
        values.extend(v.values() if isinstance(v, dict) else (v if isinstance(v, list) else [v]))
    return np.array(values, dtype=float)


def compare(steps):
    report = {}
    for example in EXAMPLES:
        side = {}
        for backend in ("jax", "funcgrad"):
            proc = subprocess.run(
                [sys.executable, __file__, backend, example, "--steps", str(steps)],
                capture_output=True, text=True, env=dict(os.environ, JAX_PLATFORMS="cpu"),
            )  # fmt: skip
            if proc.returncode:
                side[backend] = {"error": proc.stderr.strip().splitlines()[-1]}
            else:
                side[backend] = json.loads(proc.stdout.strip().splitlines()[-1])
        if "error" in side["jax"] or "error" in side["funcgrad"]:
            report[example] = side
        else:
            a, b = _flat(side["jax"]), _flat(side["funcgrad"])
            report[example] = {
                **side,
                "max_rel_diff": float(np.max(np.abs(a - b) / np.maximum(np.abs(a), 1e-300))),
            }
        print(example, json.dumps(report[example]), flush=True)
    return report


if __name__ == "__main__":
    args = sys.argv[1:]
    steps = int(args[args.index("--steps") + 1]) if "--steps" in args else 5
    if args and args[0] == "--compare":
        compare(steps)
    else:
        print(json.dumps(run_one(args[0], args[1], steps)))
