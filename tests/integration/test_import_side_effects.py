"""Importing and using funcgrad changes nothing outside funcgrad: not the allocator (NOTE: [eager
allocations]), not ``sys.meta_path`` (NOTE: [no jax import]), not jaxlib's or Python's logging
(NOTE: [jaxlib's log level]), not the environment, warning filters, NumPy's error state or signal
handlers. The checks run in fresh interpreters (one per mode for the state and the allocator), which
is what a user's notebook is."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# What a session does with funcgrad: a jitted call and repeated eager gradients (the eager program
# cache), on the default CPU device.
USE_FUNCGRAD = """
import funcgrad, funcgrad.numpy as fnp
if MODE == "tuned":
    funcgrad.config.update("funcgrad_malloc_tuning", True)
funcgrad.jit(lambda x: fnp.tanh(x) * 2)(np.ones((256, 256)))
for _ in range(3):
    funcgrad.grad(lambda x: fnp.sum(fnp.tanh(x) ** 2))(np.ones((256, 256)))
"""


def _run(code: str, mode: str, env: dict | None = None) -> tuple[dict, str]:
    """Run ``code`` (with ``MODE`` bound) in a fresh interpreter; its last stdout line is JSON."""
    full_env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-c", f"MODE = {mode!r}\n" + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def _glibc() -> bool:
    try:
        return hasattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), "mallinfo2")
    except OSError:
        return False


needs_glibc = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not _glibc(), reason="glibc's malloc (mallinfo2)"
)

# One session per mode checks the process state, the allocator's mmap threshold and the return of a
# large array's memory, in that order, in one fresh interpreter (three interpreters per mode cost
# about 2 CPU-s more): ``GLIBC`` is whether this libc has mallinfo2 (the allocator checks need it).
SESSION = (
    """
import ctypes, ctypes.util, gc, json, logging, os, signal, sys, threading, warnings
import numpy as np, scipy, ml_dtypes, jaxlib  # funcgrad's dependencies, imported first
from jaxlib import xla_client

def snapshot():
    return {
        "meta_path": [repr(f) for f in sys.meta_path],
        "path_hooks": [repr(h) for h in sys.path_hooks],
        "environ": dict(os.environ),
        "numpy_errstate": np.geterr(),
        "numpy_printoptions": {k: repr(v) for k, v in np.get_printoptions().items()},
        "warning_filters": [repr(f) for f in warnings.filters],
        "loggers": {n: [logging.getLogger(n).level, len(logging.getLogger(n).handlers)]
                    for n in ("", "absl", "jax", "jaxlib")},
        "signals": {s.name: repr(signal.getsignal(s))
                    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGSEGV, signal.SIGABRT)},
        "hooks": [repr(sys.excepthook), repr(threading.excepthook), repr(sys.displayhook)],
        "limits": [sys.getrecursionlimit(), sys.getswitchinterval(), list(gc.get_threshold())],
    }

before = snapshot()
"""
    + USE_FUNCGRAD
    + """
from funcgrad.sharding import Mesh, NamedSharding, PartitionSpec as P
mesh = Mesh(np.array(funcgrad.devices()[:1]), ("x",))
y = funcgrad.device_put(np.arange(4.0), NamedSharding(mesh, P("x")))
np.asarray(y)  # reads the shards (NOTE: [no jax import])
funcgrad.device_put(np.ones(2)).unsafe_buffer_pointer()
after = snapshot()
changed = {k: [before[k], after[k]] for k in before if before[k] != after[k]}
out = {"changed": changed, "jax": "jax" in sys.modules}

if GLIBC:
    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
            "keepcost")]

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    start = libc.mallinfo2().hblkhd
    p = libc.malloc(64 << 20)  # above glibc's largest dynamic mmap threshold (32 MiB)
    out["mapped_mib"] = (libc.mallinfo2().hblkhd - start) / 2**20
    libc.free(p)

    def rss_mib():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

    start = rss_mib()
    big = np.ones(512 << 20, np.uint8)  # 512 MiB (far above glibc's 32 MiB mmap ceiling), every page touched
    later = np.ones(1 << 20)  # allocated after it, as a notebook goes on
    peak = rss_mib()
    del big
    out["rss"] = {"start": start, "peak": peak, "end": rss_mib()}
print(json.dumps(out, default=str))
"""
)


@functools.cache
def _session(mode: str) -> dict:
    return _run(f"GLIBC = {_glibc()!r}\n" + SESSION, mode)[0]


@needs_glibc
def test_deleting_a_large_array_returns_its_memory_with_funcgrad_imported():
    out = _session("default")["rss"]
    assert out["peak"] - out["start"] > 480  # the array was resident
    assert out["end"] - out["start"] < 100, out  # and its memory went back to the system
    # The opt-in is what kept it (NOTE: [eager allocations]): with it, the freed block stays in the
    # heap under the array allocated after it -- which is why it is not done at import.
    tuned = _session("tuned")["rss"]
    assert tuned["end"] - tuned["start"] > 480, tuned


@needs_glibc
def test_importing_funcgrad_changes_no_malloc_setting():
    # glibc maps a 64 MiB block with mmap unless M_MMAP_MAX is 0 (what the opt-in sets).
    out = _session("default")
    assert out["mapped_mib"] >= 64, out
    tuned = _session("tuned")
    assert tuned["mapped_mib"] == 0, tuned


def test_importing_and_using_funcgrad_changes_no_process_state():
    out = _session("default")
    assert out["changed"] == {}
    assert out["jax"] is False  # jaxlib's lazy 'import jax' was refused, not taken


def _jaxlib_info_lines(stderr: str) -> int:
    return sum("pjrt_client" in line for line in stderr.splitlines())


LOGGING = """
import json
import numpy as np
if MODE != "jaxlib":
    import funcgrad, funcgrad.numpy as fnp
    from funcgrad.xla_bridge import runtime, sharded  # the bridge, imported, nothing computed
if MODE == "computed":
    funcgrad.jit(lambda x: x * 2)(np.ones(3))
from jaxlib import xla_client
xla_client.make_cpu_client()  # a client of jaxlib's own: it logs at INFO level when it starts
print(json.dumps({}))
"""


def test_importing_funcgrad_leaves_jaxlib_logging_alone():
    # A jaxlib client logs the same lines in a process that imported funcgrad as in one that did not.
    _, plain = _run(LOGGING, "jaxlib")
    _, imported = _run(LOGGING, "imported")
    assert _jaxlib_info_lines(plain) > 0
    assert _jaxlib_info_lines(imported) == _jaxlib_info_lines(plain), imported
    # Once funcgrad has started its own client it has quieted jaxlib's INFO lines (NOTE: [jaxlib's
    # log level]), unless the user chose a level.
    _, computed = _run(LOGGING, "computed")
    assert _jaxlib_info_lines(computed) == 0, computed
    _, chosen = _run(LOGGING, "computed", {"TF_CPP_MIN_LOG_LEVEL": "0"})
    assert _jaxlib_info_lines(chosen) > 0, chosen
