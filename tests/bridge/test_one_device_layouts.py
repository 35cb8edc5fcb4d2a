"""A one-device value entering a program laid out over that same device (``jit`` with
``out_shardings``/``in_shardings`` of a ``SingleDeviceSharding`` or a one-device mesh, the SPMD
call route) is its buffer itself, or a copy made on the device into the layout's memory kind
(NOTE: [device-to-device resharding] in xla_bridge/reshard.py), as jax's argument sharding. It
went through the host before (read back, copied and put again per argument per call), which also
left a donated argument alive. The expectations are jax 0.10.2's for the same calls (jax is not
imported here: it would take the native route away)."""

from __future__ import annotations

import numpy as np
from funcgrad.xla_bridge import reshard, sharded

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

_D = funcgrad.devices()[0]
_DEV = SingleDeviceSharding(_D, memory_kind="device")
_HOST = SingleDeviceSharding(_D, memory_kind="pinned_host")


def _on(sharding):
    return funcgrad.device_put(np.arange(6.0, dtype=np.float32).reshape(2, 3), sharding)


def test_device_and_host_arguments_of_one_device_layouts_give_jaxs_values_and_memories():
    x, xh = _on(_DEV), _on(_HOST)
    mesh = Mesh(np.array([_D]).reshape(1, 1), ("x", "y"))
    named = NamedSharding(mesh, PartitionSpec("x", "y"))
    cases = [
        (funcgrad.jit(lambda a: a * 2, out_shardings=_DEV), x, "device"),
        (funcgrad.jit(lambda a: a * 2, out_shardings=_HOST), x, "pinned_host"),
        (funcgrad.jit(lambda a: funcgrad.device_put(a, _DEV) * 2, out_shardings=_DEV), xh, "device"),
        (funcgrad.jit(lambda a: a * 2, in_shardings=named), x, "device"),
    ]
    for f, arg, kind in cases:
        for _ in range(2):  # a miss, then a cached call
            r = f(arg)
            np.testing.assert_array_equal(r, np.arange(6.0).reshape(2, 3) * 2)
            assert r.sharding.memory_kind == kind
            assert not arg.is_deleted()
    np.testing.assert_array_equal(x, np.arange(6.0).reshape(2, 3))  # (the arguments unchanged)
    np.testing.assert_array_equal(xh, np.arange(6.0).reshape(2, 3))


def test_a_donated_device_argument_is_consumed_as_in_jax():
    # jax 0.10.2: y.is_deleted() is True after the call (funcgrad kept y alive: it donated a copy)
    g = funcgrad.jit(lambda a: a + 1, out_shardings=_DEV, donate_argnums=0)
    y = funcgrad.device_put(np.ones((2, 3), np.float32), _DEV)
    np.testing.assert_array_equal(g(y), np.full((2, 3), 2.0))
    assert y.is_deleted()
    z = fnp.ones((2, 3), np.float32)  # host-backed: its device copy is what is donated
    np.testing.assert_array_equal(g(z), np.full((2, 3), 2.0))
    assert z.is_deleted()


def test_onto_its_device_reuses_the_buffer_in_its_memory_and_copies_into_another():
    x = _on(_DEV)
    b = x._buffer
    same = reshard.onto_its_device(b, sharded.replicated([_D]))
    assert same.unsafe_buffer_pointer() == b.unsafe_buffer_pointer()
    host = sharded.MeshSharding([_D], sharded.replicated([_D])._fg_hlo, memory_kind="pinned_host")
    copied = reshard.onto_its_device(b, host)
    assert copied.unsafe_buffer_pointer() != b.unsafe_buffer_pointer()
    np.testing.assert_array_equal(np.asarray(copied), np.arange(6.0).reshape(2, 3))
    if len(funcgrad.devices()) > 1:  # another device's layout: not this route's
        assert reshard.onto_its_device(b, sharded.replicated(funcgrad.devices()[1:2])) is None
