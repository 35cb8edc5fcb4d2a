"""``roofline(f, mesh, in_specs, out_specs)`` against jax's on 8 CPU devices: the collectives'
rules (bytes over each mesh axis and hops) and one device's FLOPs and memory, as JAX's
roofline_test checks them (funcgrad/experimental/roofline/rooflines.py)."""

import dataclasses
from functools import partial

import jax
import jax.experimental.roofline as jroofline
import numpy as np

import funcgrad
import funcgrad.experimental.roofline as froofline


def _program(lib):
    P = lib.sharding.PartitionSpec
    lax = lib.lax

    def f(a, b, c):
        a = lax.all_gather(a, "x", axis=1, tiled=True)
        ab = a @ b
        s = lax.psum(ab, ("y", "z"))
        s = lax.psum_scatter(s, "x", scatter_dimension=1, tiled=True)
        m = lax.pmin(c, ("x", "y"))
        t = lax.all_to_all(c, ("x", "y"), split_axis=0, concat_axis=1, tiled=True)
        p = lax.ppermute(c, ("x", "y"), perm=((0, 3), (3, 0), (1, 2), (2, 1)))
        return s, m, t, p

    specs = (P(None, "x"), P(None, "x"), P("z", ("x", "y")))
    outs = (P(None, "x"), P("z", None), P(("z", "x", "y"), None), P("z", ("x", "y")))
    return f, specs, outs


def _roofline(lib, module):
    mesh = lib.make_mesh((2, 2, 2), ("x", "y", "z"))
    f, specs, outs = _program(lib)
    args = [
        lib.ShapeDtypeStruct((8, 8), np.float32, sharding=lib.sharding.NamedSharding(mesh, s)) for s in specs
    ]
    shapes, result = partial(module.roofline, mesh=mesh, in_specs=specs, out_specs=outs)(f)(*args)
    return [s.shape for s in shapes], [s.sharding.spec for s in shapes], dataclasses.asdict(result)


def test_collectives_as_jax():
    j_shapes, j_specs, j_result = _roofline(jax, jroofline)
    f_shapes, f_specs, f_result = _roofline(funcgrad, froofline)
    assert f_result == j_result
    assert f_shapes == j_shapes
    assert [tuple(s) for s in f_specs] == [tuple(s) for s in j_specs]
