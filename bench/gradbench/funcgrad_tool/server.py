"""GradBench's JSON protocol on stdin/stdout for the funcgrad tool (benchmark code).

Each line on stdin is one message; each reply is one line on stdout with the same ``id``:
``start`` -> ``{"tool": "funcgrad"}``; ``define`` (module) -> import ``funcgrad_tool.<module>``
and answer ``success``; ``evaluate`` (module, function, input) -> the function's output and its
``evaluate`` timings; ``analysis`` (the eval's verdict on an answer) -> acknowledged. Like
GradBench's JAX tool the process pins itself to one core unless ``--multithreaded`` is given.

Run: ``python bench/gradbench/tool.py`` (reads messages from stdin).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import traceback


def pin_to_one_core() -> None:
    """Pin this process to the first core it may run on (GradBench runs tools single-threaded)."""
    allowed = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, [allowed[0]])


def handle(message: dict) -> dict:
    """The reply body for one protocol message (without the id)."""
    kind = message["kind"]
    if kind == "start":
        return {"tool": "funcgrad"}
    if kind == "define":
        try:
            importlib.import_module(f"funcgrad_tool.{message['module']}")
            return {"success": True}
        except Exception as e:  # reported to the eval, which then stops
            return {"success": False, "error": "".join(traceback.format_exception(e))}
    if kind == "evaluate":
        try:
            module = importlib.import_module(f"funcgrad_tool.{message['module']}")
            function = getattr(module, message["function"])
            return function.evaluate(message["input"])
        except Exception as e:
            return {"success": False, "error": "".join(traceback.format_exception(e))}
    return {}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--multithreaded", action="store_true")
    args = parser.parse_args(argv)
    if not args.multithreaded:
        pin_to_one_core()
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        reply = {"id": message["id"]} | handle(message)
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
