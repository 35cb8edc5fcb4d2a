"""funcgrad.experimental.multihost_utils in one process, against jax's in one process (the
two-process behaviour is checked by tests/integration/test_distributed.py)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
from funcgrad.experimental import multihost_utils as mu
from funcgrad.sharding import P, make_mesh

# jax, the oracle, runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

jmu = pytest.importorskip("jax.experimental.multihost_utils")

TREE = {"a": np.arange(6.0).reshape(2, 3), "s": np.float32(2.5), "i": np.arange(3, dtype=np.int32)}


@pytest.mark.parametrize("tiled", [False, True])
def test_process_allgather_matches_jax(tiled):
    ours, theirs = mu.process_allgather(TREE, tiled=tiled), jmu.process_allgather(TREE, tiled=tiled)
    for k in TREE:
        assert isinstance(ours[k], np.ndarray)
        assert ours[k].shape == theirs[k].shape and ours[k].dtype == theirs[k].dtype
        np.testing.assert_array_equal(ours[k], theirs[k])


def test_broadcast_assert_equal_and_barrier():
    out = mu.broadcast_one_to_all(TREE)
    for k in TREE:
        np.testing.assert_array_equal(out[k], TREE[k])
        assert isinstance(out[k], np.ndarray)
    mu.assert_equal(TREE, "one process agrees with itself")
    mu.sync_global_devices("a barrier of one")


def test_host_local_global_round_trip():
    mesh = make_mesh((1,), ("x",))
    x = np.arange(8.0).reshape(4, 2)
    g = mu.host_local_array_to_global_array({"w": x}, mesh, {"w": P("x")})
    assert isinstance(g["w"], funcgrad.Array) and g["w"].shape == (4, 2)
    back = mu.global_array_to_host_local_array(g, mesh, P("x"))
    np.testing.assert_array_equal(np.asarray(back["w"]), x)
    with pytest.raises(ValueError, match="partition specs"):
        mu.host_local_array_to_global_array([x, x, x], mesh, [P("x"), P()])
