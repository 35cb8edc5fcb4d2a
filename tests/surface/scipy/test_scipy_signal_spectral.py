"""funcgrad.scipy.signal's spectral analysis (stft, istft, csd, welch, detrend) against SciPy
(values) and jax.scipy.signal (the oracle): parameters, axes, dtypes, derivatives against finite
differences in float64, jit against eager, vmap against a loop, and errors.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.signal as ss

import funcgrad
from funcgrad.scipy import signal as fs
from funcgrad.testing import check_grads

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)
import jax.scipy.signal as js  # noqa: E402

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 200))
Y = RNG.normal(size=(3, 180))


def _jax(fn, *args, **kw):
    """jax's ``fn(*args, **kw)`` as one compiled program (the keywords static): eagerly jax compiles
    a program per operation, which was most of this file's time; the values are XLA's either way,
    within the tolerances the tests give jax."""
    return jax.jit(lambda *a: fn(*a, **kw))(*args)


def _close(ours, theirs, rtol=1e-10, atol=1e-12):
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        o, t = np.asarray(o), np.asarray(t)
        assert o.shape == t.shape, (o.shape, t.shape)
        np.testing.assert_allclose(o, t, rtol=rtol, atol=atol)


STFT = [
    dict(nperseg=32),
    dict(nperseg=31, noverlap=10, nfft=40),
    dict(nperseg=32, boundary="even"),
    dict(nperseg=32, boundary="odd", padded=False),
    dict(nperseg=32, boundary=None, detrend="linear"),
    dict(nperseg=32, return_onesided=False),
    dict(nperseg=16, boundary="constant", window="hamming", fs=8.0),
    dict(nperseg=16, window=np.bartlett(16)),
]


@pytest.mark.parametrize("kw", STFT, ids=[str(k) for k in range(len(STFT))])
def test_stft_matches_scipy_and_jax(kw):
    ours = fs.stft(X, **kw)
    _close(ours, ss.stft(X, **kw))
    _close(ours, _jax(js.stft, X, **kw), rtol=1e-9, atol=1e-11)
    _close(fs.stft(X.T, axis=0, **kw), ss.stft(X.T, axis=0, **kw))


PSD = [
    dict(nperseg=32),
    dict(nperseg=31, noverlap=5, nfft=40, detrend="linear"),
    dict(nperseg=32, scaling="spectrum", average="median"),
    dict(nperseg=32, return_onesided=False),
    dict(nperseg=32, detrend=False, fs=10.0),
    dict(nperseg=24, window="blackman", average="median"),
]


@pytest.mark.parametrize("kw", PSD, ids=[str(k) for k in range(len(PSD))])
def test_welch_and_csd_match_scipy_and_jax(kw):
    _close(fs.welch(X, **kw), ss.welch(X, **kw))
    _close(fs.welch(X, **kw), _jax(js.welch, X, **kw), rtol=1e-9, atol=1e-11)
    _close(fs.csd(X, Y, **kw), ss.csd(X, Y, **kw))
    _close(fs.csd(X, Y, **kw), _jax(js.csd, X, Y, **kw), rtol=1e-9, atol=1e-11)
    _close(fs.welch(X.T, axis=0, **kw), ss.welch(X.T, axis=0, **kw))
    f, p = fs.csd(X, None, **kw)  # y=None: the auto-spectrum, real
    _close((f, p), ss.welch(X, **kw))


def test_defaults_cap_nperseg_with_a_warning_and_float32_stays_float32():
    with pytest.warns(UserWarning, match="nperseg = 256 is greater than input length = 200"):
        ours = fs.welch(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(ours, ss.welch(X))
    x32 = X.astype(np.float32)
    f, p = fs.welch(x32, nperseg=32)
    assert f.dtype == np.float32 and p.dtype == np.float32
    np.testing.assert_allclose(p, ss.welch(X, nperseg=32)[1], rtol=2e-4, atol=1e-6)
    f, t, z = fs.stft(x32, nperseg=32)
    assert (f.dtype, t.dtype, z.dtype) == (np.float32, np.float32, np.complex64)


ISTFT = [
    dict(nperseg=32),
    dict(nperseg=32, noverlap=20, nfft=40),
    dict(nperseg=31),
    dict(nperseg=16, window="hamming"),
]


@pytest.mark.parametrize("kw", ISTFT, ids=[str(k) for k in range(len(ISTFT))])
def test_istft_matches_scipy_jax_and_inverts_stft(kw):
    z = ss.stft(X, **kw)[2]
    ours = fs.istft(z, **kw)
    _close(ours, ss.istft(z, **kw))
    if kw["nperseg"] % 2 == 0:  # jax 0.10.2's istft fails on odd segment lengths (a shape error)
        _close(ours, _jax(js.istft, z, **kw), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(ours[1][:, : X.shape[1]], X, atol=1e-12)
    z2 = ss.stft(X, return_onesided=False, **kw)[2]
    _close(fs.istft(z2, input_onesided=False, **kw), ss.istft(z2, input_onesided=False, **kw))
    zt = np.moveaxis(z, 0, -1)
    _close(fs.istft(zt, time_axis=1, freq_axis=0, **kw), ss.istft(zt, time_axis=1, freq_axis=0, **kw))


@pytest.mark.parametrize(
    "kw", [dict(), dict(type="constant"), dict(bp=[50, 120]), dict(axis=0), dict(bp=1, axis=0)]
)
def test_detrend_matches_scipy_and_jax(kw):
    ours = fs.detrend(X, **kw)
    np.testing.assert_allclose(ours, ss.detrend(X, **kw), atol=1e-12)
    np.testing.assert_allclose(ours, _jax(js.detrend, X, **kw), atol=1e-10)
    ints = np.arange(12).reshape(3, 4) ** 2
    np.testing.assert_allclose(
        fs.detrend(ints, **{k: v for k, v in kw.items() if k != "bp"}),
        ss.detrend(ints, **{k: v for k, v in kw.items() if k != "bp"}),
        atol=1e-12,
    )


def test_callable_detrend_gets_segments_with_samples_last():
    # As SciPy's welch/csd (its ShortTimeFFT): the function sees (..., segment, sample) arrays.
    def ours(d):
        return fs.detrend(d, axis=-1, type="constant")

    def theirs(d):
        return ss.detrend(d, axis=-1, type="constant")

    _close(fs.welch(X.T, nperseg=32, axis=0, detrend=ours), ss.welch(X.T, nperseg=32, axis=0, detrend=theirs))
    _close(
        fs.welch(X, nperseg=32, detrend=lambda d: fs.detrend(d, type="linear")),
        ss.welch(X, nperseg=32, detrend="linear"),
    )


def test_derivatives_match_finite_differences():
    x = RNG.normal(size=(40,))
    check_grads(lambda x: fs.welch(x, nperseg=16)[1], (x,), order=2)
    check_grads(lambda x: fs.welch(x, nperseg=16, average="median")[1], (x,), order=1)
    check_grads(lambda x: fs.stft(x, nperseg=16)[2].real, (x,), order=1)
    check_grads(lambda x, y: fs.csd(x, y, nperseg=16, detrend="linear")[1].imag, (x, x[::-1] * 0.5), order=1)
    check_grads(lambda x: fs.detrend(x, bp=[10, 25]), (x,), order=1)
    z = ss.stft(x, nperseg=16)[2]
    check_grads(lambda z: fs.istft(z, nperseg=16)[1], (z,), order=1, modes=("fwd",))
    g = funcgrad.grad(lambda x: fs.welch(x, nperseg=16)[1].sum())(x)
    jg = jax.jit(jax.grad(lambda x: js.welch(x, nperseg=16)[1].sum()))(x)
    np.testing.assert_allclose(g, jg, rtol=1e-9, atol=1e-12)


def test_jit_matches_eager_and_vmap_matches_loop():
    f = lambda x: (fs.welch(x, nperseg=32)[1], fs.stft(x, nperseg=32)[2], fs.detrend(x))  # noqa: E731
    _close(funcgrad.jit(f)(X), f(X))
    batched = funcgrad.vmap(f)(X)
    for k in range(3):
        _close([b[k] for b in batched], f(X[k]))
    z = ss.stft(X, nperseg=32)[2]
    inv = lambda z: fs.istft(z, nperseg=32)[1]  # noqa: E731
    _close([funcgrad.jit(inv)(z)], [inv(z)])
    _close([funcgrad.vmap(inv)(z)], [np.stack([inv(zk) for zk in z])])


def test_errors():
    with pytest.raises(ValueError, match="noverlap \\(32\\) must be less than nperseg"):
        fs.stft(X, nperseg=32, noverlap=32)
    with pytest.raises(ValueError, match="nfft \\(16\\) must be greater"):
        fs.welch(X, nperseg=32, nfft=16)
    with pytest.raises(ValueError, match="boundary"):
        fs.stft(X, boundary="mirror")
    with pytest.raises(ValueError, match="scaling"):
        fs.welch(X, nperseg=16, scaling="power")
    with pytest.raises(ValueError, match="average"):
        fs.csd(X, Y, nperseg=16, average="mode")
    with pytest.raises(ValueError, match="cannot be broadcast"):
        fs.csd(X, np.ones((2, 200)), nperseg=16)
    with pytest.raises(ValueError, match="nperseg \\(8\\) is different from the length of the window"):
        fs.stft(X, window=np.ones(16), nperseg=8)
    with pytest.raises(ValueError, match="type must be 'linear' or 'constant'"):
        fs.detrend(X, type="quadratic")
    with pytest.raises(ValueError, match="breakpoints"):
        fs.detrend(X, bp=[500])
    with pytest.raises(ValueError, match="at least 2-D"):
        fs.istft(np.ones(5, complex))
    with pytest.raises(TypeError, match="nperseg must be a static Python int"):
        funcgrad.jit(lambda x, n: fs.stft(x, nperseg=n))(X, 16)


def test_strict_user_promotion_settings_do_not_refuse_the_library_internals():
    # JAX's internals broadcast and cast explicitly, so its test defaults (rank promotion 'raise',
    # strict dtype promotion) refuse only user code; funcgrad's bodies mixed ranks (a window against
    # segments) and complex with real, and raised. Mixed user inputs are still refused under strict.
    from funcgrad.scipy import fft as ffft
    from funcgrad.scipy import special as fsp

    x = np.random.default_rng(0).normal(size=(2, 3, 40)).astype(np.float32)
    with funcgrad.numpy_rank_promotion("raise"), funcgrad.numpy_dtype_promotion("strict"):
        f, t, z = fs.stft(x, nperseg=16)
        np.testing.assert_allclose(z, ss.stft(x, nperseg=16)[2], rtol=1e-4, atol=1e-5)
        assert fs.welch(x, nperseg=16)[1].shape == (2, 3, 9)
        assert fs.istft(z, nperseg=16)[1].dtype == np.float32
        assert fs.detrend(x, bp=[10]).shape == x.shape
        assert fsp.bessel_jn(np.abs(x[0]), v=2).shape == (3, 3, 40)
        assert fsp.multigammaln(np.abs(x[0]) + 3, 2).shape == (3, 40)
        zc = x[0].astype(np.complex64)
        np.testing.assert_allclose(ffft.dctn(zc).real, ffft.dctn(x[0]), rtol=1e-5, atol=1e-4)
        with pytest.raises(TypeError, match="implicit dtype promotion"):
            fs.csd(x, x.astype(np.float64))
        # a float64 window is cast to the data's dtype, as JAX's (welch raised TypePromotionError)
        win = ss.get_window("hann", 16)
        for fn in (fs.welch, fs.stft, lambda x, **kw: fs.csd(x, x, **kw)):
            out = fn(x, nperseg=16, window=win)[-1]
            assert out.dtype in (np.float32, np.complex64)
