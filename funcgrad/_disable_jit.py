"""The ``disable_jit`` setting (``jax_disable_jit``, ``jax.disable_jit``): its value, process-wide
and per thread, and the one query of it.

Layer: surface, the lowest floor: below ``_control_flow_eager`` (``cond``/``scan``/``while_loop``
run Python's own branches and loops while it is on), ``jitting`` (whose calls then run their
Python) and ``_config`` (which sets it). Imports only the kernel's ``thread_modes``.

# NOTE: [disable_jit]
# The setting is owned here and set only by the config route (``funcgrad._config``:
# ``config.update("jax_disable_jit", ...)`` sets the process-wide value, ``with disable_jit():``
# the calling thread's own, as JAX's is thread-local); every reader asks ``jit_disabled()``.
# ``funcgrad._jit_route`` follows it on jit's route table (a set process-wide value redirects
# every jitted call to its Python; while any thread has its own value, each call asks its thread):
# it passes ``follow`` the function that re-reads the setting, which runs after each change, under
# the thread override's lock for a thread's (NOTE: [per-thread overrides cost nothing while no
# thread has one]).

>>> jit_disabled()
False
>>> token = enter(True); jit_disabled(), threads_inside()
(True, True)
>>> leave(token); jit_disabled(), threads_inside()
(False, False)
"""

from __future__ import annotations

from collections.abc import Callable

from funcgrad.kernel.thread_modes import ThreadOverride

__all__ = ["enter", "follow", "jit_disabled", "leave", "process_wide", "set_process_wide", "threads_inside"]

_process_wide = False
_followers: list[Callable[[], None]] = []


def _changed() -> None:
    for f in _followers:
        f()


_threads = ThreadOverride(on_change=_changed)
_own = _threads.local  # (.value: this thread's own setting, or None: the process-wide one)


def jit_disabled() -> bool:
    """Whether ``disable_jit`` is on in the calling thread."""
    own = _own.value
    return _process_wide if own is None else own


def process_wide() -> bool:
    """The value ``config.update("jax_disable_jit", ...)`` set (every thread without its own)."""
    return _process_wide


def set_process_wide(disable: bool) -> None:
    """``config.update("jax_disable_jit", disable)``."""
    global _process_wide
    _process_wide = bool(disable)
    _changed()


def enter(disable: bool):
    """``with disable_jit(disable):`` in the calling thread; returns what ``leave`` takes."""
    return _threads.enter(bool(disable))


leave = _threads.exit  # (leave what ``enter`` gave: its token)


def threads_inside() -> bool:
    """Whether any thread is inside a ``disable_jit`` context of its own."""
    return _threads.active()


def follow(on_change: Callable[[], None]) -> None:
    """Call ``on_change()`` after every change of the setting (NOTE: [disable_jit])."""
    _followers.append(on_change)
