"""Devices and backends: CPU works; CUDA says clearly why it is unavailable here."""

from __future__ import annotations

import pytest

import funcgrad
from funcgrad import xla_bridge


def test_cpu_devices():
    devs = funcgrad.devices("cpu")
    assert len(devs) >= 1 and funcgrad.device_count("cpu") == len(devs)
    assert funcgrad.default_backend() in ("cpu", "gpu")


def test_cuda_unavailable_message():
    from funcgrad.xla_bridge import plugins

    if plugins.find_cuda_plugin() is not None:  # pragma: no cover - machines with the plugin
        pytest.skip("a CUDA plugin is installed here")
    with pytest.raises(xla_bridge.XlaBridgeError, match="pip install"):
        funcgrad.devices("cuda")
