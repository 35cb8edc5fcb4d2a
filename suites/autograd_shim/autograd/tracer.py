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
from funcgrad.core import ConcretizationTypeError, Tracer

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
