"""The sharding helpers of ``funcgrad.debug`` against jax's: ``visualize_array_sharding`` and
``visualize_sharding`` print jax's table (the same text, compared with jax's output in this
process) and return None; ``inspect_array_sharding`` reports shardings eagerly and under jit."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import funcgrad
from funcgrad.sharding import AxisType, NamedSharding, P, make_mesh

MESH = make_mesh((4, 2), ("x", "y"), (AxisType.Auto,) * 2)
MESH1 = make_mesh((8,), ("x",), (AxisType.Auto,))
JMESH = jax.make_mesh((4, 2), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
JMESH1 = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))

CASES = [
    ((8, 4), "2d", P("x", "y")),
    ((8, 4), "2d", P("x")),
    ((8, 4), "2d", P(None, "y")),
    ((8, 4), "2d", P()),
    ((8, 4), "1d", P("x")),
    ((8, 4), "2d", P(("x", "y"))),
    ((8, 4), "2d", P("y", "x")),
    ((16, 2), "2d", P("x", "y")),
    ((8,), "1d", P("x")),
    ((6, 6), "2d", P(None, "y")),
]


def _jax_spec(spec):
    return jax.sharding.PartitionSpec(*spec)


@pytest.mark.parametrize("shape,which,spec", CASES)
def test_visualize_array_sharding_prints_jax_table(capsys, shape, which, spec):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    mesh, jmesh = (MESH, JMESH) if which == "2d" else (MESH1, JMESH1)
    assert (
        jax.debug.visualize_array_sharding(jax.device_put(x, jax.NamedSharding(jmesh, _jax_spec(spec))))
        is None
    )
    want = capsys.readouterr().out
    got_ret = funcgrad.debug.visualize_array_sharding(funcgrad.device_put(x, NamedSharding(mesh, spec)))
    got = capsys.readouterr().out
    assert got_ret is None
    assert got == want


def test_visualize_sharding_of_a_shape(capsys):
    jax.debug.visualize_sharding((8, 4), jax.NamedSharding(JMESH, _jax_spec(P("x", "y"))))
    want = capsys.readouterr().out
    funcgrad.debug.visualize_sharding((8, 4), NamedSharding(MESH, P("x", "y")))
    assert capsys.readouterr().out == want
    with pytest.raises(ValueError, match="1 and 2 dimensions"):
        funcgrad.debug.visualize_sharding((2, 2, 2), NamedSharding(MESH, P()))


def test_visualize_array_sharding_of_a_traced_value_says_what_to_use():
    def f(x):
        funcgrad.debug.visualize_array_sharding(x)
        return x

    with pytest.raises(TypeError, match="inspect_array_sharding"):
        funcgrad.jit(f)(np.ones(4))


def test_inspect_array_sharding_eagerly_and_under_jit():
    s = NamedSharding(MESH, P("x", "y"))
    x = funcgrad.device_put(np.ones((8, 4)), s)
    seen = []
    funcgrad.debug.inspect_array_sharding({"a": x}, callback=seen.append)
    assert seen == [s]

    def f(a):
        funcgrad.debug.inspect_array_sharding(a * 2, callback=seen.append)
        return a + 1

    with funcgrad.sharding.use_mesh(MESH):
        out = funcgrad.jit(f)(x)
    np.testing.assert_allclose(out, 2.0)
    assert len(seen) == 2 and isinstance(seen[1], funcgrad.sharding.Sharding)
