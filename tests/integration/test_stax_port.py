"""JAX's own ``jax.example_libraries.stax`` and ``optimizers`` run on funcgrad with only their imports
rewritten (``jax`` -> ``funcgrad``): the layer library of JAX's example programs needs
``funcgrad.nn.initializers``, ``lax.conv_general_dilated``/``conv_transpose``/``reduce_window`` and
their shape helpers. The DP-SGD example (``examples/differentially_private_sgd.py``) trains, and
every layer agrees with JAX's stax on the same parameters.
"""

from __future__ import annotations

import importlib.util
import re
import types

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import random
from funcgrad.tree_util import tree_flatten, tree_unflatten

# every test here starts processes or runs a whole program: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)

_UTIL = """
safe_zip, safe_map = zip, map
def _unzip(n, xs):
    cols = tuple([] for _ in range(n))
    for x in xs:
        for c, v in zip(cols, x):
            c.append(v)
    return tuple(tuple(c) for c in cols)
unzip2 = lambda xs: _unzip(2, xs)
unzip3 = lambda xs: _unzip(3, xs)
"""


def _port(name: str) -> types.ModuleType:
    """The source of ``jax.example_libraries.<name>`` with funcgrad in place of jax."""
    src = open(importlib.util.find_spec(f"jax.example_libraries.{name}").origin).read()
    src = re.sub(r"^from jax\._src\.util import .*$", _UTIL, src, flags=re.M)
    src = re.sub(r"^from jax\._src\.typing import .*$", "Array = ArrayLike = object", src, flags=re.M)
    src = re.sub(r"^import jax\.numpy as jnp$", "import funcgrad.numpy as jnp", src, flags=re.M)
    src = re.sub(r"^import jax$", "import funcgrad as jax", src, flags=re.M)
    src = re.sub(r"^from jax(\.| )", r"from funcgrad\1", src, flags=re.M)
    assert "jax._src" not in src
    module = types.ModuleType(f"ported_{name}")
    exec(compile(src, f"<ported jax.example_libraries.{name}>", "exec"), module.__dict__)
    return module


@pytest.fixture(scope="module")
def stax():
    return _port("stax")


@pytest.fixture(scope="module")
def optimizers():
    return _port("optimizers")


def _dp_model(stax):
    return stax.serial(
        stax.Conv(16, (8, 8), padding="SAME", strides=(2, 2)),
        stax.Tanh,
        stax.MaxPool((2, 2), (1, 1)),
        stax.Conv(32, (4, 4), padding="VALID", strides=(2, 2)),
        stax.Tanh,
        stax.MaxPool((2, 2), (1, 1)),
        stax.Flatten,
        stax.Dense(32),
        stax.Tanh,
        stax.Dense(10),
    )


def test_differentially_private_sgd_example_trains(stax, optimizers):
    init_random_params, predict = _dp_model(stax)

    def loss(params, batch):
        inputs, targets = batch
        logits = stax.logsoftmax(predict(params, inputs))
        return -fnp.mean(fnp.sum(logits * targets, axis=1))

    def clipped_grad(params, l2_norm_clip, single_example_batch):
        grads = funcgrad.grad(loss)(params, single_example_batch)
        nonempty_grads, tree_def = tree_flatten(grads)
        total_grad_norm = fnp.linalg.norm(fnp.array([fnp.linalg.norm(neg.ravel()) for neg in nonempty_grads]))
        divisor = fnp.maximum(total_grad_norm / l2_norm_clip, 1.0)
        return tree_unflatten(tree_def, [g / divisor for g in nonempty_grads])

    def private_grad(params, batch, rng, l2_norm_clip, noise_multiplier, batch_size):
        clipped_grads = funcgrad.vmap(clipped_grad, (None, None, 0))(params, l2_norm_clip, batch)
        clipped_grads_flat, grads_treedef = tree_flatten(clipped_grads)
        aggregated = [g.sum(0) for g in clipped_grads_flat]
        rngs = random.split(rng, len(aggregated))
        noised = [
            g + l2_norm_clip * noise_multiplier * random.normal(r, g.shape) for r, g in zip(rngs, aggregated)
        ]
        return tree_unflatten(grads_treedef, [g / batch_size for g in noised])

    key = random.PRNGKey(0)
    _, params = init_random_params(key, (-1, 28, 28, 1))
    opt_init, opt_update, get_params = optimizers.sgd(0.15)
    rng = np.random.default_rng(0)
    images = rng.uniform(0, 1, (16, 28, 28, 1)).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 16)]

    @funcgrad.jit
    def private_update(rng, i, opt_state, batch):
        params = get_params(opt_state)
        rng = random.fold_in(rng, i)
        return opt_update(i, private_grad(params, batch, rng, 1.5, 0.01, 16), opt_state)

    opt_state = opt_init(params)
    before = float(loss(params, (images, labels)))
    for i in range(4):
        opt_state = private_update(key, i, opt_state, (images[:, None], labels[:, None]))
    assert float(loss(get_params(opt_state), (images, labels))) < before
    # Per-example gradients (unclipped) equal a loop of single-example gradients.
    per_example = funcgrad.vmap(funcgrad.grad(loss), (None, 0))(params, (images[:4, None], labels[:4, None]))
    for i in range(4):
        single = funcgrad.grad(loss)(params, (images[i : i + 1], labels[i : i + 1]))
        for a, b in zip(tree_flatten(per_example)[0], tree_flatten(single)[0]):
            np.testing.assert_allclose(np.asarray(a)[i], np.asarray(b), rtol=1e-9, atol=1e-12)


IMAGE, SEQUENCE = (2, 7, 6, 3), (2, 7, 3)
LAYERS = {
    "conv-same": (lambda s: s.Conv(4, (3, 3), (2, 1), "SAME"), IMAGE),
    "conv-valid": (lambda s: s.Conv(4, (2, 3), padding="VALID", W_init=s.glorot(), b_init=s.randn()), IMAGE),
    "general-conv": (lambda s: s.GeneralConv(("NCHW", "OIHW", "NCHW"), 5, (3, 2), (1, 1), "SAME"), IMAGE),
    "conv-transpose": (lambda s: s.ConvTranspose(4, (3, 3), (2, 2), "SAME"), IMAGE),
    "conv1d-transpose": (lambda s: s.Conv1DTranspose(4, (3,), (2,), "VALID"), SEQUENCE),
    "max-pool": (lambda s: s.MaxPool((2, 2), (1, 2), "SAME"), IMAGE),
    "avg-pool": (lambda s: s.AvgPool((3, 2), (2, 1), "VALID"), IMAGE),
    "sum-pool": (lambda s: s.SumPool((2, 2)), IMAGE),
    "batch-norm": (lambda s: s.BatchNorm(), IMAGE),
    "dense": (lambda s: s.serial(s.Flatten, s.Dense(6), s.Relu, s.Dense(3), s.LogSoftmax), IMAGE),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_stax_layers_agree_with_jax(stax, name):
    from jax.example_libraries import stax as jstax

    make, in_shape = LAYERS[name]
    ours, theirs = make(stax), make(jstax)
    out_shape, params = ours[0](random.PRNGKey(1), in_shape)
    j_out_shape, j_params = theirs[0](jax.random.PRNGKey(1), in_shape)
    assert tuple(out_shape) == tuple(j_out_shape)
    for a, b in zip(tree_flatten(params)[0], jax.tree_util.tree_leaves(j_params)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)
    x = np.random.default_rng(2).standard_normal(in_shape)
    got = ours[1](params, x)
    want = theirs[1](j_params, x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-9, atol=1e-9)
