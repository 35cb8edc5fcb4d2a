"""Unreduced and reduced values (JAX 0.10's ``P(..., unreduced=..., reduced=...)``) on 8 CPU
devices against jax 0.10.2 in the same process: each device's block after a ``reshard`` to an
unreduced sharding, the value after resharding back, and the types of the operations on them
(JAX's pjit_test ``ShardingInTypesTest`` cases)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad  # noqa: F401
from funcgrad import sharding as fs

jax = pytest.importorskip("jax")
js = jax.sharding


def _on_both(build):
    """``build(lib, sharding_module)`` under a (2, 2, 2) Explicit mesh of each library."""
    out = []
    for lib, sh in ((funcgrad, fs), (jax, js)):
        mesh = lib.make_mesh((2, 2, 2), ("x", "y", "z"), axis_types=(sh.AxisType.Explicit,) * 3)
        with sh.set_mesh(mesh):
            out.append(build(lib, sh))
    return out


@pytest.mark.parametrize(
    "shape, orig, unreduced",
    [
        ((4,), (None,), ((None,), {"x"})),  # replicated: the group's first device holds it
        ((4, 4), ("x", None), (("x", None), {"y"})),
        ((4, 4), ("x", "y"), ((None, None), {"x", "y", "z"})),  # each device keeps its own piece
        ((), (), ((), {"x"})),
    ],
)
def test_reshard_to_unreduced_and_back_as_jax(shape, orig, unreduced):
    # (jaxlib's put of a replicated layout copied the first block to every device: the sum over
    # the unreduced axes was the value times the group's size)
    def build(lib, sh):
        P = sh.PartitionSpec
        a = lib.device_put(np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape), P(*orig))
        u = sh.reshard(a, P(*unreduced[0], unreduced=unreduced[1]))
        blocks = [(s.device.id, np.asarray(s.data).tolist()) for s in u.addressable_shards]
        back = sh.reshard(u, P(*orig))
        spec = (u.sharding.spec.partitions, set(u.sharding.spec.unreduced))  # (a set's order: hashing)
        return spec, sorted(blocks), np.asarray(back).tolist(), str(back.sharding.spec)

    ours, theirs = _on_both(build)
    assert ours == theirs
