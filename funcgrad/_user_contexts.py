"""User contexts of ``jit`` (``funcgrad.make_user_context``, JAX's ``jax.make_user_context``):
values that are part of every ``jit`` trace cache key.

Layer: surface, below ``jitting``, ``_config`` and ``_meshes`` (which hold contexts: the mesh
``set_mesh`` sets is one). Imports only the standard library: ``_jit_route`` installs
``changed_hook`` when it is imported, so that a context moved away from its default sends jitted
calls to the staged route (NOTE: [user contexts]).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

# NOTE: [user contexts]
# ``make_user_context``'s contexts: their current values are part of every trace cache key, so a
# function traced under one value is traced again under another (JAX keys its jit cache on them).
# The native route's key knows nothing of them: while any context is away from its default (the
# ``user_context`` jit flag, set through ``changed_hook`` by ``funcgrad._jit_route``), calls take the
# staged route, whose key holds them, and the native cache, filled under the defaults, is not
# consulted.
user_contexts: list = []
changed_hook: Callable[[bool], None] | None = None  # _jit_route's: told whether any context is away

_UNSET = object()


class UserContext:
    """``with ctx(value):``: the user context ``ctx`` holds ``value`` in this thread inside."""

    __slots__ = ("_config", "_new_value", "_prev_value")

    def __init__(self, config: UserConfig, new_value):
        self._config = config
        self._new_value = new_value

    def __enter__(self):
        self._prev_value = self._config._swap_local(self._new_value)

    def __exit__(self, exc_type, exc_val, exc_tb):
        self._config._swap_local(self._prev_value)


class UserConfig:
    """A value that is part of every ``jit`` trace cache key (``make_user_context`` makes one):
    ``.value`` (this thread's, else the global one), ``get_global``/``set_global`` and
    ``ctx(value)``, a context manager setting it in this thread."""

    def __init__(self, default_value):
        hash(default_value)  # a cache key part: refuse an unhashable default here, not at a call
        self._default = default_value
        self._global = default_value
        self._local = threading.local()

    @property
    def value(self):
        local = getattr(self._local, "value", _UNSET)
        return self._global if local is _UNSET else local

    def get_global(self):
        return self._global

    def set_global(self, new_value):
        hash(new_value)
        self._global = new_value
        _user_contexts_changed()

    def _swap_local(self, new_value):
        if new_value is not _UNSET:
            hash(new_value)
        previous = getattr(self._local, "value", _UNSET)
        self._local.value = new_value
        _user_contexts_changed()
        return previous

    def __call__(self, new_value) -> UserContext:
        return UserContext(self, new_value)

    def __repr__(self):
        return f"UserConfig(value={self.value!r})"


def contexts_away() -> bool:
    """Whether any user context (in any thread) holds a value other than its default."""
    return any(c._global != c._default or getattr(c._local, "value", _UNSET) not in (_UNSET, c._default)
               for c in user_contexts)  # fmt: skip


def _user_contexts_changed() -> None:
    # Calls take the staged route (whose key holds the values) while any context is away from its
    # default (NOTE: [user contexts]). A value set in one thread routes every thread's calls that
    # way: they stay correct, keyed on their own thread's values.
    if changed_hook is not None:
        changed_hook(contexts_away())


def make_user_context(default_value=None) -> UserConfig:
    """A context whose value is part of ``jit``'s cache key: a jitted function called under another
    value is traced (and compiled) again, so Python code reading ``ctx.value`` while tracing sees
    the value of the call. The value must be hashable.

    >>> import funcgrad
    >>> scale = make_user_context(default_value=1.0)
    >>> f = funcgrad.jit(lambda x: x * scale.value)
    >>> float(f(2.0))
    2.0
    >>> with scale(10.0):
    ...     float(f(2.0))  # traced again under the new value
    20.0
    >>> float(f(2.0)), f.cache_info().misses
    (2.0, 2)
    """
    ctx = UserConfig(default_value)
    user_contexts.append(ctx)
    return ctx
