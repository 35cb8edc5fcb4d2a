"""The cache registry: every cache funcgrad keeps, by name, and one way to empty them all.

Layer: kernel. Imports only the standard library, so any module of any layer (the bridge's
runtime included, which must stay cheap to import) can register the caches it defines.

# NOTE: [caches have an owner]
# Every module-level cache -- of traced programs, compiled executables, eager plans, surface
# templates, closure conversions, memos keyed by a program -- is registered where it is defined,
# in the line that creates it (``_plans = register_cache("kernel.numpy_plans", {})``), under a
# dotted name that starts with its layer or module. ``funcgrad.clear_caches()`` empties all of
# them through ``clear_all()``; ``cache_sizes()`` says what each holds. A cache owned by many
# objects (each jitted function's, each surface template's) is one ``CacheGroup`` entry that
# reaches its owners weakly. What is *not* a cache is not registered: a registry of rules, the
# backends (clients own live buffers), interning tables whose identity other objects rely on (the
# interned avals, one sharding object per device), the persistent on-disk compilation cache
# (``funcgrad.config.update("jax_compilation_cache_dir", ...)`` owns it, as in JAX).
# tests/kernel/test_caches.py fills the caches, checks that ``clear_all()`` empties each one, and
# scans the source for module-level caches that are neither registered nor listed there as
# something else.
#
# ``bounded_put`` is the one eviction policy of these dict caches: insertion order, oldest out.

>>> memo = register_cache("doc.example", {})
>>> memo["k"] = 1
>>> cache_sizes()["doc.example"]
1
>>> clear_all(); len(memo)
0
>>> unregister_cache("doc.example")
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

__all__ = [
    "CacheGroup",
    "bounded_put",
    "cache_sizes",
    "clear_all",
    "register_cache",
    "registered_caches",
    "unregister_cache",
]

T = TypeVar("T")


class _Entry(NamedTuple):
    obj: Any  # what was registered (the test compares it with module attributes by identity)
    clear: Callable[[], object]
    size: Callable[[], int] | None


_registry: dict[str, _Entry] = {}
_lock = threading.Lock()


def register_cache(
    name: str,
    cache: T = None,
    *,
    clear: Callable[[], object] | None = None,
    size: Callable[[], int] | None = None,
) -> T:
    """Register ``cache`` under ``name`` and return it (so the defining line registers it).

    ``cache`` is a dict-like object (``clear()``, ``len()``), a ``functools.lru_cache`` function
    (``cache_clear()``, ``cache_info()``) or a ``CacheGroup``; or give ``clear=`` (and optionally
    ``size=``) for a cache spread over other objects. Without ``cache`` and ``clear=`` it is a
    decorator (``@register_cache(name)`` over ``@functools.lru_cache(...)``). Registering a name
    again replaces its entry (a reloaded module's new cache). NOTE: [caches have an owner].

    >>> import functools
    >>> @register_cache("doc.square")
    ... @functools.lru_cache(maxsize=8)
    ... def square(n):
    ...     return n * n
    >>> square(3), cache_sizes()["doc.square"]
    (9, 1)
    >>> clear_all(); cache_sizes()["doc.square"]
    0
    >>> unregister_cache("doc.square")
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_cache: the name must be a non-empty string, got {name!r}")
    if cache is None and clear is None:  # as a decorator, over ``functools.lru_cache``
        return lambda fn: register_cache(name, fn, size=size)
    if clear is None:
        if hasattr(cache, "cache_clear") and hasattr(cache, "cache_info"):  # functools.lru_cache
            clear = cache.cache_clear
            size = size or (lambda: cache.cache_info().currsize)
        elif callable(getattr(cache, "clear", None)):
            clear = cache.clear
            if size is None and hasattr(cache, "__len__"):
                size = cache.__len__
        else:
            raise TypeError(
                f"register_cache({name!r}): {type(cache).__name__} has no clear() or cache_clear(); "
                "pass clear= (and size=) for it"
            )
    with _lock:
        _registry[name] = _Entry(cache, clear, size)
    return cache


def unregister_cache(name: str) -> None:
    """Remove ``name`` from the registry (for caches that stop existing, and for tests).

    >>> _ = register_cache("doc.gone", {}); unregister_cache("doc.gone"); "doc.gone" in registered_caches()
    False
    """
    with _lock:
        _registry.pop(name, None)


def registered_caches() -> dict[str, Any]:
    """The registered caches by name (the objects given to ``register_cache``).

    >>> listed = register_cache("doc.listed", {})
    >>> registered_caches()["doc.listed"] is listed
    True
    >>> unregister_cache("doc.listed")
    """
    with _lock:
        return {name: e.obj for name, e in _registry.items()}


def cache_sizes() -> dict[str, int | None]:
    """How many entries each registered cache holds (``None`` where it cannot say).

    >>> all(n is None or n >= 0 for n in cache_sizes().values())
    True
    """
    with _lock:
        entries = list(_registry.items())
    return {name: (None if e.size is None else int(e.size())) for name, e in entries}


def clear_all() -> None:
    """Empty every registered cache (``funcgrad.clear_caches()``); later calls trace and compile
    again.

    >>> clear_all(); all(not n for n in cache_sizes().values())
    True
    """
    with _lock:
        entries = list(_registry.values())
    for e in entries:
        e.clear()


class CacheGroup:
    """One registry entry for caches owned by many objects (each jitted function has its own, so
    has each surface template): the owners are held weakly, ``cache_of(owner)`` is each one's
    dict-like cache, or ``clear_owner``/``size_of`` say how to empty and measure an owner.

    >>> class Owner:
    ...     def __init__(self):
    ...         self.memo = {"k": 1}
    >>> group = CacheGroup(lambda o: o.memo)
    >>> a = group.add(Owner()); len(group)
    1
    >>> group.clear(); a.memo
    {}
    """

    def __init__(
        self,
        cache_of: Callable[[Any], Any] | None = None,
        *,
        clear_owner: Callable[[Any], object] | None = None,
        size_of: Callable[[Any], int] | None = None,
    ):
        if cache_of is None and (clear_owner is None or size_of is None):
            raise TypeError("CacheGroup needs cache_of, or both clear_owner and size_of")
        self._owners: weakref.WeakSet = weakref.WeakSet()
        self._clear_owner = clear_owner or (lambda o: cache_of(o).clear())
        self._size_of = size_of or (lambda o: len(cache_of(o)))

    def add(self, owner: T) -> T:
        """Track ``owner`` (weakly) and return it."""
        self._owners.add(owner)
        return owner

    def owners(self) -> list:
        """The owners alive now."""
        return list(self._owners)

    def clear(self) -> None:
        """Empty every live owner's cache."""
        for owner in self.owners():
            self._clear_owner(owner)

    def __len__(self) -> int:
        return sum(self._size_of(o) for o in self.owners())


def bounded_put(d: dict, key, value, capacity: int) -> None:
    """``d[key] = value``, first dropping the oldest entry when ``d`` holds ``capacity``.

    >>> d = {"a": 1, "b": 2}
    >>> bounded_put(d, "c", 3, 2); d
    {'b': 2, 'c': 3}
    """
    if len(d) >= capacity:
        try:
            d.pop(next(iter(d)), None)  # oldest first
        except (RuntimeError, StopIteration):  # another thread changed it meanwhile
            pass
    d[key] = value
