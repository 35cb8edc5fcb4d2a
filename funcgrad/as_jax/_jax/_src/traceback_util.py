"""``jax._src.traceback_util`` under the alias: traceback boundaries, as JAX's.

Libraries register their files (``register_exclusion``) and wrap their entry points in
``api_boundary`` (flax's ``Module.init``/``apply``). When an exception passes a boundary, frames
from registered files -- and funcgrad's own, as JAX registers its internals -- are hidden the way
``jax_traceback_filtering`` says: ``"tracebackhide"`` marks them ``__tracebackhide__``,
``"remove_frames"`` drops them and chains the unfiltered trace as an ``UnfilteredStackTrace``
cause, ``"quiet_remove_frames"`` (the default outside IPython, for ``"auto"``) drops them and adds
a note, ``"off"`` leaves tracebacks alone. Only the outermost boundary filters. funcgrad's own
functions are not boundaries: used directly they show full tracebacks.

>>> register_exclusion("/some/library")
>>> "/some/library" in _exclude_paths
True
"""

from __future__ import annotations

import functools
import os
import traceback
import types

import funcgrad
from funcgrad import primitives as _primitives
from funcgrad import xla_bridge as _xla_bridge

__all__ = ["UnfilteredStackTrace", "api_boundary", "filter_traceback", "include_frame", "register_exclusion"]

_exclude_paths: list[str] = []


def register_exclusion(path: str) -> None:
    """Hide frames of files under ``path`` at traceback boundaries."""
    _exclude_paths.append(path)


# funcgrad's packages are JAX's internals here.
for _module in (funcgrad, _primitives, _xla_bridge):
    register_exclusion(os.path.dirname(os.path.abspath(_module.__file__)))

_SIMPLIFIED = (
    "For simplicity, JAX has removed its internal frames from the traceback of the following "
    "exception. Set JAX_TRACEBACK_FILTERING=off to include these."
)
_APPENDED = (
    "The stack trace below excludes JAX-internal frames.\n"
    "The preceding is the original exception that occurred, unmodified.\n\n--------------------"
)


class UnfilteredStackTrace(Exception):
    """The cause chained to an exception whose traceback was filtered: the full trace."""


def _under(path: str, prefix: str) -> bool:
    path, prefix = os.path.abspath(path), os.path.abspath(prefix)
    try:
        return os.path.commonpath([path, prefix]) == prefix
    except ValueError:  # (different drives)
        return False


def include_filename(filename: str) -> bool:
    """Whether frames of ``filename`` are shown: it is under no registered exclusion."""
    return not any(_under(filename, p) for p in _exclude_paths)


def include_frame(frame) -> bool:
    """Whether ``frame`` is shown at a boundary."""
    return include_filename(frame.f_code.co_filename)


def _is_boundary_frame(frame) -> bool:
    return frame.f_code is _reraise_code


def filter_traceback(tb):
    """``tb`` without the frames of excluded files."""
    out = None
    for frame, lineno in reversed(list(traceback.walk_tb(tb))):
        if include_frame(frame):
            out = types.TracebackType(out, frame, frame.f_lasti, lineno)
    return out


def _with_call_stack(tb):
    """``tb`` continued up the caller's stack to the first run of module-level frames."""
    out, module_level = tb, False
    for frame, lineno in traceback.walk_stack(tb.tb_frame):
        if "importlib._bootstrap" in frame.f_code.co_filename:
            continue
        if module_level and frame.f_code.co_name != "<module>":
            break
        if include_frame(frame):
            out = types.TracebackType(out, frame, frame.f_lasti, lineno)
        module_level = module_level or frame.f_code.co_name == "<module>"
    return out


def _under_boundary(e: BaseException) -> bool:
    """Whether an outer boundary will see ``e`` (it filters then, not this one)."""
    if e.__traceback__ is None:
        return False
    return any(_is_boundary_frame(f) for f, _ in traceback.walk_stack(e.__traceback__.tb_frame.f_back))


def _mode() -> str:
    mode = funcgrad.config.jax_traceback_filtering
    if mode == "auto":
        try:
            get_ipython()  # type: ignore[name-defined]  # noqa: F821 - defined under IPython
            return "tracebackhide"
        except NameError:
            return "quiet_remove_frames"
    return mode


def _filter(e: Exception, mode: str) -> None:
    tb = e.__traceback__
    if mode == "tracebackhide":
        for frame, _ in traceback.walk_tb(tb):
            if not include_frame(frame) and not _is_boundary_frame(frame):
                frame.f_locals["__tracebackhide__"] = True
        return
    e.with_traceback(filter_traceback(tb))
    if mode == "quiet_remove_frames":
        e.add_note("--------------------\n" + _SIMPLIFIED)
        return
    msg = "".join(traceback.format_exception_only(type(e), e)).strip()
    full = UnfilteredStackTrace(f"{msg}\n\n{_APPENDED}").with_traceback(_with_call_stack(tb))
    full.__cause__, full.__context__ = e.__cause__, e.__context__
    full.__suppress_context__ = e.__suppress_context__
    e.__cause__, e.__context__ = full, None


def api_boundary(fun=None, **_):
    """Wrap ``fun`` as a traceback boundary (see the module docstring).

    >>> def f():
    ...     raise ValueError("here")
    >>> try:
    ...     api_boundary(f)()
    ... except ValueError as e:
    ...     print(e)
    here
    """
    if fun is None:
        return api_boundary

    @functools.wraps(fun)
    def reraise_with_filtered_traceback(*args, **kwargs):
        __tracebackhide__ = True  # noqa: F841 - read by traceback printers
        try:
            return fun(*args, **kwargs)
        except Exception as e:
            mode = _mode()
            if mode != "off" and not _under_boundary(e):
                _filter(e, mode)
            raise

    return reraise_with_filtered_traceback


_reraise_code = api_boundary(lambda: None).__code__
