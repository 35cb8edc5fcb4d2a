"""The ``jit`` call primitive: a staged sub-program that runs as one compiled unit.

Layer: primitives. Imports the funcgrad kernel.

``jit_p`` carries a closed jaxpr; all its rules work on that jaxpr (JVP, transpose, batching and
partial evaluation each build a new jaxpr and bind ``jit_p`` again), so ``grad(jit(f))``,
``vmap(jit(f))`` and ``jit(grad(f))`` keep the inner call one compiled unit. Its impl interprets the
jaxpr with the NumPy impls until ``xla_bridge`` registers the compile-and-run implementation
(``set_jit_impl``; dependency inversion, see design.md).
"""

from __future__ import annotations

from funcgrad import core
from funcgrad.ad import Zero, instantiate, is_undefined_primal, jvp_jaxpr, transpose_jaxpr
from funcgrad.batching import batch_jaxpr
from funcgrad.core import Primitive
from funcgrad.partial_eval import partial_eval_jaxpr

jit_p = Primitive("jit", multiple_results=True)
jit_p.impl_takes_arrays = True


class _DerivedJaxprs:
    """Memoise a jaxpr-to-jaxpr transformation per (source jaxpr object, flags).

    # NOTE: [derived jaxpr cache]
    # Jaxprs are immutable, and ``funcgrad.jit`` reuses its traced jaxpr objects, so the JVP,
    # partial-evaluation, transpose and batched programs derived from one are the same every
    # call. Reusing the derived objects lets ``grad(jit(f))`` skip re-tracing them and lets the
    # compiled-executable cache (keyed by jaxpr object) hit. Entries keep their source jaxpr alive,
    # so an ``id`` is never reused while its entry exists.
    """

    def __init__(self, fn, capacity: int = 512):
        self.fn = fn
        self.capacity = capacity
        self.entries: dict = {}

    def __call__(self, closed, *flags):
        key = (id(closed), *flags)
        hit = self.entries.get(key)
        if hit is not None and hit[0] is closed:
            return hit[1]
        out = self.fn(closed, *flags)
        if len(self.entries) >= self.capacity:
            self.entries.pop(next(iter(self.entries)))  # oldest first
        self.entries[key] = (closed, out)
        return out


_jvp_jaxpr = _DerivedJaxprs(lambda closed, nonzeros: jvp_jaxpr(closed, list(nonzeros), instantiate=False))
_transpose_jaxpr = _DerivedJaxprs(lambda closed, linear: transpose_jaxpr(closed, list(linear)))
_batch_jaxpr = _DerivedJaxprs(
    lambda closed, axis_size, dims: batch_jaxpr(closed, axis_size, list(dims), instantiate=False)
)
_partial_eval_jaxpr = _DerivedJaxprs(
    lambda closed, unknowns: partial_eval_jaxpr(closed, list(unknowns), instantiate=False)
)


def _interpret(*args, jaxpr, name, donated_invars):
    with core.set_current_trace(core.EvalTrace(None)):
        return core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


_jit_impl = [_interpret]


def set_jit_impl(impl) -> None:
    """Install how a jit call runs eagerly: ``impl(*args, jaxpr, name, donated_invars) -> list``."""
    _jit_impl[0] = impl


jit_p.def_impl(lambda *args, **params: _jit_impl[0](*args, **params))


def _abstract_eval(*avals, jaxpr, name, donated_invars):
    expected = jaxpr.in_avals
    if len(avals) != len(expected):
        raise TypeError(f"jit call '{name}' expects {len(expected)} arguments, got {len(avals)}")
    for i, (a, e) in enumerate(zip(avals, expected)):
        if (a.shape, a.dtype) != (e.shape, e.dtype):
            raise TypeError(
                f"jit call '{name}': argument {i} is {a.str_short()} but the compiled program "
                f"expects {e.str_short()}"
            )
    return jaxpr.out_avals


jit_p.def_abstract_eval(_abstract_eval)


def _jvp(primals, tangents, *, jaxpr, name, donated_invars):
    nonzeros = [type(t) is not Zero for t in tangents]
    jvp_closed, out_nonzeros = _jvp_jaxpr(jaxpr, tuple(nonzeros))
    nz_tangents = [t for t in tangents if type(t) is not Zero]
    args = [*primals, *nz_tangents]
    outs = jit_p.bind(*args, jaxpr=jvp_closed, name=f"jvp({name})", donated_invars=(False,) * len(args))
    n = len(jaxpr.out_avals)
    out_primals, nz_outs = outs[:n], iter(outs[n:])
    out_tangents = [
        next(nz_outs) if nz else Zero.from_primal_value(p) for p, nz in zip(out_primals, out_nonzeros)
    ]
    return out_primals, out_tangents


jit_p.def_jvp(_jvp)


def _transpose(cts, *args, jaxpr, name, donated_invars):
    linear = [is_undefined_primal(a) for a in args]
    transposed = _transpose_jaxpr(jaxpr, tuple(linear))
    nonlin = [a for a in args if not is_undefined_primal(a)]
    cts = [instantiate(ct) for ct in cts]
    call_args = [*nonlin, *cts]
    outs = jit_p.bind(
        *call_args, jaxpr=transposed, name=f"transpose({name})", donated_invars=(False,) * len(call_args)
    )
    it = iter(outs)
    return [next(it) if lin else None for lin in linear]


jit_p.def_transpose(_transpose)


def _batch(axis_size, vals, dims, *, jaxpr, name, donated_invars):
    batched, out_dims = _batch_jaxpr(jaxpr, axis_size, tuple(dims))
    outs = jit_p.bind(*vals, jaxpr=batched, name=name, donated_invars=donated_invars)
    return outs, out_dims


jit_p.def_batch(_batch)


def _partial_eval(trace, args, unknowns, *, jaxpr, name, donated_invars):
    known, unknown, out_unknowns, num_res = _partial_eval_jaxpr(jaxpr, tuple(unknowns))
    known_args = [a for a, uk in zip(args, unknowns) if not uk]
    with core.set_current_trace(trace.parent):
        known_outs = jit_p.bind(
            *known_args, jaxpr=known, name=name, donated_invars=(False,) * len(known_args)
        )
    n_known = len(known_outs) - num_res
    residuals = known_outs[n_known:]
    unknown_args = [*residuals, *(a for a, uk in zip(args, unknowns) if uk)]
    unknown_outs = trace.stage(
        jit_p, unknown_args, dict(jaxpr=unknown, name=name, donated_invars=(False,) * len(unknown_args))
    )
    it_known, it_unknown = iter(known_outs[:n_known]), iter(unknown_outs)
    return [next(it_unknown) if uk else next(it_known) for uk in out_unknowns]


jit_p.def_partial_eval(_partial_eval)
