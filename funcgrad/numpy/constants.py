"""funcgrad.numpy constants: ``pi``, ``e``, ``inf``, ``nan``, ``euler_gamma`` and ``newaxis``
(NumPy's values: plain Python floats and ``None``, so they stay weak in arithmetic).

Layer: surface. Imports only numpy.

>>> import funcgrad.numpy as fnp
>>> fnp.pi == 3.141592653589793, fnp.newaxis is None
(True, True)
"""

from __future__ import annotations

import numpy as np

__all__ = ["e", "euler_gamma", "inf", "nan", "newaxis", "pi"]

pi = np.pi
e = np.e
inf = np.inf
nan = np.nan
euler_gamma = np.euler_gamma
newaxis = None
