"""op_db entries: the host callbacks (primitives/callbacks.py), called with NumPy functions.

``pure_callback`` and ``io_callback`` have no derivative (their JVPs raise, as JAX's do), so their
entries are integer-only
(the generic derivative checks do not apply; tests/surface/api/test_callbacks.py checks the error). The debug
callback has no results: its entry checks that binding it (eagerly, batched, compiled) works and
that it produces no tangents.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import callbacks as cb

from funcgrad.kernel.ir import ShapedArray
from op_db._base import F64, I32, OpInfo, Sample, _arr, _shapes

_NEGATE = cb.HostCallback(lambda x: [np.negative(x)], "negative")
_SEEN = cb.HostCallback(lambda x: None, "discard")


def _pure_sampler(shape, dtype, rng):
    return Sample(
        (_arr(rng, shape, dtype, -5, 5),),
        {"callback": _NEGATE, "result_avals": (ShapedArray(shape, dtype),), "vmap_method": "sequential"},
    )


def _io_sampler(shape, dtype, rng):
    return Sample(
        (_arr(rng, shape, dtype, -5, 5),),
        {"callback": _NEGATE, "result_avals": (ShapedArray(shape, dtype),), "ordered": False},
    )


def _debug_sampler(shape, dtype, rng):
    return Sample((_arr(rng, shape, dtype),), {"callback": _SEEN, "ordered": False})


OPS = [
    OpInfo("pure_callback", cb.pure_callback_p, lambda x, **p: cb.pure_callback_p.bind(x, **p)[0],
           lambda x, **p: np.negative(x), _pure_sampler, shapes=_shapes(), dtypes=(I32,)),
    OpInfo("io_callback", cb.io_callback_p, lambda x, **p: cb.io_callback_p.bind(x, **p)[0],
           lambda x, **p: np.negative(x), _io_sampler, shapes=_shapes(), dtypes=(I32,)),
    OpInfo("debug_callback", cb.debug_callback_p, lambda x, **p: cb.debug_callback_p.bind(x, **p),
           lambda x, **p: [], _debug_sampler, shapes=_shapes(), dtypes=(F64, I32), differentiable=False),
]  # fmt: skip
