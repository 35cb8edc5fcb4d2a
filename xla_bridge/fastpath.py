"""What jaxlib's C++ dispatcher needs to run a compiled program without Python: the
``FastPathData`` record and its construction, and ``prepend_constants`` (a program's hoisted
constants are its leading parameters).

Layer: xla_bridge. Imports the funcgrad kernel's pytree registry only. ``programs.Compiled``
(one device or several: NOTE: [one compiled program]) builds its record here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from funcgrad.kernel.tree_util import registry as _registry

__all__ = ["FastPathData", "fastpath_record", "prepend_constants"]


class FastPathData(NamedTuple):
    """The fields jaxlib's ``pjit`` dispatcher reads from a cache miss's result, in its order."""

    xla_executable: Any
    out_pytree_def: Any
    in_shardings: Any
    out_shardings: Any
    out_avals: Any
    out_committed: Any
    kept_var_bitvec: Any
    in_device_local_layouts: Any
    const_args: Any


def fastpath_record(
    loaded, outputs, in_shardings, out_shardings, out_avals, const_buffers, committed: bool = True
) -> FastPathData:
    """The record for ``loaded`` (a loaded executable) whose results have the pytree structure of
    ``outputs``: the C++ side rebuilds that structure around fresh output buffers, committed with
    ``committed`` (NOTE: [committed arrays] in xla_bridge/committed.py). Hoisted
    constants are the executable's leading parameters: every per-parameter list covers them too
    (shorter lists made the second call fail with std::bad_cast or crash)."""
    n_in, n_out = len(in_shardings), len(out_avals)
    return FastPathData(
        loaded,
        _registry.flatten(outputs)[1],
        list(in_shardings),
        list(out_shardings),
        list(out_avals),
        [committed] * n_out,
        [True] * n_in,
        [None] * n_in,
        list(const_buffers),
    )


def prepend_constants(call, const_buffers):
    """``call(buffers)`` with the hoisted constants' buffers passed first (they are the program's
    leading parameters)."""
    if not const_buffers:
        return call
    consts = list(const_buffers)
    return lambda bufs: call(consts + bufs)
