"""GradBench eval ``ba``: bundle adjustment residuals and their sparse Jacobian (benchmark code).

Each observation ``j`` sees point ``X[obs_j,1]`` through camera ``cams[obs_j,0]`` (11 parameters:
Rodrigues rotation, centre, focal length, principal point, two radial distortion terms) with
weight ``w_j``: a reprojection residual ``w_j (project(cam, X) - feat_j)`` (2 values) and a weight
residual ``1 - w_j^2``. The Jacobian is block sparse: the two rows of observation ``j`` depend only
on its camera's 11, its point's 3 and its own weight. The residual is written on components (one
array per parameter), and the Rodrigues rotation, a function of the camera alone, is computed once
per camera (n of them, not p) as a 3x3 matrix and gathered per observation as rows of one (n, 9)
table (gathered entry by entry, XLA fused the rotation's arithmetic into each gather and
recomputed its sin and cos per observation); every other parameter is gathered as its own
contiguous array (gathering rows of the (p, 11) table and reading its columns made every
column's loop read the whole table with a stride). One forward-mode
``jvp`` per parameter kind, seeding that parameter of every camera (point, observation) with 1,
gives that column of every observation's dense 2x15 block at once (compressed forward mode: 15
``jvp``s whatever the number of observations); the blocks are assembled into GradBench's
compressed-row layout (``rows`` offsets, ``cols``, ``vals``) inside the compiled program.
(A ``vmap`` over observations of ``jacfwd`` computes the same and validates, but ran 2.5-10x
slower on XLA's CPU backend: its tiny trailing dimensions of 3 and 15 do not vectorise.)
GradBench compares the first 30 entries and the last of each array.

Session 13, CPU time at ba8 (p = 383937, load 10-16): Jacobian 228-238 -> 141-162 ms (manual
115 ms), objective 17.4-18.8 -> 6.1-6.4 ms (manual 8.2 ms). What remains: XLA's CPU backend has no
multi-output fusion, so each of the 30 Jacobian columns is its own loop that recomputes the shared
primal arithmetic from the few values XLA materialises.
"""

import numpy as np

import funcgrad
import funcgrad.numpy as jnp
from funcgrad_tool.runs import evaluation

N_CAM = 11


def rotation(rot):
    """Rodrigues' rotation matrix of each camera, written on components: ``rot`` is 3 arrays (one
    value per camera), the result 9 (row major). ``R = cos I + sin [k]x + (1 - cos) k k^T`` with
    ``k = rot / |rot|``; at ``rot = 0`` the first-order ``I + [rot]x``, as the reference."""
    sq = rot[0] * rot[0] + rot[1] * rot[1] + rot[2] * rot[2]
    nonzero = sq != 0.0
    theta = jnp.sqrt(jnp.where(nonzero, sq, 1.0))  # safe: no NaN derivative at rot = 0
    k = tuple(r / theta for r in rot)
    cos, sin = jnp.cos(theta), jnp.sin(theta)
    one_minus_cos = 1.0 - cos
    # [v]x, the cross-product matrix: entry (i, j) is sign * v[index], zero on the diagonal
    cross = {
        (0, 1): (-1.0, 2),
        (0, 2): (1.0, 1),
        (1, 0): (1.0, 2),
        (1, 2): (-1.0, 0),
        (2, 0): (-1.0, 1),
        (2, 1): (1.0, 0),
    }
    R = []
    for i in range(3):
        for j in range(3):
            if i == j:
                full, small = cos + one_minus_cos * k[i] * k[i], 1.0
            else:
                sign, v = cross[i, j]
                full, small = one_minus_cos * k[i] * k[j] + sign * sin * k[v], sign * rot[v]
            R.append(jnp.where(nonzero, full, small))
    return tuple(R)


def reproj_error(R, cam, X, w, feat):
    """The weighted reprojection residual, written on components: ``R`` is the camera's rotation
    (9 arrays), ``cam`` its 11 parameters, ``X`` 3, ``feat`` 2, all of one shape (here: one entry
    per observation), so every step is elementwise over the observations and XLA fuses the whole
    function into a few loops."""
    Xc = tuple(x - c for x, c in zip(X, cam[3:6]))
    Xcam = tuple(R[3 * i] * Xc[0] + R[3 * i + 1] * Xc[1] + R[3 * i + 2] * Xc[2] for i in range(3))
    p0, p1 = Xcam[0] / Xcam[2], Xcam[1] / Xcam[2]
    rsq = p0 * p0 + p1 * p1
    distortion = 1.0 + cam[9] * rsq + cam[10] * rsq * rsq
    f = cam[6]
    return (w * (p0 * distortion * f + cam[7] - feat[0]), w * (p1 * distortion * f + cam[8] - feat[1]))


def residuals(cam, X, w, feats, obs):
    """All observations' reprojection residuals from the parameter tables, one array per
    component (``cam``: 11 arrays over the cameras, ``X``: 3 over the points). The rotation
    depends on the camera alone: it is computed once per camera (n of them) and gathered, like
    every other parameter, one contiguous array per component."""
    ci, pi = obs[:, 0], obs[:, 1]
    # the 9 entries as rows of one (n, 9) table, gathered once: gathered one by one, XLA fused the
    # rotation's arithmetic (sin, cos) into each gather, recomputing it per observation
    R_rows = jnp.stack(rotation(cam[0:3]), axis=1)[ci]  # (p, 9)
    R = tuple(R_rows[:, k] for k in range(9))
    return reproj_error(R, tuple(c[ci] for c in cam), tuple(x[pi] for x in X), w, (feats[:, 0], feats[:, 1]))


def _tables(cams, X):
    return tuple(cams.T[i] for i in range(N_CAM)), tuple(X.T[i] for i in range(3))


def _objective(cams, X, w, feats, obs):
    cam, pt = _tables(cams, X)
    r0, r1 = residuals(cam, pt, w, feats, obs)
    return jnp.stack([r0, r1], axis=1).reshape(-1), 1.0 - w * w


def _jacobian(cams, X, w, feats, obs):
    """Compressed forward mode on the parameter tables: one ``jvp`` per parameter kind (11
    camera, 3 point, 1 weight), seeding that parameter of every camera (point, observation) with
    1. The residual of observation j depends on one camera, one point and one weight, so the
    tangent of each residual is that column of observation j's 2x15 block, for all observations
    at once (15 ``jvp``s whatever the number of observations); the rotation's tangents are
    computed per camera. XLA shares the primal work."""
    n, m, p = cams.shape[0], X.shape[0], w.shape[0]
    cam, pt = _tables(cams, X)
    params = cam + pt + (w,)

    def residual(params):
        return residuals(params[:N_CAM], params[N_CAM : N_CAM + 3], params[-1], feats, obs)

    t0, t1 = [], []
    for i in range(len(params)):
        f = lambda xi, i=i: residual(params[:i] + (xi,) + params[i + 1 :])  # noqa: E731
        d0, d1 = funcgrad.jvp(f, (params[i],), (jnp.ones_like(params[i]),))[1]
        t0.append(d0)
        t1.append(d1)
    J = jnp.stack([jnp.stack(t0, axis=1), jnp.stack(t1, axis=1)], axis=1)  # (p, 2, 15)
    cam_cols = N_CAM * obs[:, 0:1] + jnp.arange(N_CAM, dtype=jnp.int32)
    pt_cols = N_CAM * n + 3 * obs[:, 1:2] + jnp.arange(3, dtype=jnp.int32)
    w_cols = (N_CAM * n + 3 * m + jnp.arange(p, dtype=jnp.int32))[:, None]
    block_cols = jnp.concatenate([cam_cols, pt_cols, w_cols], axis=1)  # (p, 15)
    cols = jnp.concatenate([jnp.broadcast_to(block_cols[:, None, :], (p, 2, 15)).reshape(-1), w_cols[:, 0]])
    vals = jnp.concatenate([J.reshape(-1), -2.0 * w])
    rows = jnp.concatenate(
        [15 * jnp.arange(2 * p + 1, dtype=jnp.int32), 30 * p + jnp.arange(1, p + 1, dtype=jnp.int32)]
    )
    return rows, cols, vals


_objective_jit = funcgrad.jit(_objective)
_jacobian_jit = funcgrad.jit(_jacobian)


def _pre(input):
    """Expand GradBench's one-camera, one-point description into the full problem, as the
    reference does: n cameras, m points, p observations assigned round robin."""
    n, m, p = input["n"], input["m"], input["p"]
    cams = np.tile(np.asarray(input["cam"], np.float64), (n, 1))
    X = np.tile(np.asarray(input["x"], np.float64), (m, 1))
    w = np.full(p, float(input["w"]))
    feats = np.tile(np.asarray(input["feat"], np.float64), (p, 1))
    obs = np.stack([np.arange(p) % n, np.arange(p) % m], axis=1).astype(np.int32)
    return tuple(funcgrad.device_put(a) for a in (cams, X, w, feats, obs))


def _post_objective(out):
    r, w_err = (np.asarray(a) for a in out)
    return {
        "reproj_error": {"elements": r[:2].tolist(), "repeated": len(r) // 2},
        "w_err": {"element": float(w_err[0]), "repeated": len(w_err)},
    }


def _post_jacobian(out):
    def dedup(a):
        a = np.asarray(a)
        return np.concatenate([a[:30], a[-1:]]).tolist()

    rows, cols, vals = out
    return {"rows": dedup(rows), "cols": dedup(cols), "vals": dedup(vals)}


@evaluation(pre=_pre, post=_post_objective)
def objective(cams, X, w, feats, obs):
    return _objective_jit(cams, X, w, feats, obs)


@evaluation(pre=_pre, post=_post_jacobian)
def jacobian(cams, X, w, feats, obs):
    return _jacobian_jit(cams, X, w, feats, obs)
