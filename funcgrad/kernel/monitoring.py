"""Named events and their listeners (``funcgrad.monitoring``, as ``jax.monitoring``).

Layer: kernel. Imports only the standard library, so every layer can record an event: the surface
times tracing, the bridge times lowering and compiling and counts persistent-cache hits.

A point of the program records an *event* (a name such as ``/jax/compilation_cache/cache_hits``
with optional keyword metadata); each listener registered for that kind of record is called with
it, in registration order, synchronously on the recording thread. Four kinds, as in JAX: a plain
event, a duration in seconds, a time span (start and end, ``time.time()`` seconds) and a scalar.

# NOTE: [monitoring events]
# funcgrad records JAX's event names where it does the same work, with the same metadata:
#   JAXPR_TRACE_EVENT          tracing a jitted function (funcgrad/jitting.py), fun_name=the function
#   JAXPR_TO_MLIR_MODULE_EVENT lowering a jaxpr to StableHLO (xla_bridge/lowering.py), fun_name=module
#   BACKEND_COMPILE_EVENT      XLA compiling a module (xla_bridge/compile_cache.py, executables.py)
# each as a scalar (its start time), a duration and a time span, as JAX's log_elapsed_time does;
# and with the persistent compilation cache on, the /jax/compilation_cache/* events of
# xla_bridge/compile_cache.py. An event name is written once, here.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = [
    "BACKEND_COMPILE_EVENT",
    "JAXPR_TO_MLIR_MODULE_EVENT",
    "JAXPR_TRACE_EVENT",
    "clear_event_listeners",
    "record_event",
    "record_event_duration_secs",
    "record_event_time_span",
    "record_scalar",
    "register_event_duration_secs_listener",
    "register_event_listener",
    "register_event_time_span_listener",
    "register_scalar_listener",
    "timed_event",
    "unregister_event_duration_listener",
    "unregister_event_listener",
    "unregister_event_time_span_listener",
    "unregister_scalar_listener",
]

JAXPR_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
JAXPR_TO_MLIR_MODULE_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"

# Lists are replaced, never mutated in place, while a record iterates over one: a listener that
# unregisters itself (or registers another) does not disturb the record in progress.
_event: list[Callable] = []
_duration: list[Callable] = []
_span: list[Callable] = []
_scalar: list[Callable] = []


def record_event(event: str, **kwargs: str | int) -> None:
    """Call every event listener with ``(event, **kwargs)``.

    >>> seen = []
    >>> register_event_listener(lambda e, **kw: seen.append((e, kw)))
    >>> record_event("/my/event", stage="a"); seen
    [('/my/event', {'stage': 'a'})]
    >>> clear_event_listeners()
    """
    for callback in _event:
        callback(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs: str | int) -> None:
    """Call every duration listener with ``(event, duration, **kwargs)`` (seconds, a float).

    >>> seen = []
    >>> register_event_duration_secs_listener(lambda e, d, **kw: seen.append((e, d)))
    >>> record_event_duration_secs("/my/step", 0.25); seen
    [('/my/step', 0.25)]
    >>> clear_event_listeners()
    """
    for callback in _duration:
        callback(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float, **kwargs: str | int) -> None:
    """Call every time-span listener with ``(event, start_time, end_time, **kwargs)``.

    >>> seen = []
    >>> register_event_time_span_listener(lambda e, s, t, **kw: seen.append(t - s))
    >>> record_event_time_span("/my/span", 1.0, 3.5); seen
    [2.5]
    >>> clear_event_listeners()
    """
    for callback in _span:
        callback(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs: str | int) -> None:
    """Call every scalar listener with ``(event, value, **kwargs)``.

    >>> seen = []
    >>> register_scalar_listener(lambda e, v, **kw: seen.append((e, v, kw)))
    >>> record_scalar("/my/loss", 0.5, step=3); seen
    [('/my/loss', 0.5, {'step': 3})]
    >>> clear_event_listeners()
    """
    for callback in _scalar:
        callback(event, value, **kwargs)


def register_event_listener(callback: Callable) -> None:
    """Call ``callback(event, **kwargs)`` on every ``record_event``.

    >>> register_event_listener(print); record_event("/hello"); unregister_event_listener(print)
    /hello
    """
    global _event
    _event = [*_event, callback]


def register_event_duration_secs_listener(callback: Callable) -> None:
    """Call ``callback(event, duration_secs, **kwargs)`` on every ``record_event_duration_secs``.

    >>> register_event_duration_secs_listener(print); record_event_duration_secs("/t", 1.5)
    /t 1.5
    >>> unregister_event_duration_listener(print)
    """
    global _duration
    _duration = [*_duration, callback]


def register_event_time_span_listener(callback: Callable) -> None:
    """Call ``callback(event, start_time, end_time, **kwargs)`` on every ``record_event_time_span``.

    >>> register_event_time_span_listener(print); record_event_time_span("/s", 1.0, 2.0)
    /s 1.0 2.0
    >>> unregister_event_time_span_listener(print)
    """
    global _span
    _span = [*_span, callback]


def register_scalar_listener(callback: Callable) -> None:
    """Call ``callback(event, value, **kwargs)`` on every ``record_scalar``.

    >>> register_scalar_listener(print); record_scalar("/v", 3); unregister_scalar_listener(print)
    /v 3
    """
    global _scalar
    _scalar = [*_scalar, callback]


class NotRegisteredError(ValueError, AssertionError):
    """Unregistering a listener that is not registered: JAX asserts (an AssertionError), so the
    error is one as well as a ValueError."""


def _without(listeners: list[Callable], callback: Callable, kind: str) -> list[Callable]:
    if callback not in listeners:
        # JAX asserts; a clear message says which registry was asked.
        raise NotRegisteredError(f"{callback!r} is not a registered {kind} listener")
    out = list(listeners)
    out.remove(callback)
    return out


def unregister_event_listener(callback: Callable) -> None:
    """Remove an event listener (``NotRegisteredError``, a ValueError and an AssertionError, if it
    is not registered).

    >>> unregister_event_listener(print)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    funcgrad.kernel.monitoring.NotRegisteredError: <built-in function print> is not a registered ...
    """
    global _event
    _event = _without(_event, callback, "event")


def unregister_event_duration_listener(callback: Callable) -> None:
    """Remove a duration listener (ValueError if it is not registered).

    >>> f = lambda *a, **k: None
    >>> register_event_duration_secs_listener(f); unregister_event_duration_listener(f)
    """
    global _duration
    _duration = _without(_duration, callback, "event duration")


def unregister_event_time_span_listener(callback: Callable) -> None:
    """Remove a time-span listener (ValueError if it is not registered).

    >>> f = lambda *a, **k: None
    >>> register_event_time_span_listener(f); unregister_event_time_span_listener(f)
    """
    global _span
    _span = _without(_span, callback, "event time span")


def unregister_scalar_listener(callback: Callable) -> None:
    """Remove a scalar listener (ValueError if it is not registered).

    >>> f = lambda *a, **k: None
    >>> register_scalar_listener(f); unregister_scalar_listener(f)
    """
    global _scalar
    _scalar = _without(_scalar, callback, "scalar")


def clear_event_listeners() -> None:
    """Remove every listener of every kind (JAX 0.10.2's leaves its scalar listeners; this clears them).

    >>> register_event_listener(print); clear_event_listeners(); record_event("/not-printed")
    """
    global _event, _duration, _span, _scalar
    _event, _duration, _span, _scalar = [], [], [], []


class timed_event:
    """``with timed_event(EVENT, fun_name=...):`` records what JAX's ``log_elapsed_time`` records:
    the start time as a scalar on entry, the duration and the time span on exit (a failed compile
    too, as in JAX).

    Costs two list reads when nobody listens (the common case, on every compile).

    >>> seen = []
    >>> register_event_duration_secs_listener(lambda e, d, **kw: seen.append((e, kw)))
    >>> with timed_event("/my/work", fun_name="f"):
    ...     pass
    >>> seen
    [('/my/work', {'fun_name': 'f'})]
    >>> clear_event_listeners()
    """

    __slots__ = ("event", "kwargs", "start")

    def __init__(self, event: str, **kwargs: str | int):
        self.event = event
        self.kwargs = kwargs

    def __enter__(self):
        self.start = time.time()
        if _scalar:
            record_scalar(self.event, self.start, **self.kwargs)
        return self

    def __exit__(self, exc_type, exc, tb):
        if _duration or _span:
            end = time.time()
            record_event_duration_secs(self.event, end - self.start, **self.kwargs)
            record_event_time_span(self.event, self.start, end, **self.kwargs)
        return False
