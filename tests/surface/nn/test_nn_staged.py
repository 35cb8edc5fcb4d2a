"""Regression: nn's softmax-family derivatives under staging (jit/make_jaxpr), where primitives do
not broadcast implicitly as NumPy does eagerly. ``_softmax_weights`` divided an (n, k) array by an
(n, 1) count, which passed eagerly and failed under ``jit(grad(...))``."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import nn

CASES = {
    "logsumexp_last": lambda x: fnp.sum(nn.logsumexp(x, axis=-1) ** 2),
    "logsumexp_first": lambda x: fnp.sum(nn.logsumexp(x, axis=0) ** 2),
    "log_softmax": lambda x: fnp.sum(nn.log_softmax(x) ** 2),
    "softmax": lambda x: fnp.sum(nn.softmax(x) ** 2),
    "cross_entropy": lambda x: (
        -fnp.mean(fnp.sum(nn.one_hot(np.arange(3) % 4, 4) * nn.log_softmax(x), axis=-1))
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_grad_under_jit_matches_eager(name):
    f = CASES[name]
    x = np.random.default_rng(0).standard_normal((3, 4))
    np.testing.assert_allclose(funcgrad.jit(funcgrad.grad(f))(x), funcgrad.grad(f)(x), rtol=1e-12, atol=1e-15)
    funcgrad.make_jaxpr(funcgrad.hessian(f))(x)  # second order stages too
