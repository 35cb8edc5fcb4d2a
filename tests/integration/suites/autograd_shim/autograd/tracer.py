"""autograd's tracing vocabulary on funcgrad: ``primitive``, ``notrace_primitive``, ``isbox``,
``getval``, ``Box``.

autograd boxes values and records a graph; funcgrad traces. A funcgrad tracer plays the part of an
autograd box, and an autograd *primitive* (a function with its own VJP/JVP makers, registered with
``defvjp``/``defjvp``) becomes a ``funcgrad.custom_vjp`` (or ``custom_jvp``) built around the traced
arguments of each call: the untraced ones stay Python values, as autograd passes them.
"""

from __future__ import annotations

import functools

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.core import ConcretizationTypeError, Tracer, eval_jaxpr

from .wrap_util import get_name

Box = Tracer

# fun -> vjp_argnums(argnums, ans, args, kwargs) -> (g -> tuple of cotangents), as autograd keeps them
primitive_vjps: dict = {}
primitive_jvps: dict = {}


def isbox(x) -> bool:
    return isinstance(x, Tracer)


def getval(x):
    """The value under every forward-mode level (autograd's box.value, recursively)."""
    while isinstance(x, Tracer) and hasattr(x, "primal"):
        x = x.primal
    return x


def _has_tracer(x) -> bool:
    return any(isinstance(leaf, Tracer) for leaf in funcgrad.tree_util.tree_leaves(x))


def _match(ct, like):
    """A cotangent shaped and typed like the primal ``like`` (autograd's makers may broadcast)."""

    def leaf(c, p):
        if c is None:
            return fnp.zeros_like(p)
        shape, dtype = fnp.shape(p), fnp.result_type(p)
        c = fnp.asarray(c)
        if not fnp.issubdtype(dtype, fnp.complexfloating):
            c = fnp.real(c)
        return fnp.broadcast_to(c.astype(dtype), shape)

    return funcgrad.tree_util.tree_map(leaf, ct, like, is_leaf=lambda c: c is None)


def _call_with(args, argnums, dyn):
    args = list(args)
    for i, v in zip(argnums, dyn):
        args[i] = v
    return args


def primitive(f_raw):
    """Wrap ``f_raw`` so that its derivative comes from ``defvjp``/``defjvp`` (autograd's primitive).

    >>> import autograd.numpy as np
    >>> from autograd import grad
    >>> from autograd.extend import defvjp
    >>> cube = primitive(lambda x: x**3)
    >>> defvjp(cube, lambda ans, x: lambda g: g * 3 * x**2)
    >>> float(grad(cube)(2.0))
    12.0
    """

    @functools.wraps(f_raw)
    def f_wrapped(*args, **kwargs):
        argnums = [i for i, a in enumerate(args) if _has_tracer(a)]
        if not argnums:
            return f_raw(*args, **kwargs)
        dyn = [args[i] for i in argnums]
        name = get_name(f_raw)
        vjp_rule = primitive_vjps.get(f_wrapped)
        jvp_rule = primitive_jvps.get(f_wrapped)

        if vjp_rule is None and jvp_rule is not None:

            @funcgrad.custom_jvp
            def call(*dyn):
                return f_raw(*_call_with(args, argnums, dyn), **kwargs)

            def jvp(primals, tangents):
                full = _call_with(args, argnums, primals)
                ans = f_wrapped(*full, **kwargs)
                return ans, jvp_rule(argnums, tangents, ans, full, kwargs)

            call.defjvp(jvp)
            return call(*dyn)

        @funcgrad.custom_vjp
        def call(*dyn):
            return _primal(f_raw, args, argnums, dyn, kwargs)

        def fwd(*dyn):
            # ``dyn`` are the values one level down; if they are themselves traced (a derivative of a
            # derivative), the primitive handles that level again, as autograd unboxes one trace
            # at a time: f_raw only ever sees what it would see under autograd.
            ans = f_wrapped(*_call_with(args, argnums, dyn), **kwargs)
            return ans, (ans, dyn)

        def bwd(res, g):
            ans, dyn = res
            if vjp_rule is None:
                raise NotImplementedError(f"VJP of {name} wrt argnums {tuple(argnums)} not defined")
            cts = vjp_rule(argnums, ans, _call_with(args, argnums, dyn), kwargs)(g)
            return tuple(_match(c, p) for c, p in zip(cts, dyn))

        call.defvjp(fwd, bwd)
        if jvp_rule is None:
            # autograd raises NotImplementedError for a missing JVP; funcgrad would say "custom_vjp"
            call = _no_forward_mode(call, name)
        return call(*dyn)

    f_wrapped.fun = f_raw
    f_wrapped._is_autograd_primitive = True
    return f_wrapped


def _primal(f_raw, args, argnums, dyn, kwargs):
    """The primal body, which funcgrad's custom_vjp traces abstractly. A body that needs values
    (Python control flow, as autograd allows in a primitive) runs on the host instead, through
    ``pure_callback``, with the output shape of a run on the values under the tracers."""
    try:
        return f_raw(*_call_with(args, argnums, dyn), **kwargs)
    except ConcretizationTypeError:
        sample = f_raw(*funcgrad.tree_util.tree_map(getval, list(args)), **kwargs)
        shapes = funcgrad.tree_util.tree_map(
            lambda v: funcgrad.ShapeDtypeStruct(fnp.shape(v), fnp.result_type(v)), sample
        )

        def host(*vals):
            return f_raw(*_call_with(args, argnums, vals), **kwargs)

        return funcgrad.pure_callback(host, shapes, *dyn, vmap_method="sequential")


def _no_forward_mode(call, name):
    def checked(*dyn):
        try:
            return call(*dyn)
        except TypeError as e:
            if "forward-mode" in str(e):
                raise NotImplementedError(f"JVP of {name} not defined") from e
            raise

    return checked


def notrace_primitive(f_raw):
    """Call ``f_raw`` on the values under the tracers (its output is not differentiated)."""

    @functools.wraps(f_raw)
    def f_wrapped(*args, **kwargs):
        args = funcgrad.tree_util.tree_map(getval, args)
        return f_raw(*args, **kwargs)

    f_wrapped._is_primitive = True
    return f_wrapped


# ----------------------------------------------------------------------------------------------
# autograd's tracer API (``Node``, ``trace``): a user's Node subclass sees every primitive applied
# to values that depend on the input. funcgrad records a function as a jaxpr, so ``trace`` stages
# ``fun`` with ``make_jaxpr`` and replays the equations, building one node per equation that has
# a traced operand (``fun.__name__`` is the primitive's name: ``sin``, ``add``, ``mul``, ...).


class Node:
    """Base class of autograd trace nodes: ``__init__(value, fun, args, kwargs, parent_argnums,
    parents)`` for an equation, ``initialize_root(x)`` for the input."""

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        raise NotImplementedError

    def initialize_root(self, *args, **kwargs):
        raise NotImplementedError

    @classmethod
    def new_root(cls, *args, **kwargs):
        root = cls.__new__(cls)
        root.initialize_root(*args, **kwargs)
        return root


class _PrimitiveFun:
    def __init__(self, primitive):
        self.primitive = primitive
        self.__name__ = primitive.name

    def __repr__(self):
        return self.__name__


def trace(start_node, fun, x):
    """``(fun(x), end_node)``, calling ``type(start_node)(...)`` for each equation of ``fun`` whose
    operands depend on ``x`` (the end node is None when the output does not)."""
    closed = funcgrad.make_jaxpr(fun)(x)
    nodes = {}
    node_type = type(start_node)

    def value_of(v):
        return nodes.get(id(v))

    def bind(primitive, invals, params):
        out = primitive.bind(*invals, **params)
        parents = [(i, value_of(v)) for i, v in enumerate(invals) if value_of(v) is not None]
        if parents:
            argnums, pnodes = zip(*parents)
            node = node_type(out, _PrimitiveFun(primitive), list(invals), params, list(argnums), list(pnodes))
            for o in out if primitive.multiple_results else [out]:
                nodes[id(o)] = node
                keep.append(o)
        return out

    keep = [x]
    x = fnp.asarray(x)
    keep.append(x)
    nodes[id(x)] = start_node
    (out,) = eval_jaxpr(closed.jaxpr, closed.consts, x, bind=bind)
    return out, nodes.get(id(out))
