"""CPU time per GradBench workload, tool by tool, in fresh processes (benchmark code).

On a loaded machine the wall-clock timings GradBench's protocol reports for tools run minutes apart
are not comparable (a CPU-bound tool gets a fraction of a core). This script times the same
programs on the same inputs in CPU time (``time.process_time``, every thread of the process):

    python bench/gradbench/cpu_times.py capture EVAL [eval args]   # the eval's inputs -> a pickle
    taskset -c 1 python bench/gradbench/cpu_times.py time funcgrad|jax|pytorch EVAL [filter] [reps]
    python bench/gradbench/cpu_times.py manual EVAL BIN_DIR [filter] [reps]
    python bench/gradbench/cpu_times.py table [-v] OUTPUT...        # markdown (-v: every workload)

``capture`` runs GradBench's own eval program (from ``--gradbench``, default ``$GRADBENCH_DIR``)
with its protocol methods replaced, recording each ``evaluate`` input (the eval's default sizes;
ht needs ``--max 11`` where the checkout lacks hand12). ``time`` runs the funcgrad tool's
programs or GradBench's Python tools unchanged (their results waited for), min and median of
``reps`` calls after the first, which is reported apart ("first": tracing and compilation).
``manual`` runs a C++ tool's binaries (``BIN_DIR``: ``tools/manual/bin`` or ``tools/finite/bin``
of a copy of the checkout built with ``cpp/gradbench/main.hpp``'s timer reading
``clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`` instead of ``steady_clock``) and reads their timings.
"""

import os
import pickle
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.environ.get("GRADBENCH_DIR", "/tmp/gradbench/src")
STORE = os.environ.get("GRADBENCH_INPUTS", "/tmp/gradbench/inputs")


def capture(ev, args):
    import importlib
    import json  # noqa: F401

    sys.path.insert(0, os.path.join(CHECKOUT, "python/gradbench"))
    os.chdir(CHECKOUT)
    from gradbench import eval as gbeval

    got = []

    class Ok:
        success = True

    def evaluate(self, *, function, input, description=None, **_):
        got.append((function, input, description))
        return Ok()

    cls = gbeval.SingleModuleValidatedEval
    cls.start, cls.define, cls.evaluate = (lambda self, *a, **k: None), (lambda self, *a, **k: Ok()), evaluate
    mod = importlib.import_module(f"gradbench.evals.{ev}.run")
    sys.argv = ["run", *args]
    mod.main()
    os.makedirs(STORE, exist_ok=True)
    with open(os.path.join(STORE, f"{ev}.pkl"), "wb") as f:
        pickle.dump(got, f)
    print(ev, len(got), "inputs")


def _inputs(ev, filt):
    with open(os.path.join(STORE, f"{ev}.pkl"), "rb") as f:
        return [x for x in pickle.load(f) if filt in f"{x[0]} {x[2]}"]


def time_tool(tool, ev, filt="", reps=3):
    import importlib

    if tool == "funcgrad":
        sys.path.insert(0, HERE)
        import funcgrad

        mod, wait = importlib.import_module(f"funcgrad_tool.{ev}"), funcgrad.block_until_ready

        def prep(fn, inp):
            e = getattr(mod, fn)
            args = e.pre(inp)
            return lambda: e.run(*args)
    else:
        sys.path.insert(0, os.path.join(CHECKOUT, "python/gradbench"))
        from gradbench import wrap

        def keep_pre(*, pre, post, **_):
            def deco(fn):
                fn._pre = pre
                return fn

            return deco

        wrap.multiple_runs = wrap.function = keep_pre
        mod = importlib.import_module(f"gradbench.tools.{tool}.{ev}")
        if tool == "jax":
            import jax

            wait = jax.block_until_ready
        else:
            wait = lambda x: x  # noqa: E731 (eager PyTorch: the result is there)

        def prep(fn, inp):
            f = getattr(mod, fn)
            a = f._pre(inp)
            return lambda: f(a)

    for fn, inp, desc in _inputs(ev, filt):
        call = prep(fn, inp)
        w0 = time.perf_counter()
        wait(call())
        first = time.perf_counter() - w0
        ts = []
        for _ in range(reps):
            c0 = time.process_time()
            wait(call())
            ts.append(time.process_time() - c0)
        print(
            f"{tool:9s} {ev} {fn:10s} {desc:28s} first {first:6.2f}s  cpu min {1e3 * min(ts):9.3f}"
            f" med {1e3 * statistics.median(ts):9.3f} ms",
            flush=True,
        )


def time_manual(ev, bin_dir, filt="", reps=3):
    import json

    tool = os.path.basename(os.path.dirname(os.path.abspath(bin_dir)))
    for fn, inp, desc in _inputs(ev, filt):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as tmp:
            json.dump(dict(inp) | {"min_runs": reps + 1, "min_seconds": 0}, tmp)
            tmp.flush()
            out = subprocess.run([os.path.join(bin_dir, ev), tmp.name, fn], capture_output=True, text=True)
        ts = [json.loads(x)["nanoseconds"] for x in out.stdout.splitlines()[1:] if '"evaluate"' in x][1:]
        print(
            f"{tool:9s} {ev} {fn:10s} {desc:28s} cpu min {min(ts) / 1e6:9.3f}"
            f" med {statistics.median(ts) / 1e6:9.3f} ms",
            flush=True,
        )


def table(paths, per_workload=False):
    import math
    from collections import defaultdict

    times = defaultdict(dict)
    for p in paths:
        for line in open(p):
            m = re.match(r"(\w+)\s+(\w+) (\w+)\s+(\S+)\s+.*?cpu min\s+([\d.]+)", line)
            if m:
                tool, ev, fn, desc, t = m.groups()
                old = times[(ev, fn, desc)].get(tool, math.inf)
                times[(ev, fn, desc)][tool] = min(float(t), old)

    def gm(xs):
        xs = [x for x in xs if x]
        return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None

    by = defaultdict(lambda: defaultdict(list))
    for (ev, fn, _), row in times.items():
        by[ev][fn].append(row)
    ref = ("manual", "finite")
    print(
        "| eval | function | workloads | funcgrad | jax | pytorch | manual (finite)"
        " | funcgrad / best(jax, pytorch) | funcgrad / manual |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for ev in by:
        for fn, rows in sorted(by[ev].items()):
            refs = [next((r[t] for t in ref if t in r), None) for r in rows]
            peers = [min((r[t] for t in ("jax", "pytorch") if t in r), default=None) for r in rows]
            rp = [r["funcgrad"] / p for r, p in zip(rows, peers) if "funcgrad" in r and p]
            rm = [r["funcgrad"] / m for r, m in zip(rows, refs) if "funcgrad" in r and m]
            cell = lambda x: "-" if x is None else f"{x:.3g} ms"  # noqa: E731
            ratio = lambda rs: f"{gm(rs):.2f}x ({len(rs)})" if rs else "-"  # noqa: E731
            worst = f", max {max(rp):.2f}x" if rp else ""
            print(
                f"| {ev} | {fn} | {sum('funcgrad' in r for r in rows)}"
                f" | {cell(gm([r.get('funcgrad') for r in rows]))} | {cell(gm([r.get('jax') for r in rows]))}"
                f" | {cell(gm([r.get('pytorch') for r in rows]))} | {cell(gm(refs))}"
                f" | {ratio(rp)}{worst} | {ratio(rm)} |"
            )
    if per_workload:
        for (ev, fn, desc), row in times.items():
            print(ev, fn, desc, " ".join(f"{t}={v:.4g}" for t, v in sorted(row.items())))


if __name__ == "__main__":
    cmd, *rest = sys.argv[1:] or ["-h"]
    if cmd == "capture":
        capture(rest[0], rest[1:])
    elif cmd == "time":
        time_tool(rest[0], rest[1], *(rest[2:3] or [""]), *[int(x) for x in rest[3:4]])
    elif cmd == "manual":
        time_manual(rest[0], rest[1], *(rest[2:3] or [""]), *[int(x) for x in rest[3:4]])
    elif cmd == "table":
        table([p for p in rest if p != "-v"], "-v" in rest)
    else:
        print(__doc__)
