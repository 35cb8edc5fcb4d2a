"""``jax._src.traceback_util`` under the alias: libraries register their files so that JAX hides
their frames from tracebacks. funcgrad does not filter tracebacks, so the registry is kept (as JAX
keeps it, a list of path prefixes that libraries read and edit) and changes nothing shown.

>>> register_exclusion("/some/library")
>>> "/some/library" in _exclude_paths
True
"""

from __future__ import annotations

import os

_exclude_paths: list[str] = []


def register_exclusion(path: str) -> None:
    """Hide frames from files under ``path`` (recorded; funcgrad shows full tracebacks)."""
    _exclude_paths.append(path)


def include_frame(frame) -> bool:
    """Whether JAX would show ``frame``: its file is under no registered exclusion."""
    filename = os.path.abspath(frame.f_code.co_filename)
    return not any(filename.startswith(p) for p in _exclude_paths)


def api_boundary(fun=None, **_):
    """Mark ``fun`` as a public entry point (JAX filters tracebacks there; here it is ``fun``)."""
    if fun is None:
        return lambda f: api_boundary(f)
    return fun


def filter_traceback(tb):
    """The traceback as shown: funcgrad does not filter, so ``tb`` itself."""
    return tb
