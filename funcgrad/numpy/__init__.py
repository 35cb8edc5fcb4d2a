"""funcgrad.numpy: NumPy's API over funcgrad arrays — differentiable, batchable, compilable.

Layer: surface. Every function is a composition of primitives from the catalog; none adds rules.

>>> import funcgrad.numpy as fnp
>>> fnp.sum(fnp.sin(fnp.zeros(3)))
Array(0., dtype=float64)
"""

from __future__ import annotations

import numpy as _np

from funcgrad.array import Array as ndarray  # noqa: F401
from funcgrad.numpy import _methods  # noqa: F401 - installs operators
from funcgrad.numpy._core import array, asarray, broadcast_shapes, broadcast_to, result_type  # noqa: F401
from funcgrad.numpy.creation import arange, full, ones, ones_like, zeros, zeros_like  # noqa: F401
from funcgrad.numpy.linalg_core import dot, matmul  # noqa: F401
from funcgrad.numpy.reductions import amax, amin, max, mean, min, prod, sum  # noqa: F401
from funcgrad.numpy.shape import concatenate, expand_dims, ravel, reshape, stack, transpose  # noqa: F401
from funcgrad.numpy.ufuncs import *  # noqa: F401,F403

float16 = _np.float16
float32 = _np.float32
float64 = _np.float64
int8 = _np.int8
int16 = _np.int16
int32 = _np.int32
int64 = _np.int64
uint8 = _np.uint8
uint32 = _np.uint32
bool_ = _np.bool_
pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
newaxis = None
