"""``funcgrad.profiler``: profiling traces and annotations as ``jax.profiler``.

Layer: surface. Imports ``xla_bridge.profiling`` (jaxlib's profiler) and the standard library.

``with trace(log_dir):`` (or ``start_trace``/``stop_trace``) records what the process does --
compilations, executions, host threads and the ``TraceAnnotation``/``annotate_function`` spans
around your code -- and writes it under ``log_dir/plugins/profile/<timestamp>/`` for TensorBoard's
profile plugin (``*.xplane.pb``) and Perfetto or chrome://tracing (``*.trace.json.gz``).

>>> import tempfile, pathlib, funcgrad, funcgrad.numpy as fnp
>>> d = tempfile.mkdtemp()
>>> with trace(d):
...     with TraceAnnotation("matmul"):
...         _ = funcgrad.jit(lambda x: x @ x.T)(fnp.ones((64, 64))).block_until_ready()
>>> sorted(p.suffix for p in pathlib.Path(d).glob("plugins/profile/*/*"))
['.gz', '.pb']
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import pathlib
import threading
from collections.abc import Callable
from contextlib import contextmanager

from funcgrad.xla_bridge import profiling

__all__ = [
    "ProfileData",
    "ProfileEvent",
    "ProfileOptions",
    "ProfilePlane",
    "StepTraceAnnotation",
    "TraceAnnotation",
    "annotate_function",
    "device_memory_profile",
    "save_device_memory_profile",
    "start_server",
    "start_trace",
    "stop_server",
    "stop_trace",
    "trace",
    "register_subprocess",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


ProfileOptions = profiling.ProfileOptions

# A collected trace read back in Python, as JAX's (jaxlib's classes): ``ProfileData.from_file`` of
# an ``*.xplane.pb`` (or ``from_serialized_xspace`` of its bytes) has ``planes`` (``/host:CPU``,
# a device's ...), each ``ProfilePlane`` has ``lines`` of ``ProfileEvent`` (``name``,
# ``start_ns``, ``duration_ns``, ``stats``), e.g. every ``TraceAnnotation`` span with its metadata.
ProfileData = profiling.ProfileData
ProfileEvent = profiling.ProfileEvent
ProfilePlane = profiling.ProfilePlane


class _State:
    def __init__(self):
        self.lock = threading.Lock()
        self.session = None
        self.log_dir: str | None = None
        self.perfetto = False
        self.server = None


_state = _State()


def start_trace(log_dir, create_perfetto_link: bool = False, create_perfetto_trace: bool = False,
                profiler_options: ProfileOptions | None = None) -> None:  # fmt: skip
    """Start recording a trace, to be written to ``log_dir`` by ``stop_trace``. One trace at a
    time: starting a second raises ``RuntimeError``. ``create_perfetto_trace``: also write
    ``perfetto_trace.json.gz`` beside the trace (the trace events without their metadata, for
    ui.perfetto.dev); ``create_perfetto_link`` (serving it to ui.perfetto.dev) is refused: it
    would block the program on a browser.

    >>> import tempfile
    >>> start_trace(tempfile.mkdtemp()); stop_trace()
    """
    if create_perfetto_link:
        raise ValueError(
            "start_trace: create_perfetto_link is not supported (it blocks until a browser loads "
            "the trace); open LOG_DIR/plugins/profile/*/*.trace.json.gz in ui.perfetto.dev instead"
        )
    with _state.lock:
        if _state.session is not None:
            raise RuntimeError(
                "Profile has already been started. Only one profile may be run at a time. (start_trace: "
                "stop_trace first.)"
            )
        _state.session = profiling.ProfilerSession(profiler_options or ProfileOptions())
        _state.log_dir = os.fspath(log_dir)
        _state.perfetto = bool(create_perfetto_trace)


def stop_trace() -> None:
    """Stop the trace ``start_trace`` began and write it to its ``log_dir``.

    >>> stop_trace()
    Traceback (most recent call last):
    RuntimeError: No profile started (stop_trace: start_trace first)
    """
    with _state.lock:
        if _state.session is None:
            raise RuntimeError("No profile started (stop_trace: start_trace first)")  # (JAX's words first)
        session, log_dir, perfetto = _state.session, _state.log_dir, _state.perfetto
        _state.session, _state.log_dir = None, None
        session.stop_and_export(log_dir)
    if perfetto:
        _write_perfetto_trace(log_dir)


def _write_perfetto_trace(log_dir: str) -> None:
    """``perfetto_trace.json.gz`` in the newest profile folder: its trace events without the
    metadata block Perfetto's loader rejects."""
    folders = list(pathlib.Path(log_dir).absolute().glob("plugins/profile/*"))
    newest = max(folders, key=os.path.getmtime)
    (trace_json,) = newest.glob("*.trace.json.gz")
    with gzip.open(trace_json, "rb") as f:
        events = json.load(f)
    events.pop("metadata", None)
    with gzip.open(newest / "perfetto_trace.json.gz", "wb") as f:
        f.write(json.dumps(events).encode())


@contextmanager
def trace(log_dir, create_perfetto_link: bool = False, create_perfetto_trace: bool = False,
          profiler_options: ProfileOptions | None = None):  # fmt: skip
    """Record a trace of the enclosed code to ``log_dir`` (``start_trace``/``stop_trace``).

    >>> import tempfile
    >>> with trace(tempfile.mkdtemp()):
    ...     pass
    """
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()


class TraceAnnotation(profiling.TraceMe):
    """A named span on the trace timeline around the enclosed code (``with
    TraceAnnotation("load batch"):``); keyword arguments become the span's metadata. Costs next to
    nothing when no trace is running.

    >>> with TraceAnnotation("my_label", step=1):
    ...     pass
    """


class StepTraceAnnotation(TraceAnnotation):
    """A span marking one step of a loop (``step_num=`` the step), which the profiler's step
    analysis groups by.

    >>> with StepTraceAnnotation("train", step_num=3):
    ...     pass
    """

    def __init__(self, name: str, **kwargs):
        super().__init__(name, _r=1, **kwargs)


def annotate_function(func: Callable, name: str | None = None, **decorator_kwargs) -> Callable:
    """``func`` with every call wrapped in a ``TraceAnnotation`` named after it (or ``name``).

    >>> @annotate_function
    ... def f(x):
    ...     return x + 1
    >>> f(1)
    2
    """
    label = name or getattr(func, "__qualname__", None) or getattr(func, "__name__", "function")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with TraceAnnotation(label, **decorator_kwargs):
            return func(*args, **kwargs)

    return wrapper


def start_server(port: int):
    """Serve profiles on ``port`` to TensorBoard's "capture profile" button (one server per
    process); returns the server.

    The server is jaxlib's; ``stop_server`` stops it.
    """
    with _state.lock:
        if _state.server is not None:
            raise ValueError(
                "Only one profiler server can be active at a time. (start_server: stop_server first.)"
            )
        _state.server = profiling.start_server(port)
        return _state.server


def stop_server() -> None:
    """Stop the server ``start_server`` started.

    >>> stop_server()
    Traceback (most recent call last):
    ValueError: No active profiler server. (stop_server: start_server first.)
    """
    with _state.lock:
        if _state.server is None:
            raise ValueError("No active profiler server. (stop_server: start_server first.)")
        _state.server = None  # jaxlib stops it when the last reference goes


def device_memory_profile(backend: str | None = None) -> bytes:
    """The memory held by live device buffers, as a gzipped pprof protocol buffer (view it with
    ``pprof``): which allocations, of which sizes.

    >>> isinstance(device_memory_profile(), bytes)
    True
    """
    return profiling.heap_profile(backend)


def save_device_memory_profile(filename, backend: str | None = None) -> None:
    """Write ``device_memory_profile()`` to ``filename``.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "memory.prof")
    >>> save_device_memory_profile(path); os.path.getsize(path) > 0
    True
    """
    with open(filename, "wb") as f:
        f.write(device_memory_profile(backend))


def register_subprocess(pid: int, port: int) -> Callable[[], None]:
    """Profile the child process ``pid`` (whose profiler server listens on ``port``: it called
    ``start_server(port)``) together with this one: a trace taken here, by ``trace`` or by this
    process's server, asks the child's server too and merges its events (CPU activity only, as in
    JAX). Returns a function that unregisters it (also done when that function is garbage
    collected). ``RuntimeError`` if the child cannot be reached within jaxlib's 30 s deadline or
    is already registered.

    >>> callable(register_subprocess)
    True
    """
    return profiling.register_subprocess(pid, port)
