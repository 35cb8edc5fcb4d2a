"""``funcgrad.experimental.xla_metadata``: ``set_xla_metadata``, JAX's way to attach XLA frontend
attributes to operations (``jax.experimental.xla_metadata``).

Layer: surface. Imports the kernel (the source-info record that carries the metadata), the
primitive ``xla_metadata_value_p`` and ``funcgrad._user_contexts`` (the metadata in force is part
of ``jit``'s trace cache key). NOTE: [xla metadata] in xla_bridge/emitter.py says how the
metadata travels from the user's code to the StableHLO text.

Three forms, as JAX's:

- ``set_xla_metadata(x, **kvs)`` tags the operation that computed each leaf of ``x``;
- ``with set_xla_metadata(**kvs):`` tags every operation staged inside (and, under ``grad``, the
  operations of their derivatives); nested blocks merge, the inner value winning, and a value of
  ``None`` removes a key;
- ``@set_xla_metadata(**kvs)`` on a function runs it, and any method of it that is called
  (``.lower``, ``.trace``), inside that block.

>>> import funcgrad, funcgrad.numpy as fnp
>>> def f(x):
...     with set_xla_metadata(_xla_log=True):
...         return fnp.sin(x) * 2.0
>>> 'mhlo.frontend_attributes = {_xla_log = "true"}' in funcgrad.jit(f).lower(1.0).as_text()
True
"""

from __future__ import annotations

from functools import wraps

from funcgrad._user_contexts import make_user_context
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.source_info import merge_metadata, source_info_config
from funcgrad.primitives.sharding import xla_metadata_value_p

__all__ = ["set_xla_metadata"]

# The metadata in force, as a user context: its value is part of every jit trace cache key, so a
# function traced under other metadata is traced again (JAX keys on its config state likewise).
_in_force = make_user_context(())


class XlaMetadataContextManager:
    """``with set_xla_metadata(**kvs):`` (JAX's class of that name); as a decorator, see
    ``set_xla_metadata``."""

    __slots__ = ("updates", "_prev", "_key_ctx")

    def __init__(self, updates: dict):
        self.updates = updates

    def __enter__(self):
        if not self.updates:
            return
        self._prev = source_info_config.xla_metadata
        merged = merge_metadata(self._prev, self.updates)
        source_info_config.xla_metadata = merged
        self._key_ctx = _in_force(merged)
        self._key_ctx.__enter__()

    def __exit__(self, exc_type, exc_value, traceback):
        if not self.updates:
            return
        self._key_ctx.__exit__(exc_type, exc_value, traceback)
        source_info_config.xla_metadata = self._prev

    def __call__(self, f):
        return _XlaMetadataWrapper(f, self)


class _XlaMetadataWrapper:
    """``f`` run inside the metadata block, and so is every method of ``f`` called through it
    (``decorated.lower(...)`` of a jitted function), as JAX's wrapper."""

    def __init__(self, f, ctx):
        self._f = f
        self._ctx = ctx
        wraps(f)(self)

    def __call__(self, *args, **kwargs):
        with self._ctx:
            return self._f(*args, **kwargs)

    def __getattr__(self, name):
        attr = getattr(self._f, name)
        if not callable(attr):
            return attr

        @wraps(attr)
        def wrapper(*args, **kwargs):
            with self._ctx:
                return attr(*args, **kwargs)

        return wrapper


def set_xla_metadata(x=None, **kwargs):
    """Attach ``kwargs`` to operations as XLA frontend attributes (values printed as strings,
    booleans in lower case): with ``x``, to the operations computing its leaves (returns ``x``);
    without, a context manager and decorator for every operation staged inside.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> text = funcgrad.jit(lambda x: set_xla_metadata(x * 2.0, tag="a")).lower(1.0).as_text()
    >>> [line.strip() for line in text.splitlines() if "multiply" in line]
    ['%0 = stablehlo.multiply %arg0, %cst {mhlo.frontend_attributes = {tag = "a"}} : tensor<f64>']
    """
    if x is None:
        return XlaMetadataContextManager(kwargs)
    kvs = tuple(sorted(kwargs.items()))
    return tu.tree_map(lambda v: xla_metadata_value_p.bind(v, xla_metadata_kvs=kvs), x)
