"""``funcgrad.example_libraries.optimizers``: JAX's example first-order optimizers, on funcgrad.

Surface layer (imports funcgrad.numpy and funcgrad.tree_util). An optimizer is an
``Optimizer(init_fn, update_fn, params_fn)`` triple: ``init_fn(params)`` gives an
``OptimizerState``, ``update_fn(step, grads, state)`` the next state, ``params_fn(state)`` the
parameters. The ``optimizer`` decorator turns a maker written for one array into one over any
pytree of arrays; the state keeps each leaf's own state flat (``OptimizerState(packed_state,
tree_def, subtree_defs)``, itself a pytree whose leaves are the packed states, so it can be
carried through ``jit`` and ``lax.scan``). Step sizes are numbers or schedules (a function of
the step number); the update rules are JAX's.

>>> import funcgrad, funcgrad.numpy as fnp
>>> init, update, get_params = adam(0.1)
>>> state = init({"w": fnp.array([1.0, -2.0])})
>>> loss = lambda p: fnp.sum(p["w"] ** 2)
>>> for i in range(3):
...     state = update(i, funcgrad.grad(loss)(get_params(state)), state)
>>> get_params(state)["w"].round(3).tolist()
[0.7020000000000001, -1.701]
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import funcgrad.numpy as fnp
from funcgrad import tree_util as tu

__all__ = [
    "JoinPoint",
    "Optimizer",
    "OptimizerState",
    "adagrad",
    "adam",
    "adamax",
    "clip_grads",
    "constant",
    "exponential_decay",
    "inverse_time_decay",
    "l2_norm",
    "make_schedule",
    "momentum",
    "nesterov",
    "optimizer",
    "pack_optimizer_state",
    "piecewise_constant",
    "polynomial_decay",
    "rmsprop",
    "rmsprop_momentum",
    "sgd",
    "sm3",
    "unpack_optimizer_state",
]

Schedule = Callable[[int], Any]


class OptimizerState(NamedTuple):
    """Per-leaf optimizer states, flattened (``packed_state``), with the parameter tree's
    structure (``tree_def``) and each leaf state's own (``subtree_defs``)."""

    packed_state: Any
    tree_def: Any
    subtree_defs: Any


# (a pytree of the packed states only: the structures are static data, as in JAX)
tu.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], *aux),
)


class Optimizer(NamedTuple):
    """``(init_fn, update_fn, params_fn)`` over pytrees of parameters."""

    init_fn: Callable
    update_fn: Callable
    params_fn: Callable


def optimizer(opt_maker: Callable) -> Callable[..., Optimizer]:
    """Decorate a maker of ``(init, update, get_params)`` for ONE array so that the optimizer it
    makes works on any pytree of arrays (each leaf its own state).

    >>> import funcgrad.numpy as fnp
    >>> @optimizer
    ... def halve():
    ...     return (lambda x: x), (lambda i, g, x: x - 0.5 * g), (lambda x: x)
    >>> init, update, get = halve()
    >>> get(update(0, {"a": 2.0}, init({"a": 4.0})))
    {'a': 3.0}
    """

    @functools.wraps(opt_maker)
    def make(*args, **kwargs) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(params):
            leaves, tree = tu.tree_flatten(params)
            flat = [tu.tree_flatten(init(x)) for x in leaves]
            return OptimizerState([f for f, _ in flat], tree, [t for _, t in flat])

        @functools.wraps(update)
        def tree_update(i, grads, state):
            packed, tree, subtrees = state
            grad_leaves, grad_tree = tu.tree_flatten(grads)
            if grad_tree != tree:
                raise TypeError(
                    "optimizer update function was passed a gradient tree that did not match the "
                    f"parameter tree structure with which it was initialized: parameter tree {tree} "
                    f"and grad tree {grad_tree}."
                )
            new = []
            for g, flat, sub in zip(grad_leaves, packed, subtrees):
                leaves, sub2 = tu.tree_flatten(update(i, g, tu.tree_unflatten(sub, flat)))
                if sub2 != sub:
                    raise TypeError(
                        "optimizer update function produced an output structure that did not "
                        f"match its input structure: input {sub} and output {sub2}."
                    )
                new.append(leaves)
            return OptimizerState(new, tree, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(state):
            packed, tree, subtrees = state
            return tu.tree_unflatten(
                tree, [get_params(tu.tree_unflatten(s, f)) for f, s in zip(packed, subtrees)]
            )

        return Optimizer(tree_init, tree_update, tree_get_params)

    return make


def _first(state):
    return state[0]


def _with_zeros(n):
    """The init function of an optimizer that keeps ``n`` running statistics beside the
    parameters, each starting at zeros of their shape: ``x0 -> (x0, zeros, ...)``."""
    return lambda x0: (x0, *(fnp.zeros_like(x0) for _ in range(n)))


@optimizer
def sgd(step_size):
    """Stochastic gradient descent: ``x - step_size(i) * g``."""
    step_size = make_schedule(step_size)
    return (lambda x0: x0), (lambda i, g, x: x - step_size(i) * g), (lambda x: x)


@optimizer
def momentum(step_size, mass: float):
    """Heavy-ball momentum: ``v = mass * v + g; x -= step_size(i) * v``."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, v = state
        v = mass * v + g
        return x - step_size(i) * v, v

    return _with_zeros(1), update, _first


@optimizer
def nesterov(step_size, mass: float):
    """Nesterov momentum: ``v = mass * v + g; x -= step_size(i) * (mass * v + g)``."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, v = state
        v = mass * v + g
        return x - step_size(i) * (mass * v + g), v

    return _with_zeros(1), update, _first


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad with momentum: gradients scaled by the root of their accumulated squares."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + fnp.square(g)
        scale = fnp.where(g_sq > 0, 1.0 / fnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * scale) + momentum * m
        return x - step_size(i) * m, g_sq, m

    return _with_zeros(2), update, _first


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: gradients scaled by the root of a moving average of their squares."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg = state
        avg = avg * gamma + fnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / fnp.sqrt(avg + eps), avg

    return _with_zeros(1), update, _first


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp with momentum on the scaled steps."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg, mom = state
        avg = avg * gamma + fnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / fnp.sqrt(avg + eps)
        return x - mom, avg, mom

    return _with_zeros(2), update, _first


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma and Ba): bias-corrected first and second moment estimates."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * fnp.square(g) + b2 * v
        m_hat = m / (1 - fnp.asarray(b1, m.dtype) ** (i + 1))
        v_hat = v / (1 - fnp.asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * m_hat / (fnp.sqrt(v_hat) + eps), m, v

    return _with_zeros(2), update, _first


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adamax: Adam with the infinity norm for the second moment."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = fnp.maximum(b2 * u, fnp.abs(g))
        x = x - (step_size(i) / (1 - fnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u

    return _with_zeros(2), update, _first


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (Anil et al.): one accumulator per axis of each array, their minimum per element."""
    step_size = make_schedule(step_size)

    def along(ndim, v, axis):  # v (one axis's accumulator) shaped to broadcast along `axis`
        return fnp.reshape(v, [-1 if d == axis else 1 for d in range(ndim)])

    def init(x0):
        shape = fnp.shape(x0)
        x0 = fnp.atleast_1d(x0)
        return x0, fnp.zeros_like(x0), [fnp.zeros(n, dtype=x0.dtype) for n in x0.shape], shape

    def update(i, g, state):
        x, m, vs, shape = state
        accum = functools.reduce(fnp.minimum, [along(g.ndim, v, k) for k, v in enumerate(vs)])
        accum = accum + fnp.square(g)
        scale = fnp.where(accum > 0, 1.0 / fnp.sqrt(accum), 0)
        m = (1.0 - momentum) * (g * scale) + momentum * m
        x = x - step_size(i) * m
        others = lambda k: tuple(d for d in range(x.ndim) if d != k)  # noqa: E731
        return x, m, [accum.max(others(k)) for k in range(x.ndim)], shape

    return init, update, lambda state: fnp.reshape(state[0], state[3])


# ----------------------------------------------------------------------------------------------
# Schedules: functions of the step number


def constant(step_size) -> Schedule:
    """The schedule that is always ``step_size``."""
    return lambda i: step_size


def exponential_decay(step_size, decay_steps, decay_rate) -> Schedule:
    """``step_size * decay_rate ** (i / decay_steps)``."""
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False) -> Schedule:
    """``step_size / (1 + decay_rate * i / decay_steps)`` (the ratio floored with ``staircase``)."""
    if staircase:
        return lambda i: step_size / (1 + decay_rate * fnp.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0) -> Schedule:
    """From ``step_size`` to ``final_step_size`` over ``decay_steps`` as ``(1 - t) ** power``."""

    def schedule(i):
        frac = 1 - fnp.minimum(i, decay_steps) / decay_steps
        return frac**power * (step_size - final_step_size) + final_step_size

    return schedule


def piecewise_constant(boundaries, values) -> Schedule:
    """``values[k]`` for steps past ``k`` of the ``boundaries`` (one fewer than values).

    >>> float(piecewise_constant([10, 20], [1.0, 0.5, 0.1])(15))
    0.5
    """
    boundaries, values = fnp.array(boundaries), fnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if boundaries.shape[0] != values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")
    return lambda i: values[fnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule) -> Schedule:
    """A schedule as given, or the constant schedule of a scalar."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if fnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


# ----------------------------------------------------------------------------------------------
# Utilities


def l2_norm(tree):
    """The Euclidean norm of all the leaves of ``tree`` together.

    >>> float(l2_norm({"a": 3.0, "b": [4.0]}))
    5.0
    """
    return fnp.sqrt(sum(fnp.vdot(x, x) for x in tu.tree_leaves(tree)))


def clip_grads(grad_tree, max_norm):
    """``grad_tree`` scaled down to norm ``max_norm`` when its norm is larger."""
    norm = l2_norm(grad_tree)
    return tu.tree_map(lambda g: fnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


class JoinPoint:
    """Marks where the parameter tree ends and a leaf's state tree begins (serialization)."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):  # (looks like a container, as pytrees of arrays do)
        yield self.subtree


def unpack_optimizer_state(opt_state):
    """An ``OptimizerState`` as the parameter tree with a ``JoinPoint`` of each leaf's state."""
    packed, tree, subtrees = opt_state
    return tu.tree_unflatten(tree, [JoinPoint(tu.tree_unflatten(s, f)) for f, s in zip(packed, subtrees)])


def pack_optimizer_state(marked_pytree):
    """The inverse of ``unpack_optimizer_state``.

    >>> state = momentum(0.1, 0.9).init_fn({"w": 1.0})
    >>> pack_optimizer_state(unpack_optimizer_state(state)) == state
    True
    """
    points, tree = tu.tree_flatten(marked_pytree, is_leaf=lambda x: isinstance(x, JoinPoint))
    if not all(isinstance(p, JoinPoint) for p in points):
        raise TypeError("pack_optimizer_state expects a pytree whose leaves are JoinPoints")
    flat = [tu.tree_flatten(p.subtree) for p in points]
    return OptimizerState([f for f, _ in flat], tree, [s for _, s in flat])


def __dir__():  # the public names only, not the helpers
    return sorted(__all__)
