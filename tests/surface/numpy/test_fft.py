"""funcgrad.numpy.fft (the 18 names of jax.numpy.fft), funcgrad.lax.fft and funcgrad.scipy.fft:
values against NumPy/SciPy (eager and jit, dtypes included), derivatives to second order against
finite differences and against jax, vmap against a loop, and the errors.

The ``fft`` primitive itself (each transform over 1-3 axes: values, complex128 derivatives, vmap,
jit, the transpose dot-product test) is in op_db (tests/primitives/op_db/fft.py).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.fft

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.scipy import fft as sfft
from funcgrad.testing import check_grads

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 6))
Z = X + 1j * RNG.standard_normal((3, 4, 6))
X4 = RNG.standard_normal((2, 3, 2, 4))

NAMES = sorted(fnp.fft.__all__)

CASES = [
    ("fft", Z, {}),
    ("fft", X, dict(n=5)),
    ("fft", Z, dict(n=9, axis=0, norm="ortho")),
    ("fft", X.astype(np.float32), dict(axis=1)),
    ("fft", np.arange(6), {}),
    ("ifft", Z, dict(norm="forward")),
    ("ifft", Z.astype(np.complex64), dict(n=3)),
    ("rfft", X, {}),
    ("rfft", X, dict(n=7, axis=1, norm="ortho")),
    ("rfft", X.astype(np.float32), {}),
    ("irfft", Z, {}),
    ("irfft", Z, dict(n=7, axis=0, norm="ortho")),
    ("irfft", Z.astype(np.complex64), dict(n=4)),
    ("hfft", Z, {}),
    ("hfft", Z, dict(n=5, norm="ortho")),
    ("hfft", Z, dict(axis=1, norm="forward")),
    ("ihfft", X, {}),
    ("ihfft", X, dict(n=8, norm="forward")),
    ("fft2", Z, {}),
    ("fft2", X, dict(s=(3, 5), axes=(0, 2), norm="ortho")),
    ("ifft2", Z, dict(s=(3, 5), axes=(0, 2))),
    ("rfft2", X, dict(axes=(2, 0))),
    ("irfft2", Z, dict(s=(4, 7))),
    ("fftn", Z, {}),
    ("fftn", X4, {}),
    ("fftn", Z, dict(s=(2, 8), axes=(0, 2))),
    ("ifftn", Z, dict(axes=(1,), norm="ortho")),
    ("ifftn", X4 + 0j, dict(norm="forward")),
    ("rfftn", X, dict(s=(2, 3, 5), axes=(0, 1, 2))),
    ("rfftn", X4, {}),
    ("irfftn", Z, {}),
    ("irfftn", X4 + 1j * X4, dict(s=(2, 3, 2, 5), axes=(0, 1, 2, 3))),
    ("fftfreq", 8, dict(d=0.1)),
    ("fftfreq", 7, {}),
    ("rfftfreq", 9, dict(d=2.0)),
    ("rfftfreq", 8, {}),
    ("fftshift", X, {}),
    ("fftshift", X, dict(axes=(0, 2))),
    ("ifftshift", X, dict(axes=1)),
    ("ifftshift", np.arange(7.0), {}),
]


def test_every_jax_numpy_fft_name_exists():
    assert set(jnp.fft.__all__ if hasattr(jnp.fft, "__all__") else dir(jnp.fft)) >= set(NAMES)
    assert len(NAMES) == 18


@pytest.mark.parametrize("name, arg, kw", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_values_match_numpy_and_jax_eager_and_jit(name, arg, kw):
    want = getattr(np.fft, name)(arg, **kw)
    ours = getattr(fnp.fft, name)
    got = ours(arg, **kw)
    single = np.asarray(arg).dtype in (np.float32, np.complex64)
    tol = dict(rtol=2e-5, atol=2e-5) if single else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(got), want, **tol)
    theirs = np.asarray(getattr(jnp.fft, name)(arg, **kw))
    assert np.asarray(got).dtype == theirs.dtype, (np.asarray(got).dtype, theirs.dtype)
    if name.endswith("freq"):
        jitted = funcgrad.jit(lambda d: ours(arg, d, **{k: v for k, v in kw.items() if k != "d"}))(
            kw.get("d", 1.0)
        )
    else:
        jitted = funcgrad.jit(lambda a: ours(a, **kw))(arg)
    np.testing.assert_allclose(np.asarray(jitted), want, **tol)


@pytest.mark.parametrize("kw", [{}, dict(n=4, axis=0), dict(norm="ortho"), dict(norm="forward")])
def test_ihfft_bits_and_signed_zeros_as_jax(kw):
    # jnp.fft.ihfft is conj(rfft) times 1/n as a complex product: the docstring's real-valued
    # bins print 4.+0.j (conj(rfft / n) gives -0j), eager and jitted
    x = np.array([[1, 3, 5, 7], [2, 4, 6, 8]], np.float32)
    want = np.ascontiguousarray(jnp.fft.ihfft(x, **kw))
    for got in (fnp.fft.ihfft(x, **kw), funcgrad.jit(lambda a: fnp.fft.ihfft(a, **kw))(x)):
        got = np.ascontiguousarray(got)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize(
    "name, kw, arg",
    [
        ("fft", {}, Z[0]),
        ("ifft", dict(n=7, norm="ortho"), Z[0]),
        ("rfft", dict(axis=0), X[0]),
        ("irfft", {}, Z[0]),
        ("irfft", dict(n=5), Z[0]),
        ("hfft", {}, Z[0, 0]),
        ("ihfft", dict(norm="forward"), X[0, 0]),
        ("fft2", {}, Z[0]),
        ("rfft2", dict(s=(3, 4)), X[0]),
        ("irfft2", {}, Z[0]),
        ("fftn", dict(axes=(0, 2)), Z[:2, :2]),
        ("rfftn", {}, X[:2, :3]),
        ("irfftn", dict(s=(2, 3, 4)), Z[:2, :3]),
        ("fftshift", {}, Z[0]),
        ("ifftshift", dict(axes=0), X[0]),
    ],
)
def test_derivatives_to_second_order(name, kw, arg):
    f = lambda a: getattr(fnp.fft, name)(a, **kw)  # noqa: E731
    check_grads(f, (arg,), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "irfftn"])
def test_gradient_of_a_real_loss_matches_jax(name):
    arg = X[0] if name in ("rfft", "ihfft") else Z[0]
    weights = RNG.standard_normal(getattr(np.fft, name)(arg).shape)

    def loss(m):
        return lambda a: m.sum(m.abs(getattr(m.fft, name)(a)) ** 2 * weights)

    want = jax.jit(jax.grad(loss(jnp)))(arg)  # (jitted: one program, not eager dispatch)
    np.testing.assert_allclose(np.asarray(funcgrad.grad(loss(fnp))(arg)), want, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(
        np.asarray(funcgrad.jit(funcgrad.grad(loss(fnp)))(arg)), want, rtol=1e-9, atol=1e-10
    )


def test_holomorphic_jacobian_of_fft_is_the_dft_matrix():
    n = 5
    dft = np.fft.fft(np.eye(n))
    np.testing.assert_allclose(np.asarray(funcgrad.jacfwd(fnp.fft.fft, holomorphic=True)(Z[0, 0, :n])), dft)
    np.testing.assert_allclose(np.asarray(funcgrad.jacrev(fnp.fft.fft, holomorphic=True)(Z[0, 0, :n])), dft)
    # A real input gives a real-input Jacobian of a complex function (forward mode).
    np.testing.assert_allclose(np.asarray(funcgrad.jacfwd(fnp.fft.fft)(X[0, 0, :n])), dft, atol=1e-12)


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fft2", "fftshift"])
def test_vmap_matches_loop(name):
    batch = X if name == "rfft" else Z
    f = getattr(fnp.fft, name)
    got = funcgrad.vmap(f, in_axes=1)(batch)
    want = np.stack([np.asarray(f(batch[:, i])) for i in range(batch.shape[1])])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


def test_lax_fft_follows_jax():
    for fft_type, arg, lengths in [
        ("FFT", Z, (4, 6)),
        (lax.FftType.IFFT, Z, (6,)),
        ("rfft", X, (3, 4, 6)),
        (lax.FftType.IRFFT, Z, (4, 10)),
        ("fft", X, (6,)),  # a real operand of FFT is converted to complex
    ]:
        jax_type = fft_type if isinstance(fft_type, str) else jax.lax.FftType(int(fft_type))
        want = np.asarray(jax.lax.fft(arg, jax_type, lengths))
        got = np.asarray(lax.fft(arg, fft_type, lengths))
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    assert lax.fft(X, "fft", ()) is not None
    # JAX's errors, in its words (fft_test.py's testLaxFftErrors)
    for args, msg in [
        ((Z, "RFFT", (6,)), "only real valued inputs supported for rfft"),
        (
            (Z, "FFT", (5,)),
            r"FFT input shape \(3, 4, 6\) minor dimensions must be equal to fft_lengths \(5,\)",
        ),
        (
            (np.ones((14, 15)), "fft", (4, 5, 6)),
            r"must have at least as many input dimensions as fft_lengths \(4, 5, 6\)",
        ),
        ((np.ones((2, 14, 15)), "rfft", (14, 12)), "RFFT input shape .* fft_lengths \\(14, 12\\)"),
        (
            (np.ones((2, 14, 15)), "irfft", (13, 15)),
            r"all except the last fft_length, got fft_lengths=\(13, 15\)",
        ),
        (
            (np.ones((14, 15), jax.numpy.bfloat16), "rfft", (5, 6)),
            "RFFT input must be float32 or float64, got bfloat16",
        ),
    ]:
        with pytest.raises(ValueError, match=msg):
            jax.lax.fft(*args)
        with pytest.raises(ValueError, match=msg):
            lax.fft(*args)


def test_lowered_to_stablehlo_fft():
    text = funcgrad.jit(fnp.fft.rfft).lower(X.astype(np.float32)).as_text()
    assert "stablehlo.fft" in text and "type = RFFT" in text and "length = [6]" in text


def test_errors_are_clear():
    with pytest.raises(ValueError, match=r"only real valued inputs supported for rfft"):
        fnp.fft.rfft(Z)
    with pytest.raises(ValueError, match="invalid norm"):
        fnp.fft.fft(Z, norm="bogus")
    with pytest.raises(ValueError, match="repeated axes"):
        fnp.fft.fftn(Z, axes=(0, 0))
    with pytest.raises(ValueError, match="different lengths"):
        fnp.fft.fftn(Z, s=(2, 3), axes=(0,))
    with pytest.raises(ValueError, match="positive"):
        fnp.fft.fft(Z, n=0)
    # JAX's words (fft_test.py's testFftErrors, testFft2Errors, testFftnErrors, testFftfreqErrors)
    for fn, kw, msg in [
        (
            "fft",
            dict(axis=(0, 1)),
            r"jax.numpy.fft.fft does not support multiple axes. Please use jax.numpy.fft.fftn. "
            r"Got axis = \(0, 1\).",
        ),
        ("irfft", dict(axis=[1, 1]), r"irfft does not support multiple axes. .*Got axis = \[1, 1\]."),
        (
            "ihfft",
            dict(axis=[1, 1]),
            r"jax.numpy.fft.ihfft does not support multiple axes. .*ihfftn. Got axis",
        ),
        ("hfft", dict(axis=(1, 1)), r"jax.numpy.fft.hfft does not support multiple axes. .*hfftn. Got axis"),
        ("fft2", dict(axes=(0,)), r"jax.numpy.fft.fft2 only supports 2 axes. Got axes = \(0,\)."),
        ("rfft2", dict(axes=[0]), r"jax.numpy.fft.rfft2 only supports 2 axes. Got axes = \[0\]."),
        (
            "ifftn",
            dict(axes=[1, 1]),
            r"jax.numpy.fft.ifftn does not support repeated axes. Got axes \[1, 1\].",
        ),
    ]:
        x = Z.real if fn.startswith("r") else Z
        with pytest.raises(ValueError, match=msg):
            getattr(jax.numpy.fft, fn)(x, **kw)
        with pytest.raises(ValueError, match=msg):
            getattr(fnp.fft, fn)(x, **kw)
    for kw, msg in [
        (
            dict(n=[0, 1, 2]),
            r"The n argument of jax.numpy.fft.rfftfreq only takes an int. Got n = \[0, 1, 2\].",
        ),
        (dict(n=10, d=(0, 1)), r"The d argument .* only takes a single value. Got d = \[0, 1\]."),
    ]:
        with pytest.raises(ValueError, match=msg):
            fnp.fft.rfftfreq(**kw)
        with pytest.raises(ValueError, match=msg):
            jax.numpy.fft.rfftfreq(**kw)
    with pytest.raises(TypeError, match="n must be an int"):
        fnp.fft.fftfreq(4.5)
    # (JAX's words for s and axes; an axis out of bounds is moveaxis's ValueError, and an s longer
    # than the input's rank is lax.fft's: funcgrad said "repeated axis in moveaxis")
    fft_in = "FFT input shape"
    for fn, kw, msg in [
        ("fftn", dict(s=(2,), axes=(0, 1)), r"^Shape and axes have different lengths."),
        ("fft2", dict(s=(2, 2, 2)), r"^Shape and axes have different lengths."),
        ("fftn", dict(s=(-1, 2)), r"^Shape should be positive."),
        ("irfft", dict(n=0), r"^Shape should be positive."),
        ("fft", dict(axis=-3), r"^axis -3 is out of bounds for array of dimension 2"),
        ("fftn", dict(axes=(0, 5)), r"^axis 5 is out of bounds for array of dimension 2"),
        ("fftn", dict(s=(2, 2, 2)), rf"^{fft_in} \(2, 2\) must have at least as many .* \(2, 2, 2\)"),
        ("irfftn", dict(s=(2, 2, 4)), rf"^{fft_in} \(2, 3\) must have at least as many .* \(2, 2, 4\)"),
    ]:
        for lib in (jax.numpy, fnp):
            with pytest.raises(ValueError, match=msg):
                getattr(lib.fft, fn)(np.zeros((3, 3), np.complex64), **kw)


# ----------------------------------------------------------------------------------------------
# funcgrad.scipy.fft: cosine transforms


@pytest.mark.parametrize("name", ["dct", "idct"])
@pytest.mark.parametrize("type", [2, 3])
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_dct_matches_scipy(name, type, norm):
    for kw in (dict(), dict(axis=1), dict(n=4, axis=0), dict(n=9)):
        want = getattr(scipy.fft, name)(X, type=type, norm=norm, **kw)
        np.testing.assert_allclose(
            np.asarray(getattr(sfft, name)(X, type=type, norm=norm, **kw)), want, atol=1e-12
        )
    kw = dict(type=type, norm=norm)
    np.testing.assert_allclose(
        np.asarray(funcgrad.jit(lambda x: getattr(sfft, name)(x, **kw))(Z)),
        getattr(scipy.fft, name)(Z, **kw),
        atol=1e-12,
    )


@pytest.mark.parametrize("name", ["dctn", "idctn"])
def test_dctn_matches_scipy(name):
    for kw in (
        dict(),
        dict(axes=(0, 2)),
        dict(s=(3, 7)),
        dict(s=(2, 3), axes=(2, 0), norm="ortho"),
        dict(type=3),
    ):
        want = getattr(scipy.fft, name)(X, **kw)
        np.testing.assert_allclose(np.asarray(getattr(sfft, name)(X, **kw)), want, atol=1e-12)
    assert sfft.dctn(X.astype(np.float32)).dtype == np.float32
    # (JAX's scipy_fft_test testDctnSShapeTooLargeError: its words, not "repeated axes")
    with pytest.raises(ValueError, match=r"s must have at most x.ndim \(3\) elements, got 4"):
        getattr(sfft, name)(X, s=(2, 3, 4, 5))


def test_dct_gradients_match_jax_and_finite_differences():
    w = RNG.standard_normal(X.shape)
    for ours, theirs in ((sfft.dct, jax.scipy.fft.dct), (sfft.idctn, jax.scipy.fft.idctn)):
        for norm in (None, "ortho"):
            # (jax's side compiled whole: eagerly its gradient compiles a program per operation)
            want = jax.jit(jax.grad(lambda x, f=theirs, n=norm: jnp.sum(f(x, norm=n) * w)))(X)
            got = funcgrad.grad(lambda x, f=ours, n=norm: fnp.sum(f(x, norm=n) * w))(X)
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-9, atol=1e-10)
    check_grads(lambda x: sfft.dct(x, type=3, norm="ortho"), (X[0],), order=2)
    with pytest.raises(ValueError, match="types 2 and 3"):
        sfft.dct(X, type=1)


def test_transforms_of_a_0d_array_are_jax_s():
    # (the fuzzer, 32-bit mode) with no axis to transform, rfftn returns its input made inexact, a
    # bfloat16 kept and strong (funcgrad converted it to float32), and fftn a complex copy
    import jax
    import jax.numpy as jnp
    import ml_dtypes

    for x in (0.5, np.array(1.0, ml_dtypes.bfloat16), np.float32(2.0)):
        for name in ("rfftn", "fftn"):
            got, want = getattr(fnp.fft, name)(x), getattr(jnp.fft, name)(x)
            assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type), (name, x)
            staged = jax.jit(getattr(jnp.fft, name))(x)
            assert funcgrad.jit(getattr(fnp.fft, name))(x).dtype == staged.dtype


def test_transforms_of_empty_axes_are_empty_as_jax_s():
    # (JAX's fft_test testFftEmpty) a transform over a zero-length axis is an empty result, eagerly
    # and under jit, vmap and grad (funcgrad raised "invalid number of data points"); irfft of one
    # bin has 2 * (1 - 1) = 0 outputs. rfft of no points stays an error (jax cannot lower it).
    cases = [
        ("fft", np.zeros(0, np.complex64), {}),
        ("ifft", np.zeros(0, np.complex64), {"norm": "ortho"}),
        ("irfft", np.zeros(1, np.complex64), {}),
        ("hfft", np.zeros(0, np.complex64), {}),
        ("fftn", np.zeros((2, 0, 3), np.complex64), {"axes": (1, 0), "norm": "forward"}),
        ("irfft2", np.zeros((3, 0), np.complex64), {}),
    ]
    for name, x, kw in cases:
        want = getattr(jnp.fft, name)(x, **kw)
        f = lambda a, name=name, kw=kw: getattr(fnp.fft, name)(a, **kw)  # noqa: E731
        for got in (f(x), funcgrad.jit(f)(x), funcgrad.vmap(f)(x[None])[0]):
            assert (got.shape, got.dtype) == (want.shape, want.dtype), name
        assert funcgrad.grad(lambda a, f=f: f(a).real.sum())(x.real).shape == x.shape
    with pytest.raises(ValueError, match="invalid number of data points"):
        fnp.fft.rfft(np.zeros(0, np.float32))


def test_eager_transforms_are_xla_s_bits_as_jit_and_jax():
    # (JAX's fft_test testFft2_) eagerly the transform is XLA's compiled alone, as JAX's: SciPy's
    # pocketfft rounded a float32 (16, 8, 4, 8, 4) fft2 another way, 2e-6 from jit and jax (JAX's
    # eager-vs-jit check allows 1e-6)
    x = np.random.default_rng(1).standard_normal((16, 8, 4, 8, 4)).astype(np.float32)
    for name, kw in (("fft2", {}), ("rfftn", {"axes": (0, 2, 4)}), ("ifft", {"axis": 1})):
        f = lambda a, name=name, kw=kw: getattr(fnp.fft, name)(a, **kw)  # noqa: E731
        got = np.asarray(f(x))
        np.testing.assert_array_equal(got, np.asarray(funcgrad.jit(f)(x)))
        np.testing.assert_array_equal(got, np.asarray(getattr(jnp.fft, name)(x, **kw)))
