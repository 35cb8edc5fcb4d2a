"""XLA runtime: PJRT clients, device buffers, compiling and running StableHLO modules.

Layer: xla_bridge (runtime half). This module is the runtime's one import point: it re-exports
the names of three modules, one subject each, so callers write ``runtime.compile``,
``runtime.device_put``, ``runtime.get_backend`` without knowing the split:

- ``backends``: PJRT clients, devices, platform choice, single-device shardings, ``XlaBridgeError``
  (NOTE: [synchronous CPU dispatch], NOTE: [jaxlib's log level])
- ``transfers``: ``device_put``, ``to_numpy``, ``host_copy`` (NOTE: [host transfers])
- ``executables``: ``compile`` -> ``Executable``, the in-memory executable cache, ``hlo_text``
  (NOTE: [input validation], NOTE: [donation])

They import stdlib, numpy, ml_dtypes, jaxlib and the siblings ``dtypes``, ``plugins``,
``compile_cache``, ``dlpack``, ``lapack``; never jax (jaxlib lazily imports jax from a few C++
entry points; the runtime only uses the ones verified not to) and nothing of funcgrad but the
kernel's cache registry. A module-level variable that the runtime rebinds (the default device and
platform) lives in ``backends``: read or patch it there, not through this module.

Importing the runtime costs the jaxlib import (~0.1 s, mostly numpy + the C++ extension) and the
kernel package's (the cache registry's parent, ~0.03 s) but creates no client and changes nothing
outside it; the CPU client is made on first use (``get_backend``).

# NOTE: [buffers are jaxlib ArrayImpl]
Device values are bare ``jaxlib._jax.ArrayImpl`` objects. Without jax they have ``.aval``,
``.block_until_ready()``, ``.delete()``, ``.is_deleted()`` and (on CPU) the buffer protocol, but
no ``.shape``/``.dtype``/arithmetic: wrap them (funcgrad.Array does), never monkeypatch.
``.aval`` is one of our interned ``Aval`` objects (see ``aval``).
"""

from __future__ import annotations

from . import backends as _backends_module
from .backends import (
    DONATED,
    ArrayImpl,
    Backend,
    Device,
    JaxRuntimeError,
    XlaBridgeError,
    _backend_of,  # noqa: F401 - read by funcgrad._shardings (a device's backend)
    _backends,  # noqa: F401 - read by tests (which backends have started)
    backend_started,
    chosen_default_platform,
    configure_cpu_client,
    cpu_async_dispatch,
    cpu_client_options,
    default_device,
    default_platform,
    devices,
    get_backend,
    normalize_platform,
    resolve_device,
    result_handler,
    sharding,
    started_backends,
)
from .dtypes import Aval, aval
from .executables import (
    Executable,
    clear_compile_cache,
    compile,
    compile_cache_info,
    hlo_computation,
    hlo_cost_analysis,
    hlo_text,
    mlir_module,
    mlir_text,
)
from .transfers import (
    _COPY,  # noqa: F401 - (these four: read by the dispatch fast paths)
    _SUPPORTED,  # noqa: F401
    _jax,  # noqa: F401
    _put,  # noqa: F401
    deleted_buffer_error,
    device_put,
    host_copy,
    to_numpy,
)

__all__ = [
    "ArrayImpl",
    "Aval",
    "Backend",
    "DONATED",
    "Device",
    "Executable",
    "JaxRuntimeError",
    "XlaBridgeError",
    "aval",
    "backend_started",
    "chosen_default_platform",
    "clear_compile_cache",
    "compile",
    "compile_cache_info",
    "configure_cpu_client",
    "cpu_async_dispatch",
    "cpu_client_options",
    "default_device",
    "default_platform",
    "deleted_buffer_error",
    "device_put",
    "devices",
    "get_backend",
    "hlo_computation",
    "hlo_cost_analysis",
    "hlo_text",
    "host_copy",
    "mlir_module",
    "mlir_text",
    "normalize_platform",
    "resolve_device",
    "result_handler",
    "sharding",
    "started_backends",
    "to_numpy",
]
# Re-exported by the xla_bridge package (NOTE: [derived namespaces] in funcgrad/__init__.py).
_REEXPORTED = (
    "XlaBridgeError",
    "JaxRuntimeError",
    "hlo_computation",
    "hlo_cost_analysis",
    "mlir_module",
    "mlir_text",
    "Device",
    "Backend",
    "get_backend",
    "resolve_device",
    "hlo_text",
    "default_platform",
    "normalize_platform",
    "devices",
    "default_device",
    "device_put",
    "to_numpy",
    "Executable",
    "compile",
    "clear_compile_cache",
    "compile_cache_info",
)


def __getattr__(name: str):
    # The variables ``backends`` rebinds (the default device and platform, decided on first use):
    # a re-exported copy would keep its first value, so they are read from their module each time.
    if name in ("_default_dev", "_default_platform"):
        return getattr(_backends_module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
