"""``funcgrad.scipy.spatial``: ``transform`` (``Rotation``, ``Slerp``), like ``jax.scipy.spatial``.

Layer: surface. Imports funcgrad.scipy.spatial.transform.

>>> import numpy as np
>>> r = transform.Rotation.from_rotvec([0.0, 0.0, np.pi / 2])
>>> np.round(np.asarray(r.apply([1.0, 0.0, 0.0])), 6).tolist()
[0.0, 1.0, 0.0]
"""

from funcgrad.scipy.spatial import transform

__all__ = ["transform"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
