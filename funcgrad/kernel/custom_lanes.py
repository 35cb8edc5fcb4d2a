"""The lanes of a custom rule under ``vmap``: a ``custom_jvp``/``custom_vjp`` batch rule runs the
user's rule per example, through ``run_lanes`` (split out of ``custom_derivatives.py``).

Layer: kernel. Imports ``core`` and ``batching`` only.
"""

from __future__ import annotations

from funcgrad.kernel import batching, core


def run_lanes(rule, lane, axis_size, in_dims, out_dims, args, axis_name=None):
    """``vmap_flat(lane, ...)`` of a custom rule under a batch rule. A rule traced under a ``vmap``
    may close over that vmap's values (JAX's issue 8783: ``nondiff_argnums`` or a closure holding
    the vmapped value; ``rule.home``): while that vmap is still running, the lanes run in its own
    trace, where those values are batched tracers it knows, as JAX runs the rule in a subtrace of
    the same vmap; otherwise in a vmap of their own. ``out_dims()``: the outputs' batch dims
    (``None``: unbatched), asked once the lanes have run. ``axis_name``: the vmap's axis name,
    bound around the lanes (the rule may run later, outside that vmap, and use collectives).

    >>> import numpy as np, funcgrad.numpy as fnp
    >>> def rule(x):
    ...     return [fnp.multiply(x, 2.0)]
    >>> [o.tolist() for o in run_lanes(rule, rule, 3, [0], lambda: [0], [np.arange(3.0)])]
    [[0.0, 2.0, 4.0]]
    """
    home = getattr(rule, "home", None)
    trace = home() if home is not None else None
    if (
        trace is None
        or not trace.alive
        or trace.axis_size != axis_size
        or not _above(trace, core.current_trace())
    ):
        return batching.vmap_flat(lane, axis_size, in_dims, out_dims, args, axis_name)
    with core.set_current_trace(trace):
        outs = lane(*[a if d is None else batching.BatchTracer(trace, a, d) for a, d in zip(args, in_dims)])
    vals, dims = batching._unpack_batch_outputs(trace, outs)
    return [batching.move_batch_dim(v, axis_size, d, od) for v, d, od in zip(vals, dims, out_dims())]


def _above(trace, current) -> bool:
    """Whether ``current`` is among ``trace``'s ancestors: then what ``trace`` hands its parent
    reaches ``current`` (the batch rule of ``trace``'s own call, not a vmap nested around it)."""
    t = trace.parent
    while t is not None:
        if t is current:
            return True
        t = t.parent
    return False
