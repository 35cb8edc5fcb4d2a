"""The threefry2x32 block cipher on uint32 arrays, written with ``add``/``xor``/shift primitives
(so it runs eagerly with NumPy, staged under jit, and vectorises under vmap): the hash under every
threefry bit stream, partitionable (``_core``) and original (``_threefry_original``).

Layer: surface. Imports the primitive catalog (elementwise, structure) and, for the rolled rounds
(NOTE: [rolled threefry rounds]), funcgrad.lax's ``fori_loop``.

# NOTE: [rolled threefry rounds]
# The hash is written out as its 20 rounds, so XLA fuses it into whatever consumes the bits: one
# loop over the elements, with no intermediate array -- for bits, uniforms and float32 normals
# up to 12x less CPU time than jax's program, which runs the rounds as a loop of 5 steps (a pass
# over two uint32 arrays each) and the conversion after it (bench/bench_random.py's table). For
# float64 normals the fused loop is the slower one: the float64 ``erf_inv`` (a log1p and three
# polynomials, selected) in the same loop body as the 32-bit hash made XLA:CPU's loop 1.3x jax's
# (1e4-1e6 draws, one core). Inside ``rolled_rounds()`` the rounds run as JAX's loop of 5 steps
# instead (``fori_loop``, which XLA does not fuse into its consumer); float64 normals draw so
# (funcgrad/random/_core.py's ``_normal``): 0.09/1.26/12.6/60 ms for 1e4/1e5/1e6/4e6 draws against
# the fused loop's 0.15/1.8/16.9/67 and jax's 0.11/1.5/12.9/83 (CPU time, one core, load 16). So
# do, while traced, the float64 uniforms under a log/tan/erf_inv (``_core._uniform_for_transform``:
# exponential, gumbel, truncated_normal, cauchy, laplace, logistic, weibull_min, rayleigh; 1e6
# draws under jit: 1.17-1.55x jax's CPU time before, 0.94-1.02x after). Bits, uniforms and float32
# samplers keep the fused loop. The words are the same either way (the same additions, rotations
# and xors, in the same order).
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from funcgrad import lax
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import structure as st

_U32 = np.dtype(np.uint32)
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _u32(value) -> np.ndarray:
    return np.asarray(value, _U32)


def _rotate_left(x, r: int):
    return ew.or_p.bind(ew.shift_left_p.bind(x, _u32(r)), ew.shift_right_logical_p.bind(x, _u32(32 - r)))


_rolled = threading.local()  # .on: inside rolled_rounds() (per thread: tracing is per thread)


@contextlib.contextmanager
def rolled_rounds():
    """Within it, the hash runs its rounds as a loop of 5 steps (NOTE: [rolled threefry rounds]):
    the same words, a program XLA does not fuse into the bits' consumer.

    >>> with rolled_rounds():
    ...     [int(w) for w in _threefry2x32(_u32(0), _u32(0), _u32(0), _u32(0))]
    [1797259609, 2579123966]
    """
    before = getattr(_rolled, "on", False)
    _rolled.on = True
    try:
        yield
    finally:
        _rolled.on = before


def _threefry2x32(k0, k1, x0, x1):
    """The threefry2x32 block cipher (20 rounds) on uint32 arrays ``x0, x1`` with key ``(k0, k1)``.

    >>> [int(w) for w in _threefry2x32(_u32(0), _u32(0), _u32(0), _u32(0))]  # Random123's test vector
    [1797259609, 2579123966]
    """
    if getattr(_rolled, "on", False):
        return _threefry2x32_rolled(k0, k1, x0, x1)
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


def _threefry2x32_rolled(k0, k1, x0, x1):
    """``_threefry2x32`` as JAX's loop of 5 steps of 4 rounds each (NOTE: [rolled threefry rounds]):
    step ``i`` takes the rotations ``_ROTATIONS[i % 2]`` and adds the key words ``i + 1`` and
    ``i + 2`` (mod 3) and the step number, as the unrolled form does."""
    k2 = ew.xor_p.bind(ew.xor_p.bind(k0, k1), _u32(0x1BD11BDA))
    ks = st.concatenate([st.reshape(k, (1,)) for k in (k0, k1, k2)], 0)
    rotations = np.asarray(_ROTATIONS, _U32)
    shape = np.broadcast_shapes(np.shape(x0), np.shape(x1))  # (the loop's words keep one shape)
    x0, x1 = (w if np.shape(w) == shape else st.broadcast_in_dim(w, shape, ()) for w in (x0, x1))
    x0 = ew.add_p.bind(x0, k0)
    x1 = ew.add_p.bind(x1, k1)

    def step(i, words):
        y0, y1 = words
        parity = lax.rem(i, 2)
        for j in range(4):
            r = lax.dynamic_index_in_dim(lax.dynamic_index_in_dim(rotations, parity, 0, False), j, 0, False)
            y0 = ew.add_p.bind(y0, y1)
            y1 = ew.xor_p.bind(_rotate_left_by(y1, r), y0)
        y0 = ew.add_p.bind(y0, lax.dynamic_index_in_dim(ks, lax.rem(i + 1, 3), 0, False))
        y1 = ew.add_p.bind(y1, lax.dynamic_index_in_dim(ks, lax.rem(i + 2, 3), 0, False))
        return y0, ew.add_p.bind(y1, lax.convert_element_type(i + 1, _U32))

    return lax.fori_loop(0, 5, step, (x0, x1))


def _rotate_left_by(x, r):
    """``x`` rotated left by the traced amount ``r`` (uint32, 0 < r < 32)."""
    return ew.or_p.bind(
        ew.shift_left_p.bind(x, r), ew.shift_right_logical_p.bind(x, ew.sub_p.bind(_u32(32), r))
    )


def _key_halves(data):
    """The two uint32 words of one raw threefry key ``uint32[2]``.

    >>> [int(w) for w in _key_halves(np.array([0, 42], np.uint32))]
    [0, 42]
    """
    k0 = st.reshape(st.slice_(data, (0,), (1,)), ())
    k1 = st.reshape(st.slice_(data, (1,), (2,)), ())
    return k0, k1
