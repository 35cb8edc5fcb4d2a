"""``linear_call``: a call of a function linear in some of its operands, with a user-given transpose
(JAX's ``custom_derivatives.linear_call``; the surface is funcgrad/custom_derivatives.py).

Layer: primitives. Imports the kernel.

``linear_call_p`` carries ``callee``, the ClosedJaxpr ``(residuals..., linear...) -> outputs``,
and ``transpose``, a ``TransposeThunk`` giving the ClosedJaxpr ``(residuals..., cotangents...) ->
linear cotangents`` when first asked (JAX traces the transpose lazily too: a transpose that is never
needed is never traced). Its rules:

- JVP: the call is linear in its linear operands, so the tangent is the same call on their
  tangents; residuals are not differentiated (a nonzero residual tangent is an error, as JAX
  asserts).
- transpose: a ``linear_call`` of the transpose, whose own transpose is the callee, so
  transposing twice gives the original function back.
- batching (JAX has none; funcgrad's catalog gives every primitive one): the callee is batched
  with every operand at axis 0 (unbatched linear operands broadcast, so each linear operand has
  a batched cotangent), the transpose likewise when it is first needed.

Lowering inlines the callee (xla_bridge/rules/linear_call.py).
"""

from __future__ import annotations

from funcgrad.primitives._rules import move_to_front, to_front

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import Zero, instantiate, is_undefined_primal
from funcgrad.kernel.batching import batch_jaxpr
from funcgrad.kernel.core import Primitive

__all__ = ["TransposeThunk", "linear_call_p"]


class TransposeThunk:
    """The transpose's ClosedJaxpr, made by ``make()`` on first call and kept (hashed by identity)."""

    __slots__ = ("_jaxpr", "_make")

    def __init__(self, make):
        self._make = make
        self._jaxpr = None

    @classmethod
    def of(cls, closed) -> TransposeThunk:
        thunk = cls(None)
        thunk._jaxpr = closed
        return thunk

    def __call__(self):
        if self._jaxpr is None:
            self._jaxpr = self._make()
            self._make = None
        return self._jaxpr

    def __repr__(self) -> str:
        return "<transpose>" if self._jaxpr is None else f"<transpose {self._jaxpr.in_avals}>"


def _impl(*args, callee, transpose, num_res):
    del transpose, num_res
    # A Python scalar the callee forwards (an operand, or a literal it returns) comes back typed,
    # as JAX's bind makes it (``TypedFloat(1.0, dtype=float32)``).
    return [_dt.typed_scalar(o) for o in core.eval_jaxpr(callee.jaxpr, callee.consts, *args)]


def _abstract_eval(*avals, callee, transpose, num_res):
    del transpose, num_res
    return list(callee.out_avals)


def _jvp(primals, tangents, *, callee, transpose, num_res):
    params = dict(callee=callee, transpose=transpose, num_res=num_res)
    if any(type(t) is not Zero for t in tangents[:num_res]):
        raise TypeError(
            "linear_call: its residual arguments are not differentiated (the function is linear in "
            "linear_args only); pass what depends on the differentiated inputs as linear_args, or "
            "stop_gradient the residuals"
        )
    outs = linear_call_p.bind(*primals, **params)
    lin_tangents = tangents[num_res:]
    if all(type(t) is Zero for t in lin_tangents):
        return outs, [Zero.from_primal_value(o) for o in outs]
    tangent_outs = linear_call_p.bind(*primals[:num_res], *map(instantiate, lin_tangents), **params)
    return outs, tangent_outs


def _transpose(cts, *args, callee, transpose, num_res):
    res, lin = args[:num_res], args[num_res:]
    if any(is_undefined_primal(r) for r in res):
        raise TypeError(
            "linear_call: the transpose is taken with respect to linear_args only, not the residuals"
        )
    if not all(is_undefined_primal(x) for x in lin):
        raise TypeError(
            "linear_call: every linear argument must be a linear input of the transposed function"
        )
    cts = [instantiate(ct) for ct in cts]
    t_closed = transpose()
    cts_out = linear_call_p.bind(
        *res, *cts, callee=t_closed, transpose=TransposeThunk.of(callee), num_res=num_res
    )
    return [None] * num_res + list(cts_out)


def _batch(axis_size, vals, dims, *, callee, transpose, num_res):
    res = [x if d is None else move_to_front(x, d) for x, d in zip(vals[:num_res], dims[:num_res])]
    res_dims = [None if d is None else 0 for d in dims[:num_res]]
    lin = [to_front(x, d, axis_size) for x, d in zip(vals[num_res:], dims[num_res:])]
    new_callee = batch_jaxpr(callee, axis_size, [*res_dims, *[0] * len(lin)], instantiate=True)[0]

    def make():
        t = transpose()
        n_cts = len(t.in_avals) - num_res
        return batch_jaxpr(t, axis_size, [*res_dims, *[0] * n_cts], instantiate=True)[0]

    outs = linear_call_p.bind(*res, *lin, callee=new_callee, transpose=TransposeThunk(make), num_res=num_res)
    return outs, [0] * len(outs)


linear_call_p = Primitive("linear_call", multiple_results=True)
linear_call_p.def_traits(
    jaxpr_params=("callee",),
    # linear in its linear operands, whose tangent is the same call: the jet of that JVP rule is
    # the call on every Taylor coefficient
    taylor_from_jvp="linear: the JVP rule is the call itself on the tangents",
)
linear_call_p.def_impl(_impl)
linear_call_p.def_abstract_eval(_abstract_eval)
linear_call_p.def_jvp(_jvp)
linear_call_p.def_transpose(_transpose)
linear_call_p.def_batch(_batch)
