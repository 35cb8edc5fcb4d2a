"""funcgrad.numpy as an Array API namespace (``numpy/array_api.py``): the namespace hooks and their
info object, the Array API's parameter names beside NumPy's, and an array's ``device`` /
``to_device`` (found by running the Array API conformance suite, which imports funcgrad.numpy
alone)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp


def test_array_api_namespace_hooks():
    x = fnp.arange(3.0)
    assert x.__array_namespace__() is fnp and fnp.__array_api_version__ == "2024.12"
    assert funcgrad.jit(lambda v: float(v.__array_namespace__() is fnp) + v)(1.0) == 2.0
    info = fnp.__array_namespace_info__()
    assert info.default_dtypes()["real floating"] == np.float64
    assert list(info.dtypes(kind=("bool", "complex floating"))) == ["bool", "complex64", "complex128"]
    assert info.default_device() in info.devices()
    with pytest.raises(ValueError, match="2024.12"):
        x.__array_namespace__(api_version="2021.12")
    # (JAX's words, 2023.12 refused too: jax 0.10.2 has only 2024.12)
    jax = pytest.importorskip("jax")
    for version in ("2023.12", "2024.12", "2099.01"):
        got, want = [], []
        for arr, out in ((x, got), (jax.numpy.arange(3.0), want)):
            try:
                out.append(arr.__array_namespace__(api_version=version).__name__.split(".")[-1])
            except ValueError as e:
                out.append(str(e))
        assert got == want


@pytest.mark.slow
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


def test_array_and_asarray_take_only_order_k():
    # (session 22's fuzzer) jnp.array/asarray implement only order='K' (or None): any other is
    # JAX's NotImplementedError, not silently ignored
    assert fnp.asarray([1.0], order="K").tolist() == fnp.array([1.0], order=None).tolist() == [1.0]
    for f in (fnp.asarray, fnp.array):
        with pytest.raises(NotImplementedError, match="order='K'"):
            f([1.0], order="C")
