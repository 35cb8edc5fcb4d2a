"""Per-example gradient norms and the DP-SGD clipped gradient sum without per-example gradients.

Layer: surface. Imports the kernel (tracing, the IR), the primitive catalog (``dot_general_p``),
``funcgrad.numpy`` and the transformations of ``funcgrad.api``.

``per_example_norms(loss)(params, *batch)`` is ``||grad(loss)(params, *example_i)||`` for every
example i, and ``clipped_grad_sum(loss, l2_clip)(params, *batch)`` is DP-SGD's
``sum_i g_i / max(1, ||g_i|| / l2_clip)`` -- the same numbers as ``vmap(grad(loss))`` followed by
the clip and the sum, computed without the ``(batch, *param.shape)`` arrays where the program's
structure allows ("ghost clipping", Goodfellow 2015; Li et al. 2022). Both work eagerly and under
``jit``, ``grad`` and ``vmap`` like any other function.

# NOTE: [ghost clipping]
# The per-example loss is traced once into a jaxpr. Each parameter read by exactly one equation
# (``x @ W``, ``broadcast(b)``, ``conv(x, K)``) is a *site*: by the chain rule its per-example
# gradient is that equation's VJP (w.r.t. the parameter) applied to the cotangent of the
# equation's output for that example, with the other operands at that example's values. The
# program is re-run under ``vmap`` with a zero perturbation ``z_e`` (one row per example) added
# to each site's output, so one batched backward pass w.r.t. the ``z_e`` returns every site's
# per-example output cotangent -- without computing a single weight gradient. The norms follow
# from the cotangents and the saved operands:
# - ``dot_general`` (a dense layer): ``dW_i = O_i^T G_i`` with the operand ``O_i`` (n, d_in) and the
#   cotangent ``G_i`` (n, d_out) over the n positions the layer is applied at, so
#   ``||dW_i||^2 = ||O_i||^2 ||G_i||^2`` when n = 1 and ``<O_i O_i^T, G_i G_i^T>`` when n^2 is
#   smaller than the weight; neither forms ``dW_i``;
# - any other equation (a convolution's kernel, a bias's broadcast): ``vmap`` of the equation's
#   VJP makes that one parameter's per-example gradients, summed in squares and dropped at once.
# A parameter read by several equations (weight tying), by a call with several results (``scan``,
# a ``custom_vjp``), or returned by the loss is the fallback: the perturbation is added to the
# parameter itself, so the backward pass yields its per-example gradients, as materialised
# ``vmap(grad)`` would. The clipped sum needs no second backward pass: with
# ``scale_i = 1 / max(1, ||g_i|| / l2_clip)``, a site's share is the VJP of its batched equation
# w.r.t. the (unbatched) parameter on the scaled cotangents ``scale_i G_i`` -- the contraction the
# batch gradient itself does (``O^T (scale G)``, one matrix product) -- and a fallback parameter's
# is ``sum_i scale_i g_i`` of its per-example gradients. The cost is the batch gradient's plus the
# norms.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.api import vjp, vmap
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.ir import Literal, Var
from funcgrad.kernel.partial_eval import trace_to_jaxpr
from funcgrad.primitives.dot import dot_general_p

__all__ = ["clipped_grad_sum", "per_example_norms"]


def per_example_norms(loss: Callable, in_axes=0) -> Callable:
    """``per_example_norms(loss)(params, *batch)``: the L2 norm of each example's gradient of
    ``loss(params, *example)`` w.r.t. ``params`` (all leaves together), shape ``(batch,)``.

    ``loss`` takes one example (like the function given to ``vmap(grad(loss), in_axes=(None, 0))``)
    and returns a real scalar. ``in_axes``: the batch axis of the arguments after ``params``, one
    int (or ``None``: shared by every example) for all of them or a tuple with one per argument.
    Computed as in NOTE: [ghost clipping]: dense layers never form a per-example gradient.

    >>> import numpy as np, funcgrad.numpy as fnp
    >>> loss = lambda w, x: fnp.sum(x @ w)
    >>> w, xs = np.ones((3, 2)), np.array([[1.0, 2.0, 2.0], [0.0, 0.0, 0.0]])
    >>> per_example_norms(loss)(w, xs)  # the gradient of example 0 is [[1,1],[2,2],[2,2]]
    Array([4.24264069, 0.        ], dtype=float64)
    """
    return _transform(loss, in_axes, None, "per_example_norms")


def clipped_grad_sum(loss: Callable, l2_clip: float, in_axes=0, return_norms: bool = False) -> Callable:
    """``clipped_grad_sum(loss, l2_clip)(params, *batch)``: DP-SGD's clipped gradient sum
    ``sum_i g_i / max(1, ||g_i|| / l2_clip)`` with ``g_i = grad(loss)(params, *example_i)``, a
    pytree like ``params``; ``return_norms=True`` also returns the norms ``||g_i||``.

    Equal to ``vmap(grad(loss), in_axes=(None, *in_axes))`` followed by the clip and the sum, but
    computed without per-example gradients of dense layers (NOTE: [ghost clipping]): about the
    cost of one batch gradient. ``loss`` and ``in_axes`` are as in ``per_example_norms``.

    >>> import numpy as np, funcgrad.numpy as fnp
    >>> loss = lambda w, x: fnp.sum(x @ w)
    >>> w, xs = np.ones((3, 2)), np.array([[1.0, 2.0, 2.0], [0.1, 0.0, 0.0]])
    >>> clipped_grad_sum(loss, l2_clip=1.0)(w, xs)  # example 0's gradient is scaled by 1/sqrt(18)
    Array([[0.33570226, 0.33570226],
           [0.47140452, 0.47140452],
           [0.47140452, 0.47140452]], dtype=float64)
    """
    if isinstance(l2_clip, int | float) and not (l2_clip > 0 and math.isfinite(l2_clip)):
        raise ValueError(f"clipped_grad_sum: l2_clip must be a positive finite number, got {l2_clip!r}")
    return _transform(loss, in_axes, (l2_clip, return_norms), "clipped_grad_sum")


# ----------------------------------------------------------------------------------------------
# The transformation


def _batch_axes(name, in_axes, n):
    axes = tuple(in_axes) if isinstance(in_axes, list | tuple) else (in_axes,) * n
    if len(axes) != n or any(a is not None and not isinstance(a, int) for a in axes):
        raise ValueError(
            f"{name}: in_axes must be an int, None, or a tuple with one int/None per batch argument "
            f"({n} after params), got {in_axes!r}"
        )
    return axes


def _example_aval(x, axis):
    aval = core.get_aval(x)
    if axis is None:
        return aval
    if not -aval.ndim <= axis < aval.ndim:
        raise ValueError(f"in_axes {axis} is out of range for a batch argument of shape {aval.shape}")
    axis %= aval.ndim
    return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1 :])


def _transform(loss, in_axes, clip, name):
    def transformed(params, *batch):
        axes = _batch_axes(name, in_axes, len(batch))
        flat_p, p_tree = tu.tree_flatten(params)
        for path, leaf in zip(tu.tree_flatten_with_path(params)[0], flat_p):
            if not _dt.is_inexact(core.get_aval(leaf).dtype):
                raise TypeError(
                    f"{name}: params{tu.keystr(path[0])} has dtype {core.get_aval(leaf).dtype}; every leaf "
                    "of params is differentiated, so it must be a float (pass integer data as a batch "
                    "argument, with in_axes None if every example shares it)"
                )
        leaves, leaf_axes, b_trees = [], [], []
        for arg, axis in zip(batch, axes):
            arg_leaves, tree = tu.tree_flatten(arg)
            leaves += arg_leaves
            leaf_axes += [axis] * len(arg_leaves)
            b_trees.append((tree, len(arg_leaves)))
        sizes = {
            core.get_aval(x).shape[a % core.get_aval(x).ndim]
            for x, a in zip(leaves, leaf_axes)
            if a is not None
        }
        if not sizes:
            raise ValueError(f"{name}: no batch argument has a batch axis (in_axes={in_axes!r})")
        if len(sizes) > 1:
            raise ValueError(f"{name}: the batch arguments have different batch sizes {sorted(sizes)}")
        (size,) = sizes

        def example_loss(*flat):
            p = tu.tree_unflatten(p_tree, flat[: len(flat_p)])
            rest, args = list(flat[len(flat_p) :]), []
            for tree, n in b_trees:
                args.append(tu.tree_unflatten(tree, rest[:n]))
                rest = rest[n:]
            return [loss(p, *args)]

        avals = [core.get_aval(x) for x in flat_p] + [_example_aval(x, a) for x, a in zip(leaves, leaf_axes)]
        closed = trace_to_jaxpr(
            example_loss, avals, description=f"{name}({getattr(loss, '__name__', 'loss')})"
        )
        (out_aval,) = closed.out_avals
        if out_aval.shape != () or out_aval.dtype.kind != "f":
            raise TypeError(
                f"{name}: the loss must return a real scalar for one example, got {out_aval.str_short()}; "
                "reduce it (e.g. sum or mean) to a float scalar"
            )
        plan = _plan(closed.jaxpr, len(flat_p))
        return _run(closed, plan, flat_p, p_tree, leaves, leaf_axes, size, clip)

    transformed.__name__ = f"{name}({getattr(loss, '__name__', 'loss')})"
    return transformed


class _Plan:
    """Which perturbation each parameter gets (NOTE: [ghost clipping])."""

    def __init__(self, sites, fallback):
        self.sites = sites  # [(eqn index, operand slot, parameter index)]
        self.fallback = fallback  # parameter indices perturbed directly


def _plan(jaxpr, n_params) -> _Plan:
    params = jaxpr.invars[:n_params]
    uses: dict = {v: [] for v in params}
    for i, eqn in enumerate(jaxpr.eqns):
        for k, a in enumerate(eqn.invars):
            if type(a) is Var and a in uses:
                uses[a].append((i, k))
    returned = {v for v in jaxpr.outvars if type(v) is Var}
    sites, fallback = [], []
    for j, v in enumerate(params):
        if not _dt.is_inexact(v.aval.dtype):
            continue  # integer leaves have no gradient
        if len(uses[v]) == 1 and v not in returned:
            i, k = uses[v][0]
            eqn = jaxpr.eqns[i]
            if not eqn.primitive.multiple_results and _dt.is_inexact(eqn.outvars[0].aval.dtype):
                sites.append((i, k, j))
                continue
        if uses[v] or v in returned:
            fallback.append(j)
    return _Plan(sites, fallback)


def _eval_perturbed(jaxpr, consts, plan, args, z_sites, z_params):
    """Evaluate ``jaxpr`` with each site's output and each fallback parameter shifted by its
    perturbation; returns the loss and the operands of every site's equation."""
    env = dict(zip(jaxpr.constvars, consts))
    args = list(args)
    for j, z in zip(plan.fallback, z_params):
        args[j] = args[j] + z
    env.update(zip(jaxpr.invars, args))
    site_of = {i: n for n, (i, _, _) in enumerate(plan.sites)}
    operands = [None] * len(plan.sites)
    read = lambda a: a.val if type(a) is Literal else env[a]  # noqa: E731
    for i, eqn in enumerate(jaxpr.eqns):
        ins = [read(a) for a in eqn.invars]
        out = eqn.primitive.bind(*ins, **eqn.params)
        if eqn.primitive.multiple_results:
            env.update(zip(eqn.outvars, out))
            continue
        n = site_of.get(i)
        if n is not None:  # the other operands only: the parameter itself is known
            operands[n] = [x for k, x in enumerate(ins) if k != plan.sites[n][1]]
            out = out + z_sites[n]
        env[eqn.outvars[0]] = out
    (loss,) = [read(a) for a in jaxpr.outvars]
    return loss, operands


def _run(closed, plan, flat_p, p_tree, leaves, leaf_axes, size, clip):
    jaxpr, consts = closed.jaxpr, closed.consts
    site_avals = [jaxpr.eqns[i].outvars[0].aval for i, _, _ in plan.sites]
    z_sites = [fnp.zeros((size, *a.shape), a.dtype) for a in site_avals]
    z_params = [
        fnp.zeros((size, *core.get_aval(flat_p[j]).shape), core.get_aval(flat_p[j]).dtype)
        for j in plan.fallback
    ]

    def one(p, zs, zp, *example):
        return _eval_perturbed(jaxpr, consts, plan, [*p, *example], zs, zp)

    batched = vmap(one, in_axes=(None, 0, 0, *leaf_axes))
    # Differentiated w.r.t. the perturbations only: no weight gradient is ever formed here.
    losses, pullback, operands = vjp(
        lambda zs, zp: batched(list(flat_p), zs, zp, *leaves), z_sites, z_params, has_aux=True
    )
    g_sites, g_params = pullback(fnp.ones_like(losses))
    sites = [
        (jaxpr.eqns[i], k, j, [*others[:k], flat_p[j], *others[k:]])
        for (i, k, j), others in zip(plan.sites, operands)
    ]
    sq = fnp.zeros((size,), losses.dtype)
    for (eqn, k, _, ops), g in zip(sites, g_sites):
        sq = sq + _site_sq_norm(eqn, k, ops, g).astype(losses.dtype)
    for g in g_params:
        sq = sq + fnp.sum(fnp.reshape(fnp.abs(g) ** 2, (size, -1)), axis=1).astype(losses.dtype)
    norms = fnp.sqrt(sq)
    if clip is None:
        return norms
    l2_clip, return_norms = clip
    scale = 1.0 / fnp.maximum(norms / l2_clip, 1.0)
    grads = [None] * len(flat_p)
    for (eqn, k, j, ops), g in zip(sites, g_sites):
        grads[j] = _site_clipped_sum(eqn, k, ops, g, scale)
    for j, g in zip(plan.fallback, g_params):
        grads[j] = fnp.tensordot(scale.astype(g.dtype), g, axes=1)
    grads = [fnp.zeros_like(p) if g is None else g for p, g in zip(flat_p, grads)]  # unused leaves
    out = tu.tree_unflatten(p_tree, grads)
    return (out, norms) if return_norms else out


def _site_clipped_sum(eqn, slot, operands, g, scale):
    """``sum_i scale_i * (gradient of example i)`` for a site's parameter: the VJP of the batched
    equation w.r.t. the (unbatched) parameter sums over the examples, so this is the batch
    gradient's own contraction (one matrix product for a dense layer) on scaled cotangents."""
    ct = g * fnp.reshape(scale.astype(g.dtype), (-1,) + (1,) * (g.ndim - 1))
    axes = tuple(None if x.ndim == eqn.invars[k].aval.ndim else 0 for k, x in enumerate(operands))
    if all(a is None for a in axes):  # the same Jacobian for every example (a bias's broadcast)
        f = lambda p: eqn.primitive.bind(*operands[:slot], p, *operands[slot + 1 :], **eqn.params)  # noqa: E731
        return vjp(f, operands[slot])[1](fnp.sum(ct, axis=0))[0]

    def batched(p):
        def one(*ins):
            args = list(ins)
            args[slot] = p
            return eqn.primitive.bind(*args, **eqn.params)

        return vmap(one, in_axes=axes)(*operands)

    return vjp(batched, operands[slot])[1](ct)[0]


def _site_sq_norm(eqn, slot, operands, g):
    """Per-example squared norm of the gradient of the parameter in ``eqn.invars[slot]``, from the
    (batched) operands of the equation and its (batched) output cotangent ``g``."""
    size = g.shape[0]
    if eqn.primitive is dot_general_p and not eqn.params["dimension_numbers"][1][0]:
        other = operands[1 - slot]
        if other.ndim == eqn.invars[1 - slot].aval.ndim + 1:  # batched operand: the ghost norm
            return _dot_sq_norm(eqn, slot, other, g)

    def param_grad(ins, ct):
        def f(p):
            args = list(ins)
            args[slot] = p
            return eqn.primitive.bind(*args, **eqn.params)

        return vjp(f, ins[slot])[1](ct)[0]

    axes = [None if x.ndim == eqn.invars[k].aval.ndim else 0 for k, x in enumerate(operands)]
    per_example = vmap(param_grad, in_axes=(axes, 0))(operands, g)
    return fnp.sum(fnp.reshape(fnp.abs(per_example) ** 2, (size, -1)), axis=1)


def _dot_sq_norm(eqn, slot, other, g):
    (lc, rc), _ = eqn.params["dimension_numbers"]
    o_contract = (rc, lc)[slot]  # the other operand's contracting dims
    o_aval, p_aval = eqn.invars[1 - slot].aval, eqn.invars[slot].aval
    o_free = [d for d in range(o_aval.ndim) if d not in o_contract]
    size = g.shape[0]
    n = int(np.prod([o_aval.shape[d] for d in o_free], dtype=np.int64))
    d_in = int(np.prod([o_aval.shape[d] for d in o_contract], dtype=np.int64))
    d_out = p_aval.size // d_in if d_in else 0
    # O: (batch, positions, d_in); G: (batch, positions, d_out). The output's dims are the lhs
    # free dims, then the rhs free dims: the positions come first when the other operand is lhs.
    o = fnp.transpose(other, (0, *(d + 1 for d in o_free), *(d + 1 for d in o_contract)))
    o = fnp.reshape(o, (size, n, d_in))
    n_pos = len(o_free)
    if slot == 1:
        gm = fnp.reshape(g, (size, n, d_out))
    else:
        n_w = g.ndim - 1 - n_pos
        gm = fnp.transpose(g, (0, *range(1 + n_w, g.ndim), *range(1, 1 + n_w)))
        gm = fnp.reshape(gm, (size, n, d_out))
    if n == 1:
        return fnp.sum(fnp.abs(o) ** 2, axis=(1, 2)) * fnp.sum(fnp.abs(gm) ** 2, axis=(1, 2))
    if n * n <= d_in * d_out:
        oo = fnp.einsum("bpi,bqi->bpq", o, fnp.conj(o))
        gg = fnp.einsum("bpo,bqo->bpq", gm, fnp.conj(gm))
        return fnp.real(fnp.sum(oo * fnp.conj(gg), axis=(1, 2)))
    dw = fnp.einsum("bpi,bpo->bio", o, gm)
    return fnp.sum(fnp.abs(dw) ** 2, axis=(1, 2))
