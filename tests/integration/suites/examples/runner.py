"""Run one example program as ``__main__``: ``python runner.py [--alias-jax] (-m module | path) args...``.
With ``--alias-jax``, ``import jax`` is funcgrad (jax_alias.py)."""

import os
import runpy
import sys

argv = sys.argv[1:]
if argv and argv[0] == "--alias-jax":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import jax_alias

    jax_alias.install()
    sys.path.pop(0)
    argv = argv[1:]
if argv[0] == "-m":
    sys.argv = [argv[1]] + argv[2:]
    sys.path.insert(0, os.getcwd())
    runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
else:
    sys.argv = argv
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
    runpy.run_path(argv[0], run_name="__main__")
