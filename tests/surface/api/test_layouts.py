"""Layouts as JAX's on a CPU (docs/notebooks/layout.md; funcgrad/_layouts.py): ``Format``s in
``jit``'s shardings, the layouts a compiled program takes and gives read back from XLA, an
array's ``format``, and a layout other than XLA's default refused rather than ignored."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.experimental.layout import Format, Layout


def _formats(api, np_, layout_mod, sharding_mod):
    Fmt, Lay = layout_mod.Format, layout_mod.Layout
    duck = api.ShapeDtypeStruct((4, 8), np_.float32)
    apply_exe = (
        api.jit(lambda x, y: (x[0, :], y[:, 0]), in_shardings=Fmt(Lay.AUTO), out_shardings=Fmt(Lay.AUTO))
        .trace(duck, duck)
        .lower()
        .compile()
    )
    arg_formats, kwarg_formats = apply_exe.input_formats
    init_exe = (
        api.jit(lambda x, y: (x * 2, y * 3), out_shardings=arg_formats).trace(duck, duck).lower().compile()
    )
    x = np_.ones((4, 8), np_.float32)
    placed = api.device_put(
        np.ones((4, 8), np.float32), Fmt(Lay((0, 1)), sharding_mod.SingleDeviceSharding(api.devices()[0]))
    )
    return [
        repr(arg_formats),
        kwarg_formats,
        repr(apply_exe.output_formats),
        init_exe.output_formats == arg_formats,
        repr(init_exe.input_formats),
        repr(x.format),
        repr(placed.format),
        np.asarray(apply_exe(x, placed)[1]).tolist(),
    ]


def test_formats_as_jax():
    jax = pytest.importorskip("jax")
    import jax.experimental.layout as jlayout
    import jax.numpy as jnp

    got = _formats(funcgrad, fnp, funcgrad.experimental.layout, funcgrad.sharding)
    want = _formats(jax, jnp, jlayout, jax.sharding)
    assert got == want


def test_a_layout_other_than_xlas_default_is_refused():
    s = funcgrad.sharding.SingleDeviceSharding(funcgrad.devices()[0])
    with pytest.raises(ValueError, match="default layout"):
        funcgrad.device_put(np.ones((2, 3)), Format(Layout((1, 0)), s))
    with pytest.raises(ValueError, match="default layout"):
        funcgrad.jit(lambda x: x, out_shardings=Format(Layout((1, 0)), s))


def test_device_put_refuses_a_format_that_is_not_concrete_in_jaxs_words():
    s = funcgrad.sharding.SingleDeviceSharding(funcgrad.devices()[0])
    for fmt in (Format(Layout.AUTO, s), Format(Layout.AUTO)):
        with pytest.raises(ValueError, match="sharding and layout.*should be concrete"):
            funcgrad.device_put(np.arange(16).reshape(8, 2), fmt)
    with pytest.raises(ValueError, match="Length of major_to_minor and the rank of the value should match"):
        funcgrad.device_put(np.arange(8), Format(Layout((0, 1, 2)), s))
    assert funcgrad.device_put(np.arange(8), Format(None, s)).committed


def test_format_in_shape_dtype_struct_and_make_array_from_callback_as_jax():
    """A Format where JAX takes one: ShapeDtypeStruct(sharding=Format(...)) keeps its layout and
    sharding (``.format``, ``.sharding``; Layout.AUTO refused in JAX's words), and
    make_array_from_callback builds an array of a Format's sharding."""
    jax = pytest.importorskip("jax")
    x = np.arange(6.0).reshape(2, 3)
    for lib in (funcgrad, jax):
        from_lib = jax.experimental.layout if lib is jax else funcgrad.experimental.layout
        s = lib.sharding.SingleDeviceSharding(lib.devices()[0])
        fmt = from_lib.Format(from_lib.Layout((0, 1)), s)
        sds = lib.ShapeDtypeStruct((2, 3), np.float32, sharding=fmt)
        assert sds.format == fmt and sds.sharding == s
        assert lib.ShapeDtypeStruct((2, 3), np.float32).format.layout is None
        with pytest.raises(TypeError, match="`Layout.AUTO` cannot be used in place of a device-local"):
            lib.ShapeDtypeStruct((2, 3), np.float32, sharding=from_lib.Format(from_lib.Layout.AUTO))
        out = lib.make_array_from_callback((2, 3), fmt, lambda idx: x[idx])
        np.testing.assert_array_equal(out, x)
        assert out.sharding == s
