"""funcgrad.optim: update rules against hand-written NumPy references, and jit of a step."""

from __future__ import annotations

import numpy as np

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import optim


def _run(opt, grads_seq, p0):
    params = {"w": fnp.asarray(p0)}
    state = opt.init(params)
    for g in grads_seq:
        params, state = opt.update({"w": fnp.asarray(g)}, state, params)
    return np.asarray(params["w"])


def test_sgd_momentum_matches_reference(rng):
    gs = [rng.standard_normal(3) for _ in range(4)]
    p, buf = np.ones(3), np.zeros(3)
    for g in gs:
        buf = 0.9 * buf + g
        p = p - 0.1 * buf
    np.testing.assert_allclose(_run(optim.sgd(0.1, momentum=0.9), gs, np.ones(3)), p, rtol=1e-12)
    p = np.ones(3)
    for g in gs:
        p = p - 0.1 * g
    np.testing.assert_allclose(_run(optim.sgd(0.1), gs, np.ones(3)), p, rtol=1e-12)


def test_adam_matches_reference(rng):
    gs = [rng.standard_normal(3) for _ in range(5)]
    p, m, v = np.ones(3), np.zeros(3), np.zeros(3)
    for t, g in enumerate(gs, 1):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        p = p - 0.01 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    np.testing.assert_allclose(_run(optim.adam(0.01), gs, np.ones(3)), p, rtol=1e-10)


def test_training_step_reduces_loss_and_jits():
    x = np.linspace(-1, 1, 32)[:, None]
    y = 3.0 * x[:, 0] - 1.0
    params = {"w": fnp.zeros(1), "b": fnp.zeros(())}
    loss = lambda p: fnp.mean((x @ p["w"] + p["b"] - y) ** 2)
    opt = optim.adam(0.1)

    @funcgrad.jit
    def step(p, s):
        value, g = funcgrad.value_and_grad(loss)(p)
        p, s = opt.update(g, s, p)
        return p, s, value

    state = opt.init(params)
    first = None
    for _ in range(200):
        params, state, value = step(params, state)
        first = float(value) if first is None else first
    assert float(loss(params)) < 1e-3 < first
    assert abs(float(params["w"][0]) - 3.0) < 0.05


def test_clip_by_global_norm():
    g = {"a": fnp.array([3.0]), "b": fnp.array([4.0])}
    clipped = optim.clip_by_global_norm(g, 1.0)
    assert abs(float(optim.global_norm(clipped)) - 1.0) < 1e-9
