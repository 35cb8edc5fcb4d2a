"""Memory kinds against jax 0.10.2 (one CPU device): shardings carry one (``with_memory_kind``,
``memory_kind=``), ``device_put`` places there, eager operations keep it and refuse operands in
different memories with JAX's message, a jitted function of a host-memory value returns one there,
``funcgrad.memory.Space`` places by space; and committed arrays on the one device (NOTE:
[committed arrays] in xla_bridge/committed.py)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
from funcgrad.sharding import NamedSharding, P, SingleDeviceSharding

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def _program(jx, np_, S, NS, P, make_mesh, space):
    d = jx.devices()[0]
    h = S(d).with_memory_kind("pinned_host")
    x = jx.device_put(np_.arange(3.0, dtype=np_.float32), h)
    y = jx.device_put(np_.ones(3, np_.float32), S(d))
    u = jx.numpy.ones(3, dtype=np_.float32)
    mesh = make_mesh((1,), ("x",))
    rows = {
        "repr": [repr(h), repr(S(d)), repr(NS(mesh, P("x"), memory_kind="unpinned_host"))],
        "eq": [h == S(d), h == S(d, memory_kind="pinned_host"), h.with_memory_kind("device") == S(d)],
    }
    for name, fn in [
        ("x", lambda: x),
        ("x + 1", lambda: x + 1),
        ("x.sum()", lambda: x.sum()),
        ("x * x", lambda: x * x),
        ("jit(x)", lambda: jx.jit(lambda a: a * 2)(x)),
        ("to device", lambda: jx.device_put(x, S(d))),
        ("named", lambda: jx.device_put(np_.ones(2), NS(mesh, P("x"), memory_kind="pinned_host"))),
        ("Space.Host", lambda: jx.device_put(np_.ones(2), space.Host)),
        ("Space.Device", lambda: jx.device_put(x, space.Device)),
        ("uncommitted", lambda: u),
        ("device_put(u)", lambda: jx.device_put(u)),
        ("device_put(u, d)", lambda: jx.device_put(u, d)),
        ("jit(u)", lambda: jx.jit(lambda a: a + 1)(u)),
        ("jit(y)", lambda: jx.jit(lambda a: a + 1)(y)),
        ("y + u", lambda: y + u),
        ("jit out host", lambda: jx.jit(lambda a: a * 2, out_shardings=h)(u)),
        ("jit out device", lambda: jx.jit(lambda a: a + 1, out_shardings=S(d))(x)),
        ("jit in host", lambda: jx.jit(lambda a: a * 2, in_shardings=h)(np_.ones(3, np_.float32))),
    ]:
        r = fn()
        rows[name] = [r.sharding.memory_kind, bool(r.committed), np_.asarray(r).tolist()]
    errors = []
    for fn in (lambda: x + y, lambda: u * x, lambda: S(d).with_memory_kind("bogus")):
        try:
            fn()
            errors.append(None)
        except ValueError as e:
            errors.append(str(e))
    rows["errors"] = errors
    return rows


def test_memory_kinds_and_committed_as_jax():
    memory = funcgrad.memory

    got = _program(funcgrad, np, SingleDeviceSharding, NamedSharding, P, funcgrad.make_mesh, memory.Space)
    want = _program(
        jax,
        np,
        jax.sharding.SingleDeviceSharding,
        jax.sharding.NamedSharding,
        jax.sharding.PartitionSpec,
        jax.make_mesh,
        jax.memory.Space,
    )
    # (jax's mesh repr prints the axis types its make_mesh chose: Explicit, as funcgrad's)
    assert got == want


def test_space_is_jax_memory_space():
    memory = funcgrad.memory

    assert [repr(s) for s in memory.Space] == [repr(s) for s in jax.memory.Space]
    assert [s.value for s in memory.Space] == [s.value for s in jax.memory.Space]


def _types_program(jx, np_, S, shaped_array):
    d = jx.devices()[0]
    x = jx.device_put(np_.arange(3.0, dtype=np_.float32), S(d, memory_kind="pinned_host"))
    y = jx.device_put(np_.ones(3, np_.float32), S(d))
    t = jx.typeof(x)
    a = shaped_array((3,), np_.dtype(np_.float32), memory_space=jx.memory.Space.Host)
    rows = [
        str(t),
        repr(t),
        repr(t.memory_space),
        repr(jx.typeof(y).memory_space),
        t == jx.typeof(y),
        str(jx.typeof(x * 2)),
        str(jx.typeof(x[0])),
        str(a),
        repr(a.update(shape=(2,)).memory_space),
        a == shaped_array((3,), np_.dtype(np_.float32)),
        str(jx.make_jaxpr(lambda v: v * 2)(x)),
        str(jx.make_jaxpr(lambda v: jx.numpy.sin(v).sum() + v[0])(x)),
        # device_put under a trace: its result typed in the memory it names
        str(jx.make_jaxpr(lambda v: jx.device_put(v, S(d, memory_kind="pinned_host")) * 2)(y).out_avals[0]),
        str(jx.make_jaxpr(lambda v: jx.device_put(v * 2, jx.memory.Space.Host))(y).out_avals[0]),
        str(jx.make_jaxpr(lambda v: jx.device_put(v, jx.memory.Space.Device) + 1)(x).out_avals[0]),
    ]
    for fn in (lambda: jx.make_jaxpr(lambda u, v: u + v)(x, y), lambda: jx.jit(lambda u, v: u * v)(y, x)):
        try:
            rows.append(str(fn()))
        except ValueError as e:
            rows.append(str(e))
    return rows


def test_memory_space_in_types_as_jax():
    # NOTE: [memory space in types]: a value in host memory is typed f32<host>[3], its equations'
    # results are in its memory, mixing memories in one equation raises JAX's ValueError.
    import jax.core as jax_core

    from funcgrad.core import ShapedArray

    got = _types_program(funcgrad, np, SingleDeviceSharding, ShapedArray)
    want = _types_program(jax, np, jax.sharding.SingleDeviceSharding, jax_core.ShapedArray)
    assert got == want
