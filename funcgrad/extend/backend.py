"""``funcgrad.extend.backend``: JAX's ``jax.extend.backend`` -- the PJRT clients funcgrad runs on.

Layer: surface. Imports ``funcgrad.xla_bridge`` (its clients and ``CompileOptions``), the kernel's
cache registry, ``funcgrad._utilities`` (``clear_caches``) and ``funcgrad._config``.

A backend here is what it is in JAX: jaxlib's PJRT client (``platform``, ``platform_version``,
``devices()``, ``local_devices()``...), the very client funcgrad's bridge created for that
platform (``cpu``; ``cuda`` with its plugin; a PJRT plugin named in
``PJRT_NAMES_AND_LIBRARY_PATHS``).

Where funcgrad differs, by design:

- ``clear_backends()`` empties every compiled-program cache (later calls compile afresh), but
  keeps the clients: funcgrad's arrays hold buffers of them, and a client replaced under a live
  array would leave it pointing at a dead one.
- ``register_backend_factory(name, factory)`` makes ``get_backend(name)`` and ``backends()`` return
  the client the factory builds (once, on first use); funcgrad's own ``jit`` and ``device_put`` run
  on the clients the bridge creates, so such a client is for the caller's own use.

>>> get_backend("cpu").platform, get_default_device().platform
('cpu', 'cpu')
"""

from __future__ import annotations

from collections.abc import Callable

from funcgrad import _config, _utilities
from funcgrad.kernel import caches as _caches
from funcgrad.xla_bridge import backends as _bridge

__all__ = [
    "backend_xla_version",
    "backends",
    "clear_backends",
    "clear_in_memory_compilation_cache",
    "get_backend",
    "get_compile_options",
    "get_default_device",
    "register_backend_cache",
    "register_backend_factory",
]

# Factories registered by name, and the clients they made.
_factories: dict[str, tuple[Callable, int]] = {}
_made: dict[str, object] = {}


def get_backend(platform=None):
    """The PJRT client of ``platform`` ("cpu", "gpu"/"cuda", a plugin name or a registered
    factory's name; ``None``: the default platform), created on first use. A client passed in is
    returned as it is.

    >>> get_backend().platform in ("cpu", "cuda")
    True
    """
    if platform is not None and not isinstance(platform, str):
        return platform  # (JAX accepts a client here too)
    if platform is not None and platform in _factories:
        if platform not in _made:
            _made[platform] = _factories[platform][0]()
        return _made[platform]
    try:
        return _bridge.get_backend(platform).client
    except _bridge.XlaBridgeError as e:
        raise RuntimeError(f"Unknown backend {platform!r}: {e}") from None


def backends() -> dict:
    """The clients by platform name: the default platform's (started if need be), every other
    one started so far, and those made by registered factories.

    >>> "cpu" in backends()
    True
    """
    get_backend()
    out = {p: _bridge.get_backend(p).client for p in _bridge.started_backends()}
    out.update(_made)
    return out


def register_backend_factory(
    name: str,
    factory: Callable,
    *,
    priority: int = 0,
    fail_quietly: bool = True,
    experimental: bool = False,
    make_topology=None,
    c_api=None,
) -> None:
    """Register ``factory() -> client`` under ``name`` (see the module docstring: the client is
    returned by ``get_backend(name)``; funcgrad's own computations use the bridge's clients).

    >>> register_backend_factory("doc_backend", lambda: "a client")
    >>> get_backend("doc_backend")
    'a client'
    """
    del fail_quietly, experimental, make_topology, c_api
    if not callable(factory):
        raise TypeError(f"register_backend_factory: factory must be callable, got {type(factory).__name__}")
    _factories[name] = (factory, priority)
    _made.pop(name, None)


def register_backend_cache(cache, for_what: str):
    """Register ``cache`` (a dict, or a ``functools.lru_cache`` function) so that
    ``clear_backends()`` and ``funcgrad.clear_caches()`` empty it; returns it.

    >>> import functools
    >>> @functools.lru_cache
    ... def table(n): return n
    >>> _ = register_backend_cache(table, "doc table"); _ = table(1)
    >>> clear_backends(); table.cache_info().currsize
    0
    """
    return _caches.register_cache(f"extend.backend.{for_what}", cache)


def clear_backends() -> None:
    """Empty every compiled-program cache (see the module docstring for why the clients stay).

    >>> import funcgrad
    >>> f = funcgrad.jit(lambda x: x + 1); _ = f(1.0)
    >>> clear_backends(); f.cache_info().currsize
    0
    """
    _made.clear()
    _utilities.clear_caches()


def clear_in_memory_compilation_cache() -> None:
    """Forget the compiled programs kept in memory (the persistent on-disk cache stays): the next
    call of a jitted function compiles again (or loads from the persistent cache)."""
    _utilities.clear_caches()


def get_default_device():
    """The device computations run on by default: ``jax_default_device`` when set, else the
    default backend's first device.

    >>> get_default_device().id
    0
    """
    chosen = _config.config.jax_default_device
    return chosen if chosen is not None else _bridge.default_device()


def backend_xla_version(platform=None) -> int | None:
    """The XLA version a PJRT plugin backend reports (``None`` for the built-in clients).

    >>> backend_xla_version("cpu") is None or isinstance(backend_xla_version("cpu"), int)
    True
    """
    return getattr(get_backend(platform), "xla_version", None)


def get_compile_options(
    num_replicas: int,
    num_partitions: int,
    device_assignment=None,
    env_options_overrides: dict[str, str] | None = None,
    fdo_profile: bytes | None = None,
    detailed_logging: bool = True,
    backend=None,
):
    """XLA's ``CompileOptions`` for ``num_replicas`` x ``num_partitions`` devices, with an
    optional ``device_assignment`` (device ids or devices, shape ``(num_replicas,
    num_partitions)``) and XLA option overrides by name.

    >>> o = get_compile_options(1, 1, [[0]])
    >>> o.num_replicas, o.num_partitions
    (1, 1)
    """
    del detailed_logging, backend
    return _bridge.compile_options(
        num_replicas, num_partitions, device_assignment, env_options_overrides, fdo_profile
    )
