"""``python -m funcgrad.as_jax``: run a script, a module or a command with ``import jax`` meaning funcgrad.

Layer: surface (an entry point of ``funcgrad.as_jax``; imports it and the standard library).

    python -m funcgrad.as_jax script.py [args...]
    python -m funcgrad.as_jax -m module [args...]      # e.g. -m pytest tests/
    python -m funcgrad.as_jax -c "code" [args...]

Importing this package installed the alias already; what is left is to run the program as
``python`` would (``sys.argv`` is the program's, ``__name__`` is ``"__main__"``).
"""

from __future__ import annotations

import os
import runpy
import sys

import funcgrad.as_jax  # noqa: F401  (installs the alias)

USAGE = "usage: python -m funcgrad.as_jax (script.py | -m module | -c code) [args...]"


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        raise SystemExit(0 if argv else 2)
    if argv[0] == "-m" and len(argv) > 1:
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] == "-c" and len(argv) > 1:
        sys.argv = ["-c", *argv[2:]]
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = list(argv)
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))  # as ``python script.py`` does
        runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":  # (not when a tool walks the package and imports this module)
    main(sys.argv[1:])
