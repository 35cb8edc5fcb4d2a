"""Bugs that the external suites (HIPS autograd's tests through suites/autograd_shim, the Array API
conformance suite, JAX's and autograd's example programs) found in funcgrad, each checked against a
closed form or NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp


@pytest.mark.parametrize("x, y", [(2.0, 2.0), (-3.0, 3.0), (0.5, -0.5), (3.0, 4.0), (1e-200, 1e-200)])
def test_hypot_second_derivatives_at_equal_magnitudes(x, y):
    # d2r/dx2 = y^2/r^3, d2r/dxdy = -xy/r^3: JAX's max/min formula splits the tie |x| == |y| and gets 0.
    r = np.hypot(x, y)
    h = funcgrad.hessian(fnp.hypot, argnums=(0, 1))(x, y)
    u, v = x / r, y / r  # (scaled: r**3 underflows for tiny sides)
    expected = [[v * v / r, -u * v / r], [-u * v / r, u * u / r]]
    np.testing.assert_allclose(np.array([[float(v) for v in row] for row in h]), expected, rtol=1e-12)


def test_special_functions_broadcast_their_arguments():
    # scipy.special's functions are ufuncs; poisson.cdf with k (4, 3) and mu (4, 1) failed in lax.igammac
    import scipy.special as sps
    import scipy.stats as sst

    import funcgrad.scipy.special as fsp
    import funcgrad.scipy.stats as fst

    rng = np.random.default_rng(0)
    a, x = rng.uniform(0.5, 3, (4, 3)), rng.uniform(0.5, 3, (4, 1))
    for name in ("gammainc", "gammaincc", "xlogy", "betaln", "poch"):
        np.testing.assert_allclose(getattr(fsp, name)(a, x), getattr(sps, name)(a, x), rtol=1e-10)
    np.testing.assert_allclose(fsp.betainc(a, x, 0.3), sps.betainc(a, x, 0.3), rtol=1e-10)
    k = np.floor(a * 2)
    np.testing.assert_allclose(fst.poisson.cdf(k, x), sst.poisson.cdf(k, x), rtol=1e-10)
    g = funcgrad.grad(lambda mu: fnp.sum(fst.poisson.cdf(k, mu)))(x)
    assert g.shape == (4, 1) and np.all(np.isfinite(g))


@pytest.mark.parametrize("narrow", ["bfloat16", "float8_e4m3fn", "int4"])
def test_issubdtype_of_a_narrow_type_against_every_abstract_type(narrow):
    # issubdtype(bfloat16, complexfloating) raised "Converting np.complex to a dtype" (found adding
    # dtypes.scalar_type_of)
    jnp = pytest.importorskip("jax.numpy")
    for abstract in (
        np.generic,
        np.number,
        np.inexact,
        np.floating,
        np.complexfloating,
        np.integer,
        np.bool_,
    ):
        assert fnp.issubdtype(narrow, abstract) == jnp.issubdtype(narrow, abstract), abstract


def test_i0_derivatives_at_zero_with_abs_prime_one():
    # i0 = exp(|x|) i0e(x): with JAX's abs'(0) = 1 the product rule gave i0'(0) = 1; i0' = i1 and
    # i0'' = (i0 + i2) / 2 hold at every x, 0 included.
    import scipy.special as sps

    x = np.array([-1.5, -1e-3, 0.0, 1e-3, 2.0])
    g = funcgrad.vmap(funcgrad.grad(fnp.i0))(x)
    np.testing.assert_allclose(g, sps.i1(x), rtol=1e-12, atol=1e-15)
    gg = funcgrad.vmap(funcgrad.grad(funcgrad.grad(fnp.i0)))(x)
    np.testing.assert_allclose(gg, (sps.i0(x) + sps.iv(2, x)) / 2, rtol=1e-12)


def test_array_api_device_attributes_exist_with_only_funcgrad_numpy_imported():
    # The Array API suite imports funcgrad.numpy alone: .device and .to_device() must be there.
    import subprocess
    import sys

    code = (
        "import funcgrad.numpy as xp\n"
        "x = xp.arange(3.0)\n"
        "d = x.device\n"
        "assert x.to_device(d).tolist() == [0.0, 1.0, 2.0]\n"
        "assert d in xp.__array_namespace_info__().devices()\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr


def test_to_device_refuses_streams_and_non_devices():
    x = fnp.ones(2)
    with pytest.raises(ValueError, match="stream"):
        x.to_device(x.device, stream=1)
    with pytest.raises(ValueError, match="funcgrad.devices"):
        x.to_device("gpu:7")


def test_dlpack_export_of_a_read_only_array():
    # A DLPack < 1.0 consumer cannot be told the buffer is read-only: funcgrad hands it a copy
    # (NumPy refused: "Cannot export readonly array").
    for x in (
        fnp.arange(4.0),
        fnp.asarray(np.arange(4.0)) * 1.0,
        funcgrad.jit(lambda v: v * 1.0)(np.arange(4.0)),
    ):
        np.testing.assert_array_equal(np.from_dlpack(x), [0.0, 1.0, 2.0, 3.0])
        assert x.__dlpack__(stream=None, max_version=(1, 0)) is not None
        assert x.__dlpack__() is not None
    ro = np.arange(3.0)
    ro.flags.writeable = False
    y = funcgrad.Array(ro)
    np.testing.assert_array_equal(np.from_dlpack(y), [0.0, 1.0, 2.0])


def test_array_api_parameter_names():
    import inspect

    x = np.array([-2.0, 0.5, 3.0])
    np.testing.assert_array_equal(fnp.clip(x, min=0.0, max=1.0), np.clip(x, 0.0, 1.0))
    np.testing.assert_array_equal(fnp.clip(x, a_min=0.0, a_max=1.0), np.clip(x, 0.0, 1.0))  # NumPy's names
    with pytest.raises(TypeError, match="not both"):
        fnp.clip(x, 0.0, a_min=0.0)
    assert list(inspect.signature(fnp.isdtype).parameters) == ["dtype", "kind"]
    assert fnp.isdtype(dtype=np.float32, kind="real floating")
    assert "device" in inspect.signature(fnp.linspace).parameters
