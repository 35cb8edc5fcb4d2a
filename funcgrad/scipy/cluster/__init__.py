"""``funcgrad.scipy.cluster``: ``vq`` (vector quantisation), like ``jax.scipy.cluster``.

Layer: surface. Imports funcgrad.scipy.cluster.vq.

>>> import funcgrad.numpy as fnp
>>> vq.vq(fnp.array([0.1, 2.9]), fnp.array([0.0, 1.0, 3.0]))[0].tolist()
[0, 2]
"""

from funcgrad.scipy.cluster import vq

__all__ = ["vq"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
