"""``jax._src.traceback_util`` under the alias: funcgrad's traceback boundaries, which are JAX's.

The one mechanism is ``funcgrad.kernel.traceback_util`` (NOTE: [traceback boundaries]): funcgrad's
public entry points are boundaries, funcgrad's packages are excluded as JAX excludes jax/_src, and
libraries register their own files (``register_exclusion``) and entry points (``api_boundary``:
flax's ``Module.init``/``apply``) here, as they do with JAX's.

>>> register_exclusion("/some/library")
>>> "/some/library" in _exclude_paths
True
"""

from __future__ import annotations

from funcgrad.kernel.traceback_util import (  # noqa: F401 - JAX's names, re-exported
    SimplifiedTraceback,
    UnfilteredStackTrace,
    _exclude_paths,
    api_boundary,
    filter_traceback,
    include_filename,
    include_frame,
    register_exclusion,
)

__all__ = [
    "SimplifiedTraceback",
    "UnfilteredStackTrace",
    "api_boundary",
    "filter_traceback",
    "include_filename",
    "include_frame",
    "register_exclusion",
]
