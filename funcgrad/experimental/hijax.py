"""``funcgrad.experimental.hijax``: JAX's ``jax.experimental.hijax`` -- high-level types whose values
are Python objects over arrays (``register_hitype``, ``MutableHiType``) and the primitives that
operate on them (``HiPrimitive``), as far as funcgrad's trace-time functionalisation gives them
meaning: flax's hijax ``Variable`` (``nnx.var_defaults(hijax=True)``) is built on these.

Layer: surface. Imports funcgrad.core / funcgrad.interpreters.ad (the names JAX re-exports here),
the kernel's current trace, and funcgrad.ref (the registry jit reads, NOTE: [mutable high-level
values]).

What runs: a ``HiPrimitive`` bound on concrete values runs its ``impl``; bound while a function is
traced it runs its ``to_lojax`` there and then, on the Python objects (a box holding traced
arrays), so nothing high-level reaches a jaxpr. A value of a registered class whose type has
quasi-dynamic data (``has_qdd``) passed to a jitted function, or closed over by one, is state, read
before and written back after the call (NOTE: [mutable high-level values] in funcgrad/ref.py); one a
scan body touches is carried through the loop (NOTE: [state in loop bodies]). What does not: such
values as arguments under grad/vmap (they are not pytrees; those transformations refuse them as
non-array arguments). An immutable high-level value (no quasi-dynamic data) crosses ``jit``,
``make_jaxpr``, ``grad``'s arguments and ``scan``/``while_loop``/``cond`` operands as its
low-level values (``lower_val``), raised back (``raise_val``) on the other side. A
``VJPHiPrimitive`` is called as a ``custom_vjp`` of its ``expand`` whose rules are its ``vjp_fwd``
and ``vjp_bwd_retval`` (or ``vjp_bwd``'s accumulators), or, where it defines ``jvp``, a
``custom_jvp`` of it with that rule, over the low-level values of its high-level arguments and
results; its ``batch`` and ``transpose`` rules are not used (vmap batches ``expand``).

>>> class Counter:
...     def __init__(self, n): self.n = n
>>> bump = HiPrimitive("bump")
>>> bump.impl = lambda c: Counter(c.n + 1)
>>> bump.bind(Counter(1)).n
2
"""

from __future__ import annotations

from funcgrad._api_util import canonicalize
from funcgrad._ref_scopes import HITYPES, lift_box, lower_hi_values, note_made_boxes
from funcgrad.core import AbstractValue, ShapedArray
from funcgrad.interpreters.ad import Zero, instantiate_zeros, is_undefined_primal
from funcgrad.kernel import core as _core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.custom_derivatives import custom_jvp, custom_vjp
from funcgrad.kernel.custom_rule_args import SymbolicZero, custom_vjp_primal_tree_values
from funcgrad.ref import AbstractRef
from funcgrad.ref import RefView as TransformedRef

__all__ = [
    "AbstractRef",
    "AbstractValue",
    "AvalMutableQDD",
    "AvalQDD",
    "HiPrimitive",
    "HiPspec",
    "HiType",
    "MutableHiType",
    "ShapedArray",
    "TransformedRef",
    "VJPHiPrimitive",
    "Zero",
    "aval_method",
    "aval_property",
    "control_flow_allowed_effects",
    "cur_qdd",
    "instantiate_zeros",
    "is_undefined_primal",
    "register_hitype",
]


class HiPrimitive:
    """A primitive over high-level values. Subclasses define ``impl`` (eager) and ``to_lojax``
    (the same operation while tracing, on the objects), and may define ``abstract_eval``,
    ``jvp``, ``transpose`` (not used: such values do not cross grad here)."""

    multiple_results = False

    def __init__(self, name: str):
        self.name = name

    def is_high(self, *args, **params) -> bool:
        return True

    def impl(self, *args, **params):
        return self.to_lojax(*args, **params)

    def to_lojax(self, *args, **params):
        raise NotImplementedError(f"HiPrimitive {self.name} defines no to_lojax rule")

    def bind(self, *args, **params):
        if type(_core.current_trace()) is _core.EvalTrace and not any(
            isinstance(a, _core.Tracer) for a in args
        ):
            return self.impl(*args, **params)
        for a in args:
            if type(a) in HITYPES:  # a box from outside the trace becomes its state
                lift_box(a)
        out = self.to_lojax(*args, **params)
        note_made_boxes(out)  # (a box made here is the trace's own)
        return out

    def __repr__(self) -> str:
        return self.name


class HiType(AbstractValue):
    """The type of a high-level value (``lo_ty``, ``lower_val``, ``raise_val``)."""

    is_high = True
    has_qdd = False


class MutableHiType(HiType):
    """The type of a mutable high-level value: its structure is quasi-dynamic data (``cur_qdd``),
    and it says how to read its low-level values (``read_loval``), make a value of them
    (``new_from_loval``) and update one (``update_from_loval``), given that data."""

    has_qdd = True


class AvalQDD:
    """An abstract value with its quasi-dynamic data."""

    def __init__(self, aval, qdd):
        self.aval, self.qdd = aval, qdd


class AvalMutableQDD(AvalQDD):
    """An abstract value with quasi-dynamic data that an operation may update (``mutable_qdd``)."""

    @property
    def mutable_qdd(self):
        return self


def cur_qdd(x):
    """The quasi-dynamic data (the current structure) of a mutable high-level value.

    >>> class Box:
    ...     def cur_qdd(self): return ("one leaf",)
    >>> cur_qdd(Box())
    ('one leaf',)
    """
    return x.cur_qdd()


def register_hitype(cls, to_aval) -> None:
    """Make ``cls`` a high-level type whose abstract value is ``to_aval(x)``: ``typeof`` gives it,
    and a jitted function takes values of it as state when that type has quasi-dynamic data."""
    HITYPES[cls] = to_aval


def aval_method(fun):
    """JAX marks ``fun`` as a method of tracers of the type; funcgrad traces the objects themselves,
    so it is the function."""
    return fun


class aval_property(property):  # noqa: N801 - JAX's name
    """JAX's property of tracers of the type; here a plain property (see ``aval_method``)."""


class _EffectTypes(set):
    def add_type(self, effect_type) -> None:
        self.add(effect_type)


# Effects that control flow may carry (JAX's effect system; funcgrad's IR has no effects).
control_flow_allowed_effects = _EffectTypes()


class HiPspec:
    """JAX's base class of a high-level type's partition spec (``HiType.shard``/``unshard``); a
    marker class in funcgrad, whose high-level types are not sharded as such."""


class _Accum:
    """What ``VJPHiPrimitive.vjp_bwd`` adds an input's cotangent into (JAX's ``GradAccum``)."""

    def __init__(self):
        self.value = None

    def accum(self, x) -> None:
        self.value = x if self.value is None else self.value + x


class _NullAccum(_Accum):
    """The accumulator of an input that is not differentiated (JAX's ``NullAccum``): what is added
    is dropped."""

    def accum(self, x) -> None:
        pass


class VJPHiPrimitive:
    """An operation with its own reverse-mode rule (JAX's ``jax.experimental.hijax.VJPHiPrimitive``).
    A subclass's ``__init__`` sets ``in_avals``, ``out_aval`` and ``params`` and calls this one;
    ``expand(*args)`` computes it, ``vjp_fwd(nzs_in, *args)`` gives ``(out, residuals)`` and
    ``vjp_bwd_retval(residuals, out_ct)`` the input cotangents (or ``vjp_bwd(residuals, out_ct,
    *accums)`` adds them into accumulators). A call is a ``custom_vjp`` of ``expand`` with those
    rules (NOTE: [refs are functionalised at trace time]: funcgrad has no high-level primitives in
    its jaxprs).

    >>> import funcgrad
    >>> class Cube(VJPHiPrimitive):
    ...     def __init__(self, aval):
    ...         self.in_avals, self.out_aval, self.params = (aval,), aval, {}
    ...         super().__init__()
    ...     def expand(self, x): return x ** 3
    ...     def vjp_fwd(self, nzs_in, x): return x ** 3, x
    ...     def vjp_bwd_retval(self, x, g): return (3.0 * x ** 2 * g,)
    >>> cube = Cube(funcgrad.typeof(2.0))
    >>> float(cube(2.0)), float(funcgrad.grad(cube)(2.0))
    (8.0, 12.0)
    """

    params: dict = {}
    effects: frozenset = frozenset()

    def __init__(self):
        for name in ("in_avals", "out_aval", "params"):
            if not hasattr(self, name):
                raise AttributeError(f"subclass __init__ should set `self.{name}`")
        if (
            type(self).vjp_bwd is not VJPHiPrimitive.vjp_bwd
            and type(self).vjp_bwd_retval is not VJPHiPrimitive.vjp_bwd_retval
        ):
            raise AttributeError(
                f"subclass {type(self)} should not override both `vjp_bwd` and `vjp_bwd_retval`"
            )
        self.in_avals_flat, self.in_tree = tu.tree_flatten(self.in_avals)
        self.out_avals_flat, self.out_tree = tu.tree_flatten(self.out_aval)
        self.__dict__.update(self.params)
        self.check(*self.in_avals)

    def expand(self, *args):
        raise NotImplementedError(f"subclass {type(self)} must implement `expand`")

    def vjp_fwd(self, nzs_in, /, *args):
        raise NotImplementedError(f"for grad support, subclass {type(self)} must implement `vjp_fwd`")

    def vjp_bwd(self, res, outgrad, /, *arg_accums):
        args_grad = self.vjp_bwd_retval(res, outgrad)
        tu.tree_map(
            lambda acc, v: isinstance(acc, _Accum) and acc.accum(v), list(arg_accums), list(args_grad)
        )

    def vjp_bwd_retval(self, res, outgrad, /):
        raise NotImplementedError(
            f"for grad support, subclass {type(self)} must implement `vjp_bwd` or `vjp_bwd_retval`"
        )

    def check(self, *arg_tys):
        return None

    def jvp(self, primals, tangents):
        raise NotImplementedError(f"for jvp support, subclass {type(self)} must implement `jvp`")

    def __call__(self, *args):
        prim = self
        if any(getattr(a, "is_high", False) for a in (*self.in_avals_flat, *self.out_avals_flat)):
            return self._call_lowered(args)

        def call(*args):
            return prim.expand(*args)

        kind = type(prim)
        forward = kind.jvp is not VJPHiPrimitive.jvp or (
            kind.lin is not VJPHiPrimitive.lin and kind.vjp_fwd is VJPHiPrimitive.vjp_fwd
        )
        if forward and not any(getattr(a, "is_high", False) for a in prim.out_avals_flat):
            # A forward-mode rule (``jvp``, or ``lin`` and ``linearized``): a custom_jvp of
            # ``expand`` (reverse mode transposes it; a high-level result is no custom_jvp
            # output: the reverse-mode rules then)
            op = custom_jvp(call)
            op.defjvp(lambda primals, tangents: prim._forward(tuple(primals), tuple(tangents)))
            return op(*args)

        def fwd(*args):
            # (each leaf a CustomVJPPrimal: NOTE: [symbolic zeros in custom rules])
            values = custom_vjp_primal_tree_values(args)
            nzs = tu.tree_map(lambda a: bool(a.perturbed), args)
            out, res = prim.vjp_fwd(nzs, *values)
            return out, (res, nzs)

        def bwd(res_nzs, ct):
            res, nzs = res_nzs
            ct = tu.tree_map(  # (a rule of a VJPHiPrimitive sees arrays)
                lambda c: c.instantiate() if isinstance(c, SymbolicZero) else c,
                ct,
                is_leaf=lambda c: isinstance(c, SymbolicZero),
            )
            if kind.vjp_bwd is VJPHiPrimitive.vjp_bwd:
                return tuple(prim.vjp_bwd_retval(res, ct))
            accums = [tu.tree_map(lambda nz: _Accum() if nz else _NullAccum(), n) for n in nzs]
            prim.vjp_bwd(res, ct, *accums)
            return tuple(
                tu.tree_map(
                    lambda acc: acc.value, acc_tree, is_leaf=lambda a: isinstance(a, _Accum)
                )  # (None where nothing was added: a zero cotangent)
                for acc_tree in accums
            )

        op = custom_vjp(call)
        op.defvjp(fwd, bwd, symbolic_zeros=True)
        return op(*args)

    def _call_lowered(self, args: tuple):
        """A call taking or giving high-level values (a ``MakeTup``'s tuple): the custom rule is
        over their low-level values (``lower_val``), each rule seeing them raised (``raise_val``)
        again, as funcgrad's ``jit`` passes such values (``_ref_scopes.lower_hi_values``)."""
        prim, kind = self, type(self)
        arg_trees = [tu.tree_structure(lower_hi_values(a)) for a in args]
        lo_args, in_tree = tu.tree_flatten(lower_hi_values(tuple(args)))
        lo_args = canonicalize(lo_args)  # (Python scalars as weak Arrays, as JAX's bind makes them)
        out_tree_box: list = []

        def lowered(out) -> list:
            leaves, tree = tu.tree_flatten(lower_hi_values(out))
            out_tree_box[:] = [tree]
            return leaves

        def call(*lo):
            return lowered(prim.expand(*tu.tree_unflatten(in_tree, lo)))

        forward = kind.jvp is not VJPHiPrimitive.jvp or (
            kind.lin is not VJPHiPrimitive.lin and kind.vjp_fwd is VJPHiPrimitive.vjp_fwd
        )
        if forward:  # (as the call of arrays' own route below)
            op = custom_jvp(call)

            def rule(primals, tangents):
                out, t_out = prim._forward(
                    tuple(tu.tree_unflatten(in_tree, primals)), tuple(tu.tree_unflatten(in_tree, tangents))
                )
                t_leaves = tu.tree_leaves(lower_hi_values(t_out))
                return lowered(out), t_leaves

            op.defjvp(rule)
            out = op(*lo_args)
            return tu.tree_unflatten(out_tree_box[-1], out)

        def fwd(*lo):
            values = tu.tree_unflatten(in_tree, [p.value for p in lo])
            flags = iter([bool(p.perturbed) for p in lo])
            nzs = [any(next(flags) for _ in range(t.num_leaves)) for t in arg_trees]
            out, res = prim.vjp_fwd(nzs, *values)
            return lowered(out), (res, nzs)

        def bwd(res_nzs, ct_leaves):
            res, nzs = res_nzs
            ct_leaves = [c.instantiate() if isinstance(c, SymbolicZero) else c for c in ct_leaves]
            ct = tu.tree_unflatten(out_tree_box[-1], ct_leaves)
            if kind.vjp_bwd is VJPHiPrimitive.vjp_bwd:
                grads = tuple(prim.vjp_bwd_retval(res, ct))
            else:
                accums = [_Accum() if nz else _NullAccum() for nz in nzs]
                prim.vjp_bwd(res, ct, *accums)
                grads = tuple(acc.value for acc in accums)
            flat = []
            for g, tree in zip(grads, arg_trees):  # (None: a zero cotangent of each leaf)
                flat.extend([None] * tree.num_leaves if g is None else tu.tree_leaves(lower_hi_values(g)))
            return tuple(flat)

        op = custom_vjp(call)
        op.defvjp(fwd, bwd, symbolic_zeros=True)
        out = op(*lo_args)
        return tu.tree_unflatten(out_tree_box[-1], out)

    def _forward(self, primals: tuple, tangents: tuple):
        if type(self).jvp is not VJPHiPrimitive.jvp:
            return self.jvp(primals, tangents)
        out, res = self.lin(tuple(True for _ in primals), *primals)
        return out, self.linearized(res, *tangents)

    def lin(self, nzs_in, *primals):
        raise NotImplementedError(
            f"for linearize support, subclass {type(self)} must implement `lin` and `linearized`"
        )

    def linearized(self, residuals, *tangents):
        raise NotImplementedError(
            f"for linearize support, subclass {type(self)} must implement `lin` and `linearized`"
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}[{self.params}]"

    def __hash__(self):
        return hash((type(self).__name__, tuple(self.params.items()), self.effects))

    def __eq__(self, other):
        return type(self) is type(other) and self.params == other.params and self.effects == other.effects
