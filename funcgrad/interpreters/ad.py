"""``funcgrad.interpreters.ad``: JAX's ``jax.interpreters.ad`` over funcgrad's forward and reverse mode.

Layer: surface. Imports the kernel (``ad``, ``core``, ``ir``), ``funcgrad.primitives`` (``add_any``)
and the rule-table views (NOTE: [rule tables are views]).

``primitive_jvps[p] = rule`` and ``primitive_transposes[p] = rule`` set the JVP and transpose slots
of the funcgrad primitive ``p``; JAX's rule signatures are funcgrad's (Autodidax's):

- JVP: ``rule(primals, tangents, **params) -> (primal_out, tangent_out)``, primals and tangents
  as tuples (as JAX passes them); the tangent of an input that is not differentiated arrives as a
  symbolic ``Zero`` (``Zero.aval`` its aval), and a rule may return ``Zero`` for an output.
- transpose: ``rule(cotangent, *args, **params) -> one cotangent per input``: the linear inputs
  are ``UndefinedPrimal``\\s, and an input that is not linear gets ``None``.

A primitive given a transpose may appear in a linear program (its trait ``linear``), as in JAX.

>>> import numpy as np, funcgrad
>>> from funcgrad.extend.core import Primitive
>>> twice_p = Primitive("twice")
>>> _ = twice_p.def_impl(lambda x: 2 * x)
>>> _ = twice_p.def_abstract_eval(lambda x: x)
>>> deflinear2(twice_p, lambda ct, x: [twice_p.bind(ct)])
>>> float(funcgrad.grad(lambda x: twice_p.bind(x) * x)(3.0))
12.0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from funcgrad.interpreters._rule_table import RuleTable, before_replacing
from funcgrad.kernel import ad as _ad
from funcgrad.kernel.ad import (
    JVPTrace,
    JVPTracer,
    UndefinedPrimal,
    Zero,
    add_tangents,
    is_undefined_primal,
)
from funcgrad.kernel.custom_derivatives import CustomVJPException
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import Jaxpr
from funcgrad.primitives.elementwise import add_any_p

__all__ = [
    "CustomVJPException",
    "JVPTrace",
    "JVPTracer",
    "UndefinedPrimal",
    "Zero",
    "add_jaxvals",
    "add_jaxvals_p",
    "add_tangents",
    "defbilinear",
    "defjvp",
    "defjvp2",
    "deflinear",
    "deflinear2",
    "get_primitive_transpose",
    "instantiate_zeros",
    "is_undefined_primal",
    "jvp",
    "linearize",
    "primitive_jvps",
    "primitive_transposes",
    "zeros_like_aval",
]

# JAX's name of the primitive that adds two tangents or cotangents.
add_jaxvals_p = add_any_p


def add_jaxvals(x, y):
    """``x + y`` of two tangents (or cotangents) of the same aval, with ``add_jaxvals_p``.

    >>> float(add_jaxvals(1.0, 2.0))
    3.0
    """
    return add_any_p.bind(x, y)


def zeros_like_aval(aval):
    """An array of zeros of ``aval``'s shape and dtype.

    >>> from funcgrad.kernel.ir import ShapedArray
    >>> zeros_like_aval(ShapedArray((2,), "float32")).tolist()
    [0.0, 0.0]
    """
    return hooks.zeros(aval)


def instantiate_zeros(tangent):
    """A symbolic ``Zero`` made an array of zeros; any other tangent as it is.

    >>> from funcgrad.kernel.ir import ShapedArray
    >>> instantiate_zeros(Zero(ShapedArray((2,), "float64"))).tolist()
    [0.0, 0.0]
    """
    return _ad.instantiate(tangent)


# ----------------------------------------------------------------------------------------------
# The registries (NOTE: [rule tables are views])


def _mark_linear(p):
    # A primitive with a transpose may appear in a linear program (as JAX assumes of any primitive
    # in primitive_transposes).
    if not p.traits.linear:
        p.def_traits(linear=True)


def _jvp_from_jax(p, rule):
    # JAX hands a JVP rule its primals and tangents as tuples (funcgrad's kernel: lists); rules
    # that build pytrees of them (equinox's vmapped rules) depend on it.
    def jvp(primals, tangents, **params):
        # The caller's own primal objects, as JAX's (NOTE: [primals as the caller gave them]).
        return rule(tuple(map(_ad.as_given, primals)), tuple(map(_ad.as_given, tangents)), **params)

    return jvp


primitive_jvps = RuleTable("ad.primitive_jvps", "jvp", _jvp_from_jax, lambda p, rule: rule)
primitive_transposes = RuleTable(
    "ad.primitive_transposes",
    "transpose",
    lambda p, rule: rule,
    lambda p, rule: rule,
    on_set=_mark_linear,
)


def get_primitive_transpose(p):
    """The transpose rule of ``p`` (JAX's signature), or ``NotImplementedError`` naming ``p``.

    >>> from funcgrad.primitives.elementwise import neg_p
    >>> callable(get_primitive_transpose(neg_p))
    True
    """
    try:
        return primitive_transposes[p]
    except KeyError:
        raise NotImplementedError(
            f"Transpose rule (for reverse-mode differentiation) for '{p}' not implemented: "
            f"register one with funcgrad.interpreters.ad.primitive_transposes[{p}] = rule"
        ) from None


# ----------------------------------------------------------------------------------------------
# Rule helpers


def defjvp(primitive, *jvprules: Callable | None) -> None:
    """The JVP of ``primitive`` from one rule per input, ``rule(g, *primals, **params)``: that
    input's contribution to the output tangent (``None``: the output does not depend on it).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> from funcgrad.extend.core import Primitive
    >>> cube_p = Primitive("cube"); _ = cube_p.def_impl(lambda x: x**3)
    >>> _ = cube_p.def_abstract_eval(lambda x: x)
    >>> defjvp(cube_p, lambda g, x: 3 * x**2 * g)
    >>> float(funcgrad.grad(cube_p.bind)(2.0))
    12.0
    """
    before_replacing(primitive, "jvp")
    _ad.defjvp(primitive, *jvprules)


def defjvp2(primitive, *jvprules: Callable | None) -> None:
    """Like ``defjvp``, but each rule also receives the primal output:
    ``rule(g, ans, *primals, **params)``.

    >>> import funcgrad, numpy as np
    >>> from funcgrad.extend.core import Primitive
    >>> exp_p = Primitive("my_exp"); _ = exp_p.def_impl(np.exp)
    >>> _ = exp_p.def_abstract_eval(lambda x: x)
    >>> defjvp2(exp_p, lambda g, ans, x: g * ans)
    >>> round(float(funcgrad.grad(exp_p.bind)(1.0)), 6)
    2.718282
    """
    before_replacing(primitive, "jvp")
    _ad.defjvp(primitive, *jvprules, uses_answer=True)


def deflinear(primitive, transpose_rule: Callable) -> None:
    """``primitive`` is linear in all its inputs; ``transpose_rule(cotangent, **params)`` returns
    one cotangent per input (JAX's ``deflinear``: the rule does not see the inputs).

    >>> import funcgrad, numpy as np
    >>> from funcgrad.extend.core import Primitive
    >>> neg2_p = Primitive("my_neg"); _ = neg2_p.def_impl(np.negative)
    >>> _ = neg2_p.def_abstract_eval(lambda x: x)
    >>> deflinear(neg2_p, lambda ct: [neg2_p.bind(ct)])
    >>> float(funcgrad.grad(neg2_p.bind)(2.0))
    -1.0
    """
    before_replacing(primitive, "jvp", "transpose")
    _ad.deflinear(primitive, lambda ct, *args, **params: transpose_rule(ct, **params))


def deflinear2(primitive, transpose_rule: Callable) -> None:
    """Like ``deflinear``, with ``transpose_rule(cotangent, *args, **params)`` seeing the inputs
    (``UndefinedPrimal`` for the linear ones). Example: this module's docstring."""
    before_replacing(primitive, "jvp", "transpose")
    _ad.deflinear(primitive, transpose_rule)


def defbilinear(primitive, lhs_rule: Callable, rhs_rule: Callable) -> None:
    """``primitive(x, y)`` is linear in ``x`` and in ``y`` separately (a product). Its JVP binds it
    on one tangent at a time; its transpose calls ``lhs_rule(cotangent, x, y, **params)`` for the
    cotangent of ``x`` (then ``x`` is the ``UndefinedPrimal``) and ``rhs_rule`` for ``y``'s.

    >>> import funcgrad, numpy as np
    >>> from funcgrad.extend.core import Primitive
    >>> mul_p = Primitive("my_mul"); _ = mul_p.def_impl(np.multiply)
    >>> _ = mul_p.def_abstract_eval(lambda x, y: x)
    >>> defbilinear(mul_p, lambda ct, x, y: mul_p.bind(ct, y), lambda ct, x, y: mul_p.bind(x, ct))
    >>> [float(g) for g in funcgrad.grad(mul_p.bind, argnums=(0, 1))(2.0, 5.0)]
    [5.0, 2.0]
    """
    before_replacing(primitive, "jvp", "transpose")
    _ad.defjvp(
        primitive,
        lambda g, x, y, **params: primitive.bind(g, y, **params),
        lambda g, x, y, **params: primitive.bind(x, g, **params),
    )

    def transpose(ct, x, y, **params):
        if type(ct) is Zero:
            return [
                Zero(x.aval) if is_undefined_primal(x) else None,
                Zero(y.aval) if is_undefined_primal(y) else None,
            ]
        if is_undefined_primal(x):
            return [lhs_rule(ct, x, y, **params), None]
        return [None, rhs_rule(ct, x, y, **params)]

    primitive.def_transpose(transpose)
    _mark_linear(primitive)


# ----------------------------------------------------------------------------------------------
# Transformations of functions


def _flat_outputs(fun, has_aux: bool) -> tuple[Callable, list]:
    """``fun`` (a ``linear_util.WrappedFun`` or a plain function of flat arguments) returning its
    outputs as a list, and the box its auxiliary value goes into with ``has_aux``."""
    f = fun.call_wrapped if hasattr(fun, "call_wrapped") else fun
    box: list = []

    def flat(*xs):
        out = f(*xs)
        if has_aux:
            out, aux = out
            box.append(aux)
        return list(out)

    return flat, box


def jvp(fun, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False, instantiate=True):
    """Forward mode on flat arguments: ``fun(*primals)`` returns a sequence of arrays (and an
    auxiliary value with ``has_aux``); returns ``(primals_out, tangents_out[, aux])``. A tangent
    may be ``Zero``; output tangents that are zero are instantiated as arrays where
    ``instantiate`` (a bool or one per output) says so, else left ``Zero``.

    >>> ps, ts = jvp(lambda x: [x * x], [3.0], [1.0])
    >>> float(ps[0]), float(ts[0])
    (9.0, 6.0)
    """
    flat, box = _flat_outputs(fun, has_aux)
    out_primals, out_tangents = _ad.jvp_flat(flat, list(primals), list(tangents))
    inst = [instantiate] * len(out_tangents) if isinstance(instantiate, bool) else list(instantiate)
    out_tangents = [instantiate_zeros(t) if i else t for t, i in zip(out_tangents, inst)]
    return (out_primals, out_tangents, box[0]) if has_aux else (out_primals, out_tangents)


def linearize(traceable, primals: Sequence[Any], has_aux: bool = False, is_vjp: bool = False):
    """``traceable(*primals)`` evaluated now and its tangent map staged: returns ``(out_primals,
    out_zeros, jaxpr, consts[, aux])`` as JAX does: ``jaxpr`` (its constvars the residuals
    ``consts``) maps the input tangents to the output tangents that are not symbolically zero,
    and ``out_zeros[i]`` says output ``i``'s tangent is zero.

    >>> from funcgrad.kernel.core import eval_jaxpr
    >>> outs, zeros, jaxpr, consts = linearize(lambda x: [x * x, 2.0], [3.0])
    >>> zeros, [float(t) for t in eval_jaxpr(jaxpr, consts, 1.0)]
    ([False, True], [6.0])
    """
    del is_vjp  # (JAX's switch between two linearizers; funcgrad has one)
    flat, box = _flat_outputs(traceable, has_aux)
    out_primals, lin = _ad.linearize_flat(flat, list(primals))
    j = lin.closed.jaxpr
    outvars = [v for v, z in zip(j.outvars, lin.out_zeros) if not z]
    jaxpr = Jaxpr(j.constvars, j.invars, j.eqns, outvars)
    result = (out_primals, list(lin.out_zeros), jaxpr, list(lin.closed.consts))
    return (*result, box[0]) if has_aux else result
