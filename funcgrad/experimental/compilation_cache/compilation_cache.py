"""The persistent compilation cache's switches under jax's older names
(``jax.experimental.compilation_cache.compilation_cache``): ``set_cache_dir`` is
``funcgrad.config.update("jax_compilation_cache_dir", path)``.

Layer: surface. Imports funcgrad._config and xla_bridge (the cache lives in
xla_bridge/compile_cache.py: compiled executables stored on disk, keyed by the module text, the
jaxlib version, the platform and the compile options).
"""

from __future__ import annotations

import os

from funcgrad import _config, xla_bridge

__all__ = ["reset_cache", "set_cache_dir"]


def set_cache_dir(path: str | os.PathLike | None) -> None:
    """Keep compiled programs in ``path`` (created on the first write), so that a later process
    loads them instead of compiling again; ``None`` turns the cache off.

    >>> import tempfile, funcgrad
    >>> d = tempfile.mkdtemp()
    >>> set_cache_dir(d); funcgrad.config.jax_compilation_cache_dir == d
    True
    >>> set_cache_dir(None)
    """
    _config.config.update("jax_compilation_cache_dir", path)


def reset_cache() -> None:
    """Forget the cache's state in this process (its hit and miss counters). As in jax, the
    directory stays as configured, and the files in it stay.

    >>> reset_cache(); xla_bridge.compile_cache.stats()["hits"]
    0
    """
    xla_bridge.compile_cache.reset_stats()
