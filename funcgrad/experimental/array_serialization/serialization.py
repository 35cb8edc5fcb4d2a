"""Asynchronous checkpointing of Arrays with TensorStore: ``jax.experimental.array_serialization
.serialization``.

Layer: surface. Imports ``tensorstore_impl`` (which needs ``tensorstore``), funcgrad's public API
and the standard library.

``GlobalAsyncCheckpointManager.serialize`` copies every array out to TensorStore and returns; the
commits finish on a thread of their own, after which ``on_commit_callback`` runs (say, renaming a
temporary folder to its final name). ``wait_until_finished`` joins that thread and re-raises what
failed on it. funcgrad checkpoints from one process, so there is no barrier between processes: JAX's
multi-process path (``jax.distributed``'s key-value store) is refused with a clear error.

>>> import tempfile, numpy as np, funcgrad as fg
>>> from funcgrad.experimental.array_serialization import serialization
>>> folder = tempfile.mkdtemp()
>>> x = fg.numpy.arange(4.0)
>>> manager = serialization.GlobalAsyncCheckpointManager()
>>> manager.serialize_with_paths([x], [folder + "/x"])
>>> manager.wait_until_finished()
>>> [y] = manager.deserialize_with_paths([x.sharding], [folder + "/x"])
>>> np.asarray(y).tolist()
[0.0, 1.0, 2.0, 3.0]
"""

from __future__ import annotations

import abc
import asyncio
import functools
import itertools
import logging
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import funcgrad
from funcgrad.experimental.array_serialization import tensorstore_impl as ts_impl
from funcgrad.experimental.array_serialization.tensorstore_impl import (  # noqa: F401 - JAX's names here
    _DEFAULT_BASE_DRIVER as _DEFAULT_DRIVER,
)
from funcgrad.experimental.array_serialization.tensorstore_impl import (
    _TS_CONTEXT as TS_CONTEXT,
)
from funcgrad.experimental.array_serialization.tensorstore_impl import (
    _LimitInFlightBytes,  # noqa: F401
    async_deserialize,
    async_serialize,
)
from funcgrad.experimental.array_serialization.tensorstore_impl import (
    _run_deserialization as run_deserialization,
)
from funcgrad.experimental.array_serialization.tensorstore_impl import (
    _run_serialization as run_serialization,
)

__all__ = [
    "AsyncManager",
    "BarrierTimeoutError",
    "GlobalAsyncCheckpointManager",
    "GlobalAsyncCheckpointManagerBase",
    "TS_CONTEXT",
    "async_deserialize",
    "async_serialize",
    "get_tensorstore_spec",
    "is_remote_storage",
    "run_deserialization",
    "run_serialization",
]

logger = logging.getLogger(__name__)

# The older layout, kept as JAX keeps it: zarr, no OCDBT store.
_get_metadata = functools.partial(ts_impl._get_tensorstore_metadata, driver="zarr")
get_tensorstore_spec = functools.partial(ts_impl.get_tensorstore_spec, driver="zarr", ocdbt=False)

_REMOTE_URL = re.compile(r"^(gs://|s3://)")
_REMOTE_DRIVERS = ("gcs", "s3")
_module_unique_count = itertools.count()


class BarrierTimeoutError(Exception):
    """Processes did not all reach a checkpoint's barrier in time (JAX's name; funcgrad's manager
    runs on one process and has no barrier)."""


def is_remote_storage(tspec: dict[str, Any] | str) -> bool:
    """Whether a TensorStore spec (or a URL) writes to cloud storage (``gs://``, ``s3://``, or a
    gcs/s3 driver, looked for in nested ``base``/``kvstore`` specs).

    >>> is_remote_storage("gs://bucket/ckpt"), is_remote_storage({"driver": "file", "path": "/tmp/x"})
    (True, False)
    """
    if isinstance(tspec, str):
        return _REMOTE_URL.match(tspec) is not None
    for key in ("base", "kvstore"):
        if key in tspec:
            return is_remote_storage(tspec[key])
    return tspec.get("driver") in _REMOTE_DRIVERS


class GlobalAsyncCheckpointManagerBase(abc.ABC):
    """The interface of a manager of asynchronous checkpoints: ``serialize`` returns once the
    arrays are copied out, ``wait_until_finished`` blocks until they are on storage and
    ``check_for_errors`` re-raises, without blocking, what failed meanwhile."""

    @abc.abstractmethod
    def check_for_errors(self):
        """Raise what failed on the commit thread, if anything (non-blocking)."""

    @abc.abstractmethod
    def wait_until_finished(self):
        """Block until the checkpoint in progress is committed."""

    @abc.abstractmethod
    def serialize(self, arrays, tensorstore_specs, *, on_commit_callback: Callable[[], None]):
        """Write ``arrays`` with ``tensorstore_specs``."""

    @abc.abstractmethod
    def deserialize(self, shardings, tensorstore_specs, global_shapes=None, dtypes=None):
        """Read the arrays ``tensorstore_specs`` name, placed by ``shardings``."""


class AsyncManager:
    """Waits for commit futures on a thread of its own, then runs the commit callback."""

    def __init__(self, timeout_secs: int = 300):
        if funcgrad.process_count() > 1:
            raise NotImplementedError(
                "GlobalAsyncCheckpointManager on funcgrad checkpoints from one process (no barrier "
                f"between processes); this one is one of {funcgrad.process_count()}"
            )
        self._timeout_secs = timeout_secs
        self._commit_futures: Sequence | None = None
        self._thread: threading.Thread | None = None
        self._exception: BaseException | None = None
        self._on_commit_callback: Callable[[], None] | None = None
        self._count: int | None = None

    def __del__(self):
        thread = getattr(self, "_thread", None)
        if thread is not None and thread.is_alive():
            logger.warning(
                "Call .wait_until_finished() before the program ends: errors of a checkpoint still "
                "being written are lost when its manager is deleted."
            )

    def _thread_func(self):
        try:
            for future in self._commit_futures or ():
                future.result()
            if self._on_commit_callback is not None:
                self._on_commit_callback()
        except Exception as e:  # kept for wait_until_finished / check_for_errors to raise
            self._exception = e

    def _start_async_commit(self, on_commit_callback):
        self._count = next(_module_unique_count)
        self._on_commit_callback = on_commit_callback
        self._thread = threading.Thread(target=self._thread_func, daemon=True)
        self._thread.start()

    def check_for_errors(self):
        """Raise (once) what failed on the commit thread."""
        if self._exception is not None:
            exception, self._exception = self._exception, None
            raise exception

    def wait_until_finished(self):
        """Block until the commit thread is done; raise what failed on it."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.check_for_errors()

    def _add_futures(self, futures: Sequence):
        self._commit_futures = futures


class GlobalAsyncCheckpointManager(AsyncManager, GlobalAsyncCheckpointManagerBase):
    """Writes and reads Arrays with TensorStore, committing in the background."""

    def serialize(self, arrays, tensorstore_specs, *, on_commit_callback: Callable[[], None] | None = None,
                  transaction: ts_impl.Transaction | None = None):  # fmt: skip
        """Copy ``arrays`` out to TensorStore (after the previous checkpoint is committed) and
        commit them in the background; ``on_commit_callback`` runs once all are committed."""
        self.wait_until_finished()
        commit_futures: list = []

        async def copy_out():
            writes = funcgrad.tree_util.tree_map(
                lambda arr, spec: async_serialize(
                    arr, spec, commit_future=commit_futures, transaction=transaction
                ),
                arrays,
                tensorstore_specs,
            )
            return await asyncio.gather(*funcgrad.tree_util.tree_leaves(writes))

        asyncio.run(copy_out())
        self._add_futures(commit_futures)
        self._start_async_commit(on_commit_callback)

    def serialize_with_paths(self, arrays, paths, *, on_commit_callback=None, transaction=None):
        """``serialize`` to the zarr specs of ``paths``."""
        specs = [get_tensorstore_spec(p) for p in paths]
        return self.serialize(arrays, specs, on_commit_callback=on_commit_callback, transaction=transaction)

    def deserialize(
        self, shardings, tensorstore_specs, global_shapes=None, dtypes=None, concurrent_gb: int = 32
    ):
        """Read the arrays (after the checkpoint in progress is committed)."""
        self.wait_until_finished()
        return run_deserialization(shardings, tensorstore_specs, global_shapes, dtypes, concurrent_gb)

    def deserialize_with_paths(
        self, shardings, paths, global_shapes=None, dtypes=None, concurrent_gb: int = 32
    ):
        """``deserialize`` from the zarr specs of ``paths``."""
        specs = [get_tensorstore_spec(p) for p in paths]
        return self.deserialize(shardings, specs, global_shapes, dtypes, concurrent_gb)
