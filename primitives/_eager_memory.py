"""Eager-mode memory, an explicit opt-in: keep NumPy's and XLA's large temporaries in the heap
instead of fresh mmap pages (``funcgrad.config.update("funcgrad_malloc_tuning", True)``).

Layer: primitives (a helper module: no primitives). Imports only the standard library.

# NOTE: [eager allocations]
# glibc serves every allocation above its mmap threshold (128 KiB, growing to at most 32 MiB) with
# a fresh ``mmap`` and returns it with ``munmap`` when freed, so every eager primitive's output and
# temporaries -- a 1.6 MB activation of a batch-128 CNN, an im2col buffer -- page-fault in every
# page on first touch, which costs as much as the arithmetic (measured on the DP-SGD CNN of
# bench/bench_conv.py: eager ``grad`` 24 ms -> 17.5 ms, one BLAS thread). PyTorch avoids this with
# its caching allocator; NumPy allocates through malloc, so on glibc ``tune()`` raises the mmap
# threshold to 32 MiB and lets the heap keep up to 128 MiB of freed memory before trimming
# (``mallopt``). Elsewhere (musl, macOS, Windows) it does nothing.
#
# It is process-wide -- every library's allocations in the process are served by the same
# malloc -- so it is never done at import: importing funcgrad changes no malloc setting
# (tests/integration/test_import_side_effects.py). With the tuning, ``del`` of a 2 GiB NumPy array
# left the resident set at 2.1 GiB (the heap keeps it; without funcgrad's tuning it falls back to
# 33 MiB), memory that a notebook never gets back. A program that wants the speed asks for it:
# ``funcgrad.config.update("funcgrad_malloc_tuning", True)`` (False puts glibc's default values
# back, though not its dynamic threshold: glibc turns that off at the first ``mallopt`` of these
# settings), or without funcgrad, glibc's own environment variables before the process starts:
# ``GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=134217728:
# glibc.malloc.mmap_max=0``. ``python bench/bench_per_sample.py --cases mlp`` measures both ways.
#
# The 32 MiB cap on the mmap threshold is glibc's, so ``tune()`` also turns mmap off for the heap
# (``M_MMAP_MAX=0``): a larger block then comes from an arena's heap too. This matters most for
# XLA's CPU runtime, which mallocs every output buffer of every call from its worker threads:
# ``jit(vmap(grad(loss)))`` of the 64-256-256-10 MLP returns a (128, 256, 256) float32
# per-example gradient, 32 MiB plus glibc's header, which glibc mapped and unmapped on each call.
# Measured side by side in fresh processes (that call, on the loaded 2-core machine): 19-25 ms
# and ~8.6k minor page faults per call without the tuning, 3.4-7 ms and ~10 faults in five calls
# with it (perf had shown the time in ``clear_page``, ``unmap_page_range`` and the
# mm lock, not in XLA's kernel). A program whose one output is the only block of a thread's heap
# still faults part of it in (glibc deletes a thread's heap when it empties). Freed memory is
# still returned to the system (above TRIM_THRESHOLD at the top of the main heap; a thread's empty
# heap), and glibc still maps a block that no heap can hold (above 64 MiB in a thread's arena).
#
# XLA's own buffers of 1 MiB and more no longer need the opt-in: funcgrad serves those from a cache
# scoped to jaxlib's allocations, on by default (NOTE: [XLA's buffers kept between calls] in
# xla_bridge/buffer_cache.py); what the opt-in still changes is NumPy's (eager) allocations, the
# smaller XLA buffers, and every other library's.
#
# How much of the saving a process sees varies with which of XLA's worker threads (and so which
# malloc arena) serves the output: five calls of that program in fresh processes page-faulted
# 0, 0, 8145, 10711 and 20814 times with the tuning, 41k-47k times without (measured on this
# 2-core machine, one process each). A performance effect, so it is measured, not asserted in a
# test: ``python bench/bench_per_sample.py --cases mlp`` runs funcgrad with and without it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_MMAP_MAX = -4
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 128 << 20


_GLIBC_DEFAULTS = ((_M_MMAP_THRESHOLD, 128 << 10), (_M_TRIM_THRESHOLD, 128 << 10), (_M_MMAP_MAX, 65536))
_TUNED = ((_M_MMAP_THRESHOLD, MMAP_THRESHOLD), (_M_TRIM_THRESHOLD, TRIM_THRESHOLD), (_M_MMAP_MAX, 0))


def _mallopt():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt


def available() -> bool:
    """Whether this process's malloc is glibc's, which ``tune()`` can set.

    >>> isinstance(available(), bool)
    True
    """
    return _mallopt() is not None


def tune() -> bool:
    """Apply the settings of NOTE: [eager allocations] to the whole process; True when glibc
    accepted them. Called by ``funcgrad.config.update("funcgrad_malloc_tuning", True)``, never at
    import. (No example: it would change the malloc of the process running the examples.)
    """
    mallopt = _mallopt()
    return mallopt is not None and all([bool(mallopt(option, value)) for option, value in _TUNED])


def restore() -> bool:
    """Put glibc's default values back (its dynamic mmap threshold stays off: NOTE: [eager
    allocations]); True when glibc accepted them. (No example, as for ``tune``.)
    """
    mallopt = _mallopt()
    return mallopt is not None and all([bool(mallopt(option, value)) for option, value in _GLIBC_DEFAULTS])
