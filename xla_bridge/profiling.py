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
from jaxlib import _profile_data, _profiler

__all__ = [
    "ProfileData",
    "ProfileEvent",
    "ProfileOptions",
    "ProfilePlane",
    "ProfilerSession",
    "TraceMe",
    "heap_profile",
    "profiled_instructions_proto",
    "register_subprocess",
    "start_server",
]

ProfileOptions = _profiler.ProfileOptions
ProfilerSession = _profiler.ProfilerSession
TraceMe = _profiler.TraceMe
start_server = _profiler.start_server
# A collected profile read back in Python (planes of lines of timed events), and the registration
# of a child process's profiler server, as jaxlib provides them.
ProfileData = _profile_data.ProfileData
ProfileEvent = _profile_data.ProfileEvent
ProfilePlane = _profile_data.ProfilePlane
register_subprocess = _profiler.register_subprocess
# A profile's ProfiledInstructionsProto, serialized (jax.experimental.profiler's; empty unless the
# profile is of an NVIDIA GPU)
profiled_instructions_proto = _profiler.get_profiled_instructions_proto


def heap_profile(platform: str | None = None) -> bytes:
    """The device memory in use by live buffers of ``platform``'s backend, as a pprof protocol
    buffer (gzipped bytes), from the PJRT client."""
    return runtime.get_backend(platform).client.heap_profile()
