"""``axis_index_groups`` (NOTE: [axis_index_groups] in primitives/collectives.py): collectives within
groups of an axis's indices under shard_map and pmap, against jax 0.10.2 (subprocess oracle) and
JAX's documented pmap example; vmap refuses them as jax does."""

from __future__ import annotations

import numpy as np
import pytest
from _jax_oracle import run_jax

import funcgrad
from funcgrad import lax
from funcgrad.sharding import AxisType, P, make_mesh

MESH = make_mesh((4, 2), ("x", "y"), (AxisType.Auto,) * 2)
X = np.arange(16.0).reshape(8, 2)
CASES = [
    ("pmax", dict(axis_index_groups=[[0, 2], [1, 3]])),
    ("all_gather", dict(axis_index_groups=[[0, 1], [2, 3]], tiled=True)),
    ("all_gather", dict(axis_index_groups=[[3, 0], [1, 2]])),
]
ORACLE = """
import json, numpy as np, jax
from jax.sharding import PartitionSpec as P, AxisType
mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
X = np.arange(16.0).reshape(8, 2)
out = []
for name, kw in CASES:
    body = lambda a: getattr(jax.lax, name)(a, "x", **kw)
    f = jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    out.append(np.asarray(jax.jit(f)(X)).tolist())
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def jax_out():
    return run_jax(f"CASES = {CASES!r}\n" + ORACLE)


@pytest.mark.parametrize("k", range(len(CASES)))
def test_groups_in_shard_map_equal_jax(jax_out, k):
    name, kw = CASES[k]
    f = funcgrad.shard_map(
        lambda a: getattr(lax, name)(a, "x", **kw), mesh=MESH, in_specs=P("x"), out_specs=P("x")
    )
    np.testing.assert_allclose(funcgrad.jit(f)(X), jax_out[k])
    np.testing.assert_allclose(f(X), jax_out[k])  # eager: the same collective per device


def test_psum_and_pmean_in_groups_under_pmap():
    # JAX's psum docstring: pmap over 4 devices, groups [[0, 1], [2, 3]]
    x = np.arange(4.0)
    got = funcgrad.pmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [2, 3]]), axis_name="i")(x)
    np.testing.assert_allclose(got, [1.0, 1.0, 5.0, 5.0])
    got = funcgrad.pmap(lambda v: lax.pmean(v, "i", axis_index_groups=[[0, 3], [1, 2]]), axis_name="i")(x)
    np.testing.assert_allclose(got, [1.5, 1.5, 1.5, 1.5])


def test_bad_groups_and_vmap():
    with pytest.raises(ValueError, match="exactly once"):
        funcgrad.pmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [2]]), axis_name="i")(np.ones(4))
    # groups of different sizes are computed as JAX's pmap computes them (replica groups padded)
    out = funcgrad.pmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1, 2], [3]]), axis_name="i")(
        np.ones(4)
    )
    np.testing.assert_array_equal(np.asarray(out), [3.0, 3.0, 3.0, 1.0])  # (jax 0.10.2's value)
    with pytest.raises(NotImplementedError, match="not supported under vmap"):
        funcgrad.vmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0], [1]]), axis_name="i")(np.ones(2))
