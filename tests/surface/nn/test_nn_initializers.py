"""funcgrad.nn.initializers and funcgrad.nn.dot_product_attention against jax.nn (the oracle):
the same keys give the same weights (funcgrad.random's bits are JAX's), shapes/dtypes/statistics,
orthogonality, errors; attention values, masks and gradients, batching and jit."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.nn as nn
from funcgrad import random
from funcgrad.testing import check_grads

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)
I, J = nn.initializers, jax.nn.initializers


def test_all_names_exist():
    public = {n for n in dir(J) if not n.startswith("_") and n[0].islower() or n == "Initializer"}
    assert set(I.__all__) == public, set(I.__all__) ^ public
    assert "initializers" in nn.__all__ and "dot_product_attention" in nn.__all__


VARIANCE_SCALING = [n for n in I.__all__ if n.split("_")[0] in ("glorot", "he", "lecun")]


def test_aliases():
    assert I.xavier_normal is I.glorot_normal and I.xavier_uniform is I.glorot_uniform
    assert I.kaiming_normal is I.he_normal and I.kaiming_uniform is I.he_uniform


@pytest.mark.parametrize("name", VARIANCE_SCALING)
@pytest.mark.parametrize("shape, dtype", [((3, 4), np.float64), ((3, 3, 8, 16), np.float32)])
def test_variance_scaling_family_matches_jax(name, shape, dtype):
    got = getattr(I, name)()(random.PRNGKey(3), shape, dtype)
    want = getattr(J, name)()(jax.random.PRNGKey(3), shape, dtype)
    assert got.shape == shape and got.dtype == dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.normal(0.5),
        lambda m: m.uniform(2.0),
        lambda m: m.truncated_normal(3.0, lower=-1.0, upper=1.5),
        lambda m: m.constant(-7),
        lambda m: m.variance_scaling(2.0, "fan_geo_avg", "normal", in_axis=(0, 1), out_axis=2, batch_axis=3),
        lambda m: m.variance_scaling(0.5, "fan_out", "uniform", in_axis=-1, out_axis=-2),
        lambda m: m.variance_scaling(1.0, "fan_avg", "truncated_normal", batch_axis=0),
    ],
)
def test_factories_match_jax(make):
    got = make(I)(random.PRNGKey(5), (2, 3, 4, 5), np.float32)
    want = make(J)(jax.random.PRNGKey(5), (2, 3, 4, 5), np.float32)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-6, atol=1e-7)


def test_zeros_ones_and_default_dtype():
    for fn, jfn in ((I.zeros, J.zeros), (I.ones, J.ones)):
        got, want = fn(random.PRNGKey(0), (2, 3)), jfn(jax.random.PRNGKey(0), (2, 3))
        assert got.dtype == want.dtype == np.float64
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert I.normal()(random.PRNGKey(0), (4,)).dtype == np.float64
    assert I.glorot_uniform(dtype=np.float32)(random.PRNGKey(0), (4, 2)).dtype == np.float32


@pytest.mark.parametrize(
    "shape, axis", [((4, 3), -1), ((3, 5), -1), ((2, 3, 4), -1), ((5, 4), 0), ((6, 6), -1)]
)
def test_orthogonal_matches_jax(shape, axis):
    got = I.orthogonal(2.0, axis)(random.PRNGKey(1), shape, np.float64)
    want = J.orthogonal(2.0, axis)(jax.random.PRNGKey(1), shape, np.float64)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-10)
    m = np.moveaxis(np.asarray(got), axis, -1).reshape(-1, shape[axis]) / 2.0
    small = min(m.shape)
    gram = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-10)


def test_delta_orthogonal_matches_jax():
    for shape in [(3, 4, 4), (3, 3, 2, 5), (3, 3, 3, 4, 4)]:
        got = I.delta_orthogonal()(random.PRNGKey(2), shape)
        want = J.delta_orthogonal()(jax.random.PRNGKey(2), shape)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-10)


def test_initializers_work_under_jit_and_are_initializers():
    init = I.he_normal()
    assert isinstance(init, I.Initializer)
    eager = init(random.PRNGKey(0), (4, 3), np.float32)
    jitted = funcgrad.jit(lambda k: init(k, (4, 3), np.float32))(random.PRNGKey(0))
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(eager), rtol=1e-6)


def test_initializer_errors():
    with pytest.raises(ValueError, match="mode"):
        I.variance_scaling(1.0, "fan_sideways", "normal")
    with pytest.raises(ValueError, match="distribution"):
        I.variance_scaling(1.0, "fan_in", "cauchy")
    with pytest.raises(ValueError, match="1-dimensional weights"):
        I.glorot_normal()(random.PRNGKey(0), (5,))
    with pytest.raises(ValueError, match="at least a 2-D"):
        I.orthogonal()(random.PRNGKey(0), (5,))
    with pytest.raises(ValueError, match="fan_in"):
        I.delta_orthogonal()(random.PRNGKey(0), (3, 3, 5, 2))
    with pytest.raises(TypeError, match="floating-point"):
        I.normal()(random.PRNGKey(0), (2,), np.int32)


def test_zeros_ones_constant_take_any_dtype_as_jax():
    # (JAX's are jnp.zeros/ones/full of the dtype given: int and bool state in flax/equinox)
    for name, args in (("zeros", ()), ("ones", ()), ("constant", (3,))):
        for dtype in (np.int32, np.bool_, np.float16):
            ours = getattr(I, name)(*args) if args else getattr(I, name)
            theirs = getattr(jax.nn.initializers, name)(*args) if args else getattr(jax.nn.initializers, name)
            got, want = ours(random.PRNGKey(0), (2,), dtype), theirs(jax.random.PRNGKey(0), (2,), dtype)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# ----------------------------------------------------------------------------------------------
# dot_product_attention

RNG = np.random.default_rng(0)
Q = RNG.standard_normal((2, 5, 4, 8))
K = RNG.standard_normal((2, 6, 2, 8))
V = RNG.standard_normal((2, 6, 2, 8))
BIAS = RNG.standard_normal((2, 4, 5, 6))
MASK = RNG.random((2, 1, 5, 6)) > 0.3
OPTIONS = [
    {},
    dict(bias=BIAS),
    dict(mask=MASK),
    dict(is_causal=True),
    dict(local_window_size=(1, 2)),
    dict(local_window_size=1),
    dict(query_seq_lengths=np.array([3, 5], np.int32), key_value_seq_lengths=np.array([4, 6], np.int32)),
    dict(scale=0.3, bias=BIAS[:, :1], is_causal=True),
]


@pytest.mark.parametrize("options", OPTIONS, ids=[",".join(o) or "plain" for o in OPTIONS])
def test_attention_matches_jax(options):
    # JAX rounds the softmax of float64 inputs to float32; funcgrad keeps float64 (hence 1e-5).
    got = nn.dot_product_attention(Q, K, V, **options)
    want = jax.nn.dot_product_attention(Q, K, V, **options)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    jitted = funcgrad.jit(lambda q, k, v: nn.dot_product_attention(q, k, v, **options))(Q, K, V)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_attention_3d_residual_float32_and_grads():
    out, res = nn.dot_product_attention(Q[0], K[0], V[0], return_residual=True)
    want, want_res = jax.nn.dot_product_attention(Q[0], K[0], V[0], return_residual=True)
    assert out.shape == (5, 4, 8) and res.shape == want_res.shape == (5, 4)
    np.testing.assert_allclose(np.asarray(out), np.asarray(want), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(res), np.asarray(want_res), rtol=1e-5, atol=1e-6)
    q32 = Q.astype(np.float32)
    out32 = nn.dot_product_attention(q32, K.astype(np.float32), V.astype(np.float32))
    assert out32.dtype == np.float32
    check_grads(
        lambda q, k, v: nn.dot_product_attention(q, k, v, is_causal=True), (Q[:1], K[:1], V[:1]), order=1
    )
    per = funcgrad.vmap(lambda q, k, v: nn.dot_product_attention(q, k, v))(Q, K, V)
    np.testing.assert_allclose(np.asarray(per), np.asarray(nn.dot_product_attention(Q, K, V)), rtol=1e-12)


def test_attention_errors():
    with pytest.raises(ValueError, match="multiple of key/value heads"):
        nn.dot_product_attention(Q[:, :, :3], K, V)
    with pytest.raises(ValueError, match="mask must be boolean"):
        nn.dot_product_attention(Q, K, V, mask=MASK.astype(np.float32))
    with pytest.raises(ValueError, match="implementation"):
        nn.dot_product_attention(Q, K, V, implementation="cudnn")
    with pytest.raises(ValueError, match="value shape"):
        nn.dot_product_attention(Q, K, V[:, :3])


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_sixteen_bit_weights(dtype):
    import ml_dtypes

    dtype = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    for init in (
        I.normal(),
        I.uniform(),
        I.truncated_normal(),
        I.he_normal(),
        I.glorot_uniform(),
    ):  # (not orthogonal: JAX's refuses a 16-bit dtype, test_orthogonal_of_a_half_float_refuses_as_jax)
        w = init(random.PRNGKey(0), (4, 3), dtype)
        assert w.dtype == dtype and np.all(np.isfinite(np.asarray(w, np.float32)))


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
@pytest.mark.parametrize(
    "name, args",
    [
        ("normal", (0.02,)),
        ("uniform", ()),
        ("truncated_normal", (0.02,)),
        ("lecun_normal", ()),
        ("he_normal", ()),
        ("glorot_uniform", ()),
        ("variance_scaling", (2.0, "fan_out", "truncated_normal")),
    ],
)
def test_sixteen_bit_weights_are_jaxs(dtype, name, args):
    # Drawn in the 16-bit dtype itself, as jax.nn.initializers draws them, so the same key gives
    # the same weights bit for bit.
    import ml_dtypes

    dtype = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    ours = getattr(I, name)(*args)(random.PRNGKey(7), (5, 4), dtype)
    theirs = getattr(J, name)(*args)(jax.random.PRNGKey(7), (5, 4), dtype)
    assert ours.dtype == dtype
    np.testing.assert_array_equal(np.asarray(ours).astype(np.float32), np.asarray(theirs).astype(np.float32))


@pytest.mark.parametrize("name", ["orthogonal", "delta_orthogonal"])
def test_orthogonal_of_a_half_float_refuses_as_jax(name):
    # JAX's random.orthogonal draws and factors in the dtype: LAPACK has no float16/bfloat16 QR,
    # its NotImplementedError (funcgrad drew in float32 and computed; the fuzzer's leftovers)
    jax = pytest.importorskip("jax")
    shape = (3, 2) if name == "orthogonal" else (3, 3, 2, 2)
    for T in (jax, funcgrad):
        for dtype in (np.float16, jax.numpy.bfloat16):
            with pytest.raises(NotImplementedError):
                getattr(T.nn.initializers, name)()(T.random.key(0), shape, dtype)
