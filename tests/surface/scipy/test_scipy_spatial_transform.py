"""funcgrad.scipy.spatial.transform (Rotation, Slerp) against scipy.spatial.transform and
jax.scipy.spatial.transform: every conversion, composition, application, mean and interpolation,
with derivatives against finite differences, jit against eager, vmap against a loop, and the errors
for bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation as SR
from scipy.spatial.transform import Slerp as SSlerp

import funcgrad
import funcgrad.scipy
from funcgrad.scipy.spatial.transform import Rotation, Slerp
from funcgrad.testing import check_grads

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax.scipy.spatial.transform import Rotation as JR  # noqa: E402

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

RNG = np.random.default_rng(0)
QUATS = SR.random(7, random_state=1).as_quat()
SEQS = ["xyz", "zyx", "XYZ", "ZXY", "xyx", "zxz", "YXY", "ZYZ"]


def _same_rotation(q1, q2, atol=1e-10):
    """Quaternions q and -q are the same rotation."""
    q1, q2 = np.asarray(q1), np.asarray(q2)
    close = np.isclose(q1, q2, atol=atol).all(-1) | np.isclose(q1, -q2, atol=atol).all(-1)
    assert close.all(), (q1, q2)


def test_quaternion_round_trips_and_conversions_match_scipy():
    r, s = Rotation.from_quat(QUATS * 2.0), SR.from_quat(QUATS)  # from_quat normalises
    np.testing.assert_allclose(np.asarray(r.as_quat()), QUATS, atol=1e-12)
    np.testing.assert_allclose(np.asarray(r.as_matrix()), s.as_matrix(), atol=1e-12)
    np.testing.assert_allclose(np.asarray(r.as_rotvec()), s.as_rotvec(), atol=1e-12)
    np.testing.assert_allclose(np.asarray(r.as_rotvec(degrees=True)), s.as_rotvec(degrees=True), atol=1e-10)
    np.testing.assert_allclose(np.asarray(r.as_mrp()), s.as_mrp(), atol=1e-12)
    np.testing.assert_allclose(np.asarray(r.magnitude()), s.magnitude(), atol=1e-12)
    np.testing.assert_allclose(np.asarray(r.as_quat(canonical=True)), s.as_quat(canonical=True), atol=1e-12)
    np.testing.assert_allclose(
        np.asarray(r.as_quat(scalar_first=True)), s.as_quat(scalar_first=True), atol=1e-12
    )
    first = Rotation.from_quat(s.as_quat(scalar_first=True), scalar_first=True)
    np.testing.assert_allclose(np.asarray(first.as_quat()), QUATS, atol=1e-12)
    _same_rotation(Rotation.from_matrix(s.as_matrix()).as_quat(), QUATS)
    _same_rotation(Rotation.from_rotvec(s.as_rotvec()).as_quat(), QUATS)
    _same_rotation(Rotation.from_rotvec(s.as_rotvec(degrees=True), degrees=True).as_quat(), QUATS)
    _same_rotation(Rotation.from_mrp(s.as_mrp()).as_quat(), QUATS)
    # Each matrix case of Shepperd's method: the trace and each diagonal entry being the largest.
    cases = [np.eye(3)] + [SR.from_rotvec(v).as_matrix() for v in ([3.0, 0, 0], [0, 3.0, 0.1], [0.1, 0, 3.0])]
    for m in cases:
        _same_rotation(Rotation.from_matrix(m).as_quat(), SR.from_matrix(m).as_quat())


def test_small_angles_use_the_series():
    for v in ([1e-5, -2e-5, 3e-6], [0.0, 0.0, 0.0], [2e-3, 0.0, 0.0]):
        s = SR.from_rotvec(v)
        r = Rotation.from_rotvec(np.array(v))
        np.testing.assert_allclose(np.asarray(r.as_quat()), s.as_quat(), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(np.asarray(r.as_rotvec()), s.as_rotvec(), rtol=1e-10, atol=1e-15)
        np.testing.assert_allclose(float(r.magnitude()), s.magnitude(), rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("seq", SEQS)
def test_euler_angles_match_scipy_and_jax(seq):
    angles = RNG.uniform(-np.pi, np.pi, size=(6, 3))
    angles[:, 1] = RNG.uniform(0.1, np.pi - 0.1, 6) if seq[0] == seq[2] else RNG.uniform(-1.4, 1.4, 6)
    r, s = Rotation.from_euler(seq, angles), SR.from_euler(seq, angles)
    np.testing.assert_allclose(np.asarray(r.as_quat()), s.as_quat(), atol=1e-12)
    np.testing.assert_allclose(np.asarray(r.as_euler(seq)), s.as_euler(seq), atol=1e-10)
    np.testing.assert_allclose(
        np.asarray(r.as_euler(seq, degrees=True)), s.as_euler(seq, degrees=True), atol=1e-8
    )
    # The other sequences of the same rotations, and JAX's values.
    for other in ("xzy", "YZX", "yzy"):
        np.testing.assert_allclose(np.asarray(r.as_euler(other)), s.as_euler(other), atol=1e-10)
        theirs = JR.from_quat(jnp.asarray(s.as_quat())).as_euler(other)
        np.testing.assert_allclose(np.asarray(r.as_euler(other)), np.asarray(theirs), atol=1e-10)
    d = Rotation.from_euler(seq, np.rad2deg(angles[0]), degrees=True)
    np.testing.assert_allclose(np.asarray(d.as_quat()), s[0].as_quat(), atol=1e-12)


@pytest.mark.filterwarnings("ignore:Gimbal lock")
def test_euler_gimbal_lock_sets_the_third_angle_to_zero_as_scipy():
    for seq in ("xyz", "XYZ", "zxz", "ZXZ"):
        middle = 0.0 if seq[0] == seq[2] else np.pi / 2
        for m in (middle, middle + (np.pi if seq[0] == seq[2] else -np.pi)):
            s = SR.from_euler(seq, [0.3, m, 0.2])
            ours = Rotation.from_quat(s.as_quat()).as_euler(seq)
            np.testing.assert_allclose(np.asarray(ours), s.as_euler(seq), atol=1e-7)


def test_single_axis_euler_and_two_axes():
    s = SR.from_euler("z", [[0.3], [-1.0]])  # one angle per axis of seq on the last axis, as SciPy
    r = Rotation.from_euler("z", np.array([[0.3], [-1.0]]))
    np.testing.assert_allclose(np.asarray(r.as_quat()), s.as_quat(), atol=1e-12)
    assert Rotation.from_euler("z", 0.3).single
    np.testing.assert_allclose(
        np.asarray(Rotation.from_euler("XY", [0.3, 0.5]).as_quat()),
        SR.from_euler("XY", [0.3, 0.5]).as_quat(),
        atol=1e-12,
    )


def test_composition_inverse_apply_and_indexing():
    a, b = SR.from_quat(QUATS), SR.from_quat(np.roll(QUATS, 1, axis=0))
    ra, rb = Rotation.from_quat(QUATS), Rotation.from_quat(np.roll(QUATS, 1, axis=0))
    _same_rotation((ra * rb).as_quat(), (a * b).as_quat())
    _same_rotation(ra.inv().as_quat(), a.inv().as_quat())
    _same_rotation((ra * ra.inv()).as_quat(), np.tile([0, 0, 0, 1.0], (7, 1)))
    v = RNG.normal(size=(7, 3))
    np.testing.assert_allclose(np.asarray(ra.apply(v)), a.apply(v), atol=1e-12)
    np.testing.assert_allclose(np.asarray(ra.apply(v, inverse=True)), a.apply(v, inverse=True), atol=1e-12)
    np.testing.assert_allclose(
        np.asarray(ra.apply(v[0])), a.apply(v[0]), atol=1e-12
    )  # N rotations, one vector
    np.testing.assert_allclose(
        np.asarray(ra[2].apply(v)), a[2].apply(v), atol=1e-12
    )  # one rotation, N vectors
    assert len(ra) == 7 and not ra.single and ra[3].single and len(ra[1:4]) == 3
    np.testing.assert_allclose(np.asarray(ra[np.array([0, 2])].as_quat()), QUATS[[0, 2]])
    both = Rotation.concatenate([ra[0], ra[1:3], Rotation.identity()])
    np.testing.assert_allclose(np.asarray(both.as_quat()), np.concatenate([QUATS[:3], [[0, 0, 0, 1.0]]]))
    np.testing.assert_allclose(np.asarray(Rotation.identity(3).as_quat()), SR.identity(3).as_quat())
    assert Rotation.identity(dtype=np.float32).quat.dtype == np.float32
    # Against JAX: composition and application.
    ja = JR.from_quat(jnp.asarray(QUATS))
    jb = JR.from_quat(jnp.asarray(np.roll(QUATS, 1, axis=0)))
    np.testing.assert_allclose(np.asarray((ra * rb).as_quat()), np.asarray((ja * jb).as_quat()), atol=1e-12)
    np.testing.assert_allclose(np.asarray(ra.apply(v)), np.asarray(ja.apply(v)), atol=1e-12)


def test_mean_matches_scipy():
    r, s = Rotation.from_quat(QUATS), SR.from_quat(QUATS)
    _same_rotation(r.mean().as_quat(), s.mean().as_quat())
    w = RNG.uniform(0.1, 2.0, 7)
    _same_rotation(r.mean(w).as_quat(), s.mean(w).as_quat())
    close = SR.from_rotvec(0.1 * RNG.normal(size=(5, 3)))
    np.testing.assert_allclose(
        np.asarray(Rotation.from_quat(close.as_quat()).mean().as_matrix()),
        close.mean().as_matrix(),
        atol=1e-12,
    )


def test_random_rotations_are_unit_and_uniform():
    r = Rotation.random(funcgrad.random.PRNGKey(0), 4000)
    q = np.asarray(r.as_quat())
    np.testing.assert_allclose(np.linalg.norm(q, axis=-1), 1.0, rtol=1e-12)
    # Haar measure: E[R] = 0 and the angle's density is (1 - cos t) / pi, with mean pi/2 + 2/pi.
    assert np.abs(np.asarray(r.as_matrix()).mean(0)).max() < 0.05
    assert abs(np.asarray(r.magnitude()).mean() - (np.pi / 2 + 2 / np.pi)) < 0.05
    assert Rotation.random(funcgrad.random.PRNGKey(1)).single


def test_slerp_matches_scipy():
    keys = SR.from_quat(QUATS[:4])
    times = np.array([0.0, 0.5, 2.0, 3.0])
    t = np.array([0.0, 0.2, 0.5, 1.3, 2.0, 2.9, 3.0])
    ours = Slerp.init(times, Rotation.from_quat(QUATS[:4]))
    _same_rotation(ours(t).as_quat(), SSlerp(times, keys)(t).as_quat())
    single = ours(1.3)
    assert single.single
    # Outside the key times it extrapolates the first or last interval at its angular speed.
    quarter = Slerp.init([0.0, 1.0], Rotation.from_euler("z", [[0.0], [90.0]], degrees=True))
    np.testing.assert_allclose(
        np.asarray(quarter(np.array([-1.0, 2.0])).as_euler("zyx", degrees=True))[:, 0],
        [-90.0, 180.0],
        atol=1e-9,
    )
    _same_rotation(single.as_quat(), SSlerp(times, keys)(1.3).as_quat())


def test_gradients_against_finite_differences():
    q = QUATS[:3]
    check_grads(lambda q: Rotation.from_quat(q).as_matrix(), (q,), order=2)
    check_grads(lambda q: Rotation.from_quat(q).as_rotvec(), (q,), order=1)
    check_grads(lambda v: Rotation.from_rotvec(v).as_quat(), (RNG.normal(size=(3, 3)),), order=2)
    check_grads(
        lambda a: Rotation.from_euler("zyx", a).as_euler("XYZ"), (RNG.uniform(-1, 1, (3, 3)),), order=1
    )
    check_grads(lambda m: Rotation.from_matrix(m).as_quat(), (SR.from_quat(q).as_matrix(),), order=1)
    check_grads(lambda q, v: Rotation.from_quat(q).apply(v), (q, RNG.normal(size=(3, 3))), order=1)
    check_grads(lambda p: Rotation.from_mrp(p).as_mrp(), (0.3 * RNG.normal(size=(3, 3)),), order=1)
    check_grads(
        lambda t: Slerp.init([0.0, 1.0, 2.0], Rotation.from_quat(q))(t).as_quat(),
        (np.array([0.3, 1.6]),),
        order=1,
    )
    # At the identity the series keep derivatives finite: d rotvec / d (x, y, z) is 2.
    g = funcgrad.jacfwd(lambda v: Rotation.from_rotvec(v).as_rotvec())(np.zeros(3))
    np.testing.assert_allclose(np.asarray(g), np.eye(3), atol=1e-12)
    assert np.isfinite(
        np.asarray(funcgrad.grad(lambda v: Rotation.from_rotvec(v).magnitude())(np.zeros(3)))
    ).all()


def test_jit_vmap_and_pytree():
    def f(q, v):
        r = Rotation.from_quat(q)
        return (r * r).apply(v), r.as_euler("zyx")

    q, v = QUATS, RNG.normal(size=(7, 3))
    eager = f(q, v)
    jitted = funcgrad.jit(f)(q, v)
    for a, b in zip(jitted, eager):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-12)
    batched = funcgrad.vmap(f)(q, v)
    loop = [f(qi, vi) for qi, vi in zip(q, v)]
    for i in range(2):
        np.testing.assert_allclose(
            np.asarray(batched[i]), np.stack([np.asarray(o[i]) for o in loop]), atol=1e-12
        )
    # A Rotation (and a Slerp) crosses jit as an argument and comes back as a result.
    r = funcgrad.jit(lambda r: r.inv())(Rotation.from_quat(q))
    assert isinstance(r, Rotation)
    np.testing.assert_allclose(np.asarray(r.as_quat()), np.asarray(Rotation.from_quat(q).inv().as_quat()))
    s = Slerp.init([0.0, 1.0], Rotation.from_quat(q[:2]))
    out = funcgrad.jit(lambda s, t: s(t).as_quat())(s, np.array([0.25, 0.75]))
    np.testing.assert_allclose(np.asarray(out), np.asarray(s(np.array([0.25, 0.75])).as_quat()), atol=1e-12)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="mixed"):
        Rotation.from_euler("xY", [0.1, 0.2])
    with pytest.raises(ValueError, match="consecutive axes must differ"):
        Rotation.from_euler("xxy", [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="string of 1 or 2 or 3 axes"):
        Rotation.from_euler("xyzx", [0.1] * 4)
    with pytest.raises(ValueError, match="string of 3 axes"):
        Rotation.identity().as_euler("xy")
    with pytest.raises(ValueError, match="3 entries on the last axis.*\\(2,\\)"):
        Rotation.from_euler("xyz", [0.1, 0.2])
    with pytest.raises(ValueError, match="shape \\(N, 1\\)"):
        Rotation.from_euler("z", [0.1, 0.2])
    with pytest.raises(ValueError, match="from_quat: expected an array of shape \\(\\.\\.\\., 4\\)"):
        Rotation.from_quat([1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="from_matrix: expected shape \\(\\.\\.\\., 3, 3\\)"):
        Rotation.from_matrix(np.eye(4))
    with pytest.raises(TypeError, match="not subscriptable"):
        Rotation.identity()[0]
    with pytest.raises(TypeError, match="no len"):
        len(Rotation.identity())
    with pytest.raises(ValueError, match="weights must be 1-d with one value per rotation \\(7\\)"):
        Rotation.from_quat(QUATS).mean(np.ones(3))
    with pytest.raises(TypeError, match="rotations must be a Rotation"):
        Slerp.init([0.0, 1.0], QUATS[:2])
    with pytest.raises(ValueError, match="at least 2 rotations"):
        Slerp.init([0.0], Rotation.from_quat(QUATS[:1]))
    with pytest.raises(ValueError, match="one time per rotation \\(3\\)"):
        Slerp.init([0.0, 1.0], Rotation.from_quat(QUATS[:3]))
    with pytest.raises(TypeError, match="expected Rotation objects"):
        Rotation.concatenate([Rotation.identity(), QUATS])


def test_namespace():
    assert funcgrad.scipy.spatial.transform.Rotation is Rotation


def test_inverse_and_slerp_under_rank_promotion_raise():
    # inv() broadcast a (4,) sign against (n, 4) quaternions, which jax_numpy_rank_promotion='raise'
    # (JAX's test default) refused; JAX's scipy_spatial_test testRotationInv/testSlerp
    q = np.random.default_rng(4).normal(size=(3, 4))
    with funcgrad.numpy_rank_promotion("raise"):
        r = Rotation.from_quat(q)
        np.testing.assert_allclose((r * r.inv()).magnitude(), np.zeros(3), atol=1e-7)
