"""Persistent (on-disk) cache of compiled XLA executables.

Layer: xla_bridge (runtime half). May import: stdlib, and jaxlib's version constant. It never
imports jaxlib's XLA machinery itself: the runtime hands it the client, the compile options and
a compile function, so this module stays testable and cheap to import. Never jax or funcgrad.

Opt-in: set ``FUNCGRAD_COMPILATION_CACHE_DIR=/some/dir`` (read at first use) or call
``set_cache_dir(path)``; ``set_cache_dir(None)`` turns it off.

Key = sha256 over: a format tag, the module text (or bytecode), the jaxlib version, the client's
platform and platform_version, the serialized ``CompileOptions`` (which carry the device
assignment and every debug/env option) and the device kinds and ids. Anything that changes the
generated code changes one of those.

Entry file ``<key>.fgxc`` = magic line + sha256(blob) + blob, where blob is
``LoadedExecutable.serialize()``. The checksum matters: deserializing a truncated or
bit-flipped blob is not guaranteed to fail cleanly inside XLA, so damaged entries are detected
here first. Writes go to a temp file in the same directory and are moved in with
``os.replace`` (atomic on POSIX and Windows), so readers never see half a file and concurrent
writers of the same key are harmless.

Failure policy: the cache is an optimization, never a source of errors. Unreadable, corrupted
or undeserializable entries are reported with a ``warnings.warn`` (category
``CompilationCacheWarning``), removed when possible, counted in ``stats()["errors"]`` and
recompiled; a cache directory that cannot be written only warns.

Security: a blob is machine code. Only point the cache at a directory you trust.

Thresholds (JAX's ``jax_persistent_cache_min_compile_time_secs`` and
``jax_persistent_cache_min_entry_size_bytes``, through ``set_thresholds``): a program compiled
faster than the minimum time, or whose entry is smaller than the minimum size, is not written.
Both are 0 by default here (every program is written; JAX's default time is 1 s).

Not done: size limits / eviction (delete the directory to clear it).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
import time
import warnings

from funcgrad.kernel import monitoring

__all__ = [
    "CompilationCacheWarning",
    "cache_key",
    "compile_or_load",
    "get_cache_dir",
    "load",
    "reset_stats",
    "set_cache_dir",
    "set_thresholds",
    "stats",
    "store",
]
# Re-exported by the xla_bridge package (NOTE: [derived namespaces] in funcgrad/__init__.py).
_REEXPORTED = ("set_cache_dir", "get_cache_dir")

_ENV_VAR = "FUNCGRAD_COMPILATION_CACHE_DIR"
_MAGIC = b"FGXC1\n"  # bump when the entry layout or key recipe changes
_SUFFIX = ".fgxc"

_lock = threading.Lock()
_UNSET = object()
_cache_dir: object = _UNSET  # _UNSET until the env var has been read
_stats = {"hits": 0, "misses": 0, "stores": 0, "errors": 0}
_thresholds = {"min_compile_time_secs": 0.0, "min_entry_size_bytes": 0}


def set_thresholds(min_compile_time_secs: float | None = None, min_entry_size_bytes: int | None = None):
    """The smallest compile time (seconds) and entry size (bytes) of a program written to the
    cache; None leaves a threshold as it is (a size of -1 or 0: no size threshold, as JAX's).

    Example:
        >>> set_thresholds(min_compile_time_secs=0.0, min_entry_size_bytes=0)
    """
    if min_compile_time_secs is not None:
        _thresholds["min_compile_time_secs"] = float(min_compile_time_secs)
    if min_entry_size_bytes is not None:
        _thresholds["min_entry_size_bytes"] = int(min_entry_size_bytes)


class CompilationCacheWarning(UserWarning):
    """The persistent compilation cache skipped an entry or could not write one."""


def set_cache_dir(path: str | os.PathLike | None) -> None:
    """Turn the persistent cache on (a directory, created on first write) or off (None).

    Overrides ``FUNCGRAD_COMPILATION_CACHE_DIR``.

    Example:
        >>> set_cache_dir("/tmp/funcgrad-xla-cache"); get_cache_dir()
        '/tmp/funcgrad-xla-cache'
        >>> set_cache_dir(None)
    """
    global _cache_dir
    with _lock:
        _cache_dir = None if path is None else os.fspath(path)


def get_cache_dir() -> str | None:
    """The active cache directory, or None when the persistent cache is off.

    Example:
        >>> get_cache_dir() is None or isinstance(get_cache_dir(), str)
        True
    """
    global _cache_dir
    if _cache_dir is _UNSET:
        with _lock:
            if _cache_dir is _UNSET:
                _cache_dir = os.environ.get(_ENV_VAR) or None
    return _cache_dir  # type: ignore[return-value]


def stats() -> dict[str, int]:
    """Counters since start (or ``reset_stats``): hits, misses, stores, errors.

    Example:
        >>> sorted(stats())
        ['errors', 'hits', 'misses', 'stores']
    """
    with _lock:
        return dict(_stats)


def reset_stats() -> None:
    """Zero the counters (for tests).

    Example:
        >>> reset_stats(); stats()["hits"]
        0
    """
    with _lock:
        for k in _stats:
            _stats[k] = 0


def _count(name: str) -> None:
    with _lock:
        _stats[name] += 1


def cache_key(
    module: str | bytes,
    *,
    platform: str,
    platform_version: str,
    compile_options: bytes,
    devices: list[tuple[str, int]],
) -> str:
    """The hex sha256 key of one compilation.

    ``devices`` lists (device_kind, id) of the devices the executable is compiled for.

    Example:
        >>> k = cache_key("module {}", platform="cpu", platform_version="cpu",
        ...               compile_options=b"", devices=[("cpu", 0)])
        >>> len(k)
        64
    """
    from jaxlib import version as jaxlib_version

    h = hashlib.sha256()

    def part(b: bytes) -> None:
        # Length-prefixed so that no two different tuples of parts hash the same bytes.
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)

    part(_MAGIC)
    part(module.encode() if isinstance(module, str) else bytes(module))
    part(jaxlib_version.__version__.encode())
    part(platform.encode())
    part(platform_version.encode())
    part(bytes(compile_options))
    part(repr(sorted(devices)).encode())
    return h.hexdigest()


def _path(directory: str, key: str) -> str:
    return os.path.join(directory, key + _SUFFIX)


def _warn(msg: str) -> None:
    warnings.warn(msg, CompilationCacheWarning, stacklevel=3)


def _discard(path: str) -> None:
    try:
        os.remove(path)
    except OSError:  # already gone or read-only: the next store overwrites it anyway
        pass


def load(key: str) -> bytes | None:
    """The stored executable blob for ``key``, or None (off, absent or damaged).

    Counts a hit or a miss; a damaged entry also counts an error, warns and is removed.

    Example:
        >>> set_cache_dir(None); load("0" * 64) is None
        True
    """
    directory = get_cache_dir()
    if directory is None:
        return None
    path = _path(directory, key)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        _count("misses")
        return None
    except OSError as e:
        _count("misses")
        _count("errors")
        _warn(f"compilation cache: cannot read {path} ({e}); recompiling.")
        return None
    n = len(_MAGIC)
    blob = data[n + 32 :]
    if data[:n] != _MAGIC or len(data) < n + 32 or hashlib.sha256(blob).digest() != data[n : n + 32]:
        _count("misses")
        _count("errors")
        _warn(f"compilation cache: ignoring corrupted entry {path}; recompiling.")
        _discard(path)
        return None
    _count("hits")
    return blob


def store(key: str, blob: bytes) -> bool:
    """Write ``blob`` under ``key`` atomically; returns False (with a warning) on failure.

    Example:
        >>> set_cache_dir(None); store("0" * 64, b"x")
        False
    """
    directory = get_cache_dir()
    if directory is None:
        return False
    tmp = None
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=_SUFFIX, dir=directory)
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC)
            f.write(hashlib.sha256(blob).digest())
            f.write(blob)
        os.replace(tmp, _path(directory, key))
        tmp = None
    except OSError as e:
        _count("errors")
        _warn(f"compilation cache: cannot write to {directory} ({e}); not caching.")
        return False
    finally:
        if tmp is not None:
            _discard(tmp)
    _count("stores")
    return True


def compile_or_load(module, client, device_list, compile_options, devices, compile_fn):
    """Return a loaded executable from the cache, or ``compile_fn()`` and store it.

    ``client`` is the PJRT client (``.platform``, ``.platform_version``,
    ``.deserialize_executable``), ``device_list`` the ``DeviceList`` to load onto, ``devices``
    the (kind, id) pairs for the key. With the cache off this is just ``compile_fn()``.

    Example:
        >>> set_cache_dir(None)
        >>> compile_or_load("m", None, None, None, [], lambda: "compiled")
        'compiled'
    """
    if get_cache_dir() is None:
        _note_task("/jax/compilation_cache/task_disabled_cache")
        return timed_compile(module, compile_fn)
    _note_task("/jax/compilation_cache/tasks_using_cache")
    monitoring.record_event("/jax/compilation_cache/compile_requests_use_cache")
    key = cache_key(
        module,
        platform=client.platform,
        platform_version=client.platform_version,
        compile_options=compile_options.SerializeAsString(),
        devices=devices,
    )
    start = time.monotonic()
    blob = load(key)
    if blob is not None:
        try:
            loaded = client.deserialize_executable(blob, device_list, compile_options)
            monitoring.record_event("/jax/compilation_cache/cache_hits")
            monitoring.record_event_duration_secs(
                "/jax/compilation_cache/cache_retrieval_time_sec", time.monotonic() - start
            )
            return loaded
        # Any failure (e.g. an entry from an incompatible build) means: recompile.
        except Exception as e:  # noqa: BLE001
            _count("errors")
            _warn(f"compilation cache: cannot load entry {key} ({e}); recompiling.")
            _discard(_path(get_cache_dir() or "", key))
    compile_start = time.monotonic()
    loaded = timed_compile(module, compile_fn)
    if time.monotonic() - compile_start < _thresholds["min_compile_time_secs"]:
        return loaded  # (compiled faster than the threshold: not worth an entry, as JAX's)
    try:
        data = loaded.serialize()
    # Some executables (e.g. with host callbacks) can't be serialized: just don't cache them.
    except Exception as e:  # noqa: BLE001
        _count("errors")
        _warn(f"compilation cache: executable not serializable ({e}); not caching.")
        return loaded
    monitoring.record_event("/jax/compilation_cache/cache_misses")
    if len(data) >= _thresholds["min_entry_size_bytes"]:
        store(key, data)
    return loaded


_tasks_noted: set[str] = set()


def _note_task(event: str) -> None:
    """Record JAX's once-per-process event of whether compiles use the persistent cache."""
    if event not in _tasks_noted:
        _tasks_noted.add(event)
        monitoring.record_event(event)


_MODULE_NAME = re.compile(r'module @"?([\w.$-]+)')


def timed_compile(module, compile_fn):
    """``compile_fn()`` timed as JAX's backend-compile event, ``fun_name`` the module's name
    (NOTE: [monitoring events]).

    Example:
        >>> timed_compile("module @jit_f {}", lambda: "compiled")
        'compiled'
    """
    found = _MODULE_NAME.search(module[:400]) if isinstance(module, str) else None
    with monitoring.timed_event(monitoring.BACKEND_COMPILE_EVENT, fun_name=found[1] if found else "module"):
        return compile_fn()
