"""Settings that a thread may override inside a context while the others keep the process-wide
value: JAX's thread-local contexts (``enable_x64``, ``numpy_dtype_promotion``,
``numpy_rank_promotion``, ``default_matmul_precision``, ``disable_jit``; NOTE: [x64 mode per
thread] in funcgrad/kernel/dtypes.py).

Layer: kernel. Imports only the standard library.

# NOTE: [per-thread overrides cost nothing while no thread has one]
# The process-wide values are read on the hot path (every eager operation's dtypes, every jitted
# call's promotion flags), as plain attributes of a module or items of a dict. While a thread is
# inside a context, the object that holds them takes another class whose reads answer with the
# reading thread's own value (a property, a ``__getitem__``): ``ThreadOverride`` swaps the class
# when the first context over all threads is entered and back when the last one is left, under a
# lock (two threads entering at once must not lose a count and leave the wrong class in place).
# The swap is the whole cost of the feature: none while no thread has its own value.
"""

from __future__ import annotations

import threading


class _Own(threading.local):
    value = None  # this thread's own value; None: the process-wide one


class ThreadOverride:
    """A setting that threads may override, each in its own contexts (NOTE: [per-thread
    overrides cost nothing while no thread has one]). ``local.value`` is the calling thread's own
    value (None: the process-wide one); while any thread has one, ``holder`` (the object holding
    the process-wide values, or None) is of class ``per_thread``, otherwise of class ``plain``.
    ``count`` is the contexts entered and not left over all threads, ``changes`` those entered or
    left so far; ``on_change()`` (if given) runs under the lock after each change of the count, so
    that what it decides from the count is never overtaken by another thread's older decision.

    >>> flags = ThreadOverride()
    >>> token = flags.enter("raise")
    >>> seen = []; t = threading.Thread(target=lambda: seen.append(flags.local.value)); t.start(); t.join()
    >>> flags.local.value, seen, flags.active()
    ('raise', [None], True)
    >>> flags.exit(token); flags.local.value, flags.active()
    (None, False)
    """

    __slots__ = ("local", "count", "changes", "_lock", "_holder", "_plain", "_per_thread", "_on_change")

    def __init__(
        self, holder=None, plain: type | None = None, per_thread: type | None = None, on_change=None
    ):
        self.local = _Own()
        self.count = 0
        self.changes = 0
        self._lock = threading.Lock()
        self._holder, self._plain, self._per_thread = holder, plain, per_thread
        self._on_change = on_change

    def enter(self, value):
        """Give the calling thread its own ``value``; returns what ``exit`` restores."""
        with self._lock:
            self.count += 1
            self.changes += 1
            if self._holder is not None:
                self._holder.__class__ = self._per_thread
            if self._on_change is not None:
                self._on_change()
        previous = self.local.value
        self.local.value = value
        return previous

    def exit(self, previous) -> None:
        """Leave the value ``enter`` gave (``previous`` is what it returned)."""
        self.local.value = previous
        with self._lock:
            self.count -= 1
            self.changes += 1
            if not self.count and self._holder is not None:
                self._holder.__class__ = self._plain
            if self._on_change is not None:
                self._on_change()

    def active(self) -> bool:
        """Whether any thread is inside a context of its own."""
        return self.count > 0
