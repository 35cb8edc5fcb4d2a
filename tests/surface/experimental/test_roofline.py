"""``funcgrad.experimental.roofline`` against ``jax.experimental.roofline``: the same functions
give the same RooflineResult (FLOPs, memory bytes, peak memory) on both, each read from its own
jaxpr (funcgrad/experimental/roofline/). The collectives' rules: tests/surface/spmd/test_roofline_spmd.py."""

import dataclasses

import jax
import jax.experimental.roofline as jroofline
import numpy as np
import pytest

import funcgrad
import funcgrad.experimental.roofline as froofline


def _conv(lib, padding, **kw):
    return lambda a, b: lib.lax.conv_general_dilated(a, b, (1, 1), padding, **kw)


def _gather(lib, mode):
    dn = lib.lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    return lambda x, i: lib.lax.gather(x, i, dn, (1, 3), mode=mode)


def _scatter(lib, name):
    dn = lib.lax.ScatterDimensionNumbers(
        update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
    )
    return lambda x, i, u: getattr(lib.lax, name)(x, i, u, dn)


f32, i32 = np.float32, np.int32
X = np.zeros((3, 8), f32)
IMG, KER = np.zeros((2, 3, 10, 12), f32), np.ones((4, 3, 3, 3), f32)
SC = (np.zeros((3, 3), f32), np.zeros((2, 1), i32), np.ones((2, 3), f32))

# name: (function of the library, arguments)
CASES = {
    "sin_plus": (lambda lib: lambda x: lib.numpy.sin(x) + x**2, (X,)),
    "unary": (lambda lib: lib.lax.rsqrt, (X,)),
    "not": (lambda lib: lib.lax.bitwise_not, (np.zeros((3, 8), bool),)),
    "broadcast_add": (lambda lib: lambda a, b: a + b, (X, np.ones((1, 1), f32))),
    "compare": (lambda lib: lambda a, b: a >= b, (X, X)),
    "dot": (lambda lib: lambda a, b: a @ b, (np.zeros((3, 7), f32), np.ones((7, 5), f32))),
    "batched_dot": (lambda lib: lambda a, b: a @ b, (np.zeros((2, 3, 7), f32), np.ones((2, 7, 5), f32))),
    "conv_same": (lambda lib: _conv(lib, "SAME"), (IMG, KER)),
    "conv_valid_strided": (
        lambda lib: lambda a, b: lib.lax.conv_general_dilated(a, b, (2, 2), "VALID"),
        (IMG, KER),
    ),
    "conv_groups": (
        lambda lib: _conv(lib, ((1, 2), (0, 1)), feature_group_count=3),
        (IMG, np.ones((3, 1, 3, 3), f32)),
    ),
    "conv_dilated": (
        lambda lib: lambda a, b: lib.lax.conv_general_dilated(a, b, (1, 1), ((1, 1), (2, 2)), (2, 1), (1, 2)),
        (IMG, KER),
    ),
    "sum_axis": (lambda lib: lambda x: lib.numpy.sum(x, axis=1), (X,)),
    "sum_all": (lambda lib: lambda x: lib.numpy.sum(x), (X,)),
    "cumsum": (lambda lib: lambda x: lib.lax.cumsum(x, axis=1), (X,)),
    "cummax": (lambda lib: lambda x: lib.lax.cummax(x, axis=0), (X,)),
    "select_n": (lambda lib: lib.lax.select_n, (np.zeros((3, 8), i32), X, X)),
    "gather_clip": (lambda lib: _gather(lib, lib.lax.GatherScatterMode.CLIP), (np.zeros((3, 3), i32), SC[1])),
    "gather_fill": (
        lambda lib: _gather(lib, lib.lax.GatherScatterMode.FILL_OR_DROP),
        (np.zeros((3, 3), i32), SC[1]),
    ),
    "scatter": (lambda lib: _scatter(lib, "scatter"), SC),
    "scatter_add": (lambda lib: _scatter(lib, "scatter_add"), SC),
    "scatter_max": (lambda lib: _scatter(lib, "scatter_max"), SC),
    "nested_jit": (lambda lib: lambda x, y: lib.jit(lambda a: a * y)(x) + y, (X, X)),
    "checkpoint": (lambda lib: lib.checkpoint(lambda x: lib.numpy.sin(x) * x), (X,)),
    "pure_callback": (
        lambda lib: lambda x: lib.pure_callback(np.sin, lib.ShapeDtypeStruct(x.shape, x.dtype), x),
        (X,),
    ),
    "debug_callback": (lambda lib: lambda x: (lib.debug.callback(print, x), x)[1], (X,)),
    "shape_dtype_struct": (lambda lib: lambda a, b: a @ b, (None, None)),
}


def _args(lib, name):
    args = CASES[name][1]
    if name == "shape_dtype_struct":
        return (lib.ShapeDtypeStruct((4, 6), f32), lib.ShapeDtypeStruct((6, 2), f32))
    return args


@pytest.mark.parametrize("name", sorted(CASES))
def test_roofline_as_jax(name):
    make = CASES[name][0]
    j_shapes, j_result = jroofline.roofline(make(jax))(*_args(jax, name))
    f_shapes, f_result = froofline.roofline(make(funcgrad))(*_args(funcgrad, name))
    assert dataclasses.asdict(f_result) == dataclasses.asdict(j_result)
    assert np.shape(f_shapes) == np.shape(j_shapes)


def test_grad_and_custom_rules_as_jax():
    mesh_j = jax.make_mesh((1,), ("x",))
    mesh_f = funcgrad.make_mesh((1,), ("x",))
    P_j, P_f = jax.sharding.PartitionSpec, funcgrad.sharding.PartitionSpec
    x = np.zeros((4, 6), f32)
    _, jf, jb = jroofline.roofline_and_grad(lambda a: jax.numpy.tanh(a) @ a.T, mesh_j, P_j(), P_j())(
        jax.numpy.asarray(x)
    )
    _, ff, fb = froofline.roofline_and_grad(lambda a: funcgrad.numpy.tanh(a) @ a.T, mesh_f, P_f(), P_f())(x)
    assert (ff.flops, ff.unfused_hbm_bytes) == (jf.flops, jf.unfused_hbm_bytes)
    assert fb.flops == jb.flops

    p = funcgrad.extend.core.Primitive("twice_for_roofline")
    p.def_abstract_eval(lambda a: a)
    p.def_impl(lambda a: a * 2)
    # No rule: it counts nothing, as in JAX; a registered rule is used.
    assert froofline.roofline(p.bind)(x)[1] == froofline.RooflineResult(peak_hbm_bytes=x.nbytes)
    froofline.register_roofline(p)(lambda ctx, a, **kw: froofline.RooflineResult(unfused_flops=2 * a.size))
    assert froofline.roofline(p.bind)(x)[1].unfused_flops == 48
