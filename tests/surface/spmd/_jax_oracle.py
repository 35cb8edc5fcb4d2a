"""Run a script under jax 0.10.2 in a subprocess on 8 CPU devices and return what it prints as
JSON: the oracle of the spmd tests, kept out of the test process (test_sharded_arrays checks that
funcgrad never imports jax, and these tests share its process).

One jax process serves every script of a test process (``run_jax`` starts it on first use): each
script is run there as a fresh ``__main__`` module, its standard output captured, ``os.environ``
restored after it. Starting Python and importing jax for each of the files' oracles cost about
0.9 s of CPU each (7 of the 8 saved in the 8-device suite, which tests/integration/test_spmd.py
runs); the scripts and what they print are as before. jax compiles there with the options of the
test processes (NOTE: [oracle compile options], ``_oracle.cheapen_jax_compiles``), as funcgrad's
side of these tests does: the nine oracle-using files 37.3 -> 32.1 s of CPU with children."""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys

TIMEOUT = 240

# The server: reads "<byte count>\n<script>" from stdin, runs the script, writes one JSON line
# {"out": its standard output} or {"error": the traceback} on the channel (a copy of the
# original stdout; the scripts' own fd-1 writes go to stderr).
_SERVER = r"""
import contextlib, io, json, os, sys, traceback
import jax, _oracle  # (NOTE: [oracle compile options]: jax compiles as in the test processes)
_oracle.cheapen_jax_compiles()
channel = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
stdin = sys.stdin.buffer
while True:
    header = stdin.readline()
    if not header:
        break
    script = stdin.read(int(header)).decode()
    env = dict(os.environ)
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(script, "<jax oracle>", "exec"), {"__name__": "__main__"})
        reply = {"out": buf.getvalue()}
    except BaseException:
        reply = {"error": traceback.format_exc()}
    os.environ.clear()
    os.environ.update(env)
    channel.write(json.dumps(reply) + "\n")
    channel.flush()
"""

_server: list = []


def _start() -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    env["JAX_PLATFORMS"] = "cpu"
    env["JAX_ENABLE_X64"] = "1"
    here = os.path.dirname(os.path.abspath(__file__))
    support = os.path.join(os.path.dirname(os.path.dirname(here)), "_support")  # (_oracle)
    env["PYTHONPATH"] = os.pathsep.join([here, support, env.get("PYTHONPATH", "")])
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    atexit.register(_stop, proc)
    return proc


def _stop(proc: subprocess.Popen) -> None:
    # End of input ends the server; waiting reaps it (its CPU time is then its parent's children's).
    try:
        proc.stdin.close()
        proc.wait(timeout=30)
    except Exception:  # noqa: BLE001 - it is going away either way
        proc.kill()


def run_jax(script: str):
    """What ``script`` prints last (a JSON line), run under jax on 8 CPU devices."""
    if not _server or _server[0].poll() is not None:
        _server[:] = [_start()]
    proc = _server[0]
    data = script.encode()
    proc.stdin.write(b"%d\n" % len(data) + data)
    proc.stdin.flush()
    ready, _, _ = select.select([proc.stdout], [], [], TIMEOUT)
    if not ready:
        proc.kill()
        raise RuntimeError(f"the jax oracle gave no answer in {TIMEOUT} s")
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError("the jax oracle's process ended")
    reply = json.loads(line)
    if "error" in reply:
        raise RuntimeError(f"the jax oracle failed:\n{reply['error'][-4000:]}")
    return json.loads(reply["out"].splitlines()[-1])
