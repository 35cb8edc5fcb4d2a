"""Devices, backends and processes: ``funcgrad.devices()``, ``local_devices()``,
``device_count()``, ``local_device_count()``, ``process_index()``, ``process_count()``,
``process_indices()``, ``default_backend()``, the class ``Device``, and JAX's older names
``host_id``, ``host_count``, ``host_ids`` (the process functions under their former names).

Layer: surface. Imports ``xla_bridge`` (which creates PJRT clients lazily).

With one process, every device is local. After ``funcgrad.distributed.initialize(...)``, the
devices of all processes form the global list (``devices()``, in process order) and each process
addresses its own (``local_devices()``). On a CPU, ``XLA_FLAGS=--xla_force_host_platform_device_count=N``
or ``funcgrad.config.update("jax_num_cpu_devices", N)`` (before first use) gives N devices.

>>> import funcgrad
>>> funcgrad.default_backend() in ("cpu", "gpu")
True
>>> funcgrad.process_index(), funcgrad.process_count()
(0, 1)
"""

from __future__ import annotations

from funcgrad import xla_bridge
from funcgrad.xla_bridge.committed import incompatible_devices_message

# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = (
    "devices",
    "local_devices",
    "device_count",
    "local_device_count",
    "process_index",
    "process_count",
    "process_indices",
    "host_count",
    "host_id",
    "host_ids",
    "Device",
    "default_backend",
)


def devices(backend: str | None = None) -> list:
    """Every device of ``backend`` (``"cpu"`` or ``"cuda"``; default: the default backend), across
    all processes.

    A ``"cuda"`` request on a machine without the CUDA PJRT plugin raises an error naming what
    is missing and how to install it.
    """
    return list(xla_bridge.get_backend(backend).global_devices)


def local_devices(process_index: int | None = None, backend: str | None = None) -> list:
    """The devices of one process (default: this one)."""
    if process_index is None:
        return list(xla_bridge.get_backend(backend).devices)
    return [d for d in devices(backend) if d.process_index == process_index]


def device_count(backend: str | None = None) -> int:
    """How many devices ``backend`` has, across all processes."""
    return len(devices(backend))


def local_device_count(backend: str | None = None) -> int:
    """How many devices this process addresses."""
    return len(local_devices(backend=backend))


def process_index(backend: str | None = None) -> int:
    """This process's index among the processes of ``funcgrad.distributed`` (0 alone)."""
    return xla_bridge.get_backend(backend).client.process_index()


def process_count(backend: str | None = None) -> int:
    """How many processes run the program (1 without ``funcgrad.distributed``)."""
    return len({d.process_index for d in devices(backend)})


def default_backend() -> str:
    """The platform jitted code runs on by default (``FUNCGRAD_PLATFORM`` chooses), named as jax
    names it: ``"cpu"``, or ``"gpu"`` for CUDA devices (``Device.platform`` says the same).

    >>> default_backend() in ("cpu", "gpu")
    True
    """
    platform = xla_bridge.default_platform()
    return "gpu" if platform == "cuda" else platform


def process_indices(backend: str | None = None) -> list[int]:
    """The indices of all processes, in order (``[0]`` without ``funcgrad.distributed``).

    >>> import funcgrad
    >>> funcgrad.process_indices()
    [0]
    """
    return sorted({d.process_index for d in devices(backend)})


def host_id(backend: str | None = None) -> int:
    """``process_index`` under JAX's older name.

    >>> import funcgrad
    >>> funcgrad.host_id() == funcgrad.process_index()
    True
    """
    return process_index(backend)


def host_count(backend: str | None = None) -> int:
    """``process_count`` under JAX's older name.

    >>> import funcgrad
    >>> funcgrad.host_count()
    1
    """
    return process_count(backend)


def host_ids(backend: str | None = None) -> list[int]:
    """``process_indices`` under JAX's older name.

    >>> import funcgrad
    >>> funcgrad.host_ids()
    [0]
    """
    return process_indices(backend)


def incompatible_devices(x, have, want, argument: str, other: str) -> ValueError:
    """JAX's error for a computation that would move ``x``, committed to the devices ``have``, to
    ``want`` (in that order), which ``other`` asks for: committed data is not moved implicitly.
    ``argument`` names ``x`` as JAX's message does (``"x of _identity_fn"``)."""
    shape, platform = f"{x.dtype.name}[{','.join(map(str, x.shape))}]", have[0].platform
    return ValueError(
        incompatible_devices_message(
            (f"argument {argument} with shape {shape} and", [d.id for d in have], platform),
            (other, [d.id for d in want], platform),
        )
    )


def __getattr__(name: str):
    # ``Device`` is jaxlib's class: looked up on first use, so ``import funcgrad`` loads no jaxlib.
    if name == "Device":
        return xla_bridge.Device
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
