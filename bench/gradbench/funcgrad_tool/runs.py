"""Timed evaluation of one GradBench function (benchmark code; imports funcgrad and NumPy).

GradBench's own Python tools time ``function(input)`` and convert the result afterwards; with
asynchronous dispatch that measures the dispatch, not the work. Here the timed region ends with
``funcgrad.block_until_ready`` on the result, so every ``evaluate`` timing is the whole
computation. The first run of a program includes its tracing and XLA compilation (as in
GradBench's JAX tool); the driver reports it separately from the steady-state median.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import funcgrad


@dataclass
class Evaluation:
    """A GradBench function: ``pre`` (JSON -> arguments, untimed), ``run`` (timed, called as
    ``run(*args)``), ``post`` (result -> JSON, untimed)."""

    pre: Callable[[Any], tuple]
    run: Callable[..., Any]
    post: Callable[[Any], Any]

    def __call__(self, input_raw: Any) -> Any:
        """Run once, untimed, and return the JSON output (for tests)."""
        return self.post(self.run(*self.pre(input_raw)))

    def evaluate(self, input_raw: Any) -> dict:
        """The protocol's evaluate response body: output plus one ``evaluate`` timing per run."""
        args = self.pre(input_raw)
        # hello's inputs are bare numbers: one run
        runs = input_raw if isinstance(input_raw, dict) else {}
        min_runs = int(runs.get("min_runs", 1))
        min_seconds = float(runs.get("min_seconds", 0.0))
        timings = []
        elapsed = 0.0
        out = None
        while len(timings) < min_runs or elapsed < min_seconds:
            start = time.perf_counter_ns()
            out = funcgrad.block_until_ready(self.run(*args))
            end = time.perf_counter_ns()
            timings.append({"name": "evaluate", "nanoseconds": end - start})
            elapsed += (end - start) / 1e9
        return {"success": True, "output": self.post(out), "timings": timings}


def evaluation(pre: Callable[[Any], tuple], post: Callable[[Any], Any] = lambda x: x):
    """Decorator form of :class:`Evaluation`: ``@evaluation(pre=..., post=...)`` over the timed
    function."""

    def wrap(run: Callable[..., Any]) -> Evaluation:
        return Evaluation(pre=pre, run=run, post=post)

    return wrap


def to_float(x) -> float:
    """A 0-d result as a Python float (JSON number)."""
    return float(x)


def to_list(x) -> list:
    """An array result as nested lists of Python floats."""
    import numpy as np

    return np.asarray(x).tolist()
