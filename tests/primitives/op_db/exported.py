"""op_db entries: calling an exported module (primitives/exported.py).

The callee is ``funcgrad.export`` of a small jitted function, prepared for the sample's shape and
dtype (cached: each preparation lowers and compiles a module). The primitive refuses to be
differentiated (``Exported.call`` differentiates through the exported VJP instead;
tests/surface/test_export.py checks that), so the entry is ``derivative_error=ValueError``.
"""

from __future__ import annotations

import functools

import numpy as np
from funcgrad.primitives.exported import call_exported_p
from hypothesis import strategies as st

import funcgrad
from funcgrad.export import _exported
from funcgrad.kernel.ir import ShapedArray
from op_db._base import F32, F64, OpInfo, Sample, _arr

# A few shapes: each one exports and compiles a module (the sampler caches them).
_SHAPES = st.sampled_from([(), (0,), (3,), (2, 3)])


@functools.cache
def _callee(shape, dtype):
    exp = _exported.export(funcgrad.jit(lambda x: -2 * x + 1))(funcgrad.ShapeDtypeStruct(shape, dtype))
    return _exported._callee(exp, [ShapedArray(shape, dtype)])


def _sampler(shape, dtype, rng):
    return Sample((_arr(rng, shape, dtype),), {"callee": _callee(tuple(shape), np.dtype(dtype))})


OPS = [
    OpInfo("call_exported", call_exported_p, lambda x, **p: call_exported_p.bind(x, **p)[0],
           lambda x, **p: -2 * x + 1, _sampler, shapes=_SHAPES, dtypes=(F64, F32),
           differentiable=False, derivative_error=ValueError),
]  # fmt: skip
