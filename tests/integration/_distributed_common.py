"""The model of tests/integration/test_distributed.py, shared by the test and its worker processes."""

from __future__ import annotations

import numpy as np

import funcgrad
import funcgrad.numpy as fnp


def init_params():
    rng = np.random.default_rng(0)
    return [(rng.standard_normal((5, 16)) / 3, np.zeros(16)), (rng.standard_normal((16, 2)) / 4, np.zeros(2))]


def batch():
    rng = np.random.default_rng(1)
    return rng.standard_normal((64, 5)), rng.standard_normal((64, 2))


def _loss(params, x, y):
    (w1, b1), (w2, b2) = params
    return fnp.mean((fnp.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2)


@funcgrad.jit
def train_step(params, x, y):
    loss, grads = funcgrad.value_and_grad(_loss)(params, x, y)
    return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, grads)], loss
