"""The threefry2x32 block cipher on uint32 arrays, written with ``add``/``xor``/shift primitives
(so it runs eagerly with NumPy, staged under jit, and vectorises under vmap): the hash under every
threefry bit stream, partitionable (``_core``) and original (``_threefry_original``).

Layer: surface. Imports the primitive catalog (elementwise, structure) only.
"""

from __future__ import annotations

import numpy as np

from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import structure as st

_U32 = np.dtype(np.uint32)
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _u32(value) -> np.ndarray:
    return np.asarray(value, _U32)


def _rotate_left(x, r: int):
    return ew.or_p.bind(ew.shift_left_p.bind(x, _u32(r)), ew.shift_right_logical_p.bind(x, _u32(32 - r)))


def _threefry2x32(k0, k1, x0, x1):
    """The threefry2x32 block cipher (20 rounds) on uint32 arrays ``x0, x1`` with key ``(k0, k1)``.

    >>> [int(w) for w in _threefry2x32(_u32(0), _u32(0), _u32(0), _u32(0))]  # Random123's test vector
    [1797259609, 2579123966]
    """
    k2 = ew.xor_p.bind(ew.xor_p.bind(k0, k1), _u32(0x1BD11BDA))
    ks = (k0, k1, k2)
    x0 = ew.add_p.bind(x0, k0)
    x1 = ew.add_p.bind(x1, k1)
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = ew.add_p.bind(x0, x1)
            x1 = ew.xor_p.bind(_rotate_left(x1, r), x0)
        x0 = ew.add_p.bind(x0, ks[(i + 1) % 3])
        x1 = ew.add_p.bind(ew.add_p.bind(x1, ks[(i + 2) % 3]), _u32(i + 1))
    return x0, x1


def _key_halves(data):
    """The two uint32 words of one raw threefry key ``uint32[2]``.

    >>> [int(w) for w in _key_halves(np.array([0, 42], np.uint32))]
    [0, 42]
    """
    k0 = st.reshape(st.slice_(data, (0,), (1,)), ())
    k1 = st.reshape(st.slice_(data, (1,), (2,)), ())
    return k0, k1
