"""GradBench eval ``ht``: hand tracking residuals and their Jacobian (benchmark code).

A skinned hand model (22 bones, linear blend skinning) is posed by 26 parameters ``theta``;
each observed point is compared with a model vertex (``simple``) or, in the ``complicated``
variant, with a point ``u`` of a model triangle, so that each point also has 2 parameters of its
own. The skinning is a gather of ``theta`` into per-bone Euler angles, a ``vmap`` of the rotation
over bones, a walk down the (static) bone tree, one matrix product of the skinning weights with the
flattened bone transforms, and a global rotation, scale and translation.

The Jacobian (rows ``3 * points``, columns ``[u-part (2), theta (26)]`` for the complicated
variant as GradBench lays it out) is computed by compressed forward mode: point ``i``'s residual
depends only on its own ``u_i``, so one tangent that moves every ``u_i[0]`` at once yields the
whole first u-column, one more the second, and 26 tangents the theta columns: 28 ``jvp``s batched
by ``vmap`` instead of ``2 * points + 26``.
"""

import functools

import numpy as np

import funcgrad
import funcgrad.numpy as jnp
from funcgrad_tool.runs import evaluation


def _pose_index(n_bones):
    """Gather index from ``[theta..., 0, 1]`` into the ``(n_bones + 3, 3)`` pose parameters:
    global rotation, scale (ones), translation, then per bone its Euler angles (the fingers'
    first joints have two, the others one; wrist and forearm none)."""
    zero, one = 26, 27
    idx = np.full((n_bones + 3, 3), zero, np.int32)
    idx[0] = [0, 1, 2]
    idx[1] = one
    idx[2] = [3, 4, 5]
    i_theta, i_pose = 6, 5
    for _finger in range(5):
        for joint in range(3):
            idx[i_pose, 0] = i_theta
            i_theta += 1
            if joint == 0:
                idx[i_pose, 1] = i_theta
                i_theta += 1
            i_pose += 1
        i_pose += 1
    return idx


def _euler_to_rotation(xzy):
    tx, tz, ty = xzy[0], xzy[1], xzy[2]
    cx, sx, cy, sy, cz, sz = jnp.cos(tx), jnp.sin(tx), jnp.cos(ty), jnp.sin(ty), jnp.cos(tz), jnp.sin(tz)
    one, zero = jnp.ones_like(tx), jnp.zeros_like(tx)
    Rx = jnp.stack([one, zero, zero, zero, cx, -sx, zero, sx, cx]).reshape(3, 3)
    Ry = jnp.stack([cy, zero, sy, zero, one, zero, -sy, zero, cy]).reshape(3, 3)
    Rz = jnp.stack([cz, -sz, zero, sz, cz, zero, zero, zero, one]).reshape(3, 3)
    return Rz @ Ry @ Rx


def _angle_axis_to_rotation(aa):
    sq = jnp.sum(aa * aa)
    small = sq < 1e-8  # norm < 1e-4: identity, as the reference
    norm = jnp.sqrt(jnp.where(small, 1.0, sq))
    x, y, z = aa[0] / norm, aa[1] / norm, aa[2] / norm
    s, c = jnp.sin(norm), jnp.cos(norm)
    R = jnp.stack(
        [
            x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s,
            x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s,
            x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c,
        ]
    ).reshape(3, 3)  # fmt: skip
    return jnp.where(small, jnp.eye(3, dtype=aa.dtype), R)


def vertex_positions(theta, model):
    """Posed model vertices, ``(n_vertices, 3)``."""
    parents, base_relatives, inverse_base_absolutes, base_positions, weights, mirrored = model
    n_bones = base_relatives.shape[0]
    pose = jnp.concatenate([theta, jnp.zeros((1,), theta.dtype), jnp.ones((1,), theta.dtype)])[
        _pose_index(n_bones)
    ]
    R = funcgrad.vmap(_euler_to_rotation)(pose[3:])  # (bones, 3, 3)
    tr = jnp.zeros((n_bones, 4, 4), theta.dtype).at[:, :3, :3].set(R).at[:, 3, 3].set(1.0)
    relatives = base_relatives @ tr
    absolutes = []
    for i, parent in enumerate(parents):  # the bone tree is static: unrolled
        absolutes.append(relatives[i] if parent == -1 else absolutes[parent] @ relatives[i])
    transforms = jnp.stack(absolutes) @ inverse_base_absolutes  # (bones, 4, 4)
    # linear blend skinning: per vertex the weighted sum of its bones' transforms
    blended = (weights @ transforms[:, :3, :].reshape(n_bones, 12)).reshape(-1, 3, 4)
    positions = jnp.einsum("vij,vj->vi", blended, base_positions)
    if mirrored:
        positions = positions * jnp.array([-1.0, 1.0, 1.0])
    Rg = _angle_axis_to_rotation(pose[0]) * pose[1][None, :]
    return positions @ Rg.T + pose[2]


def objective_simple(theta, model, points, correspondences):
    return points - vertex_positions(theta, model)[correspondences]


def objective_complicated(us, theta, model, points, triangles):
    V = vertex_positions(theta, model)
    tri = V[triangles]  # (points, 3 corners, 3)
    u0, u1 = us[:, 0:1], us[:, 1:2]
    hand = u0 * tri[:, 0] + u1 * tri[:, 1] + (1.0 - u0 - u1) * tri[:, 2]
    return points - hand


def _jacobian_simple(theta, model, points, correspondences):
    J = funcgrad.jacfwd(objective_simple)(theta, model, points, correspondences)  # (pts, 3, 26)
    return J.reshape(-1, theta.shape[0])


def _jacobian_complicated(us, theta, model, points, triangles):
    n_theta = theta.shape[0]
    # seeds: all u_i[0] at once, all u_i[1] at once, then each theta
    seed_us = jnp.concatenate(
        [
            jnp.broadcast_to(jnp.eye(2, dtype=us.dtype)[:, None, :], (2,) + us.shape),
            jnp.zeros((n_theta,) + us.shape, us.dtype),
        ]
    )
    seed_theta = jnp.concatenate([jnp.zeros((2, n_theta), theta.dtype), jnp.eye(n_theta, dtype=theta.dtype)])

    def column(du, dtheta):
        f = lambda u, t: objective_complicated(u, t, model, points, triangles)  # noqa: E731
        return funcgrad.jvp(f, (us, theta), (du, dtheta))[1]

    cols = funcgrad.vmap(column)(seed_us, seed_theta)  # (2 + 26, pts, 3)
    return cols.reshape(cols.shape[0], -1).T


@functools.cache
def _programs(parents, mirrored):
    """Compiled (objective, jacobian) per variant for one bone tree. The model arrays are
    arguments; the tree and the mirror flag shape the program."""

    def bind(f):
        def g(*args):
            *head, arrays = args
            model = (parents, *arrays, mirrored)
            return f(*head[:-2], model, *head[-2:])

        return funcgrad.jit(g)

    return {
        "simple": (bind(objective_simple), bind(_jacobian_simple)),
        "complicated": (bind(objective_complicated), bind(_jacobian_complicated)),
    }


def _pre(input):
    data, model = input["data"], input["data"]["model"]

    def arr(v, dtype=np.float64):
        return funcgrad.device_put(np.asarray(v, dtype=dtype))

    programs = _programs(tuple(int(p) for p in model["parents"]), bool(model["is_mirrored"]))
    arrays = tuple(
        arr(model[k]) for k in ("base_relatives", "inverse_base_absolutes", "base_positions", "weights")
    )
    theta, points = arr(input["theta"]), arr(data["points"])
    correspondences = np.asarray(data["correspondences"], np.int32)
    us = input.get("us")
    if us is not None and len(us) > 0:
        triangles = np.asarray(model["triangles"], np.int32)[correspondences]  # (points, 3)
        return programs["complicated"], (arr(us), theta, points, arr(triangles, np.int32), arrays)
    return programs["simple"], (theta, points, arr(correspondences, np.int32), arrays)


@evaluation(pre=_pre, post=lambda e: np.asarray(e).reshape(-1).tolist())
def objective(programs, args):
    return programs[0](*args)


@evaluation(pre=_pre, post=lambda J: np.asarray(J).tolist())
def jacobian(programs, args):
    return programs[1](*args)
