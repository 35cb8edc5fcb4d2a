"""Devices and backends: ``funcgrad.devices()``, ``default_backend()``, ``local_devices()``.

Layer: surface. Imports ``xla_bridge`` (which creates PJRT clients lazily).

>>> import funcgrad
>>> funcgrad.default_backend() in ("cpu", "cuda")
True
"""

from __future__ import annotations

import xla_bridge


def devices(backend: str | None = None) -> list:
    """The devices of ``backend`` (``"cpu"`` or ``"cuda"``; default: the default backend).

    A ``"cuda"`` request on a machine without the CUDA PJRT plugin raises an error naming what
    is missing and how to install it.
    """
    return list(xla_bridge.devices(backend))


def local_devices(backend: str | None = None) -> list:
    """The devices this process can address (all of them: one process, one host)."""
    return devices(backend)


def device_count(backend: str | None = None) -> int:
    """How many devices ``backend`` has."""
    return len(devices(backend))


def default_backend() -> str:
    """The platform jitted code runs on by default (``FUNCGRAD_PLATFORM`` chooses)."""
    return xla_bridge.default_platform()
