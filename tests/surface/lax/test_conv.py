"""funcgrad.lax convolutions against jax.lax (the oracle): values of every public function over
layouts, strides, paddings, dilations and groups; gradients and per-example gradients; the
batch rule keeps one convolution per convolution; ``precision`` and ``preferred_element_type``
reach XLA; complex and integer convolutions; and the errors users see for bad input.

(The generic primitive checks -- finite differences to second order, vmap over every argument,
jit against eager, the transpose dot-product test -- are the op_db entry in tests/primitives/op_db/conv.py.)
"""

from __future__ import annotations

import numpy as np
import pytest
from funcgrad.primitives.conv import conv_general_dilated_p

import funcgrad
from funcgrad import lax

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)
jlax = jax.lax

RNG = np.random.default_rng(0)
DN_NHWC = ("NHWC", "HWIO", "NHWC")

# (lhs shape, rhs shape, strides, padding, lhs_dilation, rhs_dilation, dimension_numbers, fgc, bgc)
CASES = [
    ((2, 3, 9, 8), (4, 3, 3, 2), (2, 1), "SAME", None, None, None, 1, 1),
    ((2, 9, 8, 3), (3, 2, 3, 4), (1, 2), "VALID", None, (2, 1), ("NHWC", "HWIO", "NHWC"), 1, 1),
    ((2, 9, 8, 4), (3, 3, 2, 6), (2, 2), "SAME_LOWER", None, None, ("NHWC", "HWIO", "NHWC"), 2, 1),
    ((4, 9, 8, 3), (3, 3, 3, 4), (1, 1), [(1, 2), (0, -1)], (2, 1), None, ("NHWC", "HWIO", "NHWC"), 1, 2),
    ((2, 5, 7), (10, 1, 3), (3,), [(2, 2)], None, (2,), ("NCH", "OIH", "NCH"), 5, 1),
    ((1, 2, 5, 6, 4), (3, 2, 2, 2, 2), (1, 2, 1), "SAME", None, None, ("NCHWD", "OIHWD", "NDHWC"), 1, 1),
    ((3, 7, 2), (2, 2, 4), (1,), [(1, 2)], (3,), (2,), ("NWC", "WIO", "CWN"), 1, 1),
]


def _pair(lhs_shape, rhs_shape, dtype=np.float64):
    return RNG.standard_normal(lhs_shape).astype(dtype), RNG.standard_normal(rhs_shape).astype(dtype)


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_conv_general_dilated_matches_jax(case):
    lhs_shape, rhs_shape, strides, padding, ld, rd, dn, fgc, bgc = case
    x, w = _pair(lhs_shape, rhs_shape)
    args = (strides, padding, ld, rd, dn, fgc, bgc)
    want = jlax.conv_general_dilated(x, w, *args)
    got = lax.conv_general_dilated(x, w, *args)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-10)
    jitted = funcgrad.jit(lambda x, w: lax.conv_general_dilated(x, w, *args))(x, w)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(want), rtol=1e-10, atol=1e-10)
    # Reverse mode for both operands against JAX.
    ct = RNG.standard_normal(want.shape)

    def loss(f):
        return lambda x, w: (f.conv_general_dilated(x, w, *args) * ct).sum()

    g = funcgrad.grad(loss(lax), argnums=(0, 1))(x, w)
    gj = jax.jit(jax.grad(loss(jlax), argnums=(0, 1)))(x, w)  # (one program, not one per op)
    for a, b in zip(g, gj):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-9)


def test_convenience_wrappers_match_jax():
    x, w = _pair((2, 3, 8, 7), (5, 3, 3, 2))
    np.testing.assert_allclose(lax.conv(x, w, (1, 2), "SAME"), jlax.conv(x, w, (1, 2), "SAME"), rtol=1e-10)
    args = ((2, 1), [(1, 0), (2, 1)], (1, 2), (2, 1))
    np.testing.assert_allclose(
        lax.conv_with_general_padding(x, w, *args), jlax.conv_with_general_padding(x, w, *args), rtol=1e-10
    )


@pytest.mark.parametrize("padding", ["SAME", "VALID", [(1, 2), (0, 1)], [(0, 0), (2, 2)]])
@pytest.mark.parametrize("transpose_kernel", [False, True])
@pytest.mark.parametrize("consistent", [False, True])
def test_conv_transpose_matches_jax(padding, transpose_kernel, consistent):
    x, w = _pair((2, 5, 6, 3), (3, 2, 3, 3))
    kw = dict(transpose_kernel=transpose_kernel, use_consistent_padding=consistent)
    want = jlax.conv_transpose(x, w, (2, 1), padding, **kw)
    got = lax.conv_transpose(x, w, (2, 1), padding, **kw)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-10)


def test_conv_transpose_1d_and_dilation_match_jax():
    x, w = _pair((2, 7, 3), (3, 3, 4))
    want = jlax.conv_transpose(x, w, (3,), "SAME", rhs_dilation=(2,))
    np.testing.assert_allclose(lax.conv_transpose(x, w, (3,), "SAME", rhs_dilation=(2,)), want, rtol=1e-10)


def test_patches_and_local_match_jax():
    x = RNG.standard_normal((2, 3, 7, 6))
    args = ((2, 3), (1, 2), "SAME", None, (1, 2))
    np.testing.assert_allclose(
        lax.conv_general_dilated_patches(x, *args), jlax.conv_general_dilated_patches(x, *args), rtol=1e-12
    )
    xl = RNG.standard_normal((2, 3, 6, 5))
    out_shape = jlax.conv_general_dilated_patches(xl, (2, 2), (1, 1), "SAME").shape
    rhs = RNG.standard_normal((4, 3 * 4, *out_shape[2:]))
    np.testing.assert_allclose(
        lax.conv_general_dilated_local(xl, rhs, (1, 1), "SAME", (2, 2)),
        jlax.conv_general_dilated_local(xl, rhs, (1, 1), "SAME", (2, 2)),
        rtol=1e-10,
    )


def test_shape_helpers_match_jax():
    dn = ("NHWC", "HWIO", "NHWC")
    assert lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), dn) == tuple(
        jlax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), dn)
    )
    assert lax.conv_general_permutations(dn) == jlax.conv_general_permutations(dn)
    for pad in ("SAME", "VALID", [(1, 0), (2, 3)]):
        assert lax.conv_general_shape_tuple((2, 9, 8, 3), (3, 2, 3, 4), (2, 1), pad, dn) == tuple(
            jlax.conv_general_shape_tuple((2, 9, 8, 3), (3, 2, 3, 4), (2, 1), pad, dn)
        )
        assert lax.conv_shape_tuple((2, 3, 9, 8), (4, 3, 3, 2), (2, 1), pad) == tuple(
            jlax.conv_shape_tuple((2, 3, 9, 8), (4, 3, 3, 2), (2, 1), pad)
        )
    for pad in ("SAME", "VALID", [(1, 0), (2, 3)]):
        assert lax.conv_transpose_shape_tuple((2, 9, 8, 3), (3, 2, 3, 4), (2, 1), pad, dn) == tuple(
            jlax.conv_transpose_shape_tuple((2, 9, 8, 3), (3, 2, 3, 4), (2, 1), pad, dn)
        )
    for pad in ("SAME", "SAME_LOWER", "VALID"):
        assert lax.padtype_to_pads((7, 6), (3, 4), (2, 3), pad) == [
            tuple(p) for p in jlax.padtype_to_pads((7, 6), (3, 4), (2, 3), pad)
        ]
    assert isinstance(lax.conv_dimension_numbers((1, 1, 3), (1, 1, 2), None), lax.ConvDimensionNumbers)


# ----------------------------------------------------------------------------------------------
# vmap folds into one convolution


def _count(closed, prim):
    return sum(1 for e in closed.jaxpr.eqns if e.primitive is prim)


@pytest.mark.parametrize("fgc", [1, 2])
def test_per_example_gradients_stay_one_convolution(fgc):
    x = RNG.standard_normal((5, 1, 8, 8, 4))
    w = RNG.standard_normal((3, 3, 4 // fgc, 6))
    dn = ("NHWC", "HWIO", "NHWC")

    def loss(w, x):
        y = lax.conv_general_dilated(x, w, (2, 1), "SAME", None, (1, 2), dn, feature_group_count=fgc)
        return (y * y).sum()

    per_example = funcgrad.vmap(funcgrad.grad(loss), in_axes=(None, 0))
    closed = funcgrad.make_jaxpr(per_example)(w, x)
    single = funcgrad.make_jaxpr(funcgrad.grad(loss))(w, x[0])
    # As many convolutions as one example's gradient needs: the batch folded into groups.
    assert _count(closed, conv_general_dilated_p) == _count(single, conv_general_dilated_p)
    loop = np.stack([np.asarray(funcgrad.grad(loss)(w, xi)) for xi in x])
    np.testing.assert_allclose(np.asarray(per_example(w, x)), loop, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(funcgrad.jit(per_example)(w, x)), loop, rtol=1e-10, atol=1e-10)
    want = jax.jit(jax.vmap(jax.grad(loss_jax(dn, fgc)), in_axes=(None, 0)))(w, x)
    np.testing.assert_allclose(loop, np.asarray(want), rtol=1e-10, atol=1e-10)


def loss_jax(dn, fgc):
    def loss(w, x):
        y = jlax.conv_general_dilated(x, w, (2, 1), "SAME", None, (1, 2), dn, feature_group_count=fgc)
        return (y * y).sum()

    return loss


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0), (1, 3)])
@pytest.mark.parametrize("groups", [(1, 1), (3, 1), (1, 2)])
def test_vmap_matches_jax_for_grouped_convolutions(in_axes, groups):
    fgc, bgc = groups
    lanes = 4
    xs = RNG.standard_normal((lanes, 2, 6, 7, 3))
    ws = RNG.standard_normal((lanes, 3, 2, 3 // fgc, 6))
    x = xs[0] if in_axes[0] is None else np.moveaxis(xs, 0, in_axes[0])
    w = ws[0] if in_axes[1] is None else np.moveaxis(ws, 0, in_axes[1])
    dn = ("NHWC", "HWIO", "NHWC")

    def f(mod):
        return lambda x, w: mod.conv_general_dilated(x, w, (1, 2), "SAME", None, None, dn, fgc, bgc)

    want = jax.vmap(f(jlax), in_axes=in_axes)(x, w)
    got = funcgrad.vmap(f(lax), in_axes=in_axes)(x, w)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-10)
    closed = funcgrad.make_jaxpr(funcgrad.vmap(f(lax), in_axes=in_axes))(x, w)
    assert _count(closed, conv_general_dilated_p) == 1


# ----------------------------------------------------------------------------------------------
# precision, preferred_element_type, dtypes


@pytest.mark.parametrize(
    "precision", [None, "highest", lax.Precision.HIGH, ("default", "highest"), (lax.Precision.HIGHEST, None)]
)
def test_precision_is_accepted_and_reaches_xla(precision):
    x, w = _pair((1, 2, 5), (3, 2, 2), np.float32)
    y = lax.conv(x, w, (1,), "VALID", precision=precision)
    np.testing.assert_allclose(np.asarray(y), np.asarray(jlax.conv(x, w, (1,), "VALID")), rtol=1e-5)
    text = funcgrad.jit(lambda x, w: lax.conv(x, w, (1,), "VALID", precision=precision)).lower(x, w).as_text()
    assert ("precision_config" in text) == (precision is not None)
    a, b = RNG.standard_normal((3, 4)).astype(np.float32), RNG.standard_normal((4, 2)).astype(np.float32)
    text = funcgrad.jit(lambda a, b: lax.dot(a, b, precision=precision)).lower(a, b).as_text()
    assert ("precision = [" in text) == (precision is not None)
    import funcgrad.numpy as fnp

    for fn in (
        lambda: fnp.matmul(a, b, precision=precision),
        lambda: fnp.dot(a, b, precision=precision),
        lambda: fnp.einsum("ij,jk->ik", a, b, precision=precision),
        lambda: lax.dot_general(a, b, (((1,), (0,)), ((), ())), precision=precision),
    ):
        np.testing.assert_allclose(np.asarray(fn()), a @ b, rtol=1e-5)


def test_bad_precision_is_refused():
    x, w = _pair((1, 2, 5), (3, 2, 2))
    with pytest.raises(ValueError, match="precision"):
        lax.conv(x, w, (1,), "VALID", precision="fast-ish")
    with pytest.raises(ValueError, match="precision"):
        lax.dot(np.ones((2, 2)), np.ones((2, 2)), precision=3)


def test_preferred_element_type_accumulates_wide():
    x = np.full((1, 1, 40), 100, np.int8)
    w = np.full((1, 1, 20), 100, np.int8)
    y = lax.conv(x, w, (1,), "VALID", preferred_element_type=np.int32)
    assert y.dtype == np.int32 and int(y[0, 0, 0]) == 200000
    yj = funcgrad.jit(lambda x, w: lax.conv(x, w, (1,), "VALID", preferred_element_type=np.int32))(x, w)
    assert yj.dtype == np.int32 and int(yj[0, 0, 0]) == 200000
    xf, wf = _pair((1, 2, 5), (3, 2, 2), np.float32)
    assert lax.conv(xf, wf, (1,), "VALID", preferred_element_type=np.float64).dtype == np.float64


def test_integer_and_float32_convolutions():
    x = RNG.integers(-5, 5, (2, 3, 7)).astype(np.int32)
    w = RNG.integers(-3, 3, (4, 3, 3)).astype(np.int32)
    want = np.asarray(jlax.conv(x, w, (2,), "SAME"))
    assert lax.conv(x, w, (2,), "SAME").dtype == np.int32
    np.testing.assert_array_equal(np.asarray(lax.conv(x, w, (2,), "SAME")), want)
    np.testing.assert_array_equal(
        np.asarray(funcgrad.jit(lambda x, w: lax.conv(x, w, (2,), "SAME"))(x, w)), want
    )
    xf, wf = x.astype(np.float32), w.astype(np.float32)
    assert lax.conv(xf, wf, (2,), "SAME").dtype == np.float32


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"preferred_element_type": np.float32},
        {"preferred_element_type": np.int32},
        {"feature_group_count": 2},
        {"lhs_dilation": (2,)},
        {"batch_group_count": 2},
    ],
)
def test_boolean_convolutions_as_jax(kw):
    # (the lax-parameter fuzzer) booleans convolve as in JAX: an OR of ANDs, or a count in a
    # preferred type; eagerly, under jit and vmap
    x = RNG.integers(0, 2, (2, 4, 6)).astype(bool)
    w = RNG.integers(0, 2, (4, 2 if "feature_group_count" in kw else 4, 3)).astype(bool)
    kw = {"lhs_dilation": (1,), **kw}
    want = np.asarray(jlax.conv_general_dilated(x, w, (1,), [(1, 0)], **kw))
    got = lax.conv_general_dilated(x, w, (1,), [(1, 0)], **kw)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want)
    jitted = funcgrad.jit(lambda x, w: lax.conv_general_dilated(x, w, (1,), [(1, 0)], **kw))(x, w)
    np.testing.assert_array_equal(np.asarray(jitted), want)
    if "batch_group_count" not in kw:
        per_row = funcgrad.vmap(lambda r: lax.conv_general_dilated(r[None], w, (1,), [(1, 0)], **kw)[0])(x)
        np.testing.assert_array_equal(np.asarray(per_row), want)


def test_complex_convolution_matches_jax():
    x = RNG.standard_normal((2, 3, 7)) + 1j * RNG.standard_normal((2, 3, 7))
    w = RNG.standard_normal((4, 3, 3)) + 1j * RNG.standard_normal((4, 3, 3))
    want = np.asarray(jlax.conv(x, w, (2,), "SAME"))
    np.testing.assert_allclose(
        np.asarray(funcgrad.jit(lambda x, w: lax.conv(x, w, (2,), "SAME"))(x, w)), want
    )
    from funcgrad.primitives import conv as cv

    dn = cv.ConvDimensionNumbers((0, 1, 2), (0, 1, 2), (0, 1, 2))
    eager = cv.conv_general_dilated(
        x,
        w,
        window_strides=(2,),
        padding=((1, 1),),
        lhs_dilation=(1,),
        rhs_dilation=(1,),
        dimension_numbers=dn,
    )
    np.testing.assert_allclose(np.asarray(eager), want)


# ----------------------------------------------------------------------------------------------
# Errors: clear ValueErrors at trace time, never from XLA


@pytest.mark.parametrize(
    "lhs_shape, rhs_shape, kwargs, match",
    [
        ((1, 2, 5), (3, 2, 2, 2), {}, "same number of dimensions"),
        ((1, 3, 5), (4, 1, 2), dict(feature_group_count=2), "feature_group_count=2 must divide"),
        ((1, 4, 5), (3, 2, 2), dict(feature_group_count=2), "multiple of feature_group_count"),
        ((1, 4, 5), (4, 3, 2), {}, "rhs input feature dimension size"),
        ((3, 2, 5), (4, 2, 2), dict(batch_group_count=2), "batch_group_count=2 must divide"),
        ((1, 2, 5), (4, 2, 2), dict(padding=[(-3, -3)]), "crops spatial dimension 0"),
        ((1, 2, 5), (4, 2, 2), dict(window_strides=(1, 1)), "window_strides"),
        ((1, 2, 5), (4, 2, 2), dict(window_strides=(0,)), "positive"),
        ((1, 2, 5), (4, 2, 2), dict(padding="SAME", lhs_dilation=(2,)), "string padding"),
    ],
)
def test_bad_input_raises_value_error_naming_the_problem(lhs_shape, rhs_shape, kwargs, match):
    x, w = np.ones(lhs_shape), np.ones(rhs_shape)
    params = dict(window_strides=(1,), padding="VALID")
    params.update(kwargs)
    strides, padding = params.pop("window_strides"), params.pop("padding")
    with pytest.raises(ValueError, match=match):
        lax.conv_general_dilated(x, w, strides, padding, **params)
    with pytest.raises(ValueError, match=match):  # the same error under jit, before XLA sees anything
        funcgrad.jit(lambda x, w: lax.conv_general_dilated(x, w, strides, padding, **params))(x, w)


@pytest.mark.parametrize("padding", ["VALID", ((0, -1),)])
def test_window_larger_than_the_padded_input_gives_no_positions(padding):
    # As JAX's (stride_dim's max(0, ...)): an empty output, eagerly, under jit and under grad (the
    # fuzzer found funcgrad raising for a cropped 3-row input and a 3-row kernel).
    x, w = np.arange(6.0).reshape(1, 2, 3), np.ones((4, 2, 4))
    f = lambda lx: lambda x, w: lx.conv_general_dilated(x, w, (1,), padding)  # noqa: E731
    want = f(jlax)(x, w)
    assert want.shape == (1, 4, 0)
    np.testing.assert_array_equal(f(lax)(x, w), want)
    np.testing.assert_array_equal(funcgrad.jit(f(lax))(x, w), want)
    g = funcgrad.grad(lambda x, w: f(lax)(x, w).sum() + (x * w[0, :, :3]).sum(), argnums=(0, 1))(x, w)
    gj = jax.grad(lambda x, w: f(jlax)(x, w).sum() + (x * w[0, :, :3]).sum(), argnums=(0, 1))(x, w)
    np.testing.assert_array_equal(g[0], gj[0])
    np.testing.assert_array_equal(g[1], gj[1])


def test_bad_dimension_numbers_and_dtypes():
    x, w = np.ones((1, 5, 5, 2)), np.ones((3, 3, 2, 4))
    with pytest.raises(TypeError, match="exactly once"):
        lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWW", "HWIO", "NHWC"))
    with pytest.raises(TypeError, match="same set of spatial"):
        lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HXIO", "NHWC"))
    # Mixed dtypes: funcgrad's 64-bit mode promotes them (NumPy 2's rules); under JAX's rules
    # (32-bit mode) they are JAX's TypeError; the primitive requires one dtype.
    mixed = lax.conv_general_dilated(x.astype(np.float32), w, (1, 1), "SAME", dimension_numbers=DN_NHWC)
    assert mixed.dtype == np.float64
    previous = funcgrad.config.jax_enable_x64
    funcgrad.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(TypeError, match="requires arguments to have the same dtypes"):
            lax.conv_general_dilated(
                x.astype(np.float16), w.astype(np.float32), (1, 1), "SAME", dimension_numbers=DN_NHWC
            )
    finally:
        funcgrad.config.update("jax_enable_x64", previous)
    dn = lax.conv_dimension_numbers(x.shape, w.shape, DN_NHWC)
    params = dict(window_strides=(1, 1), padding=((1, 1), (1, 1)), lhs_dilation=(1, 1), rhs_dilation=(1, 1))
    with pytest.raises(TypeError, match="one dtype"):
        conv_general_dilated_p.bind(
            x.astype(np.float32),
            w,
            dimension_numbers=dn,
            feature_group_count=1,
            batch_group_count=1,
            **params,
        )
    with pytest.raises(TypeError, match="preferred_element_type"):
        lax.conv(np.ones((1, 1, 3)), np.ones((1, 1, 2)), (1,), "VALID", preferred_element_type=np.int32)


@pytest.mark.parametrize(
    "lhs_shape, rhs_shape, strides, padding, lhs_dil, rhs_dil, dn, groups",
    [
        ((2, 9, 8, 6), (3, 2, 1, 12), (2, 1), [(1, 2), (0, 1)], (1, 1), (1, 2), ("NHWC", "HWIO", "NHWC"), 6),
        ((3, 4, 7, 6), (8, 2, 2, 3), (1, 2), [(2, -1), (1, 1)], (2, 1), (1, 1), ("NCHW", "OIHW", "NCHW"), 2),
        (
            (13, 13, 4, 16),
            (1, 5, 5, 64),
            (1, 1),
            [(0, -1), (0, -1)],
            (1, 1),
            (2, 2),
            ("HWNC", "IHWO", "HWNC"),
            16,
        ),
        ((2, 10, 3), (4, 1, 6), (3,), [(2, 2)], (1,), (2,), ("NWC", "WIO", "CWN"), 3),
    ],
)
def test_grouped_convolution_as_patches(lhs_shape, rhs_shape, strides, padding, lhs_dil, rhs_dil, dn, groups):
    # NOTE: [convolution as patches]: XLA's own grouped convolution and the oracle agree with the
    # im2col lowering (both slicing orders: by kernel offset and by output position). In float32:
    # a depthwise float64 one stays native (NOTE: [depthwise float64 convolutions]).
    from funcgrad.xla_bridge.rules import conv as rules

    x, w = _pair(lhs_shape, rhs_shape, np.float32)

    def conv(x, w):
        return lax.conv_general_dilated(
            x, w, strides, padding, lhs_dil, rhs_dil, dn, feature_group_count=groups
        )

    def run():
        funcgrad.clear_caches()
        return np.asarray(funcgrad.jit(conv)(x, w))

    patched = run()
    la, ra = funcgrad.core.get_aval(x), funcgrad.core.get_aval(w)
    closed = funcgrad.make_jaxpr(conv)(x, w)
    params = closed.eqns[-1].params
    assert rules._patch_plan(la, ra, closed.out_avals[0], params) is not None  # the patches path ran
    want = jlax.conv_general_dilated(x, w, strides, padding, lhs_dil, rhs_dil, dn, feature_group_count=groups)
    np.testing.assert_allclose(patched, np.asarray(want), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_depthwise_convolution_of_an_inf_has_jax_nans(dtype):
    # NOTE: [depthwise float64 convolutions]: XLA's CPU compiler makes a depthwise float64
    # convolution dense, so an inf in one feature's window gives NaN in every feature's output there
    # (jax's conv_general_dilated_patches of an inf; found by the fuzzer); float32 stays grouped.
    import jax

    x = np.zeros((1, 2, 3, 3), dtype)
    x[0, 0, 0, 0] = np.inf
    w = np.arange(1.0, 9.0, dtype=dtype).reshape(4, 1, 1, 2)

    def run(lax):
        return [
            lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "SAME"),
            lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=2),
        ]

    want = [np.asarray(v) for v in jax.jit(lambda: run(jlax))()]
    assert np.isnan(want[0]).sum() == (7 if dtype == np.float64 else 3)
    for got in (run(lax), funcgrad.jit(lambda: run(lax))()):
        for g, v in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), v)


@pytest.mark.parametrize("lhs_dilation", [(1, 1), (1, 4)])
def test_conv_of_an_empty_spatial_input_as_jax(lhs_dilation):
    # JAX's testConvGeneralDilated through funcgrad.as_jax: an input of width 0 (padded to less
    # than the kernel, or dilated) raised NumPy's reshape/negative-dimension errors eagerly.
    import jax

    x, w = np.ones((4, 2, 9, 0), np.float32), np.ones((4, 2, 4, 5), np.float32)
    kw = dict(window_strides=(1, 1), padding=((1, 2), (2, 4)), lhs_dilation=lhs_dilation)
    want = jax.lax.conv_general_dilated(x, w, **kw)
    got = funcgrad.lax.conv_general_dilated(x, w, **kw)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("dtype", [np.int8, np.float16])
def test_preferred_bfloat16_eager_dtype_as_jax(dtype):
    # The eager impl's NumPy matmul of bfloat16 gave float32 (the lax-parameter fuzzer's probe)
    import ml_dtypes

    x, w = np.ones((1, 2, 4), dtype), np.ones((3, 2, 2), dtype)
    want = jax.lax.conv_general_dilated(x, w, (1,), "VALID", preferred_element_type=ml_dtypes.bfloat16)
    got = lax.conv_general_dilated(x, w, (1,), "VALID", preferred_element_type=ml_dtypes.bfloat16)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(want, np.float32))


def test_eager_float_convolution_is_xla_s_bits_as_jax():
    # An eager float32 convolution runs compiled alone (NOTE: [eager products are XLA's]): its
    # bits are jit's and jax's, and do not depend on the output position, so a circular
    # convolution equals the rolled one (equinox's test_conv_circular, seed by seed).
    rng = np.random.default_rng(0)
    # (8 input features: at 4 or fewer funcgrad's lowering takes patches, NOTE: [convolution as
    # patches], whose sums differ from jax's in the last place)
    x = rng.standard_normal((4, 8, 17)).astype(np.float32)
    w = rng.standard_normal((5, 8, 4)).astype(np.float32)
    conv = lambda a, b: lax.conv_general_dilated(a, b, (1,), "SAME")  # noqa: E731
    eager = np.asarray(conv(x, w))
    np.testing.assert_array_equal(eager, np.asarray(funcgrad.jit(conv)(x, w)))
    np.testing.assert_array_equal(eager, np.asarray(jax.lax.conv_general_dilated(x, w, (1,), "SAME")))
    for seed in range(40):
        r = np.random.default_rng(seed)
        v = r.standard_normal((1, 1, 6)).astype(np.float32)
        k = r.standard_normal((1, 1, 3)).astype(np.float32)
        padded = lambda a: np.concatenate([a[..., -1:], a, a[..., :1]], axis=-1)  # noqa: E731
        circular = np.asarray(lax.conv_general_dilated(padded(v), k, (1,), "VALID"))
        rolled = np.asarray(lax.conv_general_dilated(padded(np.roll(v, 2, -1)), k, (1,), "VALID"))
        np.testing.assert_array_equal(circular, np.roll(rolled, -2, -1))
