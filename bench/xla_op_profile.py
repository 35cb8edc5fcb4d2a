"""Where a jitted program's time goes, operation by operation: XLA's CPU thunks timed by the
profiler, summed by kind (``ynn_fusion``: XNNPACK dots, ``dot``: XLA's own dots,
``copy_bitcast_fusion``: layout copies, the elementwise fusions) and listed by name with their
optimised HLO.

Run: ``python bench/xla_op_profile.py step`` (or ``per_example``; a second argument ``jax``
profiles jax's program of the same function; a third, ``malloc``, runs funcgrad with
``funcgrad_malloc_tuning``, so that the first touch of XLA's fresh temporaries, page faults
counted in whichever operation writes them first, leaves the figures; the first line is the
program's ``memory_analysis()``, the temporaries XLA allocates on every call): the transformer of
``bench_transformer.py``, one thread. How the funcgrad-vs-jax and funcgrad-vs-torch.compile
gaps of that benchmark were found (NOTE: [one contracting dimension on the CPU] in
``xla_bridge/rules/dot.py``). Set ``XLA_FLAGS`` before running: the script adds
``--xla_cpu_enable_xprof_traceme=true`` so that every thunk is a trace event. An asynchronous
thunk (XLA's Eigen dot) is timed to its ``end:`` event (``thunk_durations``); one that overlaps
the next thunks on the runtime's worker thread shares the core with them, so with one core the
operations' times can sum to a little more than the call's CPU time.
"""

from __future__ import annotations

import collections
import glob
import gzip
import json
import os
import re
import sys
import tempfile

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false") + " --xla_cpu_enable_xprof_traceme=true"
)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def build(case, lib="funcgrad"):
    import bench_transformer as bt

    jnp, J, tree = bt._jaxlike(lib)
    p, x, y = bt.numpy_problem()
    loss = bt.make_loss(jnp)
    p = {k: jnp.asarray(v) for k, v in p.items()}
    x, y = jnp.asarray(x), jnp.asarray(y)
    if case == "per_example":
        f = J.jit(J.vmap(J.grad(lambda p, xi, yi: loss(p, xi[None], yi[None])), in_axes=(None, 0, 0)))
    else:

        def step(p, x, y):
            val, g = J.value_and_grad(loss)(p, x, y)
            return val, tree.tree_map(lambda w, d: w - bt.LR * d, p, g)

        f = J.jit(step)
    return f, (p, x, y), tree


def thunk_durations(events):
    """``{thunk name: [ms per run]}`` from a trace's complete events. An asynchronous thunk (XLA's
    Eigen dot, which runs on the runtime's worker thread even with one thread) ends its own event
    when the work is handed over and marks the completion with an ``end: <name>`` event on the
    worker: its run lasts until that end (session 13: counted to the hand-over, the per-example
    program's Eigen dots read 20 ms per call, against 41 ms in a ``perf`` profile)."""
    starts, ends = collections.defaultdict(list), collections.defaultdict(list)
    for e in events:
        name = e.get("name", "")
        if e.get("ph") != "X" or name.startswith("$") or "Execute" in name or "Pjit" in name:
            continue
        if name.startswith("end: "):
            ends[name[5:]].append(e["ts"] + e.get("dur", 0))
        else:
            starts[name].append((e["ts"], e.get("dur", 0)))
    durations = collections.defaultdict(list)
    for name, runs in starts.items():
        done = sorted(ends.get(name, ()))
        runs.sort()
        for i, (ts, dur) in enumerate(runs):
            following = runs[i + 1][0] if i + 1 < len(runs) else float("inf")
            end = next((t for t in done if ts <= t < following), ts + dur)
            durations[name].append(max(dur, end - ts) / 1e3)
    return durations


def main(case="step", lib="funcgrad", malloc=False, calls=6, top=15):
    import importlib

    J = importlib.import_module(lib)
    if malloc:  # NOTE: [eager allocations]: XLA's per-call temporaries from the heap, no page faults
        J.config.update("funcgrad_malloc_tuning", True)
    f, args, tree = build(case, lib)

    def run():
        for v in tree.tree_leaves(f(*args)):
            v.block_until_ready()

    run()
    compiled = f.lower(*args).compile()
    hlo = compiled.as_text()
    mem = compiled.memory_analysis()  # what XLA allocates per call besides the arguments
    print(
        f"memory per call: temporaries {mem.temp_size_in_bytes / 1e6:.1f} MB, "
        f"outputs {mem.output_size_in_bytes / 1e6:.1f} MB, "
        f"arguments {mem.argument_size_in_bytes / 1e6:.1f} MB"
    )
    with tempfile.TemporaryDirectory() as d:
        with J.profiler.trace(d, create_perfetto_trace=True):
            for _ in range(calls):
                run()
        (path,) = glob.glob(d + "/**/*.trace.json.gz", recursive=True)
        events = json.load(gzip.open(path))
    events = events["traceEvents"] if isinstance(events, dict) else events
    # Each operation's fastest run over the calls: on a shared machine a thunk's wall time also
    # counts the time its thread was preempted, which the minimum leaves out.
    durations = thunk_durations(events)
    by_name = collections.Counter(
        {name: min(ds) * len(ds) / calls for name, ds in durations.items()}  # ms per call
    )
    by_kind = collections.Counter()
    for name, ms in by_name.items():
        by_kind[re.sub(r"\.\d+$", "", name)] += ms
    total = sum(by_kind.values())
    print(f"{case} ({lib}): {total:.1f} ms of thunks per call (each operation's fastest of {calls} calls)")
    for kind, ms in by_kind.most_common(top):
        print(f"  {kind:<36} {ms:8.1f} ms {100 * ms / total:5.1f}%")
    print("\nlargest operations:")
    for name, ms in by_name.most_common(top):
        m = re.search(r"\n\s*%" + re.escape(name) + r" = ([^\n]*)", hlo)
        line = re.sub(r", metadata=.*", "", m.group(1))[:150] if m else ""
        print(f"  {ms:7.1f} ms  {name}: {line}")


if __name__ == "__main__":
    main(*(sys.argv[1:3] or ["step"]), malloc="malloc" in sys.argv[3:])
