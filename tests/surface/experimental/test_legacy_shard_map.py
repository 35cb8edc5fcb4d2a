"""``funcgrad.experimental.shard_map.shard_map``: JAX's legacy signature (mesh and specs by position,
``check_rep``), every mesh axis manual; the same values as jax 0.10.2's on the same program, and
JAX's DeprecationWarning on reading it."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import funcgrad


def _program(lib):
    legacy = importlib.import_module(f"{lib.__name__}.experimental.shard_map")
    mesh = lib.make_mesh((1,), ("x",), (lib.sharding.AxisType.Auto,))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        smap = legacy.shard_map
    f = smap(lambda a: a * 2 + lib.lax.psum(a.sum(), "x"), mesh, lib.P("x"), lib.P("x"), check_rep=False)
    out = lib.jit(f)(np.arange(4.0, dtype=np.float32))
    return np.asarray(out).tolist(), [w.category for w in seen]


def test_legacy_shard_map_matches_jax():
    jax = pytest.importorskip("jax")
    assert _program(funcgrad) == _program(jax) == ([6.0, 8.0, 10.0, 12.0], [DeprecationWarning])
