"""Device-to-device resharding (NOTE: [device-to-device resharding] in xla_bridge/reshard.py):
``device_put``/``reshard`` of an Array already on the target's devices moves its shards with a
compiled program, never through the host, for every change of layout on 8 devices."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
from funcgrad.kernel.array import Array
from funcgrad.sharding import AxisType, NamedSharding, P, make_mesh

MESH = make_mesh((4, 2), ("x", "y"), (AxisType.Auto,) * 2)
OTHER = make_mesh((2, 4), ("a", "b"), (AxisType.Auto,) * 2)
X = np.arange(8 * 4 * 1.0).reshape(8, 4)


TARGETS = [
    NamedSharding(MESH, P("y", "x")),
    NamedSharding(MESH, P()),
    NamedSharding(MESH, P(("x", "y"))),
    NamedSharding(MESH, P(None, "y")),
    NamedSharding(OTHER, P("a", "b")),  # another mesh over the same devices
]


@pytest.mark.parametrize("target", TARGETS, ids=str)
def test_device_put_of_a_sharded_array_stays_on_device(target):
    a = funcgrad.device_put(X, NamedSharding(MESH, P("x", "y")))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Array, "_numpy", lambda self: (_ for _ in ()).throw(AssertionError("host read")))
        b = funcgrad.device_put(a, target)
        r = funcgrad.lax.with_sharding_constraint(a, target)  # (reshard names Explicit axes only)
    for out in (b, r):
        assert out.sharding == target
        np.testing.assert_array_equal(np.asarray(out), X)
        for shard in out.addressable_shards:
            np.testing.assert_array_equal(np.asarray(shard.data), X[shard.index])


def test_the_same_sharding_is_no_copy_and_other_devices_go_through_the_host():
    s = NamedSharding(MESH, P("x", "y"))
    a = funcgrad.device_put(X, s)
    assert funcgrad.device_put(a, s) is a
    four = make_mesh((4,), ("x",), (AxisType.Auto,), devices=funcgrad.devices()[:4])
    c = funcgrad.device_put(a, NamedSharding(four, P("x")))  # other devices: through the host
    np.testing.assert_array_equal(np.asarray(c), X)
    assert c.sharding == NamedSharding(four, P("x"))
