"""``funcgrad.scipy.spatial.transform``: ``Rotation`` and ``Slerp``, rotations in three
dimensions as in ``jax.scipy.spatial.transform``.

Layer: surface. Imports funcgrad.numpy and funcgrad.random.

A ``Rotation`` holds unit quaternions ``quat`` in SciPy's scalar-last order ``(x, y, z, w)``: shape
``(4,)`` for a single rotation, ``(N, 4)`` for N of them. Both classes are named tuples, hence
pytrees: they pass through ``jit``, ``vmap`` and ``grad``, and every conversion is differentiable
(the rotation-vector and magnitude formulas switch to their Taylor series near the identity, so
derivatives there are finite). Every formula works on the last axis, so a batch of rotations is a
batch of quaternions.

Decisions where JAX and SciPy differ: ``as_euler`` keeps an angle of exactly pi as SciPy does (JAX
wraps it to -pi); ``identity(num)`` and ``random(key, num)`` give ``num`` rotations as in SciPy
(JAX has neither); ``concatenate`` accepts single rotations as SciPy does; ``Slerp`` is built
with ``Slerp.init`` (JAX's spelling, a named tuple cannot take SciPy's constructor) and
extrapolates from the first or last interval for times outside the key times (SciPy raises; a
traced time cannot).

>>> import numpy as np
>>> r = Rotation.from_euler("z", 90, degrees=True)
>>> np.round(np.asarray(r.apply([1.0, 0.0, 0.0])), 6).tolist()
[0.0, 1.0, 0.0]
"""

from __future__ import annotations

import re
import typing

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import random as frandom
from funcgrad.kernel import dtypes as _dt

__all__ = ["Rotation", "Slerp"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


# ----------------------------------------------------------------------------------------------
# Quaternion formulas on the last axis


def _float(x):
    x = fnp.asarray(x)
    return x.astype(_dt.default_float) if x.dtype.kind in "biu" else x


def _last(x, n: int, what: str):
    x = _float(x)
    if x.ndim == 0 or x.shape[-1] != n:
        raise ValueError(f"Rotation.{what}: expected an array of shape (..., {n}), got shape {x.shape}")
    return x


def _safe_norm(v):
    """``|v|`` on the last axis with a zero (not NaN) derivative at ``v = 0``."""
    sq = fnp.sum(v * v, axis=-1)
    nonzero = sq > 0
    return fnp.where(nonzero, fnp.sqrt(fnp.where(nonzero, sq, 1.0)), 0.0)


def _normalize(q):
    return q / fnp.sqrt(fnp.sum(q * q, axis=-1, keepdims=True))


def _compose(p, q):
    """The Hamilton product ``p q``: the rotation ``q`` followed by ``p``."""
    pv, pw, qv, qw = p[..., :3], p[..., 3:], q[..., :3], q[..., 3:]
    vector = pw * qv + qw * pv + fnp.cross(pv, qv)
    scalar = pw * qw - fnp.sum(pv * qv, axis=-1, keepdims=True)
    return fnp.concatenate([vector, scalar], axis=-1)


def _as_matrix(q):
    x, y, z, w = (q[..., i] for i in range(4))
    rows = [
        [x * x - y * y - z * z + w * w, 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), -x * x + y * y - z * z + w * w, 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), -x * x - y * y + z * z + w * w],
    ]
    return fnp.stack([fnp.stack(row, axis=-1) for row in rows], axis=-2)


def _from_matrix(m):
    # Shepperd's method, as SciPy: of the four algebraically equal formulas, the one dividing by
    # the largest of (m00, m11, m22, trace) is the best conditioned.
    diag = [m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]]
    trace = diag[0] + diag[1] + diag[2]
    candidates = []
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        c = [None] * 4
        c[i] = 1 - trace + 2 * m[..., i, i]
        c[j] = m[..., j, i] + m[..., i, j]
        c[k] = m[..., k, i] + m[..., i, k]
        c[3] = m[..., k, j] - m[..., j, k]
        candidates.append(fnp.stack(c, axis=-1))
    candidates.append(
        fnp.stack(
            [
                m[..., 2, 1] - m[..., 1, 2],
                m[..., 0, 2] - m[..., 2, 0],
                m[..., 1, 0] - m[..., 0, 1],
                1 + trace,
            ],
            -1,
        )
    )
    choice = fnp.argmax(fnp.stack([*diag, trace], axis=-1), axis=-1)
    stacked = fnp.stack(candidates, axis=-2)  # (..., 4 formulas, 4 components)
    quat = fnp.take_along_axis(stacked, choice[..., None, None], axis=-2)[..., 0, :]
    return _normalize(quat)


def _from_rotvec(v, degrees: bool):
    if degrees:
        v = fnp.deg2rad(v)
    angle2 = fnp.sum(v * v, axis=-1, keepdims=True)
    small = angle2 <= 1e-6  # angle <= 1e-3: the Taylor series, exact to double precision there
    angle = fnp.sqrt(fnp.where(small, 1.0, angle2))
    scale = fnp.where(small, 0.5 - angle2 / 48 + angle2 * angle2 / 3840, fnp.sin(angle / 2) / angle)
    w = fnp.where(small, 1 - angle2 / 8 + angle2 * angle2 / 384, fnp.cos(angle / 2))
    return fnp.concatenate([scale * v, w], axis=-1)


def _as_rotvec(q, degrees: bool):
    q = fnp.where(q[..., 3:] < 0, -q, q)  # w >= 0: the angle lies in [0, pi]
    angle = (2 * fnp.arctan2(_safe_norm(q[..., :3]), q[..., 3]))[..., None]
    angle2 = angle * angle
    small = angle <= 1e-3
    safe = fnp.where(small, 1.0, angle)
    scale = fnp.where(small, 2 + angle2 / 12 + 7 * angle2 * angle2 / 2880, safe / fnp.sin(safe / 2))
    rotvec = scale * q[..., :3]
    return fnp.rad2deg(rotvec) if degrees else rotvec


def _as_mrp(q):
    sign = fnp.where(q[..., 3:] < 0, -1.0, 1.0)
    return sign * q[..., :3] / (1 + sign * q[..., 3:])


def _from_mrp(p):
    n2 = fnp.sum(p * p, axis=-1, keepdims=True)
    return fnp.concatenate([2 * p, 1 - n2], axis=-1) / (1 + n2)


def _canonical(q):
    # SciPy's canonical sign: w > 0, or the first nonzero of (w, x, y, z) positive.
    neg, zero = q < 0, q == 0
    flip = neg[..., 3] | (
        zero[..., 3] & (neg[..., 0] | (zero[..., 0] & (neg[..., 1] | (zero[..., 1] & neg[..., 2]))))
    )
    return fnp.where(flip[..., None], -q, q)


def _elementary(axis: int, angle):
    parts = [fnp.zeros_like(angle)] * 3 + [fnp.cos(angle / 2)]
    parts[axis] = fnp.sin(angle / 2)
    return fnp.stack(parts, axis=-1)


_AXES = {"x": 0, "y": 1, "z": 2}


def _parse_seq(seq: str, what: str, lengths: tuple[int, ...]) -> tuple[list[int], bool]:
    """The axis indices of an Euler sequence and whether it is extrinsic (lower case)."""
    if not isinstance(seq, str) or len(seq) not in lengths:
        raise ValueError(
            f"Rotation.{what}: seq must be a string of {' or '.join(map(str, lengths))} axes, got {seq!r}"
        )
    extrinsic = re.fullmatch("[xyz]+", seq) is not None
    if not (extrinsic or re.fullmatch("[XYZ]+", seq)):
        raise ValueError(
            f"Rotation.{what}: seq must use the axes 'xyz' (extrinsic) or 'XYZ' (intrinsic), "
            f"not mixed; got {seq!r}"
        )
    if any(a == b for a, b in zip(seq, seq[1:])):
        raise ValueError(f"Rotation.{what}: consecutive axes must differ, got {seq!r}")
    return [_AXES[c] for c in seq.lower()], extrinsic


def _euler_from_quat(q, axes: list[int], extrinsic: bool):
    # Bernardes & Viollet (2022), "Quaternion to Euler angles conversion: a direct, general and
    # computationally efficient method", as SciPy; the degenerate cases (gimbal lock) set the
    # third angle to zero as SciPy does.
    if not extrinsic:
        axes = axes[::-1]
    i, j, k = axes
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2
    qw = q[..., 3]
    if symmetric:
        a, b, c, d = qw, q[..., i], q[..., j], q[..., k] * sign
    else:
        a, b, c, d = (
            qw - q[..., j],
            q[..., i] + q[..., k] * sign,
            q[..., j] + qw,
            q[..., k] * sign - q[..., i],
        )
    middle = 2 * fnp.arctan2(fnp.hypot(c, d), fnp.hypot(a, b))
    eps = 1e-7
    at_zero, at_pi = fnp.abs(middle) <= eps, fnp.abs(middle - np.pi) <= eps
    half_sum, half_diff = fnp.arctan2(b, a), fnp.arctan2(d, c)
    degenerate = at_zero | at_pi
    lock = fnp.where(at_zero, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
    first, third = half_sum - half_diff, half_sum + half_diff
    if not extrinsic:
        first, third = third, first
    zero = fnp.zeros_like(middle)
    angle0 = fnp.where(degenerate, lock, first)
    angle2 = fnp.where(degenerate, zero, third)
    if not symmetric:
        if extrinsic:
            angle2 = angle2 * sign
        else:
            angle0 = angle0 * sign
        middle = middle - np.pi / 2
    # The outer angles into [-pi, pi] as SciPy (one turn suffices: they lie in [-2 pi, 2 pi]); the
    # middle one is in range by construction. JAX wraps all three to [-pi, pi), turning pi to -pi.
    outer = [
        fnp.where(a < -np.pi, a + 2 * np.pi, fnp.where(a > np.pi, a - 2 * np.pi, a)) for a in (angle0, angle2)
    ]
    return fnp.stack([outer[0], middle, outer[1]], axis=-1)


# ----------------------------------------------------------------------------------------------
# The classes


class Rotation(typing.NamedTuple):
    """Rotation(s) in three dimensions, stored as unit quaternions ``quat`` (scalar last). Build
    one with a ``from_*`` constructor, ``identity`` or ``random``; compose with ``*`` (``(p * q)``
    applies ``q`` first), invert with ``inv``, rotate vectors with ``apply``.

    >>> import numpy as np
    >>> r = Rotation.from_euler("z", 90, degrees=True)
    >>> np.round(np.asarray(r.as_rotvec()), 6).tolist()
    [0.0, 0.0, 1.570796]
    >>> r2 = Rotation.from_euler("x", 90, degrees=True)
    >>> np.round(np.asarray((r * r2).as_matrix()), 6) + 0.0  # + 0.0: no negative zeros
    array([[0., 0., 1.],
           [1., 0., 0.],
           [0., 1., 0.]])
    """

    quat: typing.Any

    @classmethod
    def concatenate(cls, rotations: typing.Sequence[Rotation]) -> Rotation:
        """The rotations of a sequence of ``Rotation`` objects (single or not) as one.

        >>> len(Rotation.concatenate([Rotation.identity(), Rotation.identity(2)]))
        3
        """
        for r in rotations:
            if not isinstance(r, Rotation):
                raise TypeError(f"Rotation.concatenate: expected Rotation objects, got {type(r).__name__}")
        return cls(fnp.concatenate([fnp.atleast_2d(r.quat) for r in rotations]))

    @classmethod
    def from_euler(cls, seq: str, angles, degrees: bool = False) -> Rotation:
        """From Euler angles about the axes of ``seq``: up to three of ``"xyz"`` (extrinsic: fixed
        axes) or ``"XYZ"`` (intrinsic: the rotating frame's axes). ``angles``' last axis has one
        entry per axis of ``seq`` (a scalar for one axis).

        >>> import numpy as np
        >>> r = Rotation.from_euler("xyz", [90, 0, 0], degrees=True)
        >>> np.round(np.asarray(r.apply([0.0, 1.0, 0.0])), 6).tolist()
        [0.0, 0.0, 1.0]
        """
        axes, extrinsic = _parse_seq(seq, "from_euler", (1, 2, 3))
        angles = fnp.atleast_1d(_float(angles))
        if angles.shape[-1] != len(axes):
            raise ValueError(
                f"Rotation.from_euler: angles must have {len(axes)} entries on the last axis "
                f"for seq {seq!r}, "
                f"got shape {angles.shape}"
                + ("; for N rotations about one axis pass shape (N, 1)" if len(axes) == 1 else "")
            )
        if degrees:
            angles = fnp.deg2rad(angles)
        quat = _elementary(axes[0], angles[..., 0])
        for n, axis in enumerate(axes[1:], 1):
            step = _elementary(axis, angles[..., n])
            quat = _compose(step, quat) if extrinsic else _compose(quat, step)
        return cls(quat)

    @classmethod
    def from_matrix(cls, matrix) -> Rotation:
        """From rotation matrices, shape ``(3, 3)`` or ``(N, 3, 3)``; a matrix that is not quite
        orthogonal gives the nearest rotation's quaternion (SciPy's method)."""
        matrix = _float(matrix)
        if matrix.ndim < 2 or matrix.shape[-2:] != (3, 3):
            raise ValueError(f"Rotation.from_matrix: expected shape (..., 3, 3), got {matrix.shape}")
        return cls(_from_matrix(matrix))

    @classmethod
    def from_mrp(cls, mrp) -> Rotation:
        """From modified Rodrigues parameters ``axis * tan(angle / 4)``, shape ``(..., 3)``."""
        return cls(_from_mrp(_last(mrp, 3, "from_mrp")))

    @classmethod
    def from_quat(cls, quat, *, scalar_first: bool = False) -> Rotation:
        """From quaternions ``(x, y, z, w)`` (``(w, x, y, z)`` with ``scalar_first=True``), shape
        ``(4,)`` or ``(N, 4)``; they are normalised."""
        quat = _last(quat, 4, "from_quat")
        if scalar_first:
            quat = fnp.roll(quat, -1, axis=-1)
        return cls(_normalize(quat))

    @classmethod
    def from_rotvec(cls, rotvec, degrees: bool = False) -> Rotation:
        """From rotation vectors ``axis * angle``, shape ``(..., 3)``.

        >>> import numpy as np
        >>> np.round(np.asarray(Rotation.from_rotvec([0.0, 0.0, np.pi]).as_quat()), 6).tolist()
        [0.0, 0.0, 1.0, 0.0]
        """
        return cls(_from_rotvec(_last(rotvec, 3, "from_rotvec"), degrees))

    @classmethod
    def identity(cls, num: int | None = None, dtype=float) -> Rotation:
        """The identity rotation, or ``num`` of them."""
        quat = fnp.array([0.0, 0.0, 0.0, 1.0], dtype=dtype)
        return cls(quat if num is None else fnp.tile(quat, (num, 1)))

    @classmethod
    def random(cls, random_key, num: int | None = None) -> Rotation:
        """Rotations drawn uniformly (Haar measure): normalised standard normal 4-vectors.

        >>> import funcgrad
        >>> Rotation.random(funcgrad.random.PRNGKey(0), 5).quat.shape
        (5, 4)
        """
        shape = (4,) if num is None else (num, 4)
        return cls(_normalize(frandom.normal(random_key, shape)))

    def __getitem__(self, indexer) -> Rotation:
        """The rotation(s) at ``indexer`` (an int, a slice, an index array)."""
        if self.single:
            raise TypeError("Rotation: a single rotation is not subscriptable")
        return Rotation(self.quat[indexer])

    def __len__(self) -> int:
        """The number of rotations (a single rotation has no length, as in SciPy)."""
        if self.single:
            raise TypeError("Rotation: a single rotation has no len()")
        return self.quat.shape[0]

    def __mul__(self, other: Rotation) -> Rotation:
        """The composition: ``other`` applied first, then ``self``."""
        if not isinstance(other, Rotation):
            return NotImplemented
        return Rotation(_normalize(_compose(self.quat, other.quat)))

    def apply(self, vectors, inverse: bool = False):
        """``vectors`` (``(3,)`` or ``(N, 3)``) rotated; by the inverse with ``inverse=True``."""
        vectors = _last(vectors, 3, "apply")
        matrix = self.as_matrix()
        if inverse:
            matrix = fnp.swapaxes(matrix, -1, -2)
        return (matrix @ vectors[..., None])[..., 0]

    def as_euler(self, seq: str, degrees: bool = False):
        """Euler angles about the three axes of ``seq`` (as in ``from_euler``), in
        ``[-pi, pi]``; at gimbal lock the third angle is set to zero (SciPy's choice).

        >>> import numpy as np
        >>> r = Rotation.from_euler("zyx", [30.0, 20.0, 10.0], degrees=True)
        >>> np.round(np.asarray(r.as_euler("zyx", degrees=True)), 6).tolist()
        [30.0, 20.0, 10.0]
        """
        axes, extrinsic = _parse_seq(seq, "as_euler", (3,))
        angles = _euler_from_quat(self.quat, axes, extrinsic)
        return fnp.rad2deg(angles) if degrees else angles

    def as_matrix(self):
        """The rotation matrices, ``(3, 3)`` or ``(N, 3, 3)``."""
        return _as_matrix(self.quat)

    def as_mrp(self):
        """The modified Rodrigues parameters (of the rotation by at most pi)."""
        return _as_mrp(self.quat)

    def as_quat(self, canonical: bool = False, scalar_first: bool = False):
        """The quaternions; ``canonical=True`` picks the sign with ``w >= 0``; ``scalar_first``
        puts ``w`` first."""
        quat = _canonical(self.quat) if canonical else self.quat
        return fnp.roll(quat, 1, axis=-1) if scalar_first else quat

    def as_rotvec(self, degrees: bool = False):
        """The rotation vectors ``axis * angle`` with the angle in ``[0, pi]``."""
        return _as_rotvec(self.quat, degrees)

    def inv(self) -> Rotation:
        """The inverse rotation(s)."""
        # (the conjugate without broadcasting a (4,) sign against (n, 4): no implicit rank
        # promotion, which jax_numpy_rank_promotion='raise' refuses)
        q = self.quat
        return Rotation(fnp.concatenate([-q[..., :3], q[..., 3:]], axis=-1))

    def magnitude(self):
        """The rotation angle(s) in ``[0, pi]``."""
        return 2 * fnp.arctan2(_safe_norm(self.quat[..., :3]), fnp.abs(self.quat[..., 3]))

    def mean(self, weights=None) -> Rotation:
        """The (weighted) mean rotation: the quaternion maximising ``sum w_i (q . q_i)^2``, the
        top eigenvector of ``sum w_i q_i q_i^T`` (Markley et al. 2007, as SciPy).

        >>> import numpy as np
        >>> r = Rotation.from_euler("z", [[-10.0], [10.0]], degrees=True)
        >>> np.round(np.asarray(r.mean().magnitude()), 6).tolist()
        0.0
        """
        quat = fnp.atleast_2d(self.quat)
        if weights is None:
            w = fnp.ones(quat.shape[0], dtype=quat.dtype)
        else:
            w = fnp.asarray(weights).astype(quat.dtype)
        if w.ndim != 1 or w.shape[0] != quat.shape[0]:
            raise ValueError(
                f"Rotation.mean: weights must be 1-d with one value per rotation ({quat.shape[0]}), "
                f"got shape {w.shape}"
            )
        k = (w[:, None] * quat).T @ quat
        _, vectors = fnp.linalg.eigh(k)
        return Rotation(vectors[:, -1])

    @property
    def single(self) -> bool:
        """Whether this holds one rotation (``quat`` of shape ``(4,)``)."""
        return self.quat.ndim == 1


class Slerp(typing.NamedTuple):
    """Spherical linear interpolation between key rotations at increasing key times: at a time
    between two keys, the rotation turns at constant angular speed from one key to the next. Built
    with ``Slerp.init(times, rotations)``; call it with times (a scalar or a 1-d array).

    >>> import numpy as np
    >>> keys = Rotation.from_euler("z", [[0.0], [90.0]], degrees=True)
    >>> slerp = Slerp.init([0.0, 1.0], keys)
    >>> (np.round(np.asarray(slerp(0.5).as_euler("zyx", degrees=True)), 6) + 0.0).tolist()
    [45.0, 0.0, 0.0]
    """

    times: typing.Any
    timedelta: typing.Any
    rotations: Rotation
    rotvecs: typing.Any

    @classmethod
    def init(cls, times, rotations: Rotation) -> Slerp:
        """The interpolator through ``rotations`` (at least two) at the strictly increasing
        ``times`` (not checked: they may be traced)."""
        if not isinstance(rotations, Rotation):
            raise TypeError(f"Slerp.init: rotations must be a Rotation, got {type(rotations).__name__}")
        if rotations.single or len(rotations) < 2:
            raise ValueError("Slerp.init: rotations must hold at least 2 rotations")
        times = fnp.asarray(times).astype(rotations.quat.dtype)
        if times.ndim != 1 or times.shape[0] != len(rotations):
            raise ValueError(
                f"Slerp.init: times must be 1-d with one time per rotation ({len(rotations)}), "
                f"got shape {times.shape}"
            )
        start = Rotation(rotations.quat[:-1])
        steps = (start.inv() * Rotation(rotations.quat[1:])).as_rotvec()
        return cls(times=times, timedelta=fnp.diff(times), rotations=start, rotvecs=steps)

    def __call__(self, times) -> Rotation:
        """The interpolated rotation(s) at ``times`` (single for a scalar time)."""
        t = fnp.asarray(times).astype(self.times.dtype)
        if t.ndim > 1:
            raise ValueError(f"Slerp: times must be a scalar or 1-d, got shape {t.shape}")
        single = t.ndim == 0
        t = fnp.atleast_1d(t)
        index = fnp.clip(fnp.searchsorted(self.times, t) - 1, 0, self.timedelta.shape[0] - 1)
        alpha = (t - self.times[index]) / self.timedelta[index]
        result = self.rotations[index] * Rotation.from_rotvec(self.rotvecs[index] * alpha[:, None])
        return result[0] if single else result
