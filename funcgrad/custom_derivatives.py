"""``funcgrad.custom_derivatives``: user-defined derivative rules (JAX's ``jax.custom_derivatives``
names) and ``closure_convert``.

Layer: surface. Re-exports the kernel's ``funcgrad/kernel/custom_derivatives.py``, where the rules
are defined and documented; ``closure_convert`` (built on the kernel's staging) lives here.

>>> import funcgrad, funcgrad.numpy as fnp
>>> @custom_jvp
... def f(x):
...     return fnp.sin(x)
>>> f.defjvps(lambda t, ans, x: 2.0 * t)
>>> float(funcgrad.grad(f)(0.0))
2.0
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any

from funcgrad import primitives as _primitives  # noqa: F401 - registers the kernel's array operations
from funcgrad.kernel import ad, core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.custom_derivatives import (
    CustomVJPPrimal,
    SymbolicZero,
    custom_jvp,
    custom_jvp_call_p,
    custom_vjp,
    custom_vjp_call_p,
    custom_vjp_primal_tree_values,
)
from funcgrad.kernel.partial_eval import trace_to_jaxpr
from funcgrad.primitives.linear_call import TransposeThunk, linear_call_p

__all__ = [
    "CustomVJPPrimal",
    "SymbolicZero",
    "closure_convert",
    "custom_gradient",
    "custom_jvp",
    "custom_jvp_call_p",
    "custom_vjp",
    "custom_vjp_call_p",
    "custom_vjp_primal_tree_values",
    "linear_call",
    "zero_from_primal",
]
# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = ("closure_convert", "custom_gradient")


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


# NOTE: [closure conversion cache]
# closure_convert stages ``fun`` once per (function, argument structure, avals) when the values it
# closes over are all concrete, so a caller that compiles the converted function with ``jit``
# (odeint does) reuses one function object -- and one compiled program -- across calls, as JAX's
# cached conversion does. A conversion that hoisted tracers is specific to its trace: never cached.
# fun -> {(in_tree, avals): result}
_CACHE: weakref.WeakKeyDictionary = register_cache(
    "custom_derivatives.closure_conversions", weakref.WeakKeyDictionary()
)


class _Converted:
    """A closure-converted function: evaluates the staged jaxpr on its arguments and the hoisted
    constants. Two conversions are equal when they stage the same program over the same kept
    constants (compared by identity), so a ``jit`` taking one as a static argument reuses its
    compiled program for a function re-created with the same code (a lambda made on every call)."""

    def __init__(self, name, jaxpr, kept, hoist, in_tree, out_tree):
        self.__name__ = name
        self._jaxpr, self._kept, self._hoist = jaxpr, kept, hoist
        self._in_tree, self._out_tree = in_tree, out_tree
        self._key = (str(jaxpr), tuple(id(c) for c in kept), tuple(hoist), in_tree, out_tree)

    def __eq__(self, other):
        return isinstance(other, _Converted) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def __repr__(self):
        return f"<closure-converted {self.__name__}>"

    def __call__(self, *args_and_consts):
        n = len(args_and_consts) - sum(self._hoist)
        args, given = args_and_consts[:n], iter(args_and_consts[n:])
        kept_iter = iter(self._kept)
        all_consts = [next(given) if h else next(kept_iter) for h in self._hoist]
        leaves, tree = tu.tree_flatten(tuple(args))
        if tree != self._in_tree:
            raise TypeError(
                "The inputs to the closure produced by closure_convert must have the same Pytree "
                "structure as the example arguments passed when closure_convert was called. Expected "
                f"{self._in_tree}, but got {tree}"
            )
        return tu.tree_unflatten(self._out_tree, core.eval_jaxpr(self._jaxpr, all_consts, *leaves))


def closure_convert(fun: Callable, *example_args) -> tuple[Callable, list[Any]]:
    """``fun`` with the values it closes over made explicit: returns ``(converted, consts)`` where
    ``converted(*args, *consts)`` computes ``fun(*args)``. The hoisted ``consts`` are the closed-over
    values a transformation may be differentiating (floating-point tracers); other captured values
    stay inside. This is how a ``custom_vjp`` taking a function argument (``nondiff_argnums``)
    sees, and differentiates with respect to, what that function closes over. ``example_args``
    fix the argument structure and types ``converted`` accepts.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> def outer(a):
    ...     converted, consts = closure_convert(lambda x: a * x, 1.0)
    ...     return converted(3.0, *consts), len(consts)
    >>> outer(2.0)[1], funcgrad.grad(lambda a: outer(a)[0])(2.0)
    (0, Array(3., dtype=float64, weak_type=True))
    """
    return convert_closure(fun, example_args, hoist_arrays=False)


def convert_closure(fun: Callable, example_args: tuple, hoist_arrays: bool) -> tuple[Callable, list[Any]]:
    """``closure_convert(fun, *example_args)``; with ``hoist_arrays`` the concrete floating-point
    arrays ``fun`` closes over are hoisted too, for a caller that compiles ``converted`` at the
    top (odeint, NOTE: [one compiled integrator per problem]): its program then takes them as
    arguments, so a function re-created over new values finds the same conversion and program.

    >>> import funcgrad.numpy as fnp
    >>> w = fnp.array([1.0, 2.0])
    >>> conv, consts = convert_closure(lambda x: w * x, (1.0,), hoist_arrays=True)
    >>> len(consts), conv(3.0, *consts).tolist()
    (1, [3.0, 6.0])
    """
    flat, in_tree = tu.tree_flatten(example_args)
    avals = tuple(core.get_aval(x) for x in flat)
    key = (in_tree, avals, hoist_arrays)
    try:
        per_fun = _CACHE.setdefault(fun, {})
    except TypeError:  # a function object that cannot be weakly referenced or hashed
        per_fun = None
    hit = per_fun.get(key) if per_fun is not None else None
    if hit is not None:
        return hit
    out_tree_box = []

    def flat_fun(*leaves):
        out = fun(*tu.tree_unflatten(in_tree, leaves))
        out_leaves, out_tree = tu.tree_flatten(out)
        out_tree_box.append(out_tree)
        return out_leaves

    closed = trace_to_jaxpr(flat_fun, avals, description="closure_convert")
    jaxpr, consts, out_tree = closed.jaxpr, list(closed.consts), out_tree_box[0]
    hoist = [
        (hoist_arrays or isinstance(c, core.Tracer)) and _dt.is_inexact(core.get_aval(c).dtype)
        for c in consts
    ]
    kept = [c for c, h in zip(consts, hoist) if not h]
    hoisted = [c for c, h in zip(consts, hoist) if h]

    converted = _Converted(getattr(fun, "__name__", "converted"), jaxpr, kept, hoist, in_tree, out_tree)
    result = (converted, hoisted)
    if per_fun is not None and not any(isinstance(c, core.Tracer) for c in consts):
        per_fun[key] = result
    return result


def clear_conversion_cache() -> None:
    """Forget the cached closure conversions (NOTE: [closure conversion cache])."""
    _CACHE.clear()


def zero_from_primal(val, symbolic_zeros: bool = False):
    """The zero tangent of each leaf of ``val``: a ``SymbolicZero`` with ``symbolic_zeros=True``,
    else an array of zeros of the leaf's tangent type (``float0`` for integers), as JAX's.

    >>> zero_from_primal({"a": 1.0})["a"].tolist(), zero_from_primal(1.0, symbolic_zeros=True)
    (0.0, SymbolicZero(f64[]))
    """

    def leaf(x):
        z = SymbolicZero.from_primal_value(x)
        return z if symbolic_zeros else z.instantiate()

    return tu.tree_map(leaf, val)


def refuse_jvp(fun: custom_jvp, message: str) -> None:
    """Give the ``custom_jvp`` function ``fun`` the derivative of a JAX primitive that has no JVP
    rule: a zero tangent while no input is differentiated (each tangent a symbolic zero), else
    JAX's ``NotImplementedError(message)`` -- where funcgrad's composition would compute one.

    >>> import funcgrad
    >>> @custom_jvp
    ... def f(x):
    ...     return x
    >>> refuse_jvp(f, "Differentiation rule for 'f' not implemented")
    >>> try:
    ...     funcgrad.jvp(f, (1.0,), (2.0,))
    ... except NotImplementedError as e:
    ...     print(e)
    Differentiation rule for 'f' not implemented
    """

    def jvp(primals, tangents):
        out = fun(*primals)
        if all(type(t) is SymbolicZero for t in tangents):
            return out, SymbolicZero.from_primal_value(out)
        raise NotImplementedError(message)

    fun.defjvp(jvp, symbolic_zeros=True)
    fun.refuses_jvp = True  # (its calls are kept when dead: NOTE: [primitive traits])


class _GradientRule:
    """``custom_gradient``'s residuals: the staged gradient rule (static) and the values it closes
    over (the pytree's leaves, so an enclosing transformation sees and moves them)."""

    def __init__(self, jaxpr, consts, out_tree):
        self.jaxpr, self.consts, self.out_tree = jaxpr, list(consts), out_tree


tu.register_pytree_node(
    _GradientRule,
    lambda r: (r.consts, (r.jaxpr, r.out_tree)),
    lambda aux, consts: _GradientRule(aux[0], consts, aux[1]),
)


def custom_gradient(fun: Callable) -> Callable:
    """A function with a hand-written gradient: ``fun(*args)`` returns ``(value, rule)`` where
    ``rule(cotangent)`` gives the cotangents of the arguments (a tuple, one per argument; a single
    value for a one-argument function). The rule may close over anything ``fun`` computed. Only
    reverse mode is defined, as with ``custom_vjp``.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> @custom_gradient
    ... def f(x):
    ...     return x ** 2, lambda g: (g * x,)
    >>> f(3.0), funcgrad.grad(f)(3.0).tolist()  # (called eagerly, ``fun`` runs on the float)
    (9.0, 3.0)
    """
    name = getattr(fun, "__name__", "custom_gradient")

    def call(args):
        out = fun(*args)
        if not (isinstance(out, tuple | list) and len(out) == 2 and callable(out[1])):
            raise TypeError(f"custom_gradient: {name} must return a pair (value, gradient rule)")
        return out

    @functools.wraps(fun)
    def primal(*args):
        return call(args)[0]

    def fwd(*args):
        ans, rule = call(args)
        ans_leaves, ans_tree = tu.tree_flatten(ans)
        ct_avals = [ad.tangent_aval(core.get_aval(a)) for a in ans_leaves]
        out_tree_box = []

        def flat_rule(*ct_leaves):
            cts = rule(tu.tree_unflatten(ans_tree, list(ct_leaves)))
            leaves, tree = tu.tree_flatten(cts)
            out_tree_box.append(tree)
            return leaves

        closed = trace_to_jaxpr(flat_rule, ct_avals, description=f"custom_gradient rule of {name}")
        return ans, _GradientRule(closed.jaxpr, closed.consts, out_tree_box[0])

    def bwd(res, ct):
        out = core.eval_jaxpr(res.jaxpr, res.consts, *tu.tree_leaves(ct))
        cts = tu.tree_unflatten(res.out_tree, out)
        return tuple(cts) if isinstance(cts, tuple | list) else (cts,)

    wrapped = custom_vjp(primal)
    wrapped.defvjp(fwd, bwd)
    return wrapped


def _flat_call(fun, trees, out_box):
    """``fun`` on flat leaves: the leaves split by ``trees``' sizes and unflattened, its output
    flattened (its tree into ``out_box``)."""

    def flat(*leaves):
        args, i = [], 0
        for tree in trees:
            args.append(tu.tree_unflatten(tree, leaves[i : i + tree.num_leaves]))
            i += tree.num_leaves
        out_leaves, out_tree = tu.tree_flatten(fun(*args))
        out_box.append(out_tree)
        return out_leaves

    return flat


def linear_call(fun: Callable, fun_transpose: Callable, residual_args, linear_args):
    """``fun(residual_args, linear_args)``, where ``fun`` is linear in ``linear_args``, with
    ``fun_transpose(residual_args, cotangents)`` as its transpose (JAX's ``linear_call``).

    ``grad``/``vjp``/``linear_transpose`` through the call use ``fun_transpose`` instead of
    transposing ``fun``; the transpose of that is ``fun`` again. The JVP is the same call on the
    tangents of ``linear_args`` (the residuals are not differentiated). ``fun_transpose`` is traced
    only when a transpose is needed; its output must have the structure and types of
    ``linear_args``. Works eagerly, under ``jit`` (the call is inlined) and under ``grad``; like
    JAX's, it has no ``vmap`` rule.

    >>> import funcgrad, funcgrad.numpy
    >>> def f(r, x):
    ...     return x / r
    >>> def t(r, ct):
    ...     return ct / r
    >>> def div_add(x, denom):
    ...     return x + linear_call(f, t, denom, x)
    >>> float(div_add(9.0, 3.0))
    12.0
    >>> (x,) = funcgrad.linear_transpose(lambda x: div_add(x, 3.0), 1.0)(18.0)
    >>> float(x)
    24.0
    >>> def custom_id(x):
    ...     return linear_call(lambda _, x: x, lambda _, ct: 7.0, (), x)
    >>> float(funcgrad.grad(custom_id)(1.0))
    7.0
    """
    res_leaves, res_tree = tu.tree_flatten(residual_args)
    lin_leaves, lin_tree = tu.tree_flatten(linear_args)
    res_avals = [core.get_aval(x) for x in res_leaves]
    lin_avals = [core.get_aval(x) for x in lin_leaves]
    out_box: list = []
    callee = trace_to_jaxpr(
        _flat_call(fun, (res_tree, lin_tree), out_box),
        [*res_avals, *lin_avals],
        description="linear_call fun",
    )
    out_tree = out_box[0]

    def make_transpose():
        t_box: list = []
        closed = trace_to_jaxpr(
            _flat_call(fun_transpose, (res_tree, out_tree), t_box),
            [*res_avals, *callee.out_avals],
            description="linear_call fun_transpose",
        )
        if t_box[0] != lin_tree:
            raise TypeError(
                "linear_call: transpose output pytree structure must match that of linear inputs, "
                f"got output structure {t_box[0]} and input structure {lin_tree}."
            )
        for i, (got, want) in enumerate(zip(closed.out_avals, lin_avals)):
            if (got.shape, got.dtype) != (want.shape, want.dtype):
                raise TypeError(
                    f"linear_call: fun_transpose's output {i} is {got.str_short()}, but the linear "
                    f"argument it is the cotangent of is {want.str_short()}"
                )
        return closed

    outs = linear_call_p.bind(
        *res_leaves,
        *lin_leaves,
        callee=callee,
        transpose=TransposeThunk(make_transpose),
        num_res=len(res_leaves),
    )
    return tu.tree_unflatten(out_tree, outs)
