"""funcgrad.profiler: a trace written to disk holds the annotated spans and XLA's work; the
errors of a second trace, a missing trace and a Perfetto link; device memory profiles."""

from __future__ import annotations

import gzip
import json
import pathlib

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import profiler


def _events(log_dir) -> list[str]:
    (trace_file,) = pathlib.Path(log_dir).glob("plugins/profile/*/*.trace.json.gz")
    with gzip.open(trace_file) as f:
        return [e.get("name", "") for e in json.load(f)["traceEvents"]]


def test_trace_records_annotations_and_xla_work(tmp_path):
    @profiler.annotate_function
    def step(x):
        return funcgrad.jit(lambda v: fnp.tanh(v @ v.T))(x).block_until_ready()

    with profiler.trace(tmp_path):
        with profiler.TraceAnnotation("load batch"):
            x = fnp.asarray(np.random.default_rng(0).standard_normal((128, 128)))
        for i in range(2):
            with profiler.StepTraceAnnotation("train", step_num=i):
                out = step(x)
    names = _events(tmp_path)
    assert "load batch" in names and any(n.startswith("train") for n in names)
    assert any("step" in n for n in names)  # annotate_function's span, named after the function
    assert list(tmp_path.glob("plugins/profile/*/*.xplane.pb"))
    np.testing.assert_allclose(np.asarray(out), np.tanh(np.asarray(x) @ np.asarray(x).T), rtol=1e-12)


def test_perfetto_trace_file(tmp_path):
    with profiler.trace(tmp_path, create_perfetto_trace=True):
        with profiler.TraceAnnotation("for perfetto"):
            funcgrad.jit(lambda v: v + 1)(fnp.ones(3)).block_until_ready()
    (perfetto,) = tmp_path.glob("plugins/profile/*/perfetto_trace.json.gz")
    with gzip.open(perfetto) as f:
        events = json.load(f)
    assert "metadata" not in events and "for perfetto" in [e.get("name") for e in events["traceEvents"]]


def test_trace_errors(tmp_path):
    profiler.start_trace(tmp_path)
    with pytest.raises(RuntimeError, match="Profile has already been started"):  # (JAX's words)
        profiler.start_trace(tmp_path)
    profiler.stop_trace()
    with pytest.raises(RuntimeError, match="No profile started"):
        profiler.stop_trace()
    with pytest.raises(ValueError, match="No active profiler server"):
        profiler.stop_server()
    with pytest.raises(ValueError, match="create_perfetto_link"):
        profiler.start_trace(tmp_path, create_perfetto_link=True)


def test_device_memory_profile(tmp_path):
    keep = funcgrad.jit(lambda v: v * 2)(fnp.ones((256, 256)))  # a live device buffer
    blob = profiler.device_memory_profile()
    assert isinstance(blob, bytes) and len(blob) > 0
    profiler.save_device_memory_profile(tmp_path / "mem.prof")
    assert (tmp_path / "mem.prof").stat().st_size > 0
    assert keep.shape == (256, 256)
