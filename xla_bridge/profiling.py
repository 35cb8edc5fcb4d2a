"""The profiler half of the bridge: jaxlib's profiler sessions, trace annotations, profiler server
and device memory profiles, for ``funcgrad.profiler``.

Layer: xla_bridge (the only importer of jaxlib). Imports jaxlib's ``_profiler`` and the runtime.

A session collects what the process does while it runs -- XLA's compilations and executions,
host threads, and the ``TraceMe`` annotations the surface places around user code -- and writes
it, on stop, under ``LOG_DIR/plugins/profile/<timestamp>/`` as ``<host>.xplane.pb`` (TensorBoard's
profile plugin reads it) and ``<host>.trace.json.gz`` (a Chrome/Perfetto trace).
"""

from __future__ import annotations

from funcgrad.xla_bridge import runtime
from jaxlib import _profiler

__all__ = ["ProfileOptions", "ProfilerSession", "TraceMe", "heap_profile", "start_server"]

ProfileOptions = _profiler.ProfileOptions
ProfilerSession = _profiler.ProfilerSession
TraceMe = _profiler.TraceMe
start_server = _profiler.start_server


def heap_profile(platform: str | None = None) -> bytes:
    """The device memory in use by live buffers of ``platform``'s backend, as a pprof protocol
    buffer (gzipped bytes), from the PJRT client."""
    return runtime.get_backend(platform).client.heap_profile()
