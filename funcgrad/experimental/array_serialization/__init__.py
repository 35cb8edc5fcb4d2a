"""``funcgrad.experimental.array_serialization``: saving and restoring Arrays with TensorStore, as
``jax.experimental.array_serialization``.

Layer: surface. Its submodules import ``tensorstore`` (an optional dependency: ``pip install
tensorstore``), so, as in JAX, importing this package imports nothing and the submodules are
imported by name: ``serialization`` (``async_serialize``, ``async_deserialize``,
``GlobalAsyncCheckpointManager``, ``get_tensorstore_spec``, ...) and ``tensorstore_impl`` (the
TensorStore specs, chunking and the asynchronous reads and writes behind them).

funcgrad runs them on one process: every Array is fully addressable, so every shard a process
holds is written by it and there is no barrier between processes to wait at.
"""
