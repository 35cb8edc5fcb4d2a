"""Optimisers as pure functions over pytrees: SGD (with momentum and Nesterov) and Adam/AdamW.

Layer: surface. Imports the kernel's tree_util and funcgrad.numpy.

An optimiser is a pair of pure functions, ``init(params) -> state`` and
``update(grads, state, params) -> (new_params, new_state)``; the state is a pytree, so a whole
training step can be jitted, and nothing is mutated (PyTorch's ``optimizer.step()`` and
``zero_grad()`` have no counterpart: gradients are values, summed explicitly when accumulating).

>>> import funcgrad, funcgrad.numpy as fnp
>>> opt = sgd(0.1)
>>> params = {"w": fnp.array([1.0, 2.0])}
>>> state = opt.init(params)
>>> params, state = opt.update({"w": fnp.array([1.0, 1.0])}, state, params)
>>> params["w"].tolist()
[0.9, 1.9]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import funcgrad.numpy as fnp
from funcgrad.kernel import tree_util as tu

__all__ = [
    "AdamState",
    "Optimizer",
    "SGDState",
    "adam",
    "adamw",
    "apply_updates",
    "clip_by_global_norm",
    "global_norm",
    "sgd",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


class Optimizer(NamedTuple):
    """``init(params) -> state``; ``update(grads, state, params) -> (params, state)``."""

    init: Callable[[Any], Any]
    update: Callable[[Any, Any, Any], tuple[Any, Any]]


def _schedule(lr) -> Callable[[Any], Any]:
    return lr if callable(lr) else (lambda step: lr)


class SGDState(NamedTuple):
    step: Any
    momentum: Any


def sgd(learning_rate, momentum: float = 0.0, nesterov: bool = False, weight_decay: float = 0.0) -> Optimizer:
    """Stochastic gradient descent, optionally with (Nesterov) momentum and L2 weight decay.

    ``learning_rate`` may be a number or a schedule ``step -> rate``.
    """
    lr = _schedule(learning_rate)

    def init(params):
        buf = tu.tree_map(fnp.zeros_like, params) if momentum else None
        return SGDState(fnp.asarray(0), buf)

    def update(grads, state, params):
        if weight_decay:
            grads = tu.tree_map(lambda g, p: g + weight_decay * p, grads, params)
        rate = lr(state.step)
        if momentum:
            buf = tu.tree_map(lambda b, g: momentum * b + g, state.momentum, grads)
            direction = tu.tree_map(lambda b, g: g + momentum * b, buf, grads) if nesterov else buf
        else:
            buf, direction = None, grads
        new_params = tu.tree_map(lambda p, d: p - rate * d, params, direction)
        return new_params, SGDState(state.step + 1, buf)

    return Optimizer(init, update)


class AdamState(NamedTuple):
    step: Any
    mu: Any
    nu: Any


def adam(
    learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, weight_decay: float = 0.0
) -> Optimizer:
    """Adam (Kingma & Ba) with bias correction; ``weight_decay > 0`` gives AdamW (decoupled decay).

    >>> opt = adam(0.1)
    >>> p, s = opt.update({"w": fnp.array([2.0])}, opt.init({"w": fnp.array([1.0])}), {"w": fnp.array([1.0])})
    >>> round(float(p["w"][0]), 6)   # the first step moves each weight by ~lr
    0.9
    """
    lr = _schedule(learning_rate)

    def init(params):
        zeros = tu.tree_map(fnp.zeros_like, params)
        return AdamState(fnp.asarray(0), zeros, tu.tree_map(fnp.zeros_like, params))

    def update(grads, state, params):
        step = state.step + 1
        mu = tu.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, grads)
        nu = tu.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, state.nu, grads)
        c1 = 1 - b1**step
        c2 = 1 - b2**step
        rate = lr(state.step)

        def step_param(p, m, v):
            new = p - rate * (m / c1) / (fnp.sqrt(v / c2) + eps)
            return new - rate * weight_decay * p if weight_decay else new

        return tu.tree_map(step_param, params, mu, nu), AdamState(step, mu, nu)

    return Optimizer(init, update)


def adamw(
    learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, weight_decay: float = 1e-4
) -> Optimizer:
    """Adam with decoupled weight decay (Loshchilov & Hutter)."""
    return adam(learning_rate, b1, b2, eps, weight_decay)


def apply_updates(params, updates):
    """``params + updates`` leafwise (for hand-written update rules)."""
    return tu.tree_map(lambda p, u: p + u, params, updates)


def global_norm(tree) -> Any:
    """The L2 norm of all leaves together (for gradient clipping)."""
    return fnp.sqrt(sum(fnp.sum(fnp.square(x)) for x in tu.tree_leaves(tree)))


def clip_by_global_norm(tree, max_norm: float):
    """Scale ``tree`` so its global norm is at most ``max_norm``."""
    norm = global_norm(tree)
    scale = fnp.minimum(1.0, max_norm / (norm + 1e-12))
    return tu.tree_map(lambda x: x * scale, tree)
