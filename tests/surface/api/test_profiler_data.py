"""funcgrad.profiler's ProfileData/ProfilePlane/ProfileEvent (reading a trace back in Python) and
register_subprocess (a child process's profiler server joins this one's traces)."""

from __future__ import annotations

import socket
import subprocess
import sys

import numpy as np

import funcgrad
from funcgrad import profiler


def test_a_trace_reads_back_with_its_annotation(tmp_path):
    with profiler.trace(str(tmp_path)):
        with profiler.TraceAnnotation("fg_matmul_span", step=7):
            funcgrad.jit(lambda x: x @ x.T)(np.ones((32, 32))).block_until_ready()
    (xplane,) = tmp_path.glob("plugins/profile/*/*.xplane.pb")
    data = profiler.ProfileData.from_file(str(xplane))
    assert isinstance(data, profiler.ProfileData)
    planes = list(data.planes)
    assert all(isinstance(p, profiler.ProfilePlane) for p in planes)
    host = data.find_plane_with_name("/host:CPU")
    assert host is not None
    spans = [e for line in host.lines for e in line.events if e.name == "fg_matmul_span"]
    assert len(spans) == 1
    (span,) = spans
    assert isinstance(span, profiler.ProfileEvent)
    assert span.duration_ns > 0 and span.end_ns - span.start_ns == span.duration_ns
    assert ("step", 7) in [(k, v) for k, v in span.stats]
    # the same bytes parse from memory
    again = profiler.ProfileData.from_serialized_xspace(xplane.read_bytes())
    assert [p.name for p in again.planes] == [p.name for p in planes]


_CHILD = """
import sys, time
from funcgrad import profiler
server = profiler.start_server(int(sys.argv[1]))
print("ready", flush=True)
time.sleep(60)
"""


def test_register_subprocess(tmp_path):
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(port)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert child.stdout.readline().strip() == b"ready"
        unregister = profiler.register_subprocess(child.pid, port)
        assert callable(unregister)
        with profiler.trace(str(tmp_path)):
            funcgrad.jit(lambda x: x + 1.0)(np.ones(3)).block_until_ready()
        unregister()
        assert list(tmp_path.glob("plugins/profile/*/*.xplane.pb"))
    finally:
        child.kill()
        child.wait()


def test_experimental_profiler_reads_profiled_instructions_as_jax(tmp_path):
    # JAX's GPU performance tips: jax.experimental.profiler.get_profiled_instructions_proto of a
    # profile's run folder (empty on a CPU profile, as jax's; funcgrad had no such module: the
    # page's import raised ImportError); a missing folder is the same jaxlib error.
    import pytest

    jax = pytest.importorskip("jax")
    jax_profiler = pytest.importorskip("jax.experimental.profiler")
    from funcgrad.experimental import profiler as fg_profiler

    def read(lib, experimental, log_dir):
        with lib.profiler.trace(str(log_dir)):
            lib.jit(lambda x: x * 2)(np.ones(3)).block_until_ready()
        (run,) = log_dir.glob("plugins/profile/*/")
        with pytest.raises(Exception) as missing:
            experimental.get_profiled_instructions_proto(str(log_dir / "missing"))
        return experimental.get_profiled_instructions_proto(str(run)), type(missing.value), str(missing.value)

    ours = read(funcgrad, fg_profiler, tmp_path / "ours")
    theirs = read(jax, jax_profiler, tmp_path / "theirs")
    assert ours[0] == theirs[0] == b""
    assert ours[1] is theirs[1] and ours[2].replace("ours", "theirs") == theirs[2]
