"""XLA's large CPU buffers kept between calls, scoped to jaxlib (NOTE: [XLA's buffers kept between
calls]).

Layer: xla_bridge. Imports only the standard library and, where it is built, ``_hot_call`` (the C
half: ``_buffer_cache.h``). ``install()`` runs once, when the CPU backend is created.

# NOTE: [XLA's buffers kept between calls]
# XLA's CPU runtime mallocs each call's temporaries as one block (the GPT-style step of
# bench/bench_transformer.py: 126 MB of residuals) and each output buffer. glibc serves a block
# above its mmap ceiling (32 MiB) with a fresh ``mmap`` and unmaps it on free, so every page of it
# page-faulted in again on every call: 30.8k minor faults and 35-60 ms of system time per step. The
# process-wide cure, ``mallopt`` (NOTE: [eager allocations]), changes every library's malloc and
# keeps a freed 2 GiB NumPy array resident, so it stays an opt-in. This cache is scoped instead:
# it redirects only jaxlib's own references to malloc/free/realloc/posix_memalign (the relocations
# of libjax_common.so: its GOT and its function-pointer tables, patched once before the CPU client
# exists), so that a request of 128 KiB or more is served from funcgrad's own anonymous mappings
# (from 16 MiB up 2 MiB aligned and advised for transparent huge pages, which then cost at most an
# eighth more memory than asked), and a freed one is kept for the next
# request of about its size (at most a quarter larger). From 128 KiB, glibc's own default mmap
# threshold, not only the large blocks: a call's blocks of a few hundred KiB freed together made
# glibc trim an arena and fault it in again on the next call, in some processes and not others
# (jit(grad) through ``eigh`` of 200x200: 3.4-3.8 against 2.8-3.1 ms; _buffer_cache.h says more).
# At most ``FUNCGRAD_CPU_BUFFER_CACHE_MB``
# (default 256) MiB are kept, the oldest given back first, all of them by
# ``funcgrad.clear_caches()``; a block above the cap is unmapped when freed, as glibc does.
# Anything smaller, and every pointer the cache did not hand out (told apart by a table of its
# live blocks, looked up only for page-aligned pointers), goes to the process's malloc/free
# untouched, so NumPy, Python and every other library keep glibc's behaviour and settings
# (tests/integration/test_import_side_effects.py). ``FUNCGRAD_CPU_BUFFER_CACHE_MB=0`` before the
# first computation turns it off. Linux on x86-64/aarch64 only (elsewhere, or without the C
# module, nothing changes). Measured on that step (one thread, fresh processes, load 13-18): 30.8k
# -> 0 minor faults, 35-63 -> 0 ms of system time, 133-150 -> 133-141 ms of user time per call
# (huge pages); the per-example gradients: 46.8k -> 0 faults, CPU time 267 -> 165 ms.
"""

from __future__ import annotations

import contextlib
import os

from funcgrad.kernel import caches
from funcgrad.kernel.c_modules import c_modules_wanted

_hot_call = None  # the C half, where it is built and wanted (NOTE: [array in C])
if c_modules_wanted():
    with contextlib.suppress(ImportError):  # not built: no C compiler where it was installed
        from funcgrad.xla_bridge import _hot_call

# The shared object holding XLA (its allocations are the ones redirected).
_OBJECT = "/libjax_common.so"
_DEFAULT_MB = 256
_installed: int | None = None


def cap_bytes() -> int:
    """The bytes of freed buffers the cache keeps at most (``FUNCGRAD_CPU_BUFFER_CACHE_MB``, MiB;
    0 turns the cache off).

    >>> cap_bytes() >= 0
    True
    """
    raw = os.environ.get("FUNCGRAD_CPU_BUFFER_CACHE_MB", "").strip()
    try:
        mb = float(raw) if raw else _DEFAULT_MB
    except ValueError:
        raise ValueError(
            f"FUNCGRAD_CPU_BUFFER_CACHE_MB must be a number of MiB (0: off), got {raw!r}"
        ) from None
    return max(0, int(mb * 2**20))


def install() -> int:
    """Redirect jaxlib's large allocations to the cache, once (later calls return the first
    result): the number of references redirected, 0 where it is off or not available.

    >>> install() >= 0
    True
    """
    global _installed
    if _installed is None:
        _installed = 0
        cap = cap_bytes()
        if cap > 0 and hasattr(_hot_call, "buffer_cache_install"):
            _installed = max(0, _hot_call.buffer_cache_install(_OBJECT, cap))
    return _installed


def trim() -> int:
    """Give the kept blocks back to the system now (``funcgrad.clear_caches()`` does); the bytes
    given back.

    >>> trim() >= 0
    True
    """
    if hasattr(_hot_call, "buffer_cache_trim"):
        return _hot_call.buffer_cache_trim()
    return 0


def stats() -> dict:
    """The cache's counters: ``installed``, ``hits`` (requests served from kept blocks), ``maps``
    (fresh mappings), ``live``, ``kept``, ``kept_bytes``, ``cap``.

    >>> isinstance(stats()["installed"], int)
    True
    """
    if hasattr(_hot_call, "buffer_cache_stats"):
        return _hot_call.buffer_cache_stats()
    return {"installed": 0}


caches.register_cache("xla_bridge.cpu_buffer_cache", clear=trim, size=lambda: stats().get("kept", 0))
