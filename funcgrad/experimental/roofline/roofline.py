"""The roofline interpreter and its rule registry (JAX's ``jax.experimental.roofline.roofline``).

Layer: surface. Imports funcgrad's public API (``make_jaxpr``, ``vjp``, ``shard_map``, the tree
utilities, shardings), the kernel's IR, ``funcgrad.interpreters.partial_eval.dce_jaxpr`` and the
catalog's ``shard_map`` primitive (whose body is the program walked).

``roofline(f, mesh, in_specs, out_specs)(*args)`` stages ``f`` (under ``shard_map`` when a mesh
and specs are given, so the rules see one device's shard and the collectives' axes), removes the
equations nothing reads and walks the program: each equation's primitive has a rule
``rule(ctx, *arg_shapes, **params) -> RooflineResult``; equations holding a program (``jit``,
``checkpoint``, ``custom_jvp``, loops) are walked inside; a primitive without a rule counts nothing
(with a warning in the log, as JAX's). The live bytes of the walk give ``peak_hbm_bytes``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from funcgrad import tree_util as tu
from funcgrad.api import make_jaxpr, vjp
from funcgrad.interpreters.partial_eval import dce_jaxpr
from funcgrad.jitting import ShapeDtypeStruct
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, Literal, ShapedArray
from funcgrad.parallel import shard_map
from funcgrad.primitives.sharding import shard_map_p
from funcgrad.sharding import NamedSharding

__all__ = [
    "RooflineResult",
    "RooflineRuleContext",
    "RooflineShape",
    "register_roofline",
    "register_standard_roofline",
    "roofline",
    "roofline_and_grad",
]

_logger = logging.getLogger("funcgrad")


@dataclass(frozen=True, slots=True, kw_only=True)
class RooflineRuleContext:
    """What a rule knows of its equation beyond its arguments' shapes: the primitive, the input
    and output avals, the mesh (or None) and whether the dot's operands are pinned in fast memory."""

    name_stack: Any
    primitive: Any
    avals_in: Sequence[Any]
    avals_out: Sequence[Any]
    jaxpr_eqn_ctx: Any
    mesh: Any
    pin_lhs_in_vmem: bool
    pin_rhs_in_vmem: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class RooflineShape:
    """A shape and dtype, with its size and bytes.

    >>> RooflineShape(shape=(3, 4), dtype=np.dtype("float32")).bytes
    48
    """

    shape: tuple[int, ...]
    dtype: Any

    @classmethod
    def from_aval(cls, aval) -> RooflineShape:
        if not isinstance(aval, ShapedArray):
            raise TypeError(f"Expected ShapedArray, got {type(aval)}.")
        return cls(shape=tuple(aval.shape), dtype=aval.dtype)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def bytes(self) -> int:
        return int(self.size * self.dtype.itemsize)

    @classmethod
    def total_bytes(cls, avals: Sequence[Any]) -> int:
        return sum(cls.from_aval(aval).bytes for aval in avals)


@dataclass(frozen=True, slots=True, kw_only=True)
class RooflineResult:
    """FLOPs (fused and unfused), bytes over each mesh axis's links and their latency in hops,
    memory bytes (fused, unfused) and the peak of live memory. Results add (peaks take the
    maximum) and scale by a number.

    >>> r = (RooflineResult(flops=2, peak_hbm_bytes=8) + RooflineResult(flops=3, peak_hbm_bytes=4)) * 2
    >>> r.flops, r.peak_hbm_bytes
    (10, 16)
    """

    flops: int = 0
    unfused_flops: int = 0
    ici_bytes: dict[str, int] = field(default_factory=dict)
    ici_latency: dict[str, int] = field(default_factory=dict)
    hbm_bytes: int = 0
    peak_hbm_bytes: int = 0
    unfused_hbm_bytes: int = 0

    @classmethod
    def zeros(cls) -> RooflineResult:
        return cls()

    def __add__(self, other: RooflineResult) -> RooflineResult:
        def merge(d1, d2):
            return {k: d1.get(k, 0) + d2.get(k, 0) for k in set(d1) | set(d2)}

        return RooflineResult(
            flops=self.flops + other.flops,
            unfused_flops=self.unfused_flops + other.unfused_flops,
            ici_bytes=merge(self.ici_bytes, other.ici_bytes),
            ici_latency=merge(self.ici_latency, other.ici_latency),
            hbm_bytes=self.hbm_bytes + other.hbm_bytes,
            peak_hbm_bytes=max(self.peak_hbm_bytes, other.peak_hbm_bytes),
            unfused_hbm_bytes=self.unfused_hbm_bytes + other.unfused_hbm_bytes,
        )

    def __mul__(self, constant: int | float) -> RooflineResult:
        return RooflineResult(
            flops=int(self.flops * constant),
            unfused_flops=int(self.unfused_flops * constant),
            ici_bytes={k: int(v * constant) for k, v in self.ici_bytes.items()},
            ici_latency={k: int(v * constant) for k, v in self.ici_latency.items()},
            hbm_bytes=int(self.hbm_bytes * constant),
            peak_hbm_bytes=int(self.peak_hbm_bytes * constant),
            unfused_hbm_bytes=int(self.unfused_hbm_bytes * constant),
        )

    def __rmul__(self, constant: int | float) -> RooflineResult:
        return self.__mul__(constant)


class _RooflineRule(Protocol):
    def __call__(self, ctx: RooflineRuleContext, *args: RooflineShape, **kw) -> RooflineResult: ...


_rooflines: dict[Any, _RooflineRule] = {}

# The parameters of a primitive that hold the program it runs (walked instead of a rule).
_PROGRAM_PARAMS = ("jaxpr", "call_jaxpr")


def _aval(v):
    return v.aval


def _last_used(jaxpr: Jaxpr) -> dict:
    last = {}
    for i, eqn in enumerate(jaxpr.eqns):
        for v in eqn.invars:
            if not isinstance(v, Literal):
                last[v] = i
    for v in jaxpr.outvars:
        if not isinstance(v, Literal):
            last[v] = len(jaxpr.eqns)
    return last


def _roofline_interpreter(
    f_name: str, jaxpr, mesh, *, pin_lhs_in_vmem: bool = False, pin_rhs_in_vmem: bool = False
) -> RooflineResult:
    jaxpr = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
    result = RooflineResult.zeros()
    env = {v: RooflineShape.from_aval(v.aval) for v in (*jaxpr.constvars, *jaxpr.invars)}
    last_used = _last_used(jaxpr)
    current = sum(s.bytes for s in env.values())
    peak = current
    for i, eqn in enumerate(jaxpr.eqns):
        inner = next((eqn.params[p] for p in _PROGRAM_PARAMS if p in eqn.params), None)
        if isinstance(inner, Jaxpr | ClosedJaxpr):
            result += _roofline_interpreter(
                f"{eqn.primitive.name}({f_name})",
                inner,
                mesh,
                pin_lhs_in_vmem=pin_lhs_in_vmem,
                pin_rhs_in_vmem=pin_rhs_in_vmem,
            )
        elif eqn.primitive not in _rooflines:
            _logger.warning("No roofline rule for %s, skipping...", eqn.primitive)
        else:
            ctx = RooflineRuleContext(
                name_stack=f_name,
                primitive=eqn.primitive,
                avals_in=[_aval(v) for v in eqn.invars],
                avals_out=[_aval(v) for v in eqn.outvars],
                jaxpr_eqn_ctx=getattr(eqn, "ctx", None),
                mesh=mesh,
                pin_lhs_in_vmem=pin_lhs_in_vmem,
                pin_rhs_in_vmem=pin_rhs_in_vmem,
            )
            args = [RooflineShape.from_aval(_aval(v)) for v in eqn.invars]
            result += _rooflines[eqn.primitive](ctx, *args, **eqn.params)
        outs = [RooflineShape.from_aval(v.aval) for v in eqn.outvars]
        current += sum(s.bytes for s in outs)
        env.update(zip(eqn.outvars, outs))
        dead = {v for v in eqn.invars if not isinstance(v, Literal) and last_used.get(v) == i}
        current -= sum(env[v].bytes for v in dead if v in env)
        for v in dead:
            env.pop(v, None)
        for v in eqn.outvars:  # (results nothing reads)
            if v not in last_used:
                current -= env.pop(v).bytes
        peak = max(peak, current)
    return result + RooflineResult(peak_hbm_bytes=peak)


def _f_with_vjp(f: Callable) -> Callable:
    def wrapped(*args):
        primals, f_vjp = vjp(f, *args)
        return f_vjp(tu.tree_map(lambda p: p.astype("bfloat16"), primals))

    return wrapped


def _name(f) -> str:
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or type(f).__name__


def roofline(
    f: Callable,
    mesh=None,
    in_specs=None,
    out_specs=None,
    *,
    pin_lhs_in_vmem: bool = False,
    pin_rhs_in_vmem: bool = False,
    vjp: bool = False,
    print_jaxpr: bool = False,
) -> Callable[..., tuple[Any, RooflineResult]]:
    """``f`` made to return ``(its result's shapes, RooflineResult)`` instead of its result.

    With a ``mesh`` and both specs, ``f`` runs under ``shard_map`` over ``mesh`` with those specs
    and the estimate is one device's (the result's shapes carry their ``NamedSharding``);
    ``vjp=True`` estimates the backward pass (cotangents in bfloat16, as JAX's);
    ``pin_lhs_in_vmem``/``pin_rhs_in_vmem`` leave a dot's operand out of its memory bytes.
    Arguments may be arrays or ``ShapeDtypeStruct`` values: nothing runs.

    >>> import funcgrad.numpy as fnp
    >>> _, r = roofline(lambda x: fnp.sin(x) + x)(fnp.zeros((3, 8), "float32"))
    >>> r.unfused_flops, r.unfused_hbm_bytes
    (48, 480)
    """

    def wrapped(*args):
        wrapped_f = f
        if in_specs is not None and out_specs is not None and mesh is not None:
            wrapped_f = shard_map(wrapped_f, mesh=mesh, in_specs=in_specs, out_specs=out_specs)
        if vjp:
            wrapped_f = _f_with_vjp(wrapped_f)
        closed, out_shapes = make_jaxpr(wrapped_f, return_shape=True)(*args)
        if out_specs is not None and mesh is not None:
            specs = tu.broadcast_prefix(out_specs, out_shapes, is_leaf=lambda x: x is None)
            flat, tree = tu.tree_flatten(out_shapes)
            flat = [
                ShapeDtypeStruct(s.shape, s.dtype, sharding=NamedSharding(mesh, spec))
                for s, spec in zip(flat, specs)
            ]
            out_shapes = tu.tree_unflatten(tree, flat)
        jaxpr, _ = dce_jaxpr(closed.jaxpr, (True,) * len(closed.jaxpr.outvars))
        shard_maps = [e for e in jaxpr.eqns if e.primitive is shard_map_p]
        if shard_maps:
            jaxpr = shard_maps[-1].params["jaxpr"]
        if print_jaxpr:
            print(jaxpr)
        return out_shapes, _roofline_interpreter(
            _name(f), jaxpr, mesh, pin_lhs_in_vmem=pin_lhs_in_vmem, pin_rhs_in_vmem=pin_rhs_in_vmem
        )

    wrapped.__name__ = getattr(f, "__name__", "roofline")
    wrapped.__doc__ = getattr(f, "__doc__", None)
    wrapped.__wrapped__ = f
    return wrapped


def register_roofline(prim):
    """Decorator: ``rule(ctx, *shapes, **params) -> RooflineResult`` is ``prim``'s rule.

    >>> from funcgrad.extend.core import Primitive
    >>> p = Primitive("twice")
    >>> @register_roofline(p)
    ... def _(ctx, x, **params):
    ...     return RooflineResult(unfused_flops=x.size)
    """

    def register(rule: _RooflineRule):
        _rooflines[prim] = rule
        return rule

    return register


def register_standard_roofline(prim) -> None:
    """``prim`` counts nothing (moves or relabels data: reshape, broadcast, a random key's bits).

    >>> from funcgrad import lax
    >>> register_standard_roofline(lax.reshape_p)
    """

    def standard_rule(ctx, *args, **kwargs):
        return RooflineResult.zeros()

    _rooflines[prim] = standard_rule


def roofline_and_grad(
    f: Callable,
    mesh,
    in_specs,
    out_specs,
    *,
    pin_lhs_in_vmem: bool = False,
    pin_rhs_in_vmem: bool = False,
    print_jaxpr: bool = False,
) -> Callable[..., tuple[Any, RooflineResult, RooflineResult]]:
    """``f`` made to return ``(its result's shapes, the forward pass's RooflineResult, the
    backward pass's)``; the backward pass is estimated with bfloat16 arguments (int32 ones stay),
    as JAX's.

    >>> import funcgrad
    >>> from funcgrad.sharding import PartitionSpec as P
    >>> mesh = funcgrad.make_mesh((1,), ("x",))
    >>> x = funcgrad.ShapeDtypeStruct((4, 4), "float32")
    >>> _, fwd, bwd = roofline_and_grad(lambda a: a @ a, mesh, P(), P())(x)
    >>> fwd.flops, bwd.flops
    (128, 256)
    """

    def wrapped(*args):
        options = dict(
            pin_lhs_in_vmem=pin_lhs_in_vmem, pin_rhs_in_vmem=pin_rhs_in_vmem, print_jaxpr=print_jaxpr
        )
        primal_shapes, fwd = roofline(f, mesh, in_specs, out_specs, **options)(*args)
        bwd_args = tu.tree_map(
            lambda x: ShapeDtypeStruct(
                x.shape,
                np.dtype("int32") if x.dtype == np.dtype("int32") else "bfloat16",
                sharding=getattr(x, "sharding", None),
            ),
            args,
        )
        _, bwd = roofline(f, mesh, in_specs, out_specs, vjp=True, **options)(*bwd_args)
        return primal_shapes, fwd, bwd

    wrapped.__name__ = getattr(f, "__name__", "roofline_and_grad")
    return wrapped
