"""GradBench eval ``ba``: bundle adjustment residuals and their sparse Jacobian (benchmark code).

Each observation ``j`` sees point ``X[obs_j,1]`` through camera ``cams[obs_j,0]`` (11 parameters:
Rodrigues rotation, centre, focal length, principal point, two radial distortion terms) with
weight ``w_j``: a reprojection residual ``w_j (project(cam, X) - feat_j)`` (2 values) and a weight
residual ``1 - w_j^2``. The Jacobian is block sparse: the two rows of observation ``j`` depend only
on its camera's 11, its point's 3 and its own weight. The residual is written on components (one
array per parameter, over all observations), so one forward-mode ``jvp`` per parameter gives that
column of every observation's dense 2x15 block at once (compressed forward mode: 15 ``jvp``s in
all, whatever the number of observations); the blocks are assembled into GradBench's
compressed-row layout (``rows`` offsets, ``cols``, ``vals``) inside the compiled program.
(A ``vmap`` over observations of ``jacfwd`` of the 3-vector formulation computes the same and
validates, but ran 4-10x slower on XLA's CPU backend: its tiny trailing dimensions of 3 and 15 do
not vectorise.) GradBench compares the first 30 entries and the last of each array.
"""

import numpy as np

import funcgrad
import funcgrad.numpy as jnp
from funcgrad_tool.runs import evaluation

N_CAM = 11


def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def reproj_error(cam, X, w, feat):
    """The weighted reprojection residual, written on components: ``cam`` is 11 arrays, ``X`` 3,
    ``feat`` 2, all of one shape (here: one entry per observation), so every step is elementwise
    over the observations and XLA fuses the whole function into a few loops."""
    rot, centre = cam[0:3], cam[3:6]
    Xc = tuple(x - c for x, c in zip(X, centre))
    sq = rot[0] * rot[0] + rot[1] * rot[1] + rot[2] * rot[2]
    nonzero = sq != 0.0
    theta = jnp.sqrt(jnp.where(nonzero, sq, 1.0))  # safe: no NaN derivative at rot = 0
    k = tuple(r / theta for r in rot)
    cos, sin = jnp.cos(theta), jnp.sin(theta)
    kx = _cross(k, Xc)
    dot = (k[0] * Xc[0] + k[1] * Xc[1] + k[2] * Xc[2]) * (1.0 - cos)
    small = _cross(rot, Xc)  # first-order rotation when the angle is zero
    Xcam = tuple(
        jnp.where(nonzero, x * cos + c * sin + kk * dot, x + sm) for x, c, kk, sm in zip(Xc, kx, k, small)
    )
    p0, p1 = Xcam[0] / Xcam[2], Xcam[1] / Xcam[2]
    rsq = p0 * p0 + p1 * p1
    distortion = 1.0 + cam[9] * rsq + cam[10] * rsq * rsq
    f = cam[6]
    return (w * (p0 * distortion * f + cam[7] - feat[0]), w * (p1 * distortion * f + cam[8] - feat[1]))


def _columns(cams, X, obs):
    # gather from the transposed tables: each parameter's values over the observations contiguous
    cam = cams.T[:, obs[:, 0]]  # (11, p)
    pt = X.T[:, obs[:, 1]]  # (3, p)
    return tuple(cam[i] for i in range(N_CAM)), tuple(pt[i] for i in range(3))


def _objective(cams, X, w, feats, obs):
    cam, pt = _columns(cams, X, obs)
    r0, r1 = reproj_error(cam, pt, w, (feats[:, 0], feats[:, 1]))
    return jnp.stack([r0, r1], axis=1).reshape(-1), 1.0 - w * w


def _jacobian(cams, X, w, feats, obs):
    """Forward mode, one ``jvp`` per parameter of an observation (11 camera, 3 point, 1 weight),
    each over all observations at once: the residual of observation j depends only on its own
    parameters, so seeding one parameter of every observation with 1 gives that column of every
    observation's 2x15 block (compressed forward mode); XLA shares the primal work."""
    n, m, p = cams.shape[0], X.shape[0], w.shape[0]
    cam, pt = _columns(cams, X, obs)
    feat = (feats[:, 0], feats[:, 1])
    params = cam + pt + (w,)
    ones = jnp.ones_like(w)

    def residual(params):
        return reproj_error(params[:N_CAM], params[N_CAM : N_CAM + 3], params[-1], feat)

    cols = []
    for i in range(len(params)):
        f = lambda xi, i=i: residual(params[:i] + (xi,) + params[i + 1 :])  # noqa: E731
        cols.append(jnp.stack(funcgrad.jvp(f, (params[i],), (ones,))[1], axis=1))  # (p, 2)
    J = jnp.stack(cols, axis=2)  # (p, 2, 15): camera (11), point (3), weight (1)
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
