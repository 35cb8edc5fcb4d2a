"""Traceback boundaries, as JAX's ``jax._src.traceback_util``: the user sees their own frames.

Layer: kernel (bottom). Imports only the standard library: the bridge's jitted call, the surface's
transformations and control flow, and the ``jax`` alias all mark their entry points with it.

# NOTE: [traceback boundaries]
# A public entry point (a jitted function's call, ``grad``/``vmap``/``jvp``/``vjp``'s functions,
# ``cond``/``switch``/``scan``/``while_loop``/``fori_loop``/``map``, ``custom_jvp``/``custom_vjp``
# calls, ...) is an ``api_boundary``, as in JAX. When an exception leaves the outermost boundary,
# frames of excluded files (funcgrad's packages, as JAX excludes jax/_src, and whatever a library
# registers with ``register_exclusion``) are removed as ``jax_traceback_filtering`` says:
# ``"tracebackhide"`` marks them ``__tracebackhide__`` (IPython/pytest hide them),
# ``"remove_frames"`` drops them and chains the unfiltered trace as an ``UnfilteredStackTrace``
# cause, ``"quiet_remove_frames"`` (``"auto"`` outside IPython) drops them and adds JAX's note,
# ``"off"`` leaves tracebacks alone. Inner boundaries leave the exception to the outermost one.
# A boundary costs nothing until an exception passes it: a ``try`` (free in CPython 3.11) around
# the call, in a wrapper frame or, on the jitted call's Python route, inline in
# ``Dispatcher._dispatch`` (its code is registered with ``register_boundary_code``).

>>> register_exclusion("/some/library")
>>> include_filename("/some/library/module.py"), include_filename("/elsewhere/user.py")
(False, True)
"""

from __future__ import annotations

import functools
import os
import traceback
import types

__all__ = [
    "SimplifiedTraceback",
    "UnfilteredStackTrace",
    "api_boundary",
    "filter_at_boundary",
    "filter_traceback",
    "include_filename",
    "include_frame",
    "register_boundary_code",
    "register_exclusion",
    "set_filtering_mode",
]

_exclude_paths: list[str] = []
_MODES = ("off", "tracebackhide", "remove_frames", "quiet_remove_frames", "auto")
# The flag's value (``jax_traceback_filtering``), set by funcgrad.config; read only on errors.
_mode_setting = [os.environ.get("JAX_TRACEBACK_FILTERING", "auto")]


def set_filtering_mode(mode) -> None:
    """``jax_traceback_filtering``'s value (one of JAX's: off, tracebackhide, remove_frames,
    quiet_remove_frames, auto; None is auto)."""
    _mode_setting[0] = "auto" if mode is None else mode


def register_exclusion(path: str) -> None:
    """Hide frames of files under ``path`` at traceback boundaries (as JAX's)."""
    _exclude_paths.append(path)


# funcgrad's packages are JAX's internals: the package (this file's grandparent) and its two
# top-level layers (primitives/, xla_bridge/), siblings of the package directory.
_package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _p in (_package, os.path.join(os.path.dirname(_package), "primitives"),
           os.path.join(os.path.dirname(_package), "xla_bridge")):  # fmt: skip
    register_exclusion(_p)

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


class SimplifiedTraceback(Exception):
    """JAX's marker type for a simplified traceback (kept for code that names it)."""

    def __str__(self):
        return _SIMPLIFIED


SimplifiedTraceback.__module__ = "jax.errors"


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


_boundary_codes: set = set()


def register_boundary_code(code) -> None:
    """Treat frames running ``code`` as boundaries (a function that calls ``filter_at_boundary``
    in its own ``except`` instead of being wrapped, to spare the hot path a frame; it sets a local
    ``__tracebackhide__ = True`` as the wrapper does)."""
    _boundary_codes.add(code)


def filter_traceback(tb):
    """``tb`` without the frames of excluded files."""
    out = None
    for frame, lineno in reversed(list(traceback.walk_tb(tb))):
        if include_frame(frame):
            out = types.TracebackType(out, frame, frame.f_lasti, lineno)
    return out


def _with_call_stack(tb):
    """``tb`` continued up the caller's stack to the first run of module-level frames (JAX's)."""
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
    f = e.__traceback__.tb_frame.f_back
    while f is not None:
        if f.f_code in _boundary_codes:
            return True
        f = f.f_back
    return False


def _mode() -> str:
    mode = _mode_setting[0]
    if mode == "auto":
        try:
            get_ipython()  # type: ignore[name-defined]  # noqa: F821 - defined under IPython
            return "tracebackhide"
        except NameError:
            return "quiet_remove_frames"
    return mode


def filter_at_boundary(e: Exception) -> None:
    """Filter ``e``'s traceback as the outermost boundary does (called in a boundary's
    ``except`` clause, which then re-raises ``e``); nothing under an outer boundary or when off."""
    mode = _mode()
    if mode == "off" or _under_boundary(e):
        return
    tb = e.__traceback__
    if tb is None:
        return
    if mode == "tracebackhide":
        for frame, _ in traceback.walk_tb(tb):
            # (not a boundary's frame: it sets the local itself, and writing the locals of the
            # one running this would keep the exception alive in a cycle)
            if not include_frame(frame) and frame.f_code not in _boundary_codes:
                frame.f_locals["__tracebackhide__"] = True
        return
    if mode not in _MODES:
        raise ValueError(f"JAX_TRACEBACK_FILTERING={mode} is not a valid value.")
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
    """Wrap ``fun`` as a traceback boundary (NOTE: [traceback boundaries]); JAX's
    ``repro_api_name``/``repro_user_func`` keywords are accepted and ignored.

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
            filter_at_boundary(e)
            raise

    return reraise_with_filtered_traceback


register_boundary_code(api_boundary(lambda: None).__code__)
