"""funcgrad.example_libraries (optimizers, stax) against jax.example_libraries (the oracle): every
optimizer's trajectory, the schedules, state packing, and every stax layer's shapes and outputs on
the same parameters (numpyro's optim and autoguides are built on them)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.example_libraries import optimizers as fo
from funcgrad.example_libraries import stax as fs

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jo = pytest.importorskip("jax.example_libraries.optimizers")
js = pytest.importorskip("jax.example_libraries.stax")

OPTIMIZERS = [
    ("sgd", (0.1,)),
    ("momentum", (0.1, 0.9)),
    ("nesterov", (0.1, 0.9)),
    ("adagrad", (0.1,)),
    ("rmsprop", (0.01,)),
    ("rmsprop_momentum", (0.01,)),
    ("adam", (lambda i: 0.1 / (1.0 + i),)),
    ("adamax", (0.1,)),
    ("sm3", (0.1,)),
]


def _trajectory(mod, lib, name, args):
    init, update, get_params = getattr(mod, name)(*args)
    params = {"w": np.array([[1.0, -2.0], [0.5, 3.0]]), "b": np.array(0.3)}
    loss = lambda p: lib.numpy.sum(p["w"] ** 4) + p["b"] ** 2 * lib.numpy.sum(p["w"])  # noqa: E731
    state = init(params)
    step = lambda i, s: update(i, lib.grad(loss)(get_params(s)), s)  # noqa: E731
    # (sm3's state holds the shape as Python ints, leaves that jit would trace: eager, as in JAX)
    step = step if name == "sm3" else lib.jit(step)
    for i in range(4):
        state = step(i, state)
    return [np.asarray(x) for x in lib.tree_util.tree_leaves(get_params(state))]


@pytest.mark.parametrize("name,args", OPTIMIZERS, ids=[n for n, _ in OPTIMIZERS])
def test_optimizers_follow_jax(name, args):
    ours, theirs = _trajectory(fo, funcgrad, name, args), _trajectory(jo, jax, name, args)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_schedules_clipping_and_packing_follow_jax():
    for make in ("exponential_decay", "inverse_time_decay", "polynomial_decay"):
        args = (0.1, 10, 0.5) if make != "polynomial_decay" else (0.1, 10, 0.01)
        for i in (0, 3, 12):
            assert np.isclose(getattr(fo, make)(*args)(i), getattr(jo, make)(*args)(i), rtol=1e-12)
    assert np.isclose(
        fo.inverse_time_decay(0.1, 3, 0.5, True)(7), jo.inverse_time_decay(0.1, 3, 0.5, True)(7)
    )
    for i in (0, 10, 11, 25):
        assert float(fo.piecewise_constant([10, 20], [1.0, 0.5, 0.1])(i)) == float(
            jo.piecewise_constant([10, 20], [1.0, 0.5, 0.1])(i)
        )
    g = {"a": np.array([3.0, 4.0]), "b": np.array([12.0])}
    np.testing.assert_allclose(fo.clip_grads(g, 1.0)["a"], jo.clip_grads(g, 1.0)["a"], rtol=1e-12)
    state = fo.adam(0.1).init_fn({"x": np.ones(2), "y": [np.zeros(3)]})
    again = fo.pack_optimizer_state(fo.unpack_optimizer_state(state))
    assert again.tree_def == state.tree_def and again.subtree_defs == state.subtree_defs
    assert len(funcgrad.tree_util.tree_leaves(state)) == len(jax.tree_util.tree_leaves(jo.adam(0.1).init_fn(
        {"x": np.ones(2), "y": [np.zeros(3)]}
    ))) == 6  # fmt: skip
    with pytest.raises(TypeError, match="did not match the parameter tree"):
        fo.sgd(0.1).update_fn(0, {"z": 1.0}, fo.sgd(0.1).init_fn({"x": 1.0}))


def _layers(s):
    return {
        "dense": (s.serial(s.Dense(3), s.Relu, s.Dense(2), s.LogSoftmax), (5, 4)),
        "conv": (
            s.serial(s.Conv(3, (2, 2), padding="SAME"), s.BatchNorm(), s.Elu, s.MaxPool((2, 2)), s.Flatten),
            (2, 4, 4, 2),
        ),
        "pools": (s.serial(s.AvgPool((2, 2), strides=(1, 1)), s.SumPool((2, 2)), s.Gelu), (1, 5, 5, 2)),
        "transpose": (s.serial(s.ConvTranspose(2, (3, 3), strides=(2, 2)), s.Tanh), (1, 3, 3, 1)),
        "fan": (
            s.serial(s.FanOut(2), s.parallel(s.Dense(3), s.Identity), s.FanInConcat(), s.Softplus),
            (2, 3),
        ),
        "sum": (s.serial(s.FanOut(3), s.parallel(s.Sigmoid, s.Selu, s.LeakyRelu), s.FanInSum), (4,)),
    }


@pytest.mark.parametrize("name", list(_layers(fs)))
def test_stax_layers_follow_jax(name):
    (f_init, f_apply), shape = _layers(fs)[name]
    (j_init, j_apply), _ = _layers(js)[name]
    j_shape, j_params = j_init(jax.random.PRNGKey(0), shape)
    f_shape, f_params = f_init(funcgrad.random.PRNGKey(0), shape)
    assert tuple(f_shape) == tuple(j_shape)
    assert [np.shape(p) for p in funcgrad.tree_util.tree_leaves(f_params)] == [
        np.shape(p) for p in jax.tree_util.tree_leaves(j_params)
    ]
    x = np.random.default_rng(0).normal(size=shape)
    params = jax.tree_util.tree_map(np.asarray, j_params)  # the same parameters on both sides
    np.testing.assert_allclose(f_apply(params, x), j_apply(params, x), rtol=1e-10, atol=1e-12)


def test_stax_dropout():
    init, apply = fs.Dropout(0.5)
    x = fnp.ones((100,))
    out = apply((), x, rng=funcgrad.random.PRNGKey(1))
    assert set(np.unique(np.asarray(out)).tolist()) <= {0.0, 2.0}
    assert fs.Dropout(0.5, mode="test")[1]((), x, rng=funcgrad.random.PRNGKey(1)) is x
    with pytest.raises(ValueError, match="PRNG key"):
        apply((), x)
