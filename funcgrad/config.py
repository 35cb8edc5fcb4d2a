"""``funcgrad.config``: process-wide options with JAX's flag names, read and set like
``jax.config``.

Layer: surface. Imports ``xla_bridge`` (the runtime applies the device options when it starts the
backend) and stdlib.

``update(name, value)`` sets a flag; ``config.<name>`` (or ``read(name)``) reads it. The flags that
make sense for funcgrad:

- ``jax_num_cpu_devices``: how many CPU devices the CPU client has (like
  ``XLA_FLAGS=--xla_force_host_platform_device_count=N``); only before first use -- once a
  computation ran or devices were listed, changing it raises a ``RuntimeError``.
- ``jax_platforms`` / ``jax_platform_name``: the default platform (``"cpu"`` or ``"cuda"``), before
  first use (as ``FUNCGRAD_PLATFORM``).
- ``jax_compilation_cache_dir``: the persistent compilation cache directory (``None``: off).
- ``jax_enable_x64``: always ``True`` -- funcgrad follows NumPy's dtypes (float64 by default); setting
  it to ``False`` raises a ``ValueError`` saying so.
- ``jax_cpu_collectives_implementation``: ``"gloo"`` (the only one available to ``funcgrad.distributed``
  on CPU).

Unknown names raise ``AttributeError`` naming the known ones.

>>> from funcgrad import config
>>> config.jax_enable_x64
True
>>> config.update("jax_enable_x64", True)
"""

from __future__ import annotations

import os

import xla_bridge

__all__ = ["read", "update", "values"]

_values: dict = {
    "jax_num_cpu_devices": None,
    "jax_platforms": None,
    "jax_platform_name": None,
    "jax_compilation_cache_dir": None,
    "jax_enable_x64": True,
    "jax_cpu_collectives_implementation": "gloo",
}


def _set_num_cpu_devices(n):
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"jax_num_cpu_devices must be a positive int, got {n!r}")
    xla_bridge.runtime.configure_cpu_client(num_devices=n)


def _set_platform(p):
    if p is not None and not isinstance(p, str):
        raise TypeError(f"the platform must be a name such as 'cpu' or 'cuda', got {p!r}")
    if any(xla_bridge.runtime.backend_started(q) for q in ("cpu", "cuda")):
        raise RuntimeError("the platform can only be chosen before first use (before any computation)")
    first = p.split(",")[0].strip() if p else ""
    if first:
        os.environ["FUNCGRAD_PLATFORM"] = first
    else:
        os.environ.pop("FUNCGRAD_PLATFORM", None)
    xla_bridge.runtime._default_platform = None


def _set_x64(v):
    if not v:
        raise ValueError(
            "funcgrad always enables 64-bit types (NumPy's dtype rules: float64 is the default float); "
            "jax_enable_x64 cannot be turned off. Use float32 arrays where you want single precision."
        )


def _set_cache_dir(d):
    xla_bridge.set_cache_dir(d)


def _set_collectives(v):
    if v != "gloo":
        raise ValueError(f"jax_cpu_collectives_implementation={v!r}: funcgrad's CPU collectives are 'gloo'")


_SETTERS = {
    "jax_num_cpu_devices": _set_num_cpu_devices,
    "jax_platforms": _set_platform,
    "jax_platform_name": _set_platform,
    "jax_compilation_cache_dir": _set_cache_dir,
    "jax_enable_x64": _set_x64,
    "jax_cpu_collectives_implementation": _set_collectives,
}


def update(name: str, value) -> None:
    """Set the flag ``name`` to ``value``.

    >>> update("jax_cpu_collectives_implementation", "gloo")
    """
    setter = _SETTERS.get(name)
    if setter is None:
        raise AttributeError(f"funcgrad.config has no flag {name!r}; the flags are {sorted(_values)}")
    setter(value)
    _values[name] = value


def read(name: str):
    """The value of the flag ``name``."""
    if name not in _values:
        raise AttributeError(f"funcgrad.config has no flag {name!r}; the flags are {sorted(_values)}")
    return _values[name]


def values() -> dict:
    """Every flag and its value."""
    return dict(_values)


def __getattr__(name: str):
    if name in _values:
        return _values[name]
    raise AttributeError(f"funcgrad.config has no flag {name!r}; the flags are {sorted(_values)}")


def __dir__():
    return list(__all__)
