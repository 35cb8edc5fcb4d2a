"""A jit with in_shardings/out_shardings called inside another jit lowers (its shardings become
sharding constraints where the program spans a mesh, nothing on one device): flax nnx's jitted
methods under nnx.jit reach it; was "_jit() got an unexpected keyword argument 'in_shardings'"."""

from __future__ import annotations

import numpy as np

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.sharding import Mesh, NamedSharding
from funcgrad.sharding import PartitionSpec as P


def test_nested_jit_with_shardings_lowers_and_runs():
    mesh = Mesh(np.array(funcgrad.devices()[:1]), ("x",))
    inner = funcgrad.jit(
        lambda x: x * 2, in_shardings=NamedSharding(mesh, P("x")), out_shardings=NamedSharding(mesh, P())
    )
    outer = funcgrad.jit(lambda x: inner(x) + 1)
    np.testing.assert_array_equal(outer(fnp.ones(2)), np.full(2, 3.0))
    assert "call @" in outer.lower(fnp.ones(2)).as_text()
    np.testing.assert_array_equal(outer.lower(fnp.ones(2)).compile()(fnp.ones(2)), np.full(2, 3.0))
