"""``funcgrad.monitoring``: listeners for named events, as ``jax.monitoring``.

Layer: surface. Re-exports the registry of funcgrad/kernel/monitoring.py, which every layer can
record into. Register a listener to send funcgrad's events to a metrics collector.

funcgrad records JAX's events where it does the same work (NOTE: [monitoring events]):
``/jax/core/compile/jaxpr_trace_duration`` (tracing a jitted function),
``/jax/core/compile/jaxpr_to_mlir_module_duration`` (lowering to StableHLO) and
``/jax/core/compile/backend_compile_duration`` (XLA's compile), each as a duration, a time span
and a scalar start time with ``fun_name``; and, with the persistent compilation cache on
(``funcgrad.experimental.compilation_cache.compilation_cache.set_cache_dir``),
``/jax/compilation_cache/compile_requests_use_cache``, ``.../cache_hits``, ``.../cache_misses``,
``.../cache_retrieval_time_sec`` and, once per process, ``.../tasks_using_cache``.

>>> import funcgrad, funcgrad.numpy as fnp
>>> durations = {}
>>> def listener(event, duration, **kwargs):
...     durations[event] = duration
>>> register_event_duration_secs_listener(listener)
>>> _ = funcgrad.jit(lambda x: fnp.sin(x) * 3.0171)(fnp.arange(7.0))  # a program not compiled before
>>> sorted(e.rsplit("/", 1)[1] for e in durations)
['backend_compile_duration', 'jaxpr_to_mlir_module_duration', 'jaxpr_trace_duration']
>>> unregister_event_duration_listener(listener)
"""

from __future__ import annotations

from funcgrad.kernel.monitoring import (
    clear_event_listeners,
    record_event,
    record_event_duration_secs,
    record_event_time_span,
    record_scalar,
    register_event_duration_secs_listener,
    register_event_listener,
    register_event_time_span_listener,
    register_scalar_listener,
    unregister_event_duration_listener,
    unregister_event_listener,
    unregister_event_time_span_listener,
    unregister_scalar_listener,
)

__all__ = [
    "clear_event_listeners",
    "record_event",
    "record_event_duration_secs",
    "record_event_time_span",
    "record_scalar",
    "register_event_duration_secs_listener",
    "register_event_listener",
    "register_event_time_span_listener",
    "register_scalar_listener",
    "unregister_event_duration_listener",
    "unregister_event_listener",
    "unregister_event_time_span_listener",
    "unregister_scalar_listener",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
