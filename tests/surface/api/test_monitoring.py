"""funcgrad.monitoring against jax.monitoring: the listener registry's behaviour, and the events a
jitted function's first call records (JAX's names, NOTE: [monitoring events])."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import monitoring

_COMPILE_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
}


@pytest.fixture(autouse=True)
def _clean():
    monitoring.clear_event_listeners()
    yield
    monitoring.clear_event_listeners()


def _record_compile(mon, jit, np_mod, scale):
    durations, spans, scalars = [], [], []
    mon.register_event_duration_secs_listener(lambda e, d, **kw: durations.append((e, d, kw)))
    mon.register_event_time_span_listener(lambda e, s, t, **kw: spans.append((e, s, t, kw)))
    mon.register_scalar_listener(lambda e, v, **kw: scalars.append((e, v, kw)))

    def fresh_function(x):  # a new function object: its first call traces and compiles
        return np_mod.sin(x) * scale

    jit(fresh_function)(np.arange(5.0))
    return durations, spans, scalars


def test_jit_records_jaxs_compile_events():
    durations, spans, scalars = _record_compile(monitoring, funcgrad.jit, fnp, 3.25)
    names = {e for e, _, _ in durations}
    assert _COMPILE_EVENTS <= names
    for e, d, kw in durations:
        if e in _COMPILE_EVENTS:
            assert d >= 0.0 and "fun_name" in kw
    # each timed event also gives a time span whose length is the duration, and its start as a scalar
    by_event = {e: d for e, d, _ in durations}
    for e, s, t, _ in spans:
        assert t >= s and abs((t - s) - by_event[e]) < 1e-6
    assert {e for e, _, _ in scalars} >= _COMPILE_EVENTS
    trace_kw = [kw for e, _, kw in durations if e.endswith("jaxpr_trace_duration")]
    assert trace_kw[0]["fun_name"] == "fresh_function"


def test_the_same_compile_events_as_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    try:
        theirs, _, _ = _record_compile(jax.monitoring, jax.jit, jax.numpy, 3.5)
    finally:
        jax.monitoring.clear_event_listeners()
    ours, _, _ = _record_compile(monitoring, funcgrad.jit, fnp, 3.5)
    ours_names = {e for e, _, _ in ours}
    their_names = {e for e, _, _ in theirs}
    assert _COMPILE_EVENTS <= their_names and _COMPILE_EVENTS <= ours_names

    # the trace event names the Python function in both
    def fun_name(records):
        return next(kw["fun_name"] for e, _, kw in records if e.endswith("jaxpr_trace_duration"))

    assert fun_name(ours) == fun_name(theirs) == "fresh_function"


def test_a_cache_hit_records_no_compile():
    f = funcgrad.jit(lambda x: x * 2.0 + 1.0)
    f(np.ones(3))
    seen = []
    monitoring.register_event_duration_secs_listener(lambda e, d, **kw: seen.append(e))
    f(np.ones(3))
    assert seen == []


def test_registry_as_jax():
    jax = pytest.importorskip("jax")
    for mon in (monitoring, jax.monitoring):
        log = []
        a = lambda e, log=log, **kw: log.append(("a", e, kw))  # noqa: E731
        b = lambda e, log=log, **kw: log.append(("b", e, kw))  # noqa: E731
        mon.register_event_listener(a)
        mon.register_event_listener(b)
        mon.record_event("/x", k=1)
        mon.unregister_event_listener(a)
        mon.record_event("/y")
        mon.record_scalar("/s", 2.0)  # no scalar listener: nothing happens
        assert log == [("a", "/x", {"k": 1}), ("b", "/x", {"k": 1}), ("b", "/y", {})]
        mon.clear_event_listeners()
        mon.record_event("/z")
        assert len(log) == 3
    with pytest.raises(ValueError, match="not a registered event listener"):
        monitoring.unregister_event_listener(print)
    with pytest.raises(AssertionError):  # (JAX's type: it asserts; monitoring_test)
        monitoring.unregister_event_duration_listener(print)


def test_persistent_cache_events(tmp_path):
    from funcgrad.experimental.compilation_cache import compilation_cache as cc

    events = []
    monitoring.register_event_listener(lambda e, **kw: events.append(e))
    cc.set_cache_dir(str(tmp_path))
    try:
        scale = 1.0 + float(np.random.default_rng().random())  # a module no earlier run cached
        funcgrad.jit(lambda x: fnp.cos(x) * scale)(np.ones(4))
        funcgrad.clear_caches()
        funcgrad.jit(lambda x: fnp.cos(x) * scale)(np.ones(4))
    finally:
        cc.set_cache_dir(None)
    assert events.count("/jax/compilation_cache/compile_requests_use_cache") == 2
    assert events.count("/jax/compilation_cache/cache_misses") == 1
    assert events.count("/jax/compilation_cache/cache_hits") == 1
