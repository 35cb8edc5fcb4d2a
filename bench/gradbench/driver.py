"""Run GradBench's own eval programs against tools, without Docker or GradBench's Rust CLI.

GradBench (github.com/gradbench/gradbench) pairs an *eval* (a Python program that writes protocol
messages on stdout, reads the replies on stdin and validates each answer against the C++
``manual`` tool) with a *tool* (a process that answers on stdout). This driver starts both, relays
each line between them, and records every message, reply and the eval's verdict. Tools:

- ``funcgrad``: this repository's tool, ``bench/gradbench/tool.py``;
- ``jax``, ``pytorch``: GradBench's Python tools, run unchanged from the checkout except that
  ``waiting.py`` makes their timed region wait for the result (``jax-nowait``, ``pytorch-nowait``:
  exactly as GradBench runs them, timing JAX's dispatch only);
- ``manual``: GradBench's hand-written C++ tool, through its ``cpp.py`` (which rebuilds the
  eval's binary with ``make`` on ``define``).

Every tool runs pinned to one core (``taskset``) with ``OMP_NUM_THREADS=1`` (GradBench runs tools
single-threaded; its JAX tool pins itself the same way). The eval programs run from the checkout's
root (they read ``evals/*/data`` and call ``tools/manual/bin/*`` relative to it).

Setup (once; see bench/gradbench/README.md): a checkout of gradbench (e.g. the ``fetch`` tool's
mirror cloned to /tmp/gradbench/src), ``pip install -e <checkout>/python/gradbench pydantic
dataclasses-json`` into the venv, and ``make -C <checkout>/tools/manual`` with JSON for Modern C++
at ``<checkout>/cpp/json.hpp``.

Usage::

    python bench/gradbench/driver.py --gradbench /tmp/gradbench/src --evals lse gmm \\
        --tools funcgrad jax pytorch manual --log /tmp/gradbench/run1.jsonl
    python bench/gradbench/driver.py --table /tmp/gradbench/run1.jsonl [more logs...]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
EVALS = ("hello", "gmm", "ba", "ht", "kmeans", "llsq", "lse", "lstm", "ode", "det", "particle", "saddle")
TOOLS = ("funcgrad", "jax", "pytorch", "manual")
EXTRA_TOOLS = ("finite",)
# (primal, derivative) function names per eval; particle and saddle have four derivative variants
FUNCTIONS = {
    "hello": ("square", "double"),
    "gmm": ("objective", "jacobian"),
    "ba": ("objective", "jacobian"),
    "ht": ("objective", "jacobian"),
    "lstm": ("objective", "jacobian"),
    "kmeans": ("cost", "dir"),
    "llsq": ("primal", "gradient"),
    "lse": ("primal", "gradient"),
    "ode": ("primal", "gradient"),
    "det": ("primal", "gradient"),
    "particle": (None, None),
    "saddle": (None, None),
}


def tool_command(tool: str, checkout: str) -> list[str]:
    py = sys.executable
    if tool == "funcgrad":
        return [py, os.path.join(HERE, "tool.py")]
    if tool in ("jax", "pytorch"):  # unchanged, but their timings wait for the result (waiting.py)
        script = os.path.join(checkout, "python/gradbench/gradbench/tools", tool, "run.py")
        return [py, os.path.join(HERE, "waiting.py"), script]
    if tool in ("jax-nowait", "pytorch-nowait"):  # exactly as GradBench runs them
        return [py, os.path.join(checkout, "python/gradbench/gradbench/tools", tool.split("-")[0], "run.py")]
    if tool in ("manual", "finite"):  # C++ tools; ``finite`` (finite differences) covers particle, saddle
        return [py, os.path.join(checkout, "python/gradbench/gradbench/cpp.py"), tool]
    raise SystemExit(f"unknown tool {tool!r}; choose from {TOOLS}")


def ensure_lstm_text(checkout: str) -> str | None:
    """The lstm eval reads the first 8192 characters of ``evals/lstm/data/lstm_full.txt``, a file
    that GradBench keeps in Git LFS and that mirrors may lack. The eval's sizes depend only on how
    many bits the largest character code needs (7 for ASCII text with lower-case letters), and its
    parameters are random, so any ASCII prose of that length gives workloads of the same shape.
    Returns a note when a substitute was written."""
    path = os.path.join(checkout, "evals/lstm/data/lstm_full.txt")
    if os.path.exists(path):
        return None
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        import this  # Python's own prose (ROT13 in the module; decoded below)
    zen = "".join(this.d.get(c, c) for c in this.s)
    text = (zen + "\n") * (8192 // len(zen) + 2)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf8") as f:
        f.write(text)
    return "lstm_full.txt absent from the checkout; substituted ASCII text (same sizes)"


def extra_args(eval_name: str, checkout: str) -> list[str]:
    """Arguments the checkout forces: ht's default largest hand (hand12, 100000 points) is also
    an LFS file that mirrors may lack; then the eval runs up to hand11."""
    if eval_name == "ht":
        data = os.path.join(checkout, "evals/ht/data/complicated_big")
        if not any(f.startswith("hand12_") for f in os.listdir(data)):
            return ["--max", "11"]
    return []


def run_pair(eval_name: str, tool: str, checkout: str, eval_args: list[str], timeout: float, core: int, log):
    """Run one eval against one tool; write one JSON record per evaluate (plus a summary)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env["PYTHONUNBUFFERED"] = "1"
    pin = ["taskset", "-c", str(core)]
    tool_proc = subprocess.Popen(
        pin + tool_command(tool, checkout), cwd=checkout, env=env, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=1,
    )  # fmt: skip
    eval_proc = subprocess.Popen(
        [sys.executable, "-m", f"gradbench.evals.{eval_name}.run", *eval_args], cwd=checkout, env=env,
        text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=1,
    )  # fmt: skip
    stderr_tail = {"tool": [], "eval": []}

    def drain(stream, key):
        for line in stream:
            stderr_tail[key] = (stderr_tail[key] + [line])[-40:]

    for stream, key in ((tool_proc.stderr, "tool"), (eval_proc.stderr, "eval")):
        threading.Thread(target=drain, args=(stream, key), daemon=True).start()

    deadline = time.monotonic() + timeout
    timer = threading.Timer(timeout, lambda: (tool_proc.kill(), eval_proc.kill()))
    timer.start()
    pending = {}  # evaluate id -> record awaiting the eval's analysis
    status = "ok"
    define = None
    base = {"eval": eval_name, "tool": tool, "args": eval_args}
    try:
        for line in eval_proc.stdout:
            message = json.loads(line)
            if message["kind"] == "end":
                break
            t0 = time.perf_counter()
            tool_proc.stdin.write(json.dumps(message) + "\n")
            tool_proc.stdin.flush()
            while True:
                reply_line = tool_proc.stdout.readline()
                if reply_line == "":
                    raise EOFError("tool closed its output")
                try:
                    reply = json.loads(reply_line)
                    if isinstance(reply, dict) and reply.get("id") == message["id"]:
                        break
                except json.JSONDecodeError:
                    pass  # a tool's stray print; GradBench's CLI would reject it, we skip it
            wall = time.perf_counter() - t0
            eval_proc.stdin.write(json.dumps(reply) + "\n")
            eval_proc.stdin.flush()
            kind = message["kind"]
            if kind == "define":
                define = reply.get("success", False)
                if not define:
                    status = "undefined"
                    err = (reply.get("error") or "").strip().splitlines()[-1:]
                    log.write(json.dumps(base | {"kind": "define", "success": False, "error": err}) + "\n")
            elif kind == "evaluate":
                rec = base | {
                    "kind": "evaluate",
                    "function": message["function"],
                    "description": message.get("description"),
                    "success": reply.get("success", False),
                    "timings_ns": [
                        t["nanoseconds"] for t in reply.get("timings") or [] if t["name"] == "evaluate"
                    ],
                    "wall_s": wall,
                    "valid": None,
                }
                if not rec["success"]:
                    rec["error"] = (reply.get("error") or "")[-2000:]
                    log.write(json.dumps(rec) + "\n")
                else:
                    pending[message["id"]] = rec
            elif kind == "analysis":
                rec = pending.pop(message["of"], None)
                if rec is not None:
                    rec["valid"] = message["valid"]
                    if not message["valid"]:
                        rec["error"] = (message.get("error") or "")[-2000:]
                    log.write(json.dumps(rec) + "\n")
            log.flush()
    except (EOFError, BrokenPipeError, ValueError) as e:
        status = f"error: {e}"
    finally:
        timer.cancel()
        if time.monotonic() >= deadline:
            status = "timeout"
        for rec in pending.values():  # answered but never analysed (the eval died)
            log.write(json.dumps(rec) + "\n")
        for p in (eval_proc, tool_proc):
            try:
                p.stdin.close()
            except OSError:
                pass
        for p in (eval_proc, tool_proc):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        summary = base | {"kind": "summary", "status": status, "define": define}
        if eval_proc.returncode not in (0, None) and status == "ok":
            summary["status"] = f"eval exited {eval_proc.returncode}"
        if summary["status"] != "ok":
            summary["stderr_tail"] = {k: "".join(v)[-3000:] for k, v in stderr_tail.items()}
        log.write(json.dumps(summary) + "\n")
        log.flush()
    return status


# ---------------------------------------------------------------------------------------------
# Summaries


def steady(timings_ns: list[int]) -> float | None:
    """Seconds per run in steady state: the median of the runs after the first (which includes
    tracing and compilation); None for a single run (it validates, but gives no steady time)."""
    if len(timings_ns) < 2:
        return None
    return statistics.median(timings_ns[1:]) / 1e9


def load(paths: list[str]) -> list[dict]:
    records = []
    for p in paths:
        with open(p) as f:
            records += [json.loads(line) for line in f if line.strip()]
    return records


def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def table(paths: list[str]) -> str:
    """Markdown table eval x tool: validated answers, geometric means of the steady-state times of
    primal and derivative over the workloads, and funcgrad's ratios per workload (geometric mean)
    to the faster of jax and pytorch and to manual. With several logs (rounds), each workload's
    time is the minimum over the rounds' steady-state medians."""
    recs = load(paths)
    times = defaultdict(dict)  # (eval, tool) -> {(function, description): seconds}
    valid = defaultdict(lambda: [0, 0])  # (eval, tool) -> [valid, answered-or-failed]
    status = defaultdict(set)
    for r in recs:
        key = (r["eval"], r["tool"])
        if r["kind"] == "summary":
            if r["status"] != "ok":
                status[key].add(r["status"])
            continue
        if r["kind"] != "evaluate":
            continue
        if r["success"] and r["valid"] is None:
            continue  # answered, but the eval was stopped before it analysed the answer
        valid[key][1] += 1
        if r["success"] and r["valid"]:
            valid[key][0] += 1
            t = steady(r["timings_ns"])
            wk = (r["function"], r["description"])
            old = times[key].get(wk)
            if t is not None:
                times[key][wk] = t if old is None else min(old, t)
    lines = [
        "| eval | tool | validated | primal (geomean) | derivative (geomean) | primal vs best(jax,torch)"
        " | derivative vs best(jax,torch) | primal vs manual | derivative vs manual |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def fmt(s):
        if s is None:
            return "-"
        return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"

    def ratio(ev, fn, others):
        own = times.get((ev, "funcgrad"), {})
        rs = []
        for wk, t in own.items():
            if wk[0] != fn and not (fn == "*" and wk[0] is not None):
                continue
            peers = [times.get((ev, o), {}).get(wk) for o in others]
            peers = [p for p in peers if p is not None]
            if peers:
                rs.append(t / min(peers))
        g = geomean(rs)
        return "-" if g is None else f"{g:.3g}x ({len(rs)})"

    for ev in EVALS:
        prim, der = FUNCTIONS[ev]
        for tool in TOOLS + EXTRA_TOOLS:
            key = (ev, tool)
            if key not in valid and key not in status:
                if not any(r["eval"] == ev and r["tool"] == tool for r in recs):
                    continue
            v, n = valid[key]
            st = ",".join(sorted(status[key]))
            vcell = f"{v}/{n}" + (f" ({st})" if st else "")
            ts = times.get(key, {})
            if prim is None:  # particle, saddle: four variants
                pcell = "-"
                dcell = ", ".join(f"{fn} {fmt(t)}" for (fn, _), t in sorted(ts.items())) or "-"
                cells = ["-", "-", "-", ratio(ev, "*", ["manual", "finite"]) if tool == "funcgrad" else ""]
            else:
                pcell = fmt(geomean([t for (fn, _), t in ts.items() if fn == prim]))
                dcell = fmt(geomean([t for (fn, _), t in ts.items() if fn == der]))
                cells = (
                    [
                        ratio(ev, prim, ["jax", "pytorch"]),
                        ratio(ev, der, ["jax", "pytorch"]),
                        ratio(ev, prim, ["manual"]),
                        ratio(ev, der, ["manual"]),
                    ]
                    if tool == "funcgrad"
                    else ["", "", "", ""]
                )
            lines.append(f"| {ev} | {tool} | {vcell} | {pcell} | {dcell} | " + " | ".join(cells) + " |")
    loads = [r["loadavg"][0] for r in recs if r["kind"] == "load"]
    if loads:
        span = f"{min(loads):.1f} to {max(loads):.1f}"
        lines.append(f"\n1-minute load average at the start of each (eval, tool) run: {span}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gradbench", default=os.environ.get("GRADBENCH_DIR", "/tmp/gradbench/src"))
    parser.add_argument("--evals", nargs="+", default=list(EVALS))
    parser.add_argument("--tools", nargs="+", default=list(TOOLS))
    parser.add_argument("--log", help="JSON-lines file the records are appended to")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per (eval, tool) pair")
    parser.add_argument("--core", type=int, default=0, help="the core every tool is pinned to")
    parser.add_argument("--table", nargs="+", metavar="LOG", help="print the table of these logs and exit")
    parser.add_argument(
        "eval_args", nargs=argparse.REMAINDER, help="after --: arguments for every eval program"
    )
    args = parser.parse_args(argv)
    if args.table:
        print(table(args.table))
        return
    checkout = os.path.abspath(args.gradbench)
    if not os.path.isdir(os.path.join(checkout, "python/gradbench/gradbench/evals")):
        raise SystemExit(
            f"--gradbench {checkout!r} is not a GradBench checkout (no python/gradbench/gradbench/evals)"
        )
    note = ensure_lstm_text(checkout)
    if note:
        print("note:", note, file=sys.stderr)
    eval_args = [a for a in args.eval_args if a != "--"]
    log_path = args.log or os.path.join("/tmp/gradbench", f"run-{int(time.time())}.jsonl")
    with open(log_path, "a") as log:
        for ev in args.evals:
            for tool in args.tools:
                t0 = time.perf_counter()
                load_avg = os.getloadavg()
                ev_args = [] if ev == "hello" else eval_args + extra_args(ev, checkout)  # hello takes none
                st = run_pair(ev, tool, checkout, ev_args, args.timeout, args.core, log)
                log.write(json.dumps({"eval": ev, "tool": tool, "kind": "load", "loadavg": load_avg}) + "\n")
                print(
                    f"{ev:9s} {tool:9s} {st:10s} {time.perf_counter() - t0:7.1f} s  load {load_avg[0]:.2f}",
                    flush=True,
                )
    print(f"log: {log_path}")
    print(table([log_path]))


if __name__ == "__main__":
    main()
