"""An opt-in pytest plugin that records each test's CPU time, its subprocesses' included, for
finding where the suite's time goes (the suite is CPU-bound on CI's 2 cores, so wall times on a
shared machine say little).

Off unless asked for::

    PYTHONPATH=tests/_support FUNCGRAD_CPU_LOG=/tmp/cpu.jsonl \
        .venv/bin/python -m pytest -p _cputime -n 0 tests/kernel
    .venv/bin/python tests/_support/_cputime.py /tmp/cpu.jsonl      # the summary, by file and test

Each line of the log is one phase of one test (setup, call, teardown) or one file's collection:
``{"id", "phase", "cpu", "children", "wall", "pid"}``; the last row, ``(process)``, is the whole
process's CPU from its start (its ``wall`` means nothing). ``cpu`` is this process's user + system
time over the phase, threads included (XLA's compiles); ``children`` is that of the subprocesses
that ended and were waited for during it (fresh-process tests, notebook kernels, the 8-device
suite). A module-scoped fixture's cost lands on the first test that asks for it. A subprocess
that nobody waits for is reaped by the next ``subprocess.Popen`` of the process, and its CPU lands
on the test that made that one: the documentation site's build (tests/_support/_docs_build.py,
~50 s) shows up so on some test with a subprocess (the ``children`` of a test whose ``wall`` is
short); a server process kept for the whole run (the spmd tests' jax oracle) is reaped at exit and
is in ``(process)`` only.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict

import pytest

_LOG = os.environ.get("FUNCGRAD_CPU_LOG")


def _times():
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime, time.perf_counter()


def _record(nodeid, phase, before):
    if not _LOG:
        return
    after = _times()
    row = {
        "id": nodeid,
        "phase": phase,
        "cpu": round(after[0] - before[0], 4),
        "children": round(after[1] - before[1], 4),
        "wall": round(after[2] - before[2], 4),
        "pid": os.getpid(),
    }
    with open(_LOG, "a") as f:
        f.write(json.dumps(row) + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    before = _times()
    yield
    if isinstance(collector, pytest.Module):
        _record(collector.nodeid, "collect", before)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    before = _times()
    yield
    _record(item.nodeid, "setup", before)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    before = _times()
    yield
    _record(item.nodeid, "call", before)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    before = _times()
    yield
    _record(item.nodeid, "teardown", before)


def pytest_unconfigure(config):
    """The whole process (start-up and imports included) as one row, ``(process)``."""
    if _LOG:
        _record("(process)", "process", (0.0, 0.0, time.perf_counter()))


def summarize(path, top=40):
    """Print the CPU (own + children) by file, by test function and by test, the ``top`` of each,
    largest first."""
    by_file, by_test = defaultdict(lambda: [0.0, 0.0, 0.0]), defaultdict(lambda: [0.0, 0.0, 0.0])
    by_function = defaultdict(lambda: [0.0, 0.0, 0.0])  # (a parametrised test's cases together)
    processes = [0.0, 0.0]
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            if row["phase"] == "process":
                processes[0] += row["cpu"]
                processes[1] += row["children"]
                continue
            file = row["id"].split("::")[0]
            keys = ((by_file, file), (by_function, row["id"].split("[")[0]), (by_test, row["id"]))
            for table, key in keys:
                table[key][0] += row["cpu"]
                table[key][1] += row["children"]
                table[key][2] += row["wall"]
    total = [sum(v[i] for v in by_file.values()) for i in range(3)]
    print(f"processes (start-up included): cpu {processes[0]:.1f} s + children {processes[1]:.1f} s")
    both = total[0] + total[1]
    print(f"tests: cpu {total[0]:.1f} s + children {total[1]:.1f} s = {both:.1f} s; wall {total[2]:.1f} s")
    for title, table in (("files", by_file), ("test functions", by_function), ("tests", by_test)):
        print(f"\n{title} (cpu + children, cpu, children, wall):")
        ranked = sorted(table.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
        for key, (cpu, kids, wall) in ranked[:top]:
            print(f"{cpu + kids:8.1f} {cpu:8.1f} {kids:8.1f} {wall:8.1f}  {key}")


if __name__ == "__main__":
    summarize(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40)
