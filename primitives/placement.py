"""The placement family: where a value lives and where XLA may move work -- ``device_put`` (a value
moved to another memory space, NOTE: [offloaded residuals]) and ``optimization_barrier`` (the
identity XLA may not optimise across).

Layer: primitives. Imports the funcgrad kernel only. Checkpoint's partial evaluation
(``primitives/remat.py``) binds both: an offloaded residual leaves the forward pass through a
``device_put``, and its backward program reads its inputs through a barrier (NOTE: [remat
barrier]); the surface's ``device_put`` (``funcgrad/_placement.py``) sets ``device_put``'s eager
step, and ``lax.optimization_barrier`` binds the barrier.
"""

from __future__ import annotations

import enum

from funcgrad.kernel import ad, core, ir
from funcgrad.kernel.core import Primitive

# ----------------------------------------------------------------------------------------------
# optimization_barrier: the identity on any number of values, opaque to XLA's optimisations.
optimization_barrier_p = Primitive("optimization_barrier", multiple_results=True)
optimization_barrier_p.def_traits(forwards_operands=True)  # output i is input i
optimization_barrier_p.def_impl(lambda *args: list(args))
optimization_barrier_p.def_abstract_eval(lambda *avals: list(avals))
optimization_barrier_p.def_jvp(
    lambda primals, tangents: (optimization_barrier_p.bind(*primals), list(tangents))
)
optimization_barrier_p.def_transpose(lambda cts, *args: list(cts))
optimization_barrier_p.def_traits(linear=True)
optimization_barrier_p.def_batch(
    lambda axis_size, vals, dims: (optimization_barrier_p.bind(*vals), list(dims))
)
optimization_barrier_p.def_taylor(ad.linear_taylor(optimization_barrier_p))


def optimization_barrier(*args):
    """Identity that XLA may not optimise across (used by checkpoint's recomputation).

    >>> import numpy as np
    >>> [float(v) for v in optimization_barrier(np.float64(1.0), np.float64(2.0))]
    [1.0, 2.0]
    """
    return optimization_barrier_p.bind(*args)


# ----------------------------------------------------------------------------------------------
# dce_sink: a value marked used, so that dead-code elimination keeps the work computing it (JAX's
# ``lax.dce_sink``): no results, a side effect for DCE (``has_side_effects``); its JVP keeps the
# primal's sink only (as JAX's, whose linear rule has nothing to transpose), batching passes the
# batched value on. Lowered to nothing, or with ``prevent_mlir_dce`` to JAX's side-effecting
# custom call ``@dce_sink`` (jaxlib's CPU handler), which keeps the computation in the program.
dce_sink_p = Primitive("dce_sink", multiple_results=True)
dce_sink_p.def_traits(
    has_side_effects=True,
    taylor_from_jvp="no results: its series is its JVP's (none), the operand's sink kept",
)
dce_sink_p.def_impl(lambda x, *, prevent_mlir_dce: [])
dce_sink_p.def_abstract_eval(lambda x, *, prevent_mlir_dce: [])
dce_sink_p.def_jvp(lambda primals, tangents, **params: (dce_sink_p.bind(*primals, **params), []))
dce_sink_p.def_batch(lambda axis_size, vals, dims, **params: (dce_sink_p.bind(*vals, **params), []))


def dce_sink(x, *, prevent_mlir_dce: bool = False) -> None:
    """Mark the array ``x`` used (dead-code elimination keeps what computes it).

    >>> import funcgrad
    >>> def f(x):
    ...     dce_sink(x * 2.0)
    ...     return x
    >>> [e.primitive.name for e in funcgrad.make_jaxpr(f)(1.0).jaxpr.eqns]
    ['mul', 'dce_sink']
    """
    dce_sink_p.bind(x, prevent_mlir_dce=bool(prevent_mlir_dce))


# ----------------------------------------------------------------------------------------------
# device_put: a value moved to another memory space (NOTE: [offloaded residuals])


class ArrayCopySemantics(enum.Enum):
    """Whether a ``device_put`` may return its operand's buffer (JAX's, from jaxlib; printed in
    jaxprs as ``ArrayCopySemantics.ALWAYS_COPY``)."""

    ALWAYS_COPY = 0
    REUSE_INPUT = 1
    DONATE_INPUT = 2

    def __repr__(self):
        return f"ArrayCopySemantics.{self.name}"


# One operand per destination, as JAX's ``device_put`` equations (``devices``: a ``MemorySpace``
# each; ``srcs`` and ``copy_semantics`` are JAX's parameters, kept for its printed jaxprs).
device_put_p = Primitive("device_put", multiple_results=True)
device_put_p.memory_space_from_params = True  # (NOTE: [memory space in types])
device_put_p.impl_takes_arrays = True  # its eager step (funcgrad/_placement.py) moves Arrays


def _device_put_avals(*avals, devices, srcs, copy_semantics):
    return [a.update(memory_space=d) if isinstance(d, ir.MemorySpace) else a for a, d in zip(avals, devices)]


def _device_put_jvp(primals, tangents, **params):
    outs = device_put_p.bind(*primals, **params)
    nz = [(i, t) for i, t in enumerate(tangents) if type(t) is not ad.Zero]
    t_outs = [ad.Zero(ad.tangent_aval(o.aval if hasattr(o, "aval") else core.get_aval(o))) for o in outs]
    if nz:
        moved = device_put_p.bind(*[t for _, t in nz], **_select(params, [i for i, _ in nz]))
        for (i, _), m in zip(nz, moved):
            t_outs[i] = m
    return outs, t_outs


def _select(params, idx) -> dict:
    return {k: tuple(v[i] for i in idx) for k, v in params.items()}


def _device_put_transpose(cts, *args, devices, srcs, copy_semantics):
    # The cotangent goes back to the memory the operand was in (JAX's rule, always a copy).
    out = [None] * len(args)
    todo = [
        i for i, (a, c) in enumerate(zip(args, cts)) if ad.is_undefined_primal(a) and type(c) is not ad.Zero
    ]
    if todo:
        # (moved to a device, by device_put(x, device) under grad: back to its source device)
        back = tuple(
            getattr(args[i].aval, "memory_space", ir.MemorySpace.Device)
            if isinstance(devices[i], ir.MemorySpace)
            else srcs[i]
            for i in todo
        )
        moved = device_put_p.bind(
            *[cts[i] for i in todo],
            devices=back,
            srcs=tuple(devices[i] for i in todo),
            copy_semantics=(ArrayCopySemantics.ALWAYS_COPY,) * len(todo),
        )
        for i, m in zip(todo, moved):
            out[i] = m
    return out


device_put_p.def_abstract_eval(_device_put_avals)
device_put_p.def_jvp(_device_put_jvp)
device_put_p.def_transpose(_device_put_transpose)
device_put_p.def_batch(
    lambda axis_size, vals, dims, **params: (device_put_p.bind(*vals, **params), list(dims))
)
device_put_p.def_traits(
    linear=True,  # a move between memories: a linear program may hold one
    taylor_from_jvp="a move between memories: its series is its operand's, moved",
)
device_put_p.def_impl(lambda *xs, **params: list(xs))  # (until funcgrad/_placement.py sets its own)


def device_put_to(x, space, copy=ArrayCopySemantics.REUSE_INPUT):
    """``x`` moved to the memory space ``space`` (one array; the surface's ``device_put(x,
    memory.Space.Host)`` takes pytrees); traced, a ``device_put`` equation typing the result in
    that memory (NOTE: [memory space in types]).

    >>> import numpy as np
    >>> float(device_put_to(np.float64(2.0), ir.MemorySpace.Device))
    2.0
    """
    return device_put_p.bind(x, devices=(space,), srcs=(None,), copy_semantics=(copy,))[0]
