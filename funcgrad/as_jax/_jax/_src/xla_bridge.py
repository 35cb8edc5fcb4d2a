"""``jax._src.xla_bridge`` under the alias: the backend registry as JAX keeps it, read by test
utilities (chex's ``set_n_cpu_devices`` checks ``_backends`` to know whether the CPU client was
already started, and so whether the device count can still change).

``_backends`` is read live: the clients started so far, by platform (empty before the first
computation, as in JAX). ``backends``, ``get_backend`` and the device queries are funcgrad's.

>>> import sys, funcgrad
>>> _ = funcgrad.devices()
>>> "cpu" in sys.modules[__name__]._backends
True
>>> get_backend().platform
'cpu'
"""

from funcgrad import device_count, devices, local_device_count, local_devices, process_count, process_index
from funcgrad.extend.backend import backends, clear_backends, get_backend
from funcgrad.xla_bridge import backends as _bridge

__all__ = [
    "backends",
    "backends_are_initialized",
    "canonicalize_platform",
    "clear_backends",
    "device_count",
    "devices",
    "get_backend",
    "local_device_count",
    "local_devices",
    "process_count",
    "process_index",
]


def canonicalize_platform(platform: str) -> str:
    """A platform alias as its backend's name (``"gpu"`` -> ``"cuda"``), others unchanged.

    >>> canonicalize_platform("gpu"), canonicalize_platform("cpu")
    ('cuda', 'cpu')
    """
    return _bridge.normalize_platform(platform)


def backends_are_initialized() -> bool:
    """Whether a backend's client has been started (then ``jax_num_cpu_devices`` can no longer
    change: flax's sharding guide asks this before setting 8 CPU devices).

    >>> import funcgrad
    >>> _ = funcgrad.devices()  # the CPU client starts
    >>> backends_are_initialized()
    True
    """
    return bool(_bridge._backends)


def __getattr__(name):
    if name == "_backends":  # (a fresh dict at each read: what is started now)
        return {p: b.client for p, b in _bridge._backends.items()}
    raise AttributeError(f"jax._src.xla_bridge (funcgrad.as_jax) has no {name!r}: a JAX internal")
