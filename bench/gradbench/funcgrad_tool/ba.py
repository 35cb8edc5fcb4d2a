"""GradBench eval ``ba``: bundle adjustment residuals and their sparse Jacobian (benchmark code).

Each observation ``j`` sees point ``X[obs_j,1]`` through camera ``cams[obs_j,0]`` (11 parameters:
Rodrigues rotation, centre, focal length, principal point, two radial distortion terms) with
weight ``w_j``: a reprojection residual ``w_j (project(cam, X) - feat_j)`` (2 values) and a weight
residual ``1 - w_j^2``. The Jacobian is block sparse: the two rows of observation ``j`` depend only
on its camera's 11, its point's 3 and its own weight, so it is ``vmap`` over the observations of
the dense 2x15 Jacobian of one residual (forward mode, ``jacfwd``: 15 tangents of a small
function), assembled into GradBench's compressed-row layout (``rows`` offsets, ``cols``, ``vals``)
inside the compiled program. GradBench compares the first 30 entries and the last of each array.
"""

import numpy as np

import funcgrad
import funcgrad.numpy as jnp

N_CAM = 11


def _rodrigues(rot, X):
    sq = jnp.sum(rot * rot)
    nonzero = sq != 0.0
    theta = jnp.sqrt(jnp.where(nonzero, sq, 1.0))  # safe: no NaN gradient at rot = 0
    w = rot / theta
    cos, sin = jnp.cos(theta), jnp.sin(theta)
    rotated = X * cos + jnp.cross(w, X) * sin + w * (jnp.dot(w, X) * (1.0 - cos))
    return jnp.where(nonzero, rotated, X + jnp.cross(rot, X))


def _project(cam, X):
    Xcam = _rodrigues(cam[0:3], X - cam[3:6])
    p = Xcam[0:2] / Xcam[2]
    rsq = jnp.sum(p * p)
    distorted = p * (1.0 + cam[9] * rsq + cam[10] * rsq * rsq)
    return distorted * cam[6] + cam[7:9]


def reproj_error(cam, X, w, feat):
    return w * (_project(cam, X) - feat)


def _objective(cams, X, w, feats, obs):
    r = funcgrad.vmap(reproj_error)(cams[obs[:, 0]], X[obs[:, 1]], w, feats)
    return r.reshape(-1), 1.0 - w * w


def _jacobian(cams, X, w, feats, obs):
    n, m, p = cams.shape[0], X.shape[0], w.shape[0]
    block = funcgrad.jacfwd(reproj_error, argnums=(0, 1, 2))
    Jc, Jx, Jw = funcgrad.vmap(block)(cams[obs[:, 0]], X[obs[:, 1]], w, feats)
    # per observation two rows of 15 values: camera (11), point (3), weight (1)
    J = jnp.concatenate([Jc, Jx, Jw[:, :, None]], axis=2)  # (p, 2, 15)
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


from funcgrad_tool.runs import evaluation  # noqa: E402


@evaluation(pre=_pre, post=_post_objective)
def objective(cams, X, w, feats, obs):
    return _objective_jit(cams, X, w, feats, obs)


@evaluation(pre=_pre, post=_post_jacobian)
def jacobian(cams, X, w, feats, obs):
    return _jacobian_jit(cams, X, w, feats, obs)
