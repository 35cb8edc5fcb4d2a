"""A staged shard_map keeps its traced body (NOTE: [shard_map trace cache], funcgrad/parallel.py):
an eager grad of it called again traces and lowers nothing, and what the key must tell apart
(a captured tracer, a static argument) still gives each call its own values."""

from __future__ import annotations

import numpy as np

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.kernel import monitoring
from funcgrad.sharding import AxisType, P, make_mesh

MESH = make_mesh((8,), ("x",), (AxisType.Auto,))
X = np.linspace(-1.0, 1.0, 16)


def _lowerings(fun):
    events = []

    def listen(event, duration, **kw):
        if event == monitoring.JAXPR_TO_MLIR_MODULE_EVENT:
            events.append(kw)

    monitoring.register_event_duration_secs_listener(listen)
    try:
        out = fun()
    finally:
        monitoring.unregister_event_duration_listener(listen)
    return out, len(events)


def test_eager_grad_of_a_shard_map_lowers_once_and_keys_what_varies():
    f = funcgrad.shard_map(lambda a: lax.psum(a * a, "x"), mesh=MESH, in_specs=P("x"), out_specs=P())
    g = funcgrad.grad(lambda a: fnp.sum(f(a)))
    first, n_first = _lowerings(lambda: g(X))
    again, n_again = _lowerings(lambda: g(X))
    np.testing.assert_allclose(first, 2 * X)  # d/da sum(a^2)
    np.testing.assert_allclose(again, 2 * X)
    assert n_first > 0 and n_again == 0, (n_first, n_again)

    # A body that captures a tracer of the enclosing grad is traced per call: each w its gradient.
    def loss(w):
        h = funcgrad.shard_map(lambda a: (a * w) ** 2, mesh=MESH, in_specs=P("x"), out_specs=P("x"))
        return fnp.sum(h(X))

    for w in (2.0, 3.0):
        np.testing.assert_allclose(funcgrad.grad(loss)(w), 2 * w * np.sum(X**2))

    # A static argument (a None in_specs leaf) is part of the key.
    s = funcgrad.shard_map(lambda a, k: a * k, mesh=MESH, in_specs=(P("x"), None), out_specs=P("x"))
    for k in (2.0, 3.0):
        np.testing.assert_allclose(funcgrad.grad(lambda a, k=k: fnp.sum(s(a, k)))(X), np.full(16, k))
